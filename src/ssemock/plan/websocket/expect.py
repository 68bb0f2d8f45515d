"""The reference expectation of a replayed WebSocket session (issue 35): the messages the server
sent under the variant, folded by the protocol's reference accumulator into one result per
response, and the client's text and tool calls compared with them, a difference named by the
message, the frame that carried it and the read boundary around it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from ...protocols import detect, get
from ...protocols.accumulate import Accumulated, accumulate_session
from ...protocols.base import ToolCall
from ...protocols.lanes import DEFAULT, Lanes
from ..expect import StreamAssertionError, check_tool_calls
from .variants import VariedConversation

__all__ = ["SessionExpected", "served_wire"]


def served_wire(conversation: VariedConversation) -> bytes:
    """The server's wire of a session under its variant (the frames after the 101 head)."""
    return conversation._wire.data


class SessionExpected:
    """What a conforming client reads from a replayed WebSocket session: ``results`` (one
    `Accumulated` per response, in the order they started), ``result`` the last one. The
    assertions take ``response=``: a position in ``results`` (default: the last) or a response
    id (``"resp_..."``: the one response of a lane of a multiplexed session)."""

    def __init__(self, conversation: VariedConversation, protocol: str | None = None) -> None:
        self.conversation = conversation
        url = conversation.interaction.request.url
        found = detect(url=url) if protocol is None else None
        self.protocol = protocol or (found.name if found is not None else None)
        if self.protocol is None:
            raise StreamAssertionError(
                f"ssemock: the WebSocket session at {url} speaks no protocol ssemock knows; "
                "pass protocol='openai.realtime' (or 'gemini.live', 'openai.responses')"
            )
        self.messages = conversation.served_messages()
        """The server messages as served (a fault's error message included, a cut session cut)."""
        self.results: list[Accumulated] = accumulate_session(self.messages, self.protocol)

    stream = True
    """A session is a stream of messages (the HTTP `Expected.stream`'s meaning)."""

    @property
    def cut(self) -> bool:
        """Whether a fault ended the session early (a close, a dropped connection, a refusal)."""
        c = self.conversation
        return c._refused is not None or c._ending in ("eof", "close")

    @property
    def events(self) -> list[Any]:
        """The server messages served, each parsed (a JSON message as its value, else its text or
        bytes), in order: what a conforming client receives."""
        out: list[Any] = []
        for data in self.messages:
            try:
                out.append(orjson.loads(data))
            except orjson.JSONDecodeError:
                out.append(data)
        return out

    @property
    def text(self) -> str:
        """The last response's reference text."""
        return self.result.text

    @property
    def tool_calls(self) -> list[ToolCall]:
        """The last response's reference tool calls."""
        return self.result.tool_calls

    @property
    def result(self) -> Accumulated:
        """The last response's reference result."""
        if not self.results:
            raise StreamAssertionError(
                f"ssemock: the WebSocket session at {self.conversation.interaction.request.url} served no response"
            )
        return self.results[-1]

    def rejects(self) -> str | None:
        """Why a conforming client must reject or flag this session as served, or None: a
        refused handshake, a session a fault ended before its last response was done, or a
        connection dropped with no close frame."""
        c = self.conversation
        if c._refused is not None:
            return f"the handshake was refused with HTTP {c._refused.status}"
        if c._fault is None:
            return None
        if c._ending == "eof":
            return "the connection ended with no close frame (the client sees 1006)"
        if not self.results or not self.results[-1].complete:
            return "the session ended before its last response was done"
        return None

    def under(self) -> str:
        c = self.conversation
        parts = [f"chunking={c._chunking}", f"reframing={c._reframing}"]
        if c._fault is not None:
            parts.append(f"fault={c._fault}")
        return ", ".join(parts)

    def by_id(self, response_id: str) -> Accumulated:
        """The result of the response ``response_id``; StreamAssertionError naming the ids served
        when none has it."""
        found = [r for r in self.results if r.id == response_id]
        if not found:
            ids = ", ".join(r.id or "(no id)" for r in self.results) or "none"
            raise StreamAssertionError(
                f"ssemock: the WebSocket session at {self.conversation.interaction.request.url} served no "
                f"response {response_id!r}; its responses: {ids}"
            )
        return found[0]

    def _index(self, response: int | str) -> int:
        """The position in ``results`` of ``response`` (a position, or a response id)."""
        if isinstance(response, str):
            return self.results.index(self.by_id(response))
        return response % len(self.results) if self.results else 0

    def where_char(self, index: int, response: int) -> str:
        """The message, frame and read boundary that carried character ``index`` of a response's text."""
        seen = 0
        positions = self._positions(response)
        for n, k in enumerate(positions):
            before = accumulate_session([self.messages[j] for j in positions[: n + 1]], self.protocol)
            text = before[-1].text if before else ""
            if len(text) > index and seen <= index:
                return (
                    f"in server message {k}: {self.conversation.at_byte(self.conversation.message_start(k))}"
                )
            seen = len(text)
        return "after the last message"

    def _positions(self, response: int) -> list[int]:
        found = get(self.protocol or "")
        groups = found.responses(self.messages) if found.responses else [list(range(len(self.messages)))]
        return groups[response] if groups else []

    def assert_text(self, got: str, response: int | str = -1) -> None:
        """Raise StreamAssertionError unless ``got`` is the text of ``response`` (default: the last;
        a response id picks one lane's), naming the first differing character, the message and
        frame that carried it and the read boundary around it."""
        number = self._index(response)
        want = self.results[number].text if self.results else ""
        if got == want:
            return
        i = next((n for n, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
        raise StreamAssertionError(
            f"ssemock: text of response {number} of the WebSocket session differs under {self.under()} "
            f"at character {i}\n  expected: {want[max(0, i - 20) : i + 20]!r}\n  got:      {got[max(0, i - 20) : i + 20]!r}\n"
            f"  {self.where_char(i, number)}\n  (expected {len(want)} characters, got {len(got)})"
        )

    def assert_tool_calls(self, got: Sequence[Mapping[str, Any]], response: int | str = -1) -> None:
        """Raise StreamAssertionError unless ``got`` (``[{"name", "arguments"}]``) are the tool
        calls of ``response`` (default: the last; or a response id), in order."""
        want = self.results[self._index(response)].tool_calls if self.results else []
        check_tool_calls(got, want, under=self.under(), session=True)

    def assert_events(self, got: Sequence[Any]) -> None:
        """Raise StreamAssertionError unless ``got`` (the messages the client received: parsed
        JSON, text or bytes) are the server messages served, in order; a difference names the
        message, the frame that carried it and the read boundary. A session with lanes (its
        recording names some) is compared lane by lane: each lane's messages in its order, the
        lanes interleaved in any order (as the client's sends released them)."""
        want = self.events
        values = [_value(g) for g in got]
        want_lanes, got_lanes = self._lanes(want), self._lanes(values)
        named = Lanes.named(want_lanes)
        for lane in dict.fromkeys([*want_lanes, *got_lanes]):
            served = {k: want[k] for k, on in enumerate(want_lanes) if on == lane}
            seen = [values[p] for p, on in enumerate(got_lanes) if on == lane]
            self._assert_lane(lane if named else None, served, seen)

    def _lanes(self, messages: Sequence[Any]) -> list[str]:
        """The lane of each message (all on the default lane when the session has no lanes)."""
        lanes = get(self.protocol or "").lanes if self.conversation.routes is not None else None
        if lanes is None:
            return [DEFAULT] * len(messages)
        return lanes.of(("recv", m if isinstance(m, dict) else None) for m in messages)

    def _assert_lane(self, lane: str | None, served: dict[int, Any], seen: list[Any]) -> None:
        """Raise StreamAssertionError unless ``seen`` are the server messages ``served`` (by their
        positions in the session) of ``lane`` (None: a session without lanes), in order."""
        where = "" if lane is None else " on the default lane" if lane == DEFAULT else f" on lane {lane!r}"
        for n, (g, (k, w)) in enumerate(zip(seen, served.items())):
            if g != w:
                nth = "" if lane is None else f" (the lane's message {n})"
                raise StreamAssertionError(
                    f"ssemock: server message {k} of the WebSocket session differs{where}{nth} under "
                    f"{self.under()}\n  expected: {str(w)[:200]}\n  got:      {str(g)[:200]}\n"
                    f"  {self.conversation.at_byte(self.conversation.message_start(k))}"
                )
        if len(seen) != len(served):
            missing = ""
            if len(seen) < len(served):
                first = list(served)[len(seen)]
                at = self.conversation.at_byte(self.conversation.message_start(first))
                missing = f"; the first missing is server message {first}: {at}"
            raise StreamAssertionError(
                f"ssemock: expected {len(served)} server messages{where} in the WebSocket session under "
                f"{self.under()}, got {len(seen)}{missing}"
            )

    def assert_accumulates(self, result: Mapping[str, Any] | Accumulated, response: int | str = -1) -> None:
        """Raise StreamAssertionError unless every field given in ``result`` equals the reference
        result of ``response`` (default: the last; or a response id)."""
        got = result.to_dict() if hasattr(result, "to_dict") else dict(result)
        want = (self.results[self._index(response)] if self.results else self.result).to_dict()
        for key, value in got.items():
            if key not in want:
                raise StreamAssertionError(
                    f"ssemock: {key!r} is not a field of the accumulated result (fields: {sorted(want)})"
                )
            if value != want[key]:
                raise StreamAssertionError(
                    f"ssemock: accumulated {key!r} of the WebSocket session differs under {self.under()}\n"
                    f"  expected: {want[key]!r}\n  got:      {value!r}"
                )


def _value(message: Any) -> Any:
    """A received message as `SessionExpected.events` has it (JSON text or bytes parsed)."""
    if isinstance(message, (str, bytes)):
        try:
            return orjson.loads(message)
        except orjson.JSONDecodeError:
            return message.encode() if isinstance(message, str) else message
    return message
