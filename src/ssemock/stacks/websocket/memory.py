"""In-memory connections for WebSocket stacks: the client library keeps its own code (handshake,
masking, framing, keepalive, close) and talks to a `ssemock.plan.conversation.Conversation`
instead of a socket. `MemoryTransport` is the asyncio transport; `TeeTransport` records a real
connection (both directions into a `ssemock.plan.websocket.record.WsRecorder`)."""

from __future__ import annotations

import asyncio
import collections
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import repeat
from operator import attrgetter
from typing import Any, TypeVar

from ...plan.conversation import Conversation, UnmatchedMessageError, skipped_stall
from ...plan.release import Reads, Release, each_read
from ...plan.websocket.record import WsRecorder
from ...variants.timing import Timing

__all__ = [
    "MemoryTransport",
    "TeeTransport",
    "Watchdog",
    "keepalive",
    "schedule",
    "skip_stall",
    "tee_protocol",
]

_HEAD_END = b"\r\n\r\n"
_ENDS_PENDING, _STALL = attrgetter("ends_pending"), attrgetter("stall")
_Data = TypeVar("_Data")
_TURNS = 5  # the loop turns a client has, after its write, to begin its next read (and its timeout)


@dataclass
class Watchdog:
    """A timer of the client's own that ends a silent connection (websockets' keepalive, aiohttp's
    heartbeat): ``ends(since, due)`` is when it ends a silence from ``since`` until ``due`` (times
    on the replay's clock), or None when it does not; then ``expire()`` ends the connection the
    way that timer does, at once instead of after the wait (nothing could have arrived meanwhile).
    ``owner``: the object whose own loop timers are that timer's (not someone else's deadline)."""

    name: str
    ends: Callable[[float, float], float | None]
    expire: Callable[[], None]
    owner: Any = None


def schedule(
    inbox: collections.deque[tuple[float, bytes | None]],
    releases: Sequence[Release],
    timing: Timing,
    now: float,
) -> None:
    """Queue ``releases`` on a threaded stack's ``inbox`` as ``(due, data)``, each due no earlier
    than the one before it (a release that ends what is pending drops what was queued first). The
    caller holds the lock its reads wait on."""
    if any(r.ends_pending for r in releases):
        inbox.clear()
    due = inbox[-1][0] if inbox else now
    for r in releases:
        due = max(due, now + r.due_in(timing))
        inbox.append((due, r.data))


def skip_stall(inbox: collections.deque[tuple[float, _Data]], now: float) -> float:
    """The stall ahead of a replay's queue ``inbox`` served now (under ``instant`` timing, when no
    timeout of the client's ends it): every queued release moved as much earlier; the seconds
    skipped (0: no stall ahead). A threaded stack holds the lock its reads wait on, and wakes them."""
    if not inbox or inbox[0][0] <= now:
        return 0.0
    gap = inbox[0][0] - now
    for i, (due, data) in enumerate(list(inbox)):
        inbox[i] = (max(now, due - gap), data)
    return gap


def keepalive(
    ping_interval: float | None, ping_timeout: float | None, started: float
) -> Callable[[float, float], float | None]:
    """``Watchdog.ends`` of a keepalive started at ``started`` that pings every ``ping_interval``
    and gives up when no pong came within ``ping_timeout``: the first ping sent during the silence
    waits for a pong queued behind it, so the silence ends the connection when that ping's
    deadline comes before the silence does."""

    def ends(since: float, due: float) -> float | None:
        if not ping_interval or ping_interval <= 0 or ping_timeout is None:
            return None
        ticks = max(1, math.ceil((since - started) / ping_interval))
        end = started + ticks * ping_interval + ping_timeout
        return end if end < due else None

    return ends


def _first_deadline(loop: asyncio.AbstractEventLoop, before: float, owners: set[Any]) -> float | None:
    """The first deadline on ``loop``'s timers due before ``before``: a timeout's (``wait_for``,
    ``asyncio.timeout``, async_timeout), not a sleep's, a replay's or the ``owners``' own timers.
    (CPython's loop keeps them in ``_scheduled``; another loop: None, nothing known.)"""
    whens = []
    for handle in getattr(loop, "_scheduled", ()):
        if handle.cancelled() or handle.when() >= before:
            continue
        callback = getattr(handle, "_callback", None)
        bound = getattr(callback, "__self__", None)
        name = getattr(callback, "__name__", "")
        if bound is not None and (bound in owners or isinstance(bound, MemoryTransport)):
            continue
        if name == "_release_waiter" or (name == "_on_timeout" and type(bound).__name__ == "Timeout"):
            whens.append(handle.when())
    return min(whens) if whens else None


