"""The ``websockets`` sync client (13.0+), and every SDK built on it (openai's sync
``realtime.connect``/``responses.connect``; AssemblyAI aliases its ``connect`` at import).

The ``connect`` names are left alone: the module global ``socket`` of ``websockets.sync.client``
becomes a shim whose ``create_connection`` returns a `ssemock.stacks.websocket.memory_socket.MemorySocket`
while a player is active (every version looks it up at call time, in ``connect`` or, from 17.1,
in ``reconnect.open_socket``); ``ssl.SSLContext.wrap_socket`` hands a MemorySocket back unwrapped
and keeps the context for a relay. The handshake is dispatched when the client writes it.

A proxy (``proxy=``, or ``HTTPS_PROXY`` and the like, which 15.0+ honours by default) is opened
by ``connect_http_proxy`` / ``connect_socks_proxy``: while a player is active they return a
MemorySocket for the target itself, so the handshake dispatched is the target URL's and a replay
never reaches the proxy; a relay (record, pass-through) opens the tunnel through the proxy as the
client would (TLS over it as the client asked, ``SSLSSLSocket`` through an HTTPS proxy).
"""

from __future__ import annotations

import importlib
import ssl
import types
from typing import Any

import httpx

from ...variants import timing as _timing
from .. import Patch, dispatch, intercepting
from .memory import Watchdog, keepalive
from .memory_socket import MemorySocket
from .websockets_asyncio import ERRORS, handshake_request

__all__ = ["ERRORS", "hook", "patches"]


def _head_request(head: bytes, sock: MemorySocket, stack: str) -> httpx.Request:
    lines = head.decode("latin-1").split("\r\n")
    target = lines[0].split(" ")[1] if len(lines[0].split(" ")) > 1 else "/"
    headers = [
        (k.strip(), v.strip())
        for k, sep, v in (line.partition(":") for line in lines[1:])
        if sep and k.strip().lower() not in ("sec-websocket-key", "host")
    ]
    host = next(
        (line.partition(":")[2].strip() for line in lines[1:] if line.lower().startswith("host:")), ""
    )
    scheme = "wss" if sock.tls is not None else "ws"
    return handshake_request(f"{scheme}://{host or sock.address[0]}{target}", headers, stack)


def _dispatch(head: bytes, sock: MemorySocket) -> httpx.Response:
    return dispatch(_head_request(head, sock, "websockets.sync"))


def _shim(real: types.ModuleType) -> types.ModuleType:
    shim = types.ModuleType(real.__name__)
    shim.__dict__.update(real.__dict__)

    def create_connection(
        address: Any = None, timeout: Any = None, source_address: Any = None, **kw: Any
    ) -> Any:
        if not intercepting() or address is None:
            return real.create_connection(address, timeout, source_address, **kw)

        def opener(sock: MemorySocket) -> Any:
            return _secured(sock, real.create_connection(address, timeout, source_address, **kw))

        return MemorySocket(tuple(address), _dispatch, opener)

    shim.create_connection = create_connection  # type: ignore[attr-defined]
    return shim


_real_wrap: Any = ssl.SSLContext.wrap_socket


def _secured(sock: MemorySocket, opened: Any) -> Any:
    """The real socket of a relay, with the TLS the client asked of ``sock`` (none: as is)."""
    return opened if sock.tls is None else sock.tls(opened)


def _through_proxy(original: Any) -> Any:
    """``connect_http_proxy`` / ``connect_socks_proxy`` (15.0+): a MemorySocket for the target
    while a player is active; a relay opens the real tunnel through the proxy."""

    def connect_proxy(proxy: Any, ws_uri: Any, deadline: Any, **kw: Any) -> Any:
        if not intercepting():
            return original(proxy, ws_uri, deadline, **kw)

        def opener(sock: MemorySocket) -> Any:
            return _secured(sock, original(proxy, ws_uri, deadline, **kw))

        return MemorySocket((ws_uri.host, ws_uri.port), _dispatch, opener)

    return connect_proxy


def _tls_in_tls(original: Any) -> Any:
    """``SSLSSLSocket`` (TLS to the target inside an HTTPS proxy's TLS, ``proxy_ssl=``): a
    MemorySocket is handed back as it is, the wrapping kept for a relay."""

    def wrap(sock: Any, context: ssl.SSLContext, server_hostname: str | None = None) -> Any:
        if isinstance(sock, MemorySocket):
            sock.tls = lambda real: original(real, context, server_hostname=server_hostname)
            return sock
        return original(sock, context, server_hostname=server_hostname)

    return wrap


class _Selector:
    """The selector websockets' receiving thread waits on before each read (17.3+): a
    `MemorySocket` with a chunk due now is reported ready at once, with no system call (a
    bytewise replay reads thousands of one-byte chunks); anything else waits on the real one."""

    def __init__(self, real: Any) -> None:
        self._real = real
        self._memory: MemorySocket | None = None
        self._key: Any = None

    def register(self, fileobj: Any, events: int, data: Any = None) -> Any:
        key = self._real.register(fileobj, events, data)
        if isinstance(fileobj, MemorySocket):
            self._memory, self._key = fileobj, key
        return key

    def select(self, timeout: float | None = None) -> Any:
        if self._memory is not None and self._memory.ready():
            return [(self._key, self._key.events)]
        return self._real.select(timeout)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    def __enter__(self) -> _Selector:
        return self

    def __exit__(self, *exc: object) -> None:
        self._real.close()


