"""Transforms: rewrite an SSE body's bytes without changing the events a conforming decoder yields.

Each transform works on one event at a time, so recorded chunk ends can be carried over to the
new body (an end inside an event maps to the end of that event's transformed prefix). They
apply to ``text/event-stream`` bodies only.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ._names import unknown
from .chunking import event_ends

__all__ = ["Transform", "alternatives", "apply", "cr", "crlf", "get", "keepalive", "no_space", "resolve"]

_NEWLINE = re.compile(rb"\r\n|\r|\n")
_FIELD_SPACE = re.compile(rb"(?:^|(?<=[\r\n]))([^:\r\n]+): (?! )")
_BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True)
class Transform:
    """A named per-event rewrite: ``event(bytes_of_one_event_or_its_prefix) -> bytes``."""

    name: str
    event: Callable[[bytes], bytes]

    def __str__(self) -> str:
        return self.name


def _line_endings(sep: bytes) -> Callable[[bytes], bytes]:
    return lambda event: _NEWLINE.sub(sep, event)


crlf = Transform("crlf", _line_endings(b"\r\n"))
cr = Transform("cr", _line_endings(b"\r"))
no_space = Transform("no_space", lambda event: _FIELD_SPACE.sub(rb"\1:", event))


def keepalive(comment: str = ": ping") -> Transform:
    """A comment line (``: ping``) and a blank line before every event, as proxies send."""
    if not comment.startswith(":") or "\n" in comment or "\r" in comment:
        raise ValueError(f"a keep-alive must be one SSE comment line starting with ':', got {comment!r}")
    line = comment.encode()

    def insert(event: bytes) -> bytes:
        m = _NEWLINE.search(event)
        nl = m.group() if m else b"\n"
        bom = _BOM if event.startswith(_BOM) else b""  # a leading BOM must stay first
        return bom + line + nl + nl + event[len(bom):]

    name = "keepalive" if comment == ": ping" else f"keepalive:{comment}"
    return Transform(name, insert)


def apply(transforms: Sequence[Transform], body: bytes, ends: Sequence[int]) -> tuple[bytes, list[int]]:
    """Transform ``body`` event by event and carry the chunk ``ends`` over to the new body.

    The result has one end per given end (so recorded times still line up), non-decreasing.
    """
    for t in transforms:
        body, ends = _apply_one(t, body, ends)
    return body, list(ends)


def _apply_one(t: Transform, body: bytes, ends: Sequence[int]) -> tuple[bytes, list[int]]:
    bounds = event_ends(body, sse=True)
    if not bounds or bounds[-1] != len(body):
        bounds.append(len(body))
    starts = [0, *bounds[:-1]]
    pieces = [t.event(body[a:b]) for a, b in zip(starts, bounds)]
    new_starts = [0]
    for p in pieces:
        new_starts.append(new_starts[-1] + len(p))
    new_ends = []
    for e in ends:
        k = bisect.bisect_left(bounds, e)  # the event whose span (start, end] holds e
        a = starts[k]
        length = len(pieces[k]) if e == bounds[k] else min(len(t.event(body[a:e])), len(pieces[k]))
        new_ends.append(new_starts[k] + length)
    return b"".join(pieces), new_ends


_NAMED = {t.name: t for t in (crlf, cr, no_space)}
_SHOWN = [*_NAMED, "keepalive[:COMMENT]"]


def get(name: str | Transform) -> Transform:
    """A transform from its short name: ``crlf``, ``cr``, ``no_space``, ``keepalive[:COMMENT]``."""
    if isinstance(name, Transform):
        return name
    if not isinstance(name, str):
        raise ValueError(f"a transform is a name or a Transform, got {type(name).__name__} {name!r}; "
                         f"valid names: {', '.join(_SHOWN)}")
    if name.strip() in _NAMED:
        return _NAMED[name.strip()]
    head, sep, rest = name.strip().partition(":")
    if head == "keepalive":
        return keepalive(rest if sep and rest.startswith(":") else f": {rest}" if sep else ": ping")
    raise unknown("transform", name, [*_NAMED, "keepalive"], shown=_SHOWN, head=head)


def alternatives(spec: str | Transform | Sequence[str | Transform] | None) -> list[list[Transform]]:
    """Transform chains to run a test under, one run each: ``"all"`` (none, then each transform
    alone), ``"none,crlf,cr+keepalive"`` (comma: alternatives; plus: a chain), or a list of those."""
    if spec is None:
        return [[]]
    if isinstance(spec, Transform):
        return [[spec]]
    if isinstance(spec, str):
        if spec.strip() == "all":
            return [[], [crlf], [cr], [keepalive()], [no_space]]
        return [[] if part.strip() == "none" else resolve(part.strip()) for part in spec.split(",")]
    return [chain for item in spec for chain in alternatives(item)]


def resolve(spec: str | Transform | Sequence[str | Transform] | None) -> list[Transform]:
    """Transforms from a name, a ``+``-joined chain (``"crlf+keepalive"``), or a list."""
    if spec is None:
        return []
    if isinstance(spec, Transform):
        return [spec]
    if isinstance(spec, str):
        return [get(part) for part in spec.split("+") if part]
    if not isinstance(spec, Sequence):
        return [get(spec)]  # the ValueError for a value that is no name
    return [t for item in spec for t in resolve(item)]
