"""``ssemock serve``: cassettes replayed over a real loopback HTTP server to clients that are not
httpx -- aiohttp, requests, curl and a headless Chromium's EventSource.

Every network call has a timeout; the servers listen on 127.0.0.1 only.
"""

from __future__ import annotations

import asyncio
import html
import re
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import aiohttp
import needs
import pytest
import requests
from conftest import FakeClock
from needs import CHROMIUM
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import Mount, Route
from waiting import until

import ssemock
import ssemock.plan.push_replay
from ssemock import chunking, sse, transforms
from ssemock.commands.cli import main
from ssemock.commands.loopback import running
from ssemock.commands.serve import Replayer, app, resume_offset

URL = "https://api.example.com/v1/chat/completions"
PATH = "/v1/chat/completions"
REQUEST: dict[str, Any] = {"model": "m", "stream": True}
TEXTS = [f"ünïcödé 世界 🎉 {i}" for i in range(1, 6)]
# The first event sets a short reconnection time, so a browser reconnects quickly after a drop.
EVENTS = (
    [f"retry: 100\nid: 1\ndata: {TEXTS[0]}\n\n".encode()]
    + [f"id: {i}\ndata: {text}\n\n".encode() for i, text in enumerate(TEXTS[1:], start=2)]
    + [b"id: 6\ndata: [DONE]\n\n"]
)
BODY = b"".join(EVENTS)
TIMES = [0.1 * i for i in range(len(EVENTS))]  # recorded: one event every 100 ms
TIMEOUT = 10.0
CURL = shutil.which("curl") or "/usr/bin/curl"

PAGE = Path(__file__).parent / "browser" / "eventsource.html"


def make_cassette() -> ssemock.Cassette:
    cassette = ssemock.Cassette()
    cassette.add(
        "POST", URL, EVENTS, times=TIMES, request_json=REQUEST, headers={"cache-control": "no-cache"}
    )
    cassette.add(
        "GET",
        "https://api.example.com/v1/models?limit=2",
        [b'{"data": []}'],
        headers={"content-type": "application/json"},
    )
    return cassette


class Server:
    """``serve(**options)`` starts the replay app on loopback and returns its base URL."""

    def __init__(self, stack: ExitStack) -> None:
        self._stack = stack
        self.replayer: Replayer | None = None

    def __call__(self, **options: Any) -> str:
        asgi = app(make_cassette(), **options)
        self.replayer = asgi.state.ssemock
        return self._stack.enter_context(running(asgi))


@pytest.fixture
def serve() -> Iterator[Server]:
    with ExitStack() as stack:
        yield Server(stack)


def fixed7() -> list[bytes]:
    return chunking.fixed(7)(BODY)


def events_of(body: bytes) -> list[tuple[str, str]]:
    return [(e.id, e.data) for e in sse.decode([body])]


# -- aiohttp -------------------------------------------------------------------------------------


async def _aiohttp_read(url: str, **kwargs: Any) -> tuple[int, list[bytes], list[bytes]]:
    """Status, the reads the client saw, and the HTTP chunks they add up to."""
    timeout = aiohttp.ClientTimeout(total=TIMEOUT)
    async with aiohttp.ClientSession(timeout=timeout) as session:
        async with session.post(url + PATH, json=REQUEST, **kwargs) as resp:
            reads: list[bytes] = []
            http_chunks: list[bytes] = []
            current = b""
            async for data, end_of_http_chunk in resp.content.iter_chunks():
                reads.append(data)
                current += data
                if end_of_http_chunk and current:  # (the empty terminating chunk may come on its own)
                    http_chunks.append(current)
                    current = b""
            return resp.status, reads, http_chunks


def test_aiohttp_gets_the_exact_bytes_one_http_chunk_per_planned_chunk(serve: Server) -> None:
    url = serve(chunking="fixed:7")
    status, reads, http_chunks = asyncio.run(_aiohttp_read(url))
    assert status == 200
    assert b"".join(reads) == BODY
    assert len(reads) > 1
    assert http_chunks == fixed7()


def test_aiohttp_sees_a_disconnect_as_a_payload_error(serve: Server) -> None:
    url = serve(faults="disconnect:after_event=2")
    with pytest.raises(aiohttp.ClientPayloadError):
        asyncio.run(_aiohttp_read(url))


