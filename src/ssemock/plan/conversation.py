"""A WebSocket session replayed as a conversation, not a tape (sans-IO: bytes in, bytes out).

The server frames recorded before the client's first message are released on open
(`Conversation.opening`); each later group once the client has sent what preceded it in the
recording (`Conversation.feed` takes the client's wire bytes and returns what it releases).
Text messages are matched (JSON as JSON, without the paths ignored and with base64 audio
compared by length: `ssemock.plan.message_matching`); binary messages are counted by bytes, not
compared (unless matching is strict); the client's pings are answered at once and never
matched; a message that matches nothing raises `UnmatchedMessageError` with the closest
recorded message and a JSON-path diff; `Conversation.unsent` lists what the recording's client
sent that this one has not.

permessage-deflate: when the recording agreed to it and the replaying client offers it, the
handshake agrees again (the recorded parameters, as the client's offer allows:
`ssemock.framing.websocket.agree_deflate`) and the server's messages are compressed anew from
the recorded (decompressed) messages, so an edited message stays valid; the client's compressed
messages are inflated before they are matched. The recorded reads (the wire map) are kept only
when the frames re-encoded are the bytes recorded (`Conversation.wire_fits`: the wire's SHA-256,
or its length in a cassette written before it was kept).

A session spanning connections (``group``, `ssemock.plan.session_group`) also holds each server
message until what was recorded before it on the group's other connections was released.

A stack serves it: it writes `Conversation.handshake`'s answer and the `Release` items (each
``delay`` seconds of recorded time after the release, timing applied by the stack; a run of
reads in one `ssemock.plan.release.Reads` for a stack that takes runs), and feeds every byte the
client writes. ``data=None`` in a release is the end of the stream (EOF).
"""

from __future__ import annotations

import bisect
import hashlib
import warnings
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .. import protocols
from ..framing.websocket import (
    DeflateAgreement,
    Deflater,
    MessageReader,
    Opcode,
    accept_key,
    agree_deflate,
    close_payload,
    encode_frame,
    parse_close,
)
from ..redaction.rules import redact_subprotocol
from ..store.model import Interaction
from ..store.websocket import Message
from .errors import SsemockWarning, UnmatchedRequestError
from .message_matching import MessageMatcher, recorded_excerpt, skip_hint
from .release import Release, each_read
from .websocket.handshake import handshake_head, parse_request_head
from .websocket.lanes import LaneRoutes

if TYPE_CHECKING:
    from .session_group import SessionGroup

__all__ = [
    "Conversation",
    "HandshakeMismatch",
    "Release",
    "UnmatchedMessageError",
    "default_ignore",
    "handshake_head",
    "skipped_stall",
]


def default_ignore(url: str) -> tuple[str, ...]:
    """The JSON paths ignored by default when matching the client's messages of a session at
    ``url``: those of its protocol (found from the URL), `ssemock.protocols.base.MessageMatching`."""
    found = protocols.detect(url=url)
    return found.client_messages.ignore if found is not None else ()


class UnmatchedMessageError(UnmatchedRequestError):
    """A message the client sent on a replayed WebSocket matches no message the recording's
    client sent next: the message names the cassette, the interaction, the closest recorded
    message and where they differ (a JSON path)."""


class HandshakeMismatch(UnmatchedRequestError):
    """The replaying client's handshake cannot be answered as recorded (a subprotocol the
    recording never agreed to)."""


def skipped_stall(conversation: Conversation, seconds: float) -> None:
    """Say that ``instant`` timing skipped a stall no timeout of the client's could be seen to end
    (a `ssemock.SsemockWarning` naming the fault), so a test meant to exercise it is not silently
    green."""
    fault = getattr(conversation, "fault", None)
    name = fault if isinstance(fault, str) else str(fault) if fault is not None else "stall"
    warnings.warn(
        f"ssemock: the fault {name} was skipped ({seconds:g} s of silence not waited) in "
        f"{conversation.where}, interaction #{conversation.index}: timing 'instant', and no timeout "
        "of the client's that ssemock can see ends it (a read with a timeout shorter than the stall "
        "ends with the client's own timeout at once); timing='scaled:F' or 'recorded' waits it",
        SsemockWarning,
        stacklevel=2,
    )


