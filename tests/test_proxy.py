"""``ssemock proxy``: a recording reverse proxy on loopback, in front of the loopback stand-in
upstream of conftest (``server``): chunks relayed as they arrive and recorded with their times,
the record modes, the unmatched answer, the secret scan, clients that leave, concurrent clients,
TLS, and the command line interrupted by SIGTERM and SIGINT.

Every network call has a timeout; everything listens on 127.0.0.1 only."""

from __future__ import annotations

import datetime
import gzip
import json
import logging
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from conftest import ACK, GATED
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from waiting import accepts, closed_by_server, half_head, until

import ssemock
from ssemock import sse
from ssemock.commands.loopback import running
from ssemock.commands.proxy import app

TIMEOUT = 60.0


@contextmanager
def proxy(upstream: str, tmp_path: Path, **options: Any) -> Iterator[tuple[str, Any, list[str]]]:
    """The proxy on loopback: its URL, its Proxy state and its log lines."""
    lines: list[str] = []
    asgi = app(upstream, cassette_dir=tmp_path, log=lines.append, **options)
    with running(asgi) as url:
        yield url, asgi.state.ssemock, lines


def saved(proxy_state: Any, count: int = 1, name: str = "proxy") -> ssemock.Cassette:
    """The cassette once ``count`` recordings were saved into it (a save ends after the client's
    last byte: wait for it, bounded)."""
    book = until(
        lambda: (b := proxy_state.books.get(name)) is not None and b.saved >= count and b,
        f"{count} save(s) into {name}",
    )
    return ssemock.Cassette.load(book.path)


# -- relayed as it arrives, recorded with its times ----------------------------------------------


def test_each_chunk_reaches_the_client_before_the_upstream_sends_the_next(
    server: str, tmp_path: Path
) -> None:
    with proxy(server, tmp_path) as (url, state, _), httpx.Client(timeout=TIMEOUT) as client:
        reads = []
        with client.stream("POST", url + "/gated", json={"stream": True}) as resp:
            for data in resp.iter_raw():
                reads.append(data)
                ACK.release()  # the stand-in sends chunk k+1 only now
        cassette = saved(state)
    assert reads == GATED  # no "data: late": nothing was held back
    response = cassette.interactions[0].response
    assert response.chunks == GATED and response.complete
    assert response.times == sorted(response.times) and len(response.times) == len(GATED)
    assert cassette.interactions[0].request.url == server + "/gated"


def test_recorded_then_replayed_under_a_chunking_with_the_upstream_gone(server: str, tmp_path: Path) -> None:
    with proxy(server, tmp_path) as (url, state, _):
        first = httpx.post(url + "/v1/chat/completions", json={"stream": True}, timeout=TIMEOUT)
        saved(state)
    # the upstream is a closed port now: only the cassette can answer
    with proxy("http://127.0.0.1:9", tmp_path, chunking="fixed:7") as (url, state, lines):
        with httpx.stream(
            "POST", url + "/v1/chat/completions", json={"stream": True}, timeout=TIMEOUT
        ) as resp:
            chunks = list(resp.iter_raw())
    assert b"".join(chunks) == first.content
    assert all(len(c) == 7 for c in chunks[:-1])
    assert resp.headers["x-ssemock-interaction"] == "0"
    assert sse.decode([first.content])[-1].data == "[DONE]"


def test_compressed_upstream_forwarded_as_asked_and_recorded_decoded(server: str, tmp_path: Path) -> None:
    with proxy(server, tmp_path) as (url, state, _), httpx.Client(timeout=TIMEOUT) as client:
        with client.stream("GET", url + "/gzip", headers={"accept-encoding": "gzip"}) as resp:
            raw = b"".join(resp.iter_raw())
        cassette = saved(state)
    assert resp.headers["content-encoding"] == "gzip"
    assert gzip.decompress(raw) == b"data: one\n\ndata: two\n\n"  # the client decodes it itself
    response = cassette.interactions[0].response
    assert response.body == b"data: one\n\ndata: two\n\n"
    assert response.header("content-encoding") is None


def test_hop_by_hop_and_ssemock_headers_are_not_forwarded(server: str, tmp_path: Path) -> None:
    headers = {
        "x-ssemock-cassette": "echoes",
        "x-ssemock-other": "1",
        "proxy-authorization": "Basic dGVzdDp0ZXN0",
        "te": "trailers",
        "x-kept": "yes",
    }
    with proxy(server, tmp_path) as (url, state, _):
        resp = httpx.get(url + "/echo?q=1", headers=headers, timeout=TIMEOUT)
        cassette = saved(state, name="echoes")
    seen = resp.json()["headers"]
    assert seen["x-kept"] == "yes" and resp.json()["query"] == "q=1"
    assert not {"x-ssemock-cassette", "x-ssemock-other", "proxy-authorization", "te"} & set(seen)
    assert seen["host"] == server.removeprefix("http://")
    assert cassette.path == tmp_path / "echoes.json" and not (tmp_path / "proxy.json").exists()
    recorded = dict(cassette.interactions[0].request.headers)
    assert "x-ssemock-cassette" not in recorded and recorded["x-kept"] == "yes"


def test_a_path_prefix_names_the_cassette(server: str, tmp_path: Path) -> None:
    with proxy(server, tmp_path) as (url, state, _):
        resp = httpx.get(url + "/_ssemock/test_one/echo", timeout=TIMEOUT)
        cassette = saved(state, name="test_one")
        bad = httpx.get(url + "/_ssemock/..%2Fescape/echo", timeout=TIMEOUT)
    assert resp.status_code == 200 and cassette.interactions[0].request.url == server + "/echo"
    assert bad.status_code == 400 and "not allowed" in bad.json()["error"]


