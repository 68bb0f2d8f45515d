"""Explore: search the streams a network can deliver for one your client breaks on, and shrink it.

The implementation of [`ssemock.explore`][ssemock.explore], where its public names are documented."""

# The draw comes from a seeded random.Random rather than hypothesis's engine: a variant in tens of
# microseconds where the engine takes milliseconds.

from __future__ import annotations

import asyncio
import hashlib
import inspect
import itertools
import json
import os
import random
import re
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.extras import require
from ..plan import push_replay as _held
from ..plan.expect import StreamAssertionError
from ..store.cassette import Cassette
from ..variants import faults as _faults
from ..variants.chunking import At, at
from ..variants.strategies import (
    HAZARDS,
    Space,
    Tables,
    Variant,
    classify,
    describe_boundary,
    minimal_failing_split,
)
from . import explore_ws as _ws

if TYPE_CHECKING:
    from hypothesis.database import ExampleDatabase

    from .replay import Player

__all__ = ["DATABASE", "Coverage", "Failure", "budget", "explore", "search", "verdict"]

DATABASE = Path(".hypothesis") / "ssemock"
"""Where failing variants are kept (under the pytest rootdir, or the working directory outside pytest): a hypothesis example database, one key per cassette and test."""
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|min|h)\s*$")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0}
#: examples drawn when the budget is a duration (the clock stops the search first)
_MANY = 1_000_000


def budget(value: object) -> tuple[int, float | None]:
    """An explore budget as (most examples, seconds or None): ``200``, ``"200"``, ``"30s"``,
    ``"2m"``, ``"500ms"``. ValueError names what is wrong."""
    if isinstance(value, bool) or value is None:
        raise ValueError(
            f"explore takes a number of examples (200) or a duration ('30s', '2m'), got {value!r}"
        )
    if isinstance(value, int):
        if value < 1:
            raise ValueError(f"explore: the number of examples must be at least 1, got {value}")
        return value, None
    if isinstance(value, str):
        text = value.strip()
        if text.isdigit():
            return budget(int(text))
        found = _DURATION.match(text)
        if found and float(found[1]) > 0:
            return _MANY, float(found[1]) * _UNITS[found[2]]
    raise ValueError(
        f"explore takes a number of examples (200) or a duration ('30s', '2m', '500ms'), got {value!r}"
    )


@dataclass
class Coverage:
    """What a search exercised: how many examples drew a boundary of each hazard class, and each
    transform and fault."""

    examples: int = 0
    """How many variants were run."""
    hazards: Counter[str] = field(default_factory=Counter)
    """How many examples drew a boundary of each hazard class."""
    transforms: Counter[str] = field(default_factory=Counter)
    """How many examples drew each transform."""
    faults: Counter[str] = field(default_factory=Counter)
    """How many examples drew each fault."""
    seconds: float = 0.0  #: the whole search, drawing and shrinking included
    """Seconds the whole search took, drawing and shrinking included."""
    in_code: float = 0.0  #: of which running the code under test (its client, and ssemock serving it)
    """Seconds of those spent running the code under test (its client, and ssemock serving it)."""

    def add(self, variant: Variant, classes: Sequence[str]) -> None:
        """Count one example: the hazard classes its boundaries hit, its transforms and fault."""
        self.examples += 1
        self.hazards.update(classes)
        names = {t.name.split(":")[0] for t in variant.transforms}
        self.transforms.update(names)
        if names & {"keepalive", "comments"} and names & {"crlf", "mixed"}:
            self.hazards["keep-alive after CRLF"] += 1
        if variant.fault is not None:
            self.faults[variant.fault.name.split(":")[0]] += 1

    def report(self) -> str:
        """Two or three lines: hazard classes by examples, transforms and faults drawn."""
        order = [*HAZARDS, *_ws.HAZARDS, "1-byte run", "keep-alive after CRLF"]
        found = ", ".join(f"{name} {self.hazards[name]}" for name in order if self.hazards[name])
        lines = [f"{self.examples} examples; boundaries exercised (examples per hazard): {found or 'none'}"]
        lines.append(
            "transforms drawn: " + (", ".join(f"{k} {v}" for k, v in self.transforms.most_common()) or "none")
        )
        if self.faults:
            lines.append("faults drawn: " + ", ".join(f"{k} {v}" for k, v in self.faults.most_common()))
        lines.append(f"time: {self.seconds:.2f} s, of which {self.in_code:.2f} s in the test itself")
        return "\n".join(lines)


