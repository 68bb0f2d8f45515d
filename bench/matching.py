"""Per-request cost of replaying a cassette of N interactions (N = 10, 100, 300, 1000).

    python bench/matching.py [--cpu]      # --cpu: CPU time instead of wall time

Each request matches a different interaction (same method and host, its own path and JSON
body), through one httpx client built before the timing starts. Matching is indexed
(ssemock.plan.selection), so the cost per request stays flat as N grows; the ratio printed is
per-request time at N against N = 10, measured in the same run (target: flat, <= 1.3x at
N = 1000; an O(N) scan per request would make it ~100x).
"""

from __future__ import annotations

import gc
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[1] / "src")]

import httpx  # noqa: E402

import ssemock  # noqa: E402

SIZES = (10, 100, 300, 1000)


def per_request(n: int, clock: Callable[[], float] = time.perf_counter) -> float:
    """Seconds per request to replay every interaction of an N-interaction cassette once."""
    cassette = ssemock.Cassette()
    for i in range(n):
        cassette.add("POST", f"https://api.example.test/v1/chat/{i}", [b"data: x\n\n"], request_json={"i": i})
    with ssemock.replay(cassette), httpx.Client() as client:
        gc.collect()
        gc.disable()
        try:
            t0 = clock()
            for i in range(n):
                client.post(f"https://api.example.test/v1/chat/{i}", json={"i": i})
            return (clock() - t0) / n
        finally:
            gc.enable()


def curve(
    sizes: tuple[int, ...] = SIZES, rounds: int = 5, clock: Callable[[], float] = time.perf_counter
) -> dict[int, float]:
    """Median seconds per request at each N (``rounds`` interleaved rounds, timed by ``clock``)."""
    per_request(sizes[0])  # warm-up
    times: dict[int, list[float]] = {n: [] for n in sizes}
    for _ in range(rounds):
        for n in sizes:
            times[n].append(per_request(n, clock))
    return {n: statistics.median(t) for n, t in times.items()}


def main() -> None:
    result = curve(clock=time.process_time if "--cpu" in sys.argv else time.perf_counter)
    base = result[SIZES[0]]
    print(f"{'N':>6} {'us/request':>12} {'vs N=10':>8}")
    for n, t in result.items():
        print(f"{n:>6} {t * 1e6:>12.0f} {t / base:>7.2f}x")


if __name__ == "__main__":
    main()
