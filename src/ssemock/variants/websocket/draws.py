"""Draws of whole variants of a cassette's WebSocket sessions (issue 35): read boundaries in the
server's wire (`wire_hazards` favoured), re-framings (`REFRAMINGS`), and WebSocket faults when
asked (`WS_FAULTS`), each a `Variant` as for HTTP (an ``at:`` chunking whose offsets count from the
first byte of a session's wire, re-framings among its transforms, a WebSocket fault). `WsSpace.draw`
takes the same chooser as `ssemock.variants.variant_draws.Space.draw`: hypothesis's (`variants`
dispatches a cassette holding a session here) or explore's seeded ``random.Random``."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ...framing.websocket import Opcode
from ...store.cassette import Cassette, Interaction
from .. import faults as _faults
from .. import transforms as _transforms
from ..chunking import at
from ..variant_draws import Variant, draw_cuts, fault_names
from . import frames as ws_frames
from .chunking import frames_of, text_payloads

__all__ = [
    "HAZARDS",
    "REFRAMINGS",
    "WS_FAULTS",
    "WsSpace",
    "WsTables",
    "has_websocket",
    "server_wire",
    "wire_hazards",
]

REFRAMINGS = ("fragments:2", "fragments:3", "pings")
"""The re-framings explore draws (``deflate`` is left out: most clients offer no
permessage-deflate, and a variant the client cannot take would be no finding)."""

WS_FAULTS = (
    "close:code=1011,after_message=1",
    "close:code=1001,after_message=1",
    "close:code=1005,after_message=1",
    "drop:after_message=1",
    "drop:after_byte=5",
    "error_event:after_message=1",
)
"""The WebSocket faults explore draws with ``explore_faults=True``, simplest first."""

HAZARDS = ("frame header", "inside a character", "frame end")
"""The hazard classes of a server wire: a cut inside a frame header (after its first byte, inside
an extended length), inside a multi-byte character of a text payload, at a frame's end."""


def has_websocket(cassette: Cassette) -> bool:
    """Whether ``cassette`` holds a WebSocket session."""
    return any(x.websocket is not None for x in cassette.interactions)


def wire_hazards(wire: bytes) -> dict[str, list[int]]:
    """The offsets of ``wire`` (a server's frames) where a cut tends to break a frame reader, by class."""
    found: dict[str, set[int]] = {name: set() for name in HAZARDS}
    for frame, text in text_payloads(frames_of(wire)):
        found["frame header"].add(frame.start + 1)
        if frame.header > 2:
            found["frame header"].add(frame.start + 3)
        body = frame.end - len(frame.payload)
        if text:
            found["inside a character"].update(
                body + i for i, b in enumerate(frame.payload) if i > 0 and 0x80 <= b < 0xC0
            )
        found["frame end"].add(frame.end)
    return {n: sorted(o for o in found[n] if 0 < o < len(wire)) for n in HAZARDS if found[n]}


def server_wire(interaction: Interaction, reframing: str | ws_frames.Reframing = "as_recorded") -> bytes:
    """The frames a session's server sends (after the 101 head) under ``reframing``, written anew
    from its messages (a close frame the server sent last included)."""
    session = interaction.websocket
    if session is None:
        return b""
    gate, messages = 0, []
    for m in session.messages:
        if m.direction == "send":
            gate += 1
        else:
            messages.append(
                ws_frames.ServerMessage(Opcode.TEXT if m.type == "text" else Opcode.BINARY, m.payload, gate)
            )
    close = session.close
    ending = (close.code, close.reason) if close.by == "server" and close.code is not None else None
    return ws_frames.encode(messages, reframing, close=ending).data


class WsTables:
    """The server wire of each session of a cassette under each re-framing chain, and its hazard
    offsets merged over the sessions (the same ``of`` as the HTTP tables)."""

    def __init__(self, cassette: Cassette) -> None:
        self.sessions = [(i, x) for i, x in enumerate(cassette.interactions) if x.websocket is not None]
        self.bodies: list[tuple[bytes, str]] = []
        self._found: dict[tuple[str, ...], tuple[int, dict[str, list[int]]]] = {}

    def wires(self, chain: Sequence[_transforms.Transform]) -> list[bytes]:
        """Each session's server wire under ``chain`` (its re-framings)."""
        name = "+".join(t.name for t in chain if _transforms.WEBSOCKET in t.kinds) or "as_recorded"
        return [server_wire(x, name) for _, x in self.sessions]

    def of(self, chain: Sequence[_transforms.Transform]) -> tuple[int, dict[str, list[int]]]:
        """(the longest wire's size, the hazard offsets by class) under ``chain``."""
        key = tuple(t.name for t in chain)
        if key not in self._found:
            merged: dict[str, set[int]] = {}
            wires = self.wires(chain)
            for wire in wires:
                for name, offsets in wire_hazards(wire).items():
                    merged.setdefault(name, set()).update(offsets)
            size = max((len(w) for w in wires), default=0)
            self._found[key] = size, {n: sorted(merged[n]) for n in HAZARDS if n in merged}
        return self._found[key]


class WsSpace:
    """What variants of a cassette's WebSocket sessions are drawn from: re-framings
    (`REFRAMINGS`, or the WebSocket ones among ``transforms``), faults (`WS_FAULTS` with
    ``faults=True``, or the WebSocket ones named), boundaries in the wire (`wire_hazards`
    favoured). ``draw`` takes the same chooser as [`Space.draw`][ssemock.strategies.Space.draw]."""

    def __init__(
        self,
        tables: WsTables,
        *,
        transforms: str | Sequence[str] | None,
        faults: bool | str | Sequence[str],
        max_boundaries: int,
    ) -> None:
        self.tables = tables
        named = [transforms] if isinstance(transforms, str) else list(transforms or [])
        picked = [
            t for n in named if n.split(":")[0] in ("fragments", "pings") for t in _transforms.resolve(n)
        ]
        self.pool = picked or [_transforms.get(n) for n in REFRAMINGS]
        names = fault_names(faults, WS_FAULTS)
        self.faults = [f for f in (_faults.get(n) for n in names) if f.name.split(":")[0] in _WS_HEADS]
        self.max_boundaries = max_boundaries

    def draw(self, choose: Callable[[int, int], int]) -> Variant:
        """A variant from ``choose(lo, hi)``: smaller numbers, simpler variants."""
        chain: tuple[_transforms.Transform, ...] = ()
        picked = {choose(0, len(self.pool) - 1) for _ in range(choose(0, min(2, len(self.pool))))}
        chain = tuple(self.pool[i] for i in sorted(picked))
        if sum(t.name.startswith("fragments") for t in chain) > 1:  # one fragmentation at a time
            chain = tuple(t for t in chain if not t.name.startswith("fragments"))[:1] or chain[:1]
        fault: _faults.Fault | None = None
        if self.faults and (k := choose(0, len(self.faults))):
            fault = self.faults[k - 1]
        size, found = self.tables.of(chain)
        return Variant(at(*draw_cuts(choose, size, list(found.values()), self.max_boundaries)), chain, fault)


_WS_HEADS = ("close", "drop", "stall", "handshake", "error_event", "sequence")
