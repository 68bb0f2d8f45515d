"""The JSON text of a cassette's response body: one string per SSE event (or line), laid out
exactly as orjson's 2-space indent lays out that list of strings, made in bulk.

A body is cut into windows of about `WINDOW` bytes, each ending where a piece ends. In a
window, a marker is put after every piece's separator (``bytes.replace`` / ``re.sub``, in C),
the window is decoded and escaped in one ``orjson.dumps`` call, and two one-byte ``bytes.replace``
calls turn the markers into the list's layout (``",`` newline, indent, ``"``). The markers are two
placeholder bytes the window does not hold and JSON escaping never writes, so they can stand
for a quote and a newline; a window holding every candidate is laid out piece by piece
(`pieces`, the reference this must equal byte for byte). Where the optional C accelerator
was built (see [`ssemock.sse`][ssemock.sse]), ``_speedups.escaped`` makes a window's bytes in one pass
instead: the same bytes, several times faster (text with 4-byte characters costs CPython a
wide str per window).
"""

from __future__ import annotations

import bisect
import itertools
import re
from collections.abc import Iterator

import orjson

from ..framing.accelerator import escaped as _c_escaped
from ..framing.ends import EVENT_END, event_ends  # EVENT_END: cut where event_ends cuts
from ..framing.eventstream import is_eventstream

__all__ = ["WINDOW", "body_ends", "laid_out", "pieces"]

WINDOW = 1 << 18  # bytes of body escaped per orjson call (a few times this in memory at once)
# Placeholders: bytes orjson copies as they are and no JSON escape contains (escapes are made of
# backslash, quote, "u", "btnfr" and lowercase hex digits); the first two a window lacks are used.
# Not the layout's own bytes either (quote, comma, newline, space).
_CANDIDATES = b"\x7f~^|`#@$%&*<>;?!'=+_.:/()[]{}ABCDEFGHIJKLMNOPQRSTUVWXYZghijklmopqsvwxyz"
_BLANK_LINE = re.compile(rb"\n\n")
_LINE_END = re.compile(rb"\n")


def _is_sse(content_type: str | None) -> bool:
    """Whether a body of this content type is cut at SSE events (else at lines)."""
    return bool(content_type and "event-stream" in content_type)


def body_ends(body: bytes, content_type: str | None) -> list[int]:
    """End offsets of a body's readable pieces (one SSE event each, or one line for other
    types); the last is always ``len(body)``, and an empty body has none."""
    ends = event_ends(body, sse=_is_sse(content_type))
    if (ends[-1] if ends else 0) < len(body):
        ends.append(len(body))
    return ends


def pieces(body: bytes, content_type: str | None) -> Iterator[str]:
    """The body as text, one SSE event (or line) a piece, decoded from a view (no whole copy)."""
    view = memoryview(body)
    ends = body_ends(body, content_type)
    for a, b in zip([0, *ends], ends):
        yield str(view[a:b], "utf-8")


def laid_out(body: bytes, content_type: str | None, nested: bytes) -> Iterator[bytes | memoryview]:
    """The JSON list of ``pieces(body, content_type)`` as orjson's OPT_INDENT_2 writes it at the
    depth where a line starts with ``nested`` (a newline and the indent of the list's key), in
    parts. ``body`` must be UTF-8 (UnicodeDecodeError otherwise)."""
    if not body:
        yield b"[]"
        return
    sse = _is_sse(content_type)
    if not sse and is_eventstream(body):  # binary frames (AWS eventstream): rare and small
        yield (
            b"["
            + orjson.dumps(list(pieces(body, content_type)), option=orjson.OPT_INDENT_2)[1:-2].replace(
                b"\n", nested
            )
            + nested
            + b"]"
        )
        return
    layout = b'",' + nested + b'  "'
    kind = "lines" if not sse else "crlf" if b"\r" in body else "lf"
    cuts = event_ends(body, sse=True) if kind == "crlf" else None  # the regex's own boundaries
    yield b"[" + nested + b"  "  # the first window's orjson string opens the first piece
    size, start, first = len(body), 0, True
    while start < size:
        end = _window_end(body, start, kind, cuts)
        text = _escaped(body[start:end], kind, layout)
        part = memoryview(text)[
            0 if first else 1 : -1
        ]  # no closing quote: the next window continues the string
        if end == size:  # close the list: a trailing separator's layout gives way to the closing quote
            if part[-len(layout) :] == layout:
                part = part[: -len(layout)]
            yield part
            yield b'"' + nested + b"]"
        else:
            yield part
        start, first = end, False


