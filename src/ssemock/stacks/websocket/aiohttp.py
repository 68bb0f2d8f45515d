"""aiohttp's ``ClientSession.ws_connect``: its upgrade request goes through aiohttp's own code
(headers, key, the 101's checks, ``WebSocketReader``/``WebSocketWriter``); the hook is
``BaseConnector.connect``, which, for a request carrying ``Upgrade: websocket``, dispatches the
handshake and returns a connection whose ``ResponseHandler`` sits on an in-memory transport over
the recorded conversation (replay: no pool, no DNS, no proxy), or the real connection with both
directions teed (record), or the real one untouched (an allowed host, a user's route)."""

from __future__ import annotations

import asyncio
import importlib
from typing import Any

from respx.models import PassThrough

from .. import Patch, RecordSession, dispatch, intercepting, passing
from .memory import MemoryTransport, TeeTransport, Watchdog, tee_protocol
from .websockets_asyncio import ERRORS, handshake_request

__all__ = ["ERRORS", "hook", "patches"]

_SCHEMES = {"http": "ws", "https": "wss", "ws": "ws", "wss": "wss"}


def _connect(original: Any) -> Any:
    async def connect(self: Any, req: Any, *args: Any, **kwargs: Any) -> Any:
        if not intercepting() or req.headers.get("Upgrade", "").lower() != "websocket":
            return await original(self, req, *args, **kwargs)
        url = req.url.with_scheme(_SCHEMES.get(req.url.scheme, req.url.scheme))
        headers = [(k, v) for k, v in req.headers.items() if k.lower() != "sec-websocket-key"]
        try:
            answer = dispatch(handshake_request(str(url), headers, "aiohttp.ws"))
        except RecordSession as rec:
            with passing(req.url.host):
                conn = await original(self, req, *args, **kwargs)
            proto = conn.protocol
            proto.transport = TeeTransport(proto.transport, rec.recorder)
            tee_protocol(proto, rec.recorder)
            _untee_tail(proto)
            return conn
        except PassThrough:
            with passing(req.url.host):
                return await original(self, req, *args, **kwargs)
        from aiohttp.client_proto import ResponseHandler
        from aiohttp.connector import Connection

        loop = asyncio.get_running_loop()
        proto = ResponseHandler(loop)
        proto.connection_made(
            MemoryTransport(
                loop,
                proto,
                answer.extensions["ssemock.conversation"],
                answer.extensions["ssemock.timing"],
                (req.url.host or "", req.url.port or 0),
            )
        )
        self._acquired.add(proto)
        return Connection(self, req.connection_key, proto, loop)

    return connect


def _untee_tail(proto: Any) -> None:
    """``set_parser`` feeds the bytes that came after the 101 (``_tail``) through
    ``data_received`` again: they were recorded as they arrived, so not twice."""
    set_parser, teed = proto.set_parser, proto.data_received

    def again(data: bytes) -> None:
        proto.data_received = teed
        teed.__wrapped__(data)  # the real data_received, not recorded again

    def set_parser_once(*args: Any, **kwargs: Any) -> Any:
        if getattr(proto, "_tail", b""):
            proto.data_received = again
        try:
            return set_parser(*args, **kwargs)
        finally:
            proto.data_received = teed

    proto.set_parser = set_parser_once


def _memory(ws: Any) -> MemoryTransport | None:
    """The in-memory transport under a ``ClientWebSocketResponse``, when it replays."""
    conn = getattr(ws, "_conn", None) or getattr(getattr(ws, "_response", None), "connection", None)
    transport = getattr(getattr(conn, "protocol", None), "transport", None)
    return transport if isinstance(transport, MemoryTransport) else None


def _receive_timeout(ws: Any, timeout: float | None) -> float | None:
    """The timeout ``receive()`` applies: its own, else ``ws_connect``'s ``receive_timeout``."""
    if timeout:
        return timeout
    limits = getattr(ws, "_timeout", None)
    return getattr(limits, "ws_receive", None) or getattr(ws, "_receive_timeout", None)


_AT_ONCE = 1e-9  # a timeout that ends at the loop's next turn


def _receive(original: Any) -> Any:
    """``receive()`` on a replayed session that stalls past its timeout (``receive(timeout=)``,
    ``ws_connect(receive_timeout=)``) times out at once through aiohttp's own timeout (its
    ``TimeoutError``, close code 1006): a message already received still comes first."""

    async def receive(self: Any, timeout: float | None = None) -> Any:
        transport, limit = _memory(self), _receive_timeout(self, timeout)
        if (
            transport is not None
            and limit
            and transport.stalls_past(limit)
            and not transport.ends_within(limit)
        ):
            return await original(self, _AT_ONCE)  # (its heartbeat, ending the stall first, ends it)
        return await original(self, timeout)

    return receive


def _init(original: Any) -> Any:
    """``ClientWebSocketResponse.__init__`` on a replayed session with ``heartbeat=``: a stall
    past the heartbeat's ping and its pong wait (``heartbeat`` x 1.5) ends as aiohttp's own
    missing-pong timer ends it (``ServerTimeoutError``, close code 1006), at once."""

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        transport, beat = _memory(self), getattr(self, "_heartbeat", None)
        expire = getattr(self, "_pong_not_received", None)
        if transport is None or not beat or expire is None:
            return

        def ends(since: float, due: float) -> float | None:
            end = float(since + beat * 1.5)
            return end if end < due else None

        transport.watchdogs.append(Watchdog("heartbeat", ends, expire, owner=self))

    return __init__


def patches() -> list[Patch]:
    """The hook on ``aiohttp.connector.BaseConnector.connect``, and ``ClientWebSocketResponse``'s
    ``receive`` and ``__init__`` (its timeouts on a replayed session)."""
    import sys

    connector = sys.modules.get("aiohttp.connector") or importlib.import_module("aiohttp.connector")
    client_ws = sys.modules.get("aiohttp.client_ws") or importlib.import_module("aiohttp.client_ws")
    return [
        Patch(connector.BaseConnector, "connect", _connect),
        Patch(client_ws.ClientWebSocketResponse, "receive", _receive),
        Patch(client_ws.ClientWebSocketResponse, "__init__", _init),
    ]


def hook() -> str:
    """Where the patch goes (for ``ssemock doctor``)."""
    import aiohttp.connector  # noqa: F401

    return "aiohttp.connector.BaseConnector.connect (ws_connect's upgrade)"
