"""The Player: what ``replay`` / ``use_cassette`` and the pytest fixture hand a test.

It starts and stops the interception (every client stack, the network lock), dispatches each
intercepted request (an interaction replayed through its plan, a recording, an allowed host, or
an unmatched request's error), and keeps what was served. The rest it delegates: a recording run
to `RecordingRun`, what a test asserts to `Assertions`, what it reports to `ssemock.player.reporting`.
"""

from __future__ import annotations

import functools
import os
import threading
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

import httpx
import respx

from .. import protocols as _protocols
from .. import stacks as _stacks
from ..plan import matching
from ..plan import push_replay as _held
from ..plan import resume as _resumption
from ..plan.conversation import Conversation
from ..plan.errors import RecordingVariantError, SsemockWarning, UnmatchedRequestError
from ..plan.expect import Expected, StreamAssertionError
from ..plan.grpc.record import GrpcRecorder
from ..plan.grpc.serving import ServedCall
from ..plan.record import Recorder, request_from_httpx
from ..plan.selection import Selection
from ..plan.serving import Play, ReplayStream, plan_response, server_push
from ..plan.session_group import SessionGroup, groups_of
from ..plan.websocket.expect import SessionExpected
from ..plan.websocket.record import WsRecorder
from ..protocols.accumulate import Accumulated
from ..redaction import keep as _keep
from ..redaction.rules import mask_text
from ..stacks import lock as _lock
from ..stacks import subprocesses as _subprocesses
from ..store.cassette import Cassette, CassetteError, Interaction, Request
from ..variants import chunking as _chunking
from ..variants import faults as _faults
from ..variants import timing as _timing
from ..variants import transforms as _transforms
from . import grpc as _grpc
from . import reporting, session
from . import websocket as _websocket
from .assertions import Assertions
from .options import Options
from .recording import RecordingRun
from .router import Router, weakly
from .state import opened_count
from .stdio import StdioRun

__all__ = ["Player", "recording_refusals"]

_T = TypeVar("_T")


