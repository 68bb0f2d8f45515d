"""Benchmark: the decoders stay linear in the size of one huge event or line, however it is cut.

Plain script: ``python bench/linearity.py``. Each case decodes a small and a large body (the
large one N times the bytes) and prints the time ratio large / small beside N: a linear decoder
shows about N, a decoder that re-scans its growing buffer at every chunk about N squared. These
were timed assertions in the test suite; a timing belongs here, where a loaded machine cannot fail
a test run (the tests keep the results' correctness).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[1] / "src")]

from ssemock import ndjson  # noqa: E402
from ssemock.sse import Decoder  # noqa: E402


def _feed_each(chunks: list[bytes]) -> int:
    decoder = Decoder()
    events = [event for chunk in chunks for event in decoder.feed(chunk)] + decoder.close()
    return len(events[0].data)


def _ndjson(chunks: list[bytes]) -> int:
    (value,) = ndjson.decode(chunks)
    return len(value["s"])  # type: ignore[index]


def _cut(body: bytes, size: int) -> list[bytes]:
    return [body[i : i + size] for i in range(0, len(body), size)]


CASES: list[tuple[str, Callable[[int], list[bytes]], Callable[[list[bytes]], int], int, int]] = [
    (
        "sse: one event, 64 KiB chunks",
        lambda n: _cut(b"data: " + b"x" * n + b"\n\n", 65536),
        _feed_each,
        1 << 20,
        64 << 20,
    ),
    (
        "sse: one line, 16-byte chunks",
        lambda n: _cut(b"data: " + b"y" * n + b"\n\n", 16),
        _feed_each,
        1 << 16,
        1 << 20,
    ),
    (
        "ndjson: one line, 1 KiB chunks",
        lambda n: _cut(b'{"s":"' + b"x" * n + b'"}\n', 1024),
        _ndjson,
        1 << 18,
        1 << 24,
    ),
]


def best_of(
    make: Callable[[int], list[bytes]], run: Callable[[list[bytes]], int], size: int, rounds: int = 3
) -> float:
    chunks = make(size)
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        assert run(chunks) == size
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    print(f"{'case':34} {'bytes x':>8} {'time x':>8}  (linear: time x ~ bytes x; quadratic: its square)")
    for name, make, run, small, big in CASES:
        ratio = best_of(make, run, big) / best_of(make, run, small)
        print(f"{name:34} {big // small:>8} {ratio:>8.1f}")


if __name__ == "__main__":
    main()