# -- requests ------------------------------------------------------------------------------------


def _requests_stream(url: str, **kwargs: Any) -> tuple[requests.Response, list[bytes]]:
    got: list[bytes] = []
    kwargs.setdefault("json", REQUEST)
    resp = requests.post(url + PATH, stream=True, timeout=(TIMEOUT, TIMEOUT), **kwargs)
    try:
        for chunk in resp.iter_content(chunk_size=None):
            got.append(chunk)
    finally:
        resp.close()
    return resp, got


def test_requests_iter_content_gets_the_exact_bytes_in_the_planned_chunks(serve: Server) -> None:
    url = serve(chunking="fixed:7")
    resp, got = _requests_stream(url)
    assert resp.status_code == 200
    assert resp.headers["content-type"] == "text/event-stream"
    assert resp.headers["cache-control"] == "no-cache"
    assert "content-length" not in resp.headers
    assert got == fixed7()
    assert events_of(b"".join(got)) == [(str(i), t) for i, t in enumerate([*TEXTS, "[DONE]"], 1)]


def _gaps(times: list[float], factor: float = 1.0) -> list[float]:
    return [factor * (b - a) for a, b in zip([0.0, *times], times)]


def test_recorded_timing_makes_real_gaps(serve: Server, fake_clock: FakeClock) -> None:
    url = serve(chunking="per_event", timing="recorded")
    _, got = _requests_stream(url)
    assert got == EVENTS
    # each event waited for its recorded time (one event every 100 ms), in order, before it was sent
    assert fake_clock.slept == pytest.approx([g for g in _gaps(TIMES) if g > 0])


def test_instant_timing_sends_everything_at_once(serve: Server, fake_clock: FakeClock) -> None:
    url = serve(chunking="per_event")
    _, got = _requests_stream(url)
    assert got == EVENTS
    assert fake_clock.slept == []


def test_scaled_timing(serve: Server, fake_clock: FakeClock) -> None:
    url = serve(chunking="per_event", timing="scaled:2")
    _, got = _requests_stream(url)
    assert got == EVENTS
    assert fake_clock.slept == pytest.approx([g for g in _gaps(TIMES, 2.0) if g > 0])  # twice as slow


def test_a_stall_really_stalls(serve: Server, fake_clock: FakeClock) -> None:
    url = serve(chunking="per_event", faults="stall:before_event=2,seconds=0.6")
    _, got = _requests_stream(url)
    assert b"".join(got) == BODY
    assert fake_clock.slept == pytest.approx([0.6])  # the stall, and nothing else (instant timing)


def test_requests_sees_a_disconnect_as_chunked_encoding_error(serve: Server) -> None:
    url = serve(faults="disconnect:after_event=2")
    got: list[bytes] = []
    with pytest.raises(requests.exceptions.ChunkedEncodingError):
        with requests.post(url + PATH, json=REQUEST, stream=True, timeout=(TIMEOUT, TIMEOUT)) as resp:
            for chunk in resp.iter_content(chunk_size=None):
                got.append(chunk)
    assert b"".join(got) == b"".join(EVENTS[:2])
    assert serve.replayer is not None and serve.replayer.exchanges[-1].dropped


def test_a_failure_recorded_mid_stream_drops_the_connection_at_the_same_byte(serve: Server) -> None:
    cassette = ssemock.Cassette()
    cassette.add(
        "GET",
        "https://api.example.com/broken",
        EVENTS[:2],
        complete=False,
        error={"type": "RemoteProtocolError", "message": "peer closed connection"},
    )
    with running(app(cassette)) as url:
        got: list[bytes] = []
        with pytest.raises(requests.exceptions.ChunkedEncodingError):
            with requests.get(url + "/broken", stream=True, timeout=(TIMEOUT, TIMEOUT)) as resp:
                assert resp.headers["x-ssemock-interaction"] == "0"
                got.extend(resp.iter_content(chunk_size=None))
    assert got == EVENTS[:2]


