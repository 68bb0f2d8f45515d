"""Timing accuracy: how closely timing="recorded" / scaled(f) reproduce the recorded arrival times.

    python bench/timing.py

Replays a cassette with 40 chunks at known times (gaps of 5-60 ms) through httpx, sync and async,
and prints the median and 95th-percentile error of each chunk's arrival against its due time
(target: median error under 2 ms at scale 1.0).
"""

from __future__ import annotations

import asyncio
import random
import statistics
import time

import httpx

import ssemock

URL = "https://bench.test/stream"


def cassette() -> tuple[ssemock.Cassette, list[float]]:
    rng = random.Random(3)
    times, t = [], 0.02
    for _ in range(40):
        times.append(round(t, 4))
        t += rng.uniform(0.005, 0.06)
    c = ssemock.Cassette()
    c.add("GET", URL, [f"data: {i}\n\n".encode() for i in range(len(times))], times=times)
    return c, times


def sync_arrivals(c: ssemock.Cassette, timing: str) -> list[float]:
    with ssemock.replay(c, timing=timing), httpx.Client() as client:
        start = time.monotonic()
        with client.stream("GET", URL) as r:
            return [time.monotonic() - start for _ in r.iter_raw()]


def async_arrivals(c: ssemock.Cassette, timing: str) -> list[float]:
    async def run() -> list[float]:
        async with httpx.AsyncClient() as client:
            start = time.monotonic()
            async with client.stream("GET", URL) as r:
                return [time.monotonic() - start async for _ in r.aiter_raw()]

    with ssemock.replay(c, timing=timing):
        return asyncio.run(run())


def measure(
    timings: tuple[tuple[str, float], ...] = (("recorded", 1.0), ("scaled:0.5", 0.5), ("scaled:2", 2.0)),
) -> list[tuple[str, str, float, float]]:
    """(timing, client, median error ms, p95 error ms) of every chunk's arrival against its due time."""
    c, times = cassette()
    rows = []
    for timing, factor in timings:
        for name, arrivals in (("sync", sync_arrivals), ("async", async_arrivals)):
            errors = [abs(got - due * factor) * 1e3 for got, due in zip(arrivals(c, timing), times)]
            rows.append(
                (timing, name, statistics.median(errors), sorted(errors)[int(len(errors) * 0.95) - 1])
            )
    return rows


def main() -> None:
    print(
        f"{'timing':12s} {'client':6s} {'median error':>13s} {'p95 error':>10s}  (target: median < 2 ms at 1.0)"
    )
    for timing, name, median, p95 in measure():
        print(f"{timing:12s} {name:6s} {median:10.2f} ms {p95:7.2f} ms")


if __name__ == "__main__":
    main()
