"""The urllib3 stack: requests, urllib3, sseclient-py and botocore's Bedrock runtime client,
recorded from a real loopback server and replayed without it, chunk by chunk."""

from __future__ import annotations

import asyncio
import binascii
import io
import json
import socket
import struct
import subprocess
import sys
import urllib.request
import warnings
import zlib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import boto3
import botocore.config
import httpx
import pytest
import requests
import sseclient
import urllib3
from conftest import ACK, GATED, FakeClock, gated
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import StreamingResponse
from starlette.routing import Route
from streams import openai_chat_events

import ssemock
from ssemock.commands.loopback import running

WRITES = [b"data: one\n\n", b"data: t", b"wo\n\nevent: x\ndata: \xe4\xb8", b"\x96\n\n"]
GAP = 0.02
CHAT = openai_chat_events()
TRANSFORMS = ["none", "crlf", "cr", "keepalive", "no_space"]


# -- a loopback server: scripted SSE writes, and AWS eventstream frames for Bedrock ---------------


def _frame(event_type: str, payload: dict[str, Any]) -> bytes:
    """One AWS eventstream message (prelude, string headers, JSON payload, CRC32s)."""
    headers = b""
    for name, value in (
        (":event-type", event_type),
        (":content-type", "application/json"),
        (":message-type", "event"),
    ):
        n, v = name.encode(), value.encode()
        headers += struct.pack(">B", len(n)) + n + b"\x07" + struct.pack(">H", len(v)) + v
    body = json.dumps(payload).encode()
    prelude = struct.pack(">II", 12 + len(headers) + len(body) + 4, len(headers))
    message = prelude + struct.pack(">I", binascii.crc32(prelude)) + headers + body
    return message + struct.pack(">I", binascii.crc32(message))


BEDROCK_TEXT = ["Hello", ", wor", "ld! 世界", " ok"]
FRAMES = (
    [_frame("messageStart", {"role": "assistant"})]
    + [_frame("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": t}}) for t in BEDROCK_TEXT]
    + [
        _frame("contentBlockStop", {"contentBlockIndex": 0}),
        _frame("messageStop", {"stopReason": "end_turn"}),
        _frame(
            "metadata",
            {"usage": {"inputTokens": 3, "outputTokens": 4, "totalTokens": 7}, "metrics": {"latencyMs": 12}},
        ),
    ]
)


def _scripted(
    writes: list[bytes],
    gap: float,
    *,
    media_type: str = "text/event-stream",
    fail_after: int | None = None,
    stall: float = 0.0,
    gzip: bool = False,
) -> Any:
    async def endpoint(request: Request) -> StreamingResponse:
        await request.body()
        z = zlib.compressobj(6, zlib.DEFLATED, 16 + zlib.MAX_WBITS)

        async def body() -> AsyncIterator[bytes]:
            for i, data in enumerate(writes):
                if i == fail_after:
                    raise ConnectionResetError("scripted failure")
                if i:
                    await asyncio.sleep(stall if stall and i == 1 else gap)
                last = i == len(writes) - 1
                yield (
                    z.compress(data) + z.flush(zlib.Z_FINISH if last else zlib.Z_SYNC_FLUSH) if gzip else data
                )

        headers = {"content-encoding": "gzip"} if gzip else {}
        return StreamingResponse(body(), media_type=media_type, headers=headers)

    return endpoint


async def _bedrock(request: Request) -> StreamingResponse:
    fails = request.path_params["model"] == "fail-model"
    return await _scripted(
        FRAMES, 0.01, media_type="application/vnd.amazon.eventstream", fail_after=3 if fails else None
    )(request)


async def _echo(request: Request) -> StreamingResponse:
    body = await request.body()
    framing = "chunked" if "chunked" in request.headers.get("transfer-encoding", "") else "length"
    return StreamingResponse(iter([framing.encode(), b":", body]), media_type="text/plain")


