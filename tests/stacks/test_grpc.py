"""gRPC calls of grpcio's sync channels (issue 46): each call shape recorded from a generic
servicer on loopback, then replayed with the server stopped and a listener on its port that must
hear nothing (grpcio's C core connects outside Python's sockets) and Python's socket audit on:
the same messages in order, initial metadata, ``-bin`` trailers and status, through the
multi-callable, ``with_call``, ``future``, iterators and ``intercept_channel``; matching by method
and request messages; every gRPC fault, deadlines and recorded timing on a fake clock."""

from __future__ import annotations

import socket
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from conftest import FakeClock
from google.protobuf import wrappers_pb2
from grpc_servicer import INITIAL, SERVICE, TRAILERS, method, serving
from socket_audit import connections, holding

import ssemock
import ssemock.redaction.scrub
from ssemock.core.extras import MissingExtraError
from ssemock.store.grpc import GrpcCall, GrpcMessage, GrpcStatus
from ssemock.store.model import Interaction, Request, Response
from ssemock.variants.grpc import faults as grpc_faults

KEY = "sk-test-" + "q7Lx2Vb9Nc4Rt6Wm8Ke3Jd5Hf1Gs0Pa"
GOOGLE_KEY = "AIza" + "SyFakeFakeFakeFakeFakeFakeFake0123"


def _record(target: str) -> None:
    """Every call shape, once, through a channel made as user code makes one."""
    with grpc.insecure_channel(target) as channel:
        credentials = [("authorization", f"Bearer {KEY}"), ("x-goog-api-key", GOOGLE_KEY)]
        method(channel, "Say")(b"bob", metadata=[("x-user", "u1"), *credentials])
        list(method(channel, "Count")(b"3"))
        method(channel, "Sum")(iter([b"a", b"b"]))
        list(method(channel, "Talk")(iter([b"x", b"y"])))
        with pytest.raises(grpc.RpcError):
            method(channel, "Fail")(b"z")


@pytest.fixture(scope="module")
def listened(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str, socket.socket]]:
    """The cassette of every call shape, recorded; then the server is stopped and a plain listener
    holds its port (counting any connection) for the replays."""
    path = tmp_path_factory.mktemp("grpc") / "calls.json"
    with serving() as target:
        with ssemock.use_cassette(path, record_mode="all"):
            _record(target)
    with holding(int(target.rsplit(":", 1)[1])) as listener:
        yield path, target, listener


@pytest.fixture
def recorded(listened: tuple[Path, str, socket.socket]) -> tuple[Path, str]:
    """The recorded cassette and the target it was recorded from (now stopped)."""
    return listened[0], listened[1]


@pytest.fixture
def replaying(listened: tuple[Path, str, socket.socket]) -> Iterator[tuple[Path, str]]:
    """A replay test: afterwards, nothing connected (Python's sockets audited, grpcio's C core
    by the listener on the recorded port)."""
    path, target, listener = listened
    with connections() as made:
        yield path, target
    assert made == []
    with pytest.raises(BlockingIOError):
        listener.accept()


def _channel(target: str) -> grpc.Channel:
    return grpc.insecure_channel(target)


def test_the_recording_holds_every_shape_with_its_metadata_and_no_credential(
    recorded: tuple[Path, str],
) -> None:
    path, _ = recorded
    text = path.read_text()
    calls = [x.grpc for x in ssemock.Cassette.load(path).interactions]
    assert [(c.method, c.kind) for c in calls if c] == [
        (f"/{SERVICE}/Say", "unary_unary"),
        (f"/{SERVICE}/Count", "unary_stream"),
        (f"/{SERVICE}/Sum", "stream_unary"),
        (f"/{SERVICE}/Talk", "stream_stream"),
        (f"/{SERVICE}/Fail", "unary_unary"),
    ]
    talk = calls[3]
    assert talk is not None
    assert [(m.direction, m.data) for m in talk.messages if m.direction == "send"] == [
        ("send", b"x"),
        ("send", b"y"),
    ]
    assert [m.data for m in talk.received()] == [b"echo x", b"echo y"]
    assert calls[4] is not None and (calls[4].status.code, calls[4].status.details) == (
        "RESOURCE_EXHAUSTED",
        "slow down",
    )
    assert '"x-trace-bin": "AAH+"' in text and '"x-user": "u1"' in text
    assert KEY not in text and '"authorization": "REDACTED"' in text
    assert GOOGLE_KEY not in text and '"x-goog-api-key": "REDACTED"' in text


