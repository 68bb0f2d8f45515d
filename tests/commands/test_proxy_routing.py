"""Where ``ssemock proxy`` sends a request (`ssemock.commands.proxy.routing`): a prefix routes
only at a segment boundary, the rest of the path is joined as a path onto the upstream URL, and
a target that would leave the upstream (another scheme, host or port) is refused with 400 and
one log line, for HTTP and WebSocket. A property test draws hostile request targets for the
pure routing; a real proxy in front of a loopback upstream, with a second loopback "evil"
listener that must never be reached, takes the same targets over raw sockets."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route, WebSocketRoute
from starlette.testclient import TestClient, WebSocketDenialResponse
from starlette.websockets import WebSocket
from websockets.uri import parse_uri
from ws_frame_client import server_log

from ssemock.commands.loopback import running
from ssemock.commands.proxy import Upstream, app
from ssemock.commands.proxy.routing import OffUpstream, forward_url, pick

TIMEOUT = 10.0

UPSTREAMS = [
    Upstream("https://api.openai.com", prefix="/openai"),
    Upstream("http://127.0.0.1:8080/v1", prefix="/local/"),
    Upstream("http://[::1]:9000/base", prefix="/six"),
    Upstream("https://api.anthropic.com"),  # routes every other path
]
# the pieces of hostile targets: userinfo, encodings (double too), dots, backslashes, slashes,
# IPv6 literals, absolute forms, fragments and queries
PIECES = [
    "openai", "local", "six", "v1", "x", "/", "//", "@", "%40", "%2540", ".", "..", "%2e", "%2E%2e",
    "%252e", "\\", "%5c", "%5C", "%2f", "%2F", "%252f", "evil.example", "127.0.0.1:1", ":", "[::1]",
    "[", "]", "http://evil.example", "https:", "ws://", "#", "%23", "?", "%3f", "%", " ", "\t", "é",
    "\u2100", "\x00", "&", "=",
]  # fmt: skip
targets = st.lists(st.sampled_from(PIECES), max_size=12).map("".join)


def _origins(url: str, websocket: bool) -> set[tuple[str, str, int]]:
    """The (secure, host, port) of ``url`` as each client parser reads it."""
    split, parsed = urlsplit(url), httpx.URL(url)
    secure = split.scheme in ("https", "wss")
    default = 443 if secure else 80
    found = {
        (str(secure), (split.hostname or "").lower(), split.port or default),
        (str(parsed.scheme in ("https", "wss")), parsed.host.lower(), parsed.port or default),
    }
    if websocket:
        ws = parse_uri(url)  # the websockets client's reading
        found.add((str(ws.secure), ws.host.lower().strip("[]"), ws.port))
    return {(s, h.strip("[]"), p) for s, h, p in found}


@settings(max_examples=600, deadline=None)
@given(prefix=st.sampled_from(["", "/openai", "/local", "/six", "/openai/"]), tail=targets, ws=st.booleans())
@example(prefix="/openai", tail="@evil.example/x", ws=False)
@example(prefix="/openai", tail="%40evil.example/x", ws=True)
@example(prefix="/openai", tail=".evil.example/x", ws=False)
@example(prefix="", tail="http://evil.example/x", ws=False)
@example(prefix="/local", tail="/../../x", ws=False)
@example(prefix="/local", tail="/.", ws=False)
def test_every_forwarded_target_lands_on_its_upstream(prefix: str, tail: str, ws: bool) -> None:
    target = prefix + tail
    path, _, query = target.partition("?")  # the request target as a server splits it
    found = pick(UPSTREAMS, path)
    assert found is not None  # (the prefix-less upstream routes every other path)
    upstream, rest = found
    chosen = upstream.prefix.rstrip("/")
    assert not chosen or path == chosen or path.startswith(chosen + "/")  # whole segments only
    longer = [u for u in UPSTREAMS if len(u.prefix.rstrip("/")) > len(chosen)]
    assert not any(
        path == u.prefix.rstrip("/") or path.startswith(u.prefix.rstrip("/") + "/") for u in longer
    )
    try:
        url = forward_url(upstream.url, rest, query, websocket=ws)
    except OffUpstream:
        return  # refused: never forwarded
    base = upstream.url.replace("http", "ws", 1) if ws else upstream.url
    assert _origins(url, ws) == _origins(base, ws) and len(_origins(url, ws)) == 1
    base_path = urlsplit(upstream.url).path.rstrip("/")
    for path in (urlsplit(url).path, httpx.URL(url).path):  # (httpx resolves the dot segments)
        assert path == base_path or path.startswith(base_path + "/")
    assert not urlsplit(url).fragment and not urlsplit(url).username


@pytest.mark.parametrize(
    ("target", "url"),
    [
        ("/openai/v1/chat/completions?stream=1", "https://api.openai.com/v1/chat/completions?stream=1"),
        ("/openai", "https://api.openai.com/"),
        ("/local/models/a%2Fb?q=%20x", "http://127.0.0.1:8080/v1/models/a%2Fb?q=%20x"),
        ("/six/x@y", "http://[::1]:9000/base/x@y"),
        ("/openai@evil.example/x", "https://api.anthropic.com/openai@evil.example/x"),
        ("/openai.evil.example/x", "https://api.anthropic.com/openai.evil.example/x"),
        ("/v1/files/a b#c\\d", "https://api.anthropic.com/v1/files/a%20b%23c%5Cd"),
        ("/local/a/../b", "http://127.0.0.1:8080/v1/a/../b"),
    ],
)
def test_the_rest_is_joined_as_a_path_onto_the_upstream(target: str, url: str) -> None:
    path, _, query = target.partition("?")
    found = pick(UPSTREAMS, path)
    assert found is not None
    assert forward_url(found[0].url, found[1], query) == url


@pytest.mark.parametrize("target", ["/local/../x", "/local/%2e%2e/x", "/local/a/../../x"])
def test_dot_segments_that_climb_out_of_the_base_path_are_refused(target: str) -> None:
    found = pick(UPSTREAMS, target)
    assert found is not None
    with pytest.raises(OffUpstream, match="climbs out"):
        forward_url(found[0].url, found[1])


def test_no_upstream_routes_a_prefix_without_its_segment_boundary() -> None:
    only = [Upstream("https://api.openai.com", prefix="/openai")]
    assert pick(only, "/openai@evil.example/x") is None
    assert pick(only, "/openai%40evil.example/x") is None
    assert pick(only, "/openai.evil.example/x") is None
    assert pick(only, "/openaix") is None
    assert pick(only, "/openai") == (only[0], "/")
    assert pick(only, "/openai/v1") == (only[0], "/v1")


def test_an_upstream_url_with_a_query_or_no_host_is_refused(tmp_path: Path) -> None:
    for bad in ("https://api.openai.com/v1?key=1", "https://api.openai.com/#x", "http:///v1", "ftp://x"):
        with pytest.raises(ValueError, match="upstream URL"):
            app(bad, cassette_dir=tmp_path)


# -- a real proxy, a loopback upstream, and an evil listener that must hear nothing ---------------


@contextmanager
def _evil() -> Iterator[tuple[int, list[bytes]]]:
    """A loopback listener recording every connection's first bytes (and closing it)."""
    heard: list[bytes] = []
    sock = socket.create_server(("127.0.0.1", 0))
    sock.settimeout(0.05)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = sock.accept()
            except TimeoutError:
                continue
            with conn:
                conn.settimeout(1)
                try:
                    heard.append(conn.recv(4096) or b"(connected)")
                except OSError:
                    heard.append(b"(connected)")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield sock.getsockname()[1], heard
    finally:
        stop.set()
        thread.join(TIMEOUT)
        sock.close()