APP = Starlette(
    routes=[
        Route("/echo", _echo, methods=["POST"]),
        Route("/events", _scripted(WRITES, GAP), methods=["GET", "POST"]),
        Route("/chat", _scripted(CHAT, 0.005), methods=["GET", "POST"]),
        Route("/fail", _scripted([b"data: one\n\n", b"data: tw", b"o\n\n"], GAP, fail_after=2)),
        Route("/gzip", _scripted([b"data: one\n\n", b"data: two\n\n"], GAP, gzip=True)),
        Route("/stall", _scripted([b"data: one\n\n", b"data: two\n\n"], GAP, stall=1.0)),
        Route("/model/{model}/converse-stream", _bedrock, methods=["POST"]),
        Route("/gated", gated, methods=["GET", "POST"]),
    ]
)


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with running(APP) as url:
        yield url


class Listener:
    """A loopback port that counts the connections it gets (the socket-level detector)."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.setblocking(False)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def accepted(self) -> int:
        n = 0
        while True:
            try:
                conn, _ = self.sock.accept()
            except BlockingIOError:
                return n
            conn.close()
            n += 1


@pytest.fixture
def listener() -> Iterator[Listener]:
    listening = Listener()
    yield listening
    listening.sock.close()


def _sse(chunks: Any) -> list[tuple[str, str]]:
    return [(e.event, e.data) for e in sseclient.SSEClient(chunks).events()]


@pytest.fixture(scope="module")
def chat(server: str, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[tuple[str, str]]]:
    """A cassette of the chat stream recorded through requests + sseclient-py, and what it decoded."""
    path = tmp_path_factory.mktemp("chat") / "chat.json"
    with ssemock.use_cassette(path, record_mode="once"):
        with requests.post(f"{server}/chat", json={"stream": True}, stream=True, timeout=5) as r:
            live = _sse(r.iter_content(None))
    return path, live


# -- recording -----------------------------------------------------------------------------------


def test_recorded_boundaries_are_the_server_writes_and_replay_needs_no_server(tmp_path: Path) -> None:
    path = tmp_path / "events.json"
    with running(APP) as url:
        with ssemock.use_cassette(path, record_mode="once"):
            with requests.get(f"{url}/events", stream=True, timeout=5) as r:
                live = list(r.iter_content(None))
            pool = urllib3.PoolManager()
            direct = pool.request("GET", f"{url}/events", preload_content=False)
            streamed = list(direct.stream())
    assert live == WRITES and streamed == WRITES  # the clients got each write as it came
    first, second = ssemock.Cassette.load(path).interactions
    for x in (first, second):
        assert x.response.chunks == WRITES and x.response.complete and x.response.error is None
        spread = x.response.times[-1] - x.response.times[0]  # arrival times, not read times
        assert 0.8 * GAP * (len(WRITES) - 1) <= spread, x.response.times  # no upper bound: load delays
    assert first.request.url == f"{url}/events"
    # the server is gone: the replay makes no connection
    with ssemock.use_cassette(path) as player:
        with requests.get(f"{url}/events", stream=True, timeout=5) as r:
            assert list(r.iter_content(None)) == WRITES
        again = urllib3.PoolManager().request("GET", f"{url}/events", preload_content=False)
        assert list(again.stream()) == WRITES
    assert player.unplayed() == []


def test_keep_alive_connection_is_reused_while_recording(server: str, tmp_path: Path) -> None:
    path = tmp_path / "two.json"
    with ssemock.use_cassette(path, record_mode="once"), requests.Session() as session:
        live = []
        for _ in range(2):
            with session.get(f"{server}/events", stream=True, timeout=5) as r:
                live.append(list(r.iter_content(None)))
        pools = session.get_adapter(server).poolmanager.pools
        connections = sum(pools[key].num_connections for key in pools.keys())
    assert [b"".join(pieces) for pieces in live] == [b"".join(WRITES)] * 2 and connections == 1
    # the server's writes, even where TCP delivered several in one segment (it does on a reused
    # connection: Nagle and delayed ACKs)
    assert [x.response.chunks for x in ssemock.Cassette.load(path).interactions] == live == [WRITES, WRITES]


def test_request_bodies_of_every_kind_are_sent_matched_and_stored(server: str, tmp_path: Path) -> None:
    def send() -> list[bytes]:
        return [
            requests.post(f"{server}/echo", data=iter([b"gen", "erator"]), timeout=5).content,
            requests.post(f"{server}/echo", data=io.BytesIO(b"a file"), timeout=5).content,
            urllib3.request("POST", f"{server}/echo", body=io.BytesIO(b"a raw file")).data,
            urllib3.request("POST", f"{server}/echo", body=bytearray(b"a buffer")).data,
        ]

    path = tmp_path / "bodies.json"
    with ssemock.use_cassette(path, record_mode="once"):
        recorded = send()
    # the server got each body framed as without ssemock (an iterable or a file of unknown size: chunked)
    assert (
        recorded
        == send()
        == [b"chunked:generator", b"length:a file", b"chunked:a raw file", b"length:a buffer"]
    )
    bodies = [b"generator", b"a file", b"a raw file", b"a buffer"]
    assert [x.request.body for x in ssemock.Cassette.load(path).interactions] == bodies
    with ssemock.use_cassette(path):  # matched on the body, whatever carries it
        assert (
            requests.post(f"{server}/echo", data=io.StringIO("generator"), timeout=5).content == recorded[0]
        )
        assert requests.post(f"{server}/echo", data=b"a file", timeout=5).content == recorded[1]
        assert urllib3.request("POST", f"{server}/echo", body="a raw file").data == recorded[2]
        assert urllib3.request("POST", f"{server}/echo", body=iter([b"a buf", b"fer"])).data == recorded[3]


def test_gzip_is_stored_decoded_and_replayed(server: str, tmp_path: Path) -> None:
    path = tmp_path / "gz.json"
    with ssemock.use_cassette(path, record_mode="once"):
        live = requests.get(f"{server}/gzip", timeout=5)
    assert live.headers["content-encoding"] == "gzip"
    (x,) = ssemock.Cassette.load(path).interactions
    assert x.response.header("content-encoding") is None
    assert x.response.chunks == [b"data: one\n\n", b"data: two\n\n"]
    with ssemock.use_cassette(path):
        replayed = requests.get(f"{server}/gzip", timeout=5)
    assert replayed.content == live.content and "content-encoding" not in replayed.headers


def test_abandoned_stream_is_recorded_as_incomplete_without_drain_on_close(
    server: str, tmp_path: Path
) -> None:
    path = tmp_path / "abandoned.json"
    with ssemock.use_cassette(path, record_mode="once", drain_on_close=False):
        with requests.get(f"{server}/events", stream=True, timeout=5) as r:
            first = next(r.iter_content(None))
    (x,) = ssemock.Cassette.load(path).interactions
    assert first == WRITES[0]
    assert x.response.complete is False and x.response.error is None
    assert x.response.body == WRITES[0]


def test_client_gets_each_chunk_as_it_arrives_while_recording(server: str, tmp_path: Path) -> None:
    """The gated route sends its next write only after the client acknowledged the last one: a
    recorder that held chunks back would make it say late."""
    got = []
    with ssemock.use_cassette(tmp_path / "ttfc.json", record_mode="once"):
        with requests.get(f"{server}/gated", stream=True, timeout=30) as r:
            for chunk in r.iter_content(None):
                got.append(chunk)
                ACK.release()
    assert got == GATED


# -- replay: every chunking and transform ------------------------------------------------------


@pytest.mark.parametrize("transform", TRANSFORMS)
@pytest.mark.parametrize("chunking", ssemock.chunking.ALL, ids=str)
def test_replay_decodes_like_live(
    chat: tuple[Path, list[tuple[str, str]]], chunking: Any, transform: str, server: str
) -> None:
    path, live = chat
    spec = None if transform == "none" else transform
    with ssemock.use_cassette(path, chunking=chunking, transform=spec, allow_playback_repeats=True) as player:
        with requests.post(f"{server}/chat", json={"stream": True}, stream=True, timeout=5) as r:
            events = _sse(r)  # sseclient-py as documented: over the response (iter_content(128))
        player.assert_events(events)
        assert events == live
        with requests.post(f"{server}/chat", json={"stream": True}, stream=True, timeout=5) as r:
            pieces = list(r.iter_content(None))
        played = player.plays[-1]
        assert pieces == [played.body[a:b] for a, b in zip([0, *played.ends], played.ends)]
        direct = urllib3.request("POST", f"{server}/chat", json={"stream": True}, preload_content=False)
        assert list(direct.stream()) == pieces
        if transform in ("none", "no_space", "keepalive"):  # no CR: requests' own line splitting
            with requests.post(f"{server}/chat", json={"stream": True}, stream=True, timeout=5) as r:
                assert list(r.iter_lines()) == played.body.splitlines()


def test_a_cr_lf_split_across_chunks_reaches_requests_as_on_a_socket(
    chat: tuple[Path, Any], server: str
) -> None:
    """requests' iter_lines() yields an empty line when a chunk ends between CR and LF: the replay
    hands requests the same reads a socket would, so the client sees that (a real requests bug)."""
    with ssemock.use_cassette(chat[0], chunking="bytewise", transform="crlf") as player:
        with requests.post(f"{server}/chat", json={"stream": True}, stream=True, timeout=5) as r:
            lines = list(r.iter_lines())
    assert lines != player.plays[-1].body.splitlines()
    assert len(lines) == len(player.plays[-1].body.splitlines()) + player.plays[-1].body.count(b"\r\n")


@pytest.mark.parametrize("chunking", ["bytewise", "fixed:7"])
def test_reads_see_exactly_the_planned_chunks(chat: tuple[Path, Any], server: str, chunking: str) -> None:
    with ssemock.use_cassette(chat[0], chunking=chunking, allow_playback_repeats=True) as player:
        with requests.post(f"{server}/chat", json={"stream": True}, stream=True, timeout=5) as r:
            pieces = list(r.iter_content(None))
        played = player.plays[-1]
        planned = [played.body[a:b] for a, b in zip([0, *played.ends], played.ends)]
        assert pieces == planned and {len(p) for p in planned[:-1]} == {1 if chunking == "bytewise" else 7}
        direct = urllib3.request("POST", f"{server}/chat", json={"stream": True}, preload_content=False)
        assert list(direct.stream()) == planned
        direct = urllib3.request("POST", f"{server}/chat", json={"stream": True}, preload_content=False)
        assert [direct.read1(1000) for _ in planned] == planned  # a read stops at a boundary
        direct = urllib3.request("POST", f"{server}/chat", json={"stream": True}, preload_content=False)
        by_five = iter(lambda: direct.read(5), b"")
        assert b"".join(by_five) == played.body


def test_a_chunk_is_taken_from_the_plan_only_when_the_client_reads(
    chat: tuple[Path, Any], server: str
) -> None:
    with ssemock.use_cassette(chat[0], chunking="per_event") as player:
        with requests.post(f"{server}/chat", json={"stream": True}, stream=True, timeout=5) as r:
            first = next(r.iter_content(None))
    (play,) = player.plays
    assert first == CHAT[0]
    assert player.unconsumed() == [play] and play.stream.closed


def test_head_and_no_content_have_no_body(listener: Listener) -> None:
    cassette = ssemock.Cassette()
    cassette.add("HEAD", f"{listener.url}/h", [], headers={"x-a": "1"})
    cassette.add("DELETE", f"{listener.url}/d", [], status=204)
    with ssemock.replay(cassette):
        head = requests.head(f"{listener.url}/h", timeout=5)
        gone = requests.delete(f"{listener.url}/d", timeout=5)
    assert (head.status_code, head.headers["x-a"], head.content) == (200, "1", b"")
    assert (gone.status_code, gone.content) == (204, b"")
    assert listener.accepted() == 0


# -- faults ----------------------------------------------------------------------------------------


def test_disconnect_raises_each_clients_own_error_at_the_same_byte(
    chat: tuple[Path, Any], server: str
) -> None:
    with ssemock.use_cassette(
        chat[0], faults="disconnect:after_event=3", allow_playback_repeats=True
    ) as player:
        got: list[bytes] = []
        with pytest.raises(requests.exceptions.ChunkedEncodingError):
            with requests.post(f"{server}/chat", json={"stream": True}, stream=True, timeout=5) as r:
                for piece in r.iter_content(None):
                    got.append(piece)
        assert b"".join(got) == b"".join(CHAT[:3]) == player.plays[-1].body
        direct = urllib3.request("POST", f"{server}/chat", json={"stream": True}, preload_content=False)
        streamed: list[bytes] = []
        with pytest.raises(urllib3.exceptions.ProtocolError):
            for piece in direct.stream():
                streamed.append(piece)
        assert streamed == got


def test_recorded_failure_replays_as_the_replaying_stacks_error(server: str, tmp_path: Path) -> None:
    path = tmp_path / "fail.json"
    live: list[bytes] = []
    with ssemock.use_cassette(path, record_mode="once"):
        with pytest.raises(requests.exceptions.ChunkedEncodingError):
            with requests.get(f"{server}/fail", stream=True, timeout=5) as r:
                for piece in r.iter_content(None):
                    live.append(piece)
    (x,) = ssemock.Cassette.load(path).interactions
    assert x.response.error is not None and x.response.error["at_byte"] == len(b"".join(live))
    assert not x.response.complete and x.response.body == b"".join(live) == b"data: one\n\ndata: tw"
    with ssemock.use_cassette(path, chunking="bytewise", allow_playback_repeats=True):
        replayed: list[bytes] = []
        with pytest.raises(requests.exceptions.ChunkedEncodingError):
            with requests.get(f"{server}/fail", stream=True, timeout=5) as r:
                for piece in r.iter_content(None):
                    replayed.append(piece)
        assert b"".join(replayed) == x.response.body
        with httpx.Client() as client, pytest.raises(httpx.RemoteProtocolError):  # and through httpx
            with client.stream("GET", f"{server}/fail") as response:
                assert b"".join(response.iter_raw()) == x.response.body


def test_read_timeout_is_what_requests_raises_live(server: str) -> None:
    with pytest.raises(requests.exceptions.ConnectionError) as live:
        with requests.get(f"{server}/stall", stream=True, timeout=(5, 0.3)) as r:
            list(r.iter_content(None))
    assert isinstance(live.value.args[0], urllib3.exceptions.ReadTimeoutError)


def test_recorded_read_timeout_replays_as_one_at_the_same_byte(server: str, tmp_path: Path) -> None:
    path = tmp_path / "timeout.json"
    live: list[bytes] = []
    with ssemock.use_cassette(path, record_mode="once"):
        with pytest.raises(requests.exceptions.ConnectionError):
            with requests.get(f"{server}/stall", stream=True, timeout=(5, 0.3)) as r:
                for piece in r.iter_content(None):
                    live.append(piece)
    (x,) = ssemock.Cassette.load(path).interactions
    assert x.response.error is not None and x.response.error["type"] == "ReadTimeoutError"
    assert x.response.body == b"".join(live) == b"data: one\n\n"
    with ssemock.use_cassette(path, timing="recorded"):
        direct = urllib3.request("GET", f"{server}/stall", preload_content=False, timeout=60.0)
        replayed = []
        with pytest.raises(urllib3.exceptions.ReadTimeoutError):
            for piece in direct.stream():
                replayed.append(piece)
        assert replayed == live


def test_stall_past_the_read_timeout_raises_at_once(
    chat: tuple[Path, Any], server: str, fake_clock: FakeClock
) -> None:
    with ssemock.use_cassette(chat[0], faults="stall:before_event=2,seconds=30", allow_playback_repeats=True):
        got: list[bytes] = []
        with pytest.raises(requests.exceptions.ConnectionError) as raised:
            with requests.post(f"{server}/chat", json={"stream": True}, stream=True, timeout=(5, 1)) as r:
                for piece in r.iter_content(None):
                    got.append(piece)
        assert isinstance(raised.value.args[0], urllib3.exceptions.ReadTimeoutError)
        assert b"".join(got) == b"".join(CHAT[:2])
        direct = urllib3.request(
            "POST", f"{server}/chat", json={"stream": True}, preload_content=False, timeout=1.0
        )
        with pytest.raises(urllib3.exceptions.ReadTimeoutError):
            list(direct.stream())
        assert fake_clock.slept == []  # raised at once, no sleeping
        # a stall shorter than the read timeout is no error
        with requests.post(f"{server}/chat", json={"stream": True}, stream=True, timeout=(5, 60)) as r:
            assert b"".join(r.iter_content(None)) == b"".join(CHAT)


def test_urllib3_retries_reach_the_player_once_per_attempt(listener: Listener) -> None:
    cassette = ssemock.Cassette()
    cassette.add("GET", f"{listener.url}/retry", CHAT)
    with ssemock.replay(
        cassette, faults=[ssemock.faults.sequence("disconnect:after_event=1", None)]
    ) as player:
        response = urllib3.request("GET", f"{listener.url}/retry")  # read in full: a read error is retried
    assert response.data == b"".join(CHAT)
    assert len(player.plays) == 2 and listener.accepted() == 0


def test_http_error_gives_the_status(chat: tuple[Path, Any], server: str) -> None:
    with ssemock.use_cassette(chat[0], faults="http_error:status=429"):
        r = requests.post(f"{server}/chat", json={"stream": True}, timeout=5)
        direct = urllib3.request("POST", f"{server}/chat", json={"stream": True}, retries=False)
    assert r.status_code == 429 and direct.status == 429


# -- botocore: Bedrock runtime converse_stream -----------------------------------------------------


def _bedrock_client(url: str, secret: str = "testSECRETfake0000000000000000000000000") -> Any:
    return boto3.client(
        "bedrock-runtime",
        endpoint_url=url,
        region_name="us-east-1",
        aws_access_key_id="AKIATESTFAKE00000000",
        aws_secret_access_key=secret,
        config=botocore.config.Config(retries={"max_attempts": 1}),
    )


def _converse(client: Any, model: str = "test-model") -> list[dict[str, Any]]:
    response = client.converse_stream(modelId=model, messages=[{"role": "user", "content": [{"text": "hi"}]}])
    return list(response["stream"])


@pytest.fixture(scope="module")
def bedrock(server: str, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, Any]]]:
    path = tmp_path_factory.mktemp("bedrock") / "bedrock.json"
    with ssemock.use_cassette(path, record_mode="once"):
        live = _converse(_bedrock_client(server))
    return path, live


def test_bedrock_records_the_server_frames(bedrock: tuple[Path, list[dict[str, Any]]]) -> None:
    path, live = bedrock
    (x,) = ssemock.Cassette.load(path).interactions
    assert x.response.chunks == FRAMES and x.response.complete
    assert [e["contentBlockDelta"]["delta"]["text"] for e in live if "contentBlockDelta" in e] == BEDROCK_TEXT
    assert live[-1]["metadata"]["usage"]["totalTokens"] == 7


@pytest.mark.parametrize("chunking", ssemock.chunking.ALL, ids=str)
def test_bedrock_replay_decodes_like_live(
    bedrock: tuple[Path, list[dict[str, Any]]], chunking: Any, server: str
) -> None:
    path, live = bedrock
    # other credentials, so another signature: matching is on method, URL and body
    with ssemock.use_cassette(path, chunking=chunking):
        assert _converse(_bedrock_client(server, secret="testOTHERfake")) == live


def test_bedrock_disconnect_raises_what_live_raises(
    server: str, tmp_path: Path, bedrock: tuple[Path, Any]
) -> None:
    path = tmp_path / "bedrock-fail.json"
    with ssemock.use_cassette(path, record_mode="once"):
        with pytest.raises(Exception) as live:
            _converse(_bedrock_client(server), model="fail-model")
    with ssemock.use_cassette(path, chunking="bytewise"):
        with pytest.raises(type(live.value)):
            _converse(_bedrock_client(server), model="fail-model")
    assert isinstance(live.value, urllib3.exceptions.ProtocolError)  # botocore lets urllib3's through
    with ssemock.use_cassette(bedrock[0], faults="disconnect:after_byte=300"):
        with pytest.raises(type(live.value)):
            _converse(_bedrock_client(server))


def test_bedrock_stall_past_botocores_read_timeout_raises_at_once(
    bedrock: tuple[Path, Any], server: str, fake_clock: FakeClock
) -> None:
    client = boto3.client(
        "bedrock-runtime",
        endpoint_url=server,
        region_name="us-east-1",
        aws_access_key_id="AKIATESTFAKE00000000",
        aws_secret_access_key="testSECRETfake",
        config=botocore.config.Config(read_timeout=1, retries={"max_attempts": 1}),
    )
    with ssemock.use_cassette(bedrock[0], faults="stall:before_event=0,seconds=30"):
        with pytest.raises(urllib3.exceptions.ReadTimeoutError):  # botocore lets urllib3's through
            _converse(client)
        assert fake_clock.slept == []  # raised at once, no sleeping


def test_botocore_retries_a_503_and_then_streams(
    bedrock: tuple[Path, list[dict[str, Any]]], server: str
) -> None:
    client = boto3.client(
        "bedrock-runtime",
        endpoint_url=server,
        region_name="us-east-1",
        aws_access_key_id="AKIATESTFAKE00000000",
        aws_secret_access_key="testSECRETfake",
        config=botocore.config.Config(retries={"max_attempts": 3, "mode": "standard"}),
    )
    with ssemock.use_cassette(
        bedrock[0], faults=[ssemock.faults.sequence("http_error:status=503", None)]
    ) as player:
        assert _converse(client) == bedrock[1]
    assert [play.stream.consumed for play in player.plays] == [True, True] and len(player.plays) == 2


def test_replay_makes_no_connection(listener: Listener) -> None:
    cassette = ssemock.Cassette()
    cassette.add("POST", f"{listener.url}/chat", CHAT)
    cassette.add("GET", f"{listener.url}/raw", CHAT)
    cassette.add(
        "POST",
        f"{listener.url}/model/test-model/converse-stream",
        FRAMES,
        headers={"content-type": "application/vnd.amazon.eventstream"},
        request_json={"messages": [{"role": "user", "content": [{"text": "hi"}]}]},
    )
    with ssemock.replay(cassette):
        assert b"".join(requests.post(f"{listener.url}/chat", timeout=5).iter_content(None)) == b"".join(CHAT)
        assert urllib3.request("GET", f"{listener.url}/raw").data == b"".join(CHAT)
        assert len(_converse(_bedrock_client(listener.url))) == len(FRAMES)
    assert listener.accepted() == 0


# -- the network lock --------------------------------------------------------------------------------


def test_lock_blocks_every_connection_no_cassette_answers(listener: Listener) -> None:
    with ssemock.replay(ssemock.Cassette(), allowed_hosts=[]):
        with pytest.raises(ssemock.UnmatchedRequestError):
            requests.get(f"{listener.url}/x", timeout=5)
        with pytest.raises(ssemock.UnmatchedRequestError):
            urllib3.request("GET", f"{listener.url}/x")
        with pytest.raises(ssemock.NetworkBlockedError, match=r"127\.0\.0\.1"):
            urllib.request.urlopen(f"{listener.url}/x", timeout=5)
        with pytest.raises(ssemock.NetworkBlockedError):
            socket.create_connection(("127.0.0.1", listener.sock.getsockname()[1]), timeout=5)
    assert listener.accepted() == 0


def test_recording_warns_of_a_connection_it_cannot_tee(server: str, tmp_path: Path) -> None:
    path = tmp_path / "warn.json"
    port = server.rsplit(":", 1)[1]
    with ssemock.use_cassette(path, record_mode="once", allowed_hosts=[]):
        with pytest.warns(ssemock.SsemockWarning, match=rf"127\.0\.0\.1:{port}.*not recorded"):
            with urllib.request.urlopen(f"{server}/events", timeout=5) as r:
                assert r.read() == b"".join(WRITES)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            requests.get(f"{server}/events", timeout=5)  # teed: recorded, no warning
    (x,) = ssemock.Cassette.load(path).interactions
    assert x.response.chunks == WRITES


# -- respx idioms on requests sent through urllib3 ------------------------------------------------------


def test_a_users_route_answers_and_calls_are_counted(
    chat: tuple[Path, Any], server: str, listener: Listener
) -> None:
    with ssemock.use_cassette(chat[0]) as player:
        route = player.router.get(f"{listener.url}/mine").respond(json={"ok": "世界"})
        assert requests.get(f"{listener.url}/mine", timeout=5).json() == {"ok": "世界"}
        with requests.post(f"{server}/chat", json={"stream": True}, stream=True, timeout=5) as r:
            assert _sse(r.iter_content(None)) == chat[1]
    assert route.called and route.call_count == 1
    assert [call.request.url.path for call in player.router.calls] == ["/mine", "/chat"]
    assert listener.accepted() == 0


def test_a_pass_through_route_reaches_the_server_untouched(server: str, tmp_path: Path) -> None:
    path = tmp_path / "pass.json"
    with ssemock.use_cassette(path, record_mode="once") as player:
        player.router.route(path="/events").pass_through()
        with requests.get(f"{server}/events", stream=True, timeout=5) as r:
            assert list(r.iter_content(None)) == WRITES
    assert not path.exists()  # sent for real, not recorded


def test_an_https_proxy_tunnel_is_opened_only_for_a_request_sent_for_real(
    listener: Listener, tmp_path: Path
) -> None:
    proxies = {"https": listener.url}
    cassette = ssemock.Cassette()
    cassette.add("POST", "https://api.example.test/v1/chat", CHAT)
    with ssemock.replay(cassette):
        with requests.post("https://api.example.test/v1/chat", proxies=proxies, stream=True, timeout=5) as r:
            assert list(r.iter_content(None)) == CHAT
    assert listener.accepted() == 0
    # recording: the CONNECT goes to the proxy (which never answers here)
    with ssemock.use_cassette(tmp_path / "proxied.json", record_mode="once"):
        with pytest.raises(requests.exceptions.RequestException):
            requests.get("https://api.example.test/v1/x", proxies=proxies, timeout=0.3)
    assert listener.accepted() == 1


def test_requests_imported_while_a_player_is_active_is_intercepted_and_unpatched_after() -> None:
    script = """