def test_no_cors_header_unless_asked(serve: Server) -> None:
    url = serve()
    resp = requests.post(url + PATH, json=REQUEST, timeout=TIMEOUT)
    assert resp.status_code == 200 and "access-control-allow-origin" not in resp.headers
    assert "access-control-allow-origin" not in requests.get(url + "/nope", timeout=TIMEOUT).headers
    pre = requests.options(
        url + PATH,
        timeout=TIMEOUT,
        headers={"origin": "http://evil.example", "access-control-request-method": "POST"},
    )
    assert pre.status_code == 404 and "access-control-allow-origin" not in pre.headers


def test_cors_preflight_and_headers(serve: Server) -> None:
    url = serve(cors="*")
    pre = requests.options(
        url + PATH,
        timeout=TIMEOUT,
        headers={
            "origin": "http://localhost:3000",
            "access-control-request-method": "POST",
            "access-control-request-headers": "content-type",
        },
    )
    assert pre.status_code == 204
    assert pre.headers["access-control-allow-origin"] == "*"
    assert pre.headers["access-control-allow-methods"] == "POST"
    assert pre.headers["access-control-allow-headers"] == "content-type"
    resp = requests.post(url + PATH, json=REQUEST, timeout=TIMEOUT)
    assert resp.headers["access-control-allow-origin"] == "*"


def test_http_error_fault_then_success_in_sequence(serve: Server) -> None:
    url = serve(faults="sequence:http_error:status=429,retry_after=1|as_recorded")
    first = requests.post(url + PATH, json=REQUEST, timeout=TIMEOUT)
    assert first.status_code == 429
    assert first.headers["retry-after"] == "1"
    assert first.json()["error"]["code"] == "rate_limit_exceeded"
    second = requests.post(url + PATH, json=REQUEST, timeout=TIMEOUT)
    assert second.status_code == 200
    assert second.content == BODY


def test_transform_applies(serve: Server) -> None:
    url = serve(transform="crlf")
    resp = requests.post(url + PATH, json=REQUEST, timeout=TIMEOUT)
    assert resp.content == transforms.apply([transforms.crlf], BODY, [len(BODY)])[0]
    assert b"\r\n" in resp.content and events_of(resp.content) == events_of(BODY)


# -- matching ------------------------------------------------------------------------------------


def test_unmatched_request_gets_404_listing_the_recorded_requests(serve: Server) -> None:
    url = serve()
    resp = requests.post(url + "/v1/nope", json=REQUEST, timeout=TIMEOUT)
    assert resp.status_code == 404
    doc = resp.json()
    assert "POST /v1/nope" in doc["error"]
    assert [(r["method"], r["path"]) for r in doc["recorded"]] == [
        ("POST", PATH),
        ("GET", "/v1/models?limit=2"),
    ]
    assert any(d.startswith("path:") for d in doc["recorded"][0]["differs"])


def test_the_json_body_must_match_when_recorded(serve: Server) -> None:
    url = serve()
    resp = requests.post(url + PATH, json={**REQUEST, "model": "other"}, timeout=TIMEOUT)
    assert resp.status_code == 404
    assert any("$.model" in d for d in resp.json()["recorded"][0]["differs"])
    same = requests.post(url + PATH, data=b'{"stream": true,  "model": "m"}', timeout=TIMEOUT)
    assert same.status_code == 200 and same.content == BODY  # compared as JSON


def test_query_is_matched(serve: Server) -> None:
    url = serve()
    assert requests.get(url + "/v1/models?limit=2", timeout=TIMEOUT).json() == {"data": []}
    assert requests.get(url + "/v1/models?limit=3", timeout=TIMEOUT).status_code == 404


def test_an_eventsource_get_matches_a_recorded_sse_stream_by_path(serve: Server) -> None:
    url = serve()
    plain = requests.get(url + PATH, timeout=TIMEOUT)
    assert plain.status_code == 404  # recorded as POST
    es = requests.get(url + PATH, headers={"accept": "text/event-stream"}, timeout=TIMEOUT)
    assert es.status_code == 200 and es.content == BODY