async def _echo(request: Request) -> PlainTextResponse:
    return PlainTextResponse("upstream " + request.scope["raw_path"].decode("latin-1"))


async def _echo_ws(ws: WebSocket) -> None:
    await ws.accept()
    await ws.send_text("upstream " + ws.scope["raw_path"].decode("latin-1"))
    await ws.close()


UPSTREAM = Starlette(routes=[Route("/{p:path}", _echo), WebSocketRoute("/{p:path}", _echo_ws)])


def _exchange(port: int, target: str, *, websocket: bool) -> bytes:
    """A raw request for ``target`` (sent as is) and what came back, to the end."""
    upgrade = (
        "Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
        if websocket
        else "Connection: close\r\n"
    )
    head = f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nx-api-key: sk-test-route\r\n{upgrade}\r\n"
    with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT) as sock:
        sock.sendall(head.encode("latin-1"))
        got = b""
        while data := sock.recv(65536):
            got += data
            if websocket and b"\r\n\r\n" in got and (b" 101 " not in got.split(b"\r\n")[0] or b"\x88" in got):
                break  # refused, or the upstream's close came (ends the session)
        return got


def _hostile(evil: int) -> list[str]:
    at = f"127.0.0.1:{evil}"
    return [
        f"/openai@{at}/x",
        f"/openai%40{at}/x",
        f"/openai%2540{at}/x",
        f"/openai:x@{at}/x",
        f"/openai\\@{at}/x",
        f"/openai/..%2f..%2f@{at}/x",
        f"/openai/%2e%2e/%2e%2e/@{at}",
        f"/openai//{at}/x",
        f"/openai/@{at}/x",
        f"/openai.{at}/x",
        f"http://{at}/openai/x",
        f"//{at}/openai/x",
        f"/openai/x?u=http://{at}/#@{at}",
        f"/openai/%5c%5c{at}/x",
        "/openai/[::1]/x",
    ]