def test_a_client_that_leaves_cancels_the_upstream_and_the_recording_is_kept_incomplete(
    tmp_path: Path,
) -> None:
    cancelled = threading.Event()

    async def endless(request: Request) -> StreamingResponse:
        async def body() -> Any:
            try:
                i = 0
                while True:
                    yield b"data: %d\n\n" % i
                    i += 1
                    import asyncio

                    await asyncio.sleep(0.01)
            finally:
                cancelled.set()

        return StreamingResponse(body(), media_type="text/event-stream")

    upstream = Starlette(routes=[Route("/endless", endless)])
    with running(upstream) as up, proxy(up, tmp_path) as (url, state, lines):
        with httpx.stream("GET", url + "/endless", timeout=TIMEOUT) as resp:
            got = b""
            for data in resp.iter_raw():
                got += data
                if got.count(b"\n\n") >= 3:
                    break
        cassette = saved(state)
        assert cancelled.wait(TIMEOUT), "the upstream stream went on after the client left"
    response = cassette.interactions[0].response
    assert not response.complete
    assert response.body.startswith(b"data: 0\n\ndata: 1\n\ndata: 2\n\n")
    assert any("the client left: recorded as incomplete" in line for line in lines)


@pytest.mark.parametrize("terminated", [True, False])
def test_an_interruption_after_the_streams_end_event_saves_it_complete(
    tmp_path: Path, terminated: bool
) -> None:
    """Interrupted (what ``ssemock proxy`` does on SIGTERM) after the client got ``[DONE]`` but
    before the upstream's EOF: the stream is whole and goes into the cassette, complete; without
    its terminator it is kept as a partial, the cassette untouched."""
    release = threading.Event()
    events = [b'data: {"choices": [{"index": 0, "delta": {"content": "hi"}}]}\n\n']
    events += [b"data: [DONE]\n\n"] if terminated else []

    async def chat(request: Request) -> StreamingResponse:
        async def body() -> Any:
            for event in events:
                yield event
            while not release.is_set():  # EOF only once the test says so
                await anyio.sleep(0.01)

        return StreamingResponse(body(), media_type="text/event-stream")

    upstream = Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])])
    with running(upstream) as up, proxy(up, tmp_path) as (url, state, lines):
        try:
            with httpx.stream("POST", url + "/v1/chat/completions", json={"q": 1}, timeout=TIMEOUT) as resp:
                reads = resp.iter_raw()
                got = b""
                while got != b"".join(events):
                    got += next(reads)
                kept = state.keep_in_flight()
        finally:
            release.set()
    if terminated:
        assert kept == []
        response = ssemock.Cassette.load(tmp_path / "proxy.json").interactions[0].response
        assert response.complete and response.body == b"".join(events)
        assert not (tmp_path / "proxy.partial.json").exists()
        assert any("1 recording(s) whose end had arrived saved into" in line for line in lines), lines
    else:
        assert kept == [tmp_path / "proxy.partial.json"]
        assert not ssemock.Cassette.load(kept[0]).interactions[0].response.complete
        assert not (tmp_path / "proxy.json").exists()


