"""Timing policies: when each replayed chunk is delivered.

The implementation of [`ssemock.timing`][ssemock.timing], where its public names are documented."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass

from ..framing.accelerator import longest_gap as _longest_gap

__all__ = ["Clock", "Timing", "clock", "get", "instant", "longest_silence", "recorded", "scaled"]


@dataclass(frozen=True)
class Timing:
    """``factor`` scales the recorded arrival times; ``None`` delivers every chunk at once."""

    name: str
    """The name `timing=` accepts."""
    factor: float | None
    """What the recorded arrival times are multiplied by (`None`: every chunk at once)."""

    def at(self, recorded_s: float) -> float | None:
        """When (seconds after the request) a chunk recorded at ``recorded_s`` is due."""
        return None if self.factor is None else recorded_s * self.factor

    def __str__(self) -> str:
        return self.name


instant = Timing("instant", None)
"""Every chunk at once, no waiting (the default)."""
recorded = Timing("recorded", 1.0)
"""Chunks at their recorded arrival times."""


def scaled(factor: float) -> Timing:
    """Recorded gaps multiplied by ``factor`` (0.1 = ten times faster)."""
    if not factor >= 0 or factor == float("inf"):  # also NaN
        raise ValueError(f"scaled() needs a finite factor >= 0, got {factor}")
    return Timing(f"scaled:{factor:g}", float(factor))


def get(spec: str | float | Timing | None) -> Timing:
    """A policy from ``"instant"``, ``"recorded"``, ``"scaled:0.5"`` or a number (a scale)."""
    if spec is None:
        return instant
    if isinstance(spec, Timing):
        return spec
    if isinstance(spec, (int, float)):
        return scaled(spec)
    if spec in ("instant", "recorded"):
        return instant if spec == "instant" else recorded
    head, _, rest = spec.partition(":")
    if head == "scaled" and rest:
        try:
            return scaled(float(rest))
        except ValueError:
            pass
    raise ValueError(f"unknown timing {spec!r}; known: instant, recorded, scaled:FACTOR")


def longest_silence(times: Sequence[float]) -> tuple[float, int] | None:
    """The longest recorded silence of a stream and the chunk it ended at: ``(seconds, index)``
    (before the first chunk: from the request), None for no chunks. What ``instant`` skips,
    and what a client's read (idle) timeout is measured against."""
    if _longest_gap is not None and type(times) is list and times:
        found = _longest_gap(times)  # the same, in C (None: an item is not a float)
        if found is not None:
            return found
    best: tuple[float, int] | None = None
    last = 0.0
    for index, at in enumerate(times):
        if best is None or at - last > best[0]:
            best = (at - last, index)
        last = at
    return best


class Clock:
    """What a replay paces its chunks by: a monotonic ``now()`` and sleeps, sync and async.

    Replay reads the module's [`clock`][ssemock.timing.clock]; a test of timing behaviour swaps in a fake one
    (``monkeypatch.setattr(ssemock.timing, "clock", fake)``) and asserts what was slept, never
    how long the test took.
    """

    def now(self) -> float:
        """Seconds on a monotonic clock."""
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        """Block the thread for ``seconds``."""
        time.sleep(seconds)

    async def asleep(self, seconds: float) -> None:
        """Wait ``seconds`` on the running event loop (asyncio, or trio through anyio)."""
        try:
            await asyncio.sleep(seconds)
        except RuntimeError:  # not asyncio: trio through anyio
            import anyio

            await anyio.sleep(seconds)


clock = Clock()
"""The clock every replay paces by."""
