"""Re-chunking strategies: where chunk boundaries fall. The bytes never change.

A strategy maps a body and its recorded chunk ends to new chunk ends (strictly increasing byte
offsets, the last one ``len(body)``). Every strategy is deterministic and has a short name
(``"mid_utf8"``, ``"fixed:3"``, ``"random:7"``) so a failing test id tells how to reproduce it.
"""

from __future__ import annotations

import bisect
import random as _random
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

__all__ = [
    "ALL", "At", "Chunking", "at", "as_recorded", "bytewise", "coalesced", "fixed", "get", "mid_line",
    "mid_utf8", "per_event", "random",
]

Ends = list[int]
_LINE = re.compile(rb"[^\r\n]+")
_EVENT_END = re.compile(rb"(?:\r\n|\r(?!\n)|\n)(?:\r\n|\r|\n)")  # a line ending, then a blank line


@dataclass(frozen=True)
class Chunking:
    """A named, pure re-chunking strategy."""

    name: str
    split: Callable[[bytes, Sequence[int]], Ends]
    normalized: bool = False  # split already returns valid ends (skip the sort)

    def ends(self, body: bytes, recorded: Sequence[int] | None = None) -> Ends:
        """New chunk end offsets for ``body`` (``recorded``: the ends as recorded)."""
        if not body:
            return []
        if not recorded:
            recorded = [len(body)]
        if self.normalized and recorded[-1] == len(body):
            ends = self.split(body, recorded)
            return ends if type(ends) is list else list(ends)  # the built-in splits give new lists
        return _normalize(self.split(body, recorded), len(body))

    def __call__(self, body: bytes, recorded: Sequence[int] | None = None) -> list[bytes]:
        """The body cut into chunks by this strategy."""
        starts = [0, *self.ends(body, recorded)]
        return [body[a:b] for a, b in zip(starts, starts[1:])]

    def __str__(self) -> str:
        return self.name


def _normalize(ends: Sequence[int], size: int) -> Ends:
    """Sorted, unique, in (0, size], always ending at size."""
    out = sorted({e for e in ends if 0 < e < size})
    out.append(size)
    return out


def _as_recorded(body: bytes, recorded: Sequence[int]) -> Ends:
    return list(recorded)


def _bytewise(body: bytes, recorded: Sequence[int]) -> Ends:
    return list(range(1, len(body) + 1))


def _coalesced(body: bytes, recorded: Sequence[int]) -> Ends:
    return [len(body)]


def event_ends(body: bytes, sse: bool | None = None) -> Ends:
    """End offset of every SSE event (after its blank line), or of every line for JSON lines.

    ``sse=None`` guesses: SSE when the body has a blank line.
    """
    ends = _blank_line_ends(body) if sse is not False else []
    if not ends and sse is not True:
        ends = [m.end() for m in re.finditer(rb"\n", body)]
    return ends


def _blank_line_ends(body: bytes) -> Ends:
    """Ends of ``_EVENT_END`` matches; with only ``\n`` line endings, found by ``bytes.find``
    (several times faster than the regex on a large body)."""
    if b"\r" in body:
        return [m.end() for m in _EVENT_END.finditer(body)]
    ends, find, pos = [], body.find, body.find(b"\n\n")
    while pos >= 0:
        pos += 2
        ends.append(pos)
        pos = find(b"\n\n", pos)
    return ends


def _per_event(body: bytes, recorded: Sequence[int]) -> Ends:
    return event_ends(body)


