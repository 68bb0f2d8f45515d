"""A test cut short, not failed (Ctrl-C, SystemExit, a cancelled task, pytest-timeout): its cassette is left as it was and the partial recording kept beside it, masked."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from ..plan.errors import NetworkBlockedError, RecordingVariantError, UnmatchedRequestError

if TYPE_CHECKING:  # the rest is imported when a test uses ssemock: an unused plugin costs nothing
    pass


_CUT_SHORT = pytest.StashKey[bool]()  # the test was interrupted, not failed: keep its cassette


def _cut_short(exc: BaseException) -> bool:
    """Whether a test's exception interrupted it rather than ended it: anything but an ordinary
    error or pytest's own outcomes (fail, skip, xfail) — SystemExit, a cancelled asyncio task,
    KeyboardInterrupt, pytest.exit — or pytest-timeout firing (see pytest_timeout_set_timer)."""
    outcomes = (
        Exception,
        pytest.fail.Exception,
        pytest.skip.Exception,
        pytest.xfail.Exception,
        UnmatchedRequestError,
        NetworkBlockedError,
        RecordingVariantError,
    )  # ssemock's own failures end a test too
    return not isinstance(exc, outcomes) or getattr(exc, _TIMED_OUT, False)


_TIMED_OUT = "_ssemock_timed_out"  # set on pytest-timeout's exception by the wrapped handler


@pytest.hookimpl(wrapper=True, optionalhook=True)
def pytest_timeout_set_timer(item: pytest.Item, settings: Any) -> Any:
    """pytest-timeout's timer, wrapped so that a recording it cuts never replaces a good cassette:
    the signal method's exception is marked as an interruption (not a test failure); the thread
    method ends the process at once (``os._exit``), so the partials of the recordings running are
    kept (masked) first."""
    result = yield
    import signal
    import threading

    handler = signal.getsignal(signal.SIGALRM) if hasattr(signal, "SIGALRM") else None
    if getattr(settings, "method", None) == "signal" and callable(handler):
        signal.signal(signal.SIGALRM, _marking(handler))
    for timer in threading.enumerate():  # pytest-timeout names its timer "pytest_timeout <node id>"
        if (
            isinstance(timer, threading.Timer)
            and timer.name.endswith(f" {item.nodeid}")
            and not timer.finished.is_set()
        ):
            timer.function = _keeping_partials(timer.function)
    return result


def _marking(handler: Any) -> Any:
    def marked(signum: int, frame: Any) -> Any:
        __tracebackhide__ = True
        try:
            return handler(signum, frame)
        except BaseException as exc:
            setattr(exc, _TIMED_OUT, True)
            raise

    return marked


def _keeping_partials(function: Any) -> Any:
    def keeping(*args: Any, **kwargs: Any) -> Any:
        import sys

        from ..player.replay import recording_players

        for player in recording_players():
            try:
                partial = player.keep_partial()
            except Exception as exc:  # the process ends next whatever happens here
                print(
                    f"ssemock: timed out while recording {player.path}: the partial recording could not be "
                    f"kept ({type(exc).__name__})",
                    file=sys.stderr,
                )
                continue
            print(
                f"ssemock: timed out while recording: {player.path} is unchanged"
                + (f"; the partial recording is kept in {partial}" if partial else ""),
                file=sys.stderr,
            )
        return function(*args, **kwargs)

    return keeping


def pytest_keyboard_interrupt(excinfo: pytest.ExceptionInfo[BaseException]) -> None:
    for config in _configs:
        config.stash[_INTERRUPTED] = True


_configs: list[pytest.Config] = []  # the sessions running here (pytester can nest one)


_INTERRUPTED = pytest.StashKey[bool]()
