"""Replay: serve cassette interactions through respx, re-chunked, timed and faulted.

Data flows one way: the recorded body and boundaries -> transforms -> chunking -> timing ->
a single-pass stream handed to the client's own transport, which maps our ``httpcore`` /
``httpcore2`` exceptions to the ones its stack raises.
"""

from __future__ import annotations

import asyncio
import bisect
import itertools
import operator
import os
import re
import threading
import time
import weakref
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType, TracebackType
from typing import Any, Literal, TypeVar

import httpx
import respx

from . import chunking as _chunking
from . import diagnose as _diagnose
from . import faults as _faults
from . import held as _held
from . import protocols as _protocols
from . import matching
from . import timing as _timing
from . import transforms as _transforms
from .accumulate import Accumulated
from .chunking import event_ends
from .cassette import Cassette, CassetteError, Interaction, Request, Response, SecretError
from .expect import Expected, StreamAssertionError
from .faults import Served
from . import lock as _lock
from ._names import unknown
from . import stacks as _stacks
from .errors import UnmatchedRequestError
from .modes import RECORD_MODES, RecordMode
from .stacks import Record
from .cassette_lock import lock_for
from .record import MAX_BODY_BYTES, Recorder, RequestHook, ResponseHook, drain_seconds, request_from_httpx
from .redact import mask_text
from .secrets import scan_cassette
from .selection import Selection
from .strategies import minimal_failing_split

__all__ = ["Play", "Plan", "Player", "ReplayStream", "UnmatchedRequestError", "plan_response", "replay",
           "use_cassette"]

ChunkingSpec = str | _chunking.Chunking
TransformSpec = str | _transforms.Transform | Sequence[str | _transforms.Transform] | None
TimingSpec = str | float | _timing.Timing
FaultSpec = str | _faults.Fault | Sequence[str | _faults.Fault] | None
_T = TypeVar("_T")


@dataclass
class Plan:
    """What a replayed response does: status, headers, chunks, when each is due, how it ends.

    ``ends``, ``chunks`` and ``due`` are sequences computed on demand for fixed-size chunkings
    (``bytewise``, ``fixed:N``): a 50 MB body served byte by byte holds no list per byte."""

    status: int
    headers: list[tuple[str, str]]
    body: bytes  # served body (after transforms and faults)
    ends: Sequence[int]  # chunk ends in ``body``
    chunks: Sequence[bytes]
    due: Sequence[float | None] | None  # seconds after the request; None = all at once
    error: BaseException | None = None  # raised after the last chunk
    read_timeout: float | None = None  # the client's; a longer wait raises ``timeout_error``
    timeout_error: BaseException | None = None
    stalls: dict[int, float] = field(default_factory=dict)  # chunk index -> seconds of silence before it
    stall_factor: float | None = None  # None: stalls shorter than the timeout are skipped
    consumes: bool = True  # counts as a play of the interaction (an injected HTTP error doesn't)
    holds: dict[int, frozenset[Any]] = field(default_factory=dict)  # chunk index -> request ids it waits for


class _Due(Sequence[float | None]):
    """When each planned chunk is due: the recorded time of the chunk that held its last byte,
    through the timing, computed when it is reached."""

    def __init__(self, timing: _timing.Timing, times: Sequence[float], recorded: Sequence[int],
                 ends: Sequence[int]) -> None:
        self._timing, self._times, self._recorded, self._ends = timing, times, recorded, ends

    def __len__(self) -> int:
        return len(self._ends)

    def __getitem__(self, index: int) -> float | None:  # type: ignore[override]
        times = self._times
        return self._timing.at(times[min(bisect.bisect_left(self._recorded, self._ends[index]), len(times) - 1)])

    def __iter__(self) -> Iterator[float | None]:
        """In order, walking the recorded ends along (no search per chunk)."""
        times, recorded, at = self._times, self._recorded, self._timing.at
        k, last = 0, min(len(times), len(recorded)) - 1
        for end in self._ends:
            while k < last and recorded[k] < end:
                k += 1
            yield at(times[k])


def _has(ends: Sequence[int], offset: int) -> bool:
    """Whether the sorted ``ends`` hold ``offset``."""
    i = bisect.bisect_left(ends, offset)
    return i < len(ends) and ends[i] == offset


