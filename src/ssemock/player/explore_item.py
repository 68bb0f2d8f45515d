"""Explore inside pytest: one item's body run against drawn variants (``run_item``, called by the
plugin's ``pytest_pyfunc_call``), on a recording run against what it just recorded; the
database key of an item; the check of the explore options' values."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.extras import require
from ..plan.expect import StreamAssertionError
from ..store.cassette import Cassette
from .explore import DATABASE, Coverage, budget, search

if TYPE_CHECKING:
    from .replay import Player

__all__ = ["check_option", "item_key", "replaying_recorded", "run_item"]


@contextmanager
def replaying_recorded(player: Player) -> Iterator[None]:
    """On a recording run, serve what was just recorded (replay only) while exploring, then put
    the player back as it was, so what it saves is unchanged."""
    if player.record_mode == "none" or not player.recorded:
        yield
        return
    from ..plan.selection import Selection
    from .recording import RecordingRun

    saved = (
        player.cassette,
        player._selection,
        player._replays,
        player._records,
        player._recording,
        player.chunking,
        player.transforms,
        player.faults,
    )
    kept = list(player.cassette.interactions)
    player.cassette = Cassette([*kept, *player.recorded], path=player.cassette.path)
    player._selection = Selection(player.cassette.interactions, player.match_on)
    player._replays, player._records, player._recording = True, False, RecordingRun(player)
    try:
        yield
    finally:
        (
            player.cassette,
            player._selection,
            player._replays,
            player._records,
            player._recording,
            player.chunking,
            player.transforms,
            player.faults,
        ) = saved


def item_key(nodeid: str, player: Player) -> str:
    """The database key of one test: its node id (relative to the rootdir already) and its
    cassette's file name. Not the cassette's full path: a cassette made in a temporary folder (a
    fixture's ``tmp_path_factory``) lands in another folder each run, and its failures must still
    be replayed first."""
    return f"{Path(player.path).name if player.path is not None else ''}\0{nodeid}"


def run_item(
    call: Callable[[], object],
    player: Player,
    *,
    nodeid: str,
    rootdir: Path,
    setting: object,
    transforms: object = None,
    faults: object = None,
    seed: int | None = None,
    derandomize: bool | None = None,
) -> Coverage:
    """Explore one pytest item: ``call`` runs its body once. A recording run records first (the
    body runs once live), then explores what it recorded. Raises StreamAssertionError (the
    code's own error as its cause) with the shrunk variant, or returns the coverage."""
    __tracebackhide__ = True
    require(
        "hypothesis", "explore", "explore (the marker's explore=, --ssemock-explore, ini ssemock_explore)"
    )
    most, seconds = budget(setting)
    if player.record_mode != "none":
        call()
    original = (player.chunking, player.transforms, player.faults)
    with replaying_recorded(player):
        failure, coverage = search(
            player,
            call,
            examples=most,
            seconds=seconds,
            transforms=transforms if transforms is not None else "network",  # type: ignore[arg-type]
            faults=faults if faults is not None else False,  # type: ignore[arg-type]
            seed=seed,
            database=rootdir / DATABASE,
            key=item_key(nodeid, player),
            derandomize=derandomize,
        )
    if failure is not None:
        raise StreamAssertionError(str(failure)) from failure.error
    player.chunking, player.transforms, player.faults = original
    return coverage


def check_option(key: str, value: object) -> None:
    """ValueError unless ``value`` is usable for the explore option ``key``."""
    from ..variants import faults as _faults
    from ..variants.strategies import FAULTS, transform_pool

    if key == "explore":
        if value is False or type(value) is int and value == 0:
            return  # off: a marker's explore=0 opts one test out of --ssemock-explore
        budget(value)
        try:
            require("hypothesis", "explore", "explore")
        except ImportError as exc:  # one usage error before any test runs, naming the extra
            raise ValueError(str(exc)) from None
    elif key == "explore_transforms":
        transform_pool(value)  # type: ignore[arg-type]
    elif key == "explore_faults":
        if isinstance(value, bool):
            return
        for name in (
            [value] if isinstance(value, str) else value if isinstance(value, (list, tuple)) else [value]
        ):
            if name not in FAULTS:
                _faults.get(name)  # type: ignore[arg-type]
    elif key == "explore_seed":
        if not (type(value) is int or value == "random"):
            raise ValueError(f"explore_seed takes a whole number or 'random', got {value!r}")
