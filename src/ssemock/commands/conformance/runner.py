"""Scoring one client: every case under every variant (a chunking of the registry, alone or
with a transform), each a real stream `ssemock serve`'s app sends to the client's test service
over loopback; the client's events against what a conforming client delivers. A case is scored
under its chunkings; a transform (the stream shape it adds, `SHAPES`) on the cases the client
decodes without it, so each rule a client breaks shows apart. Each failing case's first failing
chunking, and each failing transform's first failing case, is shrunk to the fewest boundaries
that still fail (explore's `minimal_failing_split`)."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from ...store.cassette import Cassette, Interaction
from ...variants import chunking as _chunking
from ...variants import faults as _faults
from ...variants import transforms as _transforms
from ...variants.split_minimiser import minimal_failing_split
from ..serve import app as serve_app
from .cases import Scored
from .expected import Delivery, Served, served
from .harness import TestService
from .hub import Hub, Track

__all__ = [
    "CHUNKINGS",
    "SHAPES",
    "TRANSFORMS",
    "CaseResult",
    "ShapeResult",
    "Variant",
    "base_of",
    "cassette_of",
    "score",
    "variants",
]

CHUNKINGS: tuple[str, ...] = (
    "coalesced",
    "as_recorded",
    "per_event",
    "mid_line",
    "mid_utf8",
    "bytewise",
    "random:7",
    "fixed:3",
)
"""Every chunking of the registry (`ssemock.chunking.ALL`) and ``fixed:3``; of those that cut a
case's body at the same places, only the first runs."""
TRANSFORMS: tuple[str, ...] = tuple(t.name for t in _transforms.SSE)
"""Every transform of the registry that rewrites an SSE body."""
TRANSFORMED_UNDER = "fixed:3"
"""The chunking each transform runs under (a boundary every three bytes: inside every field name,
prefix and most line endings, at a third of bytewise's writes; a failure is shrunk to the
boundaries it needs, none when the transform alone breaks the client)."""
SHAPES: dict[str, str] = {
    "meta": "data-less blocks",
    "retry": "data-less blocks",
    "keepalive": "comment-only blocks",
    "comments": "comment-only blocks",
    "pad": "comment lines",
    "crlf": "line endings",
    "cr": "line endings",
    "mixed": "line endings",
    "no_space": "no space",
    "ids": "ids",
    "raw_unicode": "raw unicode",
}
"""The stream shape (a column of its own) each transform adds: a transform's runs are scored
apart from the case's, so a client that breaks one rule is red in that one column."""
_PROVIDER_CHUNKINGS = ("coalesced", "as_recorded", "per_event", "mid_line", "mid_utf8", "random:7", "fixed:3")
_RECONNECT_CHUNKINGS = ("coalesced", "per_event", "bytewise")
_WAIT = 8.0  # seconds a stream may take before its run is reported as never ended
_QUIET = 0.3  # seconds without a callback or connection after a stream ended by a 204
_GAVE_UP = 3.0  # seconds without either after a reconnection case's error: the client gave up


@dataclass(frozen=True)
class Variant:
    """A chunking, and a transform ('' for none)."""

    chunking: str
    transform: str = ""

    @property
    def name(self) -> str:
        """``mid_line``, or ``bytewise+crlf``."""
        return f"{self.chunking}+{self.transform}" if self.transform else self.chunking


def variants(case: Scored) -> list[Variant]:
    """The variants a case runs under: every chunking untransformed, and each transform that
    changes its body under `TRANSFORMED_UNDER` (a provider stream: under its recorded chunks)."""
    if case.group == "reconnect":
        return [Variant(c) for c in _RECONNECT_CHUNKINGS]
    chunkings = _PROVIDER_CHUNKINGS if case.group == "providers" else CHUNKINGS
    under = "as_recorded" if case.group == "providers" else TRANSFORMED_UNDER
    cuts = {tuple(_chunking.get(c).lazy_ends(case.body, list(case.ends))): c for c in reversed(chunkings)}
    out = [Variant(c) for c in chunkings if c in cuts.values()]
    for name in TRANSFORMS:
        if _transforms.applies(_transforms.get(name), case.body, "sse"):
            out.append(Variant(under, name))
    return out


def base_of(case: Scored) -> str:
    """The chunking that ran in place of the one a case's transforms run under (of those that
    cut its body alike, the first): a transform's failure counts for its shape only when the
    case passes under it untransformed."""
    chunkings = _PROVIDER_CHUNKINGS if case.group == "providers" else CHUNKINGS
    under = "as_recorded" if case.group == "providers" else TRANSFORMED_UNDER

    def cut(name: str) -> tuple[int, ...]:
        return tuple(_chunking.get(name).lazy_ends(case.body, list(case.ends)))

    return next(c for c in chunkings if cut(c) == cut(under))