def test_last_event_id_resumes_after_that_event(serve: Server) -> None:
    url = serve()
    sse_get = {"accept": "text/event-stream"}
    resumed = requests.get(url + PATH, headers={**sse_get, "last-event-id": "2"}, timeout=TIMEOUT)
    assert resumed.status_code == 200
    assert resumed.content == b"".join(EVENTS[2:])
    assert resumed.headers["x-ssemock-resumed-after"] == "2"
    done = requests.get(url + PATH, headers={**sse_get, "last-event-id": "6"}, timeout=TIMEOUT)
    assert done.status_code == 204 and done.content == b""  # nothing left: an EventSource stops
    unknown = requests.get(url + PATH, headers={**sse_get, "last-event-id": "nope"}, timeout=TIMEOUT)
    assert unknown.status_code == 200 and unknown.content == BODY


def test_resume_offset_follows_the_decoder() -> None:
    body = b": hi\n\nid: a\ndata: 1\n\ndata: 2\n\nid: b\n\ndata: 3\n\nid: x\x00y\ndata: 4\n\n"
    assert resume_offset(body, "a") == body.index(b"data: 2")
    assert resume_offset(body, "b") == body.index(b"data: 3")  # an id-only block sets it too
    assert resume_offset(body, "x\x00y") is None  # an id with NUL is ignored
    assert resume_offset(body, "") is None
    crlf = b"id: 1\r\ndata: x\r\n\r\nid: 2\r\ndata: y\r\n\r\n"
    assert resume_offset(crlf, "1") == crlf.index(b"id: 2")


async def _event_source(
    url: str, *, max_connections: int = 6
) -> tuple[list[tuple[str, str]], list[str | None], str]:
    """An EventSource's reconnection loop (the spec's, and aiohttp-sse-client's) over aiohttp: read
    the stream with the reference decoder; when it ends or drops, reconnect with ``Last-Event-ID``
    set to the last event ID string (if not empty); stop at a 204. At most ``max_connections``, so
    a server that keeps a client reconnecting fails the test instead of hanging it.

    Returns the (id, data) of the events received, the Last-Event-ID of each connection, and
    "stopped" (a 204 came) or "still reconnecting"."""
    decoder = sse.Decoder()
    events: list[sse.ServerSentEvent] = []
    sent: list[str | None] = []
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=TIMEOUT)) as session:
        for _ in range(max_connections):
            headers = {"accept": "text/event-stream"}
            if decoder.last_event_id:
                headers["last-event-id"] = decoder.last_event_id
            sent.append(headers.get("last-event-id"))
            async with session.get(url + PATH, headers=headers) as resp:
                if resp.status == 204:
                    return [(e.id, e.data) for e in events], sent, "stopped"
                assert resp.status == 200
                try:
                    async for data in resp.content.iter_any():
                        events += decoder.feed(data)
                except aiohttp.ClientPayloadError:  # a dropped connection: reconnect
                    pass
            events += decoder.close()
    return [(e.id, e.data) for e in events], sent, "still reconnecting"


def _sse_cassette(chunks: list[bytes]) -> ssemock.Cassette:
    cassette = ssemock.Cassette()
    cassette.add("POST", URL, chunks, request_json=REQUEST)
    return cassette


def test_a_reconnecting_client_stops_when_nothing_with_an_id_follows() -> None:
    """Events without an id after the last one (an OpenAI-style ``[DONE]``): the client ends with
    Last-Event-ID "2" whether it read them or not, so resuming after "2" answers 204; serving the
    rest again kept every EventSource (aiohttp-sse-client, a browser) reconnecting forever."""
    chunks = [b"id: 1\ndata: a\n\n", b"id: 2\ndata: b\n\n", b"data: [DONE]\n\n"]
    with running(app(_sse_cassette(chunks))) as url:
        events, sent, end = asyncio.run(_event_source(url))
    assert (events, sent, end) == ([("1", "a"), ("2", "b"), ("2", "[DONE]")], [None, "2"], "stopped")


def test_a_block_cut_off_by_the_end_never_reaches_the_next_connection() -> None:
    """A recorded stream that ends inside a block with ``id: 3``: the client's last event ID string
    stays "2" (the spec sets it at dispatch only); the server resumes from "2", finds no
    dispatched id after it, and answers 204."""
    chunks = [b"id: 1\ndata: a\n\n", b"id: 2\ndata: b\n\n", b"id: 3\ndata: c\n"]
    asgi = app(_sse_cassette(chunks))
    with running(asgi) as url:
        events, sent, end = asyncio.run(_event_source(url))
    assert (events, sent, end) == ([("1", "a"), ("2", "b")], [None, "2"], "stopped")
    assert [(x.status, x.resumed_at) for x in asgi.state.ssemock.exchanges] == [
        (200, None),
        (204, len(chunks[0]) + len(chunks[1])),
    ]


