"""``ssemock rechunk``: a new boundary map (and body, with transforms) from any strategy."""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..store.cassette import (
    Cassette,
    Response,
)
from ..variants.chunking import Chunking
from ..variants.transforms import Transform
from ..variants.transforms import apply as apply_transforms
from .decoding import stream_kind


@dataclass
class Rechunked:
    """How one interaction was re-chunked."""

    index: int
    before: int  # chunks before
    after: int  # chunks after
    body_before: int
    body_after: int
    transformed: bool
    note: str | None = None
    chunks: list[tuple[float, bytes]] = field(default_factory=list)  # (time s, bytes), for --preview


def rechunk_response(
    response: Response, chunking: Chunking, transforms: Sequence[Transform] = ()
) -> tuple[Response, str | None]:
    """A new response cut by ``chunking`` (after ``transforms``, for SSE bodies).

    A new chunk's time is the recorded time of the chunk that held its last byte.
    """
    body, ends, times = response.body, list(response.ends), list(response.times)
    note = None
    if transforms:
        if stream_kind(response.header("content-type"), body) == "sse":
            body, ends = apply_transforms(transforms, body, ends)
        else:
            note = "transforms apply to text/event-stream bodies only: left as it is"
    recorded = sorted({e for e in ends if 0 < e <= len(body)})
    new_ends = chunking.ends(body, recorded, content_type=response.header("content-type"))
    new_times = []
    for e in new_ends:
        k = bisect.bisect_left(ends, e)  # the first old chunk whose (carried) end covers byte e-1
        new_times.append(times[min(k, len(times) - 1)] if times else 0.0)
    return Response(
        response.status, list(response.headers), body, new_ends, new_times, response.complete, response.error
    ), note


def rechunk(
    cassette: Cassette, chunking: Chunking, transforms: Sequence[Transform] = (), *, keep_chunks: int = 0
) -> list[Rechunked]:
    """Re-chunk every interaction in place; ``keep_chunks``: how many new chunks to report."""
    out = []
    for i, x in enumerate(cassette.interactions):
        old = x.response
        new, note = rechunk_response(old, chunking, transforms)
        x.response = new
        shown = list(zip(new.times, new.chunks))[:keep_chunks] if keep_chunks else []
        out.append(
            Rechunked(
                i,
                len(old.ends),
                len(new.ends),
                len(old.body),
                len(new.body),
                bool(transforms) and note is None,
                note,
                shown,
            )
        )
    return out