def cassette_of(case: Scored) -> Cassette:
    """A cassette holding the case as one GET of ``/NAME``, in its recorded chunks."""
    cassette = Cassette()
    cuts = [e for e in sorted(set(case.ends)) if 0 < e < len(case.body)]
    chunks = [case.body[a:b] for a, b in zip([0, *cuts], [*cuts, len(case.body)])]
    cassette.add(
        "GET", f"http://127.0.0.1/{case.name}", chunks, headers={"content-type": "text/event-stream"}
    )
    return cassette


@dataclass
class Outcome:
    """What the client posted back for one stream run."""

    events: list[dict[str, Any]]
    errors: list[str]
    ended: bool
    last_event_ids: list[str | None]


@dataclass
class CaseResult:
    """One case for one client: the untransformed variants run, those that failed (with why,
    for the first), and the first one's smallest failing chunking."""

    case: Scored
    ran: int = 0
    failed: list[str] = field(default_factory=list)
    why: str = ""
    cut: str | None = None
    explanation: str = ""
    own_ids: bool = False  # passed only by reading the block's own ID (an ambiguity)
    ids_seen: bool = False


@dataclass
class ShapeResult:
    """One transform for one client: the cases it ran on that pass untransformed (``ran``),
    those it breaks (``failed``), why the first fails, and its smallest failing chunking."""

    transform: str
    ran: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    why: str = ""
    cut: str | None = None
    explanation: str = ""


class _Context:
    """One client's run: the hub and its URL, the test service, the expected events (cached)."""

    def __init__(self, hub: Hub, base: str, service: TestService) -> None:
        self.hub, self.base, self.service = hub, base, service
        self.listens = "event-type-listeners" in service.capabilities
        self._served: dict[tuple[str, str], Served] = {}
        self._interactions: dict[str, Interaction] = {}

    def interaction(self, case: Scored) -> Interaction:
        if case.name not in self._interactions:
            self._interactions[case.name] = cassette_of(case).interactions[0]
        return self._interactions[case.name]

    def expected(self, case: Scored, variant: Variant) -> Served:
        key = (case.name, variant.name)
        if key not in self._served:
            self._served[key] = served(
                self.interaction(case),
                _chunking.get(variant.chunking),
                _transforms.resolve(variant.transform or None),
                _faults.resolve(case.faults),
            )
        return self._served[key]

    def run(
        self, case: Scored, chunking: _chunking.Chunking | str, transform: str, types: set[str], tag: str
    ) -> Outcome:
        """One real stream: the serve app for this variant, the client told to open it."""
        cassette = Cassette()
        cassette.interactions.append(self.interaction(case))
        app = serve_app(
            cassette,
            chunking=chunking,
            transform=transform or None,
            faults=case.faults,
            cors="*",
            match_on=["method", "path"],
        )
        track = Track(app, f"/{case.name}", reconnects=case.group == "reconnect")
        token = self.hub.open(track)
        try:
            stream = self.service.create(f"{self.base}/s/{token}", f"{self.base}/cb/{token}", tag)
            if self.listens:
                for kind in sorted(types - {"message"}):
                    self.service.listen(stream, kind)
            track.released.set()
            ended = _settled(track)
            self.service.close(stream)
        finally:
            self.hub.drop(token)
        posted = track.posted()
        return Outcome(
            [m["event"] for m in posted if m.get("kind") == "event" and isinstance(m.get("event"), dict)],
            [str(m.get("comment", "")) for m in posted if m.get("kind") == "error"],
            ended,
            list(track.last_event_ids),
        )


def _settled(track: Track) -> bool:
    """Wait for the end of a stream run: the client's first report of the end with every
    callback before it, or its second connection (answered 204); in a reconnection case, the
    204 that ends the resumptions and then a quiet moment for the callbacks still on their way
    (a browser relays them through its page), or an error with neither a callback nor a
    connection after it for a while (the client gave up). False: none of those in time."""
    begun = changed = time.monotonic()
    seen = (0, 0)
    while time.monotonic() - begun < _WAIT:
        if track.done.wait(0.02):
            if not track.reconnects:
                return True
            time.sleep(0.02)  # set, the wait returns at once: the quiet moment is polled, not spun on
        now = (len(track.messages), len(track.last_event_ids))
        if now != seen:
            seen, changed = now, time.monotonic()
        quiet = time.monotonic() - changed
        if track.done.is_set() and quiet >= _QUIET:
            return True
        if track.reconnects and quiet >= _GAVE_UP and any(m.get("kind") == "error" for m in track.posted()):
            return True
    return False


