"""Finding the chunk boundaries a decoder breaks on: a hypothesis strategy and a split minimiser.

The implementation of [`ssemock.strategies`][ssemock.strategies], where its public names are documented.

Its parts: the draws of chunk boundaries (`ssemock.variants.boundary_draws`), the draws of whole
variants (`ssemock.variants.variant_draws`) and the split minimiser
(`ssemock.variants.split_minimiser`)."""

from __future__ import annotations

from . import chunking as _chunking
from .boundary_draws import BUFFER_SIZES, HAZARDS, chunkings, classify, hazards
from .chunking import At, Chunking, at
from .split_minimiser import MinimalSplit, describe_boundary, minimal_failing_split
from .variant_draws import FAULTS, Space, Tables, Variant, transform_pool, variants

__all__ = [
    "BUFFER_SIZES",
    "FAULTS",
    "HAZARDS",
    "At",
    "MinimalSplit",
    "Variant",
    "at",
    "chunkings",
    "classify",
    "Space",
    "Tables",
    "describe_boundary",
    "get",
    "hazards",
    "minimal_failing_split",
    "transform_pool",
    "variants",
]


def get(name: str | Chunking) -> Chunking:
    """The same as [`ssemock.chunking.get`][ssemock.chunking.get] (which parses ``"at:17,1043"`` too)."""
    return _chunking.get(name)
