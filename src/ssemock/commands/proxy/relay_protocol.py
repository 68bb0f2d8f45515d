"""The asyncio protocol uvicorn relays a recorded WebSocket session's client through: its own
(``websockets``' sans-IO one), except that a text message that is not UTF-8 gets close 1007
with its reason and nothing on stderr, where uvicorn logged a traceback (the relay's log line
says the session closed 1007). The replays' reader (`ssemock.framing.websocket.MessageReader`)
answers every other protocol error as the RFC says; uvicorn's protocol already does too."""

from __future__ import annotations

import asyncio

__all__ = ["relay_protocol"]

_NOT_UTF8 = "ssemock proxy: a text message that is not UTF-8"


def relay_protocol() -> type[asyncio.Protocol]:
    """uvicorn's WebSocket protocol, its UTF-8 error answered without a traceback (when it is
    the sans-IO one, uvicorn 0.35+; an older uvicorn's is returned as it is)."""
    from uvicorn.protocols.websockets.auto import AutoWebSocketsProtocol

    try:
        from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
    except ImportError:  # pragma: no cover - depends on the installed uvicorn
        return AutoWebSocketsProtocol  # type: ignore[return-value]
    if AutoWebSocketsProtocol is not WebSocketsSansIOProtocol:  # pragma: no cover - ditto
        return AutoWebSocketsProtocol  # type: ignore[return-value]

    class Relayed(WebSocketsSansIOProtocol):
        def send_receive_event_to_app(self) -> None:
            if self.curr_msg_data_type == "text" and not self.close_sent:
                try:
                    b"".join(self.frames).decode()
                except UnicodeDecodeError:
                    self.frames = []
                    self.conn.send_close(1007, _NOT_UTF8)
                    self.handle_parser_exception()
                    return
            super().send_receive_event_to_app()

    return Relayed
