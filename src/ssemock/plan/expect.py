"""Expectations: what a conforming client must get from a served stream, and loud, useful failures.

The reference decoder and accumulator turn the bytes actually served (after transforms and
faults) into the expected events and result. A mismatch names the chunking and transforms in
use, the first event or character that differs, and where the chunk boundaries fell around it.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, Protocol

import orjson

from .. import framing, protocols
from ..framing.eventstream import Frame
from ..framing.sse import ServerSentEvent
from ..framing.sse import decode as sse_decode
from ..protocols.accumulate import Accumulated, ToolCall, accumulate
from ..protocols.base import error_of
from ..redaction.rules import escape_control, mask_text
from ..variants.chunking import event_ends
from .matching import around

if TYPE_CHECKING:
    import httpx

    from ..store.cassette import Interaction
    from ..variants.chunking import Chunking

__all__ = ["Expected", "ServedResponse", "StreamAssertionError", "check_tool_calls"]


class _Delivery(Protocol):
    @property
    def failed(self) -> bool: ...


class ServedResponse(Protocol):
    """What [`Expected`][ssemock.Expected] reads of a response served: a [`Play`][ssemock.Play]
    (a protocol, so ``Play.expected`` can make one without an import cycle)."""

    @property
    def index(self) -> int: ...
    @property
    def request(self) -> httpx.Request: ...
    @property
    def interaction(self) -> Interaction: ...
    @property
    def chunking(self) -> Chunking: ...
    @property
    def stream(self) -> _Delivery | None: ...
    @property
    def body(self) -> bytes: ...
    @property
    def ends(self) -> Sequence[int]: ...
    @property
    def cut(self) -> int | None: ...
    @property
    def framing(self) -> str | None: ...
    @property
    def status(self) -> int: ...
    @property
    def cut_at(self) -> int | None: ...
    @property
    def reference_body(self) -> bytes: ...
    def described(self) -> str: ...


def decode_body(body: bytes, content_type: str) -> list[Any]:
    """Reference decoding in the body's framing: SSE events, JSON lines, JSON array elements."""
    return framing.decode(body, content_type)


class StreamAssertionError(AssertionError):
    """The client's result differs from the reference result of the served stream.

    Its message is masked (`ssemock.redaction.rules.mask_text`): it quotes stream and client data,
    and lands in CI logs; ``Player.check``'s shrunk failure is one of these too."""

    def __init__(self, message: object = "", *args: object) -> None:
        super().__init__(escape_control(mask_text(str(message))), *args)


def check_tool_calls(
    got: Sequence[Mapping[str, Any]], want: Sequence[ToolCall], *, under: str, session: bool = False
) -> None:
    """Raise StreamAssertionError unless ``got`` (``[{"name": ..., "arguments": {...} or "..."}]``,
    ids not compared) are ``want``, in order; ``under``: the variant, as the message says it;
    ``session``: they came over a WebSocket session."""
    of, in_ = (" of the WebSocket session", " in the WebSocket session") if session else ("", "")
    for n, (g, w) in enumerate(zip(got, want)):
        args = g.get("arguments")
        want_args = w.arguments if isinstance(args, str) else w.parsed_arguments
        if g.get("name") != w.name or args != want_args:
            raise StreamAssertionError(
                f"ssemock: tool call {n}{of} differs under {under}\n"
                f"  expected: name={w.name!r} arguments={want_args!r}\n"
                f"  got:      name={g.get('name')!r} arguments={args!r}"
            )
    if len(got) != len(want):
        raise StreamAssertionError(
            f"ssemock: expected {len(want)} tool call(s){in_} under {under}, got {len(got)}: "
            f"expected names {[w.name for w in want]}, got {[g.get('name') for g in got]}"
        )


