"""`ssemock.commands.stopping.Stop`, what ``ssemock serve`` and ``ssemock proxy`` wait on: the
first SIGINT or SIGTERM wakes the main thread whichever thread takes it, one that came before
the wait ends it at once, and the handlers are restored after. In-process: the signals are sent
to this process's own threads (``signal.pthread_kill``); the 50 stops of a real proxy are in
``tests/test_proxy.py``."""

from __future__ import annotations

import os
import signal
import threading

from ssemock.commands.stopping import Stop


def test_a_signal_another_thread_takes_wakes_the_wait() -> None:
    for signum in (signal.SIGTERM, signal.SIGINT):
        with Stop() as stop:
            # a thread signals itself: its C-level handler runs there, never in the main thread
            taker = threading.Thread(target=lambda s=signum: signal.pthread_kill(threading.get_ident(), s))
            taker.start()
            assert stop.wait() == signum
        taker.join(60)


def test_a_signal_before_the_wait_ends_it_at_once_and_a_later_one_is_absorbed() -> None:
    before = (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM), signal.set_wakeup_fd(-1))
    signal.set_wakeup_fd(before[2])
    with Stop() as stop:
        os.kill(os.getpid(), signal.SIGTERM)  # (during the servers' start: noted, not raised)
        assert stop.wait() == signal.SIGTERM
        os.kill(os.getpid(), signal.SIGINT)  # while it stops: no KeyboardInterrupt
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before[:2]
    assert signal.set_wakeup_fd(before[2]) == before[2]


def test_sigint_ignored_at_the_start_stays_ignored() -> None:
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # (a background job of a script)
    try:
        with Stop() as stop:
            assert stop.signals == {signal.SIGTERM}
            assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous)
