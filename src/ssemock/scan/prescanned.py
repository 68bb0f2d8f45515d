"""Response bodies and WebSocket messages scanned while they were recorded
(`ssemock.scan.incremental`, `ssemock.scan.incremental_messages`): the scan at save
(`ssemock.scan.walk.scan_interaction`) takes their findings instead of scanning them again, as
long as the response (the session) lives and still holds what was scanned."""

from __future__ import annotations

import weakref
from typing import Any, Generic, Protocol, TypeVar

__all__ = [
    "BodyScanned",
    "MessagesScanned",
    "messages_scanned",
    "prescanned",
    "prescanned_messages",
    "scanned_as_recorded",
]

T = TypeVar("T")


class BodyScanned(Protocol):
    """A response body scanned as it arrived (`ssemock.scan.incremental.BodyScan`)."""

    def findings(self, response: Any) -> list[Any] | None:
        """What the scan at save finds in ``response``'s body (as interaction 0), or None when this
        scan cannot tell (a header the scan reads is not what it was scanned with)."""


class _ByObject(Generic[T]):
    """A value kept for an object while it lives, found by the object's identity (a response or
    a session is a dataclass: it does not hash)."""

    def __init__(self) -> None:
        self._held: dict[int, tuple[weakref.ref[Any], T]] = {}

    def put(self, owner: Any, value: T) -> None:
        key = id(owner)
        self._held[key] = (weakref.ref(owner, lambda _: self._held.pop(key, None)), value)

    def get(self, owner: Any) -> T | None:
        held = self._held.get(id(owner))
        return held[1] if held is not None and held[0]() is owner else None


_BODIES: _ByObject[tuple[BodyScanned, bytes]] = _ByObject()


def scanned_as_recorded(response: Any, scanned: BodyScanned, body: bytes) -> None:
    """Let the scan at save take ``response``'s body findings from ``scanned`` while the response
    lives and its body is ``body`` (the very object scanned)."""
    _BODIES.put(response, (scanned, body))


def prescanned(response: Any) -> list[Any] | None:
    """The findings in ``response``'s body scanned as it was recorded, or None (not scanned so,
    or its body or headers changed since)."""
    done = _BODIES.get(response)
    if done is None or done[1] is not getattr(response, "body", None):
        return None
    return done[0].findings(response)


class MessagesScanned(Protocol):
    """A WebSocket session's messages scanned as they arrived
    (`ssemock.scan.incremental_messages.MessageScan`)."""

    def adopt(self, scan: Any) -> bool:
        """Hand the scan at save (`ssemock.scan.walk._Scan`, at the session's messages) what it
        would find in them, or False when it must scan them itself."""

    def holds(self, messages: list[Any]) -> bool:
        """Whether ``messages`` are the very messages scanned, in order."""


_SESSIONS: _ByObject[MessagesScanned] = _ByObject()


def messages_scanned(session: Any, scanned: MessagesScanned) -> None:
    """Let the scan at save take ``session``'s message findings from ``scanned`` while the session
    lives and holds the messages scanned."""
    _SESSIONS.put(session, scanned)


def prescanned_messages(session: Any) -> MessagesScanned | None:
    """The scan of ``session``'s messages done as they arrived, or None (not scanned so, or its
    messages changed since)."""
    scanned = _SESSIONS.get(session)
    return scanned if scanned is not None and scanned.holds(session.messages) else None
