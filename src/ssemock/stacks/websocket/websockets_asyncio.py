"""The ``websockets`` asyncio client (13.1+), and every SDK built on it (openai's
``realtime.connect``/``responses.connect`` subclass its ``connect``; google-genai aliases it).

The ``connect`` names are left alone: the hook is the method where ``connect`` opens its TCP
connection (``open_tcp_connection`` from 17.0, ``create_connection`` in 13.1 to 16.x), looked up
on the instance at call time, so aliases and subclasses go through it. It dispatches the
handshake (URL and the user's headers) to the players first:

* replay: the client's own connection object gets a `ssemock.stacks.websocket.memory.MemoryTransport`
  over the recorded conversation (no socket, no TLS: the hook sits above both);
* record: the real connection is opened by the library's own code (proxies, ``ssl=``, ...) under
  `ssemock.stacks.passing`, and both directions are teed into the recorder;
* an allowed host or a route of the user's: the real connection, untouched.
"""

from __future__ import annotations

import asyncio
import importlib
from typing import Any

import httpx
from respx.models import PassThrough

from .. import STACK_KEY, Patch, RecordSession, dispatch, intercepting, passing
from .memory import MemoryTransport, TeeTransport, Watchdog, keepalive, tee_protocol

__all__ = [
    "ERRORS",
    "TRANSPORT_KEY",
    "handshake_request",
    "hook",
    "keepalive_watchdog",
    "patches",
    "uri_text",
]

TRANSPORT_KEY = "ssemock.transport"
"""The extension that tags a handshake dispatched by a WebSocket stack (value ``"websocket"``)."""


class _Errors:
    """The exceptions a faulted replay raises (the connection's own close handles most)."""

    RemoteProtocolError = ConnectionError
    ReadTimeout = TimeoutError


ERRORS = _Errors


def handshake_request(url: str, headers: Any, stack: str) -> httpx.Request:
    """The ``httpx.Request`` a WebSocket stack dispatches for a handshake to ``url``."""
    pairs: list[tuple[str, str]] = []
    if headers is not None:
        items = (
            headers.raw_items()
            if hasattr(headers, "raw_items")
            else (headers.items() if hasattr(headers, "items") else headers)
        )
        pairs = [(str(k), str(v)) for k, v in items]
    return httpx.Request("GET", url, headers=pairs, extensions={STACK_KEY: stack, TRANSPORT_KEY: "websocket"})


def _uri(self: Any) -> Any:
    if hasattr(self, "ws_uri"):
        return self.ws_uri
    from websockets.uri import parse_uri

    return parse_uri(self.uri)


def uri_text(uri: Any) -> str:
    """The URL of a websockets ``WebSocketURI`` (the port only when not the scheme's default)."""
    scheme = "wss" if uri.secure else "ws"
    port = "" if uri.port == (443 if uri.secure else 80) else f":{uri.port}"
    host = f"[{uri.host}]" if ":" in uri.host else uri.host
    return f"{scheme}://{host}{port}{uri.resource_name}"


def _open(original: Any) -> Any:
    async def open_connection(self: Any) -> Any:
        kw = getattr(self, "create_connection_kwargs", None)
        if kw is None:
            kw = getattr(self, "connection_kwargs", {})
        if not intercepting() or kw.get("sock") is not None or kw.get("unix"):
            return await original(self)
        uri = _uri(self)
        request = handshake_request(uri_text(uri), getattr(self, "additional_headers", None), "websockets")
        try:
            answer = dispatch(request)
        except RecordSession as rec:
            with passing(uri.host):
                connection = await original(self)
            connection.transport = TeeTransport(connection.transport, rec.recorder)
            tee_protocol(connection, rec.recorder)
            return connection
        except PassThrough:
            with passing(uri.host):
                return await original(self)
        conversation = answer.extensions["ssemock.conversation"]
        timing = answer.extensions["ssemock.timing"]
        factory = self.factory if hasattr(self, "factory") else self.protocol_factory
        connection = factory(uri)
        loop = asyncio.get_running_loop()
        transport = MemoryTransport(loop, connection, conversation, timing, (uri.host, uri.port))
        transport.watchdogs.append(keepalive_watchdog(connection, transport))
        connection.connection_made(transport)
        return connection

    return open_connection


_failing: set[asyncio.Task[None]] = set()  # keepalive failures under way (kept from the collector)


