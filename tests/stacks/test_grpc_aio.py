"""gRPC calls of grpcio's aio channels (issue 46): each call shape recorded from the generic
servicer on loopback, replayed with the server stopped (a listener on its port must hear
nothing): awaited, ``async for``, ``read()`` / ``write()`` / ``done_writing()``, async and sync
request iterators, metadata, ``-bin`` trailers, failures as ``AioRpcError``; gRPC faults,
deadlines and recorded timing on a fake clock; a request stream that strays is unmatched."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import grpc
import grpc.aio
import pytest
from conftest import FakeClock
from grpc_servicer import INITIAL, SERVICE, TRAILERS, method, serving
from socket_audit import holding

import ssemock
from ssemock.store.grpc import GrpcCall, GrpcMessage, GrpcStatus
from ssemock.store.model import Interaction, Request, Response
from ssemock.variants.grpc import faults as grpc_faults

pytestmark = pytest.mark.asyncio


async def _requests(*messages: bytes) -> AsyncIterator[bytes]:
    for message in messages:
        yield message


async def _calls(channel: grpc.aio.Channel) -> list[Any]:
    """Every call shape, each way of driving it; what the client got."""
    got: list[Any] = [await method(channel, "Say")(b"bob", metadata=(("x-user", "u1"),))]
    count = method(channel, "Count")(b"3")
    got += [[m async for m in count], await count.code(), await count.initial_metadata()]
    got.append(dict(await count.trailing_metadata()))
    got.append(await method(channel, "Sum")(iter([b"a", b"b"])))
    got.append([m async for m in method(channel, "Talk")(_requests(b"x", b"y"))])
    talk = method(channel, "Talk")()
    await talk.write(b"p")
    got.append(await talk.read())
    await talk.write(b"q")
    await talk.done_writing()
    got += [await talk.read(), await talk.read() is grpc.aio.EOF]
    with pytest.raises(grpc.aio.AioRpcError) as failed:
        await method(channel, "Fail")(b"z")
    error = failed.value
    got.append((error.code(), error.details(), tuple(error.trailing_metadata())))
    return got


EXPECTED = [
    b"hello bob",
    [b"n:0", b"n:1", b"n:2"],
    grpc.StatusCode.OK,
    grpc.aio.Metadata(*INITIAL),
    dict(TRAILERS),
    b"a+b",
    [b"echo x", b"echo y"],
    b"echo p",
    b"echo q",
    True,
    (grpc.StatusCode.RESOURCE_EXHAUSTED, "slow down", (("x-retry-bin", b"\x07"),)),
]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str, socket.socket]]:
    """The cassette of every shape, recorded through an aio channel (checked against what the
    live server answered); then the server is stopped and a plain listener holds its port."""
    path = tmp_path_factory.mktemp("grpc_aio") / "calls.json"

    async def record(target: str) -> list[Any]:
        async with ssemock.use_cassette(path, record_mode="all"):
            async with grpc.aio.insecure_channel(target) as channel:
                return await _calls(channel)

    with serving() as target:
        assert asyncio.run(record(target)) == EXPECTED
    with holding(int(target.rsplit(":", 1)[1])) as listener:
        yield path, target, listener


async def test_every_shape_replays_with_the_server_stopped(recorded: tuple[Path, str, socket.socket]) -> None:
    path, target, listener = recorded
    async with ssemock.use_cassette(path) as player:
        async with grpc.aio.insecure_channel(target) as channel:
            await asyncio.wait_for(channel.channel_ready(), 30)  # a stopped server: grpcio would wait
            assert channel.get_state(try_to_connect=True) == grpc.ChannelConnectivity.READY
            assert await _calls(channel) == EXPECTED
    assert player.play_counts == [1, 1, 1, 1, 1, 1]
    with pytest.raises(BlockingIOError):
        listener.accept()


async def test_a_stray_write_raises_the_unmatched_request_error(
    recorded: tuple[Path, str, socket.socket],
) -> None:
    path, target, _ = recorded
    async with ssemock.use_cassette(path, allow_playback_repeats=True):
        async with grpc.aio.insecure_channel(target) as channel:
            talk = method(channel, "Talk")()
            with pytest.raises(ssemock.UnmatchedRequestError, match=f"/{SERVICE}/Talk"):
                await talk.write(b"not recorded")
            with pytest.raises(ssemock.UnmatchedRequestError, match="differs at byte 0: recorded 'bob'"):
                await method(channel, "Say")(b"eve")


def _count_cassette() -> ssemock.Cassette:
    messages = [GrpcMessage("send", 0.0, b"3")]
    messages += [GrpcMessage("recv", 0.1 * (k + 1), f"n:{k}".encode()) for k in range(3)]
    call = GrpcCall("/s.S/Count", "unary_stream", messages, [("x-n-bin", "AQ")], GrpcStatus("OK", "", 0.4))
    return ssemock.Cassette(
        [Interaction(Request("POST", "http://svc:50051/s.S/Count"), Response(200), grpc=call)]
    )


async def _counted(timeout: float | None = None, **options: Any) -> tuple[list[bytes], Any]:
    got: list[bytes] = []
    async with ssemock.replay(_count_cassette(), **options):
        async with grpc.aio.insecure_channel("svc:50051") as channel:
            call = channel.unary_stream("/s.S/Count")(b"3", timeout=timeout)
            try:
                while (message := await call.read()) is not grpc.aio.EOF:
                    got.append(message)
            except grpc.aio.AioRpcError as error:
                return got, error
            assert tuple(await call.trailing_metadata()) == (("x-n-bin", b"\x01"),)
    return got, None


@pytest.mark.parametrize("fault", grpc_faults.VARIANTS)
async def test_every_grpc_fault_of_the_registry_is_served(fault: str, fake_clock: FakeClock) -> None:
    got, error = await _counted(faults=fault)
    if fault.startswith("status"):
        after = int(fault.split("after_message=")[1].split(",")[0])
        code = fault.split("code=")[1].split(",")[0]
        assert got == [b"n:0", b"n:1", b"n:2"][:after] and error.code().name == code
    elif fault.startswith("drop"):
        assert got == [b"n:0"] and error.code() == grpc.StatusCode.UNAVAILABLE
    elif fault.startswith("sequence"):  # its first attempt
        assert got == [] and error.code() == grpc.StatusCode.UNAVAILABLE
    else:
        assert got == [b"n:0", b"n:1", b"n:2"] and error is None and fake_clock.slept == [60.0]


async def test_deadlines_and_recorded_timing(fake_clock: FakeClock) -> None:
    got, error = await _counted(timeout=5.0, faults="stall:before_message=2,seconds=30")
    assert got == [b"n:0"] and error.code() == grpc.StatusCode.DEADLINE_EXCEEDED and fake_clock.slept == []
    got, error = await _counted(timing="recorded")
    assert error is None and fake_clock.slept == pytest.approx([0.1, 0.1, 0.1, 0.1])


async def test_a_secure_aio_channel_s_call_replays_from_its_https_url() -> None:
    call = GrpcCall(
        "/s.S/Say", "unary_unary", [GrpcMessage("send", 0.0, b"hi"), GrpcMessage("recv", 0.1, b"yo")]
    )
    cassette = ssemock.Cassette(
        [Interaction(Request("POST", "https://api.example:443/s.S/Say"), Response(200), grpc=call)]
    )
    async with ssemock.replay(cassette):
        async with grpc.aio.secure_channel("api.example:443", grpc.ssl_channel_credentials()) as channel:
            assert await channel.unary_unary("/s.S/Say")(b"hi") == b"yo"


class _Tagging:
    """Notes each method an interceptor saw and adds ``x-tag`` (what SDKs' auth and timeout
    interceptors do); grpcio files an interceptor under one call shape, so one class per shape."""

    def __init__(self, seen: list[str]) -> None:
        self.seen = seen

    def _details(self, details: Any) -> Any:
        self.seen.append(details.method.decode() if isinstance(details.method, bytes) else details.method)
        metadata = grpc.aio.Metadata(*(details.metadata or ()), ("x-tag", "t"))
        return grpc.aio.ClientCallDetails(
            details.method, details.timeout, metadata, details.credentials, details.wait_for_ready
        )


class _TaggingUnary(_Tagging, grpc.aio.UnaryUnaryClientInterceptor):
    async def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        return await continuation(self._details(details), request)


class _TaggingStream(_Tagging, grpc.aio.UnaryStreamClientInterceptor):
    async def intercept_unary_stream(self, continuation: Any, details: Any, request: Any) -> Any:
        return await continuation(self._details(details), request)


async def test_aio_interceptors_run_around_replayed_calls(recorded: tuple[Path, str, socket.socket]) -> None:
    path, target, listener = recorded
    seen: list[str] = []
    interceptors = [_TaggingUnary(seen), _TaggingStream(seen)]
    async with ssemock.use_cassette(path, allow_playback_repeats=True):
        async with grpc.aio.insecure_channel(target, interceptors=interceptors) as channel:
            assert await method(channel, "Say")(b"bob") == b"hello bob"
            count = method(channel, "Count")(b"3")
            assert [m async for m in count] == [b"n:0", b"n:1", b"n:2"]
            assert dict(await count.trailing_metadata()) == dict(TRAILERS)
            with pytest.raises(grpc.aio.AioRpcError) as failed:
                await method(channel, "Fail")(b"z")
    assert failed.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert seen == [f"/{SERVICE}/Say", f"/{SERVICE}/Count", f"/{SERVICE}/Fail"]
    with pytest.raises(BlockingIOError):
        listener.accept()


async def test_calls_through_aio_interceptors_are_recorded_whole(tmp_path: Path) -> None:
    path, seen = tmp_path / "intercepted.json", []
    with serving() as target:
        async with ssemock.use_cassette(path, record_mode="all"):
            interceptors = [_TaggingUnary(seen), _TaggingStream(seen)]
            async with grpc.aio.insecure_channel(target, interceptors=interceptors) as channel:
                assert await method(channel, "Say")(b"ann") == b"hello ann"
                assert [m async for m in method(channel, "Count")(b"2")] == [b"n:0", b"n:1"]
    calls = [x.grpc for x in ssemock.Cassette.load(path).interactions]
    assert [(c.method, [m.data for m in c.messages], c.status.code) for c in calls if c] == [
        (f"/{SERVICE}/Say", [b"ann", b"hello ann"], "OK"),
        (f"/{SERVICE}/Count", [b"2", b"n:0", b"n:1"], "OK"),
    ]
    assert seen == [f"/{SERVICE}/Say", f"/{SERVICE}/Count"]


async def test_a_written_protobuf_request_that_strays_names_the_field() -> None:
    """``write()``'s messages are decoded by their class in the mismatch, as a unary request is."""
    from google.protobuf import wrappers_pb2

    asked = [wrappers_pb2.StringValue(value=v).SerializeToString() for v in ("weather", "in Paris")]
    messages = [GrpcMessage("send", 0.0, asked[0]), GrpcMessage("send", 0.1, asked[1])]
    call = GrpcCall("/s.S/Ask", "stream_stream", messages, status=GrpcStatus("OK", "", 0.3))
    cassette = ssemock.Cassette(
        [Interaction(Request("POST", "http://svc:50051/s.S/Ask"), Response(200), grpc=call)]
    )
    serialize = wrappers_pb2.StringValue.SerializeToString
    with ssemock.replay(cassette):
        async with grpc.aio.insecure_channel("svc:50051") as channel:
            talk = channel.stream_stream("/s.S/Ask", request_serializer=serialize)()
            await talk.write(wrappers_pb2.StringValue(value="weather"))
            with pytest.raises(ssemock.UnmatchedRequestError) as unmatched:
                await talk.write(wrappers_pb2.StringValue(value="in Rome"))
    assert "request message 2 differs at field value: recorded 'in Paris', sent 'in Rome'" in str(
        unmatched.value
    )
