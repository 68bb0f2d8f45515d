"""Framings: where a body's events end and how they decode; one module per framing.

A framing module (``ssemock/framing/<name>.py``) defines one module-level object, ``FRAMING``, a
`Framing`:

``name``
    ``"sse"``, ``"ndjson"``, ``"json_array"``, ``"eventstream"``: what a protocol's ``framing``
    names; ``"json"`` is a plain JSON body (one document, no stream).
``decode(body: bytes) -> list[event]``
    the reference decoding of a whole body: ``ServerSentEvent``s, parsed JSON values, eventstream
    messages ... (what the protocol folds). Bad input raises a ``ValueError`` subclass naming the
    position (the line, the frame and its byte offset).
``event_ends(body: bytes) -> list[int]``
    the byte offset where each event ends (the ``per_event`` chunking, ``after_event`` faults,
    diagnostics). Offsets are increasing, within ``len(body)``; bytes after the last end are a
    trailing partial event (or a terminator such as a JSON array's ``]``).
``content_type(media_type) -> bool``
    the media type (lower case, parameters stripped) is this framing's.
``sniff(body: bytes) -> bool``
    without a telling content type, the body looks like this framing.
``stream``
    whether bodies of this framing are streams of events (False for a plain JSON document).
``example``
    ``(content type, body)``: a short body of a few events, as servers write it; the fault x
    framing matrix (``tests/test_fault_matrix.py``) and the table in the docs run every fault on it.

Detection (`detect`) asks every registered framing, in registry order: content type first,
then sniffing; SSE when nothing says yes (a stream that is no framing decodes to no events).
Adding a framing = one module + its tests + one line in `_MODULES`.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["Framing", "all_framings", "decode", "detect", "event_ends", "get"]


@dataclass(frozen=True)
class Framing:
    """One way of cutting a body into events and decoding them."""

    name: str
    decode: Callable[[bytes], list[Any]]
    event_ends: Callable[[bytes], list[int]]
    content_type: Callable[[str], bool]
    sniff: Callable[[bytes], bool]
    stream: bool = (
        True  # False: a whole document (``json``), which stream faults leave alone unless aimed at it
    )
    example: tuple[str, bytes] | None = None  # (content type, a short body): what matrices and docs show


#: The registry: module names under ssemock.framing, in detection order.
_MODULES = (
    "eventstream",
    "sse",
    "document",
    "ndjson",
    "json_array",
)  # eventstream first: its sniff is an exact CRC
# check; json before ndjson: a body that is one whole JSON object (pretty or not) is a document, not JSON lines


def all_framings() -> list[Framing]:
    """Every registered framing, in detection order (modules are imported on first use)."""
    # read from sys.modules each time, never kept here: pytester's in-process runs drop the modules a
    # run imported, and a member kept from an earlier run would decode into that run's classes
    modules = sys.modules
    return [
        (modules.get(name) or importlib.import_module(name)).FRAMING
        for name in (f"{__name__}.{module}" for module in _MODULES)
    ]


def get(name: str) -> Framing:
    """The framing called ``name``; ValueError naming the known ones otherwise."""
    for framing in all_framings():
        if framing.name == name:
            return framing
    raise ValueError(f"unknown framing {name!r}; known: {', '.join(f.name for f in all_framings())}")


def detect(content_type: str | None, body: bytes = b"") -> Framing:
    """The framing of a body: from its content type, else what the body looks like, else SSE."""
    media = (content_type or "").split(";")[0].strip().lower()
    framings = all_framings()
    for framing in framings:
        if media and framing.content_type(media):
            return framing
    for framing in framings:
        if body and framing.sniff(body):
            return framing
    return get("sse")


def decode(body: bytes, content_type: str | None) -> list[Any]:
    """The reference decoding of ``body`` in the framing its content type (or shape) says."""
    return detect(content_type, body).decode(body)


def event_ends(body: bytes, content_type: str | None) -> list[int]:
    """Where each event of ``body`` ends, in the framing its content type (or shape) says."""
    return detect(content_type, body).event_ends(body)