def test_each_call_shape_replays_with_the_server_stopped(replaying: tuple[Path, str]) -> None:
    path, target = replaying
    with ssemock.use_cassette(path), _channel(target) as channel:
        assert method(channel, "Say")(b"bob", metadata=[("x-user", "u1")]) == b"hello bob"
        count = method(channel, "Count")(b"3")
        assert list(count) == [b"n:0", b"n:1", b"n:2"]
        assert count.code() == grpc.StatusCode.OK and count.initial_metadata() == INITIAL
        assert dict(count.trailing_metadata()) == dict(TRAILERS)
        assert method(channel, "Sum")(iter([b"a", b"b"])) == b"a+b"
        assert list(method(channel, "Talk")(iter([b"x", b"y"]))) == [b"echo x", b"echo y"]


def test_channel_ready_future_is_ready_at_once_without_connecting(replaying: tuple[Path, str]) -> None:
    path, target = replaying
    with ssemock.use_cassette(path), _channel(target) as channel:
        grpc.channel_ready_future(channel).result(timeout=30)  # a stopped server: grpcio would wait
        assert method(channel, "Say")(b"bob") == b"hello bob"


def test_a_failed_call_replays_its_status_details_and_bin_trailers(replaying: tuple[Path, str]) -> None:
    path, target = replaying
    with ssemock.use_cassette(path), _channel(target) as channel:
        with pytest.raises(grpc.RpcError) as failed:
            method(channel, "Fail")(b"z")
    error: Any = failed.value
    assert (error.code(), error.details()) == (grpc.StatusCode.RESOURCE_EXHAUSTED, "slow down")
    assert tuple(error.trailing_metadata()) == (("x-retry-bin", b"\x07"),)


def test_with_call_future_and_result_replay(replaying: tuple[Path, str]) -> None:
    path, target = replaying
    with ssemock.use_cassette(path, allow_playback_repeats=True), _channel(target) as channel:
        response, call = method(channel, "Say").with_call(b"bob")
        assert response == b"hello bob" and call.code() == grpc.StatusCode.OK
        assert dict(call.trailing_metadata()) == dict(TRAILERS)
        future = method(channel, "Sum").future(iter([b"a", b"b"]))
        seen: list[Any] = []
        future.add_done_callback(seen.append)
        assert future.result() == b"a+b" and future.done() and seen == [future]
        failing = method(channel, "Fail").future(b"z")
        assert failing.exception() is failing and failing.code() == grpc.StatusCode.RESOURCE_EXHAUSTED


