"""Reference Server-Sent Events decoder (WHATWG HTML "event stream interpretation")."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ServerSentEvent:
    """One dispatched event, as the WHATWG algorithm defines it."""

    event: str = "message"
    data: str = ""
    id: str = ""
    retry: int | None = None
