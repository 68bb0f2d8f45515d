"""``explore``: the test body run against drawn variants in one item (the search itself is ``ssemock.player.explore``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:  # the rest is imported when a test uses ssemock: an unused plugin costs nothing
    pass

from .settings import _disabled, _marker_options, _setting

_EXPLORING = pytest.StashKey[bool]()


_COVERAGE = pytest.StashKey[list[tuple[str, str]]]()


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    """With ``explore`` set, run the test body against drawn variants (each run goes through
    the other ``pytest_pyfunc_call`` hooks, so async tests run as their plugin runs them)."""
    __tracebackhide__ = True
    player: Any = pyfuncitem.funcargs.get("ssemock")
    if (
        not hasattr(player, "cassette")
        or pyfuncitem.stash.get(_EXPLORING, False)
        or _disabled(pyfuncitem.config)
    ):
        return None
    config = pyfuncitem.config
    marker = _marker_options(pyfuncitem)
    defaults: dict[str, Any] = dict(pyfuncitem.funcargs.get("ssemock_config") or {})  # type: ignore[call-overload]
    setting = _setting("explore", marker, defaults, config)
    if not setting:
        return None
    from ..player.explore_item import run_item

    def call() -> object:
        pyfuncitem.stash[_EXPLORING] = True
        try:
            return pyfuncitem.ihook.pytest_pyfunc_call(pyfuncitem=pyfuncitem)
        finally:
            pyfuncitem.stash[_EXPLORING] = False

    seed = _setting("explore_seed", marker, defaults, config)
    coverage = run_item(
        call,
        player,
        nodeid=pyfuncitem.nodeid,
        rootdir=config.rootpath,
        setting=setting,
        transforms=_setting("explore_transforms", marker, defaults, config),
        faults=_setting("explore_faults", marker, defaults, config),
        seed=seed if isinstance(seed, int) else None,
        derandomize=False if seed == "random" else None,
    )
    config.stash.setdefault(_COVERAGE, []).append((pyfuncitem.nodeid, coverage.report()))
    return True