@dataclass(slots=True)
class Unit:
    gate: int  # how many client messages the recording had sent before it arrived
    t: float
    data: bytes
    part: int | None = None  # its message's part of a group (1 + its place in the messages)
    lane: str | None = None  # its lane (None: the default lane, or a session without lanes)
    lane_gate: int = 0  # how many client messages its lane had sent before it


@dataclass
class Conversation:
    """The replay of one recorded WebSocket interaction (see the module's docstring).

    ``interaction`` must have a ``websocket``; ``index`` and ``where`` (the cassette) name it in
    errors; ``ignore`` is the ``ignore_message_paths`` option (JSON paths left out when matching
    text, added to the defaults of the session's protocol; ``"strict"`` first drops them:
    `ssemock.plan.message_matching`); ``binary="compare"`` compares binary messages instead of
    counting bytes; ``protocol`` names the session's protocol (None: found from the URL);
    ``max_size``: the largest message the client may send, reassembled and inflated (bytes).
    What the client sends is read as RFC 6455 asks (`ssemock.framing.websocket.MessageReader`):
    a rule broken raises `FrameError` with the close code that answers it.
    """

    interaction: Interaction
    index: int = 0
    where: str = "the cassette"
    ignore: str | Sequence[str] | None = None
    binary: str = "count"
    max_size: int = 1 << 26
    protocol: str | None = None
    group: SessionGroup | None = None
    """The session spanning connections this one belongs to (`ssemock.plan.session_group`):
    its messages are released only once what was recorded before them on the group's other
    connections has been (None: on its own, released as the client's messages allow)."""
    on_release: Callable[[list[Release]], None] | None = None
    """Set by the stack serving a grouped conversation: takes what another connection's progress
    released (the stack queues it as it queues `feed`'s answer)."""
    runs: bool = False
    """Set by a stack that takes a run of reads as one `ssemock.plan.release.Reads` (the asyncio
    transport): `feed` may then answer with runs; else one `Release` a read."""
    mismatches: list[str] = field(default_factory=list)
    """Every message that matched nothing (the player fails the test with them at teardown,
    unless the test was already told: `told`)."""
    told: bool = False
    """Whether the mismatches reached the test already (it failed with one, or its report says
    them): the player then does not report them again at teardown."""
    _cursor: int = field(default=0, repr=False)
    _media: int = field(default=0, repr=False)  # binary bytes sent in the current binary run
    _released: int = field(default=0, repr=False)  # units released so far
    _done: set[int] = field(default_factory=set, repr=False)  # which (a session with lanes)
    _closed: bool = field(default=False, repr=False)
    _failed: bool = field(default=False, repr=False)
    _gate: int = field(default=0, repr=False)  # the client messages matched so far (the last gate taken)
    _busy: bool = field(default=False, repr=False)  # telling the group what was released
    _told: int = field(default=0, repr=False)  # the client messages told to the group as matched
    _open: bool = field(default=False, repr=False)  # the handshake was answered (told to the group)

    def __post_init__(self) -> None:
        ws = self.interaction.websocket
        if ws is None:
            raise ValueError("a Conversation needs an interaction with a websocket session")
        self.ws = ws
        self.recorded: list[Message] = ws.sent()
        """The recording's client messages, in order."""
        if self.protocol is None:
            found = protocols.detect(url=self.interaction.request.url)
            self.protocol = found.name if found is not None else None
        found = protocols.get(self.protocol) if self.protocol is not None else None
        self.matcher = MessageMatcher.for_session(found, self.ignore, self.binary)
        self.routes = LaneRoutes.of(found.lanes if found is not None else None, ws.messages)
        """The session's lanes (None: it names none, and replays as a tape: `ssemock.plan.websocket.lanes`)."""
        self.deflate: DeflateAgreement | None = None
        """The permessage-deflate the replay's handshake agreed to (None: none, frames go plain)."""
        self._mem_level = 8
        self._fit: tuple[list[Unit], bool] | None = None  # wire_fits, for the units it was computed for
        self._gated: tuple[list[Unit], list[int] | None] | None = None  # _gates, likewise
        self._reader = MessageReader(max_size=self.max_size)
        self.units = self._units()
        self._parts = [1 + p for p, m in enumerate(ws.messages) if m.direction == "send"]
        if self.group is not None:
            self.group.join(self.index, self._wake)

    # -- the server side, encoded ---------------------------------------------------------------

    def _units(self) -> list[Unit]:
        """The server's frames as it sent them, one unit per message (its pings before it), each
        gated by the number of client messages sent before it in the recording; compressed when
        the handshake agreed permessage-deflate, with the zlib memory level that gives the
        recorded bytes back where one does (8, zlib's default, or 5, the websockets server's)."""
        if self.deflate is None:
            return self._encoded(None)
        for level in (8, 5):
            units = self._encoded(self.deflate.deflater(mem_level=level))
            if self._fits(units):
                self._mem_level = level
                return units
        self._mem_level = 8
        return self._encoded(self.deflate.deflater())

    def _encoded(self, deflater: Deflater | None) -> list[Unit]:
        ws, units, gate, k = self.ws, [], 0, 0
        pings: dict[int, list[bytes]] = {}
        for note in ws.frame_map:
            if note.direction == "recv" and note.kind == "ping":
                pings.setdefault(note.index, []).append(encode_frame(Opcode.PING, note.data))
        cuts = {n.index: n.offsets for n in ws.frame_map if n.direction == "recv" and n.kind == "fragments"}
        for p, m in enumerate(ws.messages):
            if m.direction == "send":
                gate += 1
                continue
            op = Opcode.TEXT if m.type == "text" else Opcode.BINARY
            payload = m.payload if deflater is None else deflater.compress(m.payload)
            # the recorder notes a compressed message's fragments in compressed bytes
            bounds = [0, *(c for c in cuts.get(k, []) if 0 < c < len(payload)), len(payload)]
            frames = [
                encode_frame(
                    op if i == 0 else Opcode.CONTINUATION,
                    payload[a:b],
                    fin=i == len(bounds) - 2,
                    rsv1=deflater is not None and i == 0,
                )
                for i, (a, b) in enumerate(zip(bounds, bounds[1:]))
            ]
            lane = self.routes.received[k] if self.routes is not None else (None, 0)
            units.append(Unit(gate, m.t, b"".join([*pings.get(k, []), *frames]), 1 + p, *lane))
            k += 1
        close = ws.close
        if close.by == "server" and close.code is not None:
            t = close.t if close.t is not None else (ws.messages[-1].t if ws.messages else 0.0)
            units.append(Unit(gate, t, encode_frame(Opcode.CLOSE, close_payload(close.code, close.reason))))
        return units

    # -- the recorded wire ----------------------------------------------------------------------

    def _fits(self, units: list[Unit]) -> bool:
        """Whether ``units`` are the server bytes recorded (followed, or not, by the answer to
        the client's close, where the recorded client closed cleanly): the wire's SHA-256 when
        the cassette has it, else its length."""
        wire, close = self.ws.wire, self.ws.close
        if not wire.ends:
            return False
        data = b"".join(u.data for u in units)
        candidates = [data]
        if close.by == "client" and close.clean and close.code is not None:
            candidates.append(data + encode_frame(Opcode.CLOSE, close_payload(close.code, close.reason)))
        if wire.sha256 is not None:
            return any(hashlib.sha256(c).hexdigest() == wire.sha256 for c in candidates)
        return any(len(c) == wire.ends[-1] for c in candidates)

    def wire_fits(self) -> bool:
        """Whether the server frames this replay serves are, byte for byte, those the recording
        received, so that its reads can end where the recorded reads ended (computed once per
        encoding: a replay asks at every group)."""
        if self._fit is not None and self._fit[0] is self.units:
            return self._fit[1]
        fits = self._fits(self.units)
        self._fit = (self.units, fits)
        return fits

    def wire_note(self) -> str | None:
        """Why the recorded reads are not kept (None: they are, or none were recorded): said once
        per session in the replay's warnings."""
        if not self.ws.wire.ends or self.wire_fits():
            return None
        recorded = DeflateAgreement.parse(self.ws.extensions)
        if (recorded is None) != (self.deflate is None):
            why = (
                "the recording agreed to permessage-deflate and this client did not offer it"
                if self.deflate is None
                else "this client agreed to permessage-deflate and the recording did not"
            )
        else:
            why = "a message, the frame map or the compression differs from what was recorded"
        return (
            f"ssemock: {self.where}, interaction #{self.index} ({self.interaction.request.url}): the "
            f"replayed frames are not the bytes recorded ({why}): {self._fallback_reads}, not the "
            "recorded reads"
        )

    _fallback_reads = "each server message is served in its own read"

    def _take(self, gate: int, since: float) -> list[Release]:
        """Every unit not yet released whose gate is at most ``gate`` (and that its group lets
        go), timed after ``since``."""
        taken = map(self.units.__getitem__, self._next_units(gate))
        out = [Release(max(0.0, u.t - since), u.data) for u in taken]
        if self._released == len(self.units) and self.ws.close.by is None and gate >= len(self.recorded):
            if not self._closed:  # no close frame recorded: the stream just ends
                self._close()
                out.append(Release(out[-1].delay if out else 0.0, None))
        return out

    def _gates(self) -> list[int] | None:
        """Each unit's gate when they never decrease (None else), made once per encoding (as
        `wire_fits`): the walk cost ~1,400 instructions a unit (a group of 1,000 messages)."""
        if self._gated is None or self._gated[0] is not self.units:
            gates = [u.gate for u in self.units]
            self._gated = (self.units, gates if gates == sorted(gates) else None)
        return self._gated[1]

    # -- a session spanning connections ---------------------------------------------------------

    def _next_units(self, gate: int) -> list[int]:
        """Where the units not yet released whose gate is at most ``gate`` are, in order, as far as
        the group (or the session's lanes) lets them go (each told to the group as released)."""
        self._gate, group, out = max(self._gate, gate), self.group, list[int]()
        if group is None:  # in order, or as the session's lanes let them go
            units, end = self.units, self._released
            if self.routes is not None:
                taken = self.routes.due(units, self._done)
                self._done.update(taken)
            else:  # in order: by bisection in the gates when they never decrease, else a walk
                gates = self._gates()
                if gates is not None:
                    end = bisect.bisect_right(gates, gate, end)
                while end < len(units) and units[end].gate <= gate:
                    end += 1
                taken = list(range(self._released, end))
            self._released += len(taken)
            return taken
        with group.lock:
            self._busy = True
            try:
                if not self._open:
                    self._open = True
                    group.done(self.index, [0])  # the handshake was answered
                while True:
                    start = len(out)
                    while self._released < len(self.units) and self.units[self._released].gate <= gate:
                        part = self.units[self._released].part
                        if part is not None and not group.allows(self.index, part):
                            break
                        out.append(self._released)
                        self._released += 1
                    if len(out) == start:
                        return out
                    group.done(self.index, [p for k in out[start:] if (p := self.units[k].part) is not None])
            finally:
                self._busy = False

    def _wake(self) -> None:
        """Another connection of the group moved: what it lets go is handed to the stack."""
        if not self._open or self._busy or self._closed or self.on_release is None or self.group is None:
            return
        with self.group.lock:
            if self._released >= len(self.units):
                return
            releases = self._take(self._gate, self.units[self._released].t)
        if releases:
            self.on_release(releases)

    def _close(self) -> None:
        """The session ended here: what it recorded later holds its group back no more."""
        self._closed = True
        if self.group is not None:
            self.group.end(self.index)

    def _matched(self, gate: int) -> None:
        """The client's messages up to ``gate`` were matched: told to the group."""
        if self.group is not None and gate > self._told:
            told, self._told = self._told, gate
            self.group.done(self.index, self._parts[told:gate])

    # -- the handshake --------------------------------------------------------------------------

    def _deflate_policy(self) -> str:
        """``"recorded"`` (agree to permessage-deflate when the recording did and the client
        offers it), ``"always"`` (whenever the client offers it) or ``"never"``."""
        return "recorded"

    def _agree(self, offered: str) -> DeflateAgreement | None:
        policy, recorded = self._deflate_policy(), DeflateAgreement.parse(self.ws.extensions)
        if policy == "never" or (policy == "recorded" and recorded is None):
            return None
        return agree_deflate(offered, recorded)

    def handshake(self, request_head: bytes) -> bytes:
        """The 101 answering the client's handshake ``request_head`` (its HTTP head): the
        recorded response with ``Sec-WebSocket-Accept`` from the client's own key, the
        subprotocol it asked for when the recording agreed to it, and permessage-deflate when
        the recording agreed to it and the client offers it (see the module). `HandshakeMismatch`
        when it asks only for subprotocols the recording never had."""
        asked = parse_request_head(request_head)
        key = asked.get("sec-websocket-key", "")
        headers = [
            (k, v)
            for k, v in self.interaction.response.headers
            if k
            not in (
                "sec-websocket-accept",
                "sec-websocket-protocol",
                "sec-websocket-extensions",
                "content-length",
            )
        ]
        if not any(k == "upgrade" for k, _ in headers):
            headers.append(("upgrade", "websocket"))
        if not any(k == "connection" for k, _ in headers):
            headers.append(("connection", "Upgrade"))
        headers.append(("sec-websocket-accept", accept_key(key)))
        asking = [p.strip() for p in asked.get("sec-websocket-protocol", "").split(",") if p.strip()]
        # a credential offered as a subprotocol is stored redacted: it matches any key, is never
        # named in a message, and is answered with the client's own when the recording agreed to it
        offered = [p for p in asking if redact_subprotocol(p) == p]
        agreed = self.ws.subprotocol
        if agreed is not None and agreed not in offered:
            agreed = next((p for p in asking if redact_subprotocol(p) == agreed), agreed)
            offered = [*offered, agreed] if agreed in asking else offered
        if offered and agreed is None:
            raise HandshakeMismatch(
                f"ssemock: {self.where}, interaction #{self.index} ({self.interaction.request.url}): the client "
                f"asks for the subprotocols {offered}, but the recorded session agreed to none. Record it again"
            )
        if agreed is not None and offered:
            if agreed not in offered:
                raise HandshakeMismatch(
                    f"ssemock: {self.where}, interaction #{self.index} ({self.interaction.request.url}): the client "
                    f"asks for the subprotocols {offered}, but the recorded session agreed to {agreed!r}. "
                    "Ask for it, or record the session again"
                )
            headers.append(("sec-websocket-protocol", agreed))
        deflate = self._agree(asked.get("sec-websocket-extensions", ""))
        if deflate is not None:
            headers.append(("sec-websocket-extensions", deflate.header()))
        self._reader.deflate = deflate is not None
        if deflate != self.deflate:
            self.deflate = deflate
            self.units = self._units()
        return handshake_head(101, "Switching Protocols", headers)

    def opening(self) -> list[Release]:
        """What the server sent before the client's first message: released on open."""
        with self._hold():
            return self._take(0, 0.0)

    def _hold(self) -> AbstractContextManager[object]:
        """The group's lock (a grouped conversation moves under it, whichever thread moves it)."""
        return self.group.lock if self.group is not None else nullcontext()

    def answer(self, request_head: bytes) -> list[Release]:
        """`handshake` then `opening`, as a stack serves them on open: the 101 in a read of its
        own, unless the recording received server frames in the same read as the 101
        (``wire.head``) and this replay keeps the recorded reads: then that read, as recorded."""
        head = self.handshake(request_head)
        releases = [Release(0.0, head), *each_read(self.opening())]
        first = releases[1] if len(releases) > 1 else None
        if (
            self.ws.wire.head
            and first is not None
            and first.data is not None
            and len(first.data) == self.ws.wire.head
            and self._keeps_recorded_reads()
        ):
            releases[:2] = [Release(0.0, head + first.data)]
        return releases

    def _keeps_recorded_reads(self) -> bool:
        return self.wire_fits()

    # -- the client side ------------------------------------------------------------------------

    def feed(self, data: bytes) -> list[Release]:
        """The client wrote ``data`` (masked frames): what the server answers, in order. Raises
        `UnmatchedMessageError` when a message matches nothing (it is kept in ``mismatches``, and
        the stream is closed with 1008), `FrameError` when the client broke the protocol."""
        with self._hold():
            return self._feed(data)

    def _feed(self, data: bytes) -> list[Release]:
        out: list[Release] = []
        for got in self._reader.feed(data):
            if got.kind == "ping":
                out.append(Release(0.0, encode_frame(Opcode.PONG, got.payload)))
            elif got.kind == "pong":
                self._pong(got.payload)
            elif got.kind == "close":
                out.extend(self._client_close(got.payload))
            else:
                out.extend(self._message((got.kind, got.payload)))
        return out

    def _pong(self, payload: bytes) -> None:
        """The client answered a ping (a re-framing's pings count the answers)."""

    def _client_close(self, payload: bytes) -> list[Release]:
        out: list[Release] = []  # what the recording's server sent later is never sent now
        if self.ws.close.by != "server" and not self._closed:
            code, reason = parse_close(payload)
            echo = self.ws.close if self.ws.close.by == "client" else None
            code = echo.code if echo is not None and echo.code is not None else code
            out.append(
                Release(0.0, encode_frame(Opcode.CLOSE, close_payload(code, echo.reason if echo else reason)))
            )
        if not self._closed:
            self._close()
            out.append(Release(0.0, None))
        if out:
            out[0].ends_pending = True
        return out

    def _message(self, sent: tuple[str, bytes]) -> list[Release]:
        if self.routes is not None:  # a session with lanes: the next recorded message of its lane
            k = self.routes.next_on(self.routes.lane_of(sent[1]))
            self._cursor = self._cursor if k is None else k  # (the closest)
            if k is None or self.matcher.difference(sent, self.recorded[k]) is not None:
                raise self._unmatched(sent)
            self._cursor = self.routes.match(k)
            return self._after(sum(self.routes.matched), self.recorded[k])
        kind, payload = sent
        rec = self.recorded
        if kind == "binary" and self.matcher.binary == "count":
            if self._cursor < len(rec) and rec[self._cursor].type == "binary":
                self._media += len(payload)
                start = self._cursor
                while self._cursor < len(rec) and rec[self._cursor].type == "binary":
                    if self._media < sum(len(m.payload) for m in rec[start : self._cursor + 1]):
                        break
                    self._cursor += 1
                if self._media >= sum(len(m.payload) for m in rec[start : self._cursor + 1]):
                    self._media = 0
                return self._after(self._cursor, rec[max(self._cursor - 1, 0)])
            if self._cursor > 0 and rec[self._cursor - 1].type == "binary":  # more audio than recorded
                return []
        elif self._cursor < len(rec) and rec[self._cursor].type == "binary" and self._media:
            while self._cursor < len(rec) and rec[self._cursor].type == "binary":  # less audio than recorded
                self._cursor += 1
            self._media = 0
        if self._cursor < len(rec) and self.matcher.difference(sent, rec[self._cursor]) is None:
            self._cursor += 1
            return self._after(self._cursor, rec[self._cursor - 1])
        raise self._unmatched(sent)

    def _after(self, gate: int, gating: Message) -> list[Release]:
        self._matched(gate)
        return self._take(gate, gating.t)

    def _unmatched(self, sent: tuple[str, bytes]) -> UnmatchedMessageError:
        kind, payload = sent
        rec = self.recorded
        candidates = list(enumerate(rec))[self._cursor :] or list(enumerate(rec))
        best = None
        for i, m in candidates:
            diff = self.matcher.difference(sent, m)
            if diff is not None and (best is None or (m.type == kind and best[1].type != kind)):
                best = (i, m, diff)
            if best is not None and best[1].type == kind and not best[2].endswith("only sent"):
                break
        shown = payload.decode("utf-8", "replace") if kind == "text" else f"<{len(payload)} bytes>"
        if len(shown) > 200:
            shown = shown[:197] + "..."
        text = (
            f"ssemock: {self.where}, interaction #{self.index} ({self.interaction.request.url}): the client sent "
            f"a {kind} message that matches no message the recorded client sent next: {shown}"
        )
        skip = ""
        if best is not None:
            i, m, diff = best
            text += f"\n  closest recorded: client message #{i}: {recorded_excerpt(m)}\n  differs at {diff}"
            skip = skip_hint(diff)
        elif self._cursor >= len(rec):
            text += f"\n  the recorded client sent {len(rec)} messages, and all were matched already"
        text += f"\n  Send what the recording sent{skip}, or record the session again"
        self.mismatches.append(text)
        self._failed = True
        return UnmatchedMessageError(text)

    def gone(self) -> None:
        """The client's connection went away (closed or not): it holds its group back no more."""
        with self._hold():
            self._close()

    def close_for_mismatch(self) -> list[Release]:
        """What the server does after a mismatch: close 1008, then EOF."""
        with self._hold():
            self._close()
        return [
            Release(0.0, encode_frame(Opcode.CLOSE, close_payload(1008, "ssemock: unmatched message"))),
            Release(0.0, None),
        ]

    def unsent(self) -> list[Message]:
        """The recording's client messages this client has not sent (reported at teardown)."""
        if self.routes is not None:
            return [m for m, done in zip(self.recorded, self.routes.matched) if not done]
        return self.recorded[self._cursor :]
