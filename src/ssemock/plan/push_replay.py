"""Streams that answer other requests: a server-push stream held until those requests are made.

The legacy MCP transport (HTTP+SSE) opens one long-lived ``GET`` stream and POSTs every request
apart; each response arrives on the stream, correlated by JSON-RPC id alone. Replayed at once,
the stream would hand the client answers to requests it has not made yet. So a player keeps the
correlation ids of every request it matched ([`Requests`][ssemock.plan.push_replay.Requests]), and a replayed server-push
stream waits before each message that answers a request (where the protocol's ``holds`` says)
until that request has been made since the stream opened ([`Gate`][ssemock.plan.push_replay.Gate]). Everything else keeps
its recorded order and timing. Only requests that can come are waited for: those whose id a
request recorded after the stream opened carries ([`holds_for`][ssemock.plan.push_replay.holds_for]); a message answering any
other id (a hand-made stream, a request the recording never made) plays straight away. A request
that never comes ends the wait with the client's own
read timeout, after at most the client's read timeout or [`HOLD_LIMIT`][ssemock.plan.push_replay.HOLD_LIMIT].
"""

# One core serves every stack: the replay stream's steps are the same for sync and async reads,
# and only the wait itself differs at the edge (a threading.Condition for a thread, an
# asyncio.Event woken by the player for an event loop, short sleeps under trio).

from __future__ import annotations

import asyncio
import math
import threading
import time
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from .. import protocols as _protocols
from ..store.cassette import Interaction

__all__ = ["HOLD_LIMIT", "Gate", "Hold", "Idle", "Requests", "announces", "holds_for"]

HOLD_LIMIT = 30.0
"""The longest a replayed stream waits for a request it answers (seconds) when the client's read timeout is longer or unset: a test whose client never makes the request fails, never hangs."""
_POLL = 0.002  # seconds between looks where no asyncio loop can be woken (trio), doubling ...
_POLL_MAX = 0.05  # ... up to this: a stream kept open for minutes looks 20 times a second


def announces(interaction: Interaction) -> bool:
    """Whether the events of a recorded stream announce what later requests did
    (`ssemock.protocols.follows`: an MCP listen stream's changes), so replay holds them. Only the
    answer to a correlated request (one with JSON-RPC ids, as a listen request) can: that cheap
    look at the request comes first, since ``follows`` searches the whole body (3 ms a replay of
    a 6.7 MB stream, a tenth of its cost per chunk)."""
    request, response = interaction.request, interaction.response
    return bool(_protocols.request_ids(request.body)) and bool(_protocols.follows(response.body))


def holds_for(
    interactions: Sequence[Interaction],
    index: int,
    *,
    found: Callable[[bytes], Iterable[tuple[int, frozenset[Any]]]] | None = None,
) -> Callable[[bytes], list[tuple[int, frozenset[Any]]]]:
    """Where the server-push stream of ``interactions[index]`` waits (``(offset, ids)``, as
    `ssemock.protocols.holds`), for the requests that can come only: those whose correlation
    id a request recorded after the stream opened (a later interaction) carries. Waiting for any
    other id would end in a read timeout, since no request could ever be matched for it. An
    event that announces what later requests did (`ssemock.protocols.follows`: an MCP listen
    stream's change notifications) waits for the first request recorded after the stream opened.
    ``found``: where the body answers which ids (default `ssemock.protocols.holds`; serve
    passes a cache of it per body)."""
    asked = [ids for x in interactions[index + 1 :] if (ids := _protocols.request_ids(x.request.body))]
    later = {i for ids in asked for i in ids}
    first = frozenset(asked[0]) if asked else frozenset()
    find = found or _protocols.holds

    def holds(body: bytes) -> list[tuple[int, frozenset[Any]]]:
        waits = [(offset, ids & later) for offset, ids in find(body) if ids & later]
        if first:  # what later requests did (a listen stream's changes) waits for the next request
            waits += [(offset, first) for offset in _protocols.follows(body)]
        merged: dict[int, frozenset[Any]] = {}
        for offset, ids in waits:
            merged[offset] = merged.get(offset, frozenset()) | ids
        return sorted(merged.items())

    return holds


