"""Reference accumulators: fold a decoded stream into the final message it spells.

The implementation of [`ssemock.accumulate`][ssemock.accumulate], where its public names are documented."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from .. import protocols as _protocols
from .base import Accumulated, Choice, Event, ProtocolError, ToolCall

__all__ = [
    "PROTOCOLS",
    "Accumulated",
    "Choice",
    "ProtocolError",
    "ToolCall",
    "accumulate",
    "accumulate_session",
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


def accumulate_session(
    events: Sequence[Event],
    protocol: str | None = None,
    *,
    url: str | None = None,
) -> list[Accumulated]:
    """Fold a WebSocket session's received messages into one result per response it holds.

    ``events``: the received messages in order (parsed JSON objects, or their text or bytes).
    ``protocol=None`` detects it from ``url`` (the session's), else from the messages. Responses
    are split by the protocol (``openai.realtime``: by response id, ``response.created`` to
    ``response.done``; ``openai.responses``: one per ``response.create``; ``gemini.live``: one
    per model turn, ending with ``turnComplete``); an error event outside any response is a
    result of its own. A `ProtocolError` names the message's position in the session.
    """
    events = list(events)
    if protocol is None:
        protocol = detect_protocol(events, url=url)
    found = _protocols.get(protocol)
    groups = found.responses(events) if found.responses is not None else [list(range(len(events)))]
    results = []
    for group in groups:
        fold = found.fold()
        for position in group:
            fold.at = position
            fold.feed(events[position])
        results.append(fold.finish())
    return results


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