class _Tagging(grpc.UnaryUnaryClientInterceptor, grpc.StreamStreamClientInterceptor):
    """Adds ``x-tag`` to every call and notes each method it saw."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def _details(self, details: Any) -> Any:
        self.seen.append(details.method)
        return details._replace(metadata=[*(details.metadata or ()), ("x-tag", "t")])

    def intercept_unary_unary(self, continuation: Callable[..., Any], details: Any, request: Any) -> Any:
        return continuation(self._details(details), request)

    def intercept_stream_stream(self, continuation: Callable[..., Any], details: Any, requests: Any) -> Any:
        return continuation(self._details(details), requests)


def test_calls_through_intercept_channel_replay_and_the_interceptors_run(replaying: tuple[Path, str]) -> None:
    path, target = replaying
    tagging = _Tagging()
    with ssemock.use_cassette(path), _channel(target) as channel:
        intercepted = grpc.intercept_channel(channel, tagging)
        assert method(intercepted, "Say")(b"bob") == b"hello bob"
        assert list(method(intercepted, "Talk")(iter([b"x", b"y"]))) == [b"echo x", b"echo y"]
    assert tagging.seen == [f"/{SERVICE}/Say", f"/{SERVICE}/Talk"]


def test_an_unmatched_request_names_the_method_and_the_first_differing_byte(
    replaying: tuple[Path, str],
) -> None:
    path, target = replaying
    with ssemock.use_cassette(path), _channel(target) as channel:
        with pytest.raises(ssemock.UnmatchedRequestError) as unmatched:
            method(channel, "Say")(b"alice")
        with pytest.raises(ssemock.UnmatchedRequestError) as absent:
            channel.unary_unary(f"/{SERVICE}/Nope")(b"x")
    assert f"no recorded gRPC call matches /{SERVICE}/Say" in str(unmatched.value)
    assert "request message 1 differs at byte 0: recorded 'bob'" in str(unmatched.value)
    assert f"the cassette has no call of /{SERVICE}/Nope; its methods: /{SERVICE}/Count" in str(absent.value)


def test_a_request_stream_that_strays_raises_at_the_message_that_differs() -> None:
    messages = [
        GrpcMessage("send", 0.0, b"x"),
        GrpcMessage("recv", 0.1, b"echo x"),
        GrpcMessage("send", 0.2, b"y"),
        GrpcMessage("recv", 0.3, b"echo y"),
    ]
    call = GrpcCall("/s.S/Talk", "stream_stream", messages, status=GrpcStatus("OK", "", 0.4))
    cassette = ssemock.Cassette(
        [Interaction(Request("POST", "http://svc:50051/s.S/Talk"), Response(200), grpc=call)]
    )
    with ssemock.replay(cassette), grpc.insecure_channel("svc:50051") as channel:
        responses = channel.stream_stream("/s.S/Talk")(iter([b"x", b"other"]))
        assert next(responses) == b"echo x"
        with pytest.raises(
            ssemock.UnmatchedRequestError, match="request message 2 differs at byte 0: recorded 'y'"
        ):
            next(responses)


def test_a_request_stream_of_protobuf_messages_that_strays_names_the_field() -> None:
    """A request stream's mismatch decodes by its messages' class, as a unary request's does."""
    asked = [wrappers_pb2.StringValue(value=v).SerializeToString() for v in ("weather", "in Paris")]
    messages = [GrpcMessage("send", 0.0, asked[0]), GrpcMessage("send", 0.1, asked[1])]
    messages.append(GrpcMessage("recv", 0.2, b"sunny"))
    call = GrpcCall("/s.S/Ask", "stream_unary", messages, status=GrpcStatus("OK", "", 0.3))
    cassette = ssemock.Cassette(
        [Interaction(Request("POST", "http://svc:50051/s.S/Ask"), Response(200), grpc=call)]
    )
    serialize = wrappers_pb2.StringValue.SerializeToString
    with ssemock.replay(cassette), grpc.insecure_channel("svc:50051") as channel:
        ask = channel.stream_unary("/s.S/Ask", request_serializer=serialize)
        sent = [wrappers_pb2.StringValue(value=v) for v in ("weather", "in Rome")]
        with pytest.raises(ssemock.UnmatchedRequestError) as unmatched:
            ask(iter(sent))
    assert "request message 2 differs at field value: recorded 'in Paris', sent 'in Rome'" in str(
        unmatched.value
    )


def _call(
    method_name: str, kind: str, sends: list[bytes], recvs: list[bytes], url: str = "http://svc:50051"
) -> Interaction:
    messages = [GrpcMessage("send", 0.01 * k, m) for k, m in enumerate(sends)]
    messages += [GrpcMessage("recv", 0.1 + 0.1 * k, m) for k, m in enumerate(recvs)]
    return Interaction(
        Request("POST", f"{url}{method_name}"),
        Response(200),
        grpc=GrpcCall(method_name, kind, messages, status=GrpcStatus("OK", "", 0.1 + 0.1 * len(recvs))),
    )


def test_a_request_stream_is_served_by_the_recorded_call_its_messages_match() -> None:
    cassette = ssemock.Cassette(
        [
            _call("/s.S/Sum", "stream_unary", [b"a", b"b"], [b"ab"]),
            _call("/s.S/Sum", "stream_unary", [b"a", b"c"], [b"ac"]),
            _call("/s.S/Sum", "stream_unary", [b"a"], [b"a only"]),
        ]
    )
    with ssemock.replay(cassette) as player, grpc.insecure_channel("svc:50051") as channel:
        multicallable = channel.stream_unary("/s.S/Sum")
        assert multicallable(iter([b"a", b"c"])) == b"ac"
        assert multicallable(iter([b"a"])) == b"a only"
        assert multicallable(iter([b"a", b"b"])) == b"ab"
    assert player.play_counts == [1, 1, 1]