def plan_response(response: Response, *, url: str, core: ModuleType,
                  chunking: _chunking.Chunking = _chunking.as_recorded,
                  transforms: Sequence[_transforms.Transform] = (), timing: _timing.Timing = _timing.instant,
                  faults: Sequence[_faults.Fault] = (), attempt: int = 0,
                  read_timeout: float | None = None,
                  holds: Callable[[bytes], Sequence[tuple[int, frozenset[Any]]]] | None = None) -> Plan:
    """Turn a recorded response into what to serve: transforms, then faults, chunking, timing.

    ``core`` (httpcore or httpcore2) provides the exceptions, so the client's transport maps
    them to its own. Used by the in-process player and by ``ssemock serve``. ``holds`` (for a
    server-push stream, :func:`ssemock.protocols.holds`) says where the served body waits for
    requests: a chunk starts at each such offset (a chunk never spans a wait), and
    ``Plan.holds`` names the requests each waits for.
    """
    served = Served(response.status, list(response.headers), response.body, response.ends, response.times,
                    url, core, _recorded_error(core, response.error))
    content_type = response.header("content-type") or ""
    if transforms:
        kind = _transforms.kind_of(content_type, served.body)
        served.body, served.ends = _transforms.apply(transforms, served.body, served.ends, kind=kind)
    for fault in faults:
        fault.apply(served, attempt)
    body, size = served.body, len(served.body)
    ends = chunking.lazy_ends(body, served.ends, content_type=content_type)
    held = list(holds(body)) if holds is not None else []
    extra = {o for o in [*served.stalls, *(o for o, _ in held)] if 0 < o < size and not _has(ends, o)}
    if extra:  # a stall, or a wait for a request, needs a boundary where it falls
        ends = sorted({*ends, *extra})
    chunks: Sequence[bytes]
    if type(ends) is not list:
        chunks = _chunking.Slices(body, ends)
    elif body is response.body and ends == response.ends:
        chunks = response.chunks
    else:
        chunks = [body[a:b] for a, b in zip([0, *ends], ends)]
    due: Sequence[float | None] | None = None
    if timing.factor is not None and served.times:
        due = _Due(timing, served.times, served.ends, ends)
    stalls = {(bisect.bisect_left(ends, o) + 1 if o else 0): s for o, s in served.stalls.items()}
    waits = {(bisect.bisect_left(ends, o) + 1 if o else 0): ids for o, ids in held if o < size}
    headers = [(k, v) for k, v in served.headers if k not in ("content-length", "content-encoding")]
    return Plan(served.status, headers, body, ends, chunks, due, served.error, read_timeout,
                core.ReadTimeout(f"ssemock: no data for longer than the read timeout ({read_timeout} s)"),
                stalls, timing.factor, served.consumes, waits)


class ReplayStream(httpx.SyncByteStream, httpx.AsyncByteStream):
    """A single-pass response body, like a socket: lazily yields the planned chunks once.

    With a ``gate`` (a server-push stream whose messages answer other requests), each chunk the
    plan holds waits until the requests it answers are made (see :mod:`ssemock.held`)."""

    def __init__(self, plan: Plan, t0: float, gate: _held.Gate | None = None) -> None:
        self._plan = plan
        self._fast = not _needs_core(plan) and not (gate is not None and plan.holds)
        self._left: Iterator[Any]  # exhausted once the last chunk is handed out (fast path)
        if not self._fast:
            self._steps = self._core(plan, t0, gate)
        elif isinstance(plan.chunks, _chunking.Slices):
            self._steps, self._left = plan.chunks.iterate()
        else:
            self._steps = self._left = iter(plan.chunks)
        self._delivered = 0  # counted on the slow path only
        self._opened = False  # set on the slow paths (the fast one counts what it handed out)
        self.failed = False  # the planned fault or timeout was raised
        self.closed = False

    @property
    def opened(self) -> bool:
        """The client has begun to read: asked for a chunk."""
        return self._opened or (self._fast and self.handed > 0)

    @property
    def consumed(self) -> bool:
        """Every chunk reached the client (it may then close without waiting for EOF)."""
        if self._fast:
            return operator.length_hint(self._left) == 0
        return self._delivered == len(self._plan.chunks)

    @property
    def handed(self) -> int:
        """How many chunks the client has asked for and been given so far."""
        if self._fast:
            return len(self._plan.chunks) - operator.length_hint(self._left)
        return self._delivered

    @property
    def delivered(self) -> int:
        """How many bytes of the body the client has been given so far."""
        n = self.handed
        return self._plan.ends[n - 1] if n else 0

    @property
    def instant(self) -> bool:
        """Nothing to wait for or raise: iterating it synchronously never blocks (a stack on an
        event loop may then pull chunks without awaiting)."""
        return self._fast

    @property
    def finished(self) -> bool:
        """Nothing more for the client to read: all delivered, or the fault ended it."""
        return self.consumed or self.failed

    @staticmethod
    def _core(plan: Plan, t0: float, gate: _held.Gate | None) -> Iterator[bytes | float | _held.Hold]:
        """Chunks, with a float (seconds to wait) before any that is not due yet, and a Hold
        (wait for requests) before any that answers a request not made yet.

        A wait longer than the client's read timeout raises its ReadTimeout at once. A hold
        delays what follows by as long as it waited past the held chunk's time (recorded gaps
        are kept).
        """
        last = t0
        holds = plan.holds if gate is not None else {}
        dues = itertools.chain(plan.due if plan.due is not None else (), itertools.repeat(None))
        for i, (chunk, at) in enumerate(zip(itertools.chain(plan.chunks, (None,)), dues)):
            silence = plan.stalls.get(i, 0.0)
            gap = silence + (t0 + at - last if at is not None else 0.0)
            if plan.read_timeout is not None and gap > plan.read_timeout:
                raise plan.timeout_error or TimeoutError("read timeout")
            if i in holds and gate is not None:
                yield gate.hold(holds[i])
                late = time.monotonic() - (t0 + at) if at is not None else 0.0
                if late > 0:
                    t0 += late
            if silence and plan.stall_factor is not None:
                yield silence * plan.stall_factor
                t0 += silence * plan.stall_factor
            if at is not None:
                wait = t0 + at - time.monotonic()
                if wait > 0:
                    yield wait
            if chunk is None:
                break
            yield chunk
            last = time.monotonic()
        if plan.error is not None:
            raise plan.error

    def __iter__(self) -> Iterator[bytes]:
        # The fast path hands out the chunks' own iterator: no generator step per chunk.
        return self._steps if self._fast else self._paced()  # type: ignore[return-value]

    def _paced(self) -> Iterator[bytes]:
        self._opened = True
        try:
            for step in self._steps:
                if step.__class__ is bytes:
                    self._delivered += 1
                    yield step
                elif step.__class__ is _held.Hold:
                    step.wait()
                else:
                    time.sleep(step)  # type: ignore[arg-type]
        except Exception:
            self.failed = True
            raise

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self._instant() if self._fast else self._timed()

    async def _instant(self) -> AsyncIterator[bytes]:
        """The fast path of ``async for``: nothing to wait for or raise (an async generator
        steps faster than an ``__anext__`` coroutine per chunk); ``opened`` counts what it handed
        out, as on the sync fast path."""
        for chunk in self._steps:
            yield chunk  # type: ignore[misc]

    async def _timed(self) -> AsyncIterator[bytes]:
        self._opened = True
        try:
            for step in self._steps:
                if step.__class__ is bytes:
                    self._delivered += 1
                    yield step
                elif step.__class__ is _held.Hold:
                    await step.wait_async()
                else:
                    await _async_sleep(step)  # type: ignore[arg-type]
        except Exception:
            self.failed = True
            raise

    def close(self) -> None:
        self.closed = True

    async def aclose(self) -> None:
        self.closed = True


