"""Reference accumulators: fold a decoded stream into the final message it spells.

The implementation of [`ssemock.accumulate`][ssemock.accumulate], where its public names are documented."""

from __future__ import annotations

from collections.abc import Iterable

from .. import protocols as _protocols
from .base import Accumulated, Choice, Event, ProtocolError, ToolCall

__all__ = [
    "PROTOCOLS",
    "Accumulated",
    "Choice",
    "ProtocolError",
    "ToolCall",
    "accumulate",
    "detect_protocol",
]

PROTOCOLS = _protocols.names()
"""The registered protocol names, in detection order."""


def accumulate(
    events: Iterable[Event],
    protocol: str | None = None,
    *,
    url: str | None = None,
    content_type: str | None = None,
) -> Accumulated:
    """Fold ``events`` into the final message; ``protocol=None`` detects it (see detect_protocol).

    Events after the terminator (``[DONE]``, ``message_stop``, ...) are ignored.
    """
    if protocol is None:
        events = list(events)
        protocol = detect_protocol(events, url=url, content_type=content_type)
    fold = _protocols.get(protocol).fold()
    for position, event in enumerate(events):
        if fold.result.complete:
            break
        fold.at = position
        fold.feed(event)
    return fold.finish()


def detect_protocol(
    events: Iterable[Event] = (),
    *,
    url: str | None = None,
    content_type: str | None = None,
) -> str:
    """The protocol of a stream: from the request URL, else the content type, else the events.

    Events are read until one is telling (it consumes an iterator that far).
    """
    found = _protocols.detect(events, url=url, content_type=content_type)
    if found is None:
        raise ProtocolError(
            f"cannot detect the protocol: nothing in url={url!r}, content_type={content_type!r} "
            "or the events matches any of " + ", ".join(PROTOCOLS)
        )
    return found.name
