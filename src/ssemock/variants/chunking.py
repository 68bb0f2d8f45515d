"""Re-chunking strategies: where chunk boundaries fall. The bytes never change.

The implementation of [`ssemock.chunking`][ssemock.chunking], where its public names are documented."""

from __future__ import annotations

import bisect
import itertools
import random as _random
import re
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import overload

from ..core.names import unknown
from ..framing.accelerator import slices as _c_slices
from ..framing.ends import Ends, event_ends, framed_event_ends  # re-exported: where chunks are cut

__all__ = [
    "ALL",
    "At",
    "Chunking",
    "Regular",
    "Slices",
    "at",
    "as_recorded",
    "bytewise",
    "coalesced",
    "event_ends",
    "fixed",
    "framed_event_ends",
    "get",
    "mid_line",
    "mid_utf8",
    "per_event",
    "random",
]

_LINE = re.compile(rb"[^\r\n]+")


@dataclass(frozen=True)
class Chunking:
    """A named, pure re-chunking strategy."""

    name: str
    """The name `chunking=` accepts (`"bytewise"`, `"fixed:3"`, ...)."""
    split: Callable[[bytes, Sequence[int]], Ends]
    """`split(body, recorded_ends)` returns the chunk ends for `body`."""
    normalized: bool = False
    """Whether `split` already returns sorted, in-range ends."""
    step: int | None = None
    """For fixed-size chunkings, the chunk size in bytes (`None` otherwise)."""
    # split given the body's content type too (per_event: the framing's events); used when one is known
    typed: Callable[[bytes, Sequence[int], str], Ends] | None = field(default=None, repr=False)
    """Like `split` but also given the content type (for framings that need it), or `None`."""
    needs_end: str | None = field(default=None, repr=False)
    """Why it can only cut a whole body (None: cutting a body that ends at an event boundary
    gives the first chunks of cutting any longer body, so a live stream is cut as it arrives)."""
    by_event: bool = field(default=False, repr=False)
    """Whether it cuts each event on its own: its cuts of a body that ends at an event boundary,
    followed by its cuts of the events after it cut apart, are its cuts of the two together. A
    live stream is then planned one new event at a time, in time proportional to what arrived
    (``fixed:N``, ``random``, ``at:`` count from the body's start: the whole arrival so far is
    re-planned instead)."""

    def ends(
        self, body: bytes, recorded: Sequence[int] | None = None, *, content_type: str | None = None
    ) -> Ends:
        """New chunk end offsets for ``body`` (``recorded``: the ends as recorded; ``content_type``:
        the body's, which tells ``per_event`` the framing: SSE, JSON lines, JSON array, eventstream)."""
        if not body:
            return []
        if not recorded:
            recorded = [len(body)]
        split = self.split
        if content_type is not None and self.typed is not None:
            typed, known = self.typed, content_type

            def split(body: bytes, recorded: Sequence[int]) -> Ends:
                return typed(body, recorded, known)

        if self.normalized and recorded[-1] == len(body):
            ends = split(body, recorded)
            return ends if type(ends) is list else list(ends)  # the built-in splits give new lists
        return _normalize(split(body, recorded), len(body))

    def lazy_ends(
        self, body: bytes, recorded: Sequence[int] | None = None, *, content_type: str | None = None
    ) -> Sequence[int]:
        """[`ends`][ssemock.chunking.Chunking.ends] without a list where none is needed: a [`Regular`][ssemock.chunking.Regular] sequence for
        fixed-size chunkings (``bytewise``, ``fixed:N``), so replaying a 50 MB body byte by byte
        does not hold 50 million offsets, and ``as_recorded``'s the recorded list itself, not a copy
        (read only). Equal (``==``) to what [`ends`][ssemock.chunking.Chunking.ends] returns."""
        if self.step is not None and body:
            return Regular(self.step, len(body))
        if self.split is _as_recorded and type(recorded) is list and recorded and recorded[-1] == len(body):
            return recorded  # a copy per replay cost ~1 ms of a 100,000-chunk replay
        return self.ends(body, recorded, content_type=content_type)

    def __call__(
        self, body: bytes, recorded: Sequence[int] | None = None, *, content_type: str | None = None
    ) -> list[bytes]:
        """The body cut into chunks by this strategy."""
        starts = [0, *self.ends(body, recorded, content_type=content_type)]
        return [body[a:b] for a, b in zip(starts, starts[1:])]

    def __str__(self) -> str:
        return self.name


