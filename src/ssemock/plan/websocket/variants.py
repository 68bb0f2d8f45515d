"""A recorded WebSocket session replayed under a variant (issue 35): its server frames re-framed
(`ssemock.variants.websocket.frames`), broken by a fault (`ssemock.variants.websocket.faults`) and cut into
reads by a wire chunking (`ssemock.variants.websocket.chunking`), the conversation otherwise as
recorded (`Conversation`: the client's messages matched, each group released when the client has
sent what preceded it).

``as_recorded`` everywhere serves what `Conversation` serves, cut at the recorded reads when the
frames re-encoded are the bytes recorded (`Conversation.wire_fits`; else one read per frame,
and `Conversation.wire_note` says why).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field, replace
from itertools import accumulate, repeat

from ...framing.websocket import FrameParser, Opcode
from ...store.websocket import Message
from ...variants.chunking import At, Chunking
from ...variants.websocket.chunking import get as get_chunking
from ...variants.websocket.faults import Refusal, Session, WsFault
from ...variants.websocket.faults import get as get_fault
from ...variants.websocket.frames import FrameSpan, Reframing, ServerMessage, Wire, encode
from ...variants.websocket.frames import get as get_reframing
from ..conversation import Conversation, Unit
from ..release import Reads, Release
from .handshake import handshake_head, parse_request_head

__all__ = ["VariantRefused", "VariedConversation"]


class VariantRefused(BaseException):
    """A variant that cannot run against this client (``deflate`` for a client that offered no
    permessage-deflate) or this session (a fault aimed at a lane it does not have): the reason
    says why; a matrix skips the variant with it. A
    BaseException, as the replay's other errors are, so an SDK's ``except Exception`` around its
    connect does not hide it."""


_REASONS = {401: "Unauthorized", 403: "Forbidden", 429: "Too Many Requests", 503: "Service Unavailable"}


@dataclass
class VariedConversation(Conversation):
    """A `Conversation` under a wire ``chunking``, a ``reframing`` and a ``fault`` (names or
    objects), on connection ``attempt`` (a reconnect is the next attempt: ``sequence`` faults);
    its ``protocol`` (`Conversation`'s) gives the fault its own shapes."""

    chunking: str | Chunking = "as_recorded"
    reframing: str | Reframing = "as_recorded"
    fault: str | WsFault | None = None
    attempt: int = 0
    after_plays: int = 0
    """How many HTTP responses the player had served when this session opened (which is latest)."""
    pongs: list[bytes] = field(default_factory=list)
    """The payloads of the pongs the client answered with."""
    _wire: Wire = field(default_factory=Wire, repr=False)
    _ending: str = field(default="recorded", repr=False)
    _served: list[bytes] = field(default_factory=list, repr=False)
    _refused: Refusal | None = field(default=None, repr=False)
    _stalls: dict[int, float] = field(default_factory=dict, repr=False)
    _sent_bytes: int = field(default=0, repr=False)
    reads: list[int] = field(default_factory=list)
    """The wire offsets where each read served so far ended (the read boundaries)."""
    _eof_from: int | None = field(default=None, repr=False)
    """The wire bytes served before the group released with the end of the connection (None: not
    ended so)."""
    _served_bytes: int = field(default=0, repr=False)
    """The wire bytes released so far (a session with lanes may release its units out of order)."""
    _stops: list[int] = field(default_factory=list, repr=False)
    """Where each frame of ``_wire`` ends (increasing: a group's frames are found by bisection)."""
    _arrivals: dict[int, float] | None = field(default=None, repr=False)
    """`_read_times`, once made."""

    def __post_init__(self) -> None:
        self._chunking = get_chunking(self.chunking)
        self._reframing = get_reframing(self.reframing)
        self._fault = get_fault(self.fault) if self.fault is not None else None
        super().__post_init__()

    # -- the server side under the variant ------------------------------------------------------

    def _plain(self) -> bool:
        return self._fault is None and self._reframing.name == "as_recorded"

    def _deflate_policy(self) -> str:
        flag = self._reframing.deflate
        return "recorded" if flag is None else "always" if flag else "never"

    def _units(self) -> list[Unit]:
        recorded = super()._units()
        if self._plain():
            self._wire = _spans(b"".join(u.data for u in recorded))
            self._stops = [f.end for f in self._wire.frames]
            self._served = [m.payload for m in self.ws.received()]
            return recorded
        gates: list[int] = []
        gate, received, parts = 0, [], []
        for p, m in enumerate(self.ws.messages):
            if m.direction == "send":
                gate += 1
            else:
                received.append(m)
                gates.append(gate)
                parts.append(1 + p)
        lanes = self.routes.received if self.routes is not None else [(None, 0)] * len(received)
        messages = tuple(
            ServerMessage(
                Opcode.TEXT if m.type == "text" else Opcode.BINARY,
                m.payload,
                g,
                tuple(self._cuts(k)),
                lane,
                lane_gate,
            )
            for k, (m, g, (lane, lane_gate)) in enumerate(zip(received, gates, lanes))
        )
        times = {id(s): m.t for s, m in zip(messages, received)}
        places = {id(s): p for s, p in zip(messages, parts)}  # a message a fault adds: none (order only)
        close = self.ws.close
        ending_close = (close.code, close.reason) if close.by == "server" and close.code is not None else None
        session = Session(messages, protocol=self.protocol, close=ending_close)
        if self._fault is not None:
            try:
                session = self._fault.apply(session, self.attempt)
            except ValueError as exc:  # a fault aimed at what this session has not (a lane)
                raise VariantRefused(
                    f"ssemock: {self.where}, interaction #{self.index} ({self.interaction.request.url}): {exc}"
                ) from None
        self._refused = session.refused
        self._ending = "eof" if session.drop else "close" if session.close is not None else "recorded"
        agreed = self.deflate
        wire = encode(
            session.messages,
            self._reframing,
            agreed_deflate=agreed is not None,
            no_context_takeover=agreed is not None and agreed.server_no_context_takeover,
            max_window_bits=(agreed.server_max_window_bits if agreed is not None else None) or 15,
            close=session.close,
        )
        cut = len(wire.data) if session.drop_after_byte is None else session.drop_after_byte
        self._served = [m.data for m, end in zip(session.messages, wire.message_ends) if end <= cut]
        units, start, t = [], 0, 0.0
        for served, end in zip(session.messages, wire.message_ends):
            t = times.get(id(served), t)
            units.append(
                Unit(
                    served.group,
                    t,
                    wire.data[start:end],
                    places.get(id(served)),
                    served.lane,
                    served.lane_group,
                )
            )
            start = end
        if start < len(wire.data):  # the close frame: the recorded one once the client sent all it had
            # sent before it (a re-framing served it after the last server message: too early for a
            # client still sending, Deepgram's CloseStream); a close fault's right after its messages
            as_recorded = session.close is ending_close and ending_close is not None
            after = gate if as_recorded else session.messages[-1].group if session.messages else 0
            units.append(Unit(after, t, wire.data[start:]))
        if session.drop_after_byte is not None:
            units = _truncate(units, session.drop_after_byte)
        self._stalls = {k: s for k, s in session.stalls if k < len(units)}
        self._wire = wire
        self._stops = [f.end for f in wire.frames]
        return units

    def _cuts(self, k: int) -> list[int]:
        notes = [
            n for n in self.ws.frame_map if n.direction == "recv" and n.kind == "fragments" and n.index == k
        ]
        return notes[0].offsets if notes else []

    def _take(self, gate: int, since: float) -> list[Release]:
        units, stalls = self.units, self._stalls
        offset, taken = self._served_bytes, self._next_units(gate)
        pieces = [units[k].data for k in taken]
        delays = [t - since if t > since else 0.0 for t in [units[k].t for k in taken]]
        pauses = [stalls.get(k, 0.0) for k in taken] if stalls else [0.0] * len(taken)
        self._served_bytes += sum(map(len, pieces))
        out = self._cut(pieces, delays, pauses, offset, taken)
        done = self._released == len(units)
        if done and not self._closed:
            if self._ending == "eof" or (
                self._ending == "recorded" and self.ws.close.by is None and gate >= len(self.recorded)
            ):
                self._close()
                self._eof_from = offset
                out.append(Release(delays[-1] if delays else 0.0, None))
        return out

    def _cut(
        self, pieces: list[bytes], delays: list[float], pauses: list[float], offset: int, taken: list[int]
    ) -> list[Release]:
        """The units ``taken`` of one group (their bytes ``pieces``, released ``delays`` after the
        group, each after a stall of ``pauses``) cut into reads by the chunking, never across the
        group; an ``at:`` chunking's offsets count from the first byte of the session's wire (the
        group's own end is a read end too: ``at:`` with no offset serves each group in one read)."""
        if not pieces:
            return []
        joined = b"".join(pieces)
        bounds = list(accumulate(map(len, pieces)))
        kept = None
        if isinstance(self._chunking, At):  # offsets in the session's whole wire (explore's reproducers)
            cuts = self._chunking.boundaries
            ends = [b - offset for b in cuts if offset < b < offset + len(joined)] + [len(joined)]
        else:
            kept = self._recorded_ends(offset, len(joined))
            ends = self._chunking.ends(joined, kept or self._frame_ends(offset, len(joined)) or bounds)
        times = self._read_times() if kept is not None and self._chunking.name == "as_recorded" else {}
        if not times and ends == bounds:  # each unit one read, as it is (a plain replay's usual case)
            self.reads.extend(map(offset.__add__, ends))
            return self._as_reads(joined, pieces, delays, pauses)
        parts: list[bytes] = []
        waits: list[float] = []
        stalls: list[float] = []
        start, last_unit = 0, len(pieces) - 1
        for end in ends:
            unit = min(bisect.bisect_right(bounds, start), last_unit)
            delay = delays[unit]
            arrived = times.get(offset + end)
            if arrived is not None:  # a recorded read: when it arrived, against the message it ends in
                last = min(bisect.bisect_left(bounds, end), last_unit)
                early = max(0.0, self.units[taken[last]].t - arrived)
                delay = max(0.0, delays[last] - early)
            parts.append(joined[start:end])
            waits.append(delay)
            stalls.append(pauses[unit])
            self.reads.append(offset + end)
            start = end
        return self._as_reads(joined, parts, waits, stalls)

    def _as_reads(
        self, joined: bytes, parts: list[bytes], delays: list[float], stalls: list[float]
    ) -> list[Release]:
        """The reads ``parts`` of a group (its bytes ``joined``) as the stack takes them: one
        `Reads` run when it takes runs (`Conversation.runs`) and no stall comes before any, else
        a `Release` a read."""
        if self.runs and not any(stalls):
            return [Reads(delays[0], joined, pieces=parts, delays=delays)]
        return list(map(Release, delays, parts, repeat(False), stalls))

    def _read_times(self) -> dict[int, float]:
        """When each recorded read arrived, by the wire offset where it ended (made once)."""
        if self._arrivals is None:
            self._arrivals = dict(zip(self.ws.wire.ends, self.ws.wire.times))
        return self._arrivals

    def _frame_ends(self, offset: int, size: int) -> list[int] | None:
        """Where each frame inside ``[offset, offset + size)`` of the wire ends: the reads of a
        plain replay that cannot keep the recorded ones (one frame each)."""
        if not self._plain():
            return None
        stops = self._stops
        inside = stops[bisect.bisect_right(stops, offset) : bisect.bisect_right(stops, offset + size)]
        ends = [e - offset for e in inside]
        return ends if ends and ends[-1] == size else None

    def _recorded_ends(self, offset: int, size: int) -> list[int] | None:
        """The recorded read ends inside ``[offset, offset + size)`` of the wire, when the cassette's
        wire map fits the re-encoded frames (the variant changed no byte)."""
        if not self._plain() or not self.wire_fits():
            return None
        ends = self.ws.wire.ends
        inside = [
            e - offset
            for e in ends[bisect.bisect_right(ends, offset) : bisect.bisect_right(ends, offset + size)]
        ]
        return inside if inside and inside[-1] == size else [*inside, size]

    # -- the handshake and the client's side ----------------------------------------------------

    def handshake(self, request_head: bytes) -> bytes:
        """The 101 (`Conversation.handshake`), or the refusal a ``handshake:`` fault serves (its
        head and body: the connection then ends); permessage-deflate agreed for ``deflate``
        when the client offered it, `VariantRefused` when it did not."""
        if self._refused is not None:
            r = self._refused
            self._close()  # ends here: holds its group back no more (a stack may not ask for the opening)
            return handshake_head(r.status, _REASONS.get(r.status, "Error"), list(r.headers)) + r.body
        if self._reframing.deflate:
            offered = parse_request_head(request_head).get("sec-websocket-extensions", "")
            why = self._reframing.refuses("permessage-deflate" in offered)
            if why is not None:
                self._ending = "refused"  # nothing was served: nothing is owed
                self._close()
                raise VariantRefused(f"ssemock: the WebSocket variant {self._reframing}: {why}")
        return super().handshake(request_head)  # agrees to permessage-deflate as `_deflate_policy` says

    def opening(self) -> list[Release]:
        if self._refused is not None:
            self._close()
            return [Release(0.0, None)]
        return super().opening()

    def _pong(self, payload: bytes) -> None:
        self.pongs.append(payload)

    def _client_close(self, payload: bytes) -> list[Release]:
        if self._ending == "close":  # the server closed first (a close fault): its echo ends it
            out = [] if self._closed else [Release(0.0, None)]
            self._close()
            return out
        return super()._client_close(payload)

    def served_messages(self) -> list[bytes]:
        """The server messages this session serves under its variant, whole, in order (a fault's
        error message included, messages a drop cuts left out)."""
        return list(self._served)

    def message_start(self, k: int) -> int:
        """The wire offset of server message ``k``'s first frame (its first ping before it aside)."""
        return next((f.start for f in self._wire.frames if f.message == k), len(self._wire.data))

    _fallback_reads = "each frame is served in its own read"

    def _keeps_recorded_reads(self) -> bool:
        return self._plain() and self._chunking.name == "as_recorded" and self.wire_fits()

    def wire_note(self) -> str | None:
        """`Conversation.wire_note` under the ``as_recorded`` chunking of a plain replay (a
        variant changes the bytes on purpose)."""
        if not self._plain() or self._chunking.name != "as_recorded":
            return None
        return super().wire_note()

    def unsent(self) -> list[Message]:
        """`Conversation.unsent`, but nothing when a fault ended the session early (a client
        cannot send what it never got the chance to)."""
        if self._refused is not None or self._ending in ("eof", "close", "refused"):
            return []
        return super().unsent()

    def unanswered_pings(self) -> list[bytes]:
        """The pings the ``pings`` re-framing sent that the client never answered. The pings
        released together with the end of the connection (a ``drop`` fault, a recording that
        ended with no close) are not counted: the connection was gone before a client could
        answer them."""
        answered = list(self.pongs)
        missing = []
        for ping in self._wire.pings[: self._pings_sent()]:
            if ping in answered:
                answered.remove(ping)
            else:
                missing.append(ping)
        return missing

    def _pings_sent(self) -> int:
        sent = self._served_bytes if self._eof_from is None else self._eof_from
        return sum(1 for f in self._wire.frames if f.opcode == Opcode.PING and f.end <= sent)

    def at_byte(self, offset: int) -> str:
        """The frame and the read boundary at wire byte ``offset`` (for a diagnosis)."""
        frames = self._wire.frames
        k = max(0, bisect.bisect_right([f.start for f in frames], offset) - 1) if frames else -1
        text = f"wire byte {offset}"
        if k >= 0:
            f = frames[k]
            part = "header" if offset < f.body else "payload"
            kind = f.opcode.name.lower()
            owner = f" of server message {f.message}" if f.message is not None else ""
            text += f": frame {k} ({kind}{owner}, bytes {f.start}-{f.end}), in its {part}"
        read = bisect.bisect_left(self.reads, offset)
        if read < len(self.reads):
            text += f"; read {read} ends at byte {self.reads[read]}"
        return text


def _spans(data: bytes) -> Wire:
    """The frames of a server wire, each with the message it carries part of."""
    wire, message = Wire(data=data), 0
    for f in FrameParser(masked=False).feed(data):
        data_frame = f.opcode not in (Opcode.PING, Opcode.PONG, Opcode.CLOSE)
        body = f.end - len(f.payload)
        wire.frames.append(
            FrameSpan(f.start, body, f.end, f.opcode, f.fin, f.rsv1, message if data_frame else None)
        )
        if data_frame and f.fin:
            wire.message_ends.append(f.end)
            message += 1
    return wire


def _truncate(units: list[Unit], size: int) -> list[Unit]:
    out, at = [], 0
    for u in units:
        if at >= size:
            break
        out.append(replace(u, data=u.data[: size - at]))
        at += len(u.data)
    return out
