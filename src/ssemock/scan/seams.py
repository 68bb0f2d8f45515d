"""The searches of a join of pieces none of which holds a shape anchor: only around its seams.

A large stream's window is a join of pieces each searched where it is stored
(`ssemock.scan.large_streams`): an anchor or escape in the join that no piece holds spans a
seam between two, so only the bytes around the seams need a search (`seam_hits`), and whether
that search finds nothing can be told from the pieces as they are, unjoined (`seams_clear`: the
stretches cut from them in one pass of the optional accelerator)."""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Iterator, Sequence

from ..framing.accelerator import seam_stretches as _c_stretches
from .credential_shapes import (
    _BOUNDED,
    _MAX_ANCHOR,
    _MAX_ESCAPE,
    Hits,
    _find_anchors,
    _find_escapes,
    find_hits,
)

__all__ = ["seam_hits", "seams_clear"]

_REACH = max(_MAX_ANCHOR, _MAX_ESCAPE) - 1  # how far from a seam an anchor or escape across it reaches


def _seam_spans(ends: list[int], size: int, reach: int) -> list[list[int]] | None:
    """The stretches `seam_hits` searches around the seams at ``ends`` of a join of ``size`` bytes
    (seams close together as one stretch), or None where they would come to more than a quarter
    of it: the whole is searched then."""
    spans = list[list[int]]()
    for end in ends:
        lo, hi = max(0, end - reach), min(size, end + reach)
        if spans and lo <= spans[-1][1]:
            spans[-1][1] = hi
        elif lo < hi:
            spans.append([lo, hi])
    return None if sum(hi - lo for lo, hi in spans) << 2 > size else spans


def _cut(parts: Sequence[bytes | memoryview], spans: list[list[int]]) -> Iterator[bytes]:
    """The bytes of each span of the join of ``parts`` (in order, none overlapping), cut from them."""
    k, at = 0, 0  # the part the next span starts in, and where that part starts in the join
    for lo, hi in spans:
        while at + len(parts[k]) <= lo:
            at += len(parts[k])
            k += 1
        cut, j, pos = [], k, at
        while pos < hi:
            cut.append(parts[j][max(0, lo - pos) : hi - pos])
            pos += len(parts[j])
            j += 1
        yield b"".join(cut)


def seam_hits(data: bytes, ends: list[int], escapes: bool = False) -> Hits:
    """`find_hits` of ``data``, a join of pieces none of which holds a shape anchor (``ends``: where
    each piece ends in it, in order): an anchor there spans a seam between two pieces, so only the
    bytes around each seam are searched for one (seams close together as one stretch: a search of
    it finds what the search of the whole finds there), all the stretches in one pass. Escapes are
    searched in the whole join, but in those stretches too when no piece holds one either
    (``escapes``) and the search finds them as literals of a few bytes (`_BOUNDED`)."""
    spans = _seam_spans(ends, len(data), _REACH)
    if spans is None:  # seams close together: one pass over it all
        return find_hits(data)
    starts = list(itertools.accumulate((hi - lo + 1 for lo, hi in spans[:-1]), initial=0))
    # the stretches searched in one pass, a newline between two (no anchor nor escape holds one: none spans it)
    stretches = b"\n".join(_cut([data], spans))

    def back(s: int) -> int:  # where an offset in the stretches lies in data
        k = bisect.bisect_right(starts, s) - 1
        return s - starts[k] + spans[k][0]

    anchors = [(i, back(s)) for i, s in _find_anchors(stretches)]
    if escapes and _find_escapes in _BOUNDED:
        return anchors, [back(s) for s in _find_escapes(stretches)]
    return anchors, _find_escapes(data)


def _py_stretches(parts: list[bytes | memoryview], ends: list[int], reach: int) -> bytes | None:
    """The bytes around the seams at ``ends`` of the join of ``parts``, cut from them (a newline
    between two stretches), or None where `_seam_spans` says the whole is searched (the reference
    of the accelerator's pass)."""
    spans = _seam_spans(ends, sum(map(len, parts)), reach)
    return None if spans is None else b"\n".join(_cut(parts, spans))


_stretches = _c_stretches or _py_stretches


def seams_clear(parts: list[bytes | memoryview], ends: list[int]) -> bool:
    """Whether `seam_hits` (``escapes`` set) of the join of ``parts``, none of which holds a shape
    anchor or an escape, finds nothing: told without joining them, the stretches cut from the
    parts. False too where it would search the whole join."""
    if _find_escapes not in _BOUNDED:
        return False
    stretches = _stretches(parts, ends, _REACH)
    return stretches is not None and not _find_anchors(stretches) and not _find_escapes(stretches)
