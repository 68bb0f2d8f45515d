"""Timing policies: when each replayed chunk is delivered."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Timing", "get", "instant", "recorded", "scaled"]


@dataclass(frozen=True)
class Timing:
    """``factor`` scales the recorded arrival times; ``None`` delivers every chunk at once."""

    name: str
    factor: float | None

    def at(self, recorded_s: float) -> float | None:
        """When (seconds after the request) a chunk recorded at ``recorded_s`` is due."""
        return None if self.factor is None else recorded_s * self.factor

    def __str__(self) -> str:
        return self.name


instant = Timing("instant", None)
recorded = Timing("recorded", 1.0)


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
