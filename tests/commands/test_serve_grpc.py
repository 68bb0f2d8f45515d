"""``ssemock serve`` answers gRPC over HTTP/2 cleartext on its HTTP port
(`ssemock.commands.serve.grpc`, `ssemock.commands.preface`): calls recorded through ``ssemock
proxy`` from a generic grpcio servicer (tests/grpc_servers.py), the servicer then stopped, are
replayed to grpcio under every gRPC wire chunking of the registry (the same messages, metadata,
-bin trailers and status), and a raw h2 client sees the DATA frames each chunking cuts; an
unmatched call and an unknown method end with the status naming what differs; HTTP/1.1 is still
answered on the same port; ``ssemock serve`` run as a command answers grpcio and Node's
``@grpc/grpc-js`` from other processes."""

from __future__ import annotations

import gzip
import json
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import grpc
import h2.config
import h2.connection
import h2.events
import httpx
import needs
import pytest
from grpc_servers import FAIL, SAY, STREAM, TALK, calls, generic_server

from ssemock.commands import serve
from ssemock.commands.loopback import running
from ssemock.commands.proxy import app as proxy_app
from ssemock.framing.grpc import frame, frame_all
from ssemock.store.cassette import Cassette
from ssemock.variants.grpc import chunking as grpc_chunking

NODE_DIR = Path(__file__).parents[1] / "node"


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """The generic servicer's calls recorded through ``ssemock proxy`` (the servicer stopped
    after): the cassette, and what the client saw live."""
    folder = tmp_path_factory.mktemp("grpc")
    with generic_server() as port:
        live = calls(f"127.0.0.1:{port}")
        with running(proxy_app(f"http://127.0.0.1:{port}", cassette_dir=folder)) as url:
            assert calls(url.removeprefix("http://")) == live
    return folder / "proxy.json", live


@contextmanager
def served(cassette: Any, **options: Any) -> Iterator[tuple[str, list[str]]]:
    log: list[str] = []
    with running(serve.app(cassette, log=log.append, **options)) as url:
        yield url.removeprefix("http://"), log


@pytest.mark.parametrize("chunking", grpc_chunking.names())
def test_every_chunking_replays_what_the_client_saw_live(
    recorded: tuple[Path, dict[str, Any]], chunking: str
) -> None:
    cassette, live = recorded
    with served(cassette, chunking=chunking) as (target, log):
        assert calls(target) == live
    assert any(f"gRPC {STREAM} -> OK" in line and f"chunking={chunking}" in line for line in log)


def h2_call(
    target: str,
    path: str,
    messages: list[bytes],
    *,
    body: bytes | None = None,
    head: tuple[tuple[str, str], ...] = (),
) -> tuple[list[bytes], dict[str, str]]:
    """One call by a raw h2 client (``body``: the request's bytes, else ``messages`` framed; ``head``:
    more headers): the payload of every DATA frame received, and the trailers ({} when the
    connection closed first)."""
    host, port = target.split(":")
    sock = socket.create_connection((host, int(port)), timeout=10)
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
    conn.initiate_connection()
    headers = [(":method", "POST"), (":scheme", "http"), (":authority", target), (":path", path)]
    conn.send_headers(1, [*headers, ("content-type", "application/grpc"), ("te", "trailers"), *head])
    conn.send_data(1, frame_all(messages) if body is None else body, end_stream=True)
    sock.sendall(conn.data_to_send())
    frames: list[bytes] = []
    trailers: dict[str, str] = {}
    with sock:
        while not trailers:
            data = sock.recv(65536)
            if not data:  # the server closed the connection before the trailers (a drop): none
                break
            for event in conn.receive_data(data):
                if isinstance(event, h2.events.DataReceived):
                    frames.append(event.data)
                    conn.acknowledge_received_data(event.flow_controlled_length, 1)
                elif isinstance(event, h2.events.TrailersReceived):
                    trailers = dict(event.headers)
                elif isinstance(event, h2.events.ResponseReceived) and event.stream_ended:
                    trailers = dict(event.headers)
            sock.sendall(conn.data_to_send())
    return frames, trailers


