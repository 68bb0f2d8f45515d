"""Draws of chunk boundaries: the offsets of a body where a boundary tends to break a decoder, by
class (`hazards`, `classify`), and a hypothesis strategy of `At` chunkings that favours them
(`chunkings`; hypothesis is imported lazily, so ``ssemock`` imports without it)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from ..core.extras import require
from . import chunking as _chunking
from .chunking import At, at, event_ends

if TYPE_CHECKING:
    from hypothesis.strategies import SearchStrategy

__all__ = ["BUFFER_SIZES", "HAZARDS", "chunkings", "classify", "hazards"]

_BOM = b"\xef\xbb\xbf"


def _interesting(body: bytes) -> list[int]:
    """Offsets where decoders tend to break: inside multi-byte characters, CRLFs, field prefixes, BOM."""
    size = len(body)
    out: set[int] = set()
    for i, byte in enumerate(body):
        # before a continuation byte (inside a character), or between a CR and an LF
        if i > 0 and (0x80 <= byte < 0xC0 or (byte == 10 and body[i - 1] == 13)):
            out.add(i)
    for m in re.finditer(rb"(?:\A(?:\xef\xbb\xbf)?|(?<=[\r\n]))(?:data|event|id|retry):", body):
        out.update(range(m.start() + 1, min(m.end() + 2, size)))
    if body.startswith(_BOM):
        out.update((1, 2, 3))
    return sorted(b for b in out if 0 < b < size)


def chunkings(body: bytes, max_boundaries: int | None = None) -> SearchStrategy[At]:
    """A hypothesis strategy of [`At`][ssemock.strategies.At] chunkings of ``body``, shrinking toward fewer boundaries.

    Boundaries are drawn from ``(0, len(body))``, half of them from the offsets where decoders
    tend to break (inside multi-byte characters, between CR and LF, in ``data:``/``event:``/
    ``id:``/``retry:`` prefixes, in a BOM) when the body has any. A failing example shrinks to
    as few boundaries as still fail, each as early in the body as it can be.
    """
    require("hypothesis", "explore", "ssemock.strategies.chunkings")
    from hypothesis import strategies as st

    size = len(body)
    if size < 2 or max_boundaries == 0:
        return st.just(at())
    limit = size - 1 if max_boundaries is None else min(max_boundaries, size - 1)
    offsets: SearchStrategy[int] = st.integers(1, size - 1)
    special = _interesting(body)
    if special:
        offsets = st.one_of(st.sampled_from(special), offsets)
    return st.lists(offsets, unique=True, max_size=limit).map(lambda cuts: at(*cuts))


BUFFER_SIZES = (64, 1024, 4096, 8192)
"""Read sizes clients and their libraries buffer by (a boundary or a line ending at a multiple of one of them lands at the end of the client's own buffer)"""
HAZARDS = (
    "utf8-2",
    "utf8-3",
    "utf8-4",
    "cr|lf",
    "field",
    "data-prefix",
    "bom",
    "before-event-end",
    "event-end",
    "after-event-end",
    "buffer-multiple",
)
"""The hazard classes [`hazards`][ssemock.strategies.hazards] finds, in the order a coverage report lists them."""
_FIELD = re.compile(rb"(?:\A(?:\xef\xbb\xbf)?|(?<=[\r\n]))(data|event|id|retry):")


def hazards(body: bytes, content_type: str | None = None) -> dict[str, list[int]]:
    """The offsets in ``(0, len(body))`` where a chunk boundary tends to break a decoder, by class:
    inside a 2-, 3- or 4-byte UTF-8 character, between a CR and its LF, inside a field name
    (``event``, ``id``, ``retry`` and their colon), inside the ``data:`` prefix, inside a BOM, one
    byte before, at, and one byte after an event's end, and at (and next to) multiples of the
    common buffer sizes. A class with no offset in the body is left out."""
    size = len(body)
    out: dict[str, set[int]] = {}

    def add(name: str, offsets: Iterable[int]) -> None:
        kept = {o for o in offsets if 0 < o < size}
        if kept:
            out.setdefault(name, set()).update(kept)

    for m in re.finditer(rb"[\xc2-\xf4][\x80-\xbf]+", body):
        width = 2 if body[m.start()] < 0xE0 else 3 if body[m.start()] < 0xF0 else 4
        add(f"utf8-{width}", range(m.start() + 1, min(m.start() + width, m.end())))
    add("cr|lf", (m.start() + 1 for m in re.finditer(rb"\r\n", body)))
    for m in _FIELD.finditer(body):
        add("data-prefix" if m.group(1) == b"data" else "field", range(m.start() + 1, min(m.end() + 2, size)))
    if body.startswith(_BOM):
        add("bom", (1, 2, 3))
    ends = _chunking.framed_event_ends(body, content_type) if content_type is not None else event_ends(body)
    add("before-event-end", (e - 1 for e in ends))
    add("event-end", ends)
    add("after-event-end", (e + 1 for e in ends))
    add("buffer-multiple", (k + d for n in BUFFER_SIZES for k in range(n, size, n) for d in (-1, 0, 1)))
    return {name: sorted(out[name]) for name in HAZARDS if name in out}


def classify(found: dict[str, list[int]], cuts: Sequence[int]) -> list[str]:
    """The hazard classes (of ``found``, from [`hazards`][ssemock.strategies.hazards]) the boundaries ``cuts`` exercise,
    plus ``"1-byte run"`` when three or more follow each other byte by byte."""
    sets = {name: set(offsets) for name, offsets in found.items()}
    hit = [name for name in found if any(c in sets[name] for c in cuts)]
    ordered = sorted(cuts)
    if any(ordered[i + 2] - ordered[i] == 2 for i in range(len(ordered) - 2)):
        hit.append("1-byte run")
    return hit