def _selectors(real: types.ModuleType) -> types.ModuleType:
    """``websockets.sync.connection``'s ``selectors`` global, its ``DefaultSelector`` a `_Selector`."""
    shim = types.ModuleType(real.__name__)
    shim.__dict__.update(real.__dict__)
    shim.DefaultSelector = lambda: _Selector(real.DefaultSelector())  # type: ignore[attr-defined]
    return shim


def _wrap(original: Any) -> Any:
    def wrap_socket(self: ssl.SSLContext, sock: Any, *args: Any, **kw: Any) -> Any:
        if isinstance(sock, MemorySocket):
            name = kw.get("server_hostname")
            sock.tls = lambda real: _real_wrap(self, real, server_hostname=name)
            return sock
        return original(self, sock, *args, **kw)

    return wrap_socket


def _recv(original: Any) -> Any:
    """``Connection.recv(timeout=)`` on a replayed session that stalls longer than ``timeout``
    times out at once, as its own timeout does (no sleep), and a stall the keepalive ends first
    ends as the keepalive ends it (`MemorySocket.stalled`): a message already received is still
    returned first. Under ``instant`` timing a stall neither ends is skipped
    (`MemorySocket.skip_stall`: with a warning when ``timeout`` is None)."""

    def recv(self: Any, timeout: float | None = None, *args: Any, **kwargs: Any) -> Any:
        # websockets 17.1+ warns a connect() used without `with` at its first call, pointing two
        # frames up: warned from here, that is the caller's line, not this wrapper's
        getattr(self, "maybe_raise_legacy_warning", lambda: None)()
        sock = getattr(self, "socket", None)
        if (timeout is not None and timeout <= 0) or not isinstance(sock, MemorySocket):
            return original(self, timeout, *args, **kwargs)
        try:  # a message already received comes first
            return original(self, 0, *args, **kwargs)
        except TimeoutError:
            pass
        dog = sock.stalled(timeout)
        try:  # (received while the reading thread got to the stall)
            return original(self, 0, *args, **kwargs)
        except TimeoutError:
            pass
        if dog is not None:
            sock.expire(dog)  # the keepalive ends the stall: recv raises its close
            return original(self, timeout, *args, **kwargs)
        if timeout is not None and sock.stalls_past(timeout):
            raise TimeoutError(f"timed out in {timeout:.1f}s")
        sock.skip_stall(warn=timeout is None)  # (instant timing: nothing ends it, it is not waited)
        return original(self, timeout, *args, **kwargs)

    return recv


def _start_keepalive(original: Any) -> Any:
    """``Connection.start_keepalive`` (15.0+) on a replayed session: a stall past the keepalive
    (``ping_interval``, ``ping_timeout``) fails the connection as its keepalive thread does (close
    code 1011, "keepalive ping timeout"), at once."""

    def start_keepalive(self: Any) -> None:
        original(self)
        sock = getattr(self, "socket", None)
        if not isinstance(sock, MemorySocket):
            return

        def expire() -> None:
            from websockets.frames import CloseCode

            with self.send_context():
                self.protocol.fail(CloseCode.INTERNAL_ERROR, "keepalive ping timeout")

        ends = keepalive(self.ping_interval, self.ping_timeout, _timing.clock.now())
        sock.watchdogs.append(Watchdog("keepalive", ends, expire))

    return start_keepalive


def patches() -> list[Patch]:
    """The ``socket`` global of ``websockets.sync.client``, ``SSLContext.wrap_socket``,
    ``Connection.recv`` (a stall longer than its ``timeout=`` ends as that timeout does),
    from 15.0, its proxy openers and ``SSLSSLSocket`` (`_through_proxy`), and
    ``Connection.start_keepalive`` (so does a stall longer than the keepalive) and,
    from 17.3, the ``selectors`` global of ``websockets.sync.connection`` (`_Selector`)."""
    # sys.modules' module: `import a.b.c as c` takes the package's attribute, which may be a
    # module an in-process pytest run dropped from sys.modules (patching it patches nothing)
    client = importlib.import_module("websockets.sync.client")
    connection = importlib.import_module("websockets.sync.connection")

    found = [
        Patch(client, "socket", _shim),
        Patch(ssl.SSLContext, "wrap_socket", _wrap),
        Patch(connection.Connection, "recv", _recv),
    ]
    for name in ("connect_http_proxy", "connect_socks_proxy"):  # 15.0+: proxies
        if hasattr(client, name):
            found.append(Patch(client, name, _through_proxy))
    if hasattr(client, "SSLSSLSocket"):
        found.append(Patch(client, "SSLSSLSocket", _tls_in_tls))
    if hasattr(connection.Connection, "start_keepalive"):  # 15.0+: the sync client has a keepalive
        found.append(Patch(connection.Connection, "start_keepalive", _start_keepalive))
    if hasattr(connection, "selectors"):  # 17.3+: a selector before each read (issue 35: bytewise speed)
        found.append(Patch(connection, "selectors", _selectors))
    return found


def hook() -> str:
    """Where the patches go (for ``ssemock doctor``)."""
    import websockets.sync.client  # noqa: F401  (ImportError: no sync client here)

    return "websockets.sync.client.socket, ssl.SSLContext.wrap_socket, websockets.sync.connection.Connection.recv"
