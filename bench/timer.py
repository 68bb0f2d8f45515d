"""Timing helper shared by the benchmark scripts."""

from __future__ import annotations

import gc
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
