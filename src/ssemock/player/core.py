"""Replay: serve cassette interactions through respx, re-chunked, timed and faulted.

Data flows one way: the recorded body and boundaries -> transforms -> chunking -> timing ->
a single-pass stream handed to the client's own transport, which maps our ``httpcore`` /
``httpcore2`` exceptions to the ones its stack raises.
"""

# Long on purpose: Player is the object users hold, and its public methods (the SPEC's names)
# stay on it; the work behind them lives below (ssemock.plan.serving plans and streams, ssemock.plan.diagnose
# searches, ssemock.player.session saves), so what is left here is lifecycle, dispatch and the assertions.

from __future__ import annotations

import functools
import os
import re
import threading
import time
import warnings
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar
from urllib.parse import urlsplit

import httpx
import respx

from .. import protocols as _protocols
from .. import stacks as _stacks
from ..core.modes import RECORD_MODES, RecordMode
from ..core.names import unknown
from ..plan import diagnose as _diagnose
from ..plan import held as _held
from ..plan import live as _live
from ..plan import matching
from ..plan.errors import RecordingVariantError, SsemockWarning, UnmatchedRequestError
from ..plan.expect import Expected, StreamAssertionError
from ..plan.record import (
    MAX_BODY_BYTES,
    Recorder,
    RequestHook,
    ResponseHook,
    drain_seconds,
    request_from_httpx,
)
from ..plan.selection import Selection
from ..plan.serving import (
    ChunkingSpec,
    FaultSpec,
    Plan,
    Play,
    ReplayStream,
    TimingSpec,
    TransformSpec,
    plan_response,
    server_push,
    timeout_cut,
)
from ..protocols.accumulate import Accumulated
from ..redaction import keep as _keep
from ..redaction.rules import escape_control, mask_text
from ..stacks import Record
from ..stacks import lock as _lock
from ..stacks import subprocesses as _subprocesses
from ..store.cassette import Cassette, CassetteError, Interaction, Request, Response
from ..variants import chunking as _chunking
from ..variants import faults as _faults
from ..variants import timing as _timing
from ..variants import transforms as _transforms
from . import session as _session

__all__ = [
    "Play",
    "Plan",
    "Player",
    "ReplayStream",
    "UnmatchedRequestError",
    "plan_response",
    "recording_players",
    "recording_refusals",
    "replay",
    "use_cassette",
]

_T = TypeVar("_T")


def _short(value: object, most: int = 200) -> str:
    text = repr(value)
    return mask_text(text if len(text) <= most else text[:most] + "...")


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


recording_players = _session.recording_players