class MemoryTransport(asyncio.Transport):
    """The asyncio transport of a replayed WebSocket: what the client writes goes to the
    conversation; what it releases reaches ``protocol.data_received`` at its due time (under
    ``timing``), one read per call, never joined. It takes runs of reads (`Reads`): under
    ``instant`` timing a run is one queue entry, handed a read at a time in one pump."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        protocol: asyncio.Protocol,
        conversation: Conversation,
        timing: Timing,
        peer: tuple[str, int] = ("127.0.0.1", 443),
    ) -> None:
        super().__init__()
        self._loop, self._protocol, self.conversation, self._timing = loop, protocol, conversation, timing
        self._head = b""
        self._open = False
        self._closing = False
        self._lost = False
        self._due = 0.0
        self._queue: collections.deque[tuple[float, bytes | list[bytes] | None]] = collections.deque()
        self._timer: asyncio.Handle | None = None
        self._turns = 0
        self._seen = False  # a timeout of the client's was waited for during the stall ahead
        self._peer = peer
        self.watchdogs: list[Watchdog] = []
        """The client's own timers on silence (the stack adds them): a stall one ends is ended."""
        self.opened = self.now()
        """When the handshake was answered (on `now`'s clock)."""
        self._quiet_since = self.opened
        self._ended = 0  # how many times what was pending was dropped (a run stops there)
        conversation.on_release = self._elsewhere
        conversation.runs = True

    def _elsewhere(self, releases: list[Release]) -> None:
        """What another connection of the conversation's group let go: queued now on this loop's
        thread (after what is queued already), from another thread through the loop."""
        try:
            here = asyncio.get_running_loop() is self._loop
        except RuntimeError:
            here = False
        if here:
            self._deliver(releases)
        elif not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._deliver, releases)

    # -- what the client writes -----------------------------------------------------------------

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if self._closing:
            return
        data = bytes(data)
        if not self._open:
            self._head += data
            at = self._head.find(_HEAD_END)
            if at < 0:
                return
            head, data = self._head[: at + 4], self._head[at + 4 :]
            self._open = True
            self._deliver(self.conversation.answer(head))
            if not data:
                return
        try:
            releases = self.conversation.feed(data)
        except UnmatchedMessageError:
            self._deliver(self.conversation.close_for_mismatch())
            raise
        self._deliver(releases)

    def writelines(self, list_of_data: Any) -> None:
        self.write(b"".join(list_of_data))

    # -- what the server sends ------------------------------------------------------------------

    def now(self) -> float:
        """The replay's clock: the event loop's (its timers serve each release at its due time)."""
        return self._loop.time()

    def stalls_past(self, timeout: float) -> bool:
        """Whether the next release is due more than ``timeout`` seconds from now: a stall longer
        than the client's timeout (nothing due until the client sends is not one: another task
        of the client may send, as it would live)."""
        if self._lost or not self._queue:
            return False
        return self._queue[0][0] - self.now() > timeout

    def ends_within(self, seconds: float) -> bool:
        """Whether one of the client's timers ends the stall ahead within ``seconds`` from now."""
        if self._lost or not self._queue:
            return False
        due, now = self._queue[0][0], self.now()
        return any(
            (end := d.ends(self._quiet_since, due)) is not None and end < now + seconds
            for d in self.watchdogs
        )

    def _deliver(self, releases: Sequence[Release]) -> None:
        now = self.now()
        if any(map(_ENDS_PENDING, releases)):
            self._queue.clear()
            self._ended += 1
            self._due = 0.0
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
        due, queue = self._due, self._queue
        if self._timing.factor is None and not any(map(_STALL, releases)):
            # instant timing and no stall: each one due now (`Release.due_in`), a run of reads
            # queued as one entry (its pieces)
            self._due = due = due if due > now else now
            queue.extend([(due, r.pieces if type(r) is Reads else r.data) for r in releases])
            self._arm()
            return
        # in order, a read each: the loop's timers do not keep the order of equal times
        releases = each_read(releases)
        for r, wait in zip(releases, map(Release.due_in, releases, repeat(self._timing))):
            at = now + wait
            if at > due:
                due = at
            queue.append((due, r.data))
        self._due = due
        self._arm()

    def _arm(self) -> None:
        """Serve the next release at its due time; a stall one of the client's timers ends is
        ended at once, the way that timer ends it."""
        if self._timer is not None or not self._queue:
            return
        due = self._queue[0][0]
        if due > self.now() and (
            self._timing.factor is None  # (under instant, only a stall is due later)
            or any(d.ends(self._quiet_since, due) is not None for d in self.watchdogs)
        ):
            # once the client has had its turns (a wait_for of its own around its next read)
            self._turns = _TURNS
            self._timer = self._loop.call_soon(self._settle)
            return
        self._timer = self._loop.call_at(due, self._pump)

    def _settle(self) -> None:
        """A stall one of the client's timers ends: the first to end it ends it now, unless a
        deadline of someone else's on the loop (the user's ``wait_for``, ``asyncio.timeout``)
        comes first: then it is waited for, as it would be live, and the stall looked at again.
        Under ``instant`` timing a stall nothing ends is skipped (`_skip`)."""
        self._timer = None
        if self._lost or not self._queue:
            return
        due, now = self._queue[0][0], self.now()
        ends = [(end, d) for d in self.watchdogs if (end := d.ends(self._quiet_since, due)) is not None]
        if due > now and not ends and self._timing.factor is None:
            if self._turns > 0:  # the client's next read may not have begun yet
                self._turns -= 1
                self._timer = self._loop.call_soon(self._settle)
                return
            owners = {d.owner for d in self.watchdogs} - {None}
            first = _first_deadline(self._loop, due, owners)
            if first is not None:  # a timeout of the client's ends it first: waited, as live
                self._seen = True
                self._timer = self._loop.call_at(first, self._after_deadline)
                return
            self._skip(seen=self._seen or _first_deadline(self._loop, math.inf, owners) is not None)
            return
        if due <= now or not ends:
            self._arm()
            return
        end, dog = min(ends, key=lambda pair: pair[0])
        first = _first_deadline(self._loop, end, {d.owner for d in self.watchdogs} - {None})
        if first is not None:
            self._timer = self._loop.call_at(first, self._after_deadline)
            return
        self.watchdogs = []  # once
        dog.expire()

    def _skip(self, *, seen: bool) -> None:
        """Under ``instant``: the stall ahead served now, everything queued moved as much earlier;
        a warning says so unless a timeout of the client's was seen (one longer than the stall
        reads on after it; one shorter has ended, as it would live)."""
        gap = skip_stall(self._queue, self.now())
        self._due -= gap
        self._seen = False
        if not seen:
            skipped_stall(self.conversation, gap)
        self._pump()

    def _after_deadline(self) -> None:
        self._timer = self._loop.call_soon(self._settle)  # after what that deadline wakes

    def _pump(self) -> None:
        """Hand the client every read due now, in order, one ``data_received`` call each (the
        queue is looked at again after each, and a run stops: the client's answer may end what
        is pending)."""
        self._timer = None
        now = self.now()
        queue, protocol, lost = self._queue, self._protocol, self._lost  # (lost only later: `_lose`)
        if queue and queue[0][0] <= now and not lost:
            self._quiet_since = now  # (when the last one was handed: all are, now)
        while queue and queue[0][0] <= now:
            data = queue.popleft()[1]
            if lost:
                continue
            if isinstance(data, list):  # a run of reads (`Reads`)
                ended = self._ended
                for piece in data:
                    protocol.data_received(piece)
                    if self._ended != ended:
                        break
            elif data is not None:
                protocol.data_received(data)
            elif not protocol.eof_received():
                self.close()
        self._arm()

    # -- asyncio.Transport ------------------------------------------------------------------------

    def is_closing(self) -> bool:
        return self._closing

    def close(self) -> None:
        if not self._closing:
            self._closing = True
            self._loop.call_soon(self._lose)

    def _lose(self) -> None:
        if not self._lost:
            self._lost = True
            self._protocol.connection_lost(None)

    def abort(self) -> None:
        self.close()

    def can_write_eof(self) -> bool:
        return True

    def write_eof(self) -> None:
        return None

    def pause_reading(self) -> None:
        return None

    def resume_reading(self) -> None:
        return None

    def is_reading(self) -> bool:
        return not self._closing

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        return None

    def get_write_buffer_size(self) -> int:
        return 0

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"peername": self._peer, "sockname": ("127.0.0.1", 50000)}.get(name, default)


