"""Faults on the stream's own bytes and time: it breaks off (`disconnect`), breaks off for the
client to resume (`resume`), pauses (`stall`), ends early (`truncate`) or goes on after its end
(`trailing_data`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import protocols
from ..core.names import suggest
from ..framing.sse import Decoder
from .fault_model import Fault, Served, Target, _args, _count, _newline, _seconds

if TYPE_CHECKING:
    from ..store.cassette import Interaction

__all__ = ["disconnect", "resume", "stall", "trailing_data", "truncate"]


class _Disconnect(Fault):
    def __init__(self, after_event: int | None, after_byte: int | None) -> None:
        if (after_event is None) == (after_byte is None):
            raise ValueError("disconnect() needs exactly one of after_event= or after_byte=")
        after_event = _count("disconnect", "after_event", after_event, optional=True)
        after_byte = _count("disconnect", "after_byte", after_byte, optional=True)
        self.after_event, self.after_byte = after_event, after_byte
        self.name = "disconnect" + _args(after_event=after_event, after_byte=after_byte)

    def needs_end(self, attempt: int = 0) -> str | None:
        return None

    def apply(self, served: Served, attempt: int) -> None:
        if not served.reached(events=self.after_event, size=self.after_byte):
            return
        offset = (
            served.offset_after(self.after_event)
            if self.after_event is not None
            else min(self.after_byte or 0, len(served.body))
        )
        served.cut(offset)
        served.error = served.core.RemoteProtocolError(
            f"peer closed connection without sending complete message body (ssemock {self.name}, "
            f"after byte {offset})"
        )


def disconnect(
    after_event: int | None = None, after_byte: int | None = None, on: Target | str | int | None = None
) -> Fault:
    """Drop the connection after N whole events (or N bytes): the client's RemoteProtocolError.

    An event is an SSE event, a JSON line, a JSON array's element (the cut falls after its closing
    brace, before the separator), an eventstream frame; a plain JSON body is one event."""
    return _Disconnect(after_event, after_byte).aimed(on)


class _Resume(_Disconnect):
    replay_only = (
        "the client's reconnection is answered from the cassette's stream, which a recording run "
        "has not recorded yet"
    )

    def __init__(self, after_event: int | None, after_byte: int | None) -> None:
        super().__init__(after_event, after_byte)
        self.name = "resume" + self.name.removeprefix("disconnect")

    def refuses(self, framing: str) -> str | None:
        return None if framing == "sse" else "a client resumes an SSE stream only (Last-Event-ID)"

    def refuses_interaction(self, interaction: Interaction) -> str | None:
        request, response = interaction.request, interaction.response
        protocol = protocols.for_response(request.url, response.headers, response.body)
        why = protocol.resumption(request) if protocol is not None and protocol.resumption else None
        if why:
            return why
        decoder = Decoder()
        if not any(event.id for event in decoder.feed(response.body)) and not decoder.last_event_id:
            return (
                "the recorded stream sets no event id, so a client has no Last-Event-ID to resume "
                "from (its server offered no resumption); disconnect: drops it for good"
            )
        return None


def resume(
    after_event: int | None = None, after_byte: int | None = None, on: Target | str | int | None = None
) -> Fault:
    """Drop the connection after N whole events (or N bytes) of an SSE stream that sets event
    ids, for the client to resume: its reconnection (a ``GET`` with ``Last-Event-ID``) is answered
    with the rest of the stream after that event, as a resumable server answers it (MCP
    2025-11-25 with an event store). Refused, naming why, on a stream that cannot be resumed: one
    whose protocol version has none (MCP 2026-07-28), or that sets no event id."""
    return _Resume(after_event, after_byte).aimed(on)


class _Stall(Fault):
    def __init__(self, before_event: int, seconds: float) -> None:
        self.before_event = _count("stall", "before_event", before_event)
        self.seconds = _seconds("stall", "seconds", seconds)
        self.name = f"stall:before_event={before_event},seconds={seconds:g}"

    def needs_end(self, attempt: int = 0) -> str | None:
        return None

    def apply(self, served: Served, attempt: int) -> None:
        if served.reached(events=self.before_event):
            served.stalls[served.offset_after(self.before_event)] = self.seconds


def stall(before_event: int, seconds: float, on: Target | str | int | None = None) -> Fault:
    """Send nothing for ``seconds`` before event N (0-based: after N events).

    Longer than the client's read timeout: its ReadTimeout at once, without sleeping.
    """
    return _Stall(before_event, seconds).aimed(on)


class _Truncate(Fault):
    def __init__(self, at: str) -> None:
        if at not in ("terminator", "mid_event"):
            close = suggest(at, ("terminator", "mid_event"))
            hint = f" (did you mean {close!r}?)" if close else ""
            raise ValueError(f"truncate: at takes 'terminator' or 'mid_event', got {at!r}{hint}")
        self.at = at
        self.name = "truncate" if at == "terminator" else f"truncate:at={at}"

    def refuses(self, framing: str) -> str | None:
        if framing == "json" and self.at == "terminator":
            return (
                "a plain JSON body has no terminator event to drop "
                "(use truncate:at=mid_event or disconnect:after_byte=N to cut it)"
            )
        return None

    def needs_end(self, attempt: int = 0) -> str | None:
        return "it drops the stream's last event, and only the end says which event is last"

    def apply(self, served: Served, attempt: int) -> None:
        starts = [0, *served.event_ends()]
        if len(starts) < 2:
            return
        if self.at == "terminator":  # drop the last event
            served.cut(starts[-2])
        else:  # drop the last event and end halfway through the one before it
            k = max(len(starts) - 3, 0)
            served.cut((starts[k] + starts[k + 1]) // 2)


def truncate(at: str = "terminator", on: Target | str | int | None = None) -> Fault:
    """End the stream normally but early: without its last (terminator) event (a JSON array: its
    last element and the closing ``]``), or also cut halfway through the event before it
    (``at="mid_event"``: inside that SSE event, JSON line, array element or eventstream frame;
    inside a plain JSON body)."""
    return _Truncate(at).aimed(on)


_TRAILING = ("event", "same_event", "garbage")


_REFUSED_TRAILING = {
    ("event", "eventstream"): "an eventstream has no terminator frame after which data is trailing "
    "(every frame is an event)",
    (
        "event",
        "json",
    ): "a plain JSON body has no last event to follow (use at=garbage: bytes after the document)",
    ("garbage", "eventstream"): "bytes glued to a binary frame corrupt its CRC, which is no trailing data",
}


class _TrailingData(Fault):
    def __init__(self, at: str) -> None:
        if at not in _TRAILING:
            close = suggest(at, _TRAILING)
            hint = f" (did you mean {close!r}?)" if close else ""
            raise ValueError(f"trailing_data: at takes {', '.join(map(repr, _TRAILING))}, got {at!r}{hint}")
        self.at = at
        self.name = "trailing_data" if at == "event" else f"trailing_data:at={at}"

    def refuses(self, framing: str) -> str | None:
        if self.at == "same_event" and framing != "sse":
            return "only an SSE event has lines a data line can join (use at=event or at=garbage)"
        return _REFUSED_TRAILING.get((self.at, framing))

    def needs_end(self, attempt: int = 0) -> str | None:
        return "it writes after the stream's last event, and only the end says which event is last"

    def apply(self, served: Served, attempt: int) -> None:
        kind = served.framing
        if self.refuses(kind):
            return
        body = served.body
        ends = served.event_ends()
        if kind == "json":
            stripped = body.rstrip()
            self._replace(served, stripped + b"garbage" + body[len(stripped) :], len(stripped))
            return
        if kind == "json_array":
            if not ends:
                return
            last = ends[-1]  # the last element's closing brace; the array's "]" follows
            if self.at == "event":  # another element after the array's end
                nl = _newline(body).encode()
                tail = b"" if body.endswith((b"\n", b"\r")) else nl
                self._replace(
                    served, body + tail + b'{"ssemock": "data after the terminator"}' + nl, len(body)
                )
            else:  # garbage glued to the last element, before the "]"
                self._replace(served, body[:last] + b"garbage" + body[last:], last)
            return
        starts = [0, *ends]
        if len(starts) < 2 or body[starts[-1] :].strip():
            return  # no whole last event to follow
        a, b = starts[-2], starts[-1]
        last_event = body[a:b]
        stripped = last_event.rstrip(b"\r\n")
        tail = last_event[len(stripped) :]
        nl = b"\r\n" if tail.startswith(b"\r\n") else tail[:1] or b"\n"
        extra = b'{"ssemock": "data after the terminator"}'
        if self.at == "event":  # a whole event (or JSON line) after the last one
            added = (b"data: " + extra + nl + nl) if kind == "sse" else extra + nl
            self._replace(served, body + added, len(body))
        elif self.at == "same_event":  # one more data line in the terminator's own event
            self._replace(served, body[:a] + stripped + nl + b"data: " + extra + nl + nl, a)
        else:  # the terminator's value followed by garbage: ``data: [DONE]garbage``
            self._replace(served, body[:a] + stripped + b"garbage" + tail, a)

    @staticmethod
    def _replace(served: Served, new: bytes, keep: int) -> None:
        """The body becomes ``new``, identical to the old one up to ``keep``: chunk ends up to
        there stay, the rest is one chunk, at the last recorded time."""
        kept = [e for e in served.ends if e <= keep]
        served.ends = kept + ([len(new)] if not kept or kept[-1] != len(new) else [])
        served.times = served.times[: len(kept)] + (
            [served.times[-1] if served.times else 0.0] * (len(served.ends) - len(kept))
        )
        served.body = new


def trailing_data(at: str = "event", on: Target | str | int | None = None) -> Fault:
    """Data a terminated stream must not have: an event after the last (terminator) event
    (``at="event"``: a conforming client ignores it), a data line in the terminator's own event
    (``"same_event"``: ``data: [DONE]`` then ``data: {...}``) or garbage glued to its value
    (``"garbage"``: ``data: [DONE]garbage``); the last two a conforming client must reject
    ([`ssemock.Player.assert_rejected`][ssemock.Player.assert_rejected]).

    In a JSON array stream, ``at="event"`` writes an element after the closing ``]`` (a client
    that reads elements stops at the ``]``) and ``"garbage"`` glues bytes to the last element,
    before the ``]``; in JSON lines, a line after the last and garbage glued to the last line; in
    a plain JSON body, ``"garbage"`` after the document. Refused where it has no meaning:
    ``same_event`` outside SSE, ``event`` on a plain JSON body, both ``event`` and ``garbage``
    on an eventstream."""
    return _TrailingData(at).aimed(on)