class Player:
    """Replays (and, by record mode, records) a cassette for every intercepted client stack
    (httpx, httpx2, aiohttp, urllib3: see [Client stacks](../guide/stacks.md)).

    You get one from [`replay`][ssemock.player.replay.replay], [`use_cassette`][ssemock.use_cassette] or,
    under pytest, the ``ssemock`` fixture of a test marked ``@pytest.mark.ssemock``; it intercepts
    while its ``with`` block runs. Afterwards (or meanwhile) [`plays`][ssemock.Player.plays] says
    what was served, and [`assert_text`][ssemock.Player.assert_text] and the other ``assert_*``
    methods compare what your client made of the stream with the reference decoding
    ([`expected`][ssemock.Player.expected]).
    """

    def __init__(
        self,
        cassette: Cassette,
        *,
        path: str | os.PathLike[str] | None = None,
        record_mode: RecordMode = "none",
        chunking: ChunkingSpec = "as_recorded",
        transform: TransformSpec = None,
        timing: TimingSpec = "instant",
        faults: FaultSpec = (),
        match_on: matching.MatchOn | None = None,
        allow_playback_repeats: bool = False,
        protocol: str | None = None,
        before_record_request: RequestHook | None = None,
        before_record_response: ResponseHook | None = None,
        allowed_hosts: Sequence[str] | None = None,
        max_body_bytes: int = MAX_BODY_BYTES,
        drain_on_close: bool | float = True,
        existed: bool = True,
        ignore_hosts: Sequence[str] | None = None,
        ignore_localhost: bool = False,
        block_subprocesses: bool = False,
    ) -> None:
        if record_mode not in RECORD_MODES:
            raise unknown("record_mode", record_mode, RECORD_MODES)
        self.cassette = cassette
        """The cassette served: its interactions, and the ones recorded during this run."""
        self.path = Path(path) if path is not None else cassette.path
        """Where the cassette is saved on exit (`None` for an in-memory cassette)."""
        self.record_mode = record_mode
        """The record mode: `"none"` replays only; see [Record modes](../guide/record-modes.md)."""
        self.chunking = _chunking.get(chunking)
        """How replayed bodies are cut into chunks (a [`Chunking`][ssemock.chunking.Chunking])."""
        self.transforms = _transforms.resolve(transform)
        """The wire transforms applied to every replayed body, in order."""
        self.timing = _timing.get(timing)
        """When replayed chunks are handed out (a [`Timing`][ssemock.timing.Timing])."""
        self.faults = _faults.resolve(faults)
        """The faults injected into the replayed responses, in order."""
        self._aim = _faults.Aim(self.faults)
        self.attempts = 0
        """How many requests the player has answered, faulted ones included: a client that retries
        a 429 once makes 2."""
        self.match_on = matching.resolve(match_on)
        """The request parts that pick the interaction served (see [`ssemock.matching`][ssemock.matching])."""
        self.allow_playback_repeats = allow_playback_repeats
        """Whether an interaction may be served more than once (otherwise each is served once, in order)."""
        self.protocol = protocol
        """The protocol the streams are read as (`"openai.chat"`, ...) or `None` to detect it."""
        self._before_request = before_record_request
        self._before_response = before_record_response
        self._replays = record_mode in ("none", "new_episodes") or (record_mode == "once" and existed)
        self._records = record_mode in ("new_episodes", "all", "rewrite") or (
            record_mode == "once" and not existed
        )
        self._existed = existed
        refused = recording_refusals(self.faults) if self._records else []
        if refused:
            raise ValueError(
                f"record_mode={record_mode!r}: a recording run cannot serve these faults as their replay "
                f"will: {'; '.join(refused)}; record without them, then replay with them"
            )
        if not (isinstance(max_body_bytes, int) and max_body_bytes > 0):
            raise ValueError(f"max_body_bytes must be a positive number of bytes, got {max_body_bytes!r}")
        self.max_body_bytes = max_body_bytes
        """The largest body recorded; a longer one fails the recording rather than filling the disk."""
        self.drain_on_close = drain_on_close
        """Whether (or for how many seconds) a recording reads the rest of a stream the client closed early."""
        self._drain = drain_seconds(drain_on_close)
        self._disk = _session.stat(
            self.path
        )  # the file as it was at the start: a change means another recorder
        self.guard = _lock.Guard(
            allowed_hosts=allowed_hosts,
            blocks=not self._records,
            where=str(self.path) if self.path else "an in-memory cassette",
            ignore_hosts=ignore_hosts,
            ignore_localhost=ignore_localhost,
        )
        self.block_subprocesses = block_subprocesses
        """Whether child processes started meanwhile get proxy variables that refuse every connection."""
        self._selection = Selection(cassette.interactions, self.match_on)
        self.plays: list[Play] = []
        """Every response replayed, in order: what was served and how (see [`Play`][ssemock.Play])."""
        self.recorders: list[Recorder] = []
        """The responses recorded during this run, in order."""
        self._expected_of: tuple[Play, Expected] | None = None
        self._lock = threading.Lock()
        self.router = _Router(_weakly(self._handle))
        """The [respx](https://lundberg.github.io/respx/) router the player serves through: routes
        added to it answer before the cassette, and `router.calls` lists every request served."""
        self._active = False
        self._latest: Play | Recorder | None = None  # the last response served or recorded
        self._notes: list[tuple[Play, int]] = []  # (play, chunks handed out) per handed() event
        self._requests = _held.Requests()  # the correlation ids of the requests matched, for held streams
        self.kept: list[_keep.Kept] = []  # refused or partial recordings kept beside the cassette, masked
        """The refused or partial recordings kept beside the cassette, secrets masked."""
        self._again: list[Recorder] = []  # recorded this run, to serve again (a fault did not consume them)
        # of those, server-push streams still live, served to the retry as they go on
        self._held: list[tuple[Recorder, _live.LiveSource]] = []

    def __repr__(self) -> str:
        return (
            f"<ssemock.Player {self.path or '(memory)'} mode={self.record_mode} "
            f"chunking={self.chunking} transform={'+'.join(map(str, self.transforms)) or None}>"
        )

    # -- context management ----------------------------------------------------------------

    def start(self) -> None:
        """Intercept every supported client stack and engage the network lock, until [`stop`][ssemock.Player.stop].

        Players nest: the innermost answers first, and a request it cannot answer (replay only, no
        match) goes to the next one out.
        """
        if self._active:
            raise RuntimeError(f"ssemock: {self!r} is already active (a player is entered once at a time)")
        self._aimed().check(
            self.cassette.interactions,
            str(self.path) if self.path else "the in-memory cassette",
            complete=not self._records,
        )
        _stacks.activate(self.router)
        _lock.engage(self.guard)
        if self.block_subprocesses:
            _subprocesses.engage(self._no_proxy)
        self._active = True
        if self._records:
            _session.recording(self, True)

    def stop(self, save: bool = True) -> None:
        """Stop intercepting (and save what was recorded, unless ``save=False``)."""
        if not self._active:
            return
        self._active = False
        self._close_held()
        _session.recording(self, False)
        self._requests.close()  # a stream still held gives up now: its requests can no longer come
        self._requests = _held.Requests()
        _lock.release(self.guard)
        if self.block_subprocesses:
            _subprocesses.release(self._no_proxy)
        _stacks.deactivate(self.router)
        if save:
            self.save()

    def _close_held(self) -> None:
        """Close the live server-push streams kept for a retry that never came, as a client's
        close does (the rest drained into the recording); an async one that cannot be closed
        here ends its recording where it got to."""
        with self._lock:
            held, self._held = self._held, []
        for recorder, live in held:
            if live.close is None:
                recorder.finish(GeneratorExit())
                continue
            try:
                live.close()
            except Exception:  # the recording ends there (its error recorded by the stack); the save goes on
                recorder.finish(GeneratorExit())

    @functools.cached_property
    def _no_proxy(self) -> list[str]:
        """The hosts a child process may reach directly (``block_subprocesses``)."""
        return [*self.guard.allowed_hosts, *self.guard.ignore_hosts]

    def __enter__(self) -> Player:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        # Saved after an ordinary error (as vcrpy does: what was recorded is real), never after an
        # interrupt (KeyboardInterrupt, SystemExit): a half recording must not replace a good one;
        # it is kept beside it instead.
        if exc is None or isinstance(exc, (Exception, UnmatchedRequestError, RecordingVariantError)):
            self.stop()
        else:
            self.interrupted()

    def interrupted(self) -> Path | None:
        """Stop after an interrupt: the cassette is left as it was, and what was recorded is kept
        beside it as ``<name>.partial.json`` with every secret masked (returned; None when
        nothing was recorded, or a secret could not be masked: [`kept`][ssemock.Player.kept] says which)."""
        self.stop(save=False)
        try:
            return self.keep_partial()
        except (OSError, CassetteError) as exc:  # reported, never in place of the interruption itself
            warnings.warn(
                mask_text(
                    f"ssemock: interrupted while recording {self.path}: it is unchanged, but the "
                    f"partial recording could not be kept: {exc}"
                ),
                SsemockWarning,
                stacklevel=2,
            )
            return None

    def keep_partial(self) -> Path | None:
        """Write what was recorded so far beside the cassette as ``<name>.partial.json``,
        scanned and masked like a refused save (see [`ssemock.redaction.keep`][ssemock.redaction.keep]), without stopping:
        what an interruption that ends the process at once (pytest-timeout's thread method)
        still gets to keep. The cassette itself is never touched."""
        return _session.keep_partial(self.path, self.recorded, kept=self.kept)

    async def __aenter__(self) -> Player:
        return self.__enter__()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.__exit__(exc_type, exc, tb)

    # -- serving ---------------------------------------------------------------------------

    def _handle(self, request: httpx.Request) -> httpx.Response:
        __tracebackhide__ = True
        if self.guard.ignores(request.url.host):  # never recorded nor served
            raise respx.models.PassThrough("ignore_hosts", request=request, origin=None)  # type: ignore[arg-type]
        sent = request_from_httpx(request)
        if self._before_request is not None:  # as vcrpy: matched in the form it is recorded in
            hooked = self._before_request(sent)
            if hooked is None:  # dropped: neither matched nor recorded, sent as it is
                raise respx.models.PassThrough(
                    "dropped by before_record_request",
                    request=request,
                    origin=None,  # type: ignore[arg-type]
                )
            sent = hooked
        if self._replays:
            with self._lock:
                index = self._take(sent)
            if index is not None:
                self._requests.add(_protocols.request_ids(sent.body))
                return self._serve(index, request)
        if self._records:
            with self._lock:
                again = next(
                    (r for r in self._again if not matching.differences(sent, r.request, self.match_on)), None
                )
            if again is not None:  # as a replay serves it again: a retry after an http_error fault
                with self._lock:
                    held = next((live for r, live in self._held if r is again), None)
                    self._held = [(r, live) for r, live in self._held if r is not again]
                if held is not None:  # a server-push stream: the retry gets the live stream, as it goes on
                    return self._serve_live(again, held, request)
                return self._serve_recorded(again, request)
            varied = self.chunking.name != "as_recorded" or bool(self.transforms) or bool(self.faults)
            recorder = Recorder(
                request,
                sent,
                on_response=_weakly(self._recorded),
                before_record_response=self._before_response,
                max_body_bytes=self.max_body_bytes,
                drain=self._drain,
                serve=_weakly(self._serve_recording) if varied else None,
            )
            raise Record(request, recorder)
        if self.guard.allows(request.url.host):  # sent for real, unless an outer player matches it
            raise _stacks.Allowed(f"ssemock: {request.method} {request.url.host}: an allowed host")
        raise UnmatchedRequestError(self._explain(sent))

    def _serve_recording(self, recorder: Recorder, live: _live.LiveSource | None) -> httpx.Response:
        """A recording run's answer under a chunking, transform or fault: the finished recording
        served as its replay will be, or, with ``live``, a server-push stream as it arrives."""
        return self._serve_recorded(recorder) if live is None else self._serve_live(recorder, live)

    def _serve_live(
        self, recorder: Recorder, live: _live.LiveSource, request: httpx.Request | None = None
    ) -> httpx.Response:
        """A recording run's answer for a server-push stream (it may never end) under a chunking,
        transform or fault: served as it arrives, each completed event planned as the replay will
        plan it (`ssemock.plan.live`), attempts and aiming counted as in `_serve_recorded`. A variant
        that needs the whole stream is refused here, before any of it is served, with
        `RecordingVariantError`; an ``http_error`` fault answers at once, its body once the first
        event arrived (its shape may follow the stream's protocol), and the live stream stays open
        for the retry a replay serves the recording to (closed at `stop` if none comes)."""
        request = request if request is not None else recorder.sent
        interaction = recorder.interaction() or recorder.interaction(hooked=False)
        attempt, faults = self._attempt_of(recorder, interaction, arriving=True)
        content_type = interaction.response.header("content-type") or ""
        refused = _live.needs_end(
            self.chunking, self.transforms, faults, kind=_transforms.kind_of(content_type, b"")
        )
        where = str(self.path) if self.path else "the in-memory cassette"

        def refuse(why: str) -> RecordingVariantError:
            return RecordingVariantError(
                f"ssemock: {where}: recording {recorder.request.method} {recorder.request.url}, a server-push "
                f"stream (an event "
                f"stream answering a GET, which may never end): a recording run serves it as it arrives, as "
                f"its replay will, but {why}. Aim a fault at another interaction (on='POST */path' or an "
                f"index), or record the cassette first without it, then replay with it"
            )

        if refused:
            with self._lock:  # nothing of it is kept: the client gets the error, not the stream
                self.recorders = [r for r in self.recorders if r is not recorder]
                self._latest = self.plays[-1] if self.plays else None
            recorder.finish(GeneratorExit())
            raise refuse(
                "; ".join(refused) + ": it would wait for the whole stream, which may never come"
            ) from None

        def plan(response: Response, more: bool) -> Plan:
            # as a replay picks them: an unaimed stream fault leaves a stream that ended empty alone
            picked = (
                faults if response.body or more else [f for f in faults if f.on is not None or f.per_request]
            )
            return self._plan_recording(response, request, picked, attempt, more=more)

        def recording() -> tuple[Response, bool]:
            now = recorder.interaction() or recorder.interaction(hooked=False)
            return now.response, recorder.ended

        t0 = _timing.clock.now() - (time.perf_counter() - recorder.t0)  # when the request was sent
        serving = _live.Live(recording=recording, plan=plan, content_type=content_type, t0=t0, refuse=refuse)
        first = serving.start()
        stream = _live.LiveStream(serving, live, hold=not first.consumes)
        play = Play.of(-1, request, interaction, first, stream, self.chunking, self.transforms)
        serving.on_plan = functools.partial(_adopt, play)
        with self._lock:
            if not first.consumes:
                self._held.append((recorder, live))
            self._served_recording(recorder, play, consumes=first.consumes)
        return httpx.Response(
            first.status, headers=first.headers, stream=stream, extensions={"http_version": b"HTTP/1.1"}
        )

    def _serve_recorded(self, recorder: Recorder, request: httpx.Request | None = None) -> httpx.Response:
        """A recording run's answer under a chunking, transform or fault: the whole recording
        served as its replay will be (the same plan, attempts counted alike), so one test passes
        both ways. A fault that does not consume it (``http_error``) leaves it to be served
        again to the next request it matches, as in replay, instead of recording that one too."""
        request = request if request is not None else recorder.sent
        interaction = recorder.interaction() or recorder.interaction(hooked=False)
        attempt, faults = self._attempt_of(recorder, interaction)
        plan = self._plan_recording(interaction.response, request, faults, attempt)
        t0 = _timing.clock.now() - (time.perf_counter() - recorder.t0)  # when the request was sent
        stream = ReplayStream(plan, t0)
        play = Play.of(-1, request, interaction, plan, stream, self.chunking, self.transforms)
        with self._lock:
            self._served_recording(recorder, play, consumes=plan.consumes)
        return httpx.Response(
            plan.status, headers=plan.headers, stream=stream, extensions={"http_version": b"HTTP/1.1"}
        )

    def _attempt_of(
        self, recorder: Recorder, interaction: Interaction, *, arriving: bool = False
    ) -> tuple[int, list[_faults.Fault]]:
        """The attempt a recording run's answer counts as, and the faults aimed at it: as in the
        replay, where the recording will be this interaction of the cassette."""
        with self._lock:
            attempt, self.attempts = self.attempts, self.attempts + 1
            at = len(self.cassette.interactions) + next(
                (n for n, r in enumerate(self.recorders) if r is recorder), len(self.recorders)
            )
            return attempt, self._aimed().pick(at, interaction, arriving=arriving)

    def _plan_recording(
        self,
        response: Response,
        request: httpx.Request,
        faults: Sequence[_faults.Fault],
        attempt: int,
        *,
        more: bool = False,
    ) -> Plan:
        """A recording (or, with ``more``, the part of it arrived so far) planned as its replay."""
        return plan_response(
            response,
            url=str(request.url),
            core=_stacks.errors_of(request),
            chunking=self.chunking,
            transforms=self.transforms,
            timing=self.timing,
            faults=faults,
            attempt=attempt,
            read_timeout=(request.extensions.get("timeout") or {}).get("read"),
            more=more,
        )

    def _served_recording(self, recorder: Recorder, play: Play, *, consumes: bool) -> None:
        """Note a recording run's answer (under the lock): a fault that does not consume the
        recording leaves it to answer the next request it matches, as the replay would."""
        if consumes:
            self._again = [r for r in self._again if r is not recorder]
        elif recorder not in self._again:
            self._again.append(recorder)
        self.plays.append(play)
        self._latest = play

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
            self._selection.play_counts[: len(counts)] = counts[: len(interactions)]
        return self._selection

    @property
    def play_counts(self) -> list[int]:
        """How many times each interaction was served."""
        return self.selection.play_counts

    def _aimed(self) -> _faults.Aim:
        """Where the faults apply (made again when the faults were changed, as check() does)."""
        if self._aim.faults is not self.faults:
            self._aim = _faults.Aim(self.faults)
        return self._aim

    def _take(self, sent: Request) -> int | None:
        return self.selection.take(sent, repeats="first" if self.allow_playback_repeats else "never")

    def _serve(self, index: int, request: httpx.Request) -> httpx.Response:
        t0 = _timing.clock.now()
        since = self._requests.mark()
        interaction = self.cassette.interactions[index]
        with self._lock:
            attempt, self.attempts = self.attempts, self.attempts + 1
            faults = self._aimed().pick(index, interaction)
        core = _stacks.errors_of(request)
        read_timeout = (request.extensions.get("timeout") or {}).get("read")
        pushes = server_push(interaction)
        plan = plan_response(
            interaction.response,
            url=str(request.url),
            core=core,
            chunking=self.chunking,
            transforms=self.transforms,
            timing=self.timing,
            faults=faults,
            attempt=attempt,
            read_timeout=read_timeout,
            holds=_held.holds_for(self.cassette.interactions, index) if pushes else None,
        )
        if not plan.consumes:
            with self._lock:
                self.selection.release(index)
        gate = None
        if plan.holds:
            limit = min(read_timeout, _held.HOLD_LIMIT) if read_timeout is not None else _held.HOLD_LIMIT
            gate = _held.Gate(self._requests, since, limit, self._never_requested(index, core))
        stream = ReplayStream(plan, t0, gate)
        play = Play.of(index, request, interaction, plan, stream, self.chunking, self.transforms)
        with self._lock:
            self.plays.append(play)
            self._latest = play
        return httpx.Response(
            plan.status, headers=plan.headers, stream=stream, extensions={"http_version": b"HTTP/1.1"}
        )

    def _never_requested(self, index: int, core: Any) -> Callable[[list[Any], str], BaseException]:
        """The error a held stream raises when the requests it answers never come: the client
        stack's read timeout, naming the cassette, the interaction and the ids it waited for."""
        where = str(self.path) if self.path else "the in-memory cassette"
        request = self.cassette.interactions[index].request

        def error(missing: list[Any], why: str) -> BaseException:
            ids = ", ".join(sorted(map(repr, missing)))
            timeout: BaseException = core.ReadTimeout(
                mask_text(
                    f"ssemock: {where}, interaction #{index} ({request.method} {request.url}): the recorded stream "
                    f"answers the request with id {ids} next, and replay holds it until that request is made; {why}. "
                    f"Make the requests the recorded session made (in its order), or record the cassette again"
                )
            )
            return timeout

        return error

    def _explain(self, sent: Request) -> str:
        """The UnmatchedRequestError message: what was sent, the closest recorded requests with
        what differs as a diff, and each way to fix it."""
        where = str(self.path) if self.path else "the in-memory cassette"
        names = [matching.name_of(m) for m in self.match_on]
        count = len(self.cassette.interactions)
        lines = [
            f"ssemock: no recorded interaction matches {sent.method} {sent.url}",
            f"  cassette: {where} ({count} interaction{'' if count == 1 else 's'}, "
            f"record_mode={self.record_mode!r}, matching on {', '.join(names)})",
        ]
        host = urlsplit(sent.url).hostname
        if count and all(urlsplit(x.request.url).hostname != host for x in self.cassette.interactions):
            lines.append(f"  the request goes to {host}, a host the cassette never saw")
        if self.path and not self._existed:
            lines.append("  the cassette file does not exist yet: record it first")
        ranked = self.selection.closest(sent)
        fixes = [
            "record it: pytest --ssemock-record-mode=new_episodes (or once for a new cassette), "
            'or use_cassette(..., record_mode="new_episodes")'
        ]
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
            where_to = failing & {"scheme", "host", "port", "path", "uri", "url"}  # another endpoint:
            if len(self.match_on) == len(names) and kept and not where_to and i == ranked[0][1]:  # never drop
                fixes.append(f"match #{i} by matching less: match_on={kept!r}")
        lines.append("  to fix it:")
        lines.extend(f"    - {fix}" for fix in fixes)
        # what was sent may hold a key: never print it; a cassette's text never drives the terminal
        return escape_control(mask_text("\n".join(lines)))

    # -- saving ----------------------------------------------------------------------------

    @property
    def recorded(self) -> list[Interaction]:
        """Interactions recorded in this session (redacted, as they would be saved)."""
        with self._lock:
            recorders = list(self.recorders)
        return [x for x in (r.interaction() for r in recorders) if x is not None]

    def save(self) -> None:
        """Write what was recorded (atomically); refuse if a secret is left in it (the recording
        is then kept beside the cassette, masked). Under the cassette's lock: when another
        recorder (an xdist worker, another process) saved the file since it was loaded, its
        interactions are merged in, never lost (`ssemock.player.session.save`)."""
        new = self.recorded
        if not new:
            return
        kept = self.cassette.interactions
        out, self._disk = _session.save(
            self.path,
            kept,
            new,
            disk=self._disk,
            record_mode=self.record_mode,
            match_on=self.match_on,
            existed=self._existed,
            kept=self.kept,
        )
        self.cassette.interactions = out
        self._selection = Selection(out, self.match_on)

    # -- expectations (what a conforming client gets from what was served) ---------------------

    @property
    def expected(self) -> Expected:
        """Reference events and result of the last response served, or, on a recording run, of
        the last live response as recorded so far (so one test passes when it records and when
        it replays)."""
        with self._lock:
            latest = self._latest
        if latest is None:
            raise StreamAssertionError(
                f"ssemock: nothing was served or recorded yet by {self!r}, so nothing is expected"
            )
        if isinstance(latest, Recorder):
            interaction = latest.interaction(hooked=False)
            response = interaction.response
            return Expected(
                Play(
                    -1,
                    latest.sent,
                    interaction,
                    _chunking.as_recorded,
                    [],
                    None,
                    response.body,
                    response.ends,
                    status=response.status,
                ),
                self.protocol,
            )
        cached = self._expected_of  # the last served stream's, until more of it was delivered
        if cached is None or cached[0] is not latest or len(cached[1].body) != len(latest.reference_body):
            self._expected_of = cached = (latest, Expected(latest, self.protocol))
        return cached[1]

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
        if len(self.plays) == state[1]:  # no stream was served before the failure: no boundary to blame
            raise original
        chunking, faults = self.chunking, self.faults
        after = (list(self.play_counts), len(self.plays), self.attempts, self._latest)

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

        try:
            _diagnose.shrink(
                self.plays[-1],
                chunking=chunking,
                transforms=self.transforms,
                faults=faults,
                original=original,
                fails_when=fails_when,
            )
        finally:  # the search's own runs are not plays of the test (nor teardown warnings)
            self.play_counts[:], self.attempts, self._latest = after[0], after[2], after[3]
            del self.plays[after[1] :]

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
        unchanged: ``for event in client.stream(): player.handed(event)``. [`assert_prompt`][ssemock.Player.assert_prompt]
        then checks that no event was held back until a later chunk was read."""
        with self._lock:
            latest = self._latest
        if isinstance(latest, Play) and latest.stream is not None:
            self._notes.append((latest, latest.stream.handed))
        return item

    def assert_prompt(self) -> None:
        """Raise StreamAssertionError unless every event noted with [`handed`][ssemock.Player.handed] reached the
        caller before the client asked for the chunk after the one that completed it (a WHATWG
        decoder dispatches an event at its blank line, the CR of a CRLF included: a client that
        waits for more bytes first delays every event by one chunk, forever on a quiet stream)."""
        if not self._notes:
            raise StreamAssertionError(
                "ssemock: assert_prompt: no event was noted; wrap each event the client "
                "yields with player.handed(event)"
            )
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
                    raise StreamAssertionError(
                        f"ssemock: the client handed on {len(counts)} events, but only "
                        f"{len(events)} were served (under {play.chunking})"
                    )
                block = events[n]
                need = _diagnose.chunk_of(ends, block.done_at(play.body))
                if handed > need:
                    raise StreamAssertionError(
                        f"ssemock: {_diagnose.block_line(block)} was complete after chunk {need} of "
                        f"{len(ends)} (byte {block.done_at(play.body)}), but the client handed it on only after "
                        f"asking for chunk {handed}: it holds events back until more bytes arrive "
                        f"(under {Expected(play, self.protocol)._under()})"
                    )

    def assert_rejected(
        self, run: Callable[[], _T], *, flagged: Callable[[_T], bool] | None = None
    ) -> BaseException | _T:
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
                    f"{len(self.expected.events)} events) under {self.expected._under()}: {exc!r}"
                ) from exc
            return exc
        reason = self._reference_rejects()
        if reason is None:
            raise StreamAssertionError(
                f"ssemock: assert_rejected: the reference accepts the stream served under "
                f"{self.expected._under()}, so there is nothing to reject; compare the "
                f"result instead (assert_text, assert_accumulates)"
            )
        if flagged is not None and flagged(result):
            return result
        raise StreamAssertionError(
            f"ssemock: the client accepted a stream a conforming client must reject or flag "
            f"under {self.expected._under()}: {reason}; it returned {_short(result)}"
        )

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
        """Indexes of interactions never served (one a fault answered for, an ``http_error`` that
        leaves it to be matched again, was served)."""
        with self._lock:
            served = {p.index for p in self.plays}
        return [i for i, n in enumerate(self.play_counts) if n == 0 and i not in served]

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


def _adopt(play: Play, plan: Plan, ends: list[int]) -> None:
    """A live play follows its stream's latest plan (what `expected` and the assertions read)."""
    play.body, play.ends, play.faults, play.status = plan.body, ends, plan.faults, plan.status
    play.cut, play.framing, play.cut_at = timeout_cut(plan), plan.framing, plan.cut_at


