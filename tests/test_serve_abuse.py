"""``ssemock serve`` under abuse: floods of request ids, bogus ``Last-Event-ID`` reconnections,
connections whose headers never finish, clients that leave mid-body. Memory and the work done
per request stay bounded (measured with tracemalloc and by counting decoder runs, never by the
clock), and well-behaved clients keep being served, in order.
"""

from __future__ import annotations

import gc
import time
import tracemalloc
from pathlib import Path
from typing import Any

import orjson
import pytest
import requests
from hypothesis import given, settings
from hypothesis import strategies as st
from waiting import closed_by_server, half_head
from websockets.sync.client import connect

import ssemock
from ssemock import sse
from ssemock.commands import serve
from ssemock.commands.cli import main
from ssemock.commands.loopback import running
from ssemock.commands.serve import app, resume_index, resume_offset
from ssemock.commands.serve import replayer as serve_replayer
from ssemock.plan import resume as serve_resume

TIMEOUT = 10.0
URL = "https://api.example.com/v1/chat/completions"
EVENTS = [f"id: {i}\ndata: event {i}\n\n".encode() for i in range(1, 6)] + [b"data: [DONE]\n\n"]


def _cassette() -> ssemock.Cassette:
    cassette = ssemock.Cassette()
    cassette.add("POST", URL, EVENTS, headers={"content-type": "text/event-stream"})
    cassette.add(
        "GET",
        "https://api.example.com/v1/chat/completions",
        EVENTS,
        headers={"content-type": "text/event-stream"},
    )
    return cassette


def _batch(first: int, count: int) -> bytes:
    """A JSON-RPC batch of ``count`` requests with distinct ids: what a held stream could wait for."""
    return orjson.dumps([{"jsonrpc": "2.0", "id": first + k, "method": "ping"} for k in range(count)])


def _flood_ids(url: str, batches: list[bytes]) -> None:
    for batch in batches:
        response = requests.post(
            url + "/v1/chat/completions",
            data=batch,
            timeout=TIMEOUT,
            headers={"content-type": "application/json"},
        )
        assert response.status_code == 200 and response.content == b"".join(EVENTS)


def test_a_flood_of_request_ids_is_not_kept() -> None:
    """Each request's JSON-RPC ids were kept for ever (43 -> 332 MB after 30 requests); now only
    ids an open held stream waits for are, so 5 batches of 5,000 ids leave memory flat: what
    stays is under 10 KB, the bound is 256 KB, and each way of keeping them is over it for these
    25,000 ids (a ledger of every id about 2 MB, a request body kept per request 1.1 MB, its ids
    kept per request 0.9 MB)."""
    asgi = app(_cassette())
    replayer: serve.Replayer = asgi.state.ssemock
    warm_up = [_batch(0, 5_000)]
    flood = [_batch(r * 5_000, 5_000) for r in range(1, 6)]  # built before tracing: only serving is traced
    with running(asgi) as url:
        _flood_ids(url, warm_up)  # warm up (imports, caches)
        gc.collect()
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            _flood_ids(url, flood)
            gc.collect()
            grown = tracemalloc.get_traced_memory()[0] - before
        finally:
            tracemalloc.stop()
    assert replayer.held_ids == 0
    assert grown < 256 << 10, f"{grown} bytes kept after 25,000 ids"  # a ledger of every id: ~2 MB here
    assert len(replayer.exchanges) == 6


def test_a_held_stream_keeps_only_the_ids_it_waits_for_and_drops_them_when_it_ends() -> None:
    """The legacy MCP session over the server: while its GET stream waits for ids 1-5, a flood
    of other ids is not kept; the one it waits for is, until the stream ends."""
    cassette = ssemock.cassettes.load("mcp/sse_session")
    cassette.add("POST", "http://127.0.0.1:8000/flood", [b"{}"], headers={"content-type": "application/json"})
    asgi = app(cassette)
    replayer: serve.Replayer = asgi.state.ssemock
    with running(asgi) as url:
        with requests.get(f"{url}/sse", stream=True, timeout=TIMEOUT) as stream:
            reads = stream.iter_content(chunk_size=None)  # kept: a dropped iterator closes the connection
            assert next(reads).startswith(b"event: endpoint")  # it now waits for the request with id 1
            for r in range(5):
                assert requests.post(f"{url}/flood", data=_batch(1000 + r * 5000, 5000), timeout=TIMEOUT).ok
            assert replayer.held_ids == 0  # 25,000 ids, none of which the stream waits for
            assert requests.post(f"{url}/flood", data=_batch(1, 1), timeout=TIMEOUT).ok
            assert replayer.held_ids == 1  # id 1: the stream waits for it
    assert replayer.held_ids == 0  # every stream ended: nothing is kept


