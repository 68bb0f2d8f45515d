"""A client's proxy settings (``HTTPS_PROXY``/``HTTP_PROXY``/``ALL_PROXY`` in the environment, as
on many CI machines, or the library's own ``proxy=``) do not change what a replay serves (issue 41
item 5): on every stack of the WebSocket registry (and httpx-ws), the recorded session of the
target URL replays, an unrecorded one is unmatched, and a loopback listener standing for the proxy
(an allowed host: loopback) never gets a connection. A recording goes through the proxy as the
client would without ssemock, and keeps the target's URL."""

from __future__ import annotations

import asyncio
import json
import socket
import ssl
import threading
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import trustme
from ws_servers import realtime, running

import ssemock
from ssemock.stacks import WS_STACKS
from ssemock.store.model import Interaction, Request, Response
from ssemock.store.websocket import Close, Message, WebSocket

ASK = json.dumps({"type": "response.create"})
# (aiohttp reads WSS_PROXY/WS_PROXY for a WebSocket URL, the others HTTPS_PROXY/HTTP_PROXY)
PROXY_VARIABLES = [f"{scheme}_PROXY" for scheme in ("HTTPS", "HTTP", "WSS", "WS", "ALL")]
PROXY_VARIABLES += [name.lower() for name in PROXY_VARIABLES]

Driver = Callable[[str, "str | None", "ssl.SSLContext | None"], list[Any]]


async def _talk(recv: Callable[[], Any], send: Callable[[str], Any]) -> list[Any]:
    """The exchange every client has: the greeting, ``response.create``, events up to
    ``response.done``."""
    seen: list[Any] = [json.loads(await recv())["type"]]
    await send(ASK)
    while True:
        event = json.loads(await recv())
        seen.append((event["type"], event.get("delta")))
        if event["type"] == "response.done":
            return seen


def _blocking(call: Callable[..., Any]) -> Callable[..., Any]:
    async def awaited(*args: Any) -> Any:
        return call(*args)

    return awaited


def _websockets(url: str, proxy: str | None, context: ssl.SSLContext | None) -> list[Any]:
    from websockets.asyncio.client import connect

    async def run() -> list[Any]:
        kw = {} if proxy is None else {"proxy": proxy}
        async with connect(url, ssl=context, **kw) as ws:
            return await _talk(ws.recv, ws.send)

    return asyncio.run(run())


def _websockets_sync(url: str, proxy: str | None, context: ssl.SSLContext | None) -> list[Any]:
    from websockets.sync.client import connect

    kw = {} if proxy is None else {"proxy": proxy}
    with connect(url, ssl=context, **kw) as ws:
        return asyncio.run(_talk(_blocking(ws.recv), _blocking(ws.send)))


def _websockets_legacy(url: str, proxy: str | None, context: ssl.SSLContext | None) -> list[Any]:
    assert proxy is None, "the legacy client takes no proxy="
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from websockets.legacy.client import connect

    async def run() -> list[Any]:
        async with connect(url, ssl=context) as ws:
            return await _talk(ws.recv, ws.send)

    return asyncio.run(run())


def _aiohttp_ws(url: str, proxy: str | None, context: ssl.SSLContext | None) -> list[Any]:
    import aiohttp

    async def run() -> list[Any]:
        # trust_env: aiohttp reads the environment's proxies only when asked to
        async with aiohttp.ClientSession(trust_env=proxy is None) as session:
            async with session.ws_connect(url, proxy=proxy, ssl=context or True) as ws:
                return await _talk(ws.receive_str, ws.send_str)

    return asyncio.run(run())


def _httpx_ws(url: str, proxy: str | None, context: ssl.SSLContext | None) -> list[Any]:
    """httpx-ws's sync and async sessions, one after the other."""
    import httpx
    from httpx_ws import aconnect_ws, connect_ws

    http_url = url.replace("wss://", "https://").replace("ws://", "http://")
    verify: Any = context or True
    with httpx.Client(proxy=proxy, verify=verify) as client, connect_ws(http_url, client) as ws:
        first = asyncio.run(_talk(_blocking(ws.receive_text), _blocking(ws.send_text)))

    async def run() -> list[Any]:
        async with httpx.AsyncClient(proxy=proxy, verify=verify) as client:
            async with aconnect_ws(http_url, client) as ws:
                return await _talk(ws.receive_text, ws.send_text)

    second = asyncio.run(run())
    assert second == first
    return first


