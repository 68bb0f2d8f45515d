"""pytest plugin: the ``ssemock`` fixture and marker, namespaced options, chunking parametrization.

Options are all ``--ssemock-*`` so the plugin coexists with pytest-recording and cassetter.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from . import chunking as _chunking
from .replay import RECORD_MODES, Player, use_cassette

_PARAM = "_ssemock_chunking"
_CONFIG_KEYS = frozenset({
    "cassette", "chunking", "transform", "timing", "faults", "match_on", "allow_playback_repeats",
    "protocol", "record_mode", "before_record_request", "before_record_response",
    "check_unplayed", "check_unconsumed",
})
_CHECKS = ("ignore", "warn", "error")


class SsemockWarning(UserWarning):
    """A teardown check found something worth a look (unplayed interaction, unread stream)."""


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("ssemock", "ssemock: record and replay streaming HTTP")
    group.addoption("--ssemock-record-mode", choices=RECORD_MODES, default=None,
                    help="none (default: replay only, network blocked), once, new_episodes, all, rewrite")
    group.addoption("--ssemock-chunking", default=None, metavar="NAME[,NAME...]|all",
                    help="re-chunk replayed streams; several names or 'all' run each test once per strategy")
    group.addoption("--ssemock-transform", default=None, metavar="NAME[+NAME...]",
                    help="crlf, cr, keepalive, no_space")
    group.addoption("--ssemock-timing", default=None, metavar="instant|recorded|scaled:F",
                    help="when replayed chunks are delivered (default instant)")
    group.addoption("--ssemock-faults", default=None, metavar="FAULT[;FAULT...]",
                    help="faults to inject, e.g. 'disconnect:after_event=3'")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "ssemock(cassette=None, chunking=None, transform=None, timing=None, faults=None, "
        "match_on=None, allow_playback_repeats=False, protocol=None): replay (or record) the "
        "test's streaming HTTP through an ssemock cassette",
    )


def _marker_kwargs(node: Any) -> dict[str, Any]:
    marker = node.get_closest_marker("ssemock")
    return dict(marker.kwargs) if marker is not None else {}


def _chunking_ids(chunkings: list[_chunking.Chunking]) -> list[str]:
    return [f"ssemock-{c.name}" for c in chunkings]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """One run per chunking when the marker or ``--ssemock-chunking`` names several."""
    if _PARAM not in metafunc.fixturenames:
        return
    uses = "ssemock" in metafunc.fixturenames or metafunc.definition.get_closest_marker("ssemock")
    if not uses:
        return
    spec = _marker_kwargs(metafunc.definition).get("chunking") or metafunc.config.getoption("ssemock_chunking")
    chunkings = _chunking.resolve(spec)
    if len(chunkings) > 1:
        metafunc.parametrize(_PARAM, chunkings, ids=_chunking_ids(chunkings))


@pytest.fixture
def _ssemock_chunking(request: pytest.FixtureRequest) -> _chunking.Chunking | None:
    """The chunking of this run when the test is parametrized over several; else None."""
    return getattr(request, "param", None)


@pytest.fixture
def ssemock_config() -> dict[str, Any]:
    """Override to set defaults for every ssemock test in scope (marker options win)."""
    return {}


@pytest.fixture
def ssemock_cassette_dir(request: pytest.FixtureRequest) -> Path:
    """Where cassettes live: ``cassettes/<test module stem>/`` beside the test file."""
    path = Path(request.node.path)
    return path.parent / "cassettes" / path.stem


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def cassette_name(node: Any) -> str:
    """The test's name without the ssemock chunking id, safe as a file name."""
    name = re.sub(r"-?ssemock-[^-\]]+", "", node.name).replace("[]", "")
    name = _UNSAFE.sub("_", name).strip("._") or "cassette"
    return f"{name[:200]}.json"


def _cassette_path(spec: Any, directory: Path, node: Any) -> Path:
    if spec is None:
        return directory / cassette_name(node)
    path = Path(spec)
    if path.is_absolute() or path.parent != Path("."):
        return path
    return directory / (path.name if path.suffix else f"{path.name}.json")


@pytest.fixture
def ssemock(request: pytest.FixtureRequest, ssemock_config: dict[str, Any],
            ssemock_cassette_dir: Path, _ssemock_chunking: _chunking.Chunking | None) -> Iterator[Player]:
    """The active cassette player for this test (replay by default, network blocked)."""
    options = {**ssemock_config, **_marker_kwargs(request.node)}
    unknown = set(options) - _CONFIG_KEYS
    if unknown:
        raise pytest.UsageError(f"ssemock: unknown option(s) {sorted(unknown)}; known: {sorted(_CONFIG_KEYS)}")
    config = request.config
    for key in ("record_mode", "transform", "timing", "faults"):
        value = config.getoption(f"ssemock_{key}")
        if value is not None and (key == "record_mode" or key not in options or options[key] is None):
            options[key] = value
    chunkings = _chunking.resolve(options.pop("chunking", None) or config.getoption("ssemock_chunking"))
    chunking = _ssemock_chunking or chunkings[0]
    checks = {k: options.pop(k, "warn") for k in ("check_unplayed", "check_unconsumed")}
    for key, value in checks.items():
        if value not in _CHECKS:
            raise pytest.UsageError(f"ssemock: {key} must be one of {_CHECKS}, got {value!r}")
    path = _cassette_path(options.pop("cassette", None), ssemock_cassette_dir, request.node)
    record_mode = options.pop("record_mode", None) or "none"
    player = use_cassette(path, record_mode=record_mode, chunking=chunking,
                          **{k: v for k, v in options.items() if v is not None})
    with player:
        yield player
    _teardown_checks(player, checks)


def _teardown_checks(player: Player, checks: dict[str, str]) -> None:
    found = []
    if checks["check_unplayed"] != "ignore" and player.record_mode == "none":
        unplayed = player.unplayed()
        if unplayed:
            found.append(("check_unplayed", f"interactions never played: {unplayed} of {player.path}"))
    if checks["check_unconsumed"] != "ignore":
        for play in player.unconsumed():
            found.append(("check_unconsumed",
                          f"the stream of interaction {play.index} ({play.request.method} {play.request.url}) "
                          f"was not read to the end under {play.chunking}"))
    for key, message in found:
        if checks[key] == "error":
            pytest.fail(f"ssemock: {message}", pytrace=False)
        warnings.warn(f"ssemock: {message}", SsemockWarning, stacklevel=1)


@pytest.fixture(autouse=True)
def _ssemock_marker(request: pytest.FixtureRequest, _ssemock_chunking: Any) -> None:
    """A test marked ``@pytest.mark.ssemock`` gets the player even without the fixture."""
    if request.node.get_closest_marker("ssemock") is not None and "ssemock" not in request.fixturenames:
        request.getfixturevalue("ssemock")
