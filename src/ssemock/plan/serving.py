"""What a replay serves: the plan of one response (status, headers, chunks, when each is due, how
it ends), the single-pass stream a client stack reads it through, and the record of one response
served (a [`Play`][ssemock.Play]).

The in-process player and ``ssemock serve`` plan alike through [`plan_response`][ssemock.plan_response]; each client
stack hands a `ReplayStream` to its own transport. This module is below the player and the
assertions, which both read a [`Play`][ssemock.Play], and imports no client library but httpx (whose
stream classes a replayed stream is).
"""

from __future__ import annotations

import bisect
import itertools
import operator
import warnings
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import httpx

from ..core.edits import Edit, rewrite
from ..framing.accelerator import ready as _c_ready
from ..store.cassette import Interaction, Response
from ..variants import chunking as _chunking
from ..variants import faults as _faults
from ..variants import timing as _timing
from ..variants import transforms as _transforms
from ..variants.faults import Served
from . import push_replay as _held
from .errors import SsemockWarning
from .expect import Expected

__all__ = [
    "ChunkingSpec",
    "FaultSpec",
    "Play",
    "Plan",
    "ReplayStream",
    "TimingSpec",
    "TransformSpec",
    "plan_response",
    "skipped_silence",
    "skipped_stall",
]

ChunkingSpec = str | _chunking.Chunking
TransformSpec = str | _transforms.Transform | Sequence[str | _transforms.Transform] | None
TimingSpec = str | float | _timing.Timing
FaultSpec = str | _faults.Fault | Sequence[str | _faults.Fault] | None


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
    faults: list[str] = field(default_factory=list)  # the faults that changed what is served
    framing: str = "sse"  # the served body's framing (before a fault cut it)
    cut_at: int | None = None  # where a fault cut the body short (disconnect, truncate)
    open: bool = (
        False  # the plan of an open prefix of a live stream: more may come (ssemock.plan.push_recording)
    )
    skipped: tuple[float, int] | None = None  # instant: the longest recorded silence not waited (s, chunk)
    idles: bool = False  # after its last chunk the stream stays open, sending nothing (push_replay.Idle)


class _Due(Sequence[float | None]):
    """When each planned chunk is due: the recorded time of the chunk that held its last byte,
    through the timing, computed when it is reached."""

    def __init__(
        self, timing: _timing.Timing, times: Sequence[float], recorded: Sequence[int], ends: Sequence[int]
    ) -> None:
        self._timing, self._times, self._recorded, self._ends = timing, times, recorded, ends

    def __len__(self) -> int:
        return len(self._ends)

    def __getitem__(self, index: int) -> float | None:  # type: ignore[override]
        times = self._times
        return self._timing.at(
            times[min(bisect.bisect_left(self._recorded, self._ends[index]), len(times) - 1)]
        )

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