#: each WebSocket stack's client, and whether the library takes ``proxy=`` (a new member of the
#: registry needs its line here: test_every_websocket_stack_has_a_client_here)
CLIENTS: dict[str, tuple[Driver, bool]] = {
    "websockets": (_websockets, True),
    "websockets.sync": (_websockets_sync, True),
    "websockets.legacy": (_websockets_legacy, False),
    "aiohttp.ws": (_aiohttp_ws, True),
    "httpx-ws": (_httpx_ws, True),
}
STACKS = [*WS_STACKS, "httpx-ws"]
#: (stack, how the proxy is set): the environment for every stack, ``proxy=`` where the library
#: takes it (a stack with no client here fails the collection: KeyError)
SETTINGS = [(stack, "environment") for stack in STACKS] + [
    (stack, "argument") for stack in STACKS if CLIENTS[stack][1]
]


def _settings(monkeypatch: pytest.MonkeyPatch, proxy: str, how: str) -> str | None:
    """Sets the proxy ``how`` a user does: the environment's variables (returns None) or the
    argument (returns it)."""
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    if how == "argument":
        return proxy
    for name in PROXY_VARIABLES:
        monkeypatch.setenv(name, proxy)
    return None


@contextmanager
def _listener() -> Iterator[tuple[str, Callable[[], int]]]:
    """A loopback listener standing for a proxy: its URL, and how many connections reached it
    (queued by the kernel whether or not anyone accepts them)."""
    sock = socket.create_server(("127.0.0.1", 0))
    sock.setblocking(False)
    reached = 0

    def count() -> int:
        nonlocal reached
        while True:
            try:
                sock.accept()[0].close()
            except BlockingIOError:
                return reached
            reached += 1

    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}", count
    finally:
        sock.close()


TARGET = "wss://api.realtime.test/v1/realtime?model=gpt-realtime"


def _recorded(path: Path, sessions: int) -> list[Any]:
    """A cassette holding ``sessions`` Realtime sessions with ``TARGET`` (no server, no proxy),
    and what a client sees of each."""
    events = [
        {"type": "session.created", "event_id": "event_1"},
        {"type": "response.output_text.delta", "delta": "Hi", "event_id": "event_2"},
        {"type": "response.done", "event_id": "event_3"},
    ]
    session = WebSocket(
        [
            Message("recv", 0.010, "text", json.dumps(events[0])),
            Message("send", 0.020, "text", ASK),
            Message("recv", 0.150, "text", json.dumps(events[1])),
            Message("recv", 0.200, "text", json.dumps(events[2])),
        ],
        close=Close(1000, "", "client", True),
    )
    ssemock.Cassette([Interaction(Request("GET", TARGET), Response(101), session)] * sessions).save(path)
    return ["session.created", ("response.output_text.delta", "Hi"), ("response.done", None)]


@pytest.mark.parametrize("allowed_hosts", [None, []], ids=["loopback-allowed", "nothing-allowed"])
@pytest.mark.parametrize(("stack", "how"), SETTINGS)
def test_the_recorded_session_replays_under_the_clients_proxy_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stack: str, how: str, allowed_hosts: list[str] | None
) -> None:
    client, sessions = CLIENTS[stack][0], 2 if stack == "httpx-ws" else 1
    path = tmp_path / "realtime.json"
    expected = _recorded(path, sessions)
    with _listener() as (proxy_url, reached):
        proxy = _settings(monkeypatch, proxy_url, how)
        with ssemock.use_cassette(path, record_mode="none", allowed_hosts=allowed_hosts) as player:
            again = client(TARGET, proxy, None)
            with pytest.raises(ssemock.UnmatchedRequestError) as unmatched:  # not recorded: no way out
                client(TARGET.replace("gpt-realtime", "gpt-realtime-mini"), proxy, None)
        assert reached() == 0
    assert again == expected
    assert [c.index for c in player.conversations] == list(range(sessions))
    assert "api.realtime.test" in str(unmatched.value)


