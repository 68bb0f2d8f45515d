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


def median_interleaved(
    fns: dict[str, Callable[[], Any]], rounds: int, clock: Callable[[], float] = time.perf_counter
) -> dict[str, float]:
    """Median seconds per function over ``rounds`` rounds. Each round runs every function once,
    in an order rotated by one each round, so drift and cache effects hit all alike; the garbage
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
    return {name: statistics.median(t) for name, t in times.items()}