def plan_response(
    response: Response,
    *,
    url: str,
    core: ModuleType,
    chunking: _chunking.Chunking = _chunking.as_recorded,
    transforms: Sequence[_transforms.Transform] = (),
    timing: _timing.Timing = _timing.instant,
    faults: Sequence[_faults.Fault] = (),
    attempt: int = 0,
    read_timeout: float | None = None,
    holds: Callable[[bytes], Sequence[tuple[int, frozenset[Any]]]] | None = None,
    more: bool = False,
    answer: Sequence[Edit] = (),
    stays_open: bool = False,
) -> Plan:
    """Turn a recorded response into what to serve: transforms, then faults, chunking, timing.

    ``core`` (httpcore or httpcore2) provides the exceptions, so the client's transport maps
    them to its own. Used by the in-process player and by ``ssemock serve``. ``holds`` (for a
    server-push stream, `ssemock.protocols.holds`) says where the served body waits for
    requests: a chunk starts at each such offset (a chunk never spans a wait), and
    ``Plan.holds`` names the requests each waits for. ``more``: the response is an open prefix
    of a live stream, whole events so far (see [`ssemock.plan.push_recording`][ssemock.plan.push_recording]): a positioned
    fault waits for its position, and ``Plan.open`` says whether more may still follow.
    ``answer``: edits giving the recorded body the ids this run's client sent
    (`ssemock.protocols.answer_edits`: a JSON-RPC answer to a request whose random id differs),
    made first, the chunk ends carried along. ``stays_open``: the recorded stream was still
    open when its client closed it (`ssemock.protocols.stays_open`): unless a fault ends it,
    the served stream stays open after its last chunk (``Plan.idles``, `ssemock.plan.push_replay.Idle`).
    """
    served = Served(
        response.status,
        list(response.headers),
        response.body,
        response.ends,
        response.times,
        url,
        core,
        _recorded_error(core, response.error),
        more=more,
    )
    if answer:
        served.body, served.ends = rewrite(served.body, answer, list(served.ends))
    content_type = response.header("content-type") or ""
    if transforms:
        kind = _transforms.kind_of(content_type, served.body)
        served.body, served.ends = _transforms.apply(transforms, served.body, served.ends, kind=kind)
    served.kind = _faults.framing_of(content_type, served.body)
    applied = []
    for fault in faults:
        before = (served.status, served.body, served.error, dict(served.stalls))
        fault.apply(served, attempt)
        if (served.status, served.body, served.error, served.stalls) != before:
            applied.append(str(fault))
    if served.status != response.status:  # an HTTP error's body replaced the stream
        served.kind = _faults.framing_of(served.content_type, served.body)
    body, size = served.body, len(served.body)
    ends = chunking.lazy_ends(body, served.ends, content_type=content_type)
    held = list(holds(body)) if holds is not None else []
    extra = {o for o in [*served.stalls, *(o for o, _ in held)] if 0 < o < size and not _has(ends, o)}
    if extra:  # a stall, or a wait for a request, needs a boundary where it falls
        ends = sorted({*ends, *extra})
    chunks: Sequence[bytes]
    if type(ends) is not list:
        chunks = _chunking.Slices(body, ends)
    elif body is response.body and (ends is response.ends or ends == response.ends):
        chunks = response.chunks
    else:
        chunks = [body[a:b] for a, b in zip([0, *ends], ends)]
    due: Sequence[float | None] | None = None
    if timing.factor is not None and served.times:
        due = _Due(timing, served.times, served.ends, ends)
    skipped = _timing.longest_silence(served.times) if timing.factor is None else None
    if skipped is not None and read_timeout is not None and skipped[0] > read_timeout:
        skipped_silence(skipped, read_timeout, len(served.times))
    stalls = {(bisect.bisect_left(ends, o) + 1 if o else 0): s for o, s in served.stalls.items()}
    waits = {(bisect.bisect_left(ends, o) + 1 if o else 0): ids for o, ids in held if o < size}
    headers = [(k, v) for k, v in served.headers if k not in ("content-length", "content-encoding")]
    return Plan(
        served.status,
        headers,
        body,
        ends,
        chunks,
        due,
        served.error,
        read_timeout,
        core.ReadTimeout(f"ssemock: no data for longer than the read timeout ({read_timeout} s)"),
        stalls,
        timing.factor,
        served.consumes,
        waits,
        applied,
        served.kind,
        served.cut_at,
        served.more,
        skipped,
        stays_open and served.error is None and served.cut_at is None and served.status == response.status,
    )