def test_an_interruption_waits_for_the_save_under_way_and_its_log_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Interrupted while a recording that has ended is being saved (a slow disk): the interruption
    returns only once that save is on disk and logged, so a proxy stopped by SIGTERM right after
    a stream never exits between the two (the cassette written, no line saying so)."""
    from ssemock.commands.proxy.book import Book

    entered, release = threading.Event(), threading.Event()
    save = Book.save

    def slow_save(book: Book, new: Any) -> str | None:
        entered.set()
        assert release.wait(TIMEOUT)
        return save(book, new)

    monkeypatch.setattr(Book, "save", slow_save)
    with running(_one_event_upstream()) as up, proxy(up, tmp_path) as (url, state, lines):
        with ThreadPoolExecutor(2) as pool:
            got = pool.submit(
                lambda: httpx.post(url + "/v1/chat/completions", json={}, timeout=TIMEOUT).content
            )
            assert entered.wait(TIMEOUT), "the save never began"
            interrupted = pool.submit(lambda: (state.keep_in_flight(), list(lines)))  # the log as it returns
            assert not any("saved into" in line for line in lines)
            release.set()
            kept, logged = interrupted.result(TIMEOUT)
            assert got.result(TIMEOUT) == b"data: ok\n\n"
    assert kept == [] and any("saved into" in line and "complete" in line for line in logged), logged
    assert ssemock.Cassette.load(tmp_path / "proxy.json").interactions[0].response.complete


def _one_event_upstream() -> Starlette:
    async def chat(request: Request) -> Response:
        return Response(b"data: ok\n\n", media_type="text/event-stream")

    return Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])])


def test_a_client_that_leaves_after_the_end_event_is_recorded_complete(tmp_path: Path) -> None:
    """The openai SDK closes right after ``[DONE]``, before the upstream's EOF: nothing is
    missing, so the recording is complete (as the plugin records it)."""
    release = threading.Event()

    async def chat(request: Request) -> StreamingResponse:
        async def body() -> Any:
            yield b'data: {"choices": [{"index": 0, "delta": {"content": "hi"}}]}\n\n'
            yield b"data: [DONE]\n\n"
            while not release.is_set():
                await anyio.sleep(0.01)

        return StreamingResponse(body(), media_type="text/event-stream")

    upstream = Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])])
    with running(upstream) as up, proxy(up, tmp_path) as (url, state, lines):
        try:
            with httpx.stream("POST", url + "/v1/chat/completions", json={"q": 1}, timeout=TIMEOUT) as resp:
                got = b""
                for data in resp.iter_raw():
                    got += data
                    if got.endswith(b"[DONE]\n\n"):
                        break
            cassette = saved(state)
        finally:
            release.set()
    assert cassette.interactions[0].response.complete
    assert any(line.endswith("chunk(s), complete") for line in lines)


def test_concurrent_clients_on_one_cassette_lose_nothing(server: str, tmp_path: Path) -> None:
    with proxy(server, tmp_path) as (url, state, _):

        def call(i: int) -> None:
            httpx.get(f"{url}/echo?n={i}", timeout=TIMEOUT).raise_for_status()

        threads = [threading.Thread(target=call, args=(i,)) for i in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(TIMEOUT)
        cassette = saved(state, 6)
    urls = sorted(x.request.url for x in cassette.interactions)
    assert urls == sorted(f"{server}/echo?n={i}" for i in range(6))


# -- the record modes and the unmatched answer ---------------------------------------------------


class Counting:
    """A stand-in upstream that counts what it answered (an OpenAI-shaped stream)."""

    def __init__(self) -> None:
        self.calls = 0

        async def chat(request: Request) -> Response:
            self.calls += 1
            body = await request.body()
            return StreamingResponse(
                iter([b'data: {"n": %d}\n\n' % self.calls, b"data: [DONE]\n\n"]),
                media_type="text/event-stream",
                headers={"x-echo": str(len(body))},
            )

        self.app = Starlette(routes=[Route("/v1/chat", chat, methods=["POST"])])


@pytest.mark.parametrize(
    ("mode", "upstream_calls", "interactions"),
    [("none", 0, 1), ("once", 0, 1), ("new_episodes", 1, 2), ("all", 2, 2), ("rewrite", 2, 2)],
)
def test_record_modes(tmp_path: Path, mode: str, upstream_calls: int, interactions: int) -> None:
    """A cassette holds {"q": 1}; the client asks {"q": 1} then {"q": 2}."""
    stand_in = Counting()
    with running(stand_in.app) as up:
        with proxy(up, tmp_path, record_mode="once") as (url, state, _):
            httpx.post(url + "/v1/chat", json={"q": 1}, timeout=TIMEOUT)
            saved(state)
        stand_in.calls = 0
        with proxy(up, tmp_path, record_mode=mode) as (url, state, lines):
            first = httpx.post(url + "/v1/chat", json={"q": 1}, timeout=TIMEOUT)
            second = httpx.post(url + "/v1/chat", json={"q": 2}, timeout=TIMEOUT)
            if upstream_calls:
                saved(state, upstream_calls)
    assert stand_in.calls == upstream_calls
    cassette = ssemock.Cassette.load(tmp_path / "proxy.json")
    assert len(cassette.interactions) == interactions
    assert first.status_code == 200
    if mode in ("none", "once"):
        assert second.status_code == 404
        answer = second.json()
        assert "no recorded interaction matches POST /v1/chat" in answer["error"]
        assert answer["recorded"][0]["differs"] and "body" in answer["recorded"][0]["differs"][0]
        assert any("-> 404 proxy" in line and "closest: #0 POST /v1/chat: body" in line for line in lines)
    else:
        assert second.status_code == 200 and b"[DONE]" in second.content
    if mode == "all":  # re-recorded: the new recording replaced the one it matches
        assert [x.response.body.count(b'"n": 1') for x in cassette.interactions] == [1, 0]


def test_once_records_repeats_in_the_run_that_creates_the_cassette(tmp_path: Path) -> None:
    """``once`` as vcrpy's: the run that creates the cassette records every request, a repeat
    too (the docs' table says so); the next run replays them in order, the upstream unasked."""
    stand_in = Counting()
    with running(stand_in.app) as up:
        with proxy(up, tmp_path, record_mode="once") as (url, state, _):
            first = [httpx.post(url + "/v1/chat", json={"q": 1}, timeout=TIMEOUT) for _ in range(2)]
            saved(state, 2)
        assert stand_in.calls == 2
        with proxy(up, tmp_path, record_mode="once") as (url, state, _):
            again = [httpx.post(url + "/v1/chat", json={"q": 1}, timeout=TIMEOUT) for _ in range(2)]
    assert stand_in.calls == 2
    assert [r.content for r in first] == [
        b'data: {"n": 1}\n\ndata: [DONE]\n\n',
        b'data: {"n": 2}\n\ndata: [DONE]\n\n',
    ]
    assert [r.content for r in again] == [r.content for r in first]


def test_a_replayed_disconnect_fault_is_one_log_line_and_no_traceback(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """uvicorn logs an app's exception before it closes the connection, so the client's error
    comes after anything it would have logged."""
    stand_in = Counting()
    uvicorn_log = logging.getLogger("uvicorn.error")  # (uvicorn's loggers do not propagate)
    with running(stand_in.app) as up:
        with proxy(up, tmp_path) as (url, state, _):
            httpx.post(url + "/v1/chat", json={"q": 1}, timeout=TIMEOUT)
            saved(state)
        with proxy(up, tmp_path, faults="disconnect:after_event=1") as (url, state, lines):
            uvicorn_log.addHandler(caplog.handler)  # (after the start: uvicorn's config resets them)
            try:
                with pytest.raises(httpx.RemoteProtocolError):
                    httpx.post(url + "/v1/chat", json={"q": 1}, timeout=TIMEOUT)
            finally:
                uvicorn_log.removeHandler(caplog.handler)
    assert [line for line in lines if "disconnect" in line] == [
        "POST /v1/chat -> 200 #0, 1 chunk(s), faults disconnect:after_event=1"
    ]
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


def test_a_secret_in_a_recording_is_refused_and_kept_masked(tmp_path: Path) -> None:
    leak = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0" * 3

    async def chat(request: Request) -> JSONResponse:
        return JSONResponse({"echo": leak})

    with running(Starlette(routes=[Route("/v1/x", chat)])) as up:
        with proxy(up, tmp_path) as (url, state, lines):
            resp = httpx.get(url + "/v1/x", timeout=TIMEOUT)
            until(lambda: any("NOT saved" in line for line in lines), f"a refusal in {lines}")
    assert resp.json() == {"echo": leak}  # the client gets the live answer
    assert not (tmp_path / "proxy.json").exists()
    kept = (tmp_path / "proxy.refused.json").read_text()
    assert leak not in kept and "REDACTED" in kept
    assert leak not in "".join(lines)


# -- TLS -------------------------------------------------------------------------------------------


def _certificates(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A throwaway CA and a certificate for 127.0.0.1 signed by it: (ca.pem, cert.pem, key.pem)."""
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.UTC)
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "ssemock test CA")])
    ca = (
        x509.CertificateBuilder(ca_name, ca_name, ca_key.public_key(), 1, now, now + datetime.timedelta(1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    cert = (
        x509.CertificateBuilder(
            issuer_name=ca_name,
            subject_name=x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]),
            public_key=key.public_key(),
            serial_number=2,
            not_valid_before=now,
            not_valid_after=now + datetime.timedelta(1),
        )
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False
        )
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    paths = tmp_path / "ca.pem", tmp_path / "cert.pem", tmp_path / "key.pem"
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return paths


def test_the_proxy_closes_its_upstream_connections_when_it_stops(tmp_path: Path) -> None:
    """The upstream connection the proxy keeps for its next request is closed with the proxy, not
    left open until its process ends (an upstream stopping then waited on it: a TLS one 30 s)."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    open_now: set[object] = set()
    guard = threading.Lock()

    class Upstream(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive: the connection stays open between requests

        def setup(self) -> None:
            super().setup()
            with guard:
                open_now.add(self)

        def finish(self) -> None:
            with guard:
                open_now.discard(self)
            super().finish()

        def do_GET(self) -> None:
            body = b"data: hi\n\n"
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    upstream = ThreadingHTTPServer(("127.0.0.1", 0), Upstream)
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    try:
        with proxy(f"http://127.0.0.1:{upstream.server_address[1]}", tmp_path) as (url, state, _):
            assert httpx.get(url + "/v1/events", timeout=TIMEOUT).text == "data: hi\n\n"
            saved(state)
            assert open_now  # kept for the next request while the proxy runs
        until(lambda: not open_now, "the upstream connection closed by the proxy's stop")
    finally:
        upstream.shutdown()
        upstream.server_close()


def test_a_tls_upstream_verified_against_the_ca_bundle(server: str, tmp_path: Path) -> None:
    import uvicorn

    ca, cert, key = _certificates(tmp_path)

    async def hello(request: Request) -> JSONResponse:
        return JSONResponse({"scheme": request.url.scheme})

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    config = uvicorn.Config(
        Starlette(routes=[Route("/hello", hello)]),
        log_level="warning",
        lifespan="off",
        ssl_certfile=str(cert),
        ssl_keyfile=str(key),
    )
    tls = uvicorn.Server(config)
    thread = threading.Thread(target=tls.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        until(lambda: tls.started, "the TLS upstream's start")
        upstream = f"https://127.0.0.1:{sock.getsockname()[1]}"
        with proxy(upstream, tmp_path / "trusted", ca_bundle=ca) as (url, state, _):
            assert httpx.get(url + "/hello", timeout=TIMEOUT).json() == {"scheme": "https"}
            assert saved(state).interactions[0].request.url == upstream + "/hello"
        with proxy(upstream, tmp_path / "untrusted") as (url, state, lines):  # the system CAs only
            refused = httpx.get(url + "/hello", timeout=TIMEOUT)
        assert refused.status_code == 502 and "ConnectError" in refused.json()["error"]
    finally:
        tls.should_exit = True
        thread.join(TIMEOUT)
        sock.close()


# -- the command line, interrupted -----------------------------------------------------------------


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_an_interrupted_proxy_keeps_what_it_recorded(tmp_path: Path, signum: int) -> None:
    """One recording ended before the signal (in the cassette), one is under way (kept as a
    partial beside it, masked); no temporary file is left."""
    first_sent = threading.Event()

    async def slow(request: Request) -> StreamingResponse:
        async def body() -> Any:
            import asyncio

            yield b"data: first\n\n"
            first_sent.set()
            await asyncio.sleep(30)
            yield b"data: never\n\n"

        return StreamingResponse(body(), media_type="text/event-stream")

    async def done(request: Request) -> JSONResponse:
        return JSONResponse({"ok": True})

    upstream = Starlette(routes=[Route("/slow", slow), Route("/done", done)])
    with running(upstream) as up:
        proc = subprocess.Popen(
            [sys.executable, "-m", "ssemock", "proxy", up, "--cassette-dir", str(tmp_path), "--port", "0"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert proc.stdout is not None
            banner = proc.stdout.readline()
            match = re.search(r"proxying on (http://127\.0\.0\.1:\d+)", banner)
            assert match, banner + proc.stderr.read() if proc.stderr else banner
            url = match.group(1)
            assert httpx.get(url + "/done", timeout=TIMEOUT).json() == {"ok": True}
            until((tmp_path / "proxy.json").exists, "the first save")
            with httpx.stream("GET", url + "/slow", timeout=TIMEOUT) as resp:
                reads = resp.iter_raw()  # kept: a dropped iterator closes the response (the client leaves)
                assert next(reads) == b"data: first\n\n"
                proc.send_signal(signum)
                code = proc.wait(TIMEOUT)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert code == 0, proc.stderr.read() if proc.stderr else code
    cassette = ssemock.Cassette.load(tmp_path / "proxy.json")
    assert [x.request.url for x in cassette.interactions] == [up + "/done"]
    partial = ssemock.Cassette.load(tmp_path / "proxy.partial.json")
    assert partial.interactions[0].response.body == b"data: first\n\n"
    assert not partial.interactions[0].response.complete
    assert sorted(p.name for p in tmp_path.iterdir()) == ["proxy.json", "proxy.partial.json"]
    assert json.loads((tmp_path / "proxy.json").read_text())  # whole JSON, not half-written


# -- the pytest fixture ------------------------------------------------------------------------------

FIXTURE_TEST = """
import subprocess

UPSTREAM = {upstream!r}


def test_curl_through_the_proxy(ssemock_proxy):
    run = ssemock_proxy(UPSTREAM)
    out = subprocess.run(
        ["curl", "-sS", "--max-time", "10", "-H", "content-type: application/json",
         "--data", '{{"stream": true}}', run.url + "/v1/chat/completions"],
        capture_output=True, check=True,
    ).stdout
    assert out.endswith(b"data: [DONE]\\n\\n"), out
    assert run.cassette.name == "test_curl_through_the_proxy.json"
"""


def test_the_fixture_records_a_subprocess_client_then_replays_it(
    server: str, pytester: pytest.Pytester
) -> None:
    pytester.makepyfile(test_client=FIXTURE_TEST.format(upstream=server))
    first = pytester.runpytest_inprocess("--ssemock-record-mode=once", "-p", "no:randomly", "-q")
    first.assert_outcomes(passed=1)
    cassette_path = pytester.path / "cassettes" / "test_client" / "test_curl_through_the_proxy.json"
    recorded = ssemock.Cassette.load(cassette_path).interactions[0]
    assert recorded.request.url == server + "/v1/chat/completions" and recorded.response.complete
    # replay (the default mode is none), the upstream unreachable: only the cassette answers
    pytester.makepyfile(test_client=FIXTURE_TEST.format(upstream="http://127.0.0.1:9"))
    second = pytester.runpytest_inprocess("-p", "no:randomly", "-q")
    second.assert_outcomes(passed=1)


# -- WebSocket upgrades ------------------------------------------------------------------------------


def test_a_websocket_session_is_relayed_and_recorded(tmp_path: Path) -> None:
    import asyncio

    from starlette.routing import WebSocketRoute
    from starlette.websockets import WebSocket
    from websockets.asyncio.client import connect

    async def echo(ws: WebSocket) -> None:
        await ws.accept(subprotocol="chat.v1")
        await ws.send_text('{"type": "hello"}')
        while True:
            text = await ws.receive_text()
            if text == "bye":
                await ws.close(4000, "done")
                return
            await ws.send_text(text.upper())

    upstream = Starlette(routes=[WebSocketRoute("/v1/realtime", echo)])

    async def client(url: str) -> tuple[list[str], int | None]:
        got = []
        async with connect(
            url, subprotocols=["chat.v1"], additional_headers={"x-ssemock-cassette": "ws"}
        ) as live:  # type: ignore[list-item]
            got.append(await live.recv())
            await live.send("one")
            got.append(await live.recv())
            await live.send("bye")
            try:
                await live.recv()
            except Exception:
                pass
            return got, live.close_code

    with running(upstream) as up, proxy(up, tmp_path) as (url, state, lines):
        got, code = asyncio.run(client(url.replace("http://", "ws://") + "/v1/realtime"))
        cassette = saved(state, name="ws")
    assert got == ['{"type": "hello"}', "ONE"] and code == 4000
    session = cassette.interactions[0].websocket
    assert (
        session is not None
        and cassette.interactions[0].request.url == up.replace("http://", "ws://") + "/v1/realtime"
    )
    assert [(m.direction, m.data) for m in session.messages] == [
        ("recv", '{"type": "hello"}'),
        ("send", "one"),
        ("recv", "ONE"),
        ("send", "bye"),
    ]
    assert [m.t for m in session.messages] == sorted(m.t for m in session.messages)
    assert (session.close.code, session.close.reason, session.close.by) == (4000, "done", "server")
    assert session.subprotocol == "chat.v1"


# -- several upstreams -------------------------------------------------------------------------------


def test_path_prefixes_route_to_their_upstreams_and_cassettes(server: str, tmp_path: Path) -> None:
    from ssemock.commands.proxy import Upstream

    stand_in = Counting()
    with running(stand_in.app) as other:
        ups = [Upstream(server, prefix="/a", cassette="a"), Upstream(other, prefix="/b", cassette="b")]
        with running(app(ups, cassette_dir=tmp_path)) as url:
            echoed = httpx.get(url + "/a/echo?x=1", timeout=TIMEOUT)
            streamed = httpx.post(url + "/b/v1/chat", json={"q": 1}, timeout=TIMEOUT)
            nowhere = httpx.get(url + "/c/echo", timeout=TIMEOUT)
    assert echoed.json()["query"] == "x=1" and b"[DONE]" in streamed.content
    assert nowhere.status_code == 400 and "no upstream" in nowhere.json()["error"]
    assert ssemock.Cassette.load(tmp_path / "a.json").interactions[0].request.url == server + "/echo?x=1"
    assert ssemock.Cassette.load(tmp_path / "b.json").interactions[0].request.url == other + "/v1/chat"


def test_a_recording_under_an_upstream_with_a_path_replays_with_the_path_as_sent(tmp_path: Path) -> None:
    """The upstream URL's path comes before the request's, and the replay matches the URL that
    was forwarded and recorded (its percent-encoding kept)."""
    stand_in = Counting()
    with running(stand_in.app) as up:
        with proxy(up + "/v1", tmp_path) as (url, state, _):
            live = httpx.post(url + "/chat", json={"q": 1}, timeout=TIMEOUT)
            cassette = saved(state)
    with proxy("http://127.0.0.1:9/v1", tmp_path, record_mode="none") as (url, _, lines):
        again = httpx.post(url + "/chat", json={"q": 1}, timeout=TIMEOUT)
    assert cassette.interactions[0].request.url == up + "/v1/chat"
    assert again.status_code == 200 and again.content == live.content, lines


def test_a_bad_config_file_is_one_error_naming_the_file_and_the_upstream(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from ssemock.commands.cli import main

    config = tmp_path / "proxy.toml"
    config.write_text(
        '[[upstream]]\nurl = "http://127.0.0.1:9"\nprefix = "/a"\n\n[[upstream]]\nprefx = "/b"\n'
    )
    assert main(["proxy", "--config", str(config)]) == 1
    err = capsys.readouterr().err
    assert f"--config {config}: upstream 2: unknown key(s) prefx" in err
    assert main(["proxy"]) == 1 and "give UPSTREAM_URL or --config FILE" in capsys.readouterr().err
    assert main(["proxy", "ftp://x"]) == 1 and "must start with http://" in capsys.readouterr().err


def test_an_http2_upstream_streams_through_the_proxy(tmp_path: Path) -> None:
    import asyncio

    from hypercorn.asyncio import serve as hypercorn_serve
    from hypercorn.config import Config

    ca, cert, key = _certificates(tmp_path)

    async def stream(request: Request) -> StreamingResponse:
        version = request.scope["http_version"]
        return StreamingResponse(
            iter([b"data: http/%s\n\n" % version.encode(), b"data: [DONE]\n\n"]),
            media_type="text/event-stream",
        )

    config = Config()
    port = _free_port()
    config.bind = [f"127.0.0.1:{port}"]
    config.certfile, config.keyfile, config.alpn_protocols = str(cert), str(key), ["h2"]
    config.loglevel, config.graceful_timeout = "WARNING", 0.1
    stop = threading.Event()

    def quiet_cancellation(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        """At the shutdown hypercorn cancels the connection the proxy left in its pool, and Python
        3.11's asyncio streams report a cancelled connection task as an error ("Exception in
        callback ... CancelledError", printed among the progress dots): not one."""
        if not isinstance(context.get("exception"), asyncio.CancelledError):
            loop.default_exception_handler(context)

    async def serve() -> None:
        asyncio.get_running_loop().set_exception_handler(quiet_cancellation)
        await hypercorn_serve(
            Starlette(routes=[Route("/v1/s", stream)]),  # type: ignore[arg-type]
            config,
            shutdown_trigger=lambda: asyncio.to_thread(stop.wait),  # type: ignore[arg-type]
        )

    def run() -> None:
        asyncio.run(serve())

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        upstream = f"https://127.0.0.1:{port}"
        until(lambda: accepts(port), "the HTTP/2 upstream's start")
        with proxy(upstream, tmp_path / "h2", ca_bundle=ca) as (url, state, lines):
            body = httpx.get(url + "/v1/s", timeout=TIMEOUT).content
            cassette = saved(state)
    finally:
        stop.set()  # hypercorn then waits for the proxy's pooled HTTP/2 connection: not joined long
        thread.join(1)
    assert body == b"data: http/2\n\ndata: [DONE]\n\n"  # the upstream spoke HTTP/2
    assert any("(HTTP/2)" in line for line in lines)
    assert cassette.interactions[0].response.body == body and cassette.interactions[0].response.complete


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# -- what a client sends is bounded, as under serve ---------------------------------------------------


def test_a_chunked_request_body_past_max_body_is_refused_before_it_ends(tmp_path: Path) -> None:
    """413 once the body passes --max-body, though its end never comes: it is read part by part,
    never whole (and never forwarded)."""
    stand_in = Counting()
    with running(stand_in.app) as up, proxy(up, tmp_path, max_body=1000) as (url, _, lines):
        port = int(url.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT) as sock:
            head = b"POST /v1/chat HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
            sock.sendall(head + b"%x\r\n%s\r\n" % (1500, b"a" * 1500))  # no last chunk: the body never ends
            answer = sock.recv(65536)
            while b"\r\n\r\n" not in answer or not answer.endswith(b"}"):  # to the JSON body's end
                answer += sock.recv(65536) or b"}"
        small = httpx.post(url + "/v1/chat", content=b"b" * 1000, timeout=TIMEOUT)
    assert answer.startswith(b"HTTP/1.1 413 ") and b"--max-body (1000 bytes)" in answer
    assert small.status_code == 200 and small.headers["x-echo"] == "1000"
    assert stand_in.calls == 1  # only the small one was forwarded
    assert [line for line in lines if "-> 413" in line] == [
        "POST http://" + up[7:] + "/v1/chat -> 413 body larger than 1000 bytes"
    ]


def _proxy_process(upstream: str, tmp_path: Path, *options: str) -> tuple[subprocess.Popen[str], int]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "ssemock", "proxy", upstream, "--cassette-dir", str(tmp_path), *options],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    banner = proc.stdout.readline()
    match = re.search(r"proxying on http://127\.0\.0\.1:(\d+)", banner)
    assert match, banner
    return proc, int(match.group(1))


def test_ssemock_proxy_caps_its_connections(tmp_path: Path) -> None:
    stand_in = Counting()
    with running(stand_in.app) as up:
        proc, port = _proxy_process(up, tmp_path, "--max-connections", "3", "--header-timeout", "60")
        try:
            held = [half_head(port, "/v1/chat", TIMEOUT) for _ in range(3)]
            flood = [half_head(port, "/v1/chat", TIMEOUT) for _ in range(20)]
            assert all(closed_by_server(s) for s in flood)  # past the cap: closed at once
            for s in flood:
                s.close()
            for s in held:  # within it: answered once their headers finish
                s.sendall(b"Content-Length: 0\r\n\r\n")
                assert s.recv(12) == b"HTTP/1.1 200"
                s.close()
        finally:
            proc.kill()  # (how it stops is not what this tests)
            proc.wait(TIMEOUT)
    assert stand_in.calls == 3


def test_ssemock_proxy_closes_slow_heads_but_not_long_websocket_sessions(tmp_path: Path) -> None:
    """--header-timeout closes a connection whose headers never finish; a WebSocket session (its
    head came whole) outlives it, through the relay."""
    from starlette.routing import WebSocketRoute
    from starlette.websockets import WebSocket
    from websockets.sync.client import connect

    async def upper(ws: WebSocket) -> None:
        await ws.accept()
        async for text in ws.iter_text():
            await ws.send_text(text.upper())

    upstream = Starlette(routes=[WebSocketRoute("/v1/realtime", upper)])
    with running(upstream) as up:
        proc, port = _proxy_process(up, tmp_path, "--header-timeout", "0.2")
        try:
            slow = [half_head(port, "/v1/chat", TIMEOUT) for _ in range(5)]
            with connect(f"ws://127.0.0.1:{port}/v1/realtime") as ws:
                ws.send("one")
                first = ws.recv(timeout=TIMEOUT)
                assert all(closed_by_server(s) for s in slow)  # their header timeout passed
                time.sleep(0.4)  # (twice the header timeout, the session idle)
                ws.send("two")
                second = ws.recv(timeout=TIMEOUT)
            for s in slow:
                s.close()
        finally:
            proc.kill()  # (how it stops is not what this tests)
            proc.wait(TIMEOUT)
    assert (first, second) == ("ONE", "TWO")


def test_cli_proxy_checks_its_limits(capsys: pytest.CaptureFixture[str]) -> None:
    from ssemock.commands.cli import main

    assert main(["proxy", "http://127.0.0.1:9", "--header-timeout", "0"]) == 1
    assert main(["proxy", "http://127.0.0.1:9", "--max-connections", "0"]) == 1
    err = capsys.readouterr().err
    assert err.count("--header-timeout must be > 0 seconds and --max-connections >= 1") == 2


# -- every stop is clean (issue 41 item 6) -----------------------------------------------------------

_FORKS = """
import json, os, sys
import encodings.idna, stringprep, anyio._backends._asyncio, httpx, websockets  # imported once: each
import uvicorn.protocols.http.h11_impl, uvicorn.protocols.websockets.auto, uvicorn.lifespan.off  # command
import ssemock.commands.proxy, ssemock.framing.document, ssemock.framing.ndjson  # forks from here
from ssemock.commands.cli import main

for pipes in sys.argv[1:]:  # a lane: a process of its own, forked, reading and writing its pipes
    commands, answers = map(int, pipes.split(","))
    if os.fork() == 0:
        os.dup2(answers, 1)
        for line in open(commands):
            said, say = os.pipe()  # the command writes once its pid is said (on a busy machine it
            pid = os.fork()  # ran first, and its "proxying on" line came before the "pid" line)
            if pid == 0:
                os.close(say)
                os.read(said, 1)
                os.close(said)
                code = main(json.loads(line))
                sys.stdout.flush()
                os._exit(code)
            os.close(said)
            print("pid", pid, flush=True)
            os.close(say)
            print("exited", os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]), flush=True)
        os._exit(0)
for _ in sys.argv[1:]:
    os.wait()
"""
"""Runs ``ssemock proxy ARGS`` for each line of JSON a lane reads from its commands pipe
(``python -c _FORKS R,W ...``: a lane for each pair of descriptors), one at a time in each lane,
each command forked from a process that imported everything it imports already: the command as
a user runs it, for 0.1 CPU-s a cycle rather than an interpreter's start and imports (0.6 CPU-s
more)."""

_TGKILL = {"x86_64": 234, "aarch64": 131}  # the tgkill syscall's number: a signal to one thread


def _signal_thread(pid: int, tid: int, signum: int) -> None:
    """SIGINT or SIGTERM to thread ``tid`` of process ``pid`` (as the kernel may choose any thread
    for a signal to the process; to the process where tgkill is not known here)."""
    import ctypes
    import platform

    number = _TGKILL.get(platform.machine())
    if number is None or pid == tid:
        os.kill(pid, signum)
        return
    if ctypes.CDLL(None, use_errno=True).syscall(number, pid, tid, signum) != 0:  # (the thread ended)
        os.kill(pid, signum)


# The load: two niced busy loops, forked by a launcher that exits at once, so that no process of the
# suite waits for them: the suite's CPU count (its processes and those they waited for) leaves out
# the load the test makes, which would fill every idle moment of an idle machine. Each loop ends
# by itself after five minutes, should the test's process die before it kills them.
_BUSY = """
import os, time
for _ in range(2):
    if os.fork() == 0:
        os.nice(19)
        end = time.monotonic() + 300
        while time.monotonic() < end:
            pass
        os._exit(0)
"""


def test_every_stop_is_clean_with_both_cores_busy(tmp_path: Path) -> None:
    """50 times with both cores busy (two busy-loop processes, niced: the cores never idle, the
    stops still run at once): ``ssemock proxy`` starts, records a response, and gets SIGINT or
    SIGTERM (in turn) at one of its threads (the main one, the server's, a worker's, in turn):
    it exits with 0 within 5 s every time, the recording kept. Five lanes of ten, side by side."""

    async def hello(request: Request) -> Response:
        return Response(b"data: hello\n\n", media_type="text/event-stream")

    busy = subprocess.Popen([sys.executable, "-c", _BUSY], start_new_session=True)
    busy.wait()  # its two loops run on in its process group, children of no process of the suite's
    pipes = [(os.pipe(), os.pipe()) for _ in range(5)]  # each lane's commands and answers
    theirs = [(commands[0], answers[1]) for commands, answers in pipes]
    forks = subprocess.Popen(
        [sys.executable, "-c", _FORKS, *(f"{r},{w}" for r, w in theirs)],
        pass_fds=[fd for p in theirs for fd in p],
        start_new_session=True,  # its lanes and their commands in its process group: all stopped at the end
    )
    for fd in (fd for p in theirs for fd in p):
        os.close(fd)
    try:
        with running(Starlette(routes=[Route("/hello", hello)])) as up, ThreadPoolExecutor(5) as lanes:
            runs = [
                lanes.submit(_stop_cycles, up, tmp_path, range(k, 50, 5), commands[1], answers[0])
                for k, (commands, answers) in enumerate(pipes)
            ]
            for run in runs:
                run.result()
    finally:
        for commands, answers in pipes:
            os.close(commands[1])  # (the lane ends)
            os.close(answers[0])
        os.killpg(forks.pid, signal.SIGKILL)  # (and a command that hung)
        os.killpg(busy.pid, signal.SIGKILL)
        forks.wait()
    assert len(list(tmp_path.iterdir())) == 50


def _stop_cycles(up: str, folder: Path, cycles: range, commands: int, answers: int) -> None:
    """Cycles of `test_every_stop_is_clean_with_both_cores_busy`, one after the other, each
    command forked by a lane of `_FORKS` that reads ``commands`` and writes ``answers``."""
    lines = _Lines(answers)
    with httpx.Client(timeout=TIMEOUT) as client:
        for i in cycles:
            signum = (signal.SIGINT, signal.SIGTERM)[i % 2]
            argv = ["proxy", up, "--cassette-dir", str(folder), "--cassette", f"c{i}", "--quiet"]
            os.write(commands, json.dumps(argv).encode() + b"\n")
            pid = int(lines.next(TIMEOUT).split()[1])
            url = re.search(r"proxying on (http://127\.0\.0\.1:\d+)", lines.next(TIMEOUT))
            assert url and lines.next(TIMEOUT).startswith("cassettes in ")
            assert client.get(url.group(1) + "/hello").content == b"data: hello\n\n"
            threads = (
                sorted(int(t) for t in os.listdir(f"/proc/{pid}/task")) if os.path.isdir("/proc") else [pid]
            )
            _signal_thread(pid, threads[i // 2 % len(threads)], signum)
            while not (line := lines.next(5.0, f"cycle {i}: no exit within 5 s of {signum!r}")).startswith(
                "exited"
            ):
                assert line.startswith("ssemock: interrupted: the recordings under way are kept in"), line
            assert line == "exited 0", (i, line)
            kept = [p for p in (folder / f"c{i}.json", folder / f"c{i}.partial.json") if p.exists()]
            assert [ssemock.Cassette.load(p).interactions[0].response.body for p in kept] == [
                b"data: hello\n\n"
            ]


class _Lines:
    """The lines a process writes to the pipe ``fd``, each waited for no longer than asked (read
    from the descriptor: a buffered reader could hold a line that ``select`` does not see)."""

    def __init__(self, fd: int) -> None:
        self.fd, self.buffer = fd, b""

    def next(self, within: float, what: str = "a line") -> str:
        import select
        import time

        deadline = time.monotonic() + within
        while b"\n" not in self.buffer:
            ready, _, _ = select.select([self.fd], [], [], max(0.0, deadline - time.monotonic()))
            assert ready, what
            data = os.read(self.fd, 65536)
            assert data, f"{what}: the process ended"
            self.buffer += data
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line.decode()
