"""A WebSocket session's variant made concrete: a fault, a re-framing and a wire chunking applied
to what a socket serves, giving the reads a client meets. Pure (the replay and ``serve`` deliver
the reads; this decides them)."""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

from ..chunking import Chunking
from .chunking import get as get_chunking
from .chunking import group_ends
from .faults import Refusal, Session, WsFault
from .faults import get as get_fault
from .frames import Reframing, Wire, encode

__all__ = ["Read", "Served", "serve"]


@dataclass(frozen=True)
class Read:
    """One read the client makes: its bytes, the group it belongs to (the client message it
    waits for) and the seconds of silence before it (a stall)."""

    data: bytes
    """The bytes this read returns."""
    group: int
    """How many client messages must have been sent before it."""
    wait: float = 0.0
    """Seconds of silence before it (a stall)."""


@dataclass
class Served:
    """What the client meets: a refused handshake, or the reads and how the connection ends
    (``"close"``: the server's close frame is in the reads; ``"eof"``: the connection ends with no
    close frame; ``"recorded"``: as the recording ended). ``pings``: the payloads the client must
    answer; ``wire``: the frames and their offsets (for diagnosis)."""

    reads: list[Read] = field(default_factory=list)
    """The client's reads, in order."""
    ending: str = "recorded"
    """``"close"``, ``"eof"``, ``"recorded"``, or ``"refused"``."""
    refused: Refusal | None = None
    """The HTTP answer to a refused upgrade (then there are no reads)."""
    pings: list[bytes] = field(default_factory=list)
    """The payloads of the pings the client must answer."""
    wire: Wire = field(default_factory=Wire)
    """The frames and where each sits in the bytes (for diagnosis)."""


def serve(
    session: Session,
    *,
    chunking: Chunking | str = "as_recorded",
    reframing: Reframing | str = "as_recorded",
    fault: WsFault | str | None = None,
    attempt: int = 0,
    agreed_deflate: bool = False,
    recorded: list[int] | None = None,
) -> Served:
    """The reads of ``session`` under a variant; ``recorded``: the recorded read ends of its
    wire (``as_recorded``, meaningful only when nothing re-framed it)."""
    if fault is not None:
        session = get_fault(fault).apply(session, attempt)
    if session.refused is not None:
        return Served(ending="refused", refused=session.refused)
    wire = encode(session.messages, reframing, agreed_deflate=agreed_deflate, close=session.close)
    data, groups = wire.data, list(wire.group_ends)
    starts = {
        i: next(f.start for f in wire.frames if f.message == i)
        for i, _ in session.stalls
        if i < len(session.messages)
    }
    cut = session.drop_after_byte
    if cut is not None:
        data = data[: min(cut, len(data))]
    if not data:
        return Served(ending="eof" if session.drop else "close" if session.close else "recorded", wire=wire)
    # a stall is a read boundary: the bytes before it arrive, then nothing for a while
    forced = sorted({*groups, *starts.values()} - {0})
    forced = [f for f in forced if f < len(data)] + [len(data)]
    ends = group_ends(get_chunking(chunking), data, forced, recorded)
    waits = {start: seconds for (i, seconds) in session.stalls if (start := starts.get(i)) is not None}
    # each frame's group: its message's, or (a ping, the close) the next message's, else the last
    last = session.messages[-1].group if session.messages else 0
    frame_groups, following = [], last
    for frame in reversed(wire.frames):
        if frame.message is not None:
            following = session.messages[frame.message].group
        frame_groups.append(following)
    frame_groups.reverse()
    frame_starts = [f.start for f in wire.frames]
    reads, start = [], 0
    for end in ends:
        at = max(0, bisect.bisect_right(frame_starts, start) - 1)
        reads.append(Read(data[start:end], frame_groups[at], waits.get(start, 0.0)))
        start = end
    ending = "eof" if session.drop else "close" if session.close else "recorded"
    return Served(reads, ending, pings=list(wire.pings), wire=wire)