class ReplayStream(httpx.SyncByteStream, httpx.AsyncByteStream):
    """A single-pass response body, like a socket: lazily yields the planned chunks once.

    With a ``gate`` (a server-push stream whose messages answer other requests), each chunk the
    plan holds waits until the requests it answers are made (see [`ssemock.plan.push_replay`][ssemock.plan.push_replay])."""

    def __init__(self, plan: Plan, t0: float, gate: _held.Gate | None = None) -> None:
        self._plan = plan
        self._fast = not _needs_core(plan) and not (gate is not None and (plan.holds or plan.idles))
        self._gate = gate
        self._left: Iterator[Any]  # exhausted once the last chunk is handed out (fast path)
        if not self._fast:
            self._steps = self._core(self, plan, t0, gate)
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
    def _core(
        stream: ReplayStream, plan: Plan, t0: float, gate: _held.Gate | None
    ) -> Iterator[bytes | float | _held.Hold | _held.Idle]:
        """Chunks, with a float (seconds to wait) before any that is not due yet, and a Hold
        (wait for requests) before any that answers a request not made yet; an Idle after the
        last when the plan idles.

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
                late = _timing.clock.now() - (t0 + at) if at is not None else 0.0
                if late > 0:
                    t0 += late
            if silence and plan.stall_factor is not None:
                yield silence * plan.stall_factor
                t0 += silence * plan.stall_factor
            elif silence and plan.read_timeout is None:
                skipped_stall(plan, silence)
            if at is not None:
                wait = t0 + at - _timing.clock.now()
                if wait > 0:
                    yield wait
            if chunk is None:
                break
            yield chunk
            last = _timing.clock.now()
        if plan.error is not None:
            raise plan.error
        if plan.idles and gate is not None:  # open as recorded, until the client closes it
            yield gate.idle(lambda: stream.closed, plan.read_timeout, plan.timeout_error)

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
                elif step.__class__ is _held.Hold or step.__class__ is _held.Idle:
                    step.wait()
                else:
                    _timing.clock.sleep(step)  # type: ignore[arg-type]
        except Exception:
            self.failed = True
            raise

    def __aiter__(self) -> AsyncIterator[bytes]:
        if not self._fast:
            return self._timed()
        # nothing to wait for or raise: the accelerator's async iterator over the chunks' own one
        # (no generator step per chunk), else an async generator over it; ``opened`` counts what
        # either handed out, as on the sync fast path
        return _c_ready(self._steps) if _c_ready is not None else self._instant()  # type: ignore[arg-type]

    async def _instant(self) -> AsyncIterator[bytes]:
        """The fast path of ``async for`` without the accelerator (an async generator steps
        faster than an ``__anext__`` coroutine per chunk)."""
        for chunk in self._steps:
            yield chunk  # type: ignore[misc]

    async def _timed(self) -> AsyncIterator[bytes]:
        self._opened = True
        try:
            for step in self._steps:
                if step.__class__ is bytes:
                    self._delivered += 1
                    yield step
                elif step.__class__ is _held.Hold or step.__class__ is _held.Idle:
                    await step.wait_async()
                else:
                    await _timing.clock.asleep(step)  # type: ignore[arg-type]
        except Exception:
            self.failed = True
            raise

    def close(self) -> None:
        self.closed = True
        if self._gate is not None:  # a read idling in another thread ends
            self._gate.requests.wake()

    async def aclose(self) -> None:
        self.close()


def skipped_stall(plan: Plan, seconds: float) -> None:
    """Say that ``instant`` timing skipped a stall the client's read timeout could not be seen to
    end (a `ssemock.SsemockWarning` naming the fault): a test meant to exercise it is not
    silently green. (A stall past a read timeout ssemock sees raises that timeout at once; one
    shorter is skipped without a word: the client reads on after it, as it would live.)"""
    names = ", ".join(f for f in plan.faults if f.startswith("stall")) or "stall"
    warnings.warn(
        f"ssemock: the fault {names} was skipped ({seconds:g} s of silence not waited): timing "
        "'instant', and the client's read timeout is not one ssemock can see (none set); a read "
        "timeout shorter than the stall raises the client's own timeout at once; timing='scaled:F' "
        "or 'recorded' waits it",
        SsemockWarning,
        stacklevel=2,
    )


def skipped_silence(skipped: tuple[float, int], read_timeout: float, chunks: int) -> None:
    """Say that ``instant`` timing skipped a recorded silence longer than the client's read
    (idle) timeout (a `ssemock.SsemockWarning`): live, the client would have timed out there,
    keep-alives or not, so a long-lived stream's test is not silently green."""
    seconds, index = skipped
    warnings.warn(
        f"ssemock: timing 'instant' skipped a recorded silence of {seconds:g} s (before chunk "
        f"{index + 1} of {chunks}), longer than the client's read timeout ({read_timeout:g} s): live, "
        "this client would have timed out there; timing='recorded' or 'scaled:F' replays the gaps "
        "(a gap past the read timeout raises the client's own timeout at once, without waiting)",
        SsemockWarning,
        stacklevel=3,
    )


def timeout_cut(plan: Plan) -> int | None:
    """The byte offset where a stall longer than the client's read timeout ends the stream."""
    if plan.read_timeout is None:
        return None
    late = [i for i, seconds in plan.stalls.items() if seconds > plan.read_timeout]
    return (plan.ends[min(late) - 1] if min(late) else 0) if late else None


def server_push(interaction: Interaction) -> bool:
    """Whether a recorded response is a server-push stream: an event stream answering a GET,
    whose messages may answer other requests (the legacy MCP transport's)."""
    return interaction.request.method == "GET" and "text/event-stream" in (
        interaction.response.header("content-type") or ""
    )