def _window_end(body: bytes, start: int, kind: str, cuts: list[int] | None) -> int:
    """Where the window from ``start`` (a piece's start) ends: at the last piece end within
    `WINDOW` bytes, or at the first one after (a longer piece), or at the body's end."""
    size = len(body)
    limit = start + WINDOW
    if limit >= size:
        return size
    if cuts is not None:
        k = bisect.bisect_right(cuts, limit) - 1
        if k >= 0 and cuts[k] > start:
            return cuts[k]
        return cuts[k + 1] if k + 1 < len(cuts) else size
    if kind == "lines":
        at = body.rfind(b"\n", start, limit)
        if at < 0:
            at = body.find(b"\n", limit)
        return size if at < 0 else at + 1
    at = body.rfind(b"\n\n", start, limit)
    if at < 0:  # no blank line before the limit: the first one after it ends the window
        at = body.find(b"\n\n", limit - 1)
        return size if at < 0 else at + 2
    return _pair_end(body, start, at)


def _pair_end(body: bytes, start: int, at: int) -> int:
    """The end of the blank line that a scan from ``start`` (as ``event_ends`` scans: pairs of
    newlines, left to right) finds in the run of newlines holding ``body[at:at + 2]``."""
    run = at
    while run > start and body[run - 1] == 10:  # a run of 3+ newlines pairs up from its first
        run -= 1
    return run + (at + 2 - run) // 2 * 2


def _escaped(window: bytes, kind: str, layout: bytes) -> bytes:
    """``window`` (whole pieces) as one orjson string whose pieces are joined by ``layout``;
    a piece that ends the window is followed by ``layout`` too. The C accelerator makes the
    same bytes in one pass, where it was built (a CRLF body's pieces are the pure code's)."""
    if _c_escaped is not None and kind != "crlf":
        text = _c_escaped(window, b"\n" if kind == "lines" else b"\n\n", layout)
        if text is not None:  # None: not UTF-8, and the pure code below raises the error
            return text
    free = list(itertools.islice((c for c in _CANDIDATES if c not in window), 2))
    if len(free) < 2:
        return b'"' + _piece_by_piece(window, kind, layout) + b'"'
    quote, newline = bytes(free[:1]), bytes(free[1:])
    marker = layout.replace(b'"', quote).replace(b"\n", newline)
    if kind == "lines":
        marked = window.replace(b"\n", b"\n" + marker)
    elif kind == "lf":
        marked = _BLANK_LINE.sub(b"\n\n" + marker, window)
    else:
        marked = EVENT_END.sub(b"\\g<0>" + marker, window)
    return orjson.dumps(str(marked, "utf-8")).replace(quote, b'"').replace(newline, b"\n")


def _piece_by_piece(window: bytes, kind: str, layout: bytes) -> bytes:
    """What `_escaped` makes (without the string's quotes), one orjson call per piece."""
    ends = event_ends(window, sse=True) if kind != "lines" else [m.end() for m in _LINE_END.finditer(window)]
    out = [orjson.dumps(str(window[a:b], "utf-8"))[1:-1] + layout for a, b in zip([0, *ends], ends)]
    if (ends[-1] if ends else 0) < len(window):
        out.append(orjson.dumps(str(window[ends[-1] if ends else 0 :], "utf-8"))[1:-1])
    return b"".join(out)