def test_the_data_frames_are_cut_as_each_chunking_says(recorded: tuple[Path, dict[str, Any]]) -> None:
    cassette, live = recorded
    messages = [frame(m) for m in live["stream"][0]]
    call = Cassette.load(cassette).interactions[0].grpc
    assert call is not None and call.wire.ends  # the proxy kept the DATA frames received
    expected = {
        "per_message": messages,
        "mid_header": [part for m in messages for part in (m[:1], m[1:3], m[3:])],
        "bytewise": [bytes([b]) for b in b"".join(messages)],
        "coalesced": [b"".join(messages)],
        "as_recorded": [b"".join(messages)[a:b] for a, b in zip([0, *call.wire.ends], call.wire.ends)],
    }
    for chunking, frames in expected.items():
        with served(cassette, chunking=chunking) as (target, _):
            got, trailers = h2_call(target, STREAM, [b"hi"])
        assert got == frames, chunking
        assert trailers["grpc-status"] == "0" and trailers["x-served-by"] == "b"
    with served(cassette, chunking="random:5") as (target, _):
        got, _ = h2_call(target, STREAM, [b"hi"])
    whole = b"".join(messages)
    assert b"".join(got) == whole and [len(g) for g in got] != [len(m) for m in messages]


def test_a_call_no_recording_matches_ends_naming_what_differs(recorded: tuple[Path, dict[str, Any]]) -> None:
    cassette, _ = recorded
    with served(cassette) as (target, log), grpc.insecure_channel(target) as channel:
        with pytest.raises(grpc.RpcError) as unmatched:
            list(channel.unary_stream(STREAM)(b"hello", timeout=10))
        with pytest.raises(grpc.RpcError) as unknown:
            channel.unary_unary("/demo.Chat/Nope")(b"x", timeout=10)
        with pytest.raises(grpc.RpcError) as bidi:  # the conversation leaves the recording at message 2
            list(channel.stream_stream(TALK)(iter([b"a", b"x", b"c"]), timeout=10))
    assert unmatched.value.code() == grpc.StatusCode.NOT_FOUND
    assert STREAM in unmatched.value.details() and "message 1 differs at byte 1" in unmatched.value.details()
    assert (
        unknown.value.code() == grpc.StatusCode.UNIMPLEMENTED and "/demo.Chat/Nope" in unknown.value.details()
    )
    assert (
        bidi.value.code() == grpc.StatusCode.NOT_FOUND
        and "message 2 differs at byte 0" in bidi.value.details()
    )
    assert any("/demo.Chat/Nope -> UNIMPLEMENTED" in line for line in log)


def test_http_is_still_answered_on_the_grpc_port(recorded: tuple[Path, dict[str, Any]]) -> None:
    cassette, live = recorded
    with served(cassette) as (target, _):
        answer = httpx.get(f"http://{target}/nothing")
        assert calls(target) == live
    assert answer.status_code == 404 and answer.json()["error"].startswith("ssemock: no recorded interaction")


def test_a_recorded_error_status_replays_after_its_messages(recorded: tuple[Path, dict[str, Any]]) -> None:
    cassette, live = recorded
    assert live["fail"] == [[b"one", b"two"], grpc.StatusCode.RESOURCE_EXHAUSTED, "slow down: 100% used"]
    with served(cassette, chunking="bytewise") as (target, _):
        got, trailers = h2_call(target, FAIL, [b"go"])
    assert b"".join(got) == frame(b"one") + frame(b"two")
    assert trailers["grpc-status"] == "8" and trailers["grpc-message"] == "slow down: 100%25 used"


