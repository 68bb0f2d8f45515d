"""pytest plugin: the ``ssemock`` fixture and marker, namespaced options, chunking parametrization.

Options are all ``--ssemock-*`` so the plugin coexists with pytest-recording and cassetter.
"""

from __future__ import annotations

import hashlib
import re
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from . import chunking as _chunking
from . import transforms as _transforms
from .errors import SsemockWarning
from .replay import RECORD_MODES, Player, use_cassette

_PARAM = "_ssemock_chunking"
_CONFIG_KEYS = frozenset({
    "cassette", "chunking", "transform", "timing", "faults", "match_on", "allow_playback_repeats",
    "protocol", "record_mode", "before_record_request", "before_record_response",
    "check_unplayed", "check_unconsumed",
})
_CHECKS = ("ignore", "warn", "error")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("ssemock", "ssemock: record and replay streaming HTTP")
    group.addoption("--ssemock-record-mode", choices=RECORD_MODES, default=None,
                    help="none (default: replay only, network blocked), once, new_episodes, all, rewrite")
    group.addoption("--ssemock-chunking", default=None, metavar="NAME[,NAME...]|all",
                    help="re-chunk replayed streams; several names or 'all' run each test once per strategy")
    group.addoption("--ssemock-transform", default=None, metavar="NAME[+NAME...][,...]|all",
                    help="crlf, cr, keepalive, no_space; '+' chains, ',' or 'all' runs each test once per choice")
    group.addoption("--ssemock-timing", default=None, metavar="instant|recorded|scaled:F",
                    help="when replayed chunks are delivered (default instant)")
    parser.addini("ssemock_chunking", "default chunking(s) for ssemock tests (as --ssemock-chunking)", default="")
    parser.addini("ssemock_transform", "default transform(s) for ssemock tests (as --ssemock-transform)", default="")
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


@dataclass(frozen=True)
class Variant:
    """One run of a test: a chunking and a chain of transforms."""

    chunking: _chunking.Chunking
    transforms: tuple[_transforms.Transform, ...] = ()

    @property
    def id(self) -> str:
        return "+".join(["ssemock-" + self.chunking.name, *(t.name for t in self.transforms)])


def _variants(options: dict[str, Any], config: pytest.Config) -> list[Variant]:
    """Marker first, then the command line, then the ini file."""
    chunking = (options.get("chunking") or config.getoption("ssemock_chunking")
                or config.getini("ssemock_chunking") or None)
    transform = (options.get("transform") or config.getoption("ssemock_transform")
                 or config.getini("ssemock_transform") or None)
    return [Variant(c, tuple(t)) for c in _chunking.resolve(chunking) for t in _transforms.alternatives(transform)]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """One run per chunking (and transform) when the marker or the options name several."""
    if _PARAM not in metafunc.fixturenames:
        return
    uses = "ssemock" in metafunc.fixturenames or metafunc.definition.get_closest_marker("ssemock")
    if not uses:
        return
    variants = _variants(_marker_kwargs(metafunc.definition), metafunc.config)
    if len(variants) > 1:
        metafunc.parametrize(_PARAM, variants, ids=[v.id for v in variants])


@pytest.fixture
def _ssemock_chunking(request: pytest.FixtureRequest) -> Variant | None:
    """The variant of this run when the test is parametrized over several; else None."""
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


_UNSAFE = re.compile(r"[^A-Za-z0-9._\[\]-]+")  # brackets kept: test_x[param].json, as vcrpy names them


def cassette_name(node: Any) -> str:
    """The test's name without the ssemock variant id, safe as a file name."""
    name = re.sub(r"(?<=\[)ssemock-[^-\]]+(-|(?=\]))|-ssemock-[^-\]]+", "", node.name).replace("[]", "")
    safe = _UNSAFE.sub("_", name).strip("._") or "cassette"
    if safe != name or len(safe) > 120:  # distinct ids must not share a file once made safe
        digest = hashlib.sha1(name.encode("utf-8")).hexdigest()[:10]
        safe = f"{safe[:120]}-{digest}"
    return f"{safe}.json"


def _cassette_path(spec: Any, directory: Path, node: Any) -> Path:
    if spec is None:
        return directory / cassette_name(node)
    path = Path(spec)
    if path.is_absolute() or path.parent != Path("."):
        return path
    return directory / (path.name if path.suffix else f"{path.name}.json")


@pytest.fixture
def ssemock(request: pytest.FixtureRequest, ssemock_config: dict[str, Any],
            ssemock_cassette_dir: Path, _ssemock_chunking: Variant | None) -> Iterator[Player]:
    """The active cassette player for this test (replay by default, network blocked)."""
    options = {**ssemock_config, **_marker_kwargs(request.node)}
    unknown = set(options) - _CONFIG_KEYS
    if unknown:
        raise pytest.UsageError(f"ssemock: unknown option(s) {sorted(unknown)}; known: {sorted(_CONFIG_KEYS)}")
    variants = _variants(options, request.config)
    if _ssemock_chunking is None and len(variants) > 1:
        raise pytest.UsageError("ssemock: a matrix of chunkings/transforms from ssemock_config cannot parametrize "
                                "the test (fixtures run after collection); put it in the marker, on the command "
                                "line (--ssemock-chunking) or in the ini file (ssemock_chunking = all)")
    config = request.config
    for key in ("record_mode", "timing", "faults"):
        value = config.getoption(f"ssemock_{key}")
        if value is not None and (key == "record_mode" or options.get(key) is None):
            options[key] = value
    variant = _ssemock_chunking or variants[0]
    options.pop("chunking", None)
    options["transform"] = list(variant.transforms)
    checks = {k: options.pop(k, "warn") for k in ("check_unplayed", "check_unconsumed")}
    for key, value in checks.items():
        if value not in _CHECKS:
            raise pytest.UsageError(f"ssemock: {key} must be one of {_CHECKS}, got {value!r}")
    path = _cassette_path(options.pop("cassette", None), ssemock_cassette_dir, request.node)
    record_mode: Any = options.pop("record_mode", None) or "none"
    player = use_cassette(path, record_mode=record_mode, chunking=variant.chunking,
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
