"""Where a body's events end, in its framing: the boundaries ``per_event`` chunking, faults and
the cassette layout cut at (SSE blank lines, JSON lines, a JSON array's elements, eventstream
frames). ``ssemock.chunking`` re-exports these."""

from __future__ import annotations

import re

from . import detect
from .eventstream import frame_ends, is_eventstream

__all__ = ["event_ends", "framed_event_ends"]

Ends = list[int]
EVENT_END = re.compile(rb"(?:\r\n|\r(?!\n)|\n)(?:\r\n|\r|\n)")  # a line ending, then a blank line


def event_ends(body: bytes, sse: bool | None = None) -> Ends:
    """End offset of every SSE event (after its blank line), or of every line for JSON lines,
    or of every frame of a binary AWS eventstream body (Bedrock), known by its first prelude.

    ``sse=None`` guesses: SSE when the body has a blank line.
    """
    if sse is not True and is_eventstream(body):
        return frame_ends(body)
    ends = _blank_line_ends(body) if sse is not False else []
    if not ends and sse is not True:
        ends = [m.end() for m in re.finditer(rb"\n", body)]
    return ends


def _blank_line_ends(body: bytes) -> Ends:
    """Ends of ``EVENT_END`` matches; with only ``\n`` line endings, found by ``bytes.find``
    (several times faster than the regex on a large body)."""
    if b"\r" in body:
        return [m.end() for m in EVENT_END.finditer(body)]
    ends, find, pos = [], body.find, body.find(b"\n\n")
    while pos >= 0:
        pos += 2
        ends.append(pos)
        pos = find(b"\n\n", pos)
    return ends


def framed_event_ends(body: bytes, content_type: str | None) -> Ends:
    """End offset of every event of ``body`` in its framing (`ssemock.framing.detect`): SSE
    events, JSON lines, a JSON array's elements (Gemini without ``alt=sse``), eventstream frames.

    A content type a framing claims decides. Else a body that is a JSON array of objects is cut
    at its elements, and any other at what [`event_ends`][ssemock.chunking.event_ends] guesses (an eventstream prelude,
    blank lines, else lines)."""
    found = detect(content_type, body)
    media = (content_type or "").split(";")[0].strip().lower()
    if media and found.content_type(media):
        return found.event_ends(body)
    if found.name == "json_array":
        ends = found.event_ends(body)
        if ends:
            return ends
    return event_ends(body)