def recording_refusals(faults: Sequence[_faults.Fault]) -> list[str]:
    """The faults a recording run cannot serve the way their replay will, each as ``name: why``.

    A recording run serves every fault from the live stream's recording through the replay's own
    plan, so every built-in fault can. A fault that cannot (one that needs the recorded cassette
    as a whole) says why in its ``replay_only`` attribute; a player that records refuses it."""
    return [f"{fault}: {reason}" for fault in faults if (reason := getattr(fault, "replay_only", None))]


def replay(
    cassette: Cassette,
    *,
    chunking: ChunkingSpec = "as_recorded",
    transform: TransformSpec = None,
    timing: TimingSpec = "instant",
    faults: FaultSpec = (),
    match_on: matching.MatchOn | None = None,
    allow_playback_repeats: bool = False,
    protocol: str | None = None,
    allowed_hosts: Sequence[str] | None = None,
    ignore_hosts: Sequence[str] | None = None,
    ignore_localhost: bool = False,
    block_subprocesses: bool = False,
) -> Player:
    """A player over an in-memory cassette: ``with ssemock.replay(c) as player: ...``.

    Replay only: a request no interaction matches raises
    [`UnmatchedRequestError`][ssemock.UnmatchedRequestError], unless its host is in
    ``allowed_hosts`` (loopback by default; ``[]`` for none): then it is sent for real. A
    connection no intercepted stack makes, to a host that is not allowed, raises
    [`NetworkBlockedError`][ssemock.NetworkBlockedError]. Requests to ``ignore_hosts`` (``ignore_localhost=True``: loopback) are
    always sent for real, never served. ``block_subprocesses=True`` points the proxy variables
    of child processes started meanwhile at a port that refuses every connection.

    Use it for a cassette built in code or loaded yourself; for a cassette file, use
    [`use_cassette`][ssemock.use_cassette] (or, under pytest, the ``ssemock`` marker):

        import httpx
        import ssemock

        cassette = ssemock.Cassette()
        cassette.add("POST", "https://api.example.com/v1/stream", [b"data: hel", b"lo\\n\\n"],
                     headers={"content-type": "text/event-stream"})
        with ssemock.replay(cassette, chunking="bytewise") as player:
            with httpx.stream("POST", "https://api.example.com/v1/stream") as response:
                chunks = list(response.iter_raw())
        assert len(chunks) == 13 and b"".join(chunks) == b"data: hello\\n\\n"
        assert len(player.plays) == 1
    """
    return Player(
        cassette,
        chunking=chunking,
        transform=transform,
        timing=timing,
        faults=faults,
        match_on=match_on,
        allow_playback_repeats=allow_playback_repeats,
        protocol=protocol,
        allowed_hosts=allowed_hosts,
        ignore_hosts=ignore_hosts,
        ignore_localhost=ignore_localhost,
        block_subprocesses=block_subprocesses,
    )


