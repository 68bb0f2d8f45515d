"""What a test asserts on a player: the reference expectation of the last stream served (or
recorded), the client's result compared with it, events handed on promptly, a stream the client
must reject, and ``check``'s search for the boundaries a failure hangs on."""

from __future__ import annotations

import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from ..plan import diagnose as _diagnose
from ..plan.expect import Expected, StreamAssertionError
from ..plan.record import Recorder
from ..plan.serving import Play
from ..plan.websocket.expect import SessionExpected
from ..plan.websocket.record import WsRecorder
from ..plan.websocket.refused import refused_conversation
from ..plan.websocket.variants import VariedConversation
from ..protocols.accumulate import Accumulated
from ..redaction.rules import mask_text
from ..variants import chunking as _chunking
from ..variants import faults as _faults
from .state import opened_count

if TYPE_CHECKING:
    from .state import PlayerState as Player

__all__ = ["Assertions"]

_T = TypeVar("_T")


class Assertions:
    """A player's assertions (the public ``expected`` / ``assert_*`` / ``check`` of
    [`Player`][ssemock.Player] call these)."""

    def __init__(self, player: Player) -> None:
        self._player = weakref.ref(player)  # no cycle: a finished player is freed at once
        self._expected_of: tuple[Play, Expected] | None = None
        self._notes: list[tuple[Play, int]] = []  # (play, chunks handed out) per handed() event

    @property
    def player(self) -> Player:
        player = self._player()
        if player is None:
            raise RuntimeError("ssemock: the Player this belonged to is gone")
        return player

    @property
    def expected(self) -> Expected | SessionExpected:
        """Reference events and result of the last response served, or, on a recording run, of
        the last live response as recorded so far; of the last WebSocket session replayed when
        it opened after the last HTTP response (issue 35)."""
        session = self.session()
        if session is not None:
            return session
        return self.http_expected()

    def http_expected(self) -> Expected:
        """`expected` of the last HTTP response served or recorded."""
        p = self.player
        with p.lock:
            latest = p.latest
            earlier: list[Play | Recorder] = list(
                reversed(p.plays if isinstance(latest, Play) else p.recorders)
            )
        if latest is None:
            raise StreamAssertionError(
                f"ssemock: nothing was served or recorded yet by {p!r}, so nothing is expected"
            )
        first = self._expected(latest)
        if first.stream or first.play.status >= 400 or getattr(first.play, "faults", None):
            return first  # a stream, an error, or a stream a fault cut (to no event, maybe): this one
        for other in earlier:  # an answer that is no stream (a DELETE, a 202): the stream before it
            if other is not latest and (found := self._expected(other)).stream:
                return found
        return first

    def _expected(self, served: Play | Recorder) -> Expected:
        """The reference of one response served, or recorded so far."""
        p = self.player
        if isinstance(served, Recorder):
            interaction = served.interaction(hooked=False)
            response = interaction.response
            return Expected(
                Play(
                    -1,
                    served.sent,
                    interaction,
                    _chunking.as_recorded,
                    [],
                    None,
                    response.body,
                    response.ends,
                    status=response.status,
                    protocol=p.protocol,
                ),
                p.protocol,
            )
        cached = self._expected_of  # the last served stream's, until more of it was delivered
        if cached is None or cached[0] is not served or len(cached[1].body) != len(served.reference_body):
            self._expected_of = cached = (served, Expected(served, p.protocol))
        return cached[1]

    def session(self) -> SessionExpected | None:
        """The reference of the last WebSocket session, when one opened after the last HTTP
        response served (issue 35) or recorded; on a recording run, of the session recorded so
        far when nothing opened after it (issue 43); None otherwise."""
        p = self.player
        with p.lock:
            conversations = list(getattr(p, "conversations", ()))
            plays = len(p.plays)
            recorded = p.sessions[-1] if getattr(p, "sessions", None) else None
            latest = recorded is not None and p.session_opened_after.get(recorded) == opened_count(p)
        if recorded is not None and latest:
            return self._recorded(recorded)
        last = conversations[-1] if conversations else None
        if isinstance(last, VariedConversation) and last.after_plays >= plays:
            return SessionExpected(last, p.protocol)
        return None

    def _recorded(self, recorder: WsRecorder) -> SessionExpected | None:
        """The reference of a session being recorded: the messages the server sent so far, as a
        replay of what is recorded serves them (a refused handshake as refused)."""
        interaction = recorder.interaction()
        if interaction is None:  # dropped by before_record_response
            return None
        p = self.player
        if interaction.websocket is None:
            return SessionExpected(refused_conversation(interaction, -1, p.where), p.protocol)
        return SessionExpected(VariedConversation(interaction, -1, p.where, protocol=p.protocol), p.protocol)

    def assert_text(self, got: str, choice: int = 0) -> None:
        session = self.session()
        if session is not None:  # the last response of the session
            session.assert_text(got)
            return
        self.http_expected().assert_text(got, choice)

    def assert_tool_calls(self, got: Sequence[Mapping[str, Any]]) -> None:
        session = self.session()
        if session is not None:
            session.assert_tool_calls(got)
            return
        self.http_expected().assert_tool_calls(got)

    def assert_events(self, got: Sequence[Any]) -> None:
        self.expected.assert_events(got)

    def assert_accumulates(self, result: Mapping[str, Any] | Accumulated) -> None:
        self.expected.assert_accumulates(result)

    def check(self, run: Callable[[], object]) -> None:
        """Run ``run``; if it fails, search the smallest set of chunk boundaries in the stream
        served last (or read boundaries in the WebSocket session served last) that still makes
        it fail, and raise saying where they fall."""
        p = self.player
        state = (list(p.play_counts), len(p.plays), p.attempts)
        sessions = len(p.conversations)
        try:
            run()
            return
        except Exception as exc:
            original: Exception = exc
        if len(p.conversations) > sessions and self.session() is not None:  # a WebSocket session last
            from .explore_ws import check_session

            check_session(p, run, original, (state[0], state[2]))
        if len(p.plays) == state[1]:  # no stream was served before the failure: no boundary to blame
            raise original
        chunking, faults = p.chunking, p.faults
        after = (list(p.play_counts), len(p.plays), p.attempts, p.latest)

        def fails_when(chunking_now: _chunking.Chunking, faults_now: list[_faults.Fault]) -> bool:
            """Whether ``run`` fails, replayed from the test's start under this chunking and faults."""
            p.chunking, p.faults = chunking_now, faults_now
            p.play_counts[:], p.attempts = state[0], state[2]
            try:
                run()
            except Exception:
                return True
            finally:
                p.chunking, p.faults = chunking, faults
            return False

        try:
            _diagnose.shrink(
                p.plays[-1],
                chunking=chunking,
                transforms=p.transforms,
                faults=faults,
                original=original,
                fails_when=fails_when,
            )
        finally:  # the search's own runs are not plays of the test (nor teardown warnings)
            p.play_counts[:], p.attempts, p.latest = after[0], after[2], after[3]
            del p.plays[after[1] :]

    def forget(self) -> None:
        """Forget the events noted and the expectation kept (explore serves anew)."""
        self._notes.clear()
        self._expected_of = None

    def handed(self, item: _T) -> _T:
        with self.player.lock:
            latest = self.player.latest
        if isinstance(latest, Play) and latest.stream is not None:
            self._notes.append((latest, latest.stream.handed))
        return item

    def assert_prompt(self) -> None:
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
                        f"(under {Expected(play, self.player.protocol).under()})"
                    )

    def assert_rejected(
        self, run: Callable[[], _T], *, flagged: Callable[[_T], bool] | None = None
    ) -> BaseException | _T:
        try:
            result = run()
        except Exception as exc:
            if self.reference_rejects() is None:
                raise StreamAssertionError(
                    f"ssemock: the client raised on a stream the reference accepts (complete, "
                    f"{len(self.expected.events)} events) under {self.expected.under()}: {exc!r}"
                ) from exc
            return exc
        reason = self.reference_rejects()
        if reason is None:
            raise StreamAssertionError(
                f"ssemock: assert_rejected: the reference accepts the stream served under "
                f"{self.expected.under()}, so there is nothing to reject; compare the "
                f"result instead (assert_text, assert_accumulates)"
            )
        if flagged is not None and flagged(result):
            return result
        raise StreamAssertionError(
            f"ssemock: the client accepted a stream a conforming client must reject or flag "
            f"under {self.expected.under()}: {reason}; it returned {_short(result)}"
        )

    def reference_rejects(self) -> str | None:
        """Why the reference decoder and accumulator reject the last stream, or None."""
        session = self.session()
        if session is not None:
            return session.rejects()
        expected = self.http_expected()
        try:
            result = expected.result
        except ValueError as exc:  # ProtocolError, NDJSONError
            return f"the reference rejects it: {exc}"
        if not result.complete:
            return "it ends without its protocol's terminator (the reference marks it incomplete)"
        return None


def _short(value: object, most: int = 200) -> str:
    text = repr(value)
    return mask_text(text if len(text) <= most else text[:most] + "...")
