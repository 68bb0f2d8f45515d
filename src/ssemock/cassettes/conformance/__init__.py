"""A conformance corpus for Server-Sent Events client authors.

The implementation of [`ssemock.conformance`][ssemock.conformance], where its public names are documented."""

from __future__ import annotations

from collections.abc import Iterable

from ...core.packages import fresh
from .case import DEFAULT_CHUNKINGS, Case, ChunkingSpec, ConformanceError
from .compare import DecodeFn, normalize
from .corpus import _build

__all__ = [
    "DEFAULT_CHUNKINGS",
    "Case",
    "ChunkingSpec",
    "ConformanceError",
    "DecodeFn",
    "cases",
    "cases_by_name",
    "failures",
    "normalize",
]


_CASES: tuple[Case, ...] = ()


def cases() -> list[Case]:
    """Every conformance case, in a stable order."""
    global _CASES
    if not _CASES:
        _CASES = tuple(_build())
    return list(_CASES)


def cases_by_name() -> dict[str, Case]:
    """The cases keyed by name."""
    return {c.name: c for c in cases()}


def failures(
    decode_fn: DecodeFn,
    chunkings: Iterable[ChunkingSpec] | ChunkingSpec | None = None,
    only: Iterable[str] | None = None,
) -> dict[str, ConformanceError]:
    """Run every case (or the named ones); the errors of those that fail, by case name."""
    wanted = None if only is None else set(only)
    out: dict[str, ConformanceError] = {}
    for case in cases():
        if wanted is not None and case.name not in wanted:
            continue
        try:
            case.check(decode_fn, chunkings)
        except ConformanceError as exc:
            out[case.name] = exc
    return out


fresh(__name__)  # submodules read from sys.modules (pytester's in-process reruns drop them)