def test_a_dropped_stream_resumes_from_the_last_dispatched_id_and_gets_every_id_once() -> None:
    chunks = [f"id: {i}\ndata: {i}\n\n".encode() for i in range(1, 6)] + [b"data: [DONE]\n\n"]
    with running(app(_sse_cassette(chunks), faults="disconnect:after_event=2")) as url:
        events, sent, end = asyncio.run(_event_source(url))
    assert end == "stopped" and sent == [None, "2", "4", "5"]
    assert [e for e in events if e[1] != "[DONE]"] == [(str(i), str(i)) for i in range(1, 6)]


def test_resume_offset_uses_the_last_event_id_string() -> None:
    body = b"id: 1\ndata: a\n\ndata: b\n\nid: 2\ndata: c"  # the block with id 2 is cut off
    assert resume_offset(body, "1") == body.index(b"data: b")
    assert resume_offset(body, "2") is None  # never dispatched: no client can hold it


def test_bad_options_raise_value_error() -> None:
    options: dict[str, Any]
    for options in ({"chunking": "nope"}, {"timing": "later"}, {"faults": "explode"}, {"transform": "rot13"}):
        with pytest.raises(ValueError):
            app(make_cassette(), **options)


# -- curl ------------------------------------------------------------------------------------


def _curl(*args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [CURL, "-sS", "-N", "--max-time", str(TIMEOUT), *args], capture_output=True, timeout=TIMEOUT + 5
    )


def _dechunk(raw: bytes) -> list[bytes]:
    """The chunks of a chunked transfer-encoded body (curl --raw), in order."""
    out: list[bytes] = []
    pos = 0
    while True:
        eol = raw.index(b"\r\n", pos)
        size = int(raw[pos:eol], 16)
        if size == 0:
            return out
        out.append(raw[eol + 2 : eol + 2 + size])
        pos = eol + 2 + size + 2


def test_curl_gets_the_exact_bytes_and_the_raw_chunks(serve: Server) -> None:
    url = serve(chunking="fixed:7")
    data = ["-H", "content-type: application/json", "--data", '{"model": "m", "stream": true}']
    proc = _curl(*data, url + PATH)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == BODY
    raw = _curl("--raw", *data, url + PATH)
    assert raw.returncode == 0, raw.stderr
    assert _dechunk(raw.stdout) == fixed7()


def test_curl_sees_the_dropped_connection(serve: Server) -> None:
    url = serve(faults="disconnect:after_event=2")
    proc = _curl("-H", "accept: text/event-stream", url + PATH)
    assert proc.returncode == 18, proc.stderr  # CURLE_PARTIAL_FILE: transfer closed mid-body
    assert proc.stdout == b"".join(EVENTS[:2])


# -- the command line ----------------------------------------------------------------------------