def test_bogus_last_event_ids_never_decode_a_stream_per_request(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every stream's resume index is built once, when the server starts: a flood of
    reconnections with IDs no stream has (each used to decode the whole stream on the event
    loop, stalling every client) runs the decoder not once, and a reader between them gets its
    stream whole and in order."""
    asgi = app(_cassette())
    runs: list[int] = []
    real = sse.Decoder

    class Counted(real):  # type: ignore[misc, valid-type]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            runs.append(1)
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(serve_resume, "Decoder", Counted)
    sse_get = {"accept": "text/event-stream"}
    with running(asgi) as url:
        for k in range(40):
            bogus = requests.get(
                url + "/v1/chat/completions",
                timeout=TIMEOUT,
                headers={**sse_get, "last-event-id": f"bogus-{k}" * 50},
            )
            assert bogus.status_code == 200 and bogus.content == b"".join(EVENTS)  # unknown: from the start
            if k % 10 == 0:
                resumed = requests.get(
                    url + "/v1/chat/completions", headers={**sse_get, "last-event-id": "3"}, timeout=TIMEOUT
                )
                assert (
                    resumed.content == b"".join(EVENTS[3:])
                    and resumed.headers["x-ssemock-resumed-after"] == "3"
                )
    assert runs == []


def _moves_on(body: bytes, last_event_id: str) -> bool:
    """The reference: does the rest of a stream change the client's last event ID string?"""
    decoder = sse.Decoder(last_event_id=last_event_id)
    return any(e.id != last_event_id for e in decoder.feed(body)) or decoder.last_event_id != last_event_id


_BLOCK = st.sampled_from(
    [
        b"id: a\n",
        b"id: b\n",
        b"id:\n",
        b"id: a\x00\n",
        b"data: x\n",
        b"data\n",
        b": c\n",
        b"event: e\n",
        b"\n",
        b"\r\n",
        b"id: b\r\n",
        b"retry: 5\n",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_BLOCK, max_size=30))
def test_the_resume_index_says_what_decoding_per_request_said(lines: list[bytes]) -> None:
    body = b"".join(lines)
    index = resume_index(body)
    for ident in ("a", "b", "a\x00", "", "c"):
        offset = resume_offset(body, ident)
        found = index.get(ident)
        assert (found.offset if found is not None else None) == offset
        if found is not None:
            assert found.moves_on == _moves_on(body[found.offset :], ident)


def test_connections_past_the_cap_are_closed_at_once_and_those_within_it_are_served() -> None:
    with running(app(_cassette()), max_connections=4, header_timeout=60.0) as url:
        held = [half_head(_port(url), "/v1/chat/completions", TIMEOUT) for _ in range(4)]
        try:
            flood = [half_head(_port(url), "/v1/chat/completions", TIMEOUT) for _ in range(40)]
            assert all(closed_by_server(s) for s in flood)  # past the cap: closed, the fds given back
            for s in flood:
                s.close()
            for s in held:  # within the cap: still open, and answered once the headers finish
                s.sendall(b"Content-Length: 0\r\n\r\n")
                assert s.recv(12) == b"HTTP/1.1 200"
        finally:
            for s in held:
                s.close()
        assert requests.post(url + "/v1/chat/completions", timeout=TIMEOUT).content == b"".join(EVENTS)


def test_a_connection_whose_headers_never_finish_is_closed() -> None:
    """Each request has header_timeout seconds for its headers: 1,100 connections that never
    finish theirs exhausted the file limit. A well-behaved client on a kept-alive connection is
    served request after request."""
    with running(app(_cassette()), header_timeout=0.3) as url:
        slow = [half_head(_port(url), "/v1/chat/completions", TIMEOUT) for _ in range(20)]
        assert all(closed_by_server(s) for s in slow)
        for s in slow:
            s.close()
        with requests.Session() as session:
            for _ in range(3):
                assert session.post(url + "/v1/chat/completions", timeout=TIMEOUT).content == b"".join(EVENTS)


def test_header_timeout_and_max_connections_are_checked() -> None:
    for bad in ({"header_timeout": 0}, {"header_timeout": -1.0}, {"max_connections": 0}):
        with pytest.raises(ValueError, match="header_timeout|max_connections"):
            with running(app(_cassette()), **bad):
                pass


def test_a_client_that_leaves_mid_request_body_is_one_log_line(capfd: pytest.CaptureFixture[str]) -> None:
    lines: list[str] = []
    asgi = app(_cassette(), log=lines.append)
    with running(asgi) as url:
        for _ in range(3):
            sock = half_head(_port(url), "/v1/chat/completions", TIMEOUT)
            sock.sendall(b'Content-Length: 1000\r\n\r\n{"model":')
            sock.close()
        assert requests.post(url + "/v1/chat/completions", timeout=TIMEOUT).ok  # still serving
    # (the server is stopped here: every connection was seen to its end)
    left = [line for line in lines if "left while sending its request body" in line]
    assert len(left) == 3 and len(lines) == 4, lines
    captured = capfd.readouterr()
    assert "Traceback" not in captured.out + captured.err and "ClientDisconnect" not in captured.err


def test_the_exchanges_kept_are_the_latest(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(serve_replayer, "MAX_EXCHANGES", 5)
    asgi = app(_cassette())
    with running(asgi) as url:
        for k in range(12):
            requests.get(f"{url}/nope/{k}", timeout=TIMEOUT)
    assert [x.path for x in asgi.state.ssemock.exchanges] == [f"/nope/{k}" for k in range(7, 12)]


def test_cli_serve_checks_its_limits(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "c.json"
    _cassette().save(path)
    assert main(["serve", str(path), "--header-timeout", "0"]) == 1
    assert main(["serve", str(path), "--max-connections", "0"]) == 1
    err = capsys.readouterr().err
    assert err.count("--header-timeout must be > 0 seconds and --max-connections >= 1") == 2


def test_a_held_stream_is_not_decoded_again_for_each_reconnection(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the legacy MCP GET stream waits for requests is worked out once per body served, not
    for each of a flood of GETs (with or without a bogus Last-Event-ID)."""
    import ssemock.protocols

    monkeypatch.setattr(ssemock.plan.push_replay, "HOLD_LIMIT", 0.05)
    calls: list[int] = []
    real = ssemock.protocols.holds

    def counted(body: bytes) -> Any:
        calls.append(len(body))
        return real(body)

    monkeypatch.setattr(ssemock.protocols, "holds", counted)
    with running(app(ssemock.cassettes.load("mcp/sse_session"))) as url:
        for k in range(20):
            with requests.get(
                f"{url}/sse", headers={"last-event-id": f"bogus-{k}"}, stream=True, timeout=TIMEOUT
            ) as stream:
                reads = stream.iter_content(chunk_size=None)
                assert next(reads).startswith(b"event: endpoint")
    assert len(calls) == 1


def test_a_websocket_session_outlives_the_header_timeout() -> None:
    """The header timeout is for heads: a replayed session whose client is idle past it (its
    handshake came whole) is served to its end."""
    cassette = (
        Path(ssemock.__file__).parent / "cassettes" / "realtime" / "openai_realtime_text_tool_call.json"
    )
    recorded = ssemock.Cassette.load(cassette).interactions[0]
    assert recorded.websocket is not None
    target = recorded.request.url.split("/", 3)[3]
    got = []
    with running(app(cassette), header_timeout=0.2) as url:
        with connect(url.replace("http://", "ws://") + "/" + target) as conn:
            for k, m in enumerate(recorded.websocket.messages):
                if m.direction == "send":
                    if k == 1:
                        time.sleep(0.4)  # (twice the header timeout, the session idle)
                    conn.send(m.data)
                else:
                    got.append(conn.recv(timeout=TIMEOUT))
    assert got == [m.data for m in recorded.websocket.received()]


def _port(url: str) -> int:
    return int(url.rsplit(":", 1)[1])