def use_cassette(
    path: str | os.PathLike[str],
    *,
    record_mode: RecordMode = "none",
    chunking: ChunkingSpec = "as_recorded",
    transform: TransformSpec = None,
    timing: TimingSpec = "instant",
    faults: FaultSpec = (),
    match_on: matching.MatchOn | None = None,
    allow_playback_repeats: bool = False,
    protocol: str | None = None,
    before_record_request: RequestHook | None = None,
    before_record_response: ResponseHook | None = None,
    allowed_hosts: Sequence[str] | None = None,
    max_body_bytes: int = MAX_BODY_BYTES,
    drain_on_close: bool | float = True,
    ignore_hosts: Sequence[str] | None = None,
    ignore_localhost: bool = False,
    block_subprocesses: bool = False,
) -> Player:
    """Replay (and record, by ``record_mode``) the cassette file at ``path``.

    Modes as vcrpy's: ``none`` replays only; ``once`` records if the file is missing, else
    replays; ``new_episodes`` replays what matches and records the rest; ``all`` records
    everything (replacing the interactions it re-records); ``rewrite`` starts from empty.
    ``allowed_hosts`` (default: loopback only) says which hosts a replay may still reach: an
    unmatched request to one is sent for real, a connection that no intercepted stack makes to
    any other is refused (a recording records every request, and warns of such connections).
    Requests to ``ignore_hosts`` (``ignore_localhost=True``: loopback) are never recorded nor
    served, in every mode. ``block_subprocesses``: see [`replay`][ssemock.player.replay.replay].
    ``max_body_bytes`` bounds one recorded body (64 MiB): past it the interaction is cut and
    marked truncated, with a warning. ``drain_on_close`` (on by default, up to 30 s; a number of
    seconds, or False) keeps reading a recorded stream the client closed before its end, so the
    cassette holds all of it.

    Under pytest the ``ssemock`` marker does the same and names the file after the test; outside
    it (a script, another test runner):

        with ssemock.use_cassette("cassettes/chat.json", record_mode="once") as player:
            reply = my_app.ask("Say hello.")  # recorded on the first run, replayed after
        print(player.plays)
    """
    p = Path(path)
    existed = p.exists() and record_mode != "rewrite"
    cassette = Cassette.load(p) if existed else Cassette(path=p)
    return Player(
        cassette,
        path=p,
        record_mode=record_mode,
        existed=existed,
        chunking=chunking,
        transform=transform,
        timing=timing,
        faults=faults,
        match_on=match_on,
        allow_playback_repeats=allow_playback_repeats,
        protocol=protocol,
        before_record_request=before_record_request,
        before_record_response=before_record_response,
        allowed_hosts=allowed_hosts,
        max_body_bytes=max_body_bytes,
        drain_on_close=drain_on_close,
        ignore_hosts=ignore_hosts,
        ignore_localhost=ignore_localhost,
        block_subprocesses=block_subprocesses,
    )
