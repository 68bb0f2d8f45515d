"""A server-push stream on a recording run: served as its replay will serve it, as it arrives.

A recording run with a chunking, transform or fault set gives the client what the replay run
will give it. Most streams end, so the stack reads the live one whole into the recording and
serves its replay. A server-push stream (an event stream answering a GET, such as the legacy MCP
transport's) may never end, so it is served in increments instead: each time the live stream
completes another event, the recording so far, up to its last whole event, is planned through
the same [`plan_response`][ssemock.plan_response] a replay uses, and the client gets the planned
chunks beyond what it already has. At the live end (the server closed, the recording hit
``max_body_bytes``, the connection failed) the whole recording is planned and the rest served,
its error included.

When every variant cuts each event on its own (a chunking that says so, `Chunking.by_event`,
and no transform, fault nor ``before_record_response`` hook), only the events that completed
since the last plan are read from the recording (``since``) and planned, and their chunks follow
what the client has: the work is proportional to what arrived, not to the whole recording at
every event (``bench/push_stream.py``).

That is exact for a chunking, transform or fault whose plan of a body ending at an event
boundary is the start of its plan of any longer body: each declares it (``needs_end`` is None;
[`needs_end`][ssemock.plan.push_recording.needs_end] lists the ones that do not, and the player refuses them
on a server-push stream with [`RecordingVariantError`][ssemock.RecordingVariantError]). The one
difference a client can see is a seam: where a recorded chunk spanned an event boundary and the
next event had not fully arrived, the client's chunk ends at that boundary (it never gets a cut
inside an event that the replay would not give it).

`Live` is the planner (no I/O, shared by every stack, sync and async); `LiveStream` pulls the
live pieces through the stack's teed stream and paces what `Live` hands out, as
`ssemock.plan.serving.ReplayStream` does.
"""

from __future__ import annotations

import bisect
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, replace

from .. import framing as _framing
from ..store.cassette import Response
from ..variants import chunking as _chunking
from ..variants import faults as _faults
from ..variants import timing as _timing
from ..variants import transforms as _transforms
from .serving import Plan, ReplayStream, skipped_stall

__all__ = ["Live", "LiveSource", "LiveStream", "needs_end", "prefix"]


@dataclass
class LiveSource:
    """The live response a recording run serves from, as its stack reads it: ``pieces`` yields
    (sync or async) each piece as it arrives, teed into the recording on its way; ``close`` /
    ``aclose`` close it as a client's close does (draining the rest into the recording)."""

    pieces: Iterator[object] | AsyncIterator[object]
    """The live stream's pieces as the stack reads them (each read tees into the recording)."""
    close: Callable[[], object] | None = None
    """Closes the live stream (sync stacks, and aiohttp's release)."""
    aclose: Callable[[], Awaitable[object]] | None = None
    """Closes the live stream (async httpcore stacks)."""
    taken: bool = False
    """A [`LiveStream`][ssemock.plan.push_recording.LiveStream] serves from it and closes it; else the stack
    closes it (a refusal, or an HTTP error fault answered before any stream)."""


def needs_end(
    chunking: _chunking.Chunking,
    transforms: Sequence[_transforms.Transform],
    faults: Sequence[_faults.Fault],
    *,
    kind: str | None,
) -> list[str]:
    """The variants that can only be planned on the whole stream, each as ``what name: why``
    (``kind``: the body kind transforms see; a transform that does not rewrite it is no matter)."""
    out = [f"chunking {chunking}: {chunking.needs_end}"] if chunking.needs_end else []
    out += [f"transform {t}: {t.needs_end}" for t in transforms if t.needs_end and kind in t.kinds]
    out += [f"fault {f}: {why}" for f in faults if (why := f.needs_end())]
    return out