class _CutAfter(_faults.Fault):
    """Check's own fault: the stream whose body is ``body`` ends cleanly after ``events`` blocks."""

    def __init__(self, events: int, body: bytes) -> None:
        self.events, self.body = events, body
        self.name = f"cut_after:{events}"

    def apply(self, served: Served, attempt: int) -> None:
        if served.body == self.body:
            ends = event_ends(served.body, sse=served.is_sse or not served.body.lstrip().startswith(b"{"))
            ends.append(len(served.body))
            served.cut(ends[self.events - 1] if self.events > 0 else 0)


def _named(exc: BaseException) -> str:
    """An exception as its message, with its type when it is not one of ours (an assertion of
    the test reads as it is; a client's ``JSONDecodeError`` says what it is)."""
    if isinstance(exc, AssertionError):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"


def _short(value: object, most: int = 200) -> str:
    text = repr(value)
    return mask_text(text if len(text) <= most else text[:most] + "...")


def _timeout_cut(plan: Plan) -> int | None:
    """The byte offset where a stall longer than the client's read timeout ends the stream."""
    if plan.read_timeout is None:
        return None
    late = [i for i, seconds in plan.stalls.items() if seconds > plan.read_timeout]
    return (plan.ends[min(late) - 1] if min(late) else 0) if late else None


def _server_push(interaction: Interaction) -> bool:
    """Whether a recorded response is a server-push stream: an event stream answering a GET,
    whose messages may answer other requests (the legacy MCP transport's)."""
    return (interaction.request.method == "GET"
            and "text/event-stream" in (interaction.response.header("content-type") or ""))


def _needs_core(plan: Plan) -> bool:
    return plan.error is not None or plan.due is not None or bool(plan.stalls)


async def _async_sleep(seconds: float) -> None:
    try:
        await asyncio.sleep(seconds)
    except RuntimeError:  # not asyncio: trio through anyio
        import anyio
        await anyio.sleep(seconds)


@dataclass
class Play:
    """One response served from the cassette (or, with ``stream`` None and ``index`` -1, one
    live response as it was recorded: what ``expected`` compares with on a recording run)."""

    index: int
    request: httpx.Request
    interaction: Interaction
    chunking: _chunking.Chunking
    transforms: list[_transforms.Transform]
    stream: ReplayStream | None
    body: bytes = b""
    ends: Sequence[int] = field(default_factory=list)
    faults: list[str] = field(default_factory=list)
    expected: Expected | None = field(default=None, repr=False)

    def described(self) -> str:
        """What this response went through: ``chunking X, transform Y, faults Z``."""
        parts = [f"chunking {self.chunking}"]
        if self.transforms:
            parts.append("transform " + "+".join(map(str, self.transforms)))
        if self.faults:
            parts.append("faults " + "; ".join(self.faults))
        return ", ".join(parts)
    cut: int | None = None  # where a fault ends what the client gets (a stall past its timeout)

    @property
    def reference_body(self) -> bytes:
        """What a conforming client can decode: the body up to where a fault cut it (a stall
        past the read timeout, a dropped connection), else the whole served body."""
        end = self.cut
        if self.stream is not None and self.stream.failed:
            end = self.stream.delivered if end is None else min(end, self.stream.delivered)
        return self.body if end is None else self.body[:end]


class _CassetteRoute(respx.Route):
    """The route the cassette's answers are recorded on. It is never in the router's route list,
    so nothing rolls it back: it keeps no snapshot (respx's copies its call list, a mock, at
    every creation: a few percent of a marked test)."""

    def snapshot(self) -> None:
        return None


class _Router(respx.MockRouter):
    """A respx router whose unmatched requests fall through to the cassette player.

    The user's own routes answer first; every request the cassette serves is recorded in
    ``calls`` as well (on the ``cassette`` route), so respx idioms (``router.calls``,
    ``call_count``, ``route.called``) see everything the player served.
    """

    def __init__(self, fallback: Callable[[httpx.Request], httpx.Response]) -> None:
        super().__init__(assert_all_called=False, assert_all_mocked=False, using=None)
        self._fallback = fallback
        self.cassette: respx.Route = _CassetteRoute()

    @contextmanager
    def resolver(self, request: httpx.Request) -> Iterator[Any]:
        __tracebackhide__ = True
        with super().resolver(request) as resolved:
            yield resolved
            if resolved.route is None:
                resolved.response = self._fallback(request)
                resolved.route = self.cassette


