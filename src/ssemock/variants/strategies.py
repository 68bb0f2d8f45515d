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
from .websocket.draws import WsSpace, WsTables, has_websocket

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
    """A hypothesis strategy of whole variants ([`Variant`][ssemock.strategies.Variant]) of
    ``cassette``'s streams, for ``@given``: ``@given(variant=ssemock.strategies.variants(cassette))``
    then ``with ssemock.replay(cassette, **variant.options()) as player: ...``.

    For HTTP streams: a chain of up to three transforms drawn from ``transforms``
    ([`transform_pool`][ssemock.strategies.transform_pool]: the network set by default), maybe a
    padding last (``pad`` or ``pad:N``, N often chosen to put a CR or a multi-byte character on
    the last byte of a client's 64- or 1024-byte buffer), at most one fault when ``faults`` is True
    ([`FAULTS`][ssemock.strategies.FAULTS]) or names some, then up to ``max_boundaries`` groups of
    boundaries in the transformed body, favouring the [`hazards`][ssemock.strategies.hazards].

    On a cassette holding a WebSocket session, the session's variants
    (`ssemock.variants.websocket.draws`): read boundaries in the server's wire (an ``at:`` chunking whose
    offsets count from the session's first byte after the 101 head; a cut inside a frame header,
    inside a multi-byte character, at a frame's end favoured), the re-framings ``fragments:2``,
    ``fragments:3`` and ``pings``, and WebSocket faults when ``faults`` is True or names them.

    Examples shrink toward fewer boundaries, earlier offsets, fewer transforms, the simplest
    fault."""
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
