"""A player's recording run: each request it records, answered the way its replay will answer it
(the same plan under the same chunking, transform and fault, attempts and aiming counted alike),
so one test passes both ways; server-push streams served as they arrive; and the save."""

from __future__ import annotations

import functools
import time
import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING

import httpx

from .. import stacks as _stacks
from ..plan import matching, session_join
from ..plan import push_recording as _live
from ..plan.errors import RecordingVariantError
from ..plan.record import Recorder, drain_seconds
from ..plan.selection import Selection
from ..plan.serving import Plan, Play, ReplayStream, plan_response, timeout_cut
from ..redaction.rules import redact_response
from ..stacks import Record
from ..store.cassette import Interaction, Request, Response
from ..variants import faults as _faults
from ..variants import timing as _timing
from ..variants import transforms as _transforms
from . import session as _session
from .router import weakly

if TYPE_CHECKING:
    from .state import PlayerState as Player

__all__ = ["RecordingRun"]


class RecordingRun:
    """What a player records: the recorders (in order), the recordings a fault left to be served
    again, the server-push streams still live for a retry, and the save under the cassette's lock."""

    def __init__(self, player: Player) -> None:
        self._player = weakref.ref(player)  # no cycle: a finished player is freed at once
        self.recorders: list[Recorder] = []
        """The responses recorded during this run, in order."""
        self._again: list[Recorder] = []  # recorded this run, to serve again (a fault did not consume them)
        # of those, server-push streams still live, served to the retry as they go on
        self._held: list[tuple[Recorder, _live.LiveSource]] = []
        self._drain = drain_seconds(player.options.drain_on_close)
        self._disk = _session.stat(
            player.path
        )  # the file as it was at the start: a change means another recorder

    @property
    def player(self) -> Player:
        player = self._player()
        if player is None:
            raise RuntimeError("ssemock: the Player this belonged to is gone")
        return player

    def record(self, request: httpx.Request, sent: Request) -> httpx.Response:
        """Answer ``request`` on a recording run: a recording a fault left to be served again, the
        live stream a retry gets, or a new recording (the stack records it: `Record` is raised)."""
        p = self.player
        with p.lock:
            again = next(
                (r for r in self._again if not matching.differences(sent, r.request, p.match_on)),
                None,
            )
        if again is not None:  # as a replay serves it again: a retry after an http_error fault
            with p.lock:
                held = next((live for r, live in self._held if r is again), None)
                self._held = [(r, live) for r, live in self._held if r is not again]
            if held is not None:  # a server-push stream: the retry gets the live stream, as it goes on
                return self._serve_live(again, held, request)
            return self._serve_recorded(again, request)
        varied = p.chunking.name != "as_recorded" or bool(p.transforms) or bool(p.faults)
        recorder = Recorder(
            request,
            sent,
            on_response=weakly(self._recorded),
            before_record_response=p.options.before_record_response,
            max_body_bytes=p.options.max_body_bytes,
            drain=self._drain,
            serve=weakly(self._serve) if varied else None,
        )
        raise Record(request, recorder)

    def _serve(self, recorder: Recorder, live: _live.LiveSource | None) -> httpx.Response:
        """A recording run's answer under a chunking, transform or fault: the finished recording
        served as its replay will be, or, with ``live``, a server-push stream as it arrives."""
        return self._serve_recorded(recorder) if live is None else self._serve_live(recorder, live)

    def _serve_live(
        self, recorder: Recorder, live: _live.LiveSource, request: httpx.Request | None = None
    ) -> httpx.Response:
        """A recording run's answer for a server-push stream (it may never end) under a chunking,
        transform or fault: served as it arrives, each completed event planned as the replay will
        plan it (`ssemock.plan.push_recording`), attempts and aiming counted as in `_serve_recorded`. A variant
        that needs the whole stream is refused here, before any of it is served, with
        `RecordingVariantError`; an ``http_error`` fault answers at once, its body once the first
        event arrived (its shape may follow the stream's protocol), and the live stream stays open
        for the retry a replay serves the recording to (closed at `stop` if none comes)."""
        p = self.player
        request = request if request is not None else recorder.sent
        interaction = recorder.interaction() or recorder.interaction(hooked=False)
        attempt, faults = self._attempt_of(recorder, interaction, arriving=True)
        content_type = interaction.response.header("content-type") or ""
        refused = _live.needs_end(
            p.chunking, p.transforms, faults, kind=_transforms.kind_of(content_type, b"")
        )

        def refuse(why: str) -> RecordingVariantError:
            return RecordingVariantError(
                f"ssemock: {p.where}: recording {recorder.request.method} {recorder.request.url}, a server-push "
                f"stream (an event "
                f"stream answering a GET, which may never end): a recording run serves it as it arrives, as "
                f"its replay will, but {why}. Aim a fault at another interaction (on='POST */path' or an "
                f"index), or record the cassette first without it, then replay with it"
            )

        if refused:
            with p.lock:  # nothing of it is kept: the client gets the error, not the stream
                self.recorders = [r for r in self.recorders if r is not recorder]
                p.latest = p.plays[-1] if p.plays else None
            recorder.finish(GeneratorExit())
            raise refuse(
                "; ".join(refused) + ": it would wait for the whole stream, which may never come"
            ) from None

        def plan(response: Response, more: bool) -> Plan:
            # as a replay picks them: an unaimed stream fault leaves a stream that ended empty alone
            picked = (
                faults if response.body or more else [f for f in faults if f.on is not None or f.per_request]
            )
            return self._plan(response, request, picked, attempt, more=more)

        def recording() -> tuple[Response, bool]:
            now = recorder.interaction() or recorder.interaction(hooked=False)
            return now.response, recorder.ended

        since = None
        if p.chunking.by_event and not p.transforms and not faults and not recorder.rewrites_responses:
            # each event cut on its own: plan the new events only, not the whole recording again

            def since(offset: int) -> tuple[Response, bool]:
                return recorder.since(offset), recorder.ended

            def plan(response: Response, more: bool) -> Plan:
                return self._plan(redact_response(response), request, (), attempt, more=more)

        t0 = _timing.clock.now() - (time.perf_counter() - recorder.t0)  # when the request was sent
        serving = _live.Live(
            recording=recording, plan=plan, content_type=content_type, t0=t0, refuse=refuse, since=since
        )
        first = serving.start()
        stream = _live.LiveStream(serving, live, hold=not first.consumes)
        play = Play.of(-1, request, interaction, first, stream, p.chunking, p.transforms)
        serving.on_plan = functools.partial(_adopt, play)
        with p.lock:
            if not first.consumes:
                self._held.append((recorder, live))
            self._served(recorder, play, consumes=first.consumes)
        return httpx.Response(
            first.status, headers=first.headers, stream=stream, extensions={"http_version": b"HTTP/1.1"}
        )

    def _serve_recorded(self, recorder: Recorder, request: httpx.Request | None = None) -> httpx.Response:
        """A recording run's answer under a chunking, transform or fault: the whole recording
        served as its replay will be (the same plan, attempts counted alike), so one test passes
        both ways. A fault that does not consume it (``http_error``) leaves it to be served
        again to the next request it matches, as in replay, instead of recording that one too."""
        p = self.player
        request = request if request is not None else recorder.sent
        interaction = recorder.interaction() or recorder.interaction(hooked=False)
        attempt, faults = self._attempt_of(recorder, interaction)
        plan = self._plan(interaction.response, request, faults, attempt)
        t0 = _timing.clock.now() - (time.perf_counter() - recorder.t0)  # when the request was sent
        stream = ReplayStream(plan, t0)
        play = Play.of(-1, request, interaction, plan, stream, p.chunking, p.transforms)
        with p.lock:
            self._served(recorder, play, consumes=plan.consumes)
        return httpx.Response(
            plan.status, headers=plan.headers, stream=stream, extensions={"http_version": b"HTTP/1.1"}
        )

    def _attempt_of(
        self, recorder: Recorder, interaction: Interaction, *, arriving: bool = False
    ) -> tuple[int, list[_faults.Fault]]:
        """The attempt a recording run's answer counts as, and the faults aimed at it: as in the
        replay, where the recording will be this interaction of the cassette."""
        p = self.player
        with p.lock:
            attempt, p.attempts = p.attempts, p.attempts + 1
            at = len(p.cassette.interactions) + next(
                (n for n, r in enumerate(self.recorders) if r is recorder), len(self.recorders)
            )
            return attempt, p.aimed().pick(at, interaction, arriving=arriving)

    def _plan(
        self,
        response: Response,
        request: httpx.Request,
        faults: Sequence[_faults.Fault],
        attempt: int,
        *,
        more: bool = False,
    ) -> Plan:
        """A recording (or, with ``more``, the part of it arrived so far) planned as its replay."""
        p = self.player
        return plan_response(
            response,
            url=str(request.url),
            core=_stacks.errors_of(request),
            chunking=p.chunking,
            transforms=p.transforms,
            timing=p.timing,
            faults=faults,
            attempt=attempt,
            read_timeout=(request.extensions.get("timeout") or {}).get("read"),
            more=more,
        )

    def _served(self, recorder: Recorder, play: Play, *, consumes: bool) -> None:
        """Note a recording run's answer (under the lock): a fault that does not consume the
        recording leaves it to answer the next request it matches, as the replay would."""
        if consumes:
            self._again = [r for r in self._again if r is not recorder]
        elif recorder not in self._again:
            self._again.append(recorder)
        play.protocol = self.player.protocol
        self.player.plays.append(play)
        self.player.latest = play

    def _recorded(self, recorder: Recorder) -> None:
        with self.player.lock:
            self.recorders.append(recorder)
            self.player.latest = recorder

    def close_held(self) -> None:
        """Close the live server-push streams kept for a retry that never came, as a client's
        close does (the rest drained into the recording); an async one that cannot be closed
        here ends its recording where it got to."""
        with self.player.lock:
            held, self._held = self._held, []
        for recorder, live in held:
            if live.close is None:
                recorder.finish(GeneratorExit())
                continue
            try:
                live.close()
            except Exception:  # the recording ends there (its error recorded by the stack); the save goes on
                recorder.finish(GeneratorExit())

    @property
    def recorded(self) -> list[Interaction]:
        """Interactions recorded in this session (redacted, as they would be saved)."""
        with self.player.lock:
            recorders = list(self.recorders)
            sessions = list(getattr(self.player, "sessions", ()))  # WebSocket sessions, in order of start
            calls = list(getattr(self.player, "grpc_calls", ()))  # gRPC calls, in order of start
        made = [
            (r.t0, r.t0 + (x.response.times[-1] if x.response.times else 0.0), x)
            for r in recorders
            if (x := r.interaction()) is not None
        ]
        made += [(r.t0, r.t0 + r.response_t, x) for r in sessions if (x := r.interaction()) is not None]
        made += [(r.t0, r.t0, x) for r in calls if (x := r.kept()) is not None]
        made.sort(key=lambda item: item[0])
        session_join.join(made)  # a session spanning connections is one group (issue 44 item 2)
        return [x for _, _, x in made]

    def save(self) -> Selection | None:
        """Write what was recorded (atomically), merged under the cassette's lock with what another
        recorder saved since (`ssemock.player.session.save`); the new selection, or None when
        nothing was recorded."""
        p = self.player
        new, stdio = self.recorded, p.stdio.recorded
        if not new and not stdio:
            return None
        out, self._disk = _session.save_cassette(
            p.path,
            p.cassette.interactions,
            new,
            disk=self._disk,
            record_mode=p.record_mode,
            match_on=p.match_on,
            existed=p.existed,
            kept=p.kept,
            stdio=(p.cassette.stdio, stdio),
        )
        p.cassette.interactions, p.cassette.stdio = out.interactions, out.stdio
        return Selection(out.interactions, p.match_on)


def _adopt(play: Play, plan: Plan, ends: list[int]) -> None:
    """A live play follows its stream's latest plan (what `expected` and the assertions read)."""
    play.body, play.ends, play.faults, play.status = plan.body, ends, plan.faults, plan.status
    play.cut, play.framing, play.cut_at = timeout_cut(plan), plan.framing, plan.cut_at
