"""Explore: search the streams a network can deliver for one your client breaks on, and shrink it.

A fixed matrix runs a test under a few chosen variants. Exploring draws many
(:func:`ssemock.strategies.variants`: chunk boundaries biased to where decoders break, chains of
transforms, optionally a fault), runs the user's own code against each through one player, and on
the first failure lets hypothesis shrink it (fewest boundaries, fewest transforms, earliest
offsets, simplest fault), then removes what is still not needed and says in words where each
remaining boundary falls, with the marker that reproduces it. Failing variants are kept in
hypothesis's example database and tried first on the next run.

The property: the code passes under every variant; under a fault whose stream the reference
rejects (cut short, data after the terminator), the client must raise (an AssertionError is the
test failing, not the client rejecting), as :meth:`ssemock.Player.assert_rejected` checks.
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import os
import re
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import held as _held
from .cassette import Cassette
from .chunking import at
from .expect import StreamAssertionError
from .strategies import HAZARDS, Variant, classify, describe_boundary, hazards, minimal_failing_split, variants

if TYPE_CHECKING:
    from hypothesis.database import ExampleDatabase

    from .replay import Player

__all__ = ["DATABASE", "Coverage", "Failure", "budget", "explore", "search"]

#: where failing variants are kept (under the pytest rootdir, or the working directory outside
#: pytest): a hypothesis example database, one key per cassette and test
DATABASE = Path(".hypothesis") / "ssemock"
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|min|h)\s*$")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0}
#: examples drawn when the budget is a duration (the clock stops the search first)
_MANY = 1_000_000


def budget(value: object) -> tuple[int, float | None]:
    """An explore budget as (most examples, seconds or None): ``200``, ``"200"``, ``"30s"``,
    ``"2m"``, ``"500ms"``. ValueError names what is wrong."""
    if isinstance(value, bool) or value is None:
        raise ValueError(f"explore takes a number of examples (200) or a duration ('30s', '2m'), got {value!r}")
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
    raise ValueError(f"explore takes a number of examples (200) or a duration ('30s', '2m', '500ms'), "
                     f"got {value!r}")


@dataclass
class Coverage:
    """What a search exercised: how many examples drew a boundary of each hazard class, and each
    transform and fault."""

    examples: int = 0
    hazards: Counter[str] = field(default_factory=Counter)
    transforms: Counter[str] = field(default_factory=Counter)
    faults: Counter[str] = field(default_factory=Counter)

    def add(self, variant: Variant, classes: Sequence[str]) -> None:
        self.examples += 1
        self.hazards.update(classes)
        self.transforms.update(t.name.split(":")[0] for t in variant.transforms)
        if variant.fault is not None:
            self.faults[variant.fault.name.split(":")[0]] += 1

    def report(self) -> str:
        """Two or three lines: hazard classes by examples, transforms and faults drawn."""
        order = [*HAZARDS, "1-byte run"]
        found = ", ".join(f"{name} {self.hazards[name]}" for name in order if self.hazards[name])
        lines = [f"{self.examples} examples; boundaries exercised (examples per hazard): {found or 'none'}"]
        lines.append("transforms drawn: " + (", ".join(f"{k} {v}" for k, v in self.transforms.most_common())
                                             or "none"))
        if self.faults:
            lines.append("faults drawn: " + ", ".join(f"{k} {v}" for k, v in self.faults.most_common()))
        return "\n".join(lines)


@dataclass
class Failure:
    """The smallest failing variant a search found: ``variant`` (its replay options), the error
    the code raised under it, where each boundary falls in words, how many examples ran until
    the first failure, and what the search covered."""

    variant: Variant
    error: BaseException
    boundaries: list[str]
    examples: int
    coverage: Coverage

    @property
    def reproducer(self) -> str:
        """The marker that pins this variant: ``@pytest.mark.ssemock(chunking="at:372", transform="crlf")``."""
        return self.variant.marker()

    def __str__(self) -> str:
        v = self.variant
        lines = [f"ssemock explore: the test fails on a drawn stream (first failure after {self.examples} "
                 f"examples), shrunk to:"]
        if self.boundaries:
            lines.extend(f"  a chunk boundary at byte {b}" for b in self.boundaries)
        else:
            lines.append("  no chunk boundary (the whole body in one chunk): it does not depend on chunking")
        if v.transforms:
            lines.append(f"  transforms: {'+'.join(t.name for t in v.transforms)}")
        if v.fault is not None:
            lines.append(f"  fault: {v.fault.name} (a stream a conforming client must reject)")
        lines.append(f"the error under it: {_named(self.error)}")
        lines.append(f"reproduce with: {self.reproducer}")
        lines.append("coverage: " + self.coverage.report().replace("\n", "\n  "))
        return "\n".join(lines)


def _named(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class _Found(Exception):
    """Raised inside the hypothesis test when the code fails (the code's error is its cause)."""


class _OutOfTime(BaseException):
    """Ends a search whose time budget ran out before any failure (not an Exception: hypothesis
    lets it through instead of shrinking it)."""


# -- one example: the player set to a variant, the code run, the property checked ------------------


def _configure(player: Player, variant: Variant) -> None:
    """The player serves ``variant`` from the next request on, as if no request had been made."""
    player.chunking = variant.chunking
    player.transforms = list(variant.transforms)
    player.faults = [variant.fault] if variant.fault is not None else []
    player.play_counts[:] = [0] * len(player.play_counts)
    player.attempts = 0
    with player._lock:
        player.plays.clear()
        player._latest = None
    player._notes.clear()
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
        if variant.fault is None or isinstance(exc, AssertionError) or not player.plays:
            return exc
        return exc if player._reference_rejects() is None else None
    if variant.fault is None or not player.plays:
        return None
    reason = player._reference_rejects()
    if reason is None:
        return None
    return StreamAssertionError(f"ssemock: the client accepted a stream a conforming client must reject under "
                                f"{player.expected._under()}: {reason}")


# -- the search ------------------------------------------------------------------------------------


def search(player: Player, call: Callable[[], object], *, examples: int = 200, seconds: float | None = None,
           transforms: str | Sequence[str] | None = "network", faults: bool | str | Sequence[str] = False,
           seed: int | None = None, database: ExampleDatabase | str | os.PathLike[str] | None = None,
           key: str = "", derandomize: bool | None = None, on_example: Callable[[], None] | None = None,
           shrink: bool = True) -> tuple[Failure | None, Coverage]:
    """Run ``call`` against up to ``examples`` variants (or for ``seconds``) served by ``player``
    (started; its cassette's interactions are what is varied); the shrunk :class:`Failure` or
    None, and the coverage. ``database`` (a folder, or a hypothesis database; None: none) keeps
    failing variants under ``key``; ``derandomize`` (default: when ``CI`` is set and no ``seed``
    is given) makes every run draw the same variants. ``shrink=False`` reports the first failing
    variant as drawn (faster, larger)."""
    from hypothesis import HealthCheck, Phase, Verbosity, given, settings
    from hypothesis import seed as with_seed
    from hypothesis.database import DirectoryBasedExampleDatabase, ExampleDatabase

    cassette = player.cassette
    strategy = variants(cassette, transforms=transforms, faults=faults)
    found = _hazard_map(cassette, player)
    coverage = Coverage()
    state: dict[str, Any] = {"first": None, "last": None}
    stop = None if seconds is None else time.monotonic() + seconds

    def attempt(variant: Variant) -> BaseException | None:
        if on_example is not None:
            on_example()
        return verdict(player, variant, call)

    def prop(variant: Variant) -> None:
        if stop is not None and state["first"] is None and time.monotonic() > stop:
            raise _OutOfTime
        error = attempt(variant)
        coverage.add(variant, classify(found(variant), variant.chunking.boundaries))
        if error is not None:
            if state["first"] is None:
                state["first"] = coverage.examples
            state["last"] = (variant, error)
            raise _Found from error

    db: ExampleDatabase | None
    if database is None or isinstance(database, ExampleDatabase):
        db = database
    else:
        db = DirectoryBasedExampleDatabase(os.fspath(database))
    prop._hypothesis_internal_add_digest = hashlib.sha256(key.encode()).digest()  # type: ignore[attr-defined]
    if derandomize is None:
        derandomize = bool(os.environ.get("CI")) and seed is None
    test = settings(max_examples=examples, deadline=None, database=db, derandomize=derandomize and seed is None,
                    suppress_health_check=list(HealthCheck), verbosity=Verbosity.quiet, print_blob=False,
                    report_multiple_bugs=False,
                    phases=(Phase.explicit, Phase.reuse, Phase.generate, *((Phase.shrink,) if shrink else ())),
                    )(given(strategy)(prop))
    if seed is not None:
        test = with_seed(seed)(test)
    try:
        test()
    except _OutOfTime:
        pass
    except Exception:
        if state["last"] is None:
            raise  # hypothesis's own error (a bad strategy option): not the code's
    if state["last"] is None:
        return None, coverage
    variant = _minimise(player, state["last"][0], attempt) if shrink else state["last"][0]
    error = attempt(variant) or state["last"][1]  # the code's own error under exactly the variant reported
    return Failure(variant, error, _boundaries(player, variant), state["first"] or coverage.examples, coverage), coverage


def _hazard_map(cassette: Cassette, player: Player) -> Callable[[Variant], dict[str, list[int]]]:
    """A variant -> the hazard offsets of the bodies it serves (cached per transform chain)."""
    from . import transforms as _transforms
    cache: dict[tuple[str, ...], dict[str, list[int]]] = {}

    def found(variant: Variant) -> dict[str, list[int]]:
        key = tuple(t.name for t in variant.transforms)
        if key not in cache:
            merged: dict[str, set[int]] = {}
            for x in cassette.interactions:
                content_type = x.response.header("content-type") or ""
                body = x.response.body
                if variant.transforms:
                    body = _transforms.apply(variant.transforms, body, [],
                                             kind=_transforms.kind_of(content_type, body))[0]
                for name, offsets in hazards(body, content_type or None).items():
                    merged.setdefault(name, set()).update(offsets)
            cache[key] = {n: sorted(o) for n, o in merged.items()}
        return cache[key]
    return found


def _minimise(player: Player, variant: Variant, attempt: Callable[[Variant], BaseException | None]
              ) -> Variant:
    """After hypothesis's shrink: drop every boundary no longer needed (delta debugging), then
    every transform that is not, so each one left is needed."""
    cuts = list(variant.chunking.boundaries)
    error = attempt(variant)
    if error is None:  # flaky: keep what hypothesis reported
        return variant
    body = max((p.body for p in player.plays), key=len, default=b"")
    if cuts and body:
        kept = [c for c in cuts if c < len(body)]

        def fails(chunks: list[bytes]) -> bool:
            ends, pos = [], 0
            for chunk in chunks[:-1]:
                pos += len(chunk)
                ends.append(pos)
            return attempt(Variant(at(*ends), variant.transforms, variant.fault)) is not None

        try:
            split = minimal_failing_split(body, fails, [*kept, len(body)])
            variant = Variant(split.chunking, variant.transforms, variant.fault)
        except ValueError:
            pass  # the cuts past this body matter: keep them all
    chain = list(variant.transforms)
    for t in reversed(list(chain)):
        fewer = Variant(variant.chunking, tuple(x for x in chain if x is not t), variant.fault)
        if attempt(fewer) is not None:
            chain.remove(t)
            variant = fewer
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


def explore(cassette: Cassette, run: Callable[[Player], object], examples: int | str = 200, *,
            transforms: str | Sequence[str] | None = "network", faults: bool | str | Sequence[str] = False,
            seed: int | None = None, database: ExampleDatabase | str | os.PathLike[str] | None | bool = True,
            key: str | None = None, derandomize: bool | None = None, protocol: str | None = None,
            match_on: Sequence[str] | None = None, allow_playback_repeats: bool = False,
            shrink: bool = True) -> Failure | None:
    """Run ``run(player)`` (your client code and its assertions; a coroutine function is run to
    completion) against up to ``examples`` drawn variants of ``cassette``'s streams (or for a
    duration: ``"30s"``); the smallest failing :class:`Failure`, or None when every one passed.

    ``transforms``: the set drawn from (``"network"``, the default: what proxies do;
    ``"conforming"`` adds what another conforming server may send; ``"all"``, or a list of
    names). ``faults``: True (or fault names) also draws faults, where the client must reject the
    stream. ``database``: True keeps failing variants in :data:`DATABASE` under the working
    directory (replayed first next time), a folder or a hypothesis database, False for none;
    ``key`` names the entry (default: the cassette's path and ``run``'s qualified name).
    ``shrink=False`` returns the first failing variant as drawn, unshrunk.
    """
    from .replay import replay

    most, seconds = budget(examples)
    if database is True:
        database = DATABASE
    elif database is False:
        database = None
    if key is None:
        key = f"{cassette.path or ''}\0{getattr(run, '__module__', '')}.{getattr(run, '__qualname__', repr(run))}"
    player = replay(cassette, protocol=protocol, match_on=match_on, allow_playback_repeats=allow_playback_repeats)

    def call() -> object:
        result = run(player)
        if inspect.isawaitable(result):
            return asyncio.run(_awaited(result))
        return result

    with player:
        failure, _ = search(player, call, examples=most, seconds=seconds, transforms=transforms, faults=faults,
                            seed=seed, database=database, key=key, derandomize=derandomize, shrink=shrink)
    return failure


async def _awaited(result: Any) -> object:
    return await result


# -- inside pytest (called by the plugin's pytest_pyfunc_call) --------------------------------------


@contextmanager
def replaying_recorded(player: Player) -> Iterator[None]:
    """On a recording run, serve what was just recorded (replay only) while exploring, then put
    the player back as it was, so what it saves is unchanged."""
    if player.record_mode == "none" or not player.recorded:
        yield
        return
    from .selection import Selection
    saved = (player.cassette, player._selection, player._replays, player._records, player.recorders,
             player.chunking, player.transforms, player.faults)
    kept = [x for x in player.cassette.interactions]
    player.cassette = Cassette([*kept, *player.recorded], path=player.cassette.path)
    player._selection = Selection(player.cassette.interactions, player.match_on)
    player._replays, player._records, player.recorders = True, False, []
    try:
        yield
    finally:
        (player.cassette, player._selection, player._replays, player._records, player.recorders,
         player.chunking, player.transforms, player.faults) = saved


def item_key(nodeid: str, player: Player) -> str:
    """The database key of one test: its cassette and its node id."""
    return f"{player.path or ''}\0{nodeid}"


def run_item(call: Callable[[], object], player: Player, *, nodeid: str, rootdir: Path, setting: object,
             transforms: object = None, faults: object = None, seed: int | None = None,
             derandomize: bool | None = None) -> Coverage:
    """Explore one pytest item: ``call`` runs its body once. A recording run records first (the
    body runs once live), then explores what it recorded. Raises StreamAssertionError (the
    code's own error as its cause) with the shrunk variant, or returns the coverage."""
    most, seconds = budget(setting)
    if player.record_mode != "none":
        call()
    original = (player.chunking, player.transforms, player.faults)
    with replaying_recorded(player):
        failure, coverage = search(
            player, call, examples=most, seconds=seconds,
            transforms=transforms if transforms is not None else "network",  # type: ignore[arg-type]
            faults=faults if faults is not None else False,  # type: ignore[arg-type]
            seed=seed, database=rootdir / DATABASE, key=item_key(nodeid, player), derandomize=derandomize)
    if failure is not None:
        raise StreamAssertionError(str(failure)) from failure.error
    player.chunking, player.transforms, player.faults = original
    return coverage


def check_option(key: str, value: object) -> None:
    """ValueError unless ``value`` is usable for the explore option ``key``."""
    from . import faults as _faults
    from .strategies import FAULTS, transform_pool
    if key == "explore":
        budget(value)
    elif key == "explore_transforms":
        transform_pool(value)  # type: ignore[arg-type]
    elif key == "explore_faults":
        if isinstance(value, bool):
            return
        for name in [value] if isinstance(value, str) else value if isinstance(value, (list, tuple)) else [value]:
            if name not in FAULTS:
                _faults.get(name)  # type: ignore[arg-type]
    elif key == "explore_seed":
        if not (type(value) is int or value == "random"):
            raise ValueError(f"explore_seed takes a whole number or 'random', got {value!r}")
