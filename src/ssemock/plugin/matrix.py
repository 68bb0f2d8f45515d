"""The variant matrix: one run per chunking and transform chain named, a fault a recording run cannot serve refused at collection, and a run whose transforms change no stream reported as a skipped duplicate."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:  # the rest is imported when a test uses ssemock: an unused plugin costs nothing
    from ..player.replay import Player
    from ..store.cassette import Interaction
    from ..variants import chunking as _chunking
    from ..variants import transforms as _transforms

from .settings import _check_options, _disabled, _marker_options, _setting

_PARAM = "_ssemock_chunking"


_PROBLEMS = pytest.StashKey[list[str]]()


@dataclass(frozen=True)
class Variant:
    """One run of a test: a chunking and a chain of transforms."""

    chunking: _chunking.Chunking
    transforms: tuple[_transforms.Transform, ...] = ()

    @property
    def id(self) -> str:
        return self.named(None)

    def named(self, transports: frozenset[str] | None) -> str:
        """The test id part: ``ssemock-<chunking>[+<transform>...]``. The chunking is named as
        the cassette's transports take it (``transports``: ``{"http", "ws"}`` as far as known at
        collection, None: not known, the HTTP name): a WebSocket session's wire chunking where
        the cassette holds only sessions (``mid_header`` for ``mid_line``), both where it mixes
        them and the names differ: ``ssemock-http=mid_line,ws=mid_header``."""
        name = self.chunking.name
        if transports and "ws" in transports:
            from ..variants.websocket.chunking import for_http

            ws = for_http(self.chunking).name
            if ws != name:
                name = f"http={name},ws={ws}" if "http" in transports else ws
        return "+".join(["ssemock-" + name, *(t.name for t in self.transforms)])


_VARIANT = pytest.StashKey["Variant"]()  # a recording run's variant: told a duplicate once recorded


def _variants(marker: dict[str, Any], defaults: dict[str, Any], config: pytest.Config) -> list[Variant]:
    from ..variants import chunking as _chunking
    from ..variants import transforms as _transforms

    chunking = _setting("chunking", marker, defaults, config)
    transform = _setting("transform", marker, defaults, config)
    found = [
        Variant(c, tuple(t)) for c in _chunking.resolve(chunking) for t in _transforms.alternatives(transform)
    ]
    return found[:1] if _setting("explore", marker, defaults, config) else found  # explore draws its own


def _uses(metafunc: pytest.Metafunc) -> bool:
    return "ssemock" in metafunc.fixturenames or metafunc.definition.get_closest_marker("ssemock") is not None


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A marked test gets the fixture (no autouse fixture needed), and one run per chunking and
    transform when several are named; a bad option is collected as a problem of this test."""
    if _disabled(metafunc.config) or not _uses(metafunc):
        return
    try:
        options = _marker_options(metafunc.definition)
        _check_options(options, "ssemock marker")
        variants = _variants(options, {}, metafunc.config)
        _check_recordable(options, metafunc.config)
    except ValueError as exc:
        metafunc.config.stash.setdefault(_PROBLEMS, []).append(f"{metafunc.definition.nodeid}: {exc}")
        return
    if len(variants) > 1:  # one run: no parameter (the fixture takes the one variant itself)
        if _PARAM not in metafunc.fixturenames:
            metafunc.fixturenames.append(_PARAM)
        transports = _transports(metafunc, options, variants)
        metafunc.parametrize(_PARAM, variants, ids=[v.named(transports) for v in variants])


def _transports(
    metafunc: pytest.Metafunc, options: dict[str, Any], variants: list[Variant]
) -> frozenset[str] | None:
    """The transports of the test's cassette (``"http"``, ``"ws"``) when it can be read at
    collection (the marker's ``cassette=``, or the default file in ``cassettes/<module>/``) and a
    chunking of the matrix has another name on a WebSocket session; None otherwise (a cassette
    not recorded yet: its ids name the HTTP chunkings)."""
    from ..variants.websocket.chunking import for_http

    if all(for_http(v.chunking).name == v.chunking.name for v in variants):
        return None
    from .naming import _cassette_path

    node = metafunc.definition
    default = Path(node.path).parent / "cassettes" / Path(node.path).stem
    try:
        path = _cassette_path(options.get("cassette"), default, node)
        if not path.is_file():
            return None
        import orjson

        data = orjson.loads(path.read_bytes())
        kinds = {"ws" if x.get("websocket") else "http" for x in data.get("interactions", [])}
    except (OSError, ValueError, AttributeError, TypeError):
        return None  # the fixture reports a bad cassette; the ids stay the HTTP names
    return frozenset(kinds) or None


def _check_recordable(marker: dict[str, Any], config: pytest.Config) -> None:
    """A run that may record (any record mode but ``none``) with a fault it cannot serve as its
    replay will: one ValueError naming the fault, at collection."""
    mode = _setting("record_mode", marker, {}, config) or "none"
    if mode == "none":
        return
    from ..player.replay import recording_refusals
    from ..variants.faults import resolve

    refused = recording_refusals(resolve(_setting("faults", marker, {}, config)))
    if refused:
        raise ValueError(
            f"faults: with record_mode={mode!r} a recording run cannot serve them as their "
            f"replay will: {'; '.join(refused)}; record without them, then replay with them"
        )


def _idle_because(player: Player, variant: Variant) -> str:
    """Why the variant's transforms change no response: each one's reason for each framing."""
    from ..variants import transforms as _transforms

    reasons = {
        str(
            _transforms.skipped_because(
                t,
                x.response.body,
                _transforms.kind_of(x.response.header("content-type") or "", x.response.body),
            )
        )
        for x in player.cassette.interactions
        for t in variant.transforms
    }
    return "; ".join(sorted(reasons))


def _idle_transforms(interactions: list[Interaction], variant: Variant) -> str | None:
    """The variant's transform chain when it applies to no response of the cassette (a matrix
    run that would serve the same bytes as the run without it), else None."""
    if not variant.transforms or not interactions:
        return None
    from ..variants import transforms as _transforms

    for x in interactions:
        if x.websocket is not None and any(_transforms.WEBSOCKET in t.kinds for t in variant.transforms):
            return None  # a session's re-framing (pings, fragments:N, ...) changes its frames
        kind = _transforms.kind_of(x.response.header("content-type") or "", x.response.body)
        if any(_transforms.applies(t, x.response.body, kind) for t in variant.transforms):
            return None
    return "+".join(t.name for t in variant.transforms)


def _duplicate(idle: str, path: Path) -> str:
    return (
        f"ssemock: transform {idle} changes no stream of {path.name} (the same bytes as without it: a "
        f"duplicate run)"
    )


def _skip_duplicate(item: pytest.Item, report: pytest.TestReport, player: Player) -> None:
    """On a recording run, a passed matrix run whose transforms turn out to change no stream of
    the cassette (known once it is recorded) is reported skipped, as a replay run skips it before
    it starts: both runs give the same outcomes. It ran all the same, and recorded."""
    variant = item.stash.get(_VARIANT, None)
    if variant is None or not report.passed or player.path is None:
        return
    idle = _idle_transforms([*player.cassette.interactions, *player.recorded], variant)
    if idle:
        line = item.location[1]
        report.outcome = "skipped"
        report.longrepr = (str(item.path), (line or 0) + 1, f"Skipped: {_duplicate(idle, player.path)}")
