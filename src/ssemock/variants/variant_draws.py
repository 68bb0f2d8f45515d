"""Draws of whole variants of a cassette's streams: an `At` chunking, a chain of transforms and
at most one fault, each a `Variant` (a set of replay options), drawn by hypothesis (`variants`)
or from any chooser of whole numbers (`Space.draw`, which explore uses)."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..core.extras import require
from ..store.cassette import Cassette
from . import faults as _faults
from . import transforms as _transforms
from .boundary_draws import BUFFER_SIZES, HAZARDS, hazards
from .chunking import At, at, event_ends

if TYPE_CHECKING:
    from hypothesis.strategies import SearchStrategy

__all__ = ["FAULTS", "Space", "Tables", "Variant", "draw_cuts", "fault_names", "transform_pool", "variants"]


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


def draw_cuts(
    choose: Callable[[int, int], int], size: int, classes: Sequence[Sequence[int]], max_boundaries: int
) -> set[int]:
    """Read boundaries in ``size`` bytes, drawn in up to ``max_boundaries`` groups: each 0 one
    hazard offset (class a, item b), 1 offset a anywhere, 2 a run of 2 + b % 15 one-byte reads
    from a, 3 every offset of class a (``classes``: the hazard offsets, by class)."""
    cuts: set[int] = set()
    if not max_boundaries or size <= 1:
        return cuts
    for _ in range(choose(1, max_boundaries)):
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
    return cuts


def fault_names(faults: bool | str | Sequence[str], every: Sequence[str]) -> list[str]:
    """The fault names a ``faults=`` option asks for: ``every`` when True, none when False, else
    the one or the several it names."""
    if isinstance(faults, bool):
        return list(every) if faults else []
    return [faults] if isinstance(faults, str) else list(faults)


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
        self.fault_names = fault_names(faults, FAULTS)
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
        return Variant(at(*draw_cuts(choose, size, list(found.values()), self.max_boundaries)), chain, chosen)


def _variants(
    tables: Tables,
    *,
    transforms: str | Sequence[str | _transforms.Transform] | None,
    faults: bool | str | Sequence[str],
    max_boundaries: int,
) -> SearchStrategy[Variant]:
    require("hypothesis", "explore", "ssemock.strategies.variants")
    from hypothesis import strategies as st

    space = Space(tables, transforms=transforms, faults=faults, max_boundaries=max_boundaries)

    @st.composite
    def draw(draw: Callable[..., Any]) -> Variant:
        return space.draw(lambda lo, hi: draw(st.integers(lo, hi)))

    return draw()