import sys, ssemock
assert "urllib3" not in sys.modules
cassette = ssemock.Cassette()
cassette.add("GET", "http://api.example.test/x", [b"data: a\\n\\n", b"data: b\\n\\n"])
with ssemock.replay(cassette):
    import requests
    print(list(requests.get("http://api.example.test/x", stream=True).iter_content(None)))
from urllib3.connectionpool import HTTPConnectionPool
print("_make_request" in vars(HTTPConnectionPool) and HTTPConnectionPool._make_request.__module__)
"""
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert out.stdout.splitlines() == ["[b'data: a\\n\\n', b'data: b\\n\\n']", "urllib3.connectionpool"]


USER_TESTS = """
import os, boto3, pytest, requests, sseclient

URL = os.environ["SSEMOCK_TEST_SERVER"]

@pytest.mark.ssemock(chunking="all")
def test_requests_sse():
    with requests.post(URL + "/chat", json={"stream": True}, stream=True, timeout=5) as r:
        events = [e.data for e in sseclient.SSEClient(r).events()]
    assert events[-1] == "[DONE]" and len(events) == %d

@pytest.mark.ssemock
def test_bedrock():
    client = boto3.client("bedrock-runtime", endpoint_url=URL, region_name="us-east-1",
                          aws_access_key_id="AKIATESTFAKE00000000", aws_secret_access_key="testSECRETfake")
    stream = client.converse_stream(modelId="m", messages=[{"role": "user", "content": [{"text": "hi"}]}])
    text = "".join(e["contentBlockDelta"]["delta"]["text"] for e in stream["stream"] if "contentBlockDelta" in e)
    assert text == %r
""" % (len(CHAT), "".join(BEDROCK_TEXT))  # noqa: UP031  (the test file holds braces)


def test_a_marked_test_records_once_then_replays_offline(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # in-process (the inner runs need nothing this process lacks: boto3, requests and sseclient
    # are imported above, ssemock's modules by the conftest; their order is their own)
    pytester.makepyfile(test_user=USER_TESTS)
    with running(APP) as url:
        monkeypatch.setenv("SSEMOCK_TEST_SERVER", url)
        pytester.runpytest_inprocess("--ssemock-record-mode=once").assert_outcomes(passed=8)
    replayed = pytester.runpytest_inprocess("-v")  # the server is gone
    replayed.assert_outcomes(passed=8)
    for chunking in ssemock.chunking.ALL:
        assert f"test_requests_sse[ssemock-{chunking.name}] PASSED" in replayed.stdout.str()
