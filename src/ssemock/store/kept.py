"""Cassettes parsed once a session for replay: a suite replaying one cassette in many tests
reads its file each time, but parses it only when the bytes differ from the last parse.

Each load hands fresh interactions (their lists copied; bytes and strings are immutable), so
nothing a player or a test changes reaches the kept ones. Only small files of plain HTTP
exchanges are kept: a WebSocket session, a gRPC call, a group or a stdio session holds more
than these copies cover, and a file of a MiB or more is read its own lean way. The last 32
cassettes parsed are kept (a parametrized test replays one many times in a row).
"""

from __future__ import annotations

import copy
import os
from pathlib import Path

from .cassette import LEAN_MIN_SIZE, Cassette, read_file
from .model import Interaction, Request, Response

_KEPT: dict[str, tuple[bytes, Cassette]] = {}  # path -> the bytes parsed, what they parsed to
_MOST = 32  # cassettes kept at once (the oldest kept goes first): at most ~2 MiB each


def load(path: Path) -> Cassette:
    """``Cassette.load(path)``: the same interactions, parsed again only when the file changed."""
    if os.stat(path).st_size >= LEAN_MIN_SIZE:
        return Cassette.load(path)
    raw = read_file(path)
    key = os.fspath(path)
    kept = _KEPT.get(key)
    if kept is None or kept[0] != raw:
        cassette = Cassette.loads(raw, path=path)
        if cassette.stdio or not all(_plain(x) for x in cassette.interactions):
            return cassette
        _KEPT.pop(key, None)
        if len(_KEPT) >= _MOST:
            del _KEPT[next(iter(_KEPT))]
        _KEPT[key] = kept = (raw, cassette)
    return Cassette([_fresh(x) for x in kept[1].interactions], path=path)


def _plain(x: Interaction) -> bool:
    return x.websocket is None and x.group is None and x.grpc is None


def _fresh(x: Interaction) -> Interaction:
    """A copy of a plain HTTP interaction sharing nothing mutable with ``x``."""
    q, r = x.request, x.response
    return Interaction(
        Request(q.method, q.url, list(q.headers), q.body),
        Response(
            r.status,
            list(r.headers),
            r.body,
            list(r.ends),
            list(r.times),
            r.complete,
            copy.deepcopy(r.error) if r.error is not None else None,
        ),
    )