def _differs(want: Sequence[Delivery], got: Sequence[dict[str, Any]]) -> tuple[str | None, bool]:
    """Why ``got`` is not what a conforming client delivers (None: it is), and whether an ID
    matched only as the block's own ID."""
    own = False
    for i, (w, g) in enumerate(zip(want, got)):
        kind = g.get("type") or "message"
        data = g.get("data")
        if kind != w.type or data != w.data:
            return f"event {i}: expected {_show(w.type, w.data)}, got {_show(kind, data)}", own
        if "id" in g:
            ident = g.get("id") or ""
            if ident != w.id:
                if ident != w.own_id:
                    return f"event {i}: expected id {w.id!r}, got {ident!r}", own
                own = True
    if len(got) != len(want):
        extra = (
            f"; first extra: {_show(got[len(want)].get('type') or 'message', got[len(want)].get('data'))}"
            if len(got) > len(want)
            else f"; first missing: {_show(want[len(got)].type, want[len(got)].data)}"
        )
        return f"expected {len(want)} events, got {len(got)}{extra}", own
    return None, own


def _show(kind: str, data: object) -> str:
    text = repr(data)
    text = text if len(text) <= 60 else text[:44] + "..." + text[-12:]
    return text if kind == "message" else f"{kind}: {text}"


def _judge(ctx: _Context, case: Scored, variant: Variant) -> tuple[str | None, bool, bool]:
    """Run one variant: why it fails (None: it passes), own-ID use, whether any ID was reported."""
    expected = ctx.expected(case, variant)
    types = {e.type for e in expected.events}
    outcome = ctx.run(case, variant.chunking, variant.transform, types, f"{case.name}/{variant.name}")
    why, own = _differs(expected.events, outcome.events)
    if why is not None and not outcome.ended:
        why += f" (no end of stream within {_WAIT:.0f} s)"
    if why is not None and len(outcome.events) < len(expected.events) and outcome.errors:
        why += f"; the client reported: {outcome.errors[0][:160]}"  # why it stopped
    return why, own, any("id" in e for e in outcome.events)


def _shrink(ctx: _Context, case: Scored, variant: Variant) -> tuple[str, str]:
    """The smallest chunking of the served body under which a failing variant still fails, and
    what it splits."""
    expected = ctx.expected(case, variant)
    if case.group == "reconnect":
        return variant.chunking, "reconnection cases are not shrunk"

    def fails(chunks: list[bytes]) -> bool:
        cuts = list(itertools.accumulate(map(len, chunks)))[:-1]
        types = {e.type for e in expected.events}
        outcome = ctx.run(case, _chunking.at(*cuts), variant.transform, types, f"{case.name}/shrink")
        return _differs(expected.events, outcome.events)[0] is not None

    try:
        split = minimal_failing_split(expected.body, fails, list(expected.ends))
    except ValueError:
        return variant.chunking, "failed once, but passed when run again under the same chunking (flaky)"
    return (
        "at:" + ",".join(map(str, split.boundaries)) if split.boundaries else "coalesced"
    ), split.explanation


def score(
    hub: Hub,
    base: str,
    service: TestService,
    cases: Sequence[Scored],
    *,
    workers: int = 6,
    progress: Callable[[str], None] | None = None,
) -> tuple[list[CaseResult], list[ShapeResult]]:
    """Every case under every variant against one client's test service: each case scored under
    the chunkings, each transform (its shape) on the cases that pass without it."""
    ctx = _Context(hub, base, service)
    reconnects = bool({"reconnect", "restart"} & service.capabilities)
    runnable = [c for c in cases if c.group != "reconnect" or reconnects]
    jobs = [(case, v) for case in runnable for v in variants(case)]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        judged = list(pool.map(lambda job: _judge(ctx, *job), jobs))
        results = {c.name: CaseResult(c) for c in runnable}
        passed: set[tuple[str, str]] = set()
        for (case, variant), (why, own, ids) in zip(jobs, judged):
            result = results[case.name]
            result.ids_seen |= ids
            if why is None:
                passed.add((case.name, variant.name))
                result.own_ids |= own
            if variant.transform:
                continue
            result.ran += 1
            if why is not None:
                if not result.failed:
                    result.why = why
                result.failed.append(variant.name)
        shapes: dict[str, ShapeResult] = {}
        firsts: list[tuple[CaseResult | ShapeResult, Scored, Variant]] = [
            (r, r.case, Variant(r.failed[0])) for r in results.values() if r.failed
        ]
        for (case, variant), (why, _, _) in zip(jobs, judged):
            if not variant.transform or (case.name, base_of(case)) not in passed:
                continue  # the case fails untransformed: its own cell says so
            shape = shapes.setdefault(variant.transform, ShapeResult(variant.transform))
            shape.ran.append(case.name)
            if why is not None:
                if not shape.failed:
                    shape.why = why
                    firsts.append((shape, case, variant))
                shape.failed.append(case.name)
        if progress is not None:
            progress(
                f"{len(jobs)} streams, {len(firsts)} failing cases and shapes; shrinking their first failures"
            )

        def shrink(job: tuple[CaseResult | ShapeResult, Scored, Variant]) -> None:
            job[0].cut, job[0].explanation = _shrink(ctx, job[1], job[2])

        list(pool.map(shrink, firsts))
    return list(results.values()), sorted(shapes.values(), key=lambda s: TRANSFORMS.index(s.transform))
