"""Re-framings of a WebSocket session: the server's messages written as other frames, the
messages unchanged. Pure: messages in, wire bytes and their frame boundaries out.

``as_recorded``
    one frame per message (or the recorded fragmentation, which the replay passes in).
``fragments:N``
    each message in N frames (a text frame, then continuation frames), with a fragment
    boundary inside a multi-byte character wherever the message has one.
``pings``
    a ping before every frame after the first of each group (so between frames and between
    fragments); the client must answer each with a pong carrying its payload (`Wire.pings`):
    a replay reports the pings never answered when the player stops
    (`ssemock.plan.websocket.variants.VariedConversation.unanswered_pings`).
``deflate`` / ``no_deflate``
    permessage-deflate agreed in the replay's handshake whenever the client offers it, every
    message compressed / the extension refused in the handshake, no message compressed.
    ``deflate`` needs a client that offered permessage-deflate (`Reframing.refuses` says why
    not: the openai SDK offers none by default; under pytest the run is skipped with that
    reason). Without either, a replay agrees to it as the recording did
    (`ssemock.plan.conversation.Conversation.handshake`).

A session is written group by group (`ServerMessage.group`: the client message it waits for),
so `Wire.group_ends` says where each group's bytes end: the read boundaries a replay keeps.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from ...core.names import unknown
from ...framing.websocket import Deflater, Opcode, close_payload, encode_frame

__all__ = [
    "ALL",
    "FrameSpan",
    "Reframing",
    "ServerMessage",
    "Wire",
    "encode",
    "fragment_offsets",
    "get",
    "resolve",
]


@dataclass(frozen=True)
class ServerMessage:
    """One message the server sends: ``TEXT`` or ``BINARY``, the whole (decompressed) data, the
    group it belongs to, and its recorded fragment offsets (``()``: one frame)."""

    opcode: Opcode
    """``Opcode.TEXT`` or ``Opcode.BINARY``."""
    data: bytes
    """The whole message, uncompressed (text as UTF-8)."""
    group: int = 0
    """How many client messages precede it: it is sent once the client has sent that many."""
    fragments: tuple[int, ...] = ()
    """Where the recording split its payload into frames (``()``: one frame)."""
    lane: str | None = None
    """Its lane in a session that multiplexes responses (None: the default lane, or none)."""
    lane_group: int = 0
    """How many client messages of its lane precede it (`ssemock.plan.websocket.lanes`)."""


@dataclass(frozen=True)
class FrameSpan:
    """Where one frame sits in the wire: ``[start, end)``, its payload from ``body``; the data
    message it carries part of (None: a control frame)."""

    start: int
    body: int
    end: int
    opcode: Opcode
    fin: bool
    rsv1: bool
    message: int | None


@dataclass
class Wire:
    """A session written as bytes: the frames, where each message and group ends, the pings sent."""

    data: bytes = b""
    frames: list[FrameSpan] = field(default_factory=list)
    message_ends: list[int] = field(default_factory=list)
    group_ends: list[int] = field(default_factory=list)
    pings: list[bytes] = field(default_factory=list)


@dataclass(frozen=True)
class Reframing:
    """How a session's messages become frames (see the module)."""

    name: str
    fragments: int = 0  # 0: as recorded
    pings: bool = False
    deflate: bool | None = None  # None: as agreed; True: every message; False: none

    def refuses(self, offered_deflate: bool) -> str | None:
        """Why it cannot run against a client, or None."""
        if self.deflate and not offered_deflate:
            return (
                "the client offered no permessage-deflate, so a compressed frame would be a protocol "
                "error (the openai SDK offers none by default; websockets and aiohttp(compress=15) do)"
            )
        return None

    def __str__(self) -> str:
        return self.name


as_recorded = Reframing("as_recorded")
pings = Reframing("pings", pings=True)
deflate = Reframing("deflate", deflate=True)
no_deflate = Reframing("no_deflate", deflate=False)


def fragments(n: int) -> Reframing:
    """Each message in ``n`` frames (fewer when it has fewer bytes)."""
    if type(n) is not int or n < 2:
        raise ValueError(f"fragments:N needs a whole number N >= 2, got {n!r}")
    return Reframing(f"fragments:{n}", fragments=n)


ALL: tuple[Reframing, ...] = (as_recorded, fragments(3), pings, deflate, no_deflate)
"""What a re-framing matrix runs."""
_NAMED = {r.name: r for r in (as_recorded, pings, deflate, no_deflate)}
_SHOWN = [*_NAMED, "fragments:N"]