class _LazySequence:
    """Equality with any sequence of the same items (a list, a tuple, another lazy one)."""

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, (str, bytes)):
            return NotImplemented
        if len(self) != len(other):  # type: ignore[arg-type]
            return False
        return all(a == b for a, b in zip(self, other))  # type: ignore[call-overload]

    __hash__ = None  # type: ignore[assignment]


class Regular(_LazySequence, Sequence[int]):
    """The chunk ends ``step, 2*step, ..., size`` (the last chunk may be shorter), computed on
    demand: as fast as a ``range`` and of constant size, unlike a list of them."""

    __slots__ = ("step", "size")

    def __init__(self, step: int, size: int) -> None:
        if step < 1 or size < 0:
            raise ValueError(f"Regular needs step >= 1 and size >= 0, got {step}, {size}")
        self.step, self.size = step, size

    def __len__(self) -> int:
        return -(-self.size // self.step)

    @overload
    def __getitem__(self, index: int) -> int: ...
    @overload
    def __getitem__(self, index: slice) -> list[int]: ...

    def __getitem__(self, index: int | slice) -> int | list[int]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        n = len(self)
        if index < 0:
            index += n
        if not 0 <= index < n:
            raise IndexError("Regular index out of range")
        return min((index + 1) * self.step, self.size)

    def __iter__(self) -> Iterator[int]:
        if not self.size:
            return iter(())
        return itertools.chain(range(self.step, self.size, self.step), (self.size,))

    def __contains__(self, value: object) -> bool:
        return (
            isinstance(value, int)
            and 0 < value <= self.size
            and (value % self.step == 0 or value == self.size)
        )

    def __repr__(self) -> str:
        return f"Regular(step={self.step}, size={self.size})"


class Slices(_LazySequence, Sequence[bytes]):
    """A body cut at ``ends``, each chunk sliced when it is reached (nothing held but the body and
    the ends; with [`Regular`][ssemock.chunking.Regular] ends, nothing that grows with the number of chunks)."""

    __slots__ = ("body", "ends")

    def __init__(self, body: bytes, ends: Sequence[int]) -> None:
        self.body, self.ends = body, ends

    def __len__(self) -> int:
        return len(self.ends)

    @overload
    def __getitem__(self, index: int) -> bytes: ...
    @overload
    def __getitem__(self, index: slice) -> list[bytes]: ...

    def __getitem__(self, index: int | slice) -> bytes | list[bytes]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        n = len(self.ends)
        if index < 0:
            index += n
        if not 0 <= index < n:
            raise IndexError("Slices index out of range")
        return self.body[self.ends[index - 1] if index else 0 : self.ends[index]]

    def __iter__(self) -> Iterator[bytes]:
        return self.iterate()[0]

    def iterate(self) -> tuple[Iterator[bytes], Iterator[object]]:
        """The chunks, one at a time, and the iterator that drives them (the chunks' own, with the
        accelerator): its ``length_hint`` is the number of chunks not yet handed out."""
        ends = self.ends
        if _c_slices is not None and self.body.__class__ is bytes:  # one C step a chunk, ~4x faster
            if ends.__class__ is list:
                chunks = _c_slices(self.body, ends)
                return chunks, chunks
            if ends.__class__ is Regular:
                chunks = _c_slices(self.body, ends.step, ends.size)
                return chunks, chunks
        # map over slices: every step runs in C, no Python frame per chunk (the accelerator's reference)
        if isinstance(ends, Regular):
            starts = iter(range(0, ends.size, ends.step))
            return map(
                self.body.__getitem__, map(slice, starts, itertools.count(ends.step, ends.step))
            ), starts
        left = iter(ends)
        return map(self.body.__getitem__, map(slice, itertools.chain((0,), ends), left)), left

    def __repr__(self) -> str:
        return f"<Slices: {len(self)} chunks of a {len(self.body)}-byte body>"


def _normalize(ends: Sequence[int], size: int) -> Ends:
    """Sorted, unique, in (0, size], always ending at size."""
    out = sorted({e for e in ends if 0 < e < size})
    out.append(size)
    return out


def _as_recorded(body: bytes, recorded: Sequence[int]) -> Ends:
    return list(recorded)


def _bytewise(body: bytes, recorded: Sequence[int]) -> Ends:
    return list(range(1, len(body) + 1))  # what Chunking.ends gives (its step takes over there)


def _coalesced(body: bytes, recorded: Sequence[int]) -> Ends:
    return [len(body)]


def _per_event(body: bytes, recorded: Sequence[int], content_type: str | None = None) -> Ends:
    return framed_event_ends(body, content_type)


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


as_recorded = Chunking("as_recorded", _as_recorded, normalized=True, by_event=True)
"""The boundaries as recorded: what the server's network actually delivered."""
bytewise = Chunking("bytewise", _bytewise, normalized=True, step=1, by_event=True)
"""One byte per chunk: every boundary a client can meet."""
coalesced = Chunking(
    "coalesced",
    _coalesced,
    normalized=True,
    needs_end="it serves the whole body in one chunk, which only the end completes",
)
"""The whole body in one chunk."""
per_event = Chunking("per_event", _per_event, typed=_per_event, by_event=True)
"""One chunk per event (per SSE block, JSON line or frame)."""
mid_line = Chunking("mid_line", _mid_line, by_event=True)
"""Every chunk ends in the middle of a line."""
mid_utf8 = Chunking("mid_utf8", _mid_utf8, by_event=True)
"""Every chunk ends in the middle of a multi-byte UTF-8 character where there is one."""


def fixed(n: int) -> Chunking:
    """Chunks of ``n`` bytes (the last may be shorter)."""
    if type(n) is not int or n < 1:
        raise ValueError(f"fixed(n) needs a whole number n >= 1, got {n!r}")
    return Chunking(f"fixed:{n}", lambda body, _rec: list(Regular(n, len(body))), normalized=True, step=n)


def random(seed: int = 0, average_size: int = 16, size_variation: int = 12) -> Chunking:
    """Seeded random sizes around ``average_size`` +- ``size_variation`` (Toxiproxy's slicer)."""
    if (
        not all(type(v) is int for v in (seed, average_size, size_variation))
        or average_size < 1
        or size_variation < 0
    ):
        raise ValueError(
            "random() needs whole numbers: a seed, average_size >= 1 and size_variation >= 0, "
            f"got {seed!r}, {average_size!r}, {size_variation!r}"
        )
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

    A [`Chunking`][ssemock.chunking.Chunking], so it goes wherever one does; boundaries outside
    ``(0, len(body))`` are ignored. Two are equal when their boundaries are.
    """

    boundaries: tuple[int, ...] = ()
    """The byte offsets where one chunk ends and the next starts."""

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
"""What `chunking="all"` runs: every named chunking, plus `random(7)`."""

_NAMED = {c.name: c for c in (as_recorded, bytewise, mid_line, mid_utf8, coalesced, per_event)}
_NAME_START = re.compile(r",(?=\s*(?:[A-Za-z]|$))")  # a comma before a name (or the end), not between offsets
_SHOWN = [*_NAMED, "fixed:N", "random:SEED[:AVG:VAR]", "at:OFFSET,...", "all"]
_HEADS = [*_NAMED, "fixed", "random", "at", "all"]


def get(name: str | Chunking) -> Chunking:
    """A strategy from its short name: ``"mid_utf8"``, ``"fixed:3"``, ``"random:7"``, ``"random:7:32:8"``.

    A misspelt name raises one ValueError listing the valid names and the closest one."""
    if isinstance(name, Chunking):
        return name
    if not isinstance(name, str):
        raise ValueError(
            f"a chunking is a name or a Chunking, got {type(name).__name__} {name!r}; "
            f"valid names: {', '.join(_SHOWN)}"
        )
    head, sep, rest = name.strip().partition(":")
    if head in _NAMED and not sep:
        return _NAMED[head]
    if head == "at":
        try:
            return at(*(int(p) for p in rest.split(",") if p.strip()))
        except ValueError:
            raise ValueError(
                f"bad chunking {name!r}: 'at:' takes comma-separated byte offsets, e.g. 'at:17,1043'"
            ) from None
    if head == "fixed" or head == "random":
        form = "fixed:N (N >= 1)" if head == "fixed" else "random, random:SEED or random:SEED:AVG:VAR"
        try:
            args = [int(a) for a in rest.split(":")] if rest else []
        except ValueError:
            raise ValueError(
                f"bad chunking {name!r}: {head} takes whole numbers: {form}; valid: {', '.join(_SHOWN)}"
            ) from None
        if head == "fixed" and len(args) != 1 or head == "random" and len(args) not in (0, 1, 3):
            raise ValueError(f"bad chunking {name!r}: {head} is written {form}; valid: {', '.join(_SHOWN)}")
        try:
            return fixed(*args) if head == "fixed" else random(*args)
        except ValueError as exc:
            raise ValueError(f"bad chunking {name!r}: {exc}; valid: {', '.join(_SHOWN)}") from None
    if head == "mid_header" and not sep:  # a WebSocket and gRPC wire chunking: an HTTP body is cut mid-line
        return Chunking("mid_header", _mid_line)
    if head == "per_message" and not sep:  # a gRPC wire chunking: an HTTP body is cut per event
        return Chunking("per_message", _per_event, typed=_per_event, by_event=True)
    error = unknown("chunking", name, _HEADS, shown=_SHOWN, head=head)
    if head in _NAMED:  # "bytewise:3": a name that takes no argument
        error = ValueError(f"bad chunking {name!r}: {head} takes no argument; valid: {', '.join(_SHOWN)}")
    raise error


def resolve(spec: str | Chunking | Iterable[str | Chunking] | None) -> list[Chunking]:
    """A list of strategies from ``"all"``, a name, a comma list, or a list of names/strategies.

    A comma splits names only where a name follows, so ``"coalesced,at:17,40"`` is two."""
    return resolve_among(spec, every=ALL, get=get)


def get_among(
    name: str | Chunking,
    *,
    named: Mapping[str, Chunking],
    http_only: Collection[str],
    transport: str,
    cuts: str,
    takes: str,
) -> Chunking:
    """`get` over one wire transport's registry (the WebSocket and gRPC wire chunkings read names
    so): ``named`` its chunkings by name, ``random[:SEED[:AVG:VAR]]`` made; an HTTP name of
    ``http_only`` refused saying it does not cut the ``transport``'s ``cuts`` (``"gRPC"``,
    ``"messages"``) and what its ``takes`` (``"call"``) takes; any other name unknown, with the
    closest."""
    if isinstance(name, Chunking):
        return name
    shown = [*named, "random:SEED[:AVG:VAR]", "all"]
    head, sep, rest = name.strip().partition(":")
    if head in named and not sep:
        return named[head]
    if head == "random":
        try:
            args = [int(a) for a in rest.split(":")] if rest else []
            return random(*args)
        except (TypeError, ValueError):
            raise ValueError(
                f"bad chunking {name!r}: random is written random, random:SEED or random:SEED:AVG:VAR"
            ) from None
    if head in http_only:
        raise ValueError(
            f"chunking {name!r} cuts HTTP bodies, not {transport} {cuts}; "
            f"a {transport} {takes} takes {', '.join(shown)}"
        )
    raise unknown(f"{transport} chunking", name, [*named, "random", "all"], shown=shown, head=head)


def resolve_among(
    spec: str | Chunking | Iterable[str | Chunking] | None,
    *,
    every: Sequence[Chunking],
    get: Callable[[str | Chunking], Chunking],
) -> list[Chunking]:
    """`resolve` over one transport's registry: ``every`` is its ``"all"``, ``get`` its lookup by
    name (the WebSocket and gRPC wire chunkings read their specs so too); None or empty: as
    recorded."""
    if not spec:
        return [as_recorded]
    if isinstance(spec, Chunking):
        return [spec]
    if isinstance(spec, str):
        if spec.strip() == "all":
            return list(every)
        return [get(part) for part in _NAME_START.split(spec) if part.strip()]
    if not isinstance(spec, Iterable):
        return [get(spec)]  # the ValueError for a value that is no name
    return [c for item in spec for c in resolve_among(item, every=every, get=get)]
