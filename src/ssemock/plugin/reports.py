"""What a test's report says: ssemock's own frames left out of a traceback, what was served before a failure, and the session's summary lines."""

from __future__ import annotations

from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:  # the rest is imported when a test uses ssemock: an unused plugin costs nothing
    pass

from .explore import _COVERAGE
from .fixture import _CALL_FAILED
from .interrupts import _CUT_SHORT, _cut_short
from .matrix import _skip_duplicate
from .naming import _STAND_INS

_PACKAGE = str(Path(__file__).resolve().parents[1])  # ssemock itself: every frame of it


def _ours(tb: TracebackType) -> bool:
    return tb.tb_frame.f_code.co_filename.startswith(_PACKAGE)


def _hide_own_frames(error: BaseException) -> None:
    """An error ssemock raised (an assertion, an unmatched request, a cassette error) shows the
    user's lines and ssemock's message, not ssemock's own frames: they are unlinked from its
    traceback and from those of the errors it chains (``--full-trace`` keeps everything)."""
    if not type(error).__module__.startswith("ssemock"):
        return  # not ours: a bug anywhere keeps its whole traceback
    seen: set[int] = set()
    exc: BaseException | None = error
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        tb = exc.__traceback__
        if exc is not error:  # a chained error's own first frames may be ssemock's (check() caught it)
            while tb is not None and tb.tb_next is not None and _ours(tb):
                tb = tb.tb_next
            exc.__traceback__ = tb
        while tb is not None:
            following = tb.tb_next
            while following is not None and _ours(following) and following.tb_next is not None:
                following = following.tb_next
            if following is not None and _ours(following):  # the last frame, where it was raised
                following = None
            tb.tb_next = following
            tb = following
        exc = exc.__cause__ or exc.__context__


def _refused_variant(item: pytest.Item, exc: BaseException, report: pytest.TestReport) -> bool:
    """A WebSocket variant the client cannot take (``deflate`` for a client that offered no
    permessage-deflate, `ssemock.plan.websocket.variants.VariantRefused`): the run is reported skipped,
    with the reason."""
    if type(exc).__name__ != "VariantRefused":  # (imported only then: an unused plugin costs nothing)
        return False
    from ..plan.websocket.variants import VariantRefused

    if not isinstance(exc, VariantRefused):
        return False
    report.outcome = "skipped"
    report.longrepr = (str(item.path), (item.location[1] or 0) + 1, f"Skipped: {exc}")
    return True


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """Remember whether a test using ssemock failed: its teardown checks then stay quiet (an
    interaction left unplayed by a failing test is no news). A failed test's report gets an
    ``ssemock`` section: what was served before the failure ([`Player.served_summary`][ssemock.Player.served_summary])."""
    if call.excinfo is not None and not item.config.option.fulltrace:
        _hide_own_frames(call.excinfo.value)
    report = yield
    if report.when != "call":  # setup and teardown: nothing to do (two of every test's three calls)
        return report
    if call.excinfo is not None and _refused_variant(item, call.excinfo.value, report):
        return report
    if call.excinfo is not None and _cut_short(call.excinfo.value):
        item.stash[_CUT_SHORT] = True
    if report.passed:
        used: Any = getattr(item, "funcargs", {}).get("ssemock")
        if hasattr(used, "recorded"):  # the test used the fixture (a Player)
            _skip_duplicate(item, report, used)
    if report.failed:
        item.stash[_CALL_FAILED] = True
        player: Any = getattr(item, "funcargs", {}).get("ssemock")
        if hasattr(player, "served_summary"):  # the test used the fixture (a Player)
            try:
                summary = player.served_summary()
            except Exception as exc:  # a report must never fail
                summary = f"ssemock: could not describe what was served: {exc!r}"
            if summary:
                report.sections.append(("ssemock: what was served before the failure", summary))
            if call.excinfo is not None and hasattr(
                player, "conversations"
            ):  # told once, not again at teardown
                from ..player.websocket import tell

                for untold in tell(player, call.excinfo.value):
                    report.sections.append(("ssemock: a WebSocket message matched nothing", untold))
    return report


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """With ``-v``: what each explored test exercised. Always: how many parameters holding a
    secret got a hashed stand-in for their test id."""
    stand_ins = config.stash.get(_STAND_INS, 0)
    if stand_ins:
        terminalreporter.write_line(
            f"ssemock: {stand_ins} test parameter(s) held a secret: their test ids show a hashed "
            f"stand-in (secret-...) instead"
        )
    found = config.stash.get(_COVERAGE, [])
    if found and config.get_verbosity() > 0:
        terminalreporter.section("ssemock explore coverage")
        for nodeid, report in found:
            terminalreporter.write_line(f"{nodeid}: " + report.replace("\n", "\n    "))
