"""Wire chunkings of a WebSocket session: where the reads of the server's frames end. The bytes
never change.

The received wire of a session (the server's frames after the 101 head: unmasked, so the frames
are read from the bytes themselves) is cut the ways a TCP stream cuts it, under the names the
HTTP chunkings have where the meaning is the same:

``as_recorded``
    the reads as recorded.
``bytewise``
    one byte per read.
``mid_header``
    a cut inside every frame header (after its first byte, and inside an extended length).
``mid_utf8``
    a cut inside every multi-byte UTF-8 character of a text payload (text frames, their
    continuations, and binary frames holding UTF-8, such as Gemini Live's JSON), and in the
    middle of the payloads that have none; compressed payloads are cut in the middle.
``per_event``
    every frame in its own read.
``coalesced``
    all the frames that can go together in one read.
``random:SEED``
    seeded random sizes, as for HTTP.

A replay serves a session in groups (what the server sends before the client's next message):
no read ever spans two groups, so each chunking cuts each group on its own (`group_ends`).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence

from ...framing.ends import Ends
from ...framing.websocket import CONTROL, FrameParser, Opcode, RawFrame
from ..chunking import Chunking, as_recorded, bytewise, coalesced, get_among, random, resolve_among

__all__ = [
    "ALL",
    "for_http",
    "frames_of",
    "get",
    "group_ends",
    "mid_header",
    "mid_utf8",
    "names",
    "per_event",
    "resolve",
    "text_payloads",
]


def frames_of(wire: bytes) -> list[RawFrame]:
    """The server frames in ``wire`` (a trailing unfinished frame, as a drop leaves, is left out)."""
    return FrameParser(masked=False).feed(wire)


def text_payloads(frames: Iterable[RawFrame]) -> list[tuple[RawFrame, bool]]:
    """Each frame with whether its payload is uncompressed UTF-8 text: a text message's frames,
    and a binary message's whose payload decodes (Gemini Live's JSON)."""
    out, text, compressed = [], False, False
    for frame in frames:
        if frame.opcode in CONTROL:
            out.append((frame, False))
            continue
        if frame.opcode != Opcode.CONTINUATION:
            compressed = frame.rsv1
            text = frame.opcode == Opcode.TEXT or _utf8(frame.payload)
        out.append((frame, text and not compressed))
    return out


def _utf8(data: bytes) -> bool:
    try:
        data.decode()
    except UnicodeDecodeError:
        return False
    return len(data) > 0


def _mid_header(wire: bytes, recorded: Sequence[int]) -> Ends:
    ends: Ends = []
    for frame in frames_of(wire):
        ends.append(frame.start + 1)
        if frame.header > 2:  # inside the extended length (16 or 64 bits)
            ends.append(frame.start + 3)
        ends.append(frame.end)
    return ends


def _lead_bytes(payload: bytes) -> list[int]:
    """The offsets just after each multi-byte character's lead byte."""
    return [
        i + 1
        for i, b in enumerate(payload)
        if b >= 0xC0 and i + 1 < len(payload) and 0x80 <= payload[i + 1] < 0xC0
    ]


def _mid_utf8(wire: bytes, recorded: Sequence[int]) -> Ends:
    ends: Ends = []
    for frame, text in text_payloads(frames_of(wire)):
        body = frame.end - len(frame.payload)
        cuts = _lead_bytes(frame.payload) if text else []
        if cuts:
            ends.extend(body + c for c in cuts)
        elif len(frame.payload) > 1:
            ends.append(body + len(frame.payload) // 2)
        ends.append(frame.end)
    return ends


def _per_frame(wire: bytes, recorded: Sequence[int]) -> Ends:
    return [frame.end for frame in frames_of(wire)]


mid_header = Chunking("mid_header", _mid_header)
"""A cut inside every frame header."""
mid_utf8 = Chunking("mid_utf8", _mid_utf8)
"""A cut inside every multi-byte character of a text payload (mid-payload where there is none)."""
per_event = Chunking("per_event", _per_frame)
"""Every frame in its own read."""

ALL: tuple[Chunking, ...] = (as_recorded, bytewise, mid_header, mid_utf8, coalesced, per_event, random(7))
"""What ``chunking="all"`` runs on a WebSocket session."""

_NAMED = {c.name: c for c in ALL[:-1]}


def names() -> tuple[str, ...]:
    """The names of `ALL`, as test ids show them."""
    return tuple(c.name for c in ALL)


def get(name: str | Chunking) -> Chunking:
    """A wire chunking from its name (``"mid_header"``, ``"random:7"``); the HTTP-only names
    (``mid_line``, ``fixed:N``, ``at:...``) are refused with the names that apply."""
    http_only = ("mid_line", "fixed", "at")
    return get_among(
        name, named=_NAMED, http_only=http_only, transport="WebSocket", cuts="frames", takes="session"
    )


_FOR_HTTP = {"mid_line": mid_header}  # the one HTTP name with no WebSocket meaning: its place in "all"


def for_http(chunking: Chunking) -> Chunking:
    """The wire chunking a WebSocket session of a test run under the HTTP ``chunking`` gets: the
    one of the same name (``mid_utf8``, ``per_event`` cut frames, not lines), ``mid_header`` for
    ``mid_line`` (its place in ``chunking="all"``), and the byte-count chunkings (``bytewise``,
    ``fixed:N``, ``random:SEED``, ``at:...``, ``coalesced``) as they are."""
    return _NAMED.get(chunking.name) or _FOR_HTTP.get(chunking.name) or chunking


def resolve(spec: str | Chunking | Iterable[str | Chunking] | None) -> list[Chunking]:
    """Wire chunkings from ``"all"``, a name, a comma list or a list (None: as recorded)."""
    return resolve_among(spec, every=ALL, get=get)


def group_ends(
    chunking: Chunking, wire: bytes, groups: Sequence[int], recorded: Sequence[int] | None = None
) -> Ends:
    """The read ends of a whole session's wire, cut by ``chunking`` one group at a time.

    ``groups``: where each group's bytes end (increasing, the last is ``len(wire)``);
    ``recorded``: the recorded read ends of the same wire (``as_recorded``; a recorded read that
    spans a group boundary is cut there). Every group end is a read end."""
    if not wire:
        return []
    groups = sorted({g for g in groups if 0 < g < len(wire)} | {len(wire)})
    recorded = list(recorded) if recorded and recorded[-1] == len(wire) else groups
    ends: list[int] = []
    start = 0
    for end in groups:
        lo, hi = bisect.bisect_right(recorded, start), bisect.bisect_left(recorded, end)
        inside = [r - start for r in recorded[lo:hi]] + [end - start]
        ends.extend(start + e for e in chunking.ends(wire[start:end], inside))
        start = end
    return ends