class Player:
    """Replays (and, by record mode, records) a cassette for every intercepted client stack
    (httpx, httpx2, aiohttp, urllib3: see [Client stacks](../guide/stacks.md)).

    You get one from [`replay`][ssemock.replay], [`use_cassette`][ssemock.use_cassette] or,
    under pytest, the ``ssemock`` fixture of a test marked ``@pytest.mark.ssemock``; it intercepts
    while its ``with`` block runs. Afterwards (or meanwhile) [`plays`][ssemock.Player.plays] says
    what was served, and [`assert_text`][ssemock.Player.assert_text] and the other ``assert_*``
    methods compare what your client made of the stream with the reference decoding
    ([`expected`][ssemock.Player.expected]).

    Made directly, it takes its [`Options`][ssemock.Options] as one value, or as keywords (the
    keywords of [`use_cassette`][ssemock.use_cassette]): ``Player(cassette, record_mode="all")``.
    ``existed`` says whether the cassette file was there (``once`` records only when it was not).
    """

    def __init__(
        self,
        cassette: Cassette,
        options: Options | None = None,
        *,
        path: str | os.PathLike[str] | None = None,
        existed: bool = True,
        **keywords: Any,
    ) -> None:
        # a file's path, as vcrpy takes: said here, not an AttributeError from inside
        if isinstance(cassette, (str, bytes, os.PathLike)):
            raise TypeError(
                f"ssemock: a player serves a Cassette object, got {cassette!r} "
                f"({type(cassette).__name__}): for a cassette file use ssemock.use_cassette(path) "
                f"(record_mode='none' replays only), or ssemock.replay(ssemock.Cassette.load(path))"
            )
        options = Options(**keywords) if options is None else Options(**{**vars(options), **keywords})
        self.options = options
        """The options this player was made with (as given: names, not yet resolved)."""
        self.cassette = cassette
        """The cassette served: its interactions, and the ones recorded during this run."""
        self.path = Path(path) if path is not None else cassette.path
        """Where the cassette is saved on exit (`None` for an in-memory cassette)."""
        self.existed = existed
        """Whether the cassette file existed when the player was made."""
        self.record_mode = options.record_mode
        """The record mode: `"none"` replays only; see [Record modes](../guide/record-modes.md)."""
        self.chunking = _chunking.get(options.chunking)
        """How replayed bodies are cut into chunks (a [`Chunking`][ssemock.chunking.Chunking])."""
        self.transforms = _transforms.resolve(options.transform)
        """The wire transforms applied to every replayed body, in order."""
        self.timing = _timing.get(options.timing)
        """When replayed chunks are handed out (a [`Timing`][ssemock.timing.Timing])."""
        self.faults = _faults.resolve(options.faults)
        """The faults injected into the replayed responses, in order."""
        self._aim = _faults.Aim(self.faults)
        self.attempts = 0
        """How many requests the player has answered, faulted ones included: a client that retries
        a 429 once makes 2."""
        self.match_on = matching.resolve(options.match_on)
        """The request parts that pick the interaction served (see [`ssemock.matching`][ssemock.matching])."""
        self.allow_playback_repeats = options.allow_playback_repeats
        """Whether an interaction may be served more than once (otherwise each is served once, in order)."""
        self.protocol = options.protocol
        """The protocol the streams are read as (`"openai.chat"`, ...) or `None` to detect it."""
        mode = options.record_mode
        self._replays = mode in ("none", "new_episodes") or (mode == "once" and existed)
        self._records = mode in ("new_episodes", "all", "rewrite") or (mode == "once" and not existed)
        refused = recording_refusals(self.faults) if self._records else []
        if refused:
            raise ValueError(
                f"record_mode={mode!r}: a recording run cannot serve these faults as their replay "
                f"will: {'; '.join(refused)}; record without them, then replay with them"
            )
        self.max_body_bytes = options.max_body_bytes
        """The largest body recorded; a longer one fails the recording rather than filling the disk."""
        self.drain_on_close = options.drain_on_close
        """Whether (or for how many seconds) a recording reads the rest of a stream the client closed early."""
        self.guard = _lock.Guard(
            allowed_hosts=options.allowed_hosts,
            blocks=not self._records,
            where=self.where,
            ignore_hosts=options.ignore_hosts,
            ignore_localhost=options.ignore_localhost,
        )
        self.block_subprocesses = options.block_subprocesses
        """Whether child processes started meanwhile get proxy variables that refuse every connection."""
        self._selection = Selection(cassette.interactions, self.match_on)
        self.plays: list[Play] = []
        """Every response replayed, in order: what was served and how (see [`Play`][ssemock.Play])."""
        self.conversations: list[Conversation] = []
        """Every WebSocket session replayed, in order (see `ssemock.plan.conversation.Conversation`)."""
        self.sessions: list[WsRecorder] = []
        """Every WebSocket session recorded during this run, in order."""
        self.served_calls: list[ServedCall] = []
        """Every gRPC call replayed, in order (see `ssemock.plan.grpc.serving.ServedCall`)."""
        self.grpc_calls: list[GrpcRecorder] = []
        """Every gRPC call recorded during this run, in order."""
        self.call_attempts: dict[tuple[int, int], int] = {}
        """Per (gRPC fault sequence's position, interaction): the attempts it served (index -1: the
        interaction an unaimed sequence is pinned to)."""
        self.session_opened_after: dict[WsRecorder, tuple[int, int, int]] = {}
        """Per session recorded: how many responses were replayed, responses recorded and sessions
        replayed when it opened (the assertions' reference is the last thing opened)."""
        self.kept: list[_keep.Kept] = []
        """The refused or partial recordings kept beside the cassette, secrets masked."""
        self.lock = threading.Lock()
        """Held while plays, recorders, attempts and the latest change (clients may call from several threads)."""
        self.latest: Play | Recorder | None = None
        """The last response served or recorded (what [`expected`][ssemock.Player.expected] reads)."""
        self.router = Router(weakly(self._handle))
        """The [respx](https://lundberg.github.io/respx/) router the player serves through: routes
        added to it answer before the cassette, and `router.calls` lists every request served."""
        self._groups: tuple[list[Interaction], dict[int, SessionGroup]] | None = None
        self._active = False
        self._requests = _held.Requests()  # the correlation ids of the requests matched, for held streams
        self._recording = RecordingRun(self)
        self.stdio = StdioRun(self)
        """The child processes of ``stdio=[...]``: ``stdio.recorded`` (sessions recorded in this
        run), ``stdio.replayed`` (the cassette's sessions served); see [stdio servers](../guide/stdio.md)."""
        self._assertions = Assertions(self)

    def __repr__(self) -> str:
        return (
            f"<ssemock.Player {self.path or '(memory)'} mode={self.record_mode} "
            f"chunking={self.chunking} transform={'+'.join(map(str, self.transforms)) or None}>"
        )

    @property
    def where(self) -> str:
        """The cassette's path, as messages name it."""
        return str(self.path) if self.path else "the in-memory cassette"

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        """Intercept every supported client stack and engage the network lock, until [`stop`][ssemock.Player.stop].

        Players nest: the innermost answers first, and a request it cannot answer (replay only, no
        match) goes to the next one out.
        """
        if self._active:
            raise RuntimeError(f"ssemock: {self!r} is already active (a player is entered once at a time)")
        self.aimed().check(self.cassette.interactions, self.where, complete=not self._records)
        if self._replays:
            _grpc.require_extra(self.cassette.interactions)
        _stacks.activate(self.router)
        _lock.engage(self.guard)
        if self.block_subprocesses:
            _subprocesses.engage(self._no_proxy)
        self.stdio.start()  # after the subprocess patch: its Popen patch wraps that one
        self._active = True
        if self._records:
            session.recording(self, True)

    def stop(self, save: bool = True) -> None:
        """Stop intercepting (and save what was recorded, unless ``save=False``)."""
        if not self._active:
            return
        self._active = False
        self._recording.close_held()
        session.recording(self, False)
        self._requests.close()  # a stream still held gives up now: its requests can no longer come
        self._requests = _held.Requests()
        _lock.release(self.guard)
        try:
            self.stdio.stop()  # first: its Popen patch wraps the subprocess one
        finally:
            if self.block_subprocesses:
                _subprocesses.release(self._no_proxy)
            _stacks.deactivate(self.router)
            if save:
                self.save()
            _websocket.teardown(self)

    def started_session(self, recorder: WsRecorder) -> None:
        """A WebSocket session being recorded was upgraded: it belongs to this run's recording."""
        with self.lock:
            self.sessions.append(recorder)
            self.session_opened_after[recorder] = opened_count(self)

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
        if exc is not None:  # a message that matched nothing is told once: with this error
            for untold in _websocket.tell(self, exc):
                exc.add_note(untold)
        if exc is None or isinstance(exc, (Exception, UnmatchedRequestError, RecordingVariantError)):
            self.stop()
        else:
            self.interrupted()

    async def __aenter__(self) -> Player:
        return self.__enter__()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.__exit__(exc_type, exc, tb)

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
        return session.keep_partial(self.path, self.recorded, kept=self.kept, stdio=self.stdio.recorded)

    # -- dispatch ----------------------------------------------------------------------------

    def _handle(self, request: httpx.Request) -> httpx.Response:
        __tracebackhide__ = True
        if self.guard.ignores(request.url.host):  # never recorded nor served
            raise respx.models.PassThrough("ignore_hosts", request=request, origin=None)  # type: ignore[arg-type]
        sent = request_from_httpx(request)
        hook = self.options.before_record_request
        if hook is not None:  # as vcrpy: matched in the form it is recorded in
            hooked = hook(sent)
            if hooked is None:  # dropped: neither matched nor recorded, sent as it is
                raise respx.models.PassThrough(
                    "dropped by before_record_request",
                    request=request,
                    origin=None,  # type: ignore[arg-type]
                )
            sent = hooked
        if not self.existed and self.path is not None and self.record_mode == "none":
            raise UnmatchedRequestError(reporting.missing(self, sent))  # not even to an allowed host
        if _grpc.is_grpc(request):
            return _grpc.handle(self, request, sent)
        if _websocket.is_websocket(request):
            return _websocket.handle(self, request, sent)
        if self._replays:
            with self.lock:
                index = self.selection.take(sent, repeats="first" if self.allow_playback_repeats else "never")
            if index is not None:  # the ids sent, and the recorded ones a held stream may name
                recorded = self.cassette.interactions[index].request.body
                self._requests.add([*_protocols.request_ids(sent.body), *_protocols.request_ids(recorded)])
                return self._serve(index, request, sent)
            resumed = self._resume(request)
            if resumed is not None:
                return resumed
        if self._records:
            return self._recording.record(request, sent)
        # sent for real, unless an outer player matches it (never to a host and port recorded)
        if reporting.passes(self.guard, self.cassette, request.url.host, sent):
            raise _stacks.Allowed(f"ssemock: {request.method} {request.url.host}: an allowed host")
        raise UnmatchedRequestError(reporting.explain(self, sent))

    def _serve(self, index: int, request: httpx.Request, sent: Request) -> httpx.Response:
        interaction = self.cassette.interactions[index]
        with self.lock:
            faults = self.aimed().pick(index, interaction)
        return self._play(index, request, interaction, sent.body, faults)

    def _resume(self, request: httpx.Request) -> httpx.Response | None:
        """A client's reconnection after a stream it was reading dropped (a ``GET`` with
        ``Last-Event-ID``, as the MCP 2025-11-25 client resumes a ``resume`` fault's cut): the
        rest of that stream after the event with that ID, as a resumable server answers it
        (no fault again); None for any other request (matched as usual)."""
        last_event_id = request.headers.get("last-event-id")
        if request.method != "GET" or not last_event_id:
            return None
        with self.lock:
            plays = list(self.plays)
        streams = [(str(play.request.url), play.interaction.response) for play in plays]
        found = _resumption.reconnection(streams, str(request.url), last_event_id)
        if found is None:
            return None
        k, response, _ = found
        play = plays[k]
        interaction = Interaction(play.interaction.request, response)
        return self._play(play.index, request, interaction, play.request.content, [])

    def _play(
        self,
        index: int,
        request: httpx.Request,
        interaction: Interaction,
        sent: bytes | None,
        faults: Sequence[_faults.Fault],
    ) -> httpx.Response:
        """Serve ``interaction`` (at ``index``) to ``request`` through its plan, as a play."""
        t0 = _timing.clock.now()
        since = self._requests.mark()
        with self.lock:
            attempt, self.attempts = self.attempts, self.attempts + 1
        core = _stacks.errors_of(request)
        read_timeout = (request.extensions.get("timeout") or {}).get("read")
        pushes = server_push(interaction) or _held.announces(interaction)
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
            answer=_protocols.answer_edits(sent, interaction.request.body, interaction.response.body),
            stays_open=_protocols.stays_open(interaction),
        )
        if not plan.consumes:
            with self.lock:
                self.selection.release(index)
        gate = None
        if plan.holds or plan.idles:  # (an idle stream is released when the player stops)
            limit = min(read_timeout, _held.HOLD_LIMIT) if read_timeout is not None else _held.HOLD_LIMIT
            gate = _held.Gate(self._requests, since, limit, self._never_requested(index, core))
        stream = ReplayStream(plan, t0, gate)
        play = Play.of(index, request, interaction, plan, stream, self.chunking, self.transforms)
        play.protocol = self.protocol
        with self.lock:
            self.plays.append(play)
            self.latest = play
        group = self.session_group(index)
        if group is not None:  # a REST call of a session spanning connections: its answer was released
            group.done(index, [0])
        return httpx.Response(
            plan.status, headers=plan.headers, stream=stream, extensions={"http_version": b"HTTP/1.1"}
        )

    def session_group(self, index: int) -> SessionGroup | None:
        """The replay's progress through the session spanning connections that interaction
        ``index`` belongs to (`ssemock.plan.session_group`), or None: it is on its own."""
        interactions = self.cassette.interactions
        with self.lock:
            if self._groups is None or self._groups[0] is not interactions:
                self._groups = (interactions, groups_of(interactions, self.where))
            return self._groups[1].get(index)

    def _never_requested(self, index: int, core: Any) -> Callable[[list[Any], str], BaseException]:
        """The error a held stream raises when the requests it answers never come: the client
        stack's read timeout, naming the cassette, the interaction and the ids it waited for."""
        where = self.where
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

    def aimed(self) -> _faults.Aim:
        """Where the faults apply (made again when the faults were changed, as check() does)."""
        if self._aim.faults is not self.faults:
            self._aim = _faults.Aim(self.faults)
        return self._aim

    # -- recording ---------------------------------------------------------------------------

    @property
    def recorders(self) -> list[Recorder]:
        """The responses recorded during this run, in order."""
        return self._recording.recorders

    @property
    def recorded(self) -> list[Interaction]:
        """Interactions recorded in this session (redacted, as they would be saved)."""
        return self._recording.recorded

    def save(self) -> None:
        """Write what was recorded (atomically); refuse if a secret is left in it (the recording
        is then kept beside the cassette, masked). Under the cassette's lock: when another
        recorder (an xdist worker, another process) saved the file since it was loaded, its
        interactions are merged in, never lost (`ssemock.player.session.save`)."""
        selection = self._recording.save()
        if selection is not None:
            self._selection = selection

    # -- what a test asserts (delegated to Assertions) -----------------------------------------

    @property
    def expected(self) -> Expected | SessionExpected:
        """Reference events and result of the last stream served, or, on a recording run, of
        the last live stream as recorded so far (so one test passes when it records and when
        it replays). A later answer that is no stream and no error (an MCP session's DELETE, an
        empty 202, a plain JSON reply) is passed over for the stream before it; each response's
        own reference is [`Play.expected`][ssemock.Play.expected]. When a WebSocket session was
        replayed (or recorded) after the last HTTP response, its reference ([`session_expected`][ssemock.Player.session_expected]:
        ``results`` one per response, ``events`` the messages served, ``text``, ``assert_*``)."""
        return self._assertions.expected

    @property
    def session_expected(self) -> SessionExpected:
        """The reference of the last WebSocket session replayed (on a recording run: recorded,
        as recorded so far): ``results``, one per response the session holds (folded by its
        protocol's reference accumulator from the messages served under the variant), ``result``
        the last; ``assert_text`` / ``assert_tool_calls`` name the message, the frame and the
        read boundary of a difference. ``assert_text`` and ``assert_tool_calls`` on the player
        use it when a session was the last thing served or recorded."""
        session = self._assertions.session()
        if session is None:
            raise StreamAssertionError(
                f"ssemock: no WebSocket session was replayed or recorded last by {self!r}"
            )
        return session

    def assert_text(self, got: str, choice: int = 0) -> None:
        """The text the client accumulated equals the reference text of the last stream."""
        self._assertions.assert_text(got, choice)

    def assert_tool_calls(self, got: Sequence[Mapping[str, Any]]) -> None:
        """``[{"name": ..., "arguments": {...} or "..."}]`` equals the reference tool calls."""
        self._assertions.assert_tool_calls(got)

    def assert_events(self, got: Sequence[Any]) -> None:
        """``[(event, data), ...]`` or ServerSentEvent-like objects equal the reference events."""
        self._assertions.assert_events(got)

    def assert_accumulates(self, result: Mapping[str, Any] | Accumulated) -> None:
        """Every field given equals the reference accumulated result."""
        self._assertions.assert_accumulates(result)

    def check(self, run: Callable[[], object]) -> None:
        """Run ``run`` (your client code and its assertions). If it fails, search the smallest set
        of chunk boundaries in the stream served last that still makes it fail, and raise a
        StreamAssertionError saying where they fall and how to reproduce it."""
        self._assertions.check(run)

    def handed(self, item: _T) -> _T:
        """Note that the client hands ``item`` (one decoded event) to its caller now, and return it
        unchanged: ``for event in client.stream(): player.handed(event)``. [`assert_prompt`][ssemock.Player.assert_prompt]
        then checks that no event was held back until a later chunk was read."""
        return self._assertions.handed(item)

    def assert_prompt(self) -> None:
        """Raise StreamAssertionError unless every event noted with [`handed`][ssemock.Player.handed] reached the
        caller before the client asked for the chunk after the one that completed it (a WHATWG
        decoder dispatches an event at its blank line, the CR of a CRLF included: a client that
        waits for more bytes first delays every event by one chunk, forever on a quiet stream)."""
        self._assertions.assert_prompt()

    def assert_rejected(
        self, run: Callable[[], _T], *, flagged: Callable[[_T], bool] | None = None
    ) -> BaseException | _T:
        """Run ``run`` (the client reading a stream a conforming client must reject: the reference
        raises on it or finds it incomplete, e.g. under ``faults="trailing_data:at=garbage"`` or
        ``"truncate"``) and return the exception it raised, or its result when ``flagged(result)``
        says the client marked the stream incomplete. Raise StreamAssertionError when the client
        accepted it, or when the reference accepts the stream (then nothing must be rejected)."""
        return self._assertions.assert_rejected(run, flagged=flagged)

    # -- reports (delegated to ssemock.player.reporting) ---------------------------------------

    def served_summary(self, last: int = 3) -> str:
        """What was served to the client, for a failure report: per response (the last two) the
        chunking, transforms and faults, how many bytes and chunks the client read, and the last
        ``last`` events it was given (index, type, an excerpt, byte offsets). Masked; "" when
        nothing was served."""
        return reporting.served_summary(self, last)

    def unplayed(self) -> list[int]:
        """Indexes of interactions never served (one a fault answered for, an ``http_error`` that
        leaves it to be matched again, was served)."""
        return reporting.unplayed(self)

    def unconsumed(self) -> list[Play]:
        """Plays whose stream the client opened but stopped reading before the end (and before
        any fault); a response closed without reading its body (an error status) is not one."""
        return reporting.unconsumed(self)


def recording_refusals(faults: Sequence[_faults.Fault]) -> list[str]:
    """The faults a recording run cannot serve the way their replay will, each as ``name: why``.

    A recording run serves every fault from the live stream's recording through the replay's own
    plan, so every built-in fault can. A fault that cannot (one that needs the recorded cassette
    as a whole) says why in its ``replay_only`` attribute; a player that records refuses it."""
    return [f"{fault}: {reason}" for fault in faults if (reason := getattr(fault, "replay_only", None))]