def test_a_secure_channel_s_call_replays_from_its_https_url() -> None:
    cassette = ssemock.Cassette(
        [_call("/s.S/Say", "unary_unary", [b"hi"], [b"yo"], url="https://api.example:443")]
    )
    credentials = grpc.ssl_channel_credentials()
    with ssemock.replay(cassette), grpc.secure_channel("api.example:443", credentials) as channel:
        assert channel.unary_unary("/s.S/Say")(b"hi") == b"yo"


def test_the_mismatch_of_a_protobuf_message_names_its_field() -> None:
    request = wrappers_pb2.StringValue(value="weather in Paris").SerializeToString()
    cassette = ssemock.Cassette([_call("/s.S/Ask", "unary_unary", [request], [b"sunny"])])
    with ssemock.replay(cassette), grpc.insecure_channel("svc:50051") as channel:
        ask = channel.unary_unary("/s.S/Ask", request_serializer=wrappers_pb2.StringValue.SerializeToString)
        with pytest.raises(ssemock.UnmatchedRequestError) as typed:
            ask(wrappers_pb2.StringValue(value="weather in Rome"))
        raw = channel.unary_unary("/s.S/Ask")
        with pytest.raises(ssemock.UnmatchedRequestError) as untyped:
            raw(wrappers_pb2.StringValue(value="weather in Rome").SerializeToString())
    assert "differs at field value: recorded 'weather in Paris', sent 'weather in Rome'" in str(typed.value)
    assert "differs at field 1: recorded 'weather in Paris', sent 'weather in Rome'" in str(untyped.value)


def test_metadata_credentials_never_decide_a_match(replaying: tuple[Path, str]) -> None:
    path, target = replaying
    with ssemock.use_cassette(path), _channel(target) as channel:
        other = [("x-user", "u1"), ("authorization", "Bearer sk-test-another-key-0000000000")]
        assert method(channel, "Say")(b"bob", metadata=other) == b"hello bob"


@pytest.mark.parametrize("chunking", [c.name for c in ssemock.chunking.ALL])
def test_every_chunking_of_the_registry_replays_the_same_messages(
    replaying: tuple[Path, str], chunking: str
) -> None:
    path, target = replaying
    with ssemock.use_cassette(path, chunking=chunking), _channel(target) as channel:
        assert list(method(channel, "Count")(b"3")) == [b"n:0", b"n:1", b"n:2"]


def _counted(
    cassette: ssemock.Cassette, timeout: float | None = None, **options: Any
) -> tuple[list[bytes], Any]:
    """The Count stream replayed under ``options`` with the call's ``timeout``: the messages the
    client got, and its error."""
    got: list[bytes] = []
    with ssemock.replay(cassette, **options), grpc.insecure_channel("svc:50051") as channel:
        responses = channel.unary_stream("/s.S/Count")(b"3", timeout=timeout)
        try:
            for message in responses:
                got.append(message)
        except grpc.RpcError as error:
            return got, error
    return got, None


def _count_cassette() -> ssemock.Cassette:
    return ssemock.Cassette([_call("/s.S/Count", "unary_stream", [b"3"], [b"n:0", b"n:1", b"n:2"])])


@pytest.mark.parametrize("fault", grpc_faults.VARIANTS)
def test_every_grpc_fault_of_the_registry_is_served(fault: str, fake_clock: FakeClock) -> None:
    got, error = _counted(_count_cassette(), faults=fault)
    served = grpc_faults.get(fault).call if fault.startswith("status") else None
    if fault.startswith("status"):
        after = int(fault.split("after_message=")[1].split(",")[0])
        assert got == [b"n:0", b"n:1", b"n:2"][:after]
        assert error is not None and error.code().name == served.code  # type: ignore[union-attr]
        assert (
            "upstream reset" in error.details() if "details=" in fault else "ssemock fault" in error.details()
        )
    elif fault.startswith("drop"):
        assert got == [b"n:0"] and error.code() == grpc.StatusCode.UNAVAILABLE
    elif fault.startswith("sequence"):  # its first attempt
        assert got == [] and error.code() == grpc.StatusCode.UNAVAILABLE
    else:  # a stall before message 2: waited on the replay's clock, then served whole
        assert got == [b"n:0", b"n:1", b"n:2"] and error is None
        assert fake_clock.slept == [60.0]