def _weakly(method: Callable[..., Any]) -> Callable[..., Any]:
    """A bound method that does not keep its object alive: the router and the recorders call
    back into their Player without a reference cycle, so a finished Player and the recordings it
    holds are freed as soon as it is dropped, not at the next garbage collection."""
    ref = weakref.WeakMethod(method)

    def call(*args: Any) -> Any:
        __tracebackhide__ = True
        bound = ref()
        if bound is None:
            raise RuntimeError("ssemock: the Player this router or recording belonged to is gone")
        return bound(*args)

    return call


class Player:
    """Replays (and, by record mode, records) a cassette for every intercepted client stack
    (httpx, httpx2, aiohttp, urllib3: see :mod:`ssemock.stacks`)."""

    def __init__(self, cassette: Cassette, *, path: str | os.PathLike[str] | None = None,
                 record_mode: RecordMode = "none", chunking: ChunkingSpec = "as_recorded",
                 transform: TransformSpec = None, timing: TimingSpec = "instant",
                 faults: FaultSpec = (), match_on: matching.MatchOn | None = None,
                 allow_playback_repeats: bool = False, protocol: str | None = None,
                 before_record_request: RequestHook | None = None,
                 before_record_response: ResponseHook | None = None,
                 allowed_hosts: Sequence[str] | None = None, max_body_bytes: int = MAX_BODY_BYTES,
                 drain_on_close: bool | float = True, existed: bool = True) -> None:
        if record_mode not in RECORD_MODES:
            raise unknown("record_mode", record_mode, RECORD_MODES)
        self.cassette = cassette
        self.path = Path(path) if path is not None else cassette.path
        self.record_mode = record_mode
        self.chunking = _chunking.get(chunking)
        self.transforms = _transforms.resolve(transform)
        self.timing = _timing.get(timing)
        self.faults = _faults.resolve(faults)
        self.attempts = 0
        self.match_on = matching.resolve(match_on)
        self.allow_playback_repeats = allow_playback_repeats
        self.protocol = protocol
        self._before_request = before_record_request
        self._before_response = before_record_response
        self._replays = record_mode in ("none", "new_episodes") or (record_mode == "once" and existed)
        self._records = record_mode in ("new_episodes", "all", "rewrite") or (record_mode == "once" and not existed)
        self._existed = existed
        if not (isinstance(max_body_bytes, int) and max_body_bytes > 0):
            raise ValueError(f"max_body_bytes must be a positive number of bytes, got {max_body_bytes!r}")
        self.max_body_bytes = max_body_bytes
        self.drain_on_close = drain_on_close
        self._drain = drain_seconds(drain_on_close)
        self._disk = _stat(self.path)  # the file as it was at the start: a change means another recorder
        self.guard = _lock.Guard(allowed_hosts=allowed_hosts, blocks=not self._records,
                                 where=str(self.path) if self.path else "an in-memory cassette")
        self._selection = Selection(cassette.interactions, self.match_on)
        self.plays: list[Play] = []
        self.recorders: list[Recorder] = []
        self._lock = threading.Lock()
        self.router = _Router(_weakly(self._handle))
        self._active = False
        self._latest: Play | Recorder | None = None  # the last response served or recorded
        self._notes: list[tuple[Play, int]] = []  # (play, chunks handed out) per handed() event
        self._requests = _held.Requests()  # the correlation ids of the requests matched, for held streams

    def __repr__(self) -> str:
        return (f"<ssemock.Player {self.path or '(memory)'} mode={self.record_mode} "
                f"chunking={self.chunking} transform={'+'.join(map(str, self.transforms)) or None}>")

    # -- context management ----------------------------------------------------------------

    def start(self) -> None:
        """Intercept every supported client stack and engage the network lock, until :meth:`stop`.

        Players nest: the innermost answers first, and a request it cannot answer (replay only, no
        match) goes to the next one out.
        """
        if self._active:
            raise RuntimeError(f"ssemock: {self!r} is already active (a player is entered once at a time)")
        _stacks.activate(self.router)
        _lock.engage(self.guard)
        self._active = True

    def stop(self, save: bool = True) -> None:
        """Stop intercepting (and save what was recorded, unless ``save=False``)."""
        if not self._active:
            return
        self._active = False
        self._requests.close()  # a stream still held gives up now: its requests can no longer come
        self._requests = _held.Requests()
        _lock.release(self.guard)
        _stacks.deactivate(self.router)
        if save:
            self.save()

    def __enter__(self) -> Player:
        self.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        # Saved after an ordinary error (as vcrpy does: what was recorded is real), never after an
        # interrupt (KeyboardInterrupt, SystemExit): a half recording must not replace a good one;
        # it is kept beside it instead.
        if exc is None or isinstance(exc, (Exception, UnmatchedRequestError)):
            self.stop()
        else:
            self.interrupted()

    def interrupted(self) -> Path | None:
        """Stop after an interrupt: the cassette is left as it was, and what was recorded is kept
        beside it as ``<name>.partial.json`` (returned; None when nothing was recorded)."""
        self.stop(save=False)
        if self.path is None or not self.recorded:
            return None
        partial = self.path.with_name(self.path.stem + ".partial.json")
        Cassette(self.recorded, path=partial).save(partial)
        return partial

    async def __aenter__(self) -> Player:
        return self.__enter__()

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        self.__exit__(exc_type, exc, tb)

    # -- serving ---------------------------------------------------------------------------

    def _handle(self, request: httpx.Request) -> httpx.Response:
        __tracebackhide__ = True
        sent = request_from_httpx(request)
        if self._before_request is not None:  # as vcrpy: matched in the form it is recorded in
            hooked = self._before_request(sent)
            if hooked is None:  # dropped: neither matched nor recorded, sent as it is
                raise respx.models.PassThrough("dropped by before_record_request", request=request,
                                               origin=None)  # type: ignore[arg-type]
            sent = hooked
        if self._replays:
            with self._lock:
                index = self._take(sent)
            if index is not None:
                self._requests.add(_protocols.request_ids(sent.body))
                return self._serve(index, request)
        if self._records:
            recorder = Recorder(request, sent, on_response=_weakly(self._recorded),
                                before_record_response=self._before_response,
                                max_body_bytes=self.max_body_bytes, drain=self._drain)
            raise Record(request, recorder)
        raise UnmatchedRequestError(self._explain(sent))

    def _recorded(self, recorder: Recorder) -> None:
        with self._lock:
            self.recorders.append(recorder)
            self._latest = recorder

    @property
    def selection(self) -> Selection:
        """The matching core over the cassette's interactions (rebuilt, play counts kept, when
        interactions were added to the cassette since)."""
        interactions = self.cassette.interactions
        if self._selection.stale(interactions):
            counts = self._selection.play_counts
            self._selection = Selection(interactions, self.match_on)
            self._selection.play_counts[:len(counts)] = counts[:len(interactions)]
        return self._selection

    @property
    def play_counts(self) -> list[int]:
        """How many times each interaction was served."""
        return self.selection.play_counts

    def _take(self, sent: Request) -> int | None:
        return self.selection.take(sent, repeats="first" if self.allow_playback_repeats else "never")

    def _serve(self, index: int, request: httpx.Request) -> httpx.Response:
        t0 = time.monotonic()
        since = self._requests.mark()
        interaction = self.cassette.interactions[index]
        with self._lock:
            attempt, self.attempts = self.attempts, self.attempts + 1
        core = _stacks.errors_of(request)
        read_timeout = (request.extensions.get("timeout") or {}).get("read")
        pushes = _server_push(interaction)
        plan = plan_response(interaction.response, url=str(request.url), core=core,
                             chunking=self.chunking, transforms=self.transforms, timing=self.timing,
                             faults=self.faults, attempt=attempt, read_timeout=read_timeout,
                             holds=_protocols.holds if pushes else None)
        if not plan.consumes:
            with self._lock:
                self.selection.release(index)
        gate = None
        if plan.holds:
            limit = min(read_timeout, _held.HOLD_LIMIT) if read_timeout is not None else _held.HOLD_LIMIT
            gate = _held.Gate(self._requests, since, limit, self._never_requested(index, core))
        stream = ReplayStream(plan, t0, gate)
        play = Play(index, request, interaction, self.chunking, self.transforms, stream,
                    plan.body, plan.ends, [str(f) for f in self.faults], cut=_timeout_cut(plan))
        with self._lock:
            self.plays.append(play)
            self._latest = play
        return httpx.Response(plan.status, headers=plan.headers, stream=stream,
                              extensions={"http_version": b"HTTP/1.1"})

    def _never_requested(self, index: int, core: Any) -> Callable[[list[Any], str], BaseException]:
        """The error a held stream raises when the requests it answers never come: the client
        stack's read timeout, naming the cassette, the interaction and the ids it waited for."""
        where = str(self.path) if self.path else "the in-memory cassette"
        request = self.cassette.interactions[index].request

        def error(missing: list[Any], why: str) -> BaseException:
            ids = ", ".join(sorted(map(repr, missing)))
            timeout: BaseException = core.ReadTimeout(mask_text(
                f"ssemock: {where}, interaction #{index} ({request.method} {request.url}): the recorded stream "
                f"answers the request with id {ids} next, and replay holds it until that request is made; {why}. "
                f"Make the requests the recorded session made (in its order), or record the cassette again"))
            return timeout
        return error

    def _explain(self, sent: Request) -> str:
        """The UnmatchedRequestError message: what was sent, the closest recorded requests with
        what differs as a diff, and each way to fix it."""
        where = str(self.path) if self.path else "the in-memory cassette"
        names = [matching.name_of(m) for m in self.match_on]
        lines = [f"ssemock: no recorded interaction matches {sent.method} {sent.url}",
                 f"  cassette: {where} ({len(self.cassette.interactions)} interactions, "
                 f"record_mode={self.record_mode!r}, matching on {', '.join(names)})"]
        if self.path and not self._existed:
            lines.append("  the cassette file does not exist yet: record it first")
        ranked = self.selection.closest(sent)
        fixes = ["record it: pytest --ssemock-record-mode=new_episodes (or once for a new cassette), "
                 "or use_cassette(..., record_mode=\"new_episodes\")"]
        if ranked:
            lines.append("  closest recorded requests:")
        for diffs, i in ranked:
            x = self.cassette.interactions[i]
            lines.append(f"    #{i} {x.request.method} {x.request.url}")
            if not diffs:
                lines.append(f"       matches, but was already played {self.play_counts[i]} time(s)")
                fixes.append(f"serve #{i} again: allow_playback_repeats=True")
                continue
            lines.extend(f"       {line}" for diff in diffs for line in _as_diff(diff))
            failing = {d.split(":", 1)[0] for d in diffs}
            kept = [n for n in names if n not in failing]
            if len(self.match_on) == len(names) and kept and i == ranked[0][1]:
                fixes.append(f"match #{i} by matching less: match_on={kept!r}")
        lines.append("  to fix it:")
        lines.extend(f"    - {fix}" for fix in fixes)
        return mask_text("\n".join(lines))  # what was sent may hold a key: never print it

    # -- saving ----------------------------------------------------------------------------

    @property
    def recorded(self) -> list[Interaction]:
        """Interactions recorded in this session (redacted, as they would be saved)."""
        with self._lock:
            recorders = list(self.recorders)
        return [x for x in (r.interaction() for r in recorders) if x is not None]

    def save(self) -> None:
        """Write what was recorded (atomically); refuse if a secret is left in it.

        Under the cassette's lock: when another recorder (an xdist worker, another process)
        saved the file since it was loaded, its interactions are merged in, never lost.
        """
        new = self.recorded
        if not new:
            return
        if self.path is None:
            self._write(self.cassette.interactions, new)
            return
        with lock_for(self.path):
            kept = self.cassette.interactions
            if _stat(self.path) != self._disk:  # someone else saved it meanwhile: start from theirs
                kept = Cassette.load(self.path).interactions
            self._write(kept, new)
            self._disk = _stat(self.path)

    def _write(self, kept: list[Interaction], new: list[Interaction]) -> None:
        if self.record_mode in ("all", "rewrite"):
            kept = [x for x in kept
                    if all(matching.differences(n.request, x.request, self.match_on) for n in new)]
        out = Cassette([*kept, *new], path=self.path)
        findings = scan_cassette(out)  # the one scan every write of cassette data goes through
        if findings:
            raise SecretError(findings, path=self.path,
                              advice="redact it with before_record_request/before_record_response")
        if self.path is not None:
            out.save(self.path, scan_secrets=False)  # scanned just above
        self.cassette.interactions = out.interactions
        self._selection = Selection(out.interactions, self.match_on)

    # -- expectations (what a conforming client gets from what was served) ---------------------

    @property
    def expected(self) -> Expected:
        """Reference events and result of the last response served, or, on a recording run, of
        the last live response as recorded so far (so one test passes when it records and when
        it replays)."""
        with self._lock:
            latest = self._latest
        if latest is None:
            raise StreamAssertionError(f"ssemock: nothing was served or recorded yet by {self!r}, "
                                       "so nothing is expected")
        if isinstance(latest, Recorder):
            interaction = latest.interaction(hooked=False)
            response = interaction.response
            return Expected(Play(-1, latest.sent, interaction, _chunking.as_recorded, [], None,
                                 response.body, response.ends), self.protocol)
        play = latest
        if play.expected is None or len(play.expected.body) != len(play.reference_body):
            play.expected = Expected(play, self.protocol)
        return play.expected

    def assert_text(self, got: str, choice: int = 0) -> None:
        """The text the client accumulated equals the reference text of the last stream."""
        self.expected.assert_text(got, choice)

    def assert_tool_calls(self, got: Sequence[Mapping[str, Any]]) -> None:
        """``[{"name": ..., "arguments": {...} or "..."}]`` equals the reference tool calls."""
        self.expected.assert_tool_calls(got)

    def assert_events(self, got: Sequence[Any]) -> None:
        """``[(event, data), ...]`` or ServerSentEvent-like objects equal the reference events."""
        self.expected.assert_events(got)

    def assert_accumulates(self, result: Mapping[str, Any] | Accumulated) -> None:
        """Every field given equals the reference accumulated result."""
        self.expected.assert_accumulates(result)

    def check(self, run: Callable[[], object]) -> None:
        """Run ``run`` (your client code and its assertions). If it fails, search the smallest set
        of chunk boundaries in the stream served last that still makes it fail, and raise a
        StreamAssertionError saying where they fall and how to reproduce it."""
        state = (list(self.play_counts), len(self.plays), self.attempts)
        try:
            run()
            return
        except Exception as exc:
            original: Exception = exc
        if len(self.plays) == state[1]:
            raise original  # it failed before any stream was served: nothing to shrink
        failing, chunking = self.plays[-1], self.chunking
        after = (list(self.play_counts), len(self.plays), self.attempts, self._latest)

        faults = self.faults

        def fails_when(chunking_now: _chunking.Chunking, faults_now: list[_faults.Fault]) -> bool:
            """Whether ``run`` fails, replayed from the test's start under this chunking and faults."""
            self.chunking, self.faults = chunking_now, faults_now
            self.play_counts[:], self.attempts = state[0], state[2]
            try:
                run()
            except Exception:
                return True
            finally:
                self.chunking, self.faults = chunking, faults
            return False

        def fails(chunks: list[bytes]) -> bool:
            cuts = list(itertools.accumulate(len(c) for c in chunks))[:-1]
            return fails_when(_chunking.Chunking(
                f"at:{','.join(map(str, cuts))}",
                lambda body, rec: [*cuts, len(body)] if body == failing.body else chunking.ends(body, rec)), faults)

        def fails_with(events: int) -> bool:
            """Whether ``run`` fails when the failing stream ends cleanly after ``events`` blocks."""
            return fails_when(chunking, [*faults, _CutAfter(events, failing.body)])

        culprit: str | None = None
        try:
            split: Any = minimal_failing_split(failing.body, fails, failing.ends)
            if not split.boundaries:  # the failure does not depend on the chunk boundaries: on which event?
                split, culprit = None, self._first_failing_event(failing, fails_with)
        except ValueError:  # it no longer fails: nothing to search
            raise original from None
        finally:  # the search's own runs are not plays of the test (nor teardown warnings)
            self.play_counts[:], self.attempts, self._latest = after[0], after[2], after[3]
            del self.plays[after[1]:]
        options = [f'chunking="{split.chunking.name if split is not None else chunking}"']
        if self.transforms:
            options.append(f'transform="{"+".join(map(str, self.transforms))}"')
        if self.faults:
            options.append(f"faults={[str(f) for f in self.faults]!r}")
        if split is not None:
            found = f"under {chunking} it {split.explanation}"
        elif culprit is not None:
            found = f"under {chunking} the failure does not depend on chunk boundaries; {culprit}"
        else:
            original.add_note(f"ssemock: the failure depends neither on chunk boundaries nor on which events are "
                              f"served (it fails even when the stream is cut before its first event)")
            raise original
        raise StreamAssertionError(f"{_named(original)}\nssemock: {found}; reproduce with {', '.join(options)}") from original

    @staticmethod
    def _first_failing_event(failing: Play, fails_with: Callable[[int], bool]) -> str | None:
        """Search the fewest leading blocks of the failing stream whose clean end still makes
        ``run`` fail, and name the block that tips it (None when even no block fails)."""
        content_type = failing.interaction.response.header("content-type") or ""
        found = _diagnose.blocks(failing.body, content_type)
        if not found or fails_with(0):
            return None
        # the fewest blocks that fail (fails_with(len(found)) is the failing stream itself)
        fewest = 1 + bisect.bisect_left(range(1, len(found)), True, key=fails_with)
        block = found[fewest - 1]
        return (f"it fails once {_diagnose.block_line(block)} is served (the stream ended cleanly before it "
                f"passes, after it fails)")

    # -- diagnostics ---------------------------------------------------------------------------

    def served_summary(self, last: int = 3) -> str:
        """What was served to the client, for a failure report: per response (the last two) the
        chunking, transforms and faults, how many bytes and chunks the client read, and the last
        ``last`` events it was given (index, type, an excerpt, byte offsets). Masked; "" when
        nothing was served."""
        with self._lock:
            plays = self.plays[-2:]
        return "\n".join(line for play in plays for line in _diagnose.play_summary(play, last))

    def handed(self, item: _T) -> _T:
        """Note that the client hands ``item`` (one decoded event) to its caller now, and return it
        unchanged: ``for event in client.stream(): player.handed(event)``. :meth:`assert_prompt`
        then checks that no event was held back until a later chunk was read."""
        with self._lock:
            latest = self._latest
        if isinstance(latest, Play) and latest.stream is not None:
            self._notes.append((latest, latest.stream.handed))
        return item

    def assert_prompt(self) -> None:
        """Raise StreamAssertionError unless every event noted with :meth:`handed` reached the
        caller before the client asked for the chunk after the one that completed it (a WHATWG
        decoder dispatches an event at its blank line, the CR of a CRLF included: a client that
        waits for more bytes first delays every event by one chunk, forever on a quiet stream)."""
        if not self._notes:
            raise StreamAssertionError("ssemock: assert_prompt: no event was noted; wrap each event the client "
                                       "yields with player.handed(event)")
        by_play: dict[int, list[int]] = {}
        plays: dict[int, Play] = {}
        for play, handed in self._notes:
            by_play.setdefault(id(play), []).append(handed)
            plays[id(play)] = play
        for key, counts in by_play.items():
            play = plays[key]
            content_type = play.interaction.response.header("content-type") or ""
            events = [b for b in _diagnose.blocks(play.body, content_type) if b.event is not None]
            ends = list(play.ends)
            for n, handed in enumerate(counts):
                if n >= len(events):
                    raise StreamAssertionError(f"ssemock: the client handed on {len(counts)} events, but only "
                                               f"{len(events)} were served (under {play.chunking})")
                block = events[n]
                need = _diagnose.chunk_of(ends, block.done_at(play.body))
                if handed > need:
                    raise StreamAssertionError(
                        f"ssemock: {_diagnose.block_line(block)} was complete after chunk {need} of "
                        f"{len(ends)} (byte {block.done_at(play.body)}), but the client handed it on only after "
                        f"asking for chunk {handed}: it holds events back until more bytes arrive "
                        f"(under {Expected(play, self.protocol)._under()})")

    def assert_rejected(self, run: Callable[[], _T], *,
                        flagged: Callable[[_T], bool] | None = None) -> BaseException | _T:
        """Run ``run`` (the client reading a stream a conforming client must reject: the reference
        raises on it or finds it incomplete, e.g. under ``faults="trailing_data:at=garbage"`` or
        ``"truncate"``) and return the exception it raised, or its result when ``flagged(result)``
        says the client marked the stream incomplete. Raise StreamAssertionError when the client
        accepted it, or when the reference accepts the stream (then nothing must be rejected)."""
        try:
            result = run()
        except Exception as exc:
            if self._reference_rejects() is None:
                raise StreamAssertionError(
                    f"ssemock: the client raised on a stream the reference accepts (complete, "
                    f"{len(self.expected.events)} events) under {self.expected._under()}: {exc!r}") from exc
            return exc
        reason = self._reference_rejects()
        if reason is None:
            raise StreamAssertionError(f"ssemock: assert_rejected: the reference accepts the stream served under "
                                       f"{self.expected._under()}, so there is nothing to reject; compare the "
                                       f"result instead (assert_text, assert_accumulates)")
        if flagged is not None and flagged(result):
            return result
        raise StreamAssertionError(f"ssemock: the client accepted a stream a conforming client must reject or flag "
                                   f"under {self.expected._under()}: {reason}; it returned {_short(result)}")

    def _reference_rejects(self) -> str | None:
        """Why the reference decoder and accumulator reject the last stream, or None."""
        expected = self.expected
        try:
            result = expected.result
        except ValueError as exc:  # ProtocolError, NDJSONError
            return f"the reference rejects it: {exc}"
        if not result.complete:
            return "it ends without its protocol's terminator (the reference marks it incomplete)"
        return None

    def unplayed(self) -> list[int]:
        """Indexes of interactions never served."""
        return [i for i, n in enumerate(self.play_counts) if n == 0]

    def unconsumed(self) -> list[Play]:
        """Plays whose stream the client opened but stopped reading before the end (and before
        any fault); a response closed without reading its body (an error status) is not one."""
        return [p for p in self.plays if p.stream is not None and p.stream.opened and not p.stream.finished]


