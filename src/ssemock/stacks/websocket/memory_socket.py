"""The in-memory socket of the sync WebSocket clients (``websockets.sync``): `MemorySocket` has
the part of the socket API they use (``sendall``, ``recv``, ``fileno``, ``shutdown``, ...). Its
first write is the handshake, dispatched to the players; then it serves the recorded conversation
(replay) or relays to the real server, recording both directions (record, pass-through).

``fileno()`` is the read end of a socketpair "doorbell", readable while something is queued
(websockets 17.3+ waits on it with a selector before each ``recv``): one byte rung when the
queue fills, taken back when it empties. (It was one byte per queued chunk: a bytewise replay
of a few kilobytes filled the socketpair's buffer and the writer blocked under the lock the
reader needed, issue 35.)"""

from __future__ import annotations

import functools
import socket
import threading
from collections import deque
from collections.abc import Callable
from typing import Any

import httpx
from respx.models import PassThrough

from ...plan.conversation import Conversation, Release, UnmatchedMessageError, skipped_stall
from ...plan.websocket.record import WsRecorder
from ...variants import timing as _timing
from .. import RecordSession, passing
from .memory import Watchdog, schedule, skip_stall

__all__ = ["MemorySocket"]

_HEAD_END = b"\r\n\r\n"


class MemorySocket:
    """A socket whose peer is ssemock (see the module's docstring). ``dispatch(url_headers)`` is
    called with the handshake head; ``opener()`` opens the real socket for a relay."""

    type = socket.SOCK_STREAM
    proto = 0

    def __init__(
        self,
        address: tuple[str, int],
        dispatch: Callable[[bytes, MemorySocket], httpx.Response],
        opener: Callable[[MemorySocket], Any],
    ) -> None:
        self.family = socket.AF_INET6 if ":" in str(address[0]) else socket.AF_INET
        self.address = address
        self.tls: Callable[[Any], Any] | None = None
        """Once the client wrapped this socket in TLS: the same wrapping of a relay's real socket."""
        self._dispatch, self._opener = dispatch, opener
        self._lock = threading.RLock()  # taken directly on the hot paths (C-level enter and exit)
        self._cond = threading.Condition(self._lock)
        self._inbox: deque[tuple[float, bytes | None]] = deque()
        self._eof = self._closed = False
        self._head = b""
        self._conversation: Conversation | None = None
        self._timing = _timing.instant
        self._real: Any = None
        self._recorder: WsRecorder | None = None
        self._timeout: float | None = None
        self._bell_r, self._bell_w = socket.socketpair()
        self._bell_r.setblocking(False)
        self._rung = False  # a byte is in the doorbell
        self._due: tuple[float, bytes | None] | None = None  # the chunk `ready` found due
        self.watchdogs: list[Watchdog] = []
        """The client's own timers on silence (the stack adds them): a stall one ends is ended."""
        self._waiting: tuple[float, bytes | None] | None = None  # the chunk the reader waits for
        self._quiet_since = _timing.clock.now()

    # -- the socket API ---------------------------------------------------------------------------

    def settimeout(self, timeout: float | None) -> None:
        self._timeout = timeout

    def gettimeout(self) -> float | None:
        return self._timeout

    def setblocking(self, flag: bool) -> None:
        return None

    def setsockopt(self, *args: Any) -> None:
        return None

    def getsockname(self) -> tuple[str, int]:
        return ("127.0.0.1", 50000)

    def getpeername(self) -> tuple[str, int]:
        return self.address

    def fileno(self) -> int:
        return self._bell_r.fileno()

    def send(self, data: bytes) -> int:
        self.sendall(data)
        return len(data)

    def sendall(self, data: bytes | bytearray | memoryview) -> None:
        data = bytes(data)
        if self._real is not None:
            if self._recorder is not None:
                self._recorder.sent(data)
            self._real.sendall(data)
            return
        if self._conversation is None:
            self._head += data
            at = self._head.find(_HEAD_END)
            if at < 0:
                return
            head, data = self._head[: at + 4], self._head[at + 4 :]
            try:
                answer = self._dispatch(head, self)
            except RecordSession as rec:
                self._relay(head, rec.recorder)
                return
            except PassThrough:
                self._relay(head, None)
                return
            self._conversation = conversation = answer.extensions["ssemock.conversation"]
            self._timing = answer.extensions["ssemock.timing"]
            conversation.on_release = self._queue  # what another connection of its group lets go
            self._queue(conversation.answer(head))
            if not data:
                return
        assert self._conversation is not None
        try:
            releases = self._conversation.feed(data)
        except UnmatchedMessageError:
            self._queue(self._conversation.close_for_mismatch())
            raise
        self._queue(releases)

    def recv(self, bufsize: int, flags: int = 0) -> bytes:
        with self._lock:  # the common case, one lock and one look at the clock: a chunk due now
            if self._inbox:
                head = self._inbox[0]
                due, chunk = head
                now = self._quiet_since if head is self._due else _timing.clock.now()
                if chunk is not None and due <= now:
                    if len(chunk) > bufsize:
                        self._inbox[0] = (due, chunk[bufsize:])
                        return chunk[:bufsize]
                    self._inbox.popleft()
                    self._quiet_since = now
                    if not self._inbox:
                        self._unring()
                    return chunk
        while True:
            with self._cond:
                self._cond.wait_for(lambda: bool(self._inbox) or self._eof or self._closed)
                if not self._inbox:
                    return b""
                head = self._inbox[0]
            wait = head[0] - _timing.clock.now()
            if wait <= 0:
                break
            instant = self._timing.factor is None  # (a stall: the client's read ends or skips it)
            fake = type(_timing.clock) is not _timing.Clock and not instant
            if fake and not self._watched(head[0]):  # a fake clock: what was slept is the test's
                _timing.clock.sleep(wait)
                break
            with self._cond:  # a close, or the client's close answered, ends the wait (or the stall)
                self._waiting = head  # (a stall one of the client's timers ends: see `stalled`)
                self._cond.notify_all()
                self._cond.wait_for(functools.partial(self._moved, head), None if fake else wait)
                self._waiting = None
                if self._closed:
                    return b""
                if self._inbox and self._inbox[0] is head:
                    break
        due, chunk = head
        with self._cond:
            if not self._inbox or self._inbox[0] is not head:  # dropped meanwhile: read again
                return self.recv(bufsize, flags)
            if chunk is None:
                self._inbox.popleft()
                self._eof = True
                if not self._inbox:
                    self._unring()
                return b""
            if len(chunk) > bufsize:
                self._inbox[0] = (due, chunk[bufsize:])
                return chunk[:bufsize]
            self._inbox.popleft()
            self._quiet_since = _timing.clock.now()
            if not self._inbox:
                self._unring()
            return chunk

    def ready(self) -> bool:
        """Whether a ``recv`` now returns at once: a chunk due now, or the end (for a selector
        that asks before each read, without a system call)."""
        if self._closed:
            return False
        try:  # no lock: only the reading thread takes chunks out, and it is the one asking
            head = self._inbox[0]
        except IndexError:
            return False
        due, chunk = head
        if chunk is None:
            return True
        now = _timing.clock.now()
        if due > now:
            return False
        self._due, self._quiet_since = head, now  # recv need not look at the clock again for it
        return True

    def _watched(self, due: float) -> bool:
        """Whether one of the client's timers ends a stall until ``due``."""
        return any(d.ends(self._quiet_since, due) is not None for d in self.watchdogs)

    def stalled(self, timeout: float | None) -> Watchdog | None:
        """The client waits ``timeout`` seconds (None: for ever) for a message that is not there:
        the timer of the client's (its keepalive) that ends the stall ahead before that wait
        ends, once the reading thread waits for the stalled chunk (all before it read); None when
        there is no such stall, or the wait comes first."""
        with self._cond:
            if self._closed or not self._inbox or self._inbox[0][0] <= _timing.clock.now():
                return None  # no stall ahead
            self._cond.wait_for(
                lambda: self._closed or not self._inbox or self._waiting is self._inbox[0], 5.0
            )
            if self._closed or not self._inbox or self._waiting is not self._inbox[0]:
                return None
            due, now = self._inbox[0][0], _timing.clock.now()
            ends = [(end, d) for d in self.watchdogs if (end := d.ends(self._quiet_since, due)) is not None]
        if not ends:
            return None
        end, dog = min(ends, key=lambda pair: pair[0])
        return None if timeout is not None and end - now >= timeout else dog

    def skip_stall(self, *, warn: bool) -> None:
        """Under ``instant`` timing, the stall the reading thread waits at (once it got there, as
        `stalled`) served now, a warning saying so when ``warn`` (no timeout of the client's was
        seen: one longer than the stall reads on, as it would live)."""
        if self._conversation is None or self._timing.factor is not None:
            return
        with self._cond:
            if self._closed or not self._inbox or self._inbox[0][0] <= _timing.clock.now():
                return
            self._cond.wait_for(
                lambda: self._closed or not self._inbox or self._waiting is self._inbox[0], 5.0
            )
            if self._closed or not self._inbox or self._waiting is not self._inbox[0]:
                return
            gap = skip_stall(self._inbox, _timing.clock.now())
            self._cond.notify_all()
        if gap and warn:
            skipped_stall(self._conversation, gap)

    def expire(self, dog: Watchdog) -> None:
        """``dog`` ends the stall now, the way it does (in its own thread, as the keepalive thread
        would): back once its close is answered (or the socket closed)."""
        self.watchdogs = []  # once
        due = self._inbox[0][0] if self._inbox else None
        done = threading.Event()

        def run() -> None:
            try:
                dog.expire()
            finally:
                done.set()
                with self._cond:
                    self._cond.notify_all()

        threading.Thread(target=run, name=f"ssemock-ws-{dog.name}", daemon=True).start()
        with self._cond:
            self._cond.wait_for(
                lambda: self._closed or not self._inbox or self._inbox[0][0] != due or done.is_set()
            )

    def _moved(self, head: tuple[float, bytes | None]) -> bool:
        return self._closed or not self._inbox or self._inbox[0] is not head

    def recv_into(self, buffer: Any, nbytes: int = 0, flags: int = 0) -> int:
        data = self.recv(nbytes or len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def shutdown(self, how: int) -> None:
        if self._real is not None:
            try:
                self._real.shutdown(how)
            except OSError:
                pass

    def close(self) -> None:
        with self._cond:
            if self._closed:
                return
            self._closed = True
            self._cond.notify_all()
        if self._real is not None:
            self._real.close()
        self._bell_w.close()
        self._bell_r.close()

    def stalls_past(self, timeout: float) -> bool:
        """Whether the next release is due more than ``timeout`` seconds from now: a recorded
        stall longer than the client's timeout (nothing due until the client sends is not one:
        another thread of the client may send, as it would live)."""
        if self._conversation is None:
            return False
        with self._cond:
            if self._closed or self._eof or not self._inbox:
                return False
            return self._inbox[0][0] - _timing.clock.now() > timeout

    # -- serving ----------------------------------------------------------------------------------

    def _queue(self, releases: list[Release]) -> None:
        now = _timing.clock.now()
        with self._cond:
            schedule(self._inbox, releases, self._timing, now)
            if self._inbox and not self._rung:
                try:
                    self._bell_w.send(b"!")
                    self._rung = True
                except OSError:
                    pass
            self._cond.notify_all()

    def _unring(self) -> None:
        """Take the doorbell's byte back (the queue is empty; under the lock)."""
        if self._rung:
            try:
                self._bell_r.recv(1)
            except (BlockingIOError, OSError):
                pass
            self._rung = False

    def _relay(self, head: bytes, recorder: WsRecorder | None) -> None:
        """Open the real connection and relay both ways (recording with ``recorder``)."""
        with passing(self.address[0]):
            self._real = self._opener(self)
        self._recorder = recorder
        if recorder is not None:
            recorder.sent(head)
        self._real.sendall(head)
        threading.Thread(target=self._pump, name="ssemock-ws-relay", daemon=True).start()

    def _pump(self) -> None:
        error: BaseException | None = None
        try:
            while True:
                data = self._real.recv(65536)
                if not data:
                    break
                if self._recorder is not None:
                    self._recorder.received(data)
                self._queue([Release(0.0, data)])
        except OSError as exc:
            error = exc
        if self._recorder is not None:
            self._recorder.finish(error)
        self._queue([Release(0.0, None)])