def test_ssemock_serve_answers_grpcio_and_grpc_js_from_other_processes(
    recorded: tuple[Path, dict[str, Any]],
) -> None:
    cassette, live = recorded
    node = needs.node("@grpc/grpc-js")
    proc = subprocess.Popen(
        [sys.executable, "-m", "ssemock", "serve", str(cassette), "--port", "0", "--chunking", "mid_header"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert first.startswith("ssemock: serving on http://"), first + (
            proc.stderr.read() if proc.poll() else ""
        )
        target = first.split("http://")[1].strip()
        assert calls(target) == live
        done = subprocess.run(
            [node, str(NODE_DIR / "grpc.mjs"), target],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=NODE_DIR,
        )
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert done.returncode == 0, done.stderr[-3000:]
    node_saw = json.loads(done.stdout)
    assert node_saw["stream"]["messages"] == [m.decode() for m in live["stream"][0]]
    assert node_saw["stream"]["trailers"]["x-served-by"] == "b"
    assert node_saw["stream"]["trailers"]["x-trace-bin"] == "0001fe"
    assert node_saw["stream"]["initial"]["x-initial"] == "yes"
    assert node_saw["say"] == live["say"].decode()
    assert node_saw["talk"] == [m.decode() for m in live["talk"]]
    assert node_saw["fail"] == {"messages": ["one", "two"], "code": 8, "details": "slow down: 100% used"}


def _stream_outcome(target: str, timeout: float = 10) -> tuple[list[bytes], grpc.StatusCode, str]:
    with grpc.insecure_channel(target) as channel:
        call = channel.unary_stream(STREAM)(b"hi", timeout=timeout)
        got: list[bytes] = []
        try:
            got.extend(call)
        except grpc.RpcError:
            pass
        return got, call.code(), call.details() or ""


def test_faults_end_calls_on_the_wire_as_servers_and_networks_do(
    recorded: tuple[Path, dict[str, Any]],
) -> None:
    cassette, live = recorded
    messages = live["stream"][0]
    with served(cassette, faults="status:code=UNAVAILABLE,after_message=1", chunking="mid_header") as (
        target,
        log,
    ):
        assert _stream_outcome(target) == (
            messages[:1],
            grpc.StatusCode.UNAVAILABLE,
            "ssemock fault status:code=UNAVAILABLE,after_message=1",
        )
    assert any("fault status:code=UNAVAILABLE,after_message=1" in line for line in log)
    with served(cassette, faults="drop:after_message=2") as (target, _):
        frames, trailers = h2_call(target, STREAM, [b"hi"])
        got, code, _ = _stream_outcome(target)
    assert (b"".join(frames), trailers) == (frame(messages[0]) + frame(messages[1]), {})  # then it broke
    # grpcio says UNAVAILABLE; the messages it had read but not yet handed over may go with the
    # connection, as on a real network's drop
    assert code == grpc.StatusCode.UNAVAILABLE and got == messages[: len(got)]
    with served(cassette, faults="status:code=INTERNAL,after_message=0,on=/demo.Chat/Say") as (target, _):
        assert _stream_outcome(target) == (messages, grpc.StatusCode.OK, "")  # aimed at another method
        with grpc.insecure_channel(target) as channel, pytest.raises(grpc.RpcError) as aimed:
            channel.unary_unary(SAY)(b"yo", timeout=10)
    assert aimed.value.code() == grpc.StatusCode.INTERNAL
    with served(cassette, faults="sequence:status:code=UNAVAILABLE,after_message=0|as_recorded") as (
        target,
        _,
    ):
        first, retry = _stream_outcome(target), _stream_outcome(target)  # a client's retry path
    assert first[:2] == ([], grpc.StatusCode.UNAVAILABLE) and retry == (messages, grpc.StatusCode.OK, "")
    with served(cassette, faults="stall:before_message=3,seconds=60") as (target, _):
        got, code, _ = _stream_outcome(target, timeout=2)  # the client's deadline ends the stall
    assert (got, code) == (messages[:2], grpc.StatusCode.DEADLINE_EXCEEDED)


def test_a_compressed_request_matches_and_a_large_one_is_refused(
    recorded: tuple[Path, dict[str, Any]],
) -> None:
    cassette, live = recorded
    with served(cassette) as (target, _), grpc.insecure_channel(target) as channel:
        call = channel.unary_stream(STREAM)(b"hi", compression=grpc.Compression.Gzip, timeout=10)
        assert list(call) == live["stream"][0]  # read inflated, matched as recorded
    bomb = gzip.compress(b"x" * 100_000)  # small on the wire, past --max-body inflated
    with served(cassette, max_body=1000) as (target, _):
        _, large = h2_call(target, STREAM, [b"y" * 2000])
        _, inflated = h2_call(
            target, STREAM, [], body=frame(bomb, compressed=True), head=(("grpc-encoding", "gzip"),)
        )
    assert large["grpc-status"] == inflated["grpc-status"] == "8"  # RESOURCE_EXHAUSTED
    assert (
        "over the 1,000 accepted" in large["grpc-message"] and "inflates to over" in inflated["grpc-message"]
    )