_DIFF = re.compile(r"^(?P<what>\w+)(?:: (?P<where>\$[^:]*))?: (?P<rec>.*) recorded, (?P<sent>.*) sent$")


def _as_diff(difference: str) -> list[str]:
    """One matcher's difference as diff lines: ``- recorded`` / ``+ sent``."""
    found = _DIFF.match(difference)
    if found is None:
        return [difference]
    what = found["what"] + (f" {found['where']}" if found["where"] else "")
    return [f"- {what}: {found['rec']}  (recorded)", f"+ {what}: {found['sent']}  (sent)"]


def _stat(path: Path | None) -> tuple[int, int] | None:
    try:
        found = os.stat(path) if path is not None else None
    except OSError:
        return None
    return (found.st_mtime_ns, found.st_size) if found is not None else None


#: what each stack calls a read timeout when recording: replayed as the replaying stack's ReadTimeout
_TIMEOUTS = frozenset({"ReadTimeout", "ReadTimeoutError", "SocketTimeoutError", "ServerTimeoutError", "TimeoutError",
                       "timeout"})


def _recorded_error(core: ModuleType, error: dict[str, Any] | None) -> BaseException | None:
    """The exception a recorded mid-stream failure replays as, in the client's own stack: a
    timeout recorded through any stack as its ReadTimeout, the same name where it has one, else
    its RemoteProtocolError (a dropped connection)."""
    if error is None:
        return None
    name = str(error.get("type"))
    cls = core.ReadTimeout if name in _TIMEOUTS else getattr(core, name, None)
    if not (isinstance(cls, type) and issubclass(cls, Exception)):
        cls = core.RemoteProtocolError
    return cls(str(error.get("message") or "connection failed (recorded)"))