def keepalive_watchdog(connection: Any, transport: MemoryTransport) -> Watchdog:
    """The connection's keepalive (``ping_interval``, ``ping_timeout``) on a replayed session: a
    stall past it fails the connection as the keepalive does (close code 1011, "keepalive ping
    timeout"), at once."""

    def expire() -> None:
        from websockets.frames import CloseCode

        async def fail() -> None:
            try:
                async with connection.send_context():
                    connection.protocol.fail(CloseCode.INTERNAL_ERROR, "keepalive ping timeout")
            except Exception:  # closed meanwhile (ConnectionClosed): nothing left to end
                pass

        task = connection.loop.create_task(fail())
        _failing.add(task)
        task.add_done_callback(_failing.discard)

    ends = keepalive(
        getattr(connection, "ping_interval", None),
        getattr(connection, "ping_timeout", None),
        transport.opened,
    )
    return Watchdog("keepalive", ends, expire, owner=connection)


def _init_13_0(original: Any) -> Any:
    """13.0.x: ``connect.__init__`` creates the ``loop.create_connection(factory, ...)`` coroutine
    that ``__await__`` awaits (no method in between), so the hook wraps ``__init__`` and swaps
    that coroutine for one that dispatches the handshake first (`_opened_13_0`)."""

    def __init__(self: Any, uri: str, *args: Any, **kwargs: Any) -> None:
        original(self, uri, *args, **kwargs)
        made = getattr(self, "_create_connection", None)
        if not intercepting() or kwargs.get("sock") is not None or kwargs.get("unix"):
            return
        if getattr(getattr(made, "cr_code", None), "co_name", None) != "create_connection":
            return
        self._create_connection = _opened_13_0(made, uri, kwargs.get("additional_headers"))

    return __init__


async def _opened_13_0(made: Any, uri: str, headers: Any) -> Any:
    """What ``await loop.create_connection(factory, ...)`` returns in websockets 13.0.x: the real
    one (record: teed; an allowed host: untouched) or an in-memory transport (replay)."""
    from websockets.uri import parse_uri

    wsuri = parse_uri(uri)
    try:
        answer = dispatch(handshake_request(uri_text(wsuri), headers, "websockets"))
    except RecordSession as rec:
        with passing(wsuri.host):
            _, connection = await made
        connection.transport = TeeTransport(connection.transport, rec.recorder)
        tee_protocol(connection, rec.recorder)
        return connection.transport, connection
    except PassThrough:
        with passing(wsuri.host):
            return await made
    except BaseException:
        made.close()
        raise
    factory = made.cr_frame.f_locals["protocol_factory"]  # (the arguments of a coroutine not yet run)
    made.close()
    connection = factory()
    loop = asyncio.get_running_loop()
    transport = MemoryTransport(
        loop,
        connection,
        answer.extensions["ssemock.conversation"],
        answer.extensions["ssemock.timing"],
        (wsuri.host, wsuri.port),
    )
    transport.watchdogs.append(keepalive_watchdog(connection, transport))
    connection.connection_made(transport)
    return transport, connection


def _tcp_step(client: Any) -> str | None:
    """The name of ``connect``'s TCP step in this version (None: 13.0.x, where there is none)."""
    for name in ("open_tcp_connection", "create_connection"):
        if hasattr(client.connect, name):
            return name
    return None


def patches() -> list[Patch]:
    """The hook on ``websockets.asyncio.client.connect``'s TCP step, by version (13.0.x: on
    ``connect.__init__``)."""
    # sys.modules' module: `import a.b.c as c` takes the package's attribute, which may be a
    # module an in-process pytest run dropped from sys.modules (patching it patches nothing)
    client = importlib.import_module("websockets.asyncio.client")

    name = _tcp_step(client)
    if name is None:
        return [Patch(client.connect, "__init__", _init_13_0)]
    return [Patch(client.connect, name, _open)]


def hook() -> str:
    """Where the patch goes in the installed ``websockets`` (for ``ssemock doctor``)."""
    # sys.modules' module: `import a.b.c as c` takes the package's attribute, which may be a
    # module an in-process pytest run dropped from sys.modules (patching it patches nothing)
    client = importlib.import_module("websockets.asyncio.client")

    return f"websockets.asyncio.client.connect.{_tcp_step(client) or '__init__'}"