@contextmanager
def _tunnel(tls: ssl.SSLContext | None = None) -> Iterator[tuple[str, list[str]]]:
    """A loopback HTTP proxy that opens ``CONNECT`` tunnels (an HTTPS proxy with ``tls``): its
    URL, and the targets asked of it."""
    listener = socket.create_server(("127.0.0.1", 0))
    targets: list[str] = []

    def pump(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
            sink.shutdown(socket.SHUT_WR)
        except OSError:  # the other side is gone
            pass

    def serve(client: socket.socket) -> None:
        if tls is not None:
            client = tls.wrap_socket(client, server_side=True)
        head = b""
        while b"\r\n\r\n" not in head and (data := client.recv(4096)):
            head += data
        method, target, _ = head.split(b"\r\n", 1)[0].decode().split(" ", 2)
        assert method == "CONNECT", head
        targets.append(target)
        host, _, port = target.rpartition(":")
        upstream = socket.create_connection((host.strip("[]"), int(port)))
        client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
        back = threading.Thread(target=pump, args=(upstream, client), daemon=True)
        back.start()
        pump(client, upstream)
        back.join(5)
        client.close()
        upstream.close()

    def accept() -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:  # closed: the proxy stops
                return
            threading.Thread(target=serve, args=(client,), daemon=True).start()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"{'http' if tls is None else 'https'}://127.0.0.1:{listener.getsockname()[1]}", targets
    finally:
        listener.shutdown(socket.SHUT_RDWR)
        listener.close()
        thread.join(5)


def _contexts() -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """A server's TLS context for 127.0.0.1 and a client's that trusts it (a throwaway CA)."""
    ca = trustme.CA()
    served = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(served)
    trusted = ssl.create_default_context()
    ca.configure_trust(trusted)
    return served, trusted


@pytest.mark.parametrize("stack", STACKS)
def test_a_session_recorded_through_the_proxy_keeps_the_target_and_replays_without_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stack: str
) -> None:
    client = CLIENTS[stack][0]
    served, trusted = _contexts()
    path = tmp_path / "realtime.json"
    with _tunnel() as (proxy_url, targets):
        _settings(monkeypatch, proxy_url, "environment")
        with running(realtime, ssl=served) as server:
            url = server.url("/v1/realtime?model=gpt-realtime", scheme="wss")
            with ssemock.use_cassette(path, record_mode="once"):
                live = client(url, None, trusted)
        tunnelled = list(targets)
        with ssemock.use_cassette(path, record_mode="none") as player:  # the server is gone
            again = client(url, None, trusted)
        assert targets == tunnelled  # nothing more reached the proxy
    sessions = 2 if stack == "httpx-ws" else 1
    # the client went through the proxy as it does without ssemock (the legacy client never does)
    assert tunnelled == ([] if stack == "websockets.legacy" else [f"127.0.0.1:{server.port}"] * sessions)
    recorded = ssemock.Cassette.load(path).interactions
    assert [i.request.url for i in recorded] == [url] * sessions
    assert all(i.websocket is not None for i in recorded)
    assert live[0] == "session.created" and live[-1][0] == "response.done"
    assert again == live and [c.index for c in player.conversations] == list(range(sessions))


@pytest.mark.parametrize("flavour", ["asyncio", "sync"])
def test_websockets_records_and_replays_through_an_https_proxy(tmp_path: Path, flavour: str) -> None:
    """``proxy="https://..."`` with ``proxy_ssl=``: TLS to the target inside the proxy's TLS (the
    sync client's ``SSLSSLSocket``) when recording; nothing of it when replaying."""
    served, trusted = _contexts()

    def run(url: str, proxy: str) -> list[Any]:
        kw = {"ssl": trusted, "proxy": proxy, "proxy_ssl": trusted}
        if flavour == "sync":
            from websockets.sync.client import connect as sync_connect

            with sync_connect(url, **kw) as ws:
                return asyncio.run(_talk(_blocking(ws.recv), _blocking(ws.send)))
        from websockets.asyncio.client import connect

        async def session() -> list[Any]:
            async with connect(url, **kw) as ws:
                return await _talk(ws.recv, ws.send)

        return asyncio.run(session())

    path = tmp_path / "realtime.json"
    with _tunnel(served) as (proxy_url, targets):
        with running(realtime, ssl=served) as server:
            url = server.url("/v1/realtime?model=gpt-realtime", scheme="wss")
            with ssemock.use_cassette(path, record_mode="once"):
                live = run(url, proxy_url)
        with ssemock.use_cassette(path, record_mode="none"):
            again = run(url, proxy_url)
    assert proxy_url.startswith("https://") and targets == [f"127.0.0.1:{server.port}"]
    assert [i.request.url for i in ssemock.Cassette.load(path).interactions] == [url]
    assert live[-1][0] == "response.done" and again == live


def test_every_websocket_stack_has_a_client_here() -> None:
    assert set(STACKS) <= set(CLIENTS)
