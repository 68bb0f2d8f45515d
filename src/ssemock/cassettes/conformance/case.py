"""A conformance case (`Case`): a body, the events the reference decodes from it, why it matters;
and its check of a decoder under every chunking, which raises `ConformanceError`."""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ...framing.sse import ServerSentEvent
from ...variants import chunking as _chunking
from ...variants.chunking import Chunking
from .compare import DecodeFn, _event_span, _first_raising_prefix, _show, _window, normalize

ChunkingSpec = str | Chunking
"""A chunking, or its name."""

DEFAULT_CHUNKINGS: tuple[Chunking, ...] = tuple(
    {
        c.name: c
        for c in (
            _chunking.coalesced,
            _chunking.as_recorded,
            _chunking.per_event,
            _chunking.mid_line,
            _chunking.mid_utf8,
            *_chunking.ALL,
            _chunking.fixed(3),
            _chunking.fixed(2),
            _chunking.fixed(1),
            _chunking.bytewise,
        )
    }.values()
)
"""The chunkings [`Case.check`][ssemock.conformance.Case.check] uses by default: every one of [`ssemock.chunking.ALL`][ssemock.chunking.ALL] and ``fixed:1``..``fixed:3``, simplest first (so a decoder that fails even unsplit is reported under ``coalesced``)."""


class ConformanceError(AssertionError):
    """A decoder's events differ from the reference under some chunking (or it raised)."""

    def __init__(self, message: str, *, case: str, chunking: str, index: int | None) -> None:
        super().__init__(message)
        self.case = case
        """The name of the case that failed."""
        self.chunking = chunking
        """The chunking it failed under."""
        self.index = index
        """The first differing event, or None when the decoder raised."""


@dataclass(frozen=True)
class Case:
    """One conformance case: a body, the events it must decode to, and why it matters.

    ``ends`` are the chunk ends as "recorded" (used by the ``as_recorded`` chunking), chosen
    to cut where the case is interesting; empty means one chunk.
    """

    name: str
    """The case's name, as failures report it."""
    body: bytes
    """The body the decoder is fed."""
    expected: list[ServerSentEvent]
    """The events the body must decode to."""
    note: str
    """Why the case matters: the rule of the specification it checks."""
    ends: tuple[int, ...] = ()
    """The chunk ends as "recorded" (empty: one chunk)."""
    tags: tuple[str, ...] = ()
    """Labels to select cases by."""

    def __hash__(self) -> int:
        return hash((self.name, self.body))

    def chunks(self, chunking: ChunkingSpec) -> list[bytes]:
        """The body cut by ``chunking`` (a [`Chunking`][ssemock.chunking.Chunking] or its name)."""
        return _chunking.get(chunking)(self.body, list(self.ends) or None)

    def check(
        self, decode_fn: DecodeFn, chunkings: Iterable[ChunkingSpec] | ChunkingSpec | None = None
    ) -> None:
        """Run ``decode_fn`` on the body under every chunking; raise [`ConformanceError`][ssemock.conformance.ConformanceError] on a difference.

        ``chunkings``: strategies or their names (``"bytewise"``, ``"fixed:3"``, ``"at:17,40"``
        from [`ssemock.strategies.get`][ssemock.strategies.get], ``"all"``), a comma list of names, or a list of
        them; default [`DEFAULT_CHUNKINGS`][ssemock.conformance.DEFAULT_CHUNKINGS]. The error is for the first chunking that fails (simplest first); its message also lists
        the other chunkings that fail.
        """
        strategies = (
            list(DEFAULT_CHUNKINGS)
            if chunkings is None
            else _chunking.resolve(chunkings)
            if chunkings
            else []
        )
        first: ConformanceError | None = None
        also: list[str] = []
        want = normalize(self.expected)
        for strategy in strategies:
            error = self._check_one(decode_fn, strategy, want)
            if error is None:
                continue
            if first is None:
                first = error
            else:
                also.append(strategy.name)
        if first is not None:
            if also:
                first.args = (f"{first.args[0]}\n  also fails under: {', '.join(also)}",)
            raise first

    def _check_one(
        self, decode_fn: DecodeFn, strategy: Chunking, want: list[dict[str, Any]]
    ) -> ConformanceError | None:
        chunks = self.chunks(strategy)
        ends = list(itertools.accumulate(map(len, chunks)))
        head = f"conformance case {self.name!r} under chunking {strategy.name!r}"
        try:
            raw = list(decode_fn(list(chunks)))
        except Exception as exc:
            m = _first_raising_prefix(decode_fn, chunks)
            a, b = (ends[m - 2] if m >= 2 else 0), ends[m - 1]
            error = ConformanceError(
                f"{head}: the decoder raised {type(exc).__name__}: {exc}\n"
                f"  it first raises once fed chunk {m - 1} (bytes {a}..{b})\n"
                f"  case: {self.note}\n"
                f"  {_window(self.body, ends, a - 40, b + 40)}",
                case=self.name,
                chunking=strategy.name,
                index=None,
            )
            error.__cause__ = exc
            return error
        got = normalize(raw)
        for i in range(max(len(got), len(want))):
            g = got[i] if i < len(got) else None
            w = want[i] if i < len(want) else None
            if g is not None and w is not None and {k: w[k] for k in g} == g:
                continue
            if w is None:
                diff = f"expected no event {i} (only {len(want)}), got {_show(g or {})}"
            elif g is None:  # compare the fields the decoder does return
                shown = {k: w[k] for k in (got[0] if got else w)}
                diff = f"expected {_show(shown)}, got no event {i} (only {len(got)})"
            else:
                diff = f"expected {_show({k: w[k] for k in g})}, got {_show(g)}"
            start, stop = _event_span(self.body, i)
            return ConformanceError(
                f"{head}: event {i} differs: {diff}\n"
                f"  got {len(got)} events, expected {len(want)}\n"
                f"  case: {self.note}\n"
                f"  {_window(self.body, ends, start, stop)}",
                case=self.name,
                chunking=strategy.name,
                index=i,
            )
        return None