@pytest.mark.parametrize("websocket", [False, True], ids=["http", "websocket"])
def test_no_target_reaches_another_host_through_a_real_proxy(tmp_path: Path, websocket: bool) -> None:
    lines: list[str] = []
    with _evil() as (evil, heard), running(UPSTREAM) as up:
        asgi = app(
            [Upstream(up, prefix="/openai")], cassette_dir=tmp_path, record_mode="all", log=lines.append
        )
        with running(asgi) as url, server_log() as server_lines:  # (after uvicorn set its logging up)
            port = int(url.rsplit(":", 1)[1])
            answers = {target: _exchange(port, target, websocket=websocket) for target in _hostile(evil)}
    assert heard == []  # the evil listener was never reached, not even connected to
    ok = b"HTTP/1.1 101 " if websocket else b"HTTP/1.1 200 "
    refused = [t for t, got in answers.items() if got.startswith(b"HTTP/1.1 400 ")]
    for target, got in answers.items():
        assert got.startswith((ok, b"HTTP/1.1 400 ")), (target, got[:200])
        if got.startswith(ok):
            assert b"upstream /" in got, (target, got[-200:])  # answered by the upstream
    assert f"/openai@127.0.0.1:{evil}/x" in refused and f"/openai%40127.0.0.1:{evil}/x" in refused
    assert f"/openai.127.0.0.1:{evil}/x" in refused
    # one log line per refusal (the server's log says nothing of it), the key nowhere
    assert len([line for line in lines if "-> 400 " in line]) == len(refused)
    assert server_lines == []
    assert not any("sk-test-route" in line for line in lines)


def test_a_websocket_target_off_its_upstream_is_refused_under_any_asgi_server(tmp_path: Path) -> None:
    """Served by another ASGI server than ssemock's (Starlette's test client here), the proxy's
    WebSocket endpoint refuses the target itself: 400 with the reason, one log line."""
    lines: list[str] = []
    asgi = app(
        [Upstream("http://127.0.0.1:9", prefix="/openai")],
        cassette_dir=tmp_path,
        record_mode="all",
        log=lines.append,
    )
    with TestClient(asgi) as client, pytest.raises(WebSocketDenialResponse) as denied:
        with client.websocket_connect("/openai@127.0.0.1:1/x"):
            pass  # (not reached: the handshake is refused)
    assert denied.value.status_code == 400 and "no upstream for this path" in denied.value.json()["error"]
    assert lines == ["WebSocket /openai@127.0.0.1:1/x -> 400 no upstream for this path (prefixes: /openai)"]