def _needs_core(plan: Plan) -> bool:
    return plan.error is not None or plan.due is not None or bool(plan.stalls) or plan.idles


@dataclass
class Play:
    """One response served from the cassette (or, with ``index`` -1, one served on a recording
    run: with ``stream`` None, a live response as it was recorded; with a stream, the recording
    served as its replay will be, under a chunking, transform or fault)."""

    index: int
    """The index of the interaction served in the cassette (-1 on a recording run)."""
    request: httpx.Request
    """The request the client made."""
    interaction: Interaction
    """The interaction served."""
    chunking: _chunking.Chunking
    """The chunking the body was cut with."""
    transforms: list[_transforms.Transform]
    """The transforms applied to the body, in order."""
    stream: ReplayStream | None
    """The stream handed to the client (`None` for a live response recorded)."""
    body: bytes = b""
    """The body served, after transforms."""
    ends: Sequence[int] = field(default_factory=list)
    """The chunk ends served."""
    faults: list[str] = field(default_factory=list)
    """The faults applied, described."""

    @classmethod
    def of(
        cls,
        index: int,
        request: httpx.Request,
        interaction: Interaction,
        plan: Plan,
        stream: ReplayStream,
        chunking: _chunking.Chunking,
        transforms: list[_transforms.Transform],
    ) -> Play:
        """The play of ``plan`` served through ``stream`` (``index`` -1: a recording run's)."""
        return cls(
            index,
            request,
            interaction,
            chunking,
            transforms,
            stream,
            plan.body,
            plan.ends,
            plan.faults,
            cut=timeout_cut(plan),
            framing=plan.framing,
            cut_at=plan.cut_at,
            status=plan.status,
            skipped=plan.skipped,
        )

    def described(self) -> str:
        """What this response went through: ``chunking X, transform Y, faults Z``."""
        parts = [f"chunking {self.chunking}"]
        if self.transforms:
            parts.append("transform " + "+".join(map(str, self.transforms)))
        if self.faults:
            parts.append("faults " + "; ".join(self.faults))
        return ", ".join(parts)

    cut: int | None = None
    """Where a fault ends what the client gets (a stall past its timeout)"""
    framing: str | None = None  # the served body's framing (None: detect it from the body)
    """The served body's framing (`None`: detected from the body)."""
    status: int = 200  # the status served (an http_error fault's, or the recorded one)
    """The status served (an `http_error` fault's, or the recorded one)."""
    cut_at: int | None = None
    """Where a fault cut the body short (disconnect, truncate)"""
    protocol: str | None = None
    """The protocol the player reads streams as (its ``protocol`` option; `None`: detected)."""
    skipped: tuple[float, int] | None = None
    """Under ``instant`` timing, the longest recorded silence not waited: ``(seconds, chunk index)``."""

    def __repr__(self) -> str:
        """One line: which interaction, the request, what it went through, how much was served and
        how it ended (never the bodies: ``print(player.plays)`` stays short)."""
        if self.stream is None:
            served, outcome = len(self.body), "recorded live"
        else:
            served = self.stream.delivered
            outcome = (
                "failed"
                if self.stream.failed
                else "consumed"
                if self.stream.consumed
                else "opened"
                if self.stream.opened
                else "not read"
            )
        return (
            f"<Play #{self.index} {self.request.method} {self.request.url} {self.described()}, "
            f"{served}/{len(self.body)} bytes served, {outcome}>"
        )

    def expected(self, protocol: str | None = None) -> Expected:
        """The reference decoding of this response (what [`Player.expected`][ssemock.Player.expected]
        gives for the last stream served): check each response of a multi-request session (MCP,
        a retry) on its own, ``for play in player.plays: play.expected().text``. ``protocol``
        overrides the player's. Decoded on each call (a stream still arriving has more later)."""
        return Expected(self, protocol if protocol is not None else self.protocol)

    @property
    def reference_body(self) -> bytes:
        """What a conforming client can decode: the body up to where a fault cut it (a stall
        past the read timeout, a dropped connection), else the whole served body."""
        end = self.cut
        if self.stream is not None and self.stream.failed:
            end = self.stream.delivered if end is None else min(end, self.stream.delivered)
        return self.body if end is None else self.body[:end]


_TIMEOUTS = frozenset(
    {"ReadTimeout", "ReadTimeoutError", "SocketTimeoutError", "ServerTimeoutError", "TimeoutError", "timeout"}
)


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