class Requests:
    """The correlation ids (JSON-RPC ids) of the requests a player matched: for each id, when it
    was last requested (a position in the order requests came); waking the streams that wait
    for them, in any thread or event loop.

    ``only_wanted=True`` (``ssemock serve``, which runs for ever): only the ids an open held
    stream waits for ([`want`][ssemock.plan.push_replay.Requests.want]) are kept, and dropped when no open stream wants them any
    more, so the ledger never holds more ids than the cassettes' held streams wait for,
    however many requests come."""

    def __init__(self, *, only_wanted: bool = False) -> None:
        self._last: dict[Any, int] = {}  # id -> position of the latest request carrying it
        self._count = 0  # requests with ids so far (the next position)
        self._wanted: Counter[Any] | None = Counter() if only_wanted else None
        self._changed = threading.Condition()
        self._loops: list[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = []
        self.closed = False
        """Its player stopped: no request will come any more."""

    def __len__(self) -> int:
        """How many ids the ledger holds."""
        with self._changed:
            return len(self._last)

    def mark(self) -> int:
        """Where the log stands now: a stream opened now counts only the requests made from here."""
        with self._changed:
            return self._count

    def want(self, ids: Iterable[Any]) -> int:
        """A held stream waiting for ``ids`` opens now: they are kept from here (see
        ``only_wanted``) until [`unwant`][ssemock.plan.push_replay.Requests.unwant]; returns [`mark`][ssemock.plan.push_replay.Requests.mark]."""
        with self._changed:
            if self._wanted is not None:
                self._wanted.update(ids)
            return self._count

    def unwant(self, ids: Iterable[Any]) -> None:
        """The held stream that wanted ``ids`` ended: ids no open stream wants are dropped."""
        with self._changed:
            if self._wanted is None:
                return
            for i in ids:
                self._wanted[i] -= 1
                if self._wanted[i] <= 0:
                    del self._wanted[i]
                    self._last.pop(i, None)

    def add(self, ids: Iterable[Any]) -> None:
        """A request with these ids was matched: wake every stream waiting."""
        ids = list(ids)
        if ids:
            with self._changed:
                wanted = self._wanted
                for i in ids:
                    if wanted is None or i in wanted:
                        self._last[i] = self._count
                self._count += 1
            self._wake()

    def close(self) -> None:
        """The player stopped: every stream still waiting gives up now (none hangs on after)."""
        with self._changed:
            self.closed = True
        self._wake()

    def _wake(self) -> None:
        with self._changed:
            self._changed.notify_all()
            waiting = list(self._loops)
        for loop, event in waiting:
            try:
                loop.call_soon_threadsafe(event.set)
            except RuntimeError:  # its loop is closed: nobody waits there any more
                pass

    def missing(self, ids: Collection[Any], since: int) -> list[Any]:
        """Those of ``ids`` not requested since position ``since``."""
        with self._changed:
            return [i for i in ids if self._last.get(i, -1) < since]

    def wait(self, ids: Collection[Any], since: int, timeout: float) -> list[Any]:
        """Block this thread until every one of ``ids`` was requested since ``since`` or
        ``timeout`` seconds pass; the ids still missing ([] when all came)."""
        self.until(lambda: not self.missing(ids, since), timeout)
        return self.missing(ids, since)

    async def wait_async(self, ids: Collection[Any], since: int, timeout: float) -> list[Any]:
        """[`wait`][ssemock.plan.push_replay.Requests.wait] without blocking the event loop (the request is usually made by another
        task on the same loop)."""
        await self.until_async(lambda: not self.missing(ids, since), timeout)
        return self.missing(ids, since)

    def wake(self) -> None:
        """Have every waiter look again (a stream its client closed stops idling)."""
        self._wake()

    def until(self, done: Callable[[], bool], timeout: float | None) -> bool:
        """Block this thread until ``done()`` or the player stopped (True), or ``timeout`` seconds
        passed (False; None: no limit). ``done`` is asked again at each `add`, `wake` and `close`."""
        deadline = time.monotonic() + (math.inf if timeout is None else timeout)
        with self._changed:
            while True:
                if done() or self.closed:
                    return True
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._changed.wait(None if left == math.inf else left)

    async def until_async(self, done: Callable[[], bool], timeout: float | None) -> bool:
        """[`until`][ssemock.plan.push_replay.Requests.until] without blocking the event loop: an
        asyncio.Event the player sets, or short sleeps under trio (growing: no busy loop)."""
        deadline = time.monotonic() + (math.inf if timeout is None else timeout)
        poll = _POLL
        try:
            loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:  # not asyncio: trio through anyio
            loop = None
        while True:
            event = asyncio.Event() if loop is not None else None
            with self._changed:
                if done() or self.closed:
                    return True
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                if loop is not None and event is not None:
                    self._loops.append((loop, event))
            if loop is None or event is None:
                import anyio

                await anyio.sleep(min(left, poll))
                poll = min(poll * 2, _POLL_MAX)
                continue
            try:
                await asyncio.wait_for(event.wait(), None if left == math.inf else left)
            except TimeoutError:
                pass
            finally:
                with self._changed:
                    self._loops.remove((loop, event))


@dataclass(frozen=True)
class Gate:
    """One replayed stream's view of its player's requests: it counts those made ``since`` it was
    opened, waits at most ``timeout`` seconds for each, and raises ``error(missing ids, why)``
    (the client stack's read timeout, naming the cassette, the interaction and the ids) when
    they never come."""

    requests: Requests
    """The player's requests."""
    since: int
    """How many requests had been made when the stream opened."""
    timeout: float
    """How long to wait for each request, in seconds."""
    error: Callable[[list[Any], str], BaseException]
    """Makes the error raised when requests never come: `error(missing_ids, why)`."""

    def hold(self, ids: frozenset[Any]) -> Hold:
        """The step that waits for the requests ``ids`` (what the replay core yields)."""
        return Hold(self, ids)

    def idle(self, closed: Callable[[], bool], timeout: float | None, error: BaseException | None) -> Idle:
        """The step that keeps the stream open after its last chunk (see `Idle`)."""
        return Idle(self.requests, closed, timeout, error)

    def fail(self, missing: list[Any]) -> BaseException:
        """The error for requests ``missing`` that never came (or could no longer come)."""
        why = (
            "the player stopped before it was made"
            if self.requests.closed
            else f"none was made within {self.timeout:g} s since the stream opened"
        )
        return self.error(missing, why)


@dataclass(frozen=True)
class Hold:
    """A step of a replayed stream: the requests ``ids`` must be made before the next chunk."""

    gate: Gate
    """The gate the requests are awaited through."""
    ids: frozenset[Any]
    """The request ids that must be made before the next chunk."""

    def wait(self) -> None:
        """Block until the requests are made; raise the gate's error when they never are."""
        gate = self.gate
        missing = gate.requests.wait(self.ids, gate.since, gate.timeout)
        if missing:
            raise gate.fail(missing)

    async def wait_async(self) -> None:
        """[`wait`][ssemock.plan.push_replay.Hold.wait] on an event loop."""
        gate = self.gate
        missing = await gate.requests.wait_async(self.ids, gate.since, gate.timeout)
        if missing:
            raise gate.fail(missing)


@dataclass(frozen=True)
class Idle:
    """A step of a replayed stream after its last chunk, where the recorded stream was still open
    when its client closed it (`ssemock.protocols.stays_open`: an MCP listen stream): as a live
    one, it stays open sending nothing until the client closes it (``closed()``, or its task is
    cancelled), the player stops, or the client's read timeout passes (``error`` raised then)."""

    requests: Requests
    """The player's requests (their `close` releases the stream)."""
    closed: Callable[[], bool]
    """Whether the client closed the stream."""
    timeout: float | None
    """The client's read timeout in seconds (None: none)."""
    error: BaseException | None
    """The client stack's read timeout error, raised when ``timeout`` passes."""

    def wait(self) -> None:
        """Block until released; raise the read timeout when it passes first."""
        if not self.requests.until(self.closed, self.timeout):
            raise self.error or TimeoutError("read timeout")

    async def wait_async(self) -> None:
        """[`wait`][ssemock.plan.push_replay.Idle.wait] on an event loop."""
        if not await self.requests.until_async(self.closed, self.timeout):
            raise self.error or TimeoutError("read timeout")
