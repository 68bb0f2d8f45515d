"""Decoding AWS eventstream bodies: ssemock.framing.eventstream against botocore's own
EventStreamBuffer (the baseline, measured in the same run), whole and fed in small chunks, and
the frame boundaries (frame_ends, used by per_event and the after_event faults).

A Bedrock-like body of ~7 MB: 40,000 contentBlockDelta frames of ~170 bytes.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from botocore.eventstream import EventStreamBuffer

import ssemock
from ssemock.framing import eventstream
from ssemock.protocols import bedrock

FRAME = bedrock.frame(
    "contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "token 世界 "}, "p": "abcdef"}
)
BODY = FRAME * 40_000


def ours(chunks: list[bytes]) -> int:
    return len(eventstream.decode(chunks))


def botocore(chunks: list[bytes]) -> int:
    buffer, n = EventStreamBuffer(), 0
    for chunk in chunks:
        buffer.add_data(chunk)
        n += sum(1 for _ in buffer)
    return n


def best(fn: Callable[[list[bytes]], int], chunks: list[bytes]) -> float:
    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        assert fn(chunks) == 40_000
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    print(f"body: {len(BODY) / 1e6:.1f} MB, {len(BODY) // len(FRAME)} frames")
    print(f"{'chunking':>12} {'ssemock s':>10} {'botocore s':>11} {'ratio':>7}")
    for name in ("coalesced", "fixed:64", "random:7"):
        chunks = ssemock.chunking.get(name)(BODY)
        a, b = best(ours, chunks), best(botocore, chunks)
        print(f"{name:>12} {a:>10.3f} {b:>11.3f} {a / b:>6.2f}x")
    t0 = time.perf_counter()
    ends = eventstream.frame_ends(BODY)
    print(f"frame_ends: {len(ends)} frames in {(time.perf_counter() - t0) * 1000:.1f} ms")


if __name__ == "__main__":
    main()
