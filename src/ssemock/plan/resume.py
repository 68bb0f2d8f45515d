"""Resuming a recorded SSE stream for a reconnection that carries ``Last-Event-ID``: where each
last event ID a stream sets leaves off (read with the reference decoder), and the response from
there on. ``ssemock serve`` answers an EventSource's reconnection with it, and the in-process
player a client's ``GET`` with ``Last-Event-ID`` after a dropped stream (the MCP 2025-11-25
Streamable HTTP client's resumption)."""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass

from ..framing.sse import Decoder
from ..store.cassette import Response as CassetteResponse
from ..variants.chunking import event_ends

__all__ = ["Resume", "is_sse", "reconnection", "resume_index", "resume_offset", "resumed"]


def resume_offset(body: bytes, last_event_id: str) -> int | None:
    """Byte offset just after the first event block whose dispatch sets the last event ID string to
    ``last_event_id``.

    Blocks end at a blank line; the reference decoder reads them, so ``id`` fields follow the
    WHATWG rules (an ``id`` with NUL is ignored, the ID persists across blocks, a block cut off by
    the end of the body never sets it). None: no such block.
    """
    if not last_event_id:
        return None
    decoder = Decoder()
    start = 0
    for end in event_ends(body, sse=True):
        decoder.feed(body[start:end])
        start = end
        if decoder.last_event_id == last_event_id:
            return end
    return None


@dataclass(frozen=True)
class Resume:
    """Where a reconnection carrying an ID resumes a recorded SSE stream: the offset after the
    first block that set that last event ID (`resume_offset`), and whether the rest moves
    the ID on (else the answer is ``204``)."""

    offset: int
    moves_on: bool


def resume_index(body: bytes) -> dict[str, Resume]:
    """Every last event ID a stream sets, with where a reconnection carrying it resumes: one
    pass of the reference decoder over the body, so the server answers any ``Last-Event-ID`` with
    a dictionary look-up (built once per interaction, never per request)."""
    decoder = Decoder()
    blocks: list[tuple[int, str, list[str]]] = []  # (end, last event ID after it, ids of its events)
    start = 0
    for end in event_ends(body, sse=True):
        events = decoder.feed(body[start:end])
        blocks.append((end, decoder.last_event_id, [e.id for e in events]))
        start = end
    final = decoder.last_event_id
    # after block k: the one ID every later event carries ("" and no events: None; several: _MIXED)
    uniform: list[object] = [None] * (len(blocks) + 1)
    for k in range(len(blocks) - 1, -1, -1):
        seen = uniform[k + 1]
        for ident in blocks[k][2]:
            seen = ident if seen is None or seen == ident else _MIXED
        uniform[k] = seen
    index: dict[str, Resume] = {}
    for k, (end, ident, _) in enumerate(blocks):
        if ident and ident not in index:
            after = uniform[k + 1]
            index[ident] = Resume(end, final != ident or (after is not None and after != ident))
    return index


_MIXED = object()


def resumed(response: CassetteResponse, offset: int) -> CassetteResponse:
    """The response from byte ``offset`` on; chunk times restart from when that byte arrived."""
    k = bisect.bisect_left(response.ends, offset)
    since = response.times[k] if k < len(response.times) else (response.times[-1] if response.times else 0.0)
    kept = [(e - offset, t) for e, t in zip(response.ends, response.times) if e > offset]
    return CassetteResponse(
        response.status,
        list(response.headers),
        response.body[offset:],
        [e for e, _ in kept],
        [max(t - since, 0.0) for _, t in kept],
        response.complete,
        response.error,
    )


def is_sse(response: CassetteResponse) -> bool:
    return "event-stream" in (response.header("content-type") or "")


def reconnection(
    streams: Sequence[tuple[str, CassetteResponse]], url: str, last_event_id: str
) -> tuple[int, CassetteResponse, int] | None:
    """What answers a client's reconnection (a ``GET`` to ``url`` with ``Last-Event-ID``) from
    the streams served before it (``(url, recorded response)``, oldest first): the latest SSE
    stream to the same URL that set that ID, as ``(its position, the response after it, the
    offset resumed at)``; None when none did (the request is then matched as any other).
    A stream after which no event moves the ID on has nothing more to say: its rest is empty."""
    for k in range(len(streams) - 1, -1, -1):
        served_url, response = streams[k]
        if served_url != url or not is_sse(response):
            continue
        found = resume_index(response.body).get(last_event_id)
        if found is not None:
            return k, resumed(response, found.offset), found.offset
    return None