@dataclass
class Failure:
    """The smallest failing variant a search found: ``variant`` (its replay options), the error
    the code raised under it, where each boundary falls in words, how many examples ran until
    the first failure, and what the search covered."""

    variant: Variant
    """The smallest failing variant; `variant.options()` are the replay keywords that serve it."""
    error: BaseException
    """The exception the code under test raised under the variant."""
    boundaries: list[str]
    """Where each chunk boundary falls, in words."""
    examples: int
    """How many examples ran until the first failure."""
    coverage: Coverage
    """What the search covered."""
    seed: int | None = None
    """The seed that reproduces the search (`None`: drawn by hypothesis)."""
    websocket: bool = False
    """Whether the boundaries are in a WebSocket session's wire (the server's frames)."""

    @property
    def reproducer(self) -> str:
        """The marker that pins this variant: ``@pytest.mark.ssemock(chunking="at:372", transform="crlf")``."""
        return self.variant.marker()

    def __str__(self) -> str:
        v = self.variant
        lines = [
            f"ssemock explore: the test fails on a drawn stream (first failure after {self.examples} "
            f"examples), shrunk to:"
        ]
        if self.boundaries:
            what = "a read boundary at wire byte" if self.websocket else "a chunk boundary at byte"
            lines.extend(f"  {what} {b}" for b in self.boundaries)
        elif self.websocket:
            lines.append(
                "  no read boundary inside a group (each group of frames in one read): it does not depend on the wire's cuts"
            )
        else:
            lines.append("  no chunk boundary (the whole body in one chunk): it does not depend on chunking")
        if v.transforms:
            lines.append(f"  transforms: {'+'.join(t.name for t in v.transforms)}")
        if v.fault is not None:
            lines.append(f"  fault: {v.fault.name} (a stream a conforming client must reject)")
        lines.append(f"the error under it: {_named(self.error)}")
        lines.append(f"reproduce with: {self.reproducer}")
        if self.seed is not None:
            lines.append(f"this search again: seed {self.seed} (--ssemock-explore-seed={self.seed})")
        lines.append("coverage: " + self.coverage.report().replace("\n", "\n  "))
        return "\n".join(lines)


