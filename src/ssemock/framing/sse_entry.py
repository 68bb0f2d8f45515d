"""The SSE framing: [`ssemock.sse`][ssemock.sse] (the WHATWG reference decoder) as a registry entry.

The decoder itself stays in ``ssemock/sse.py``; this module only registers it and adds where
events end in a body (after each blank line: LF LF, CR CR, CRLF CRLF and mixes).
"""

from __future__ import annotations

from ..sse import Decoder, ServerSentEvent, adecode, decode, iter_decode
from . import Framing
from .ends import event_ends as _event_ends

__all__ = ["FRAMING", "Decoder", "ServerSentEvent", "adecode", "decode", "event_ends", "iter_decode"]


def event_ends(body: bytes) -> list[int]:
    """The byte offset after each blank line that ends an event block (comments count as blocks)."""
    return _event_ends(body, sse=True)


def _decode_body(body: bytes) -> list[ServerSentEvent]:
    return decode([body])


def _never(body: bytes) -> bool:
    return False  # SSE is the fallback when nothing else fits


FRAMING = Framing(
    name="sse",
    decode=_decode_body,
    event_ends=event_ends,
    content_type="text/event-stream".__eq__,
    sniff=_never,
    example=("text/event-stream", b'data: {"n": 1}\n\ndata: {"n": 2}\n\ndata: {"n": 3}\n\ndata: [DONE]\n\n'),
)