@dataclass
class Expected:
    """The reference decoding and accumulation of one served response: a stream in any framing,
    a plain JSON body (an error body among them), an empty body, a stream a fault cut short
    (then [`cut`][ssemock.Expected.cut] says so and [`events`][ssemock.Expected.events] are the whole events a conforming client got)."""

    play: ServedResponse
    """The response served (a [`Play`][ssemock.Play]), which this decodes."""
    protocol: str | None = None
    """The protocol the stream is folded with (`None`: detected)."""

    def __post_init__(self) -> None:
        #: the bytes the reference decodes: what was served, up to where a fault cut it
        self.body: bytes = self.play.reference_body

    @property
    def content_type(self) -> str:
        """The served response's content type ('' when it has none)."""
        return self.play.interaction.response.header("content-type") or ""

    @cached_property
    def framing(self) -> str:
        """The served body's framing: ``sse``, ``ndjson``, ``json_array``, ``eventstream``, or
        ``json`` for a plain JSON body (as planned, before a fault cut it)."""
        return self.play.framing or framing.detect(self.content_type, self.play.body).name

    @property
    def stream(self) -> bool:
        """Whether the response is a stream of events (not a plain JSON body, an empty body or an
        HTTP error)."""
        return framing.get(self.framing).stream and bool(self.play.body.strip()) and self.play.status < 400

    @property
    def cut(self) -> bool:
        """Whether a fault cut what the client gets short: a dropped connection, a truncated body,
        a stall past the read timeout."""
        play = self.play
        return (
            play.cut_at is not None
            or play.cut is not None
            or (play.stream is not None and play.stream.failed)
        )

    @cached_property
    def events(self) -> list[Any]:
        """The events a conforming client gets, decoded in the body's framing: SSE events
        (``ServerSentEvent``), parsed JSON lines or array elements, eventstream frames, the
        document of a plain JSON body (``[]`` for an empty one). Of a stream a fault cut short,
        the whole events before the cut (an unfinished one is dropped, as a client drops it)."""
        decoder = framing.get(self.framing)
        try:
            return decoder.decode(self.body)
        except ValueError:
            if not self.cut:
                raise  # a body no conforming client accepts: assert_rejected's case
        ends = decoder.event_ends(self.body)
        return decoder.decode(self.body[: ends[-1]]) if ends else []

    @cached_property
    def result(self) -> Accumulated:
        """The accumulated final message (protocol from the marker, or detected). For a body that
        is no stream (a plain JSON body, an HTTP error, an empty body), no message: ``error``
        holds the error body's error, ``complete`` says whether the status was a success."""
        url = str(self.play.request.url)
        if not self.stream:
            return self._document(url)
        if not self.events and self.protocol is None:
            found = protocols.detect(url=url, content_type=self.content_type)
            if found is None:  # cut before any event said what it is
                return Accumulated("unknown")
        return accumulate(self.events, self.protocol, url=url, content_type=self.content_type)

    def _document(self, url: str) -> Accumulated:
        found = protocols.detect(url=url, content_type=self.content_type)
        result = Accumulated(self.protocol or (found.name if found else "unknown"))
        status = self.play.status
        try:
            value = orjson.loads(self.body) if self.body.strip() else None
        except orjson.JSONDecodeError:
            value = self.body.decode("utf-8", "replace")
        if isinstance(value, dict) and value.get("error") is not None:
            result.error = error_of(value["error"])
        elif status >= 400:
            result.error = dict(value) if isinstance(value, dict) else {"message": value, "status": status}
        result.complete = status < 400 and not self.cut
        return result

    @property
    def text(self) -> str:
        """The reference text (choice 0) a conforming client accumulates from the stream."""
        return self.result.text

    @property
    def tool_calls(self) -> list[ToolCall]:
        """The reference tool calls a conforming client accumulates from the stream."""
        return self.result.tool_calls

    # -- where things are in the body -------------------------------------------------------

    def under(self) -> str:
        """What the stream was served under (chunking, transforms, faults), as failure messages say it."""
        return self.play.described()

    def _event_span(self, index: int) -> tuple[int, int]:
        """Byte span of the ``index``-th SSE event (blank-line framing, comments included)."""
        ends = event_ends(self.body, sse="event-stream" in self.content_type)
        starts = [0, *ends]
        index = min(index, len(ends) - 1) if ends else 0
        return (starts[index], ends[index]) if ends else (0, len(self.body))

    def _boundaries(self, start: int, end: int) -> list[int]:
        ends = self.play.ends
        return list(ends[bisect.bisect_right(ends, start) : bisect.bisect_left(ends, end)])

    def where_char(self, char_index: int, choice: int = 0) -> str:
        """Which event delivered expected character ``char_index`` and how the chunks cut it."""
        events, text = self.events, self._choice_text(self.result, choice)
        if char_index >= len(text):
            return "the expected text ends there"
        lo, hi = 0, len(events)  # smallest k with len(text of events[:k]) > char_index
        while lo < hi:
            mid = (lo + hi) // 2
            if len(self._choice_text(self._partial(mid), choice)) > char_index:
                hi = mid
            else:
                lo = mid + 1
        k = max(lo - 1, 0)
        start, end = self._event_span(self._raw_index(k))
        char = text[char_index]
        encoded = char.encode()
        raw = self.body[start:end]
        pos = raw.find(encoded)
        where = f"the expected character {char!r} (character {char_index}) comes from event {k} (bytes {start}-{end})"
        cuts = self._boundaries(start, end)
        if pos >= 0 and len(encoded) > 1:
            inside = [c for c in cuts if start + pos < c < start + pos + len(encoded)]
            if inside:
                return (
                    f"{where}; under {self.under()} a boundary splits {char!r} at byte {inside[0]} "
                    f"(byte {inside[0] - start} of event {k})"
                )
        return f"{where}; chunk boundaries inside that event at bytes: {_list(cuts)}"

    def _partial(self, n: int) -> Accumulated:
        try:
            return accumulate(self.events[:n], self.result.protocol)
        except ValueError:
            return Accumulated(self.result.protocol)

    def _raw_index(self, k: int) -> int:
        """The framing index of dispatched event ``k`` (comment-only blocks don't dispatch)."""
        body = self.body
        if "event-stream" not in self.content_type:
            return k
        seen = -1
        starts = [0, *event_ends(body, sse=True)]
        for i, (a, b) in enumerate(zip(starts, starts[1:])):
            if sse_decode([body[a:b]]):
                seen += 1
                if seen == k:
                    return i
        return k

    @staticmethod
    def _choice_text(result: Accumulated, choice: int) -> str:
        return next((c.text for c in result.choices if c.index == choice), "")

    # -- assertions -------------------------------------------------------------------------

    def assert_text(self, got: str, choice: int = 0) -> None:
        """Raise StreamAssertionError unless ``got`` is the reference text of ``choice``, naming the
        first differing character, its event and the chunk boundaries around it."""
        want = self._choice_text(self.result, choice)
        if got == want:
            return
        i = next((n for n, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
        raise StreamAssertionError(
            f"ssemock: text of choice {choice} differs under {self.under()} at character {i}\n"
            f"  expected: {around(want, i)}\n"
            f"  got:      {around(got, i)}\n"
            f"  {self.where_char(i, choice)}\n"
            f'  (expected {len(want)} characters, got {len(got)}; reproduce with chunking="{self.play.chunking}")'
        )

    def assert_tool_calls(self, got: Sequence[Mapping[str, Any]]) -> None:
        """Raise StreamAssertionError unless ``got`` (``[{"name": ..., "arguments": {...} or "..."}]``,
        ids are not compared) are the reference tool calls, in order."""
        check_tool_calls(got, self.result.tool_calls, under=self.under())

    def assert_events(self, got: Sequence[Any]) -> None:
        """Raise StreamAssertionError unless ``got`` (``(event, data)`` pairs or objects with
        ``.event`` and ``.data``) are the reference events, in order."""
        want = [_pair(e) if isinstance(e, ServerSentEvent) else _value(e) for e in self.events]
        pairs = [
            _pair(e) if isinstance(e, (tuple, ServerSentEvent)) or hasattr(e, "data") else _value(e)
            for e in got
        ]
        for n, (g, w) in enumerate(zip(pairs, want)):
            if g != w:
                start, end = self._event_span(self._raw_index(n))
                raise StreamAssertionError(
                    f"ssemock: event {n} differs under {self.under()}\n"
                    f"  expected: {w!r}\n  got:      {g!r}\n"
                    f"  event {n} is bytes {start}-{end} of the body; chunk boundaries inside it at: "
                    f"{_list(self._boundaries(start, end))}"
                )
        if len(pairs) != len(want):
            raise StreamAssertionError(
                f"ssemock: expected {len(want)} events under {self.under()}, got {len(pairs)}"
                + (f"; the first missing is {want[len(pairs)]!r}" if len(pairs) < len(want) else "")
            )

    def assert_accumulates(self, result: Mapping[str, Any] | Accumulated) -> None:
        """Raise StreamAssertionError unless every field given in ``result`` equals the reference
        accumulated result's (fields not given are not compared)."""
        got = (
            result.to_dict() if hasattr(result, "to_dict") else dict(result)
        )  # by its fields: any import's Accumulated
        want = self.result.to_dict()
        for key, value in got.items():
            if key not in want:
                raise StreamAssertionError(
                    f"ssemock: {key!r} is not a field of the accumulated result (fields: {sorted(want)})"
                )
            if value != want[key]:
                raise StreamAssertionError(
                    f"ssemock: accumulated {key!r} differs under {self.under()}\n"
                    f"  expected: {want[key]!r}\n  got:      {value!r}"
                )


def _list(offsets: Sequence[int], most: int = 12) -> str:
    return (
        ", ".join(map(str, offsets[:most])) + (" ..." if len(offsets) > most else "") if offsets else "none"
    )


def _value(event: Any) -> Any:
    """A decoded non-SSE event as a client sees it: a JSON value, or an eventstream frame as
    ``{event type: payload}`` (what botocore yields)."""
    if isinstance(event, Frame):
        return {event.event_type or event.exception_type: event.json()}
    return event


def _pair(event: Any) -> tuple[str, str]:
    if isinstance(event, tuple):
        return (str(event[0]), str(event[1]))
    return (getattr(event, "event", None) or "message", getattr(event, "data", ""))