def _named(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


# -- one example: the player set to a variant, the code run, the property checked ------------------


def _configure(player: Player, variant: Variant) -> None:
    """The player serves ``variant`` from the next request on, as if no request had been made."""
    player.chunking = variant.chunking
    player.transforms = list(variant.transforms)
    player.faults = [variant.fault] if variant.fault is not None else []
    _reset(player)


def _reset(player: Player) -> None:
    """The player as if no request had been made (what it serves unchanged)."""
    player.play_counts[:] = [0] * len(player.play_counts)
    player.attempts = 0
    with player.lock:
        player.plays.clear()
        player.conversations.clear()  # WebSocket sessions: attempts count from 0 again
        player.latest = None
    player._assertions.forget()
    player._requests = _held.Requests()


def verdict(player: Player, variant: Variant, call: Callable[[], object]) -> BaseException | None:
    """Serve ``variant`` and run ``call``: the error that makes it a failure, or None.

    Without a fault, any exception fails. Under a fault, a stream the reference rejects must
    make the client raise: returning normally fails (a StreamAssertionError saying so), an
    AssertionError is the test's own failure, any other exception is the rejection; a stream
    the reference still accepts is held to the plain property."""
    _configure(player, variant)
    try:
        call()
    except Exception as exc:
        if variant.fault is None or isinstance(exc, AssertionError) or not _played(player):
            return exc
        return exc if player._assertions.reference_rejects() is None else None
    if variant.fault is None or not _played(player):
        return None
    reason = player._assertions.reference_rejects()
    if reason is None:
        return None
    return StreamAssertionError(
        f"ssemock: the client accepted a stream a conforming client must reject under "
        f"{player.expected.under()}: {reason}"
    )


def _played(player: Player) -> bool:
    """Whether the run played a recorded interaction (an HTTP response or a WebSocket session)."""
    return bool(player.plays or player.conversations)


def unmodified(player: Player, call: Callable[[], object]) -> None:
    """Run ``call`` once on the streams as the player serves them without explore, before any
    drawn variant (hypothesis's health-check way): an error there is raised as it is (with a
    note), never a stream finding shrunk to a bogus variant. The note says which it is: a
    stream bug when the run passes with each stream served whole (the recording's own chunk
    boundaries break the code), else the test's own failure."""
    _reset(player)
    try:
        call()
    except BaseException as exc:
        if not isinstance(exc, (KeyboardInterrupt, SystemExit, GeneratorExit)):
            exc.add_note(_unmodified_note(player, call))
        raise


def _unmodified_note(player: Player, call: Callable[[], object]) -> str:
    """What a failure on the unmodified streams is: ``call`` runs once more with each stream whole
    (one chunk; a WebSocket session one read per group of frames), and the player's options are
    restored after it."""
    failed = (
        "ssemock explore: the test fails on the streams as the cassette serves them, before any drawn variant"
    )
    if _played(player):
        options = player.chunking, player.transforms, player.faults
        try:
            whole = verdict(player, Variant(at(), (), None), call)
        finally:
            player.chunking, player.transforms, player.faults = options
            _reset(player)
        if whole is None:
            return (
                f"{failed}, and passes with each stream served whole: a stream bug, the code under "
                "test breaks on the recording's own chunk boundaries (the test without explore "
                "reproduces it)"
            )
    return f"{failed}: the test's own failure, not a stream's (fix it, then explore)"


def _not_a_finding(error: BaseException) -> BaseException:
    error.add_note(
        "ssemock explore: the run played no recorded interaction, so no drawn stream caused this: "
        "the test's own failure, not a stream finding"
    )
    return error


# -- the search ------------------------------------------------------------------------------------


def search(
    player: Player,
    call: Callable[[], object],
    *,
    examples: int = 200,
    seconds: float | None = None,
    transforms: str | Sequence[str] | None = "network",
    faults: bool | str | Sequence[str] = False,
    seed: int | None = None,
    database: ExampleDatabase | str | os.PathLike[str] | None = None,
    key: str = "",
    derandomize: bool | None = None,
    shrink: bool = True,
) -> tuple[Failure | None, Coverage]:
    """Run ``call`` against up to ``examples`` variants (or for ``seconds``) served by ``player``
    (started; its cassette's interactions are what is varied); the shrunk [`Failure`][ssemock.explore.Failure] or
    None, and the coverage.

    The variants stored under ``key`` in ``database`` (a folder, or a hypothesis
    ``ExampleDatabase``; None: none) run first; then new ones are drawn by
    [`ssemock.strategies.Space.draw`][ssemock.strategies.Space.draw] from a ``random.Random`` seeded by ``seed``, or by
    ``key`` when ``derandomize`` (default: when ``CI`` is set and no ``seed`` is given), else at
    random (the failure names the seed). A failing variant is shrunk (``shrink=False``: reported
    as drawn) and stored. ``call`` runs first on the streams unchanged (see `unmodified`): a
    failure there, or under a variant that played no interaction, is raised as the test's own."""
    require("hypothesis", "explore", "explore")
    from hypothesis.database import DirectoryBasedExampleDatabase, ExampleDatabase

    websocket = _ws.has_websocket(player.cassette)
    tables: Tables | _ws.WsTables
    space: Space | _ws.WsSpace
    if websocket:  # boundaries in the sessions' wire, re-framings, WebSocket faults (issue 35)
        tables = _ws.WsTables(player.cassette)
        space = _ws.WsSpace(tables, transforms=transforms, faults=faults, max_boundaries=6)
    else:
        tables = Tables(player.cassette)
        space = Space(tables, transforms=transforms, faults=faults, max_boundaries=6)
    coverage = Coverage()
    db: ExampleDatabase | None
    if database is None or isinstance(database, ExampleDatabase):
        db = database
    else:
        db = DirectoryBasedExampleDatabase(os.fspath(database))
    digest = hashlib.sha256(key.encode()).digest()
    if derandomize is None:
        derandomize = bool(os.environ.get("CI")) and seed is None
    if seed is None:
        seed = int.from_bytes(digest[:4], "big") if derandomize else random.getrandbits(32)
    rng = random.Random(seed)
    stop = None if seconds is None else time.monotonic() + seconds

    def timed() -> object:
        start = time.perf_counter()
        try:
            return call()
        finally:
            coverage.in_code += time.perf_counter() - start

    def attempt(variant: Variant) -> BaseException | None:
        return verdict(player, variant, timed)

    started = time.perf_counter()
    stored = sorted(db.fetch(digest)) if db is not None else []
    failing: tuple[Variant, BaseException] | None = None
    try:
        unmodified(player, timed)
        drawn = (_parse(value) for value in stored)
        fresh = (space.draw(rng.randint) for _ in range(examples))
        for variant in itertools.chain((v for v in drawn if v is not None), fresh):
            if stop is not None and time.monotonic() > stop:
                break
            error = attempt(variant)
            coverage.add(variant, classify(tables.of(variant.transforms)[1], variant.chunking.boundaries))
            if error is not None and not _played(player):
                raise _not_a_finding(error)
            if error is not None:
                failing = variant, error
                break
        first = coverage.examples
        if failing is None:
            return None, coverage
        if not shrink:
            variant = failing[0]
        elif isinstance(space, _ws.WsSpace):
            variant = _ws.shrink(player, space, failing[0], attempt)
        else:
            variant = _shrink(player, space, failing[0], attempt)
        error = attempt(variant) or failing[1]  # the code's own error under exactly the variant reported
    finally:
        coverage.seconds = time.perf_counter() - started
    if db is not None:
        db.save(digest, _spec(variant))
    where = _ws.describe(player, variant.chunking.boundaries) if websocket else _boundaries(player, variant)
    return Failure(variant, error, where, first, coverage, seed, websocket), coverage


def _spec(variant: Variant) -> bytes:
    """A variant as stored in the database: its replay options by name (stable across versions)."""
    return json.dumps(
        {
            "chunking": variant.chunking.name,
            "transform": [t.name for t in variant.transforms],
            "fault": variant.fault.name if variant.fault is not None else None,
        }
    ).encode()


def _parse(value: bytes) -> Variant | None:
    """A stored variant, or None for an entry this version cannot read (skipped, not an error)."""
    from ..variants import chunking as _chunking
    from ..variants import transforms as _transforms

    try:
        spec = json.loads(value)
        found = _chunking.get(spec["chunking"])
        if not isinstance(found, At):
            return None
        fault = spec.get("fault")
        return Variant(
            found,
            tuple(_transforms.resolve(list(spec.get("transform") or []))),
            _faults.get(fault) if fault else None,
        )
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


def _shrink(
    player: Player, space: Space, variant: Variant, attempt: Callable[[Variant], BaseException | None]
) -> Variant:
    """Make a failing variant as small as still fails: fewest boundaries (delta debugging, so
    each one left is needed), fewest transforms, each boundary moved to the earliest offset of
    its hazard class (or the first few of any class) that still fails, the simplest fault
    (earliest in the drawn list, an earlier ``disconnect``)."""
    cuts = list(variant.chunking.boundaries)
    if attempt(variant) is None:  # flaky: keep it as found
        return variant
    body = max((p.body for p in player.plays), key=len, default=b"")
    if cuts and body:
        kept = [c for c in cuts if c < len(body)]

        def fails(chunks: list[bytes]) -> bool:
            return (
                attempt(
                    Variant(
                        at(*itertools.accumulate(len(c) for c in chunks[:-1])),
                        variant.transforms,
                        variant.fault,
                    )
                )
                is not None
            )

        try:
            variant = Variant(
                minimal_failing_split(body, fails, [*kept, len(body)]).chunking,
                variant.transforms,
                variant.fault,
            )
        except ValueError:
            pass  # the cuts past this body matter: keep them all
    for t in reversed(variant.transforms):
        chain = tuple(x for x in variant.transforms if x is not t)
        head, _, shift = t.name.partition(":")
        tries = [variant.chunking]
        if head == "pad" and shift.isdigit() and t is variant.transforms[-1]:  # the same bytes, N earlier
            tries.append(at(*(b - int(shift) for b in variant.chunking.boundaries if b > int(shift))))
        for split in tries:
            fewer = Variant(split, chain, variant.fault)
            if attempt(fewer) is not None:
                variant = fewer
                break
    found = space.tables.of(variant.transforms)[1]
    for b in variant.chunking.boundaries:
        others = [c for c in variant.chunking.boundaries if c != b]
        same = {o for offsets in found.values() if b in offsets for o in offsets if o < b}
        firsts = {o for offsets in found.values() for o in offsets[:3] if o < b}  # the earliest of any class
        earlier = sorted(firsts | set(sorted(same)[:8]))[:16]
        for o in earlier:
            moved = Variant(at(*others, o), variant.transforms, variant.fault)
            if o not in others and attempt(moved) is not None:
                variant = moved
                break
    if variant.fault is not None:
        simpler = [f for f in space.faults if f is not None]
        after = getattr(variant.fault, "after_event", None)
        if after:  # a disconnect after fewer events
            simpler += [_faults.disconnect(after_event=k) for k in range(min(after, 8))]
        for fault in simpler:
            if fault.name == variant.fault.name:
                break
            if attempt(Variant(variant.chunking, variant.transforms, fault)) is not None:
                variant = Variant(variant.chunking, variant.transforms, fault)
                break
    return variant


def _boundaries(player: Player, variant: Variant) -> list[str]:
    """Each boundary of ``variant`` in words, in the last body served (the one that failed)."""
    body = player.plays[-1].body if player.plays else b""
    out = []
    for b in variant.chunking.boundaries:
        where = describe_boundary(body, b) if b < len(body) else "past the end of the last response served"
        out.append(f"{b} ({where})")
    return out


# -- outside pytest --------------------------------------------------------------------------------


def explore(
    cassette: Cassette,
    run: Callable[[Player], object],
    examples: int | str = 200,
    *,
    transforms: str | Sequence[str] | None = "network",
    faults: bool | str | Sequence[str] = False,
    seed: int | None = None,
    database: ExampleDatabase | str | os.PathLike[str] | None | bool = True,
    key: str | None = None,
    derandomize: bool | None = None,
    protocol: str | None = None,
    match_on: Sequence[str] | None = None,
    allow_playback_repeats: bool = False,
    shrink: bool = True,
) -> Failure | None:
    """Run ``run(player)`` (your client code and its assertions; a coroutine function is run to
    completion) against up to ``examples`` drawn variants of ``cassette``'s streams (or for a
    duration: ``"30s"``); the smallest failing [`Failure`][ssemock.explore.Failure], or None when every one passed.

    ``transforms``: the set drawn from (``"network"``, the default: what proxies do;
    ``"conforming"`` adds what another conforming server may send; ``"all"``, or a list of
    names). ``faults``: True (or fault names) also draws faults, where the client must reject the
    stream. ``database``: True keeps failing variants in [`DATABASE`][ssemock.explore.DATABASE] under the working
    directory (replayed first next time), a folder or a hypothesis database, False for none;
    ``key`` names the entry (default: the cassette's path and ``run``'s qualified name).
    ``shrink=False`` returns the first failing variant as drawn, unshrunk.
    """
    from .replay import replay

    require("hypothesis", "explore", "ssemock.explore")
    most, seconds = budget(examples)
    if database is True:
        database = DATABASE
    elif database is False:
        database = None
    if key is None:
        key = f"{cassette.path or ''}\0{getattr(run, '__module__', '')}.{getattr(run, '__qualname__', repr(run))}"
    player = replay(
        cassette, protocol=protocol, match_on=match_on, allow_playback_repeats=allow_playback_repeats
    )

    def call() -> object:
        result = run(player)
        if inspect.isawaitable(result):
            return asyncio.run(_awaited(result))
        return result

    with player:
        failure, _ = search(
            player,
            call,
            examples=most,
            seconds=seconds,
            transforms=transforms,
            faults=faults,
            seed=seed,
            database=database,
            key=key,
            derandomize=derandomize,
            shrink=shrink,
        )
    return failure


async def _awaited(result: Any) -> object:
    return await result