def replay(cassette: Cassette, *, chunking: ChunkingSpec = "as_recorded", transform: TransformSpec = None,
           timing: TimingSpec = "instant", faults: FaultSpec = (), match_on: matching.MatchOn | None = None,
           allow_playback_repeats: bool = False, protocol: str | None = None,
           allowed_hosts: Sequence[str] | None = None) -> Player:
    """A player over an in-memory cassette: ``with ssemock.replay(c) as player: ...``.

    Replay only: a request no interaction matches raises UnmatchedRequestError, and a connection
    no intercepted stack makes, to a host ``allowed_hosts`` does not allow (loopback by default),
    raises NetworkBlockedError.
    """
    return Player(cassette, chunking=chunking, transform=transform, timing=timing, faults=faults,
                  match_on=match_on, allow_playback_repeats=allow_playback_repeats, protocol=protocol,
                  allowed_hosts=allowed_hosts)


def use_cassette(path: str | os.PathLike[str], *, record_mode: RecordMode = "none",
                 chunking: ChunkingSpec = "as_recorded", transform: TransformSpec = None,
                 timing: TimingSpec = "instant", faults: FaultSpec = (), match_on: matching.MatchOn | None = None,
                 allow_playback_repeats: bool = False, protocol: str | None = None,
                 before_record_request: RequestHook | None = None,
                 before_record_response: ResponseHook | None = None,
                 allowed_hosts: Sequence[str] | None = None, max_body_bytes: int = MAX_BODY_BYTES,
                 drain_on_close: bool | float = True) -> Player:
    """Replay (and record, by ``record_mode``) the cassette file at ``path``.

    Modes as vcrpy's: ``none`` replays only; ``once`` records if the file is missing, else
    replays; ``new_episodes`` replays what matches and records the rest; ``all`` records
    everything (replacing the interactions it re-records); ``rewrite`` starts from empty.
    ``allowed_hosts`` (default: loopback only) says which connections that no intercepted stack
    makes may still reach the network: a replay refuses the others, a recording warns of them.
    ``max_body_bytes`` bounds one recorded body (64 MiB): past it the interaction is cut and
    marked truncated, with a warning. ``drain_on_close`` (on by default, up to 30 s; a number of
    seconds, or False) keeps reading a recorded stream the client closed before its end, so the
    cassette holds all of it.
    """
    p = Path(path)
    existed = p.exists() and record_mode != "rewrite"
    cassette = Cassette.load(p) if existed else Cassette(path=p)
    return Player(cassette, path=p, record_mode=record_mode, existed=existed, chunking=chunking,
                  transform=transform, timing=timing, faults=faults, match_on=match_on,
                  allow_playback_repeats=allow_playback_repeats, protocol=protocol,
                  before_record_request=before_record_request, before_record_response=before_record_response,
                  allowed_hosts=allowed_hosts, max_body_bytes=max_body_bytes, drain_on_close=drain_on_close)
