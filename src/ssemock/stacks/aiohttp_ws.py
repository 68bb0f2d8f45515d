"""aiohttp's ``ClientSession.ws_connect``: its upgrade request goes through aiohttp's own code
(headers, key, the 101's checks, ``WebSocketReader``/``WebSocketWriter``); the hook is
``BaseConnector.connect``, which, for a request carrying ``Upgrade: websocket``, dispatches the
handshake and returns a connection whose ``ResponseHandler`` sits on an in-memory transport over
the recorded conversation (replay: no pool, no DNS, no proxy), or the real connection with both
directions teed (record), or the real one untouched (an allowed host, a user's route)."""

from __future__ import annotations

import asyncio
from typing import Any

from respx.models import PassThrough

from . import Patch, RecordSession, dispatch, intercepting, passing
from .websockets_asyncio import ERRORS, handshake_request
from .ws_memory import MemoryTransport, TeeTransport, tee_protocol

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


def patches() -> list[Patch]:
    """The hook on ``aiohttp.connector.BaseConnector.connect``."""
    import aiohttp.connector as connector  # (read from sys.modules: aiohttp may be mid-import)

    return [Patch(connector.BaseConnector, "connect", _connect)]


def hook() -> str:
    """Where the patch goes (for ``ssemock doctor``)."""
    import aiohttp.connector  # noqa: F401

    return "aiohttp.connector.BaseConnector.connect (ws_connect's upgrade)"