def prefix(response: Response, size: int) -> Response:
    """``response`` cut to its first ``size`` bytes (an event boundary), as a recording so far:
    the recorded chunk ends up to there, and one at ``size`` (its time: the chunk's that held
    that byte); still incomplete, no error."""
    ends, times = response.ends, response.times
    keep = bisect.bisect_left(ends, size)
    kept, at = list(ends[:keep]), list(times[:keep])
    if size and (not kept or kept[-1] != size):
        kept.append(size)
        at.append(times[keep] if keep < len(times) else (times[-1] if times else 0.0))
    return replace(response, body=response.body[:size], ends=kept, times=at, complete=False, error=None)


class Live:
    """Plans a live response in increments as it is recorded and says what to hand the client.

    ``recording()`` gives the recording so far and whether it has ended; ``plan(response,
    more)`` plans a response as the replay will (``more``: an open prefix). The served bytes of
    each plan must start with what the client already has; a plan that breaks this raises
    ``refuse(why)``. No I/O: `LiveStream` pulls the live stream and sleeps."""

    def __init__(
        self,
        *,
        recording: Callable[[], tuple[Response, bool]],
        plan: Callable[[Response, bool], Plan],
        content_type: str,
        t0: float,
        refuse: Callable[[str], BaseException],
        on_plan: Callable[[Plan, list[int]], None] | None = None,
        since: Callable[[int], tuple[Response, bool]] | None = None,
    ) -> None:
        self._recording, self._plan, self._content_type = recording, plan, content_type
        self._since = since
        """Given: every variant cuts each event on its own (`Chunking.by_event`, no transform,
        fault nor hook): ``since(offset)`` gives the recording from that byte on and whether it
        has ended, and each plan is of the new events only (``plan`` redacts what it is given)."""
        self._base = 0  # (since) served bytes of the plans before the latest
        self._served = bytearray()  # (since) the served body planned so far
        self._planned: list[int] = []  # (since) its chunk ends
        self._t0, self._last = t0, t0
        self._refuse = refuse
        self.on_plan = on_plan
        """Called with each plan adopted and the chunk ends it will have been served with."""
        self._settled = -1  # recorded bytes planned so far (-1: none yet)
        self._status = 0  # the live response's
        self._ended = False  # the live stream ended: the last plan was of the whole
        self._pending: Plan | None = None  # a plan not handed out yet
        self._body = b""  # the latest plan's served body: what was handed out is its start
        self.sent = 0
        """Bytes of the served body handed to the client."""
        self.handed: list[int] = []
        """The chunk ends handed to the client, in the served body."""
        self._stalled: set[int] = set()  # offsets whose stall was served
        self.done = False
        """The final plan is handed out (its error raised): nothing more to pull."""

    def start(self) -> Plan:
        """The plan of the recording before the first pull: the status and headers to answer
        with. Not `open` when it is final already (an ``http_error`` fault replaced the
        response, or the live stream has ended). A replaced response's body waits for the first
        event (or the live end): its shape may follow the stream's protocol, which a replay
        tells from the recorded events."""
        plan = self._next(gone=False)
        assert plan is not None, "the first plan always advances"
        if plan.status == self._status or self._settled > 0 or self._ended:
            self._pending = plan
        return plan

    def served_all(self) -> bool:
        """Whether the client has every byte the replay of the recording serves: all handed out,
        or the live stream ended (the client closed it, and it was drained) where the client
        had got to, as a replay that delivered every chunk."""
        if self.done:
            return True
        if self._since is not None:
            rest, ended = self._since(max(self._settled, 0))
            return ended and self._base + len(self._plan(rest, False).body) <= self.sent
        response, ended = self._recording()
        return ended and len(self._plan(response, False).body) <= self.sent

    def _next(self, *, gone: bool) -> Plan | None:
        """The plan of the recording as it is now; None when no event completed since the last."""
        if self._since is not None:
            return self._next_events(gone=gone)
        response, ended = self._recording()
        self._status = response.status
        if ended or gone:
            self._ended = True
            self._settled = len(response.body)
            return self._plan(response, False)
        ends = _framing.event_ends(response.body, self._content_type)
        settled = ends[-1] if ends else 0
        if settled <= self._settled:
            return None
        self._settled = settled
        return self._plan(prefix(response, settled), True)

    def _next_events(self, *, gone: bool) -> Plan | None:
        """The plan of the events completed since the last plan (of the rest, at the live end);
        None when none did. Only what is new is read, cut and planned."""
        start = max(self._settled, 0)
        response, ended = self._since(start)  # type: ignore[misc]
        self._status = response.status
        if ended or gone:
            self._ended = True
            self._settled = start + len(response.body)
            return self._plan(response, False)
        ends = _framing.event_ends(response.body, self._content_type)
        settled = ends[-1] if ends else 0
        if settled == 0 and self._settled >= 0:
            return None
        self._settled = start + settled
        return self._plan(prefix(response, settled), True)

    def _steps_of_events(self, plan: Plan) -> Iterator[bytes | float]:
        """`steps` for a plan of the new events only: every chunk of it, after what was handed."""
        base = self._base
        body, ends = plan.body, plan.ends
        self._base += len(body)
        self._served += body
        self._planned.extend(base + end for end in ends)
        if self.on_plan is not None:
            self.on_plan(replace(plan, body=bytes(self._served), ends=self._planned), self._planned)
        stalls = {(ends[i - 1] if i else 0): seconds for i, seconds in plan.stalls.items()}
        at = 0
        for k in range(len(ends)):
            yield from self._wait(plan, stalls, at, plan.due[k] if plan.due is not None else None)
            end = ends[k]
            piece, at = body[at:end], end
            self.sent = base + end
            self.handed.append(self.sent)
            yield piece
            self._last = _timing.clock.now()
        if not plan.open:
            yield from self._wait(plan, stalls, len(body), None)
            self.done = True
            if plan.error is not None:
                raise plan.error

    def steps(self, *, gone: bool = False) -> Iterator[bytes | float]:
        """What to hand the client now: the chunks planned beyond what it has, with a float
        (seconds to wait) before any that is not due yet or follows a stall. At the final plan's
        end its error is raised. ``gone``: the live stream ended without the recording saying so."""
        if self.done:
            return
        plan, self._pending = self._pending or self._next(gone=gone), None
        if plan is None:
            return
        if self._since is not None:
            yield from self._steps_of_events(plan)
            return
        body, ends, sent = plan.body, plan.ends, self.sent
        if len(body) < sent or body[:sent] != self._body[:sent]:
            raise self._refuse(
                f"the plan of more of the stream changes the {sent} bytes the client already has (a "
                f"before_record_response hook that rewrites more than each event on its own does this)"
            )
        self._body = body
        first = bisect.bisect_right(ends, sent)
        if self.on_plan is not None:
            self.on_plan(plan, [*self.handed, *ends[first:]])
        stalls = {(ends[i - 1] if i else 0): seconds for i, seconds in plan.stalls.items()}
        for k in range(first, len(ends)):
            yield from self._wait(plan, stalls, self.sent, plan.due[k] if plan.due is not None else None)
            end = ends[k]
            piece, self.sent = body[self.sent : end], end
            self.handed.append(end)
            yield piece
            self._last = _timing.clock.now()
        if not plan.open:
            yield from self._wait(plan, stalls, len(body), None)
            self.done = True
            if plan.error is not None:
                raise plan.error

    def _wait(self, plan: Plan, stalls: dict[int, float], offset: int, at: float | None) -> Iterator[float]:
        """The waits before the chunk starting at ``offset`` (due ``at`` seconds after the
        request): its stall once, then until it is due; a wait past the read timeout raises
        the client's timeout at once, as a replay does."""
        silence = stalls.get(offset, 0.0) if offset not in self._stalled else 0.0
        if silence:
            self._stalled.add(offset)
        gap = silence + (self._t0 + at - self._last if at is not None else 0.0)
        if plan.read_timeout is not None and gap > plan.read_timeout:
            self.done = True
            raise plan.timeout_error or TimeoutError("read timeout")
        if silence and plan.stall_factor is not None:
            yield silence * plan.stall_factor
            self._t0 += silence * plan.stall_factor
        elif silence and plan.read_timeout is None:
            skipped_stall(plan, silence)
        if at is not None:
            wait = self._t0 + at - _timing.clock.now()
            if wait > 0:
                yield wait


