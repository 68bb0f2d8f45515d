"""The HTTP/2 DATA frames a replayed gRPC call sends (``ssemock serve``): its received messages
framed (`ssemock.framing.grpc.frame_all`), cut by a wire chunking (`ssemock.variants.grpc.chunking`),
each frame with when it is due and how many of the client's messages must have come before it.

Pure: the server's protocol sends what this plans. A frame never spans two groups: the messages
the server sent between two of the client's (a bidirectional call's turns), or, when the replay
keeps time, two messages (each waits its own recorded gap)."""

from __future__ import annotations

import bisect
from dataclasses import dataclass

from ...framing.grpc import frame
from ...store.grpc import GrpcCall
from ...variants.chunking import Chunking, as_recorded
from ...variants.grpc.chunking import group_ends

__all__ = ["WireFrame", "wire_frames"]


@dataclass(frozen=True)
class WireFrame:
    """One DATA frame of the response."""

    data: bytes
    """The frame's bytes (a cut anywhere in the framed messages)."""
    after_sends: int
    """How many of the client's messages come before it (a bidirectional call's turn)."""
    t: float
    """When it was recorded (seconds since the call started): the recorded DATA frame it ends
    in, else the message it ends in."""
    messages: int
    """How many whole messages the client holds once it has this frame."""


def wire_frames(
    call: GrpcCall, chunking: Chunking, *, timed: bool = False, upto: int | None = None
) -> list[WireFrame]:
    """The DATA frames of ``call``'s response under ``chunking``; ``timed``: every message is a
    group of its own (the replay sleeps the recorded gaps between them); ``upto``: only the first
    ``upto`` received messages (a fault ends the call after them)."""
    parts: list[bytes] = []
    ends: list[int] = []
    sends_before: list[int] = []
    times: list[float] = []
    sends = size = 0
    for message in call.messages:
        if message.direction == "send":
            sends += 1
            continue
        if upto is not None and len(ends) >= upto:
            break
        parts.append(frame(message.data))
        size += len(parts[-1])
        ends.append(size)
        sends_before.append(sends)
        times.append(message.t)
    wire = b"".join(parts)
    if not wire:
        return []
    groups = [
        end
        for k, end in enumerate(ends)
        if timed or k + 1 == len(ends) or sends_before[k + 1] != sends_before[k]
    ]
    recorded_ends = call.wire.ends if call.wire.ends and call.wire.ends[-1] >= len(wire) else ends
    recorded = [e for e in recorded_ends if e < len(wire)] + [len(wire)]
    out, start = [], 0
    for end in group_ends(chunking, wire, groups, recorded):
        k = min(bisect.bisect_left(ends, end), len(ends) - 1)  # the message the frame ends in
        t = times[k]
        if chunking is as_recorded and call.wire.times and recorded_ends is call.wire.ends:
            t = call.wire.times[min(bisect.bisect_left(call.wire.ends, end), len(call.wire.times) - 1)]
        out.append(WireFrame(wire[start:end], sends_before[k], t, bisect.bisect_right(ends, end)))
        start = end
    return out