def test_a_deadline_shorter_than_a_stall_raises_deadline_exceeded_at_once(fake_clock: FakeClock) -> None:
    got, error = _counted(_count_cassette(), faults="stall:before_message=2,seconds=30", timeout=5.0)
    assert got == [b"n:0"] and error.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    assert fake_clock.slept == []  # nothing waited for the deadline


def test_recorded_timing_keeps_the_gaps_and_a_short_deadline_cuts_at_the_late_message(
    fake_clock: FakeClock,
) -> None:
    got, error = _counted(_count_cassette(), timing="recorded")
    assert error is None and got == [b"n:0", b"n:1", b"n:2"]
    assert fake_clock.slept == pytest.approx([0.1, 0.1, 0.1, 0.1])
    fake_clock.slept.clear()
    got, error = _counted(_count_cassette(), timing="recorded", timeout=0.25)
    assert got == [b"n:0", b"n:1"] and error.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    assert fake_clock.slept == pytest.approx([0.1, 0.1])
    fake_clock.slept.clear()
    assert _counted(_count_cassette())[0] == [b"n:0", b"n:1", b"n:2"] and fake_clock.slept == []  # instant


def test_a_fault_aimed_with_on_applies_to_its_method_only(fake_clock: FakeClock) -> None:
    cassette = _count_cassette()
    cassette.interactions.append(_call("/s.S/Say", "unary_unary", [b"hi"], [b"yo"]))
    with ssemock.replay(cassette, faults="status:code=UNAUTHENTICATED,after_message=0,on=/s.S/Say"):
        with grpc.insecure_channel("svc:50051") as channel:
            assert list(channel.unary_stream("/s.S/Count")(b"3")) == [b"n:0", b"n:1", b"n:2"]
            with pytest.raises(grpc.RpcError) as refused:
                channel.unary_unary("/s.S/Say")(b"hi")
    assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED  # type: ignore[attr-defined]


def test_a_fault_aimed_at_nothing_is_named_before_any_call() -> None:
    with pytest.raises(ValueError, match="its target '/s.S/Other' matches no interaction"):
        with ssemock.replay(_count_cassette(), faults="drop:after_message=1,on=/s.S/Other"):
            pass


def test_cancel_ends_a_replayed_stream_as_cancelled() -> None:
    with ssemock.replay(_count_cassette()), grpc.insecure_channel("svc:50051") as channel:
        responses = channel.unary_stream("/s.S/Count")(b"3")
        assert next(responses) == b"n:0"
        assert responses.cancel() and responses.cancelled()
        with pytest.raises(grpc.RpcError):
            next(responses)
        assert responses.code() == grpc.StatusCode.CANCELLED


def test_a_secret_in_a_message_refuses_the_save_and_is_kept_masked_at_its_length(tmp_path: Path) -> None:
    message = wrappers_pb2.StringValue(value=f"my key is {KEY}").SerializeToString()
    cassette = ssemock.Cassette([_call("/s.S/Ask", "unary_unary", [message], [b"ok"])])
    with pytest.raises(ssemock.SecretError, match=r"grpc.messages\[0\]"):
        cassette.save(tmp_path / "c.json")
    ssemock.redaction.scrub.redact(cassette)
    call = cassette.interactions[0].grpc
    assert call is not None
    masked = wrappers_pb2.StringValue.FromString(call.messages[0].data).value
    assert (
        KEY not in masked
        and masked.startswith("my key is REDACTED")
        and len(masked) == len(f"my key is {KEY}")
    )


def test_a_grpc_cassette_without_grpcio_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "grpc", None)
    with pytest.raises(MissingExtraError, match=r'the \'grpc\' extra installs: pip install -e "\.\[grpc\]"'):
        with ssemock.replay(_count_cassette()):
            pass