def get(name: str | Reframing) -> Reframing:
    """A re-framing from its name: ``fragments:3``, ``pings``, ``deflate``, ``no_deflate``; several
    at once joined with ``+`` (``fragments:3+pings``)."""
    if isinstance(name, Reframing):
        return name
    parts = [p.strip() for p in name.split("+") if p.strip()]
    if len(parts) > 1:
        each = [get(p) for p in parts]
        flags = [r.deflate for r in each if r.deflate is not None]
        if len(set(flags)) > 1:
            raise ValueError(f"bad re-framing {name!r}: deflate and no_deflate together")
        return Reframing(
            "+".join(r.name for r in each),
            fragments=max(r.fragments for r in each),
            pings=any(r.pings for r in each),
            deflate=flags[0] if flags else None,
        )
    head, sep, rest = name.strip().partition(":")
    if head in _NAMED and not sep:
        return _NAMED[head]
    if head == "fragments":
        try:
            return fragments(int(rest))
        except ValueError:
            raise ValueError(f"bad re-framing {name!r}: written fragments:N with N >= 2") from None
    raise unknown("re-framing", name, [*_NAMED, "fragments"], shown=_SHOWN, head=head)


def resolve(spec: str | Reframing | Iterable[str | Reframing] | None) -> list[Reframing]:
    """Re-framings from ``"all"``, a name, a comma list or a list (None: as recorded)."""
    if not spec:
        return [as_recorded]
    if isinstance(spec, Reframing):
        return [spec]
    if isinstance(spec, str):
        return list(ALL) if spec.strip() == "all" else [get(p) for p in spec.split(",") if p.strip()]
    return [r for item in spec for r in resolve(item)]


_INSIDE_CHAR = re.compile(rb"[\xc0-\xff](?=[\x80-\xbf])")


def fragment_offsets(payload: bytes, n: int, text: bool) -> list[int]:
    """Where to cut ``payload`` into ``n`` fragments: evenly, with one cut moved inside the first
    multi-byte character of a text payload where it has one."""
    size = len(payload)
    cuts = {size * k // n for k in range(1, n)} - {0, size}
    found = _INSIDE_CHAR.search(payload) if text else None
    if found is not None and not any(_inside(payload, c) for c in cuts):
        nearest = min(cuts, key=lambda c: abs(c - found.end()), default=None)
        cuts.discard(nearest)
        cuts.add(found.end())
    return sorted(cuts)


def _inside(payload: bytes, cut: int) -> bool:
    return 0 < cut < len(payload) and 0x80 <= payload[cut] < 0xC0


def encode(
    messages: Sequence[ServerMessage],
    reframing: Reframing | str = as_recorded,
    *,
    agreed_deflate: bool = False,
    no_context_takeover: bool = False,
    max_window_bits: int = 15,
    close: tuple[int | None, str] | None = None,
    ping_payload: str = "ssemock-ping-{}",
) -> Wire:
    """The server's wire for ``messages`` under ``reframing``; ``agreed_deflate``: the handshake
    agreed permessage-deflate (what ``as_recorded`` then does), with ``no_context_takeover`` and
    ``max_window_bits`` as it agreed them for the server; ``close``: a close frame to end
    with, ``(code, reason)``, code None for an empty close (the client reports 1005)."""
    reframing = get(reframing)
    compress = agreed_deflate if reframing.deflate is None else reframing.deflate
    deflater = (
        Deflater(no_context_takeover=no_context_takeover, max_window_bits=max_window_bits)
        if compress
        else None
    )
    wire = Wire()
    out = bytearray()
    group = messages[0].group if messages else 0

    def frame(op: Opcode, payload: bytes, fin: bool, rsv1: bool, message: int | None) -> None:
        start = len(out)
        out.extend(encode_frame(op, payload, fin=fin, rsv1=rsv1))
        wire.frames.append(FrameSpan(start, len(out) - len(payload), len(out), op, fin, rsv1, message))

    first_in_group = True
    for index, message in enumerate(messages):
        if message.group != group:
            wire.group_ends.append(len(out))
            group, first_in_group = message.group, True
        payload = deflater.compress(message.data) if deflater is not None else message.data
        if reframing.fragments:
            cuts = fragment_offsets(
                payload, reframing.fragments, message.opcode == Opcode.TEXT and not compress
            )
        else:
            cuts = [c for c in message.fragments if 0 < c < len(payload)] if not compress else []
        bounds = [0, *cuts, len(payload)]
        for k, (a, b) in enumerate(zip(bounds, bounds[1:])):
            if reframing.pings and not first_in_group:
                ping = ping_payload.format(len(wire.pings)).encode()
                wire.pings.append(ping)
                frame(Opcode.PING, ping, True, False, None)
            first_in_group = False
            op = message.opcode if k == 0 else Opcode.CONTINUATION
            frame(op, payload[a:b], k == len(bounds) - 2, deflater is not None and k == 0, index)
        wire.message_ends.append(len(out))
    if close is not None:
        code, reason = close
        frame(Opcode.CLOSE, close_payload(code, reason), True, False, None)
    wire.data = bytes(out)
    wire.group_ends.append(len(out))
    return wire
