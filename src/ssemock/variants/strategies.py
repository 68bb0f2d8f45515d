"""Finding the chunk boundaries a decoder breaks on: a hypothesis strategy and a split minimiser.

The implementation of [`ssemock.strategies`][ssemock.strategies], where its public names are documented.

Its parts: the draws of chunk boundaries (`ssemock.variants.boundary_draws`), the draws of whole
variants (`ssemock.variants.variant_draws`) and the split minimiser
(`ssemock.variants.split_minimiser`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ..core.extras import require
from ..store.cassette import Cassette
from . import chunking as _chunking
from . import transforms as _transforms
from .boundary_draws import BUFFER_SIZES, HAZARDS, chunkings, classify, hazards
from .chunking import At, Chunking, at
from .split_minimiser import MinimalSplit, describe_boundary, minimal_failing_split

if TYPE_CHECKING:
    from hypothesis.strategies import SearchStrategy
from .variant_draws import FAULTS, Space, Tables, Variant, transform_pool
from .variant_draws import variants as _http_variants
from .ws_draws import WsSpace, WsTables, has_websocket

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


def variants(
    cassette: Cassette,
    *,
    transforms: str | Sequence[str | _transforms.Transform] | None = "network",
    faults: bool | str | Sequence[str] = False,
    max_boundaries: int = 6,
) -> SearchStrategy[Variant]:
    if not has_websocket(cassette):
        return _http_variants(cassette, transforms=transforms, faults=faults, max_boundaries=max_boundaries)
    require("hypothesis", "explore", "ssemock.strategies.variants")
    from hypothesis import strategies as st

    space = WsSpace(
        WsTables(cassette),
        transforms=transforms
        if isinstance(transforms, str) or transforms is None
        else [str(t) for t in transforms],
        faults=faults,
        max_boundaries=max_boundaries,
    )

    @st.composite
    def draw(draw: Callable[..., Any]) -> Variant:
        return space.draw(lambda lo, hi: draw(st.integers(lo, hi)))

    return draw()


variants.__doc__ = (
    (_http_variants.__doc__ or "")
    + """
    On a cassette holding a WebSocket session, the variants are the session's
    (`ssemock.variants.ws_draws`): read boundaries in the server's wire (an ``at:`` chunking whose
    offsets count from the session's first byte after the 101 head), the re-framings
    ``fragments:2``, ``fragments:3`` and ``pings``, and WebSocket faults when ``faults`` is True
    or names them."""
)
