"""Replaying a refused WebSocket handshake: a recorded upgrade the server answered with an HTTP
error (401, 403, 429 with ``retry-after``, 503 ...) is served as it was recorded (its status,
headers and body, then the connection ends), so the client raises its own library's refusal."""

from __future__ import annotations

from dataclasses import replace

from ...store.model import Interaction
from ...store.websocket import WebSocket
from ...variants.websocket.faults import Refusal, Session, WsFault
from .variants import VariedConversation

__all__ = ["AsRecorded", "refused_conversation"]


class AsRecorded(WsFault):
    """The recorded refusal of an upgrade (what a ``handshake:`` fault serves, from the cassette)."""

    def __init__(self, refusal: Refusal) -> None:
        self.refusal = refusal
        self.name = f"refused as recorded (HTTP {refusal.status})"

    def apply(self, session: Session, attempt: int = 0) -> Session:
        return replace(session, messages=(), refused=self.refusal)


def refused_conversation(interaction: Interaction, index: int, where: str) -> VariedConversation:
    """The conversation that answers a handshake with the refusal ``interaction`` recorded."""
    response = interaction.response
    headers = tuple(
        (k, v) for k, v in response.headers if k not in ("content-length", "transfer-encoding", "connection")
    )
    body = bytes(response.body)
    refusal = Refusal(response.status, (*headers, ("content-length", str(len(body)))), body)
    return VariedConversation(
        replace(interaction, websocket=WebSocket([])), index, where, fault=AsRecorded(refusal)
    )