def _mid_line(body: bytes, recorded: Sequence[int]) -> Ends:
    """A cut in the middle of every line (lines of one byte are cut after it)."""
    ends = []
    for m in _LINE.finditer(body):
        ends.append((m.start() + m.end() + 1) // 2 if m.end() - m.start() > 1 else m.end())
        ends.append(m.end())
    return ends


_UTF8_LEAD = re.compile(rb"[\xc0-\xff](?=[\x80-\xbf])")


def _utf8_cuts(body: bytes) -> Ends:
    """One cut inside every multi-byte UTF-8 character (after its lead byte)."""
    return [m.end() for m in _UTF8_LEAD.finditer(body)]


def _mid_utf8(body: bytes, recorded: Sequence[int]) -> Ends:
    """Cut inside every multi-byte character; lines without one are cut mid-line."""
    cuts = _utf8_cuts(body)
    if not cuts:
        return _mid_line(body, recorded)
    out = list(cuts)
    for m in _LINE.finditer(body):
        if bisect.bisect_right(cuts, m.start()) == bisect.bisect_left(cuts, m.end()):
            out.append((m.start() + m.end() + 1) // 2)
        out.append(m.end())
    return out


as_recorded = Chunking("as_recorded", _as_recorded, normalized=True)
bytewise = Chunking("bytewise", _bytewise, normalized=True)
coalesced = Chunking("coalesced", _coalesced, normalized=True)
per_event = Chunking("per_event", _per_event)
mid_line = Chunking("mid_line", _mid_line)
mid_utf8 = Chunking("mid_utf8", _mid_utf8)


def fixed(n: int) -> Chunking:
    """Chunks of ``n`` bytes (the last may be shorter)."""
    if n < 1:
        raise ValueError(f"fixed(n) needs n >= 1, got {n}")
    return Chunking(f"fixed:{n}", lambda body, _rec: [*range(n, len(body), n), len(body)], normalized=True)


def random(seed: int = 0, average_size: int = 16, size_variation: int = 12) -> Chunking:
    """Seeded random sizes around ``average_size`` +- ``size_variation`` (Toxiproxy's slicer)."""
    if average_size < 1 or size_variation < 0:
        raise ValueError("random() needs average_size >= 1 and size_variation >= 0")
    lo, hi = max(1, average_size - size_variation), average_size + size_variation

    def split(body: bytes, _rec: Sequence[int]) -> Ends:
        rng = _random.Random(seed)
        ends, pos = [], 0
        while pos < len(body):
            pos += rng.randint(lo, hi)
            ends.append(pos)
        return ends

    defaults = average_size == 16 and size_variation == 12
    name = f"random:{seed}" if defaults else f"random:{seed}:{average_size}:{size_variation}"
    return Chunking(name, split)


def _split_at(boundaries: tuple[int, ...]) -> Callable[[bytes, Sequence[int]], list[int]]:
    def split(body: bytes, _recorded: Sequence[int]) -> list[int]:
        return [*boundaries, len(body)]

    return split


@dataclass(frozen=True, eq=False)
class At(Chunking):
    """A chunking with explicit boundaries (byte offsets where one chunk ends and the next starts).

    A :class:`~ssemock.chunking.Chunking`, so it goes wherever one does; boundaries outside
    ``(0, len(body))`` are ignored. Two are equal when their boundaries are.
    """

    boundaries: tuple[int, ...] = ()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, At):
            return self.boundaries == other.boundaries
        return NotImplemented

    def __hash__(self) -> int:
        return hash(("at", self.boundaries))


def at(*boundaries: int) -> At:
    """The chunking that cuts exactly at ``boundaries``: ``at(17, 1043)`` is named ``"at:17,1043"``."""
    cuts = tuple(sorted(set(boundaries)))
    return At(f"at:{','.join(map(str, cuts))}", _split_at(cuts), boundaries=cuts)


ALL: tuple[Chunking, ...] = (as_recorded, bytewise, mid_line, mid_utf8, coalesced, per_event, random(7))

_NAMED = {c.name: c for c in (as_recorded, bytewise, mid_line, mid_utf8, coalesced, per_event)}
_NAME_START = re.compile(r",(?=\s*(?:[A-Za-z]|$))")  # a comma before a name (or the end), not between offsets
_KNOWN = ", ".join([*_NAMED, "fixed:N", "random:SEED[:AVG:VAR]", "at:OFFSET,...", "all"])


def get(name: str | Chunking) -> Chunking:
    """A strategy from its short name: ``"mid_utf8"``, ``"fixed:3"``, ``"random:7"``, ``"random:7:32:8"``."""
    if isinstance(name, Chunking):
        return name
    head, _, rest = name.strip().partition(":")
    if head == "at":
        try:
            return at(*(int(p) for p in rest.split(",") if p.strip()))
        except ValueError:
            raise ValueError(f"bad chunking {name!r}: 'at:' takes comma-separated byte offsets") from None
    try:
        if head in _NAMED and not rest:
            return _NAMED[head]
        args = [int(a) for a in rest.split(":")] if rest else []
        if head == "fixed" and len(args) == 1:
            return fixed(args[0])
        if head == "random" and len(args) in (0, 1, 3):
            return random(*args)
    except ValueError as exc:
        raise ValueError(f"bad chunking {name!r}: {exc}; known: {_KNOWN}") from None
    raise ValueError(f"unknown chunking {name!r}; known: {_KNOWN}")


def resolve(spec: str | Chunking | Iterable[str | Chunking] | None) -> list[Chunking]:
    """A list of strategies from ``"all"``, a name, a comma list, or a list of names/strategies.

    A comma splits names only where a name follows, so ``"coalesced,at:17,40"`` is two."""
    if not spec:
        return [as_recorded]
    if isinstance(spec, Chunking):
        return [spec]
    if isinstance(spec, str):
        if spec.strip() == "all":
            return list(ALL)
        return [get(part) for part in _NAME_START.split(spec) if part.strip()]
    return [c for item in spec for c in resolve(item)]