class TeeTransport(asyncio.Transport):
    """A real transport whose writes are recorded (the client's bytes); everything else is the
    real transport's."""

    def __init__(self, real: asyncio.Transport, recorder: WsRecorder) -> None:
        super().__init__()
        self._real, self._recorder = real, recorder

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self._recorder.sent(bytes(data))
        self._real.write(data)

    def writelines(self, list_of_data: Any) -> None:
        self.write(b"".join(list_of_data))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    def is_closing(self) -> bool:
        return self._real.is_closing()

    def close(self) -> None:
        self._real.close()

    def abort(self) -> None:
        self._real.abort()

    def can_write_eof(self) -> bool:
        return self._real.can_write_eof()

    def write_eof(self) -> None:
        self._real.write_eof()

    def pause_reading(self) -> None:
        self._real.pause_reading()

    def resume_reading(self) -> None:
        self._real.resume_reading()

    def is_reading(self) -> bool:
        return self._real.is_reading()

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        self._real.set_write_buffer_limits(high, low)

    def get_write_buffer_size(self) -> int:
        return self._real.get_write_buffer_size()

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self._real.get_extra_info(name, default)


def tee_protocol(protocol: Any, recorder: WsRecorder) -> None:
    """Record what reaches ``protocol`` (an asyncio protocol over a real transport): its
    ``data_received`` and ``connection_lost`` are wrapped on the instance."""
    received, lost = protocol.data_received, protocol.connection_lost

    depth = [0]

    def data_received(data: bytes) -> None:
        if not depth[0]:  # a protocol may feed itself again (aiohttp: the bytes after the 101)
            recorder.received(bytes(data))
        depth[0] += 1
        try:
            received(data)
        finally:
            depth[0] -= 1

    def connection_lost(exc: BaseException | None) -> None:
        recorder.finish(exc)
        lost(exc)

    data_received.__wrapped__ = received  # type: ignore[attr-defined]
    protocol.data_received = data_received
    protocol.connection_lost = connection_lost