def test_a_recording_run_refuses_a_grpc_fault_it_would_not_serve(tmp_path: Path) -> None:
    with pytest.raises(
        ValueError, match="status:code=INTERNAL,after_message=1: a gRPC call is recorded as it goes"
    ):
        ssemock.use_cassette(
            tmp_path / "c.json", record_mode="all", faults="status:code=INTERNAL,after_message=1"
        )


def test_a_sequence_fails_the_first_attempt_and_the_retry_gets_the_recorded_call() -> None:
    cassette = _count_cassette()
    cassette.interactions.append(_call("/s.S/Say", "unary_unary", [b"hi"], [b"yo"]))
    with ssemock.replay(
        cassette, faults="sequence:status:code=UNAVAILABLE,after_message=0|as_recorded"
    ) as player:
        with grpc.insecure_channel("svc:50051") as channel:
            say = channel.unary_unary("/s.S/Say")
            with pytest.raises(grpc.RpcError) as first:
                say(b"hi")
            assert say(b"hi") == b"yo"  # the retry
            assert list(channel.unary_stream("/s.S/Count")(b"3")) == [
                b"n:0",
                b"n:1",
                b"n:2",
            ]  # not pinned here
    assert first.value.code() == grpc.StatusCode.UNAVAILABLE  # type: ignore[attr-defined]
    assert player.play_counts == [1, 1]


def test_a_target_the_cassette_never_saw_is_refused_before_grpc_connects(replaying: tuple[Path, str]) -> None:
    path, target = replaying  # the listener on the recorded port hears nothing
    with ssemock.use_cassette(path, allowed_hosts=[]), grpc.insecure_channel("127.0.0.1:9") as channel:
        with pytest.raises(
            ssemock.UnmatchedRequestError, match=f"no recorded gRPC call matches /{SERVICE}/Say"
        ):
            method(channel, "Say")(b"bob")


def test_with_call_and_future_record_their_calls_whole(tmp_path: Path) -> None:
    path = tmp_path / "recorded.json"
    with serving() as target, ssemock.use_cassette(path, record_mode="all"), _channel(target) as channel:
        response, call = method(channel, "Say").with_call(b"ann")
        assert response == b"hello ann" and dict(call.trailing_metadata()) == dict(TRAILERS)
        assert method(channel, "Sum").future(iter([b"p", b"q"])).result() == b"p+q"
        with pytest.raises(grpc.RpcError):
            method(channel, "Fail").with_call(b"z")
    calls = [x.grpc for x in ssemock.Cassette.load(path).interactions]
    assert [(c.method, [m.data for m in c.messages], c.status.code) for c in calls if c] == [
        (f"/{SERVICE}/Say", [b"ann", b"hello ann"], "OK"),
        (f"/{SERVICE}/Sum", [b"p", b"q", b"p+q"], "OK"),
        (f"/{SERVICE}/Fail", [b"z"], "RESOURCE_EXHAUSTED"),
    ]
    with ssemock.use_cassette(path), _channel(target) as channel:
        assert method(channel, "Say")(b"ann") == b"hello ann"
        assert method(channel, "Sum")(iter([b"p", b"q"])) == b"p+q"


def test_a_call_to_another_url_than_the_recorded_one_says_so() -> None:
    """A secure channel made before the player started is recorded as http (grpcio keeps no trace
    of its credentials); replayed against an https recording, the error names both URLs."""
    cassette = ssemock.Cassette([_call("/s.S/Say", "unary_unary", [b"x"], [b"y"], url="https://svc:443")])
    channel = grpc.secure_channel("svc:443", grpc.ssl_channel_credentials())
    with ssemock.replay(cassette), pytest.raises(ssemock.UnmatchedRequestError) as unmatched:
        channel.unary_unary("/s.S/Say")(b"x")
    channel.close()
    said = str(unmatched.value)
    assert "no recorded gRPC call matches /s.S/Say (http://svc:443/s.S/Say)" in said
    assert "calls of /s.S/Say are to https://svc:443/s.S/Say: the scheme or the target differs" in said
