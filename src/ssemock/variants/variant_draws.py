"""Finding the chunk boundaries a decoder breaks on: a hypothesis strategy and a split minimiser.

The implementation of [`ssemock.strategies`][ssemock.strategies], where its public names are documented."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..store.cassette import Cassette
from . import chunking as _chunking
from . import faults as _faults
from . import transforms as _transforms
from .chunking import At, Chunking, at, event_ends

if TYPE_CHECKING:
    from hypothesis.strategies import SearchStrategy

__all__ = [
    "BUFFER_SIZES",
    "FAULTS",
    "HAZARDS",
    "At",
    "MinimalSplit",
    "Variant",
    "at",
    "chunkings",
    "classify",
    "Space",
    "Tables",
    "describe_boundary",
    "get",
    "hazards",
    "minimal_failing_split",
    "transform_pool",
    "variants",
]

_BOM = b"\xef\xbb\xbf"
_NEWLINE = re.compile(rb"\r\n|\r|\n")


def get(name: str | Chunking) -> Chunking:
    """The same as [`ssemock.chunking.get`][ssemock.chunking.get] (which parses ``"at:17,1043"`` too)."""
    return _chunking.get(name)


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


@dataclass(frozen=True)
class MinimalSplit:
    """A 1-minimal failing split: removing any single one of ``boundaries`` makes the check pass.

    ``ends`` are the chunk ends (``boundaries`` plus ``len(body)``), ``explanation`` says in words
    where each boundary falls, ``calls`` how many times ``fails`` ran.
    """

    ends: list[int]
    """The chunk ends (`boundaries` plus the body's length)."""
    boundaries: list[int]
    """The boundaries: removing any single one makes the check pass."""
    explanation: str
    """Where each boundary falls, in words."""
    calls: int = 0
    """How many times the check ran."""
    chunking: At = field(default_factory=at, compare=False, repr=False)
    """An [`At`][ssemock.strategies.At] chunking that serves exactly this split."""

    def chunks(self, body: bytes) -> list[bytes]:
        """``body`` cut at the boundaries."""
        return self.chunking(body)


def _chunks(body: bytes, cuts: Sequence[int]) -> list[bytes]:
    starts = [0, *cuts]
    stops = [*cuts, len(body)]
    return [body[a:b] for a, b in zip(starts, stops)]


def minimal_failing_split(
    body: bytes,
    fails: Callable[[list[bytes]], bool],
    ends: Sequence[int] | None = None,
) -> MinimalSplit:
    """Shrink a failing split of ``body`` to a 1-minimal set of boundaries, and explain it.

    ``ends`` are the chunk ends of a split under which ``fails(chunks)`` is true (default: byte
    by byte); ``ValueError`` if it is not. Boundaries are removed by delta debugging: first whole
    halves, then smaller and smaller parts, down to single boundaries, until no single removal
    keeps it failing. Later parts are tried first, so of several boundaries that each break the
    decoder, the earliest is kept. When one boundary is to blame, that takes about ``2 log2(n)`` calls for
    ``n`` boundaries; ``k`` remaining boundaries cost ``O(k log n)``.
    """
    size = len(body)
    given = list(range(1, size + 1)) if ends is None else list(ends)
    cuts = sorted({e for e in given if 0 < e < size})
    cache: dict[tuple[int, ...], bool] = {}
    calls = 0

    def test(candidate: list[int]) -> bool:
        nonlocal calls
        key = tuple(candidate)
        if key not in cache:
            calls += 1
            cache[key] = bool(fails(_chunks(body, candidate)))
        return cache[key]

    if not test(cuts):
        raise ValueError(
            f"the given split ({len(cuts)} boundaries, {_names(cuts)}) does not fail: nothing to minimise"
        )
    n = 2
    while cuts:
        if len(cuts) == 1:
            if test([]):
                cuts = []
            break
        n = min(n, len(cuts))
        parts = _partition(cuts, n)
        for part in reversed(parts):  # try removing each part, the last first (keep early boundaries)
            drop = set(part)
            rest = [c for c in cuts if c not in drop]
            if test(rest):
                cuts = rest
                n = max(n - 1, 2)
                break
        else:
            if n >= len(cuts):
                break  # no single boundary can be removed: 1-minimal
            n = min(2 * n, len(cuts))
    split = at(*cuts)
    return MinimalSplit([*cuts, size] if size else [], list(cuts), _explain(body, cuts), calls, split)


def _names(cuts: Sequence[int]) -> str:
    shown = ",".join(map(str, cuts[:8])) + (",..." if len(cuts) > 8 else "")
    return f"at:{shown}"


def _partition(items: list[int], n: int) -> list[list[int]]:
    """``items`` in ``n`` contiguous parts of near-equal size."""
    size, extra = divmod(len(items), n)
    out, pos = [], 0
    for i in range(n):
        step = size + (1 if i < extra else 0)
        out.append(items[pos : pos + step])
        pos += step
    return [p for p in out if p]


def _explain(body: bytes, cuts: Sequence[int]) -> str:
    if not cuts:
        return (
            "fails with no boundary at all (the whole body in one chunk): the failure does not "
            "depend on chunking"
        )
    if len(cuts) == 1:
        return (
            f"fails when a boundary falls at byte {cuts[0]} ({describe_boundary(body, cuts[0])}); "
            "passes with that boundary alone removed"
        )
    listed = [f"{c} ({describe_boundary(body, c)})" for c in cuts]
    joined = ", ".join(listed[:-1]) + " and " + listed[-1]
    return f"fails when boundaries fall at bytes {joined}; passes with any one of them alone removed"


@dataclass(frozen=True)
class _Line:
    start: int  # first byte of the line
    stop: int  # end of its content (its line ending starts here)
    end: int  # after its line ending
    event: int  # 0-based index of the blank-line-framed block it is in


def _lines(body: bytes) -> list[_Line]:
    out: list[_Line] = []
    pos, event = 0, 0
    if body.startswith(_BOM):
        pos = 3
    for m in _NEWLINE.finditer(body, pos):
        out.append(_Line(pos, m.start(), m.end(), event))
        if m.start() == pos:
            event += 1
        pos = m.end()
    if pos < len(body):
        out.append(_Line(pos, len(body), len(body), event))
    return out


def _char_at(body: bytes, b: int) -> tuple[int, bytes] | None:
    """The multi-byte UTF-8 character that a cut at ``b`` splits: (its start, its bytes)."""
    if not 0 < b < len(body) or not 0x80 <= body[b] < 0xC0:
        return None
    start = b - 1
    while start > max(0, b - 4) and 0x80 <= body[start] < 0xC0:
        start -= 1
    lead = body[start]
    width = 2 if 0xC0 <= lead < 0xE0 else 3 if 0xE0 <= lead < 0xF0 else 4 if 0xF0 <= lead < 0xF8 else 0
    if not width or start + width <= b:
        return None
    raw = body[start : start + width]
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return start, raw


def _excerpt(text: bytes, limit: int = 24) -> str:
    s = text.decode("utf-8", "replace")
    return repr(s if len(s) <= limit else s[: limit - 4] + "...")


def describe_boundary(body: bytes, b: int) -> str:
    """Where a chunk boundary at byte ``b`` of ``body`` falls, in words.

    Names a multi-byte UTF-8 character it splits, a CRLF it splits, a field name or the
    ``data: `` prefix it cuts, or the line it is in, and the 0-based event (counted by
    blank-line framing, comment-only blocks included) it is in.
    """
    if not 0 < b < len(body):
        return f"outside the body (0..{len(body)})"
    if body.startswith(_BOM) and b < 3:
        return f"inside the leading BOM (after its byte {b} of 3), event 0"
    lines = _lines(body)
    line = next((ln for ln in lines if ln.start <= b < ln.end), lines[-1] if lines else None)
    if line is None:  # pragma: no cover - b is inside the body, so some line holds it
        return f"at byte {b}"
    content = body[line.start : line.stop]
    where = f"event {line.event}, line {_excerpt(content)}"
    if line.stop < b < line.end:
        if not content:
            return f"between the CR and LF of a blank line's CRLF (the end of event {line.event})"
        return f"between the CR and LF of a CRLF line ending, {where}"
    if b == line.start:
        if line.stop == line.start:
            return f"at the start of a blank line (the end of event {line.event})"
        return f"at the start of a line, {where}"
    if b == line.stop:
        return f"just before a line ending, {where}"
    k = b - line.start
    char = _char_at(body, b)
    if char is not None:
        start, raw = char
        ch = raw.decode("utf-8")
        what = f"inside {ch!r} (U+{ord(ch):04X}, a {len(raw)}-byte character, after its byte {b - start})"
        return f"{what}, {where}"
    colon = content.find(b":")
    if content.startswith(b":"):
        return f"inside a comment line, {where}"
    if content.startswith(b"data: ") and k < 6:
        return f"inside the 'data: ' prefix (after {content[:k].decode()!r}), {where}"
    if k == colon:
        return f"between the field name {_excerpt(content[:k])} and its colon, {where}"
    if colon < 0 or k < colon:
        name = content if colon < 0 else content[:colon]
        return f"inside the field name {_excerpt(name)} (after {_excerpt(content[:k])}), {where}"
    if k == colon + 1 and content[colon + 1 : colon + 2] == b" ":
        return f"between {_excerpt(content[: colon + 1])} and its space, {where}"
    name = content[:colon]
    value_start = colon + 2 if content[colon + 1 : colon + 2] == b" " else colon + 1
    if k == value_start:
        return f"just after the {_excerpt(content[:k])} prefix, before the value, {where}"
    return (
        f"inside the value of the {_excerpt(name)} field (after byte {k - value_start} of "
        f"{len(content) - value_start}), {where}"
    )


# -- whole variants: boundaries biased to decoder hazards, transform chains, faults ----------------

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


FAULTS = (
    "truncate",
    "truncate:at=mid_event",
    "disconnect",
    "trailing_data:at=garbage",
    "trailing_data:at=same_event",
)
"""The faults explore draws with ``explore_faults=True``, simplest first (what a shrink moves to): every one ends a stream a conforming client must reject or flag (``disconnect`` is drawn after a drawn number of events)"""


def transform_pool(
    spec: str | _transforms.Transform | Sequence[str | _transforms.Transform] | None,
) -> list[_transforms.Transform]:
    """The transforms a variant's chain is drawn from: a set's name (``"network"``, the default;
    ``"conforming"`` adds what another conforming server may send on top of it; ``"all"``), or
    names and transforms (``["crlf", "keepalive"]``), or None/``"none"`` for none."""
    if spec is None or spec == "none":
        return []
    if isinstance(spec, str) and spec.strip() in _transforms.SETS:
        name = spec.strip()
        members = _transforms.SETS[name]
        if name == "conforming":
            members = (*_transforms.NETWORK, *members)
        return list(members)
    names: list[str | _transforms.Transform] = (
        [spec] if isinstance(spec, (str, _transforms.Transform)) else list(spec)
    )
    out: list[_transforms.Transform] = []
    for item in names:
        for t in (
            transform_pool(item)
            if isinstance(item, str) and item.strip() in _transforms.SETS
            else _transforms.resolve(item)
        ):
            if t.name not in {o.name for o in out}:
                out.append(t)
    return out


@dataclass(frozen=True)
class Variant:
    """One drawn variant of a cassette's streams: where the chunk boundaries fall (an [`At`][ssemock.strategies.At]
    chunking, the same offsets in every response), a chain of transforms applied before, and at
    most one fault. ``options()`` are the replay keywords that serve exactly it."""

    chunking: At = field(default_factory=at)
    """Where the chunk boundaries fall (the same offsets in every response)."""
    transforms: tuple[_transforms.Transform, ...] = ()
    """The transforms applied before chunking, in order."""
    fault: _faults.Fault | None = None
    """The fault applied, if any."""

    def options(self) -> dict[str, object]:
        """Keywords for [`ssemock.replay`][ssemock.player.replay.replay] / [`ssemock.use_cassette`][ssemock.use_cassette] that serve this variant."""
        return {
            "chunking": self.chunking,
            "transform": list(self.transforms),
            "faults": [self.fault] if self.fault is not None else [],
        }

    def marker(self) -> str:
        """The variant as a pytest marker to paste: ``@pytest.mark.ssemock(chunking="at:372", transform="crlf")``."""
        parts = [f'chunking="{self.chunking.name if self.chunking.boundaries else "coalesced"}"']
        if self.transforms:
            parts.append(f'transform="{"+".join(t.name for t in self.transforms)}"')
        if self.fault is not None:
            parts.append(f'faults="{self.fault.name}"')
        return f"@pytest.mark.ssemock({', '.join(parts)})"

    def __str__(self) -> str:
        parts = [f"chunking {self.chunking.name}"]
        if self.transforms:
            parts.append("transform " + "+".join(t.name for t in self.transforms))
        if self.fault is not None:
            parts.append(f"fault {self.fault.name}")
        return ", ".join(parts)


class Tables:
    """The hazard offsets ([`hazards`][ssemock.strategies.hazards], merged over every response) of a cassette's bodies
    under each transform chain, computed once per chain; a chain ending in ``pad:N`` (N >= 3)
    reuses the table of the chain before it, shifted by N."""

    def __init__(self, cassette: Cassette) -> None:
        self.bodies = [
            (x.response.body, x.response.header("content-type") or "")
            for x in cassette.interactions
            if x.response.body
        ]
        """The `(body, content type)` of every response with a body."""
        self._found: dict[tuple[str, ...], tuple[int, dict[str, list[int]]]] = {}
        self._aligned: dict[tuple[str, ...], list[int]] = {}

    def of(self, chain: Sequence[_transforms.Transform]) -> tuple[int, dict[str, list[int]]]:
        """(the longest body's size, the hazard offsets by class) under ``chain``."""
        key = tuple(t.name for t in chain)
        found = self._found.get(key)
        if found is not None:
            return found
        head, _, arg = key[-1].partition(":") if key else ("", "", "")
        if head == "pad" and arg.isdigit() and int(arg) >= 3:
            n = int(arg)
            size, before = self.of(chain[:-1])
            classes = {
                name: [o + n for o in offsets]
                for name, offsets in before.items()
                if name != "buffer-multiple"
            }
            buffers = sorted(
                {
                    k + d
                    for b in BUFFER_SIZES
                    for k in range(b, size + n, b)
                    for d in (-1, 0, 1)
                    if 0 < k + d < size + n
                }
            )
            found = (
                size + n,
                {
                    name: (buffers if name == "buffer-multiple" else classes[name])
                    for name in HAZARDS
                    if name in classes or name == "buffer-multiple" and buffers
                },
            )
        else:
            size, merged = 0, dict[str, set[int]]()
            for body, content_type in self.bodies:
                new = (
                    _transforms.apply(chain, body, [], kind=_transforms.kind_of(content_type, body))[0]
                    if chain
                    else body
                )
                size = max(size, len(new))
                for name, offsets in hazards(new, content_type or None).items():
                    merged.setdefault(name, set()).update(offsets)
            found = size, {n: sorted(merged[n]) for n in HAZARDS if n in merged}
        self._found[key] = found
        return found

    def aligned(self, chain: Sequence[_transforms.Transform]) -> list[int]:
        """Shifts N (``pad:N``) that put a CR or a multi-byte character's lead byte of a body under
        ``chain`` on the last byte of a 64- or 1024-byte buffer."""
        key = tuple(t.name for t in chain)
        if key not in self._aligned:
            out: set[int] = set()
            for body, content_type in self.bodies:
                new = _transforms.apply(chain, body, [], kind=_transforms.kind_of(content_type, body))[0]
                for m in re.finditer(rb"\r|[\xc2-\xf4]", new):
                    for n in BUFFER_SIZES[:2]:
                        k = (n - 1 - m.start()) % n
                        out.add(k if k >= 3 else k + n)  # pad:N is exactly N bytes from 3 on
            self._aligned[key] = sorted(out)
        return self._aligned[key]


_BIG = 1 << 24


def variants(
    cassette: Cassette,
    *,
    transforms: str | Sequence[str | _transforms.Transform] | None = "network",
    faults: bool | str | Sequence[str] = False,
    max_boundaries: int = 6,
) -> SearchStrategy[Variant]:
    """A hypothesis strategy of whole variants ([`Variant`][ssemock.strategies.Variant]) of ``cassette``'s streams, for ``@given``:

    ``@given(variant=ssemock.strategies.variants(cassette))`` then
    ``with ssemock.replay(cassette, **variant.options()) as player: ...``.

    A chain of up to three transforms is drawn from ``transforms`` ([`transform_pool`][ssemock.strategies.transform_pool]: the
    network set by default), then, when the pool has ``pad``, maybe a padding last: ``pad`` or
    ``pad:N``, which shifts the stream by N bytes, N often chosen to put a CR or a multi-byte
    character on the last byte of a client's own 64- or 1024-byte buffer; then at most one
    fault when ``faults`` is True ([`FAULTS`][ssemock.strategies.FAULTS]) or names some; then up to ``max_boundaries``
    groups of boundaries in the transformed body: one offset of a [`hazards`][ssemock.strategies.hazards] class (each
    class as likely), one anywhere, a run of 1-byte chunks, or every offset of one class.
    Examples shrink toward fewer groups and boundaries, earlier offsets, fewer and earlier
    transforms, no padding, the simplest fault.
    """
    return _variants(Tables(cassette), transforms=transforms, faults=faults, max_boundaries=max_boundaries)


class Space:
    """What variants of one cassette are drawn from (the transform pool, the faults, the hazard
    tables), and [`draw`][ssemock.strategies.Space.draw], the one way a variant is drawn: from a chooser of whole numbers,
    hypothesis's ([`variants`][ssemock.strategies.variants], which shrinks toward smaller numbers) or a seeded
    ``random.Random`` ([`ssemock.explore`][ssemock.explore.explore], which draws thousands a second). Smaller numbers
    mean simpler variants: fewer transforms, no padding, no fault, fewer boundary groups, one
    hazard offset, earlier offsets."""

    def __init__(
        self,
        tables: Tables,
        *,
        transforms: str | Sequence[str | _transforms.Transform] | None,
        faults: bool | str | Sequence[str],
        max_boundaries: int,
    ) -> None:
        bodies = tables.bodies
        pool = [
            t
            for t in transform_pool(transforms)  # a transform that changes no body is never drawn
            if any(_transforms.applies(t, b, _transforms.kind_of(ct, b)) for b, ct in bodies)
        ]
        self.tables = tables
        """The cassette's hazard tables."""
        self.padded = any(t.name == "pad" for t in pool)
        """Whether ``pad`` is among the transforms: it is drawn apart, last (a shift of the whole stream)."""
        self.pool = [t for t in pool if t.name != "pad"]
        """The transforms drawn from."""
        self.fault_names = (
            list(FAULTS)
            if faults is True
            else []
            if faults is False
            else [faults]
            if isinstance(faults, str)
            else list(faults)
        )
        """The names of the faults drawn from."""
        self.faults = [None if name == "disconnect" else _faults.get(name) for name in self.fault_names]
        """The faults drawn from (`None` stands for `disconnect`)."""
        self.events = max((len(event_ends(b)) for b, _ in bodies), default=0)
        """The most events in one response."""
        self.max_boundaries = max_boundaries
        """The most chunk boundaries a variant draws."""

    def draw(self, choose: Callable[[int, int], int]) -> Variant:
        """A variant from ``choose(lo, hi)`` (a whole number in ``[lo, hi]``)."""
        chain: tuple[_transforms.Transform, ...] = ()
        if self.pool:
            picked = {choose(0, len(self.pool) - 1) for _ in range(choose(0, min(3, len(self.pool))))}
            chain = tuple(self.pool[i] for i in sorted(picked))
        if self.padded:  # 0 none, 1 a shift onto a buffer end, 2 any shift up to 64, 3 per-event padding
            how, n = choose(0, 3), choose(0, _BIG)
            if how:
                aligned = self.tables.aligned(chain) if how == 1 else []
                chain += (
                    _transforms.pad()
                    if how == 3
                    else _transforms.pad(aligned[n % len(aligned)] if aligned else 1 + n % BUFFER_SIZES[0]),
                )
        chosen: _faults.Fault | None = None
        if self.faults:
            k = choose(0, len(self.faults))
            if k:
                chosen = self.faults[k - 1] or _faults.disconnect(
                    after_event=choose(0, max(self.events - 1, 0))
                )
        size, found = self.tables.of(chain)
        classes = list(found.values())
        cuts: set[int] = set()
        if self.max_boundaries and size > 1:
            # each group: 0 one hazard offset (class a, item b), 1 offset a anywhere, 2 a run of
            # 2 + b % 15 one-byte chunks from a, 3 every offset of class a
            for _ in range(choose(1, self.max_boundaries)):
                kind, a, b = choose(0, 3), choose(0, _BIG), choose(0, _BIG)
                if kind == 0 and classes:
                    offsets = classes[a % len(classes)]
                    cuts.add(offsets[b % len(offsets)])
                elif kind == 3 and classes:
                    cuts.update(classes[a % len(classes)][:512])
                elif kind == 2:
                    start = 1 + a % (size - 1)
                    cuts.update(range(start, min(start + 2 + b % 15, size)))
                else:
                    cuts.add(1 + a % (size - 1))
        return Variant(at(*cuts), chain, chosen)


def _variants(
    tables: Tables,
    *,
    transforms: str | Sequence[str | _transforms.Transform] | None,
    faults: bool | str | Sequence[str],
    max_boundaries: int,
) -> SearchStrategy[Variant]:
    from hypothesis import strategies as st

    space = Space(tables, transforms=transforms, faults=faults, max_boundaries=max_boundaries)

    @st.composite
    def draw(draw: Callable[..., Any]) -> Variant:
        return space.draw(lambda lo, hi: draw(st.integers(lo, hi)))

    return draw()
