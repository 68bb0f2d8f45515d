"""How ``ssemock serve`` and ``ssemock proxy`` wait for Ctrl-C or SIGTERM while their servers run
in other threads: `Stop`.

Why not ``threading.Event().wait()`` in the main thread: CPython runs a signal's Python handler in
the main thread, but the kernel may deliver a process's signal to any of its threads; one that a
server thread takes never interrupts the main thread's lock wait, which then sleeps on (with both
cores busy, 8 to 12 of 20 proxy stops hung). Here the main thread waits in ``select`` on the
signal module's wakeup file descriptor, which the C-level handler writes to in whichever thread
runs it: the first signal wakes the main thread every time.
"""

from __future__ import annotations

import select
import signal
import socket
from types import FrameType, TracebackType
from typing import Any

__all__ = ["Stop"]


class Stop:
    """Within its block, the first SIGINT or SIGTERM (whichever thread takes it) is noted, never
    raised: `wait` returns it, at once when it came already (during the servers' start); one
    that comes while the command stops (keeping what it recorded) is absorbed. SIGINT stays
    ignored when the process started with it ignored (a background job of a script). The
    handlers and the wakeup descriptor there before are restored on exit. The main thread only
    (as every signal handler)."""

    def __init__(self) -> None:
        self.signals = frozenset(
            {signal.SIGTERM}
            | ({signal.SIGINT} if signal.getsignal(signal.SIGINT) != signal.SIG_IGN else set())
        )
        """The signals that stop the command."""
        self.received: int | None = None
        """The first of them that came (None: none yet)."""
        self._previous: dict[int, Any] = {}
        self._previous_fd = -1

    def __enter__(self) -> Stop:
        self._reader, self._writer = socket.socketpair()
        for s in (self._reader, self._writer):
            s.setblocking(False)
        try:
            self._previous_fd = signal.set_wakeup_fd(self._writer.fileno(), warn_on_full_buffer=False)
        except ValueError:  # not the main thread
            self._reader.close()
            self._writer.close()
            raise
        for signum in self.signals:
            self._previous[signum] = signal.signal(signum, _noted)
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None
    ) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        signal.set_wakeup_fd(self._previous_fd)
        self._reader.close()
        self._writer.close()

    def wait(self) -> int:
        """Block until one of `signals` comes; its number."""
        while self.received is None:
            select.select([self._reader], [], [])
            try:
                numbers = self._reader.recv(512)
            except BlockingIOError:  # (woken by nothing to read)
                continue
            self.received = next((n for n in numbers if n in self.signals), None)
        return self.received


def _noted(signum: int, frame: FrameType | None) -> None:
    """The Python-level handler: nothing (`Stop.wait` reads the signal from the wakeup descriptor).
    A handler is needed all the same: without one, the C-level handler that writes there is not
    installed (SIGTERM's default kills the process, SIGINT's raises KeyboardInterrupt)."""
