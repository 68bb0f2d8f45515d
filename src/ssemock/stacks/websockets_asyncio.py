"""The ``websockets`` asyncio client (13.1+), and every SDK built on it (openai's
``realtime.connect``/``responses.connect`` subclass its ``connect``; google-genai aliases it).

The ``connect`` names are left alone: the hook is the method where ``connect`` opens its TCP
connection (``open_tcp_connection`` from 17.0, ``create_connection`` in 13.1 to 16.x), looked up
on the instance at call time, so aliases and subclasses go through it. It dispatches the
handshake (URL and the user's headers) to the players first:

* replay: the client's own connection object gets a `ssemock.stacks.ws_memory.MemoryTransport`
  over the recorded conversation (no socket, no TLS: the hook sits above both);
* record: the real connection is opened by the library's own code (proxies, ``ssl=``, ...) under
  `ssemock.stacks.passing`, and both directions are teed into the recorder;
* an allowed host or a route of the user's: the real connection, untouched.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
from respx.models import PassThrough

from . import STACK_KEY, Patch, RecordSession, dispatch, intercepting, passing
from .ws_memory import MemoryTransport, TeeTransport, Watchdog, keepalive, tee_protocol

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
    return Watchdog("keepalive", ends, expire)


def patches() -> list[Patch]:
    """The hook on ``websockets.asyncio.client.connect``'s TCP step, by version."""
    import websockets.asyncio.client as client

    name = "open_tcp_connection" if hasattr(client.connect, "open_tcp_connection") else "create_connection"
    return [Patch(client.connect, name, _open)]


def hook() -> str:
    """Where the patch goes in the installed ``websockets`` (for ``ssemock doctor``)."""
    import websockets.asyncio.client as client

    name = "open_tcp_connection" if hasattr(client.connect, "open_tcp_connection") else "create_connection"
    return f"websockets.asyncio.client.connect.{name}"
