"""The ``ssemock`` fixture: the player around the test (replay, or record under the cassette's lock), the teardown checks, and the fixtures a suite overrides (``ssemock_config``, ``ssemock_cassette_dir``)."""

from __future__ import annotations

import hashlib
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ..plan.errors import SsemockWarning

if TYPE_CHECKING:  # the rest is imported when a test uses ssemock: an unused plugin costs nothing
    from ..player.replay import Player

from .interrupts import _CUT_SHORT, _INTERRUPTED
from .matrix import _PARAM, _VARIANT, Variant, _duplicate, _idle_because, _idle_transforms, _variants
from .naming import _cassette_path, cassette_name
from .settings import KEYWORDS, _check_options, _disabled, _marker_options, _setting

_RUN = pytest.StashKey[str]()


_CALL_FAILED = pytest.StashKey[bool]()


@pytest.fixture(scope="session")
def ssemock_config() -> dict[str, Any]:
    """Override to set defaults for every ssemock test in scope (marker options win). The
    defaults are session- and module-scoped (computed once, not per test); an override may
    have any scope."""
    return {}


@pytest.fixture(scope="module")
def ssemock_cassette_dir(request: pytest.FixtureRequest) -> Path:
    """Where cassettes live: ``cassettes/<test module stem>/`` beside the test file."""
    path = Path(request.node.path)
    return path.parent / "cassettes" / path.stem


@pytest.fixture
def ssemock(
    request: pytest.FixtureRequest, ssemock_config: dict[str, Any], ssemock_cassette_dir: Path
) -> Iterator[Player]:
    """The active cassette player for this test (replay by default, network blocked)."""
    from ..player.replay import Options, Player, open_cassette
    from ..store.cassette import Cassette
    from ..store.lock import lock_for

    config = request.config
    name = request.node.nodeid
    try:
        _check_options(ssemock_config, "ssemock_config", prefix="ssemock_config ")
        marker = _marker_options(request.node)
        variants = _variants(marker, ssemock_config, config)
    except ValueError as exc:
        pytest.fail(f"ssemock: {name}: {exc}", pytrace=False)
    callspec = getattr(request.node, "callspec", None)
    chosen: Variant | None = callspec.params.get(_PARAM) if callspec is not None else None
    if chosen is None and len(variants) > 1 and not _disabled(config):
        pytest.fail(
            f"ssemock: {name}: a matrix of chunkings/transforms from ssemock_config cannot parametrize "
            "the test (fixtures run after collection); put it in the marker, on the command line "
            "(--ssemock-chunking) or in the ini file (ssemock_chunking = all)",
            pytrace=False,
        )
    settings = {
        key: _setting(key, marker, ssemock_config, config)
        for key in KEYWORDS
        if key not in ("chunking", "transform") and not key.startswith("explore")
    }
    variant = chosen or variants[0]
    checks = {k: settings.pop(k) or "warn" for k in ("check_unplayed", "check_unconsumed")}
    path = _cassette_path(settings.pop("cassette"), ssemock_cassette_dir, request.node)
    record_mode: Any = settings.pop("record_mode") or "none"
    kwargs = {k: v for k, v in settings.items() if v is not None}
    if _disabled(config):  # a player that is never started: nothing intercepted, nothing expected
        yield Player(Cassette(path=path), path=path, chunking=variant.chunking)
        return
    if record_mode == "none":
        options = Options(chunking=variant.chunking, transform=list(variant.transforms), **kwargs)
        player = open_cassette(path, options)
        idle = _idle_transforms(player.cassette.interactions, variant)
        if idle:
            pytest.skip(f"{_duplicate(idle, path)}: {_idle_because(player, variant)}")
        yield from _run(player, config, request.node)
    else:
        with lock_for(path):  # one recorder of this cassette at a time, across xdist workers
            done = _recorded_marker(config, path, request.node)
            if done.exists():  # another variant of this test recorded it in this run: replay that
                record_mode = "new_episodes"
            options = Options(
                record_mode=record_mode,
                chunking=variant.chunking,
                transform=list(variant.transforms),
                **kwargs,
            )
            player = open_cassette(path, options)
            request.node.stash[_VARIANT] = variant  # a duplicate run is told after it (it records)
            yield from _run(player, config, request.node)
            cut_short = config.stash.get(_INTERRUPTED, False) or request.node.stash.get(_CUT_SHORT, False)
            if player.recorded and not cut_short:
                done.touch()
    if not request.node.stash.get(_CALL_FAILED, False) and not config.stash.get(_INTERRUPTED, False):
        _teardown_checks(player, checks)


def _run(player: Player, config: pytest.Config, node: Any) -> Iterator[Player]:
    """The player around the test. pytest tears fixtures down after Ctrl-C without telling
    them, so the interrupt is remembered (pytest_keyboard_interrupt), as is a test cut short by
    SystemExit, a cancelled task or pytest-timeout (_CUT_SHORT), and a partial recording is
    kept beside the cassette (masked) instead of over it."""
    player.start()
    try:
        yield player
    finally:
        if config.stash.get(_INTERRUPTED, False) or node.stash.get(_CUT_SHORT, False):
            partial = player.interrupted()
            if player.recorded:
                kept = player.kept[-1] if player.kept else None
                if partial is not None:
                    where = f"the partial recording is kept in {partial}"
                elif kept is not None and kept.left:
                    where = "the partial recording is not kept: masking left a secret in it"
                else:
                    where = "the partial recording could not be kept (see the warning)"
                details = f"\n{kept.describe()}" if kept is not None and (kept.masked or kept.left) else ""
                _say(
                    config,
                    f"ssemock: interrupted while recording: {player.path} is unchanged; {where}{details}",
                )
        else:
            player.stop()


def _say(config: pytest.Config, line: str) -> None:
    from ..scan.shapes import safe_message

    line = safe_message(line)
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(line, yellow=True)
    else:
        print(line)


def _recorded_marker(config: pytest.Config, path: Path, node: Any) -> Path:
    """A file that says: this run has recorded this test's cassette (shared by xdist workers)."""
    from ..core import runs

    folder = runs.folder(config.stash[_RUN])
    key = f"{path.resolve()}\0{cassette_name(node)}"
    return folder / hashlib.sha1(key.encode("utf-8", "surrogateescape")).hexdigest()


def _teardown_checks(player: Player, checks: dict[str, str]) -> None:
    from ..redaction.rules import mask_url

    found = []
    if checks["check_unplayed"] != "ignore" and player.record_mode == "none":
        unplayed = player.unplayed()
        if unplayed:
            found.append(("check_unplayed", f"interactions never played: {unplayed} of {player.path}"))
        never = player.stdio.unplayed()
        if never:
            found.append(("check_unplayed", f"stdio sessions never started: {never} of {player.path}"))
    if checks["check_unconsumed"] != "ignore":
        for play in player.unconsumed():
            which = f"interaction {play.index}" if play.index >= 0 else "the response recorded"
            found.append(
                (
                    "check_unconsumed",
                    f"the stream of {which} ({play.request.method} "
                    f"{mask_url(str(play.request.url))}) "
                    f"was not read to the end under {play.chunking}",
                )
            )
    from ..scan.shapes import safe_message

    for key, message in found:
        message = safe_message(message)
        if checks[key] == "error":
            pytest.fail(f"ssemock: {message}", pytrace=False)
        warnings.warn(f"ssemock: {message}", SsemockWarning, stacklevel=1)
