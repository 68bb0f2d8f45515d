"""Wire chunkings of a gRPC call served over HTTP/2: where the DATA frames of the response end.
The bytes never change.

A call's response body is its length-prefixed messages one after the other (each a 5-byte
prefix, flag and big-endian length, then the message); ``ssemock serve`` sends it as DATA
frames cut the ways a real server's writes and HTTP/2 stacks cut it:

``as_recorded``
    the DATA frames as recorded (a proxy recording keeps them; a call recorded in-process has
    none, and is served one message per frame).
``per_message``
    every message in its own DATA frame.
``mid_header``
    every 5-byte prefix split across DATA frames (after the flag, and inside the length).
``bytewise``
    one byte per DATA frame.
``coalesced``
    all the messages that can go together in one DATA frame (h2 still splits past the peer's
    largest frame).
``random:SEED``
    seeded random sizes, as for HTTP.

A call is served in groups (what the server sends before the client's next message, or before
a recorded gap): no frame spans two groups (`group_ends`, as for WebSocket sessions).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ...framing.ends import Ends
from ...framing.grpc import event_ends
from ..chunking import Chunking, as_recorded, bytewise, coalesced, get_among, random, resolve_among
from ..websocket.chunking import group_ends

__all__ = ["ALL", "for_http", "get", "group_ends", "mid_header", "names", "per_message", "resolve"]


def _per_message(wire: bytes, recorded: Sequence[int]) -> Ends:
    return event_ends(wire)


def _mid_header(wire: bytes, recorded: Sequence[int]) -> Ends:
    ends: Ends = []
    start = 0
    for end in event_ends(wire):
        ends.extend((start + 1, start + 3, end))  # flag | 2 length bytes | 2 length bytes + message
        start = end
    return ends


per_message = Chunking("per_message", _per_message, by_event=True)
"""Every message in its own DATA frame."""
mid_header = Chunking("mid_header", _mid_header, by_event=True)
"""Every message's 5-byte prefix split across DATA frames."""

ALL: tuple[Chunking, ...] = (as_recorded, per_message, mid_header, bytewise, coalesced, random(7))
"""What ``chunking="all"`` runs on a gRPC call's wire."""

_NAMED = {c.name: c for c in ALL[:-1]}
# the HTTP names with a meaning on this wire: their place in "all" (mid_line, mid_utf8 cut inside a message's prefix)
_FOR_HTTP = {"per_event": per_message, "mid_line": mid_header, "mid_utf8": mid_header}


def names() -> tuple[str, ...]:
    """The names of `ALL`, as test ids show them."""
    return tuple(c.name for c in ALL)


def get(name: str | Chunking) -> Chunking:
    """A gRPC wire chunking from its name (``"mid_header"``, ``"random:7"``); the HTTP-only
    names (``mid_line``, ``fixed:N``, ``at:...``) are refused with the names that apply."""
    http_only = ("mid_line", "mid_utf8", "per_event", "fixed", "at")
    return get_among(name, named=_NAMED, http_only=http_only, transport="gRPC", cuts="messages", takes="call")


def for_http(chunking: Chunking) -> Chunking:
    """The wire chunking a gRPC call gets under the HTTP ``chunking`` (``ssemock serve
    --chunking``): the one of the same name, ``per_message`` for ``per_event``, ``mid_header``
    for ``mid_line`` and ``mid_utf8`` (their places in ``chunking="all"``), and the byte-count
    chunkings (``bytewise``, ``fixed:N``, ``random:SEED``, ``at:...``, ``coalesced``) as they are."""
    return _NAMED.get(chunking.name) or _FOR_HTTP.get(chunking.name) or chunking


def resolve(spec: str | Chunking | Iterable[str | Chunking] | None) -> list[Chunking]:
    """gRPC wire chunkings from ``"all"``, a name, a comma list or a list (None: as recorded)."""
    return resolve_among(spec, every=ALL, get=get)
