"""Timing helpers shared by the benchmark scripts."""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable
from typing import Any


def best(fn: Callable[[], Any], repeat: int) -> float:
    """Best wall time of ``repeat`` calls, with the garbage collector off while timing."""
    times = []
    for _ in range(repeat):
        gc.collect()
        gc.disable()
        try:
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
        finally:
            gc.enable()
    return min(times)


def interleaved(
    fns: dict[str, Callable[[], Any]], rounds: int, clock: Callable[[], float] = time.perf_counter
) -> dict[str, list[float]]:
    """Seconds per function in each of ``rounds`` rounds. Each round runs every function once, in
    an order rotated by one each round, so drift and cache effects hit all alike; the garbage
    collector is off while timing."""
    names = list(fns)
    times: dict[str, list[float]] = {name: [] for name in names}
    for r in range(rounds):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            gc.collect()
            gc.disable()
            try:
                start = clock()
                fns[name]()
                times[name].append(clock() - start)
            finally:
                gc.enable()
    return times


def median_interleaved(
    fns: dict[str, Callable[[], Any]], rounds: int, clock: Callable[[], float] = time.perf_counter
) -> dict[str, float]:
    """Median seconds per function over ``rounds`` interleaved rounds (`interleaved`)."""
    return {name: statistics.median(t) for name, t in interleaved(fns, rounds, clock).items()}


def paired_ratio(times: dict[str, list[float]], mine: str, peer: str) -> float:
    """The median over rounds of ``mine``'s time / ``peer``'s in the same round (`interleaved`;
    the two next to each other in its order). A shared machine slows down for seconds at a time:
    one such spell over the rounds of one contestant but not of its peer moved the ratio of the
    two medians by 30%; within a round the two run a fraction of a second apart, so a spell slows
    both alike."""
    return statistics.median(a / b for a, b in zip(times[mine], times[peer], strict=True))