class LiveStream(ReplayStream):
    """The client's body of a live server-push stream on a recording run: pulls the live stream
    (its stack's teed stream, which records each piece) only when `Live` has nothing more to
    hand out, and paces what it does, sync or async. Closing it closes the live stream as a
    client's close does."""

    def __init__(self, live: Live, source: LiveSource, *, hold: bool = False) -> None:
        """``hold``: the live stream stays open when this one ends or closes (an HTTP error
        answered in its place: a retry is served from it)."""
        source.taken = True
        self._live, self._source = live, source
        self._fast = False
        self._opened = False
        self._delivered = 0
        self._gone = False  # the live stream ended (or failed: recorded, served at its byte)
        self._shut = hold
        self.failed = False
        """The final plan's fault or timeout was raised."""
        self.closed = False
        """The client closed it."""

    @property
    def consumed(self) -> bool:
        """Every chunk the replay of the recording serves reached the client (see
        [`Live.served_all`][ssemock.plan.push_recording.Live.served_all])."""
        return self._live.served_all()

    @property
    def delivered(self) -> int:
        """How many bytes of the served body the client has been given so far."""
        return self._live.sent

    def __iter__(self) -> Iterator[bytes]:
        return self._paced()

    def _paced(self) -> Iterator[bytes]:
        self._opened = True
        pieces = self._source.pieces
        assert isinstance(pieces, Iterator), "a sync client reads a sync live stream"
        try:
            while True:
                try:
                    for step in self._live.steps(gone=self._gone):
                        if step.__class__ is bytes:
                            self._delivered += 1
                            yield step
                        else:
                            _timing.clock.sleep(step)  # type: ignore[arg-type]
                finally:
                    if self._live.done:  # all served: the live stream is closed as the client will
                        self._shut_sync()
                if self._live.done:
                    return
                try:
                    next(pieces)
                except StopIteration:
                    self._gone = True
                except Exception:  # recorded by the tee: the final plan raises it at its byte
                    self._gone = True
        except Exception:
            self.failed = True
            raise

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self._timed()

    async def _timed(self) -> AsyncIterator[bytes]:
        self._opened = True
        pieces = self._source.pieces
        assert isinstance(pieces, AsyncIterator), "an async client reads an async live stream"
        try:
            while True:
                try:
                    for step in self._live.steps(gone=self._gone):
                        if step.__class__ is bytes:
                            self._delivered += 1
                            yield step
                        else:
                            await _timing.clock.asleep(step)  # type: ignore[arg-type]
                finally:
                    if self._live.done:  # all served: the live stream is closed as the client will
                        await self._shut_async()
                if self._live.done:
                    return
                try:
                    await pieces.__anext__()
                except StopAsyncIteration:
                    self._gone = True
                except Exception:  # recorded by the tee: the final plan raises it at its byte
                    self._gone = True
        except Exception:
            self.failed = True
            raise

    def _shut_sync(self) -> None:
        if not self._shut and self._source.close is not None:
            self._shut = True
            self._source.close()

    async def _shut_async(self) -> None:
        if not self._shut and self._source.aclose is not None:
            self._shut = True
            await self._source.aclose()
        self._shut_sync()

    def close(self) -> None:
        """The client closes it: the live stream is closed as a client's close does (the rest
        drained into the recording, by ``drain_on_close``)."""
        self.closed = True
        self._shut_sync()

    async def aclose(self) -> None:
        """`close` for async clients."""
        self.closed = True
        await self._shut_async()