def test_cli_serve_prints_the_url_and_routes_and_serves(tmp_path: Path) -> None:
    path = tmp_path / "stream.json"
    make_cassette().save(path)
    script = Path(sys.executable).parent / "ssemock"
    cmd = [str(script)] if script.exists() else [sys.executable, "-m", "ssemock"]
    proc = subprocess.Popen(
        [*cmd, "serve", str(path), "--chunking", "fixed:7", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
    )
    lines: list[str] = []
    ready = threading.Event()

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            if "Ctrl-C" in line:
                ready.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        assert ready.wait(TIMEOUT), f"no banner; stdout={lines!r}"
        match = re.search(r"serving on (http://127\.0\.0\.1:\d+)", lines[0])
        assert match, lines
        out = "".join(lines)
        assert f"POST {PATH} -> 200 text/event-stream, 6 events" in out
        assert "GET /v1/models?limit=2 -> 200 application/json" in out
        assert "chunking=fixed:7" in out
        resp = requests.post(match.group(1) + PATH, json=REQUEST, stream=True, timeout=TIMEOUT)
        assert list(resp.iter_content(chunk_size=None)) == fixed7()
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            code = proc.wait(TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise
    assert code == 0


def test_cli_serve_bad_options_exit_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "stream.json"
    make_cassette().save(path)
    assert main(["serve", str(path), "--chunking", "nope"]) == 1
    assert "unknown chunking 'nope'" in capsys.readouterr().err
    assert main(["serve", str(tmp_path / "missing.json")]) == 1
    assert "missing.json" in capsys.readouterr().err


# -- a browser's EventSource -----------------------------------------------------------------------


def _browser_page(
    chunking_name: str = "as_recorded", faults: str | None = None
) -> tuple[Starlette, Replayer]:
    """The replay app, plus (test only) the page at /page.html, on the same origin."""
    replay_app = app(make_cassette(), chunking=chunking_name, faults=faults)
    page = PAGE.read_text(encoding="utf-8")

    async def serve_page(request: Request) -> HTMLResponse:
        return HTMLResponse(page)

    outer = Starlette(routes=[Route("/page.html", serve_page), Mount("/", app=replay_app)])
    return outer, replay_app.state.ssemock


def _dump_dom(url: str, profile: Path) -> str:
    needs.chromium("the EventSource test")
    cmd = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-extensions",
        f"--user-data-dir={profile}",
        "--virtual-time-budget=10000",
        "--dump-dom",
        url,
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, encoding="utf-8", timeout=45)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def _page_state(dom: str) -> tuple[str, int, list[tuple[str, str]]]:
    status = re.search(r'<p id="status">([^<]*)</p>', dom)
    opens = re.search(r'<p id="opens">(\d+)</p>', dom)
    assert status and opens, dom
    events = [
        (html.unescape(i), html.unescape(t))
        for i, t in re.findall(r'<li data-id="([^"]*)">([^<]*)</li>', dom)
    ]
    return status.group(1), int(opens.group(1)), events


WANT = [(str(i), t) for i, t in enumerate(TEXTS, 1)]


def test_browser_eventsource_receives_every_event(tmp_path: Path) -> None:
    outer, replayer = _browser_page("mid_utf8")
    with running(outer) as url:
        dom = _dump_dom(f"{url}/page.html?src={PATH}", tmp_path / "profile")
    status, opens, events = _page_state(dom)
    assert (status, opens) == ("done", 1), dom
    assert events == WANT
    served = [x for x in replayer.exchanges if x.path == PATH]
    assert len(served) == 1 and served[0].method == "GET" and served[0].status == 200


def test_browser_reconnects_with_last_event_id_and_gets_every_event_once(tmp_path: Path) -> None:
    outer, replayer = _browser_page("mid_utf8", faults="disconnect:after_event=2")
    with running(outer) as url:
        dom = _dump_dom(f"{url}/page.html?src={PATH}", tmp_path / "profile")
    status, opens, events = _page_state(dom)
    assert status == "done", dom
    assert events == WANT  # all of them, exactly once, in order
    served = [x for x in replayer.exchanges if x.path == PATH]
    assert [x.last_event_id for x in served] == [None, "2", "4"]
    assert all(x.dropped for x in served)
    assert opens == len(served) == 3


# -- safety: body limit, masked 404, access log, clients that leave -------------------------------


def test_a_request_body_past_max_body_gets_413(serve: Server) -> None:
    url = serve(max_body=1000)
    resp = requests.post(url + PATH, data=b"x" * 5000, timeout=TIMEOUT)
    assert resp.status_code == 413 and "max-body" in resp.json()["error"]
    assert requests.post(url + PATH, json=REQUEST, timeout=TIMEOUT).status_code == 200
    chunked = requests.post(url + PATH, data=iter([b"y" * 800, b"y" * 800]), timeout=TIMEOUT)  # no length
    assert chunked.status_code == 413
    with pytest.raises(ValueError, match="max_body"):
        app(make_cassette(), max_body=-1)


def test_the_404_masks_secrets_and_lists_no_file_paths(tmp_path: Path) -> None:
    key = "sk-proj-test" + "Q1w2E3r4T5y6U7i8O9p0" * 3
    path = tmp_path / "private-folder" / "c.json"
    cassette = make_cassette()
    cassette.add("GET", f"https://api.example.com/v1/files/{key}?token=abc", [b"{}"])
    cassette.save(path, scan_secrets=False)  # a fake key on purpose: what serve must mask
    lines: list[str] = []
    with running(app([path], log=lines.append)) as url:
        resp = requests.get(url + f"/v1/files/{key}x?client_secret=Zx9Yw8Vu7Ts6Rq5Po4", timeout=TIMEOUT)
    assert resp.status_code == 404
    text = resp.text + "\n".join(lines)
    assert key not in text and "Zx9Yw8Vu7Ts6Rq5Po4" not in text
    assert "private-folder" not in resp.text and "c.json" not in resp.text
    assert "sk-***" in resp.text
    assert any(line.startswith("GET /v1/files/sk-***") and "404" in line for line in lines), lines


def test_an_access_log_line_per_request(serve: Server) -> None:
    lines: list[str] = []
    url = serve(log=lines.append)
    requests.post(url + PATH, json=REQUEST, timeout=TIMEOUT)
    requests.get(url + "/v1/models?limit=2", timeout=TIMEOUT)
    requests.get(url + "/nope", timeout=TIMEOUT)
    assert lines[:3] == [
        f"POST {PATH} -> 200 #0, 6 chunk(s)",
        "GET /v1/models?limit=2 -> 200 #1, 1 chunk(s)",
        "GET /nope -> 404 no recorded interaction matches (matching on method, path, query, body)",
    ]
    assert lines[3:] == [  # the diff the 404's body carries, in the log too
        f"  #0 POST {PATH}",
        "      method: POST recorded, GET sent",
        f"      path: '{PATH}' recorded, '/nope' sent",
        "      body: 27 bytes recorded, 0 sent",
        "  #1 GET /v1/models?limit=2",
        "      path: '/v1/models' recorded, '/nope' sent",
        "      query: [('limit', '2')] recorded, [] sent",
    ]
    lines.clear()
    requests.post(url + PATH, json={**REQUEST, "model": "other", "stream": False}, timeout=TIMEOUT)
    assert "      body: $.model: 'm' recorded, 'other' sent" in lines
    assert "      body: $.stream: True recorded, False sent" in lines  # every body difference


def test_a_client_that_leaves_mid_stream_stops_the_stream_quietly(capfd: pytest.CaptureFixture[str]) -> None:
    """Under bytewise a client that leaves used to cause ~1,100 'socket.send() raised exception.' lines."""
    cassette = ssemock.Cassette()
    cassette.add(
        "GET", "https://h/long", [b"".join(b"data: %d %s\n\n" % (i, b"x" * 200) for i in range(3000))]
    )
    lines: list[str] = []
    asgi = app(cassette, chunking="bytewise", log=lines.append)
    with running(asgi) as url:
        with requests.get(url + "/long", stream=True, timeout=TIMEOUT) as resp:
            next(resp.iter_content(chunk_size=100))
        until(lambda: asgi.state.ssemock.exchanges[-1].left, "the server's notice that the client left")
    exchange = asgi.state.ssemock.exchanges[-1]
    assert exchange.left and not exchange.dropped
    assert len(lines) == 2 and "the client left after" in lines[1], lines
    captured = capfd.readouterr()
    assert "socket.send() raised exception" not in captured.out + captured.err


def test_cli_serve_match_on_cors_and_quiet(tmp_path: Path) -> None:
    path = tmp_path / "stream.json"
    make_cassette().save(path)
    script = Path(sys.executable).parent / "ssemock"
    cmd = [str(script)] if script.exists() else [sys.executable, "-m", "ssemock"]
    for extra, quiet in (
        (["--match-on", "method,path", "--cors", "http://localhost:3000"], False),
        (["--quiet"], True),
    ):
        proc = subprocess.Popen(
            [*cmd, "serve", str(path), "--port", "0", *extra],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
        )
        lines: list[str] = []
        ready = threading.Event()

        def read() -> None:
            assert proc.stdout is not None
            for line in proc.stdout:
                lines.append(line)
                if "Ctrl-C" in line:
                    ready.set()

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        try:
            assert ready.wait(TIMEOUT), lines
            match = re.search(r"serving on (http://127\.0\.0\.1:\d+)", lines[0])
            assert match, lines
            resp = requests.post(match.group(1) + PATH, json={"other": "body"}, timeout=TIMEOUT)
            if quiet:
                assert resp.status_code == 404 and "access-control-allow-origin" not in resp.headers
            else:  # the body is not matched on, and the origin asked for is allowed
                assert resp.status_code == 200 and resp.content == BODY
                assert resp.headers["access-control-allow-origin"] == "http://localhost:3000"
        finally:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(TIMEOUT)
            except subprocess.TimeoutExpired:
                proc.kill()
                raise
        reader.join(TIMEOUT)  # everything it logged, up to its exit
        logged = [line for line in lines if line.startswith("POST ")]
        assert logged == ([] if quiet else [f"POST {PATH} -> 200 #0, 6 chunk(s)\n"]), lines


def test_the_mcp_sdks_sse_client_replays_a_legacy_session_over_the_server() -> None:
    """The legacy MCP transport over a real socket: the GET stream's answers wait for the POSTs
    that cause them (the SDK's sse_client, httpx2 on loopback), under re-chunking and CRLF."""
    from mcp import Client
    from mcp.client.sse import sse_client

    async def session(url: str) -> tuple[Any, list[str | None]]:
        progress: list[str | None] = []

        async def on_progress(done: float, total: float | None, message: str | None) -> None:
            progress.append(message)

        async with Client(sse_client(f"{url}/sse", sse_read_timeout=TIMEOUT), mode="legacy") as client:
            await client.list_tools()
            result = await client.call_tool(
                "forecast", {"city": "Tokyo", "days": 3}, progress_callback=on_progress
            )
        return result, progress

    cassette = ssemock.cassettes.load("mcp/sse_session")
    for strategy in ("bytewise", "coalesced"):
        served = app(cassette, chunking=strategy, transform="crlf")
        with running(served) as base:
            result, progress = asyncio.run(asyncio.wait_for(session(base), TIMEOUT))
        assert result.content[0].text == "Tokyo: sunny for 3 days — 晴れ"
        assert progress == [f"Tokyo: day {d} 🌤" for d in (1, 2, 3)]
        replayer: Replayer = served.state.ssemock
        assert [x.method for x in replayer.exchanges][:2] == ["GET", "POST"]
        (stream,) = [x for x in replayer.exchanges if x.method == "GET"]
        assert stream.chunks >= 6 if strategy == "coalesced" else stream.chunks > 1000  # cut at every wait


def test_a_held_stream_whose_request_never_comes_drops_and_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ssemock.plan.push_replay, "HOLD_LIMIT", 0.2)
    lines: list[str] = []
    served = app(ssemock.cassettes.load("mcp/sse_session"), log=lines.append)
    with running(served) as base, requests.get(f"{base}/sse", stream=True, timeout=TIMEOUT) as response:
        got = b""
        with pytest.raises(requests.exceptions.ChunkedEncodingError):
            for chunk in response.iter_content(chunk_size=None):
                got += chunk
    assert (
        got == b"event: endpoint\r\ndata: /messages/?session_id=REDACTED\r\n\r\n"
    )  # then nothing: it waits for 1
    assert any(
        "answers the request with id 1 next" in line and "none was made within 0.2 s" in line
        for line in lines
    ), lines
    assert served.state.ssemock.exchanges[0].dropped


def test_the_banner_counts_events_as_show_and_validate_do() -> None:
    """A comment block (``: ping``) is no event: serve, show and validate give one count."""
    from ssemock import commands as inspect
    from ssemock.commands.serve import routes

    cassette = ssemock.Cassette()
    cassette.add(
        "GET",
        "https://api.example.com/events",
        [b": ping\n\n", *EVENTS],
        headers={"content-type": "text/event-stream"},
    )
    asgi = app(cassette)
    (line,) = routes(asgi.state.ssemock)
    shown = inspect.summarize(cassette.interactions[0])
    report = inspect.validate_cassette(cassette, "c.json")
    assert f", {len(EVENTS)} events" in line and report.events == len(EVENTS)
    assert shown["events"] == len(EVENTS)
