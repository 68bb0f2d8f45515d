"""Response bodies and WebSocket messages scanned while they were recorded
(`ssemock.scan.incremental`, `ssemock.scan.incremental_messages`): the scan at save
(`ssemock.scan.walk.scan_interaction`) takes their findings instead of scanning them again, as
long as the response (the session) lives and still holds what was scanned."""

from __future__ import annotations

import weakref
from typing import Any, Protocol

__all__ = [
    "BodyScanned",
    "MessagesScanned",
    "messages_scanned",
    "prescanned",
    "prescanned_messages",
    "scanned_as_recorded",
]


class BodyScanned(Protocol):
    """A response body scanned as it arrived (`ssemock.scan.incremental.BodyScan`)."""

    def findings(self, response: Any) -> list[Any] | None:
        """What the scan at save finds in ``response``'s body (as interaction 0), or None when this
        scan cannot tell (a header the scan reads is not what it was scanned with)."""


_SCANNED: dict[int, tuple[weakref.ref[Any], BodyScanned, bytes]] = {}


def scanned_as_recorded(response: Any, scanned: BodyScanned, body: bytes) -> None:
    """Let the scan at save take ``response``'s body findings from ``scanned`` while the response
    lives and its body is ``body`` (the very object scanned)."""
    key = id(response)
    _SCANNED[key] = (weakref.ref(response, lambda _: _SCANNED.pop(key, None)), scanned, body)


def prescanned(response: Any) -> list[Any] | None:
    """The findings in ``response``'s body scanned as it was recorded, or None (not scanned so,
    or its body or headers changed since)."""
    done = _SCANNED.get(id(response))
    if done is None:
        return None
    ref, scanned, body = done
    if ref() is not response or body is not getattr(response, "body", None):
        return None
    return scanned.findings(response)


class MessagesScanned(Protocol):
    """A WebSocket session's messages scanned as they arrived
    (`ssemock.scan.incremental_messages.MessageScan`)."""

    def adopt(self, scan: Any) -> bool:
        """Hand the scan at save (`ssemock.scan.walk._Scan`, at the session's messages) what it
        would find in them, or False when it must scan them itself."""

    def holds(self, messages: list[Any]) -> bool:
        """Whether ``messages`` are the very messages scanned, in order."""


_SESSIONS: dict[int, tuple[weakref.ref[Any], MessagesScanned]] = {}


def messages_scanned(session: Any, scanned: MessagesScanned) -> None:
    """Let the scan at save take ``session``'s message findings from ``scanned`` while the session
    lives and holds the messages scanned."""
    key = id(session)
    _SESSIONS[key] = (weakref.ref(session, lambda _: _SESSIONS.pop(key, None)), scanned)


def prescanned_messages(session: Any) -> MessagesScanned | None:
    """The scan of ``session``'s messages done as they arrived, or None (not scanned so, or its
    messages changed since)."""
    done = _SESSIONS.get(id(session))
    if done is None:
        return None
    ref, scanned = done
    messages = session.messages
    return scanned if ref() is session and scanned.holds(messages) else None
