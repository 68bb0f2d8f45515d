"""Transforms: rewrite a stream's bytes without changing what a conforming decoder yields.

The implementation of [`ssemock.transforms`][ssemock.transforms], where its public names are documented."""

# How it works (for contributors): a transform is a list of edits (replace bytes [start, end) with
# new bytes) computed in one pass over the body, so recorded chunk ends are carried over to the new
# body in one merge walk: the work is linear in the body size however many chunk ends fall inside
# one event.

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field

import orjson

from .. import framing
from ..core.edits import Edit, rewrite
from ..core.names import unknown
from ..framing.json_array import element_spans as array_spans
from ..framing.json_array import event_ends as array_event_ends
from .chunking import event_ends
from .websocket import frames as ws_frames

__all__ = [
    "ALL",
    "CONFORMING",
    "JSON_ARRAY",
    "NDJSON",
    "NETWORK",
    "SETS",
    "SSE",
    "Transform",
    "alternatives",
    "applies",
    "apply",
    "blank_lines",
    "bracket_lines",
    "comments",
    "compact",
    "cr",
    "crlf",
    "get",
    "ids",
    "keepalive",
    "kind_of",
    "meta",
    "mixed",
    "no_final_newline",
    "no_space",
    "pad",
    "pretty",
    "raw_unicode",
    "resolve",
    "retry",
    "rewrite",
    "skipped_because",
]

Edits = Callable[[bytes, str], Iterable[Edit]]
"""`edits(body, kind)`: the edits a transform makes to a body of a kind, in order."""

_NEWLINE = re.compile(rb"\r\n|\r|\n")
_LINE_START = rb"(?:^|(?<=[\r\n])|(?<=\A\xef\xbb\xbf))"  # a line starts here (a leading BOM is no part of it)
_FIELD_SPACE = re.compile(rb"(?:^|(?<=[\r\n]))([^:\r\n]+): (?! )")
_BOM = b"\xef\xbb\xbf"
_SSE, _NDJSON, _ARRAY = "sse", "ndjson", "json_array"


@dataclass(frozen=True)
class Transform:
    """A named rewrite: ``edits(body, kind)`` yields ``(start, end, new_bytes)`` in order, without
    overlaps, for a body of ``kind`` (``"sse"`` or ``"ndjson"``) among ``kinds``."""

    name: str
    """The name `transform=` accepts."""
    edits: Edits
    """`edits(body, kind)` yields `(start, end, new_bytes)` in order, without overlaps."""
    kinds: frozenset[str] = field(default=frozenset({_SSE}))
    """The body kinds (`"sse"`, `"ndjson"`, ...) it rewrites."""
    relevant: Callable[[bytes, str], bool] | None = None
    """None: applies to every body of its kinds."""
    needs_end: str | None = None
    """Why it can only rewrite a whole body (None: rewriting a body that ends at an event
    boundary gives the start of rewriting any longer body, so a live stream is rewritten as it
    arrives)."""

    def __str__(self) -> str:
        return self.name

    def __call__(self, body: bytes, kind: str = _SSE) -> bytes:
        """The transformed body (no chunk ends)."""
        return apply([self], body, [], kind=kind)[0]


def kind_of(content_type: str, body: bytes) -> str | None:
    """``"sse"`` for an event stream, ``"ndjson"`` for JSON lines (a JSON content type and a
    body of one-line objects), ``"json_array"`` for a JSON array stream, else None (a plain
    JSON body, anything else): no transform touches it."""
    if "event-stream" in content_type:
        return _SSE
    if "json" not in content_type:
        return None
    start = body.lstrip()[:1]
    if start == b"[" and array_event_ends(body):
        return _ARRAY
    if start == b"{" and b"\n" in body.rstrip() and framing.detect(content_type, body).name != "json":
        return _NDJSON
    return None


def applies(transform: Transform, body: bytes, kind: str | None) -> bool:
    """Whether ``transform`` changes a body of ``kind``: a variant where it does not is the same
    bytes as without it."""
    return skipped_because(transform, body, kind) is None


def skipped_because(transform: Transform, body: bytes, kind: str | None) -> str | None:
    """Why ``transform`` leaves a body of ``kind`` as it is (None: it changes it), for a matrix
    to say why it skipped the run."""
    if not body:
        return f"{transform}: the body is empty"
    if kind is None:
        return f"{transform}: the body is no stream a transform rewrites (SSE, JSON lines, a JSON array)"
    if kind not in transform.kinds:
        return f"{transform} has no meaning for {kind} (it rewrites {', '.join(sorted(transform.kinds))})"
    if transform.relevant is not None and not transform.relevant(body, kind):
        return f"{transform}: this {kind} body already is what it would write"
    return None


def apply(
    transforms: Sequence[Transform], body: bytes, ends: Sequence[int], *, kind: str | None = _SSE
) -> tuple[bytes, list[int]]:
    """Apply ``transforms`` in turn to ``body`` (of ``kind``) and carry the chunk ``ends`` over.

    The result has one end per given end (so recorded times still line up), non-decreasing; an
    end inside a rewritten span maps inside (or to the end of) its replacement, an end at an
    insertion point maps before the inserted bytes. Transforms that do not apply are skipped."""
    new_ends = list(ends)
    for t in transforms:
        if applies(t, body, kind):
            body, new_ends = rewrite(body, t.edits(body, kind or _SSE), new_ends)
    return body, new_ends


def _spans(body: bytes, kind: str) -> list[tuple[int, int]]:
    """(start, end) of every event (SSE) or line (JSON lines), the unterminated tail included."""
    bounds = event_ends(body, sse=kind == _SSE)
    if not bounds or bounds[-1] != len(body):
        bounds.append(len(body))
    return list(zip([0, *bounds[:-1]], bounds))


def _head(body: bytes, start: int) -> int:
    """Where to insert before the event at ``start``: after a BOM only at the stream's start (a
    BOM anywhere else is a character of a field name and must stay where it is)."""
    return 3 if start == 0 and body.startswith(_BOM) else start


def _newline_of(body: bytes, start: int, end: int) -> bytes:
    m = _NEWLINE.search(body, start, end)
    return m.group() if m else b"\n"


# -- line endings ---------------------------------------------------------------------------------


def _line_endings(sep: bytes) -> Edits:
    def edits(body: bytes, kind: str) -> Iterator[Edit]:
        if kind != _SSE and sep == b"\r\n":  # JSON: a CR before an LF is whitespace, only bare LFs change
            for m in re.finditer(rb"(?<!\r)\n", body):
                yield m.start(), m.end(), b"\r\n"
            return
        for m in _NEWLINE.finditer(body):
            if m.group() != sep:
                yield m.start(), m.end(), sep

    return edits


def _has_bare_lf(body: bytes, kind: str) -> bool:
    return re.search(rb"(?<!\r)\n", body) is not None if kind != _SSE else True


def _has_lf(body: bytes, kind: str) -> bool:
    return b"\n" in body if kind != _SSE else True


crlf = Transform("crlf", _line_endings(b"\r\n"), frozenset({_SSE, _NDJSON, _ARRAY}), _has_bare_lf)
"""CRLF line endings."""
cr = Transform("cr", _line_endings(b"\r"), frozenset({_SSE, _NDJSON, _ARRAY}), _has_lf)
"""CR-only line endings; in JSON lines, what the lines of a server that writes ``\\r`` end with (the reference decoder, httpx's ``iter_lines`` and requests' take a lone CR as a line end)"""

_MIXED = ((b"\n", b"\r\n"), (b"\r\n", b"\n"), (b"\n", b"\r"), (b"\r\n", b"\r"))


def _mixed(body: bytes, kind: str) -> Iterator[Edit]:
    """Event ``i`` gets the ``i % 4``-th pair of (line ending, blank line ending): ``\\n\\r\\n``,
    ``\\r\\n\\n``, ``\\n\\r``, ``\\r\\n\\r``, so endings change from one event to the next."""
    spans = _spans(body, kind)
    for i, (a, b) in enumerate(spans):
        line, blank = _MIXED[i % len(_MIXED)]
        found = list(_NEWLINE.finditer(body, a, b))
        terminated = len(found) >= 2 and found[-1].end() == b and found[-2].end() == found[-1].start()
        if terminated and blank == b"\r" and body[b : b + 1] == b"\n":
            blank = b"\r\n"  # a CR followed by the next block's LF would be one line ending
        for k, m in enumerate(found):
            sep = blank if terminated and k == len(found) - 1 else line
            if m.group() != sep:
                yield m.start(), m.end(), sep


mixed = Transform("mixed", _mixed)
"""LF, CRLF and CR line endings, mixed."""
no_space = Transform(
    "no_space", lambda body, kind: ((m.end(1) + 1, m.end(1) + 2, b"") for m in _FIELD_SPACE.finditer(body))
)
"""No space after the colon of each field."""

# -- blocks and lines that dispatch nothing -------------------------------------------------------


def _before_each(make: Callable[[int, bytes], bytes]) -> Edits:
    """Insert ``make(i, newline)`` before event ``i`` (after a leading BOM)."""

    def edits(body: bytes, kind: str) -> Iterator[Edit]:
        for i, (a, b) in enumerate(_spans(body, kind)):
            at = _head(body, a)
            yield at, at, make(i, _newline_of(body, a, b))

    return edits


def _comment_line(comment: str) -> bytes:
    if not comment.startswith(":") or "\n" in comment or "\r" in comment:
        raise ValueError(f"a keep-alive must be one SSE comment line starting with ':', got {comment!r}")
    return comment.encode()


def keepalive(comment: str = ": ping") -> Transform:
    """A comment line (``: ping``) and a blank line before every event, as proxies send."""
    line = _comment_line(comment)
    name = "keepalive" if comment == ": ping" else f"keepalive:{comment}"
    return Transform(name, _before_each(lambda i, nl: line + nl + nl))


COMMENTS = (":", ": ping - 2024-02-23 06:52:12.345678+00:00", ": OPENROUTER PROCESSING")
"""The heartbeat comments real servers send: a bare colon (sse-starlette's default is a ping with a timestamp; many proxies send ``:``), and OpenRouter's while a model is queued."""
comments = Transform("comments", _before_each(lambda i, nl: COMMENTS[i % len(COMMENTS)].encode() + nl + nl))
"""A heartbeat comment before each event."""
retry = Transform("retry", _before_each(lambda i, nl: b"retry: 3000" + nl + nl))
"""A `retry:` block before each event."""

_ID_LINE = re.compile(_LINE_START + rb"id(?::(?: )?([^\r\n]*))?(?=[\r\n]|$)")


def _no_ids(body: bytes, kind: str) -> bool:
    return _ID_LINE.search(body) is None


ids = Transform(
    "ids",
    _before_each(lambda i, nl: b"id: %d" % (i + 1) + nl),
    relevant=_no_ids,
    needs_end="it numbers the events only when the whole stream has no id, and a later event may have one",
)
"""An `id:` field on each event."""


def _meta(body: bytes, kind: str) -> Iterator[Edit]:
    """Before each event: an event-only block (``event: keepalive``, no data: nothing dispatched)
    and an id-only block repeating the last event ID in effect there (so no event's id changes)."""
    last = b""
    spans = _spans(body, kind)
    for i, (a, b) in enumerate(spans):
        nl = _newline_of(body, a, b)
        at = _head(body, a)
        yield at, at, b"event: keepalive" + nl + nl + b"id: " + last + nl + nl
        if i < len(spans) - 1 or event_ends(body[at:b], sse=True):  # a dispatched block sets the id
            for m in _ID_LINE.finditer(body, at, b):
                value = m.group(1) or b""
                if b"\0" not in value:
                    last = value


meta = Transform("meta", _meta)
"""Event-only and id-only blocks between the events."""


def pad(shift: int | None = None) -> Transform:
    """Comment lines that move every later byte: ``pad`` puts one of a different length (0 to 60
    bytes of padding) in every event, so line endings fall at every offset of a client's
    fixed-size reads; ``pad:N`` shifts the whole stream by one comment of N bytes."""
    if shift is None:
        return Transform("pad", _before_each_line(lambda i: (i * 37) % 61))
    if type(shift) is not int or not 0 < shift <= 1 << 20:
        raise ValueError(f"pad: the shift is a number of bytes from 1 to {1 << 20}, got {shift!r}")
    return Transform(f"pad:{shift}", _before_each_line(lambda i: shift - 1 if i == 0 else -1))


def _before_each_line(width: Callable[[int], int]) -> Edits:
    """A comment line of ``width(i)`` dots inside event ``i`` (none when negative)."""

    def edits(body: bytes, kind: str) -> Iterator[Edit]:
        for i, (a, b) in enumerate(_spans(body, kind)):
            w = width(i)
            if w >= 0:
                at = _head(body, a)
                nl = _newline_of(body, a, b)
                yield at, at, b":" + b"." * max(w - len(nl), 0) + nl

    return edits


# -- JSON lines -----------------------------------------------------------------------------------


def _blank_lines(body: bytes, kind: str) -> Iterator[Edit]:
    for _, b in _spans(body, kind)[:-1] if not body.endswith(b"\n") else _spans(body, kind):
        yield b, b, b"\n"


blank_lines = Transform("blank_lines", _blank_lines, frozenset({_NDJSON}))
"""Blank lines between JSON lines."""


def _no_final_newline(body: bytes, kind: str) -> Iterator[Edit]:
    end = len(body.rstrip(b"\r\n"))
    if end < len(body):
        yield end, len(body), b""


no_final_newline = Transform(
    "no_final_newline",
    _no_final_newline,
    frozenset({_NDJSON}),
    lambda body, kind: body.endswith((b"\n", b"\r")) and bool(body.strip()),
    needs_end="it rewrites the last line's ending, and only the end says which line is last",
)
"""The last JSON line without its line ending (a server that ends the stream right after it)"""

# -- JSON arrays ----------------------------------------------------------------------------------


def _array_layout(element: Callable[[bytes], bytes], first: bytes, between: bytes, last: bytes) -> Edits:
    """Rewrite a JSON array stream: ``first`` from the start through the ``[`` to the first
    element, ``between`` between elements, ``last`` from the last element through the ``]``,
    each element as ``element(its bytes)`` (an incomplete trailing element is left alone)."""

    def edits(body: bytes, kind: str) -> Iterator[Edit]:
        spans = array_spans(body)
        if not spans:
            return
        yield 0, spans[0][0], first
        for n, (a, b) in enumerate(spans):
            yield a, b, element(body[a:b])
            if n + 1 < len(spans):
                yield b, spans[n + 1][0], between
        close = body.find(b"]", spans[-1][1])
        if close >= 0:
            yield spans[-1][1], close + 1, last

    return edits


def _changes(edits: Edits) -> Callable[[bytes, str], bool]:
    return lambda body, kind: any(body[s:t] != r for s, t, r in edits(body, kind))


def _array_transform(
    name: str, element: Callable[[bytes], bytes], first: bytes, between: bytes, last: bytes
) -> Transform:
    edits = _array_layout(element, first, between, last)
    return Transform(
        name,
        edits,
        frozenset({_ARRAY}),
        _changes(edits),
        needs_end="it lays out the array through its closing bracket",
    )


compact = _array_transform("compact", lambda el: orjson.dumps(orjson.loads(el)), b"[", b",", b"]")
"""``[{...},{...}]``: no whitespace between or inside elements."""
pretty = _array_transform(
    "pretty", lambda el: orjson.dumps(orjson.loads(el), option=orjson.OPT_INDENT_2), b"[\n", b",\n", b"\n]"
)
"""Every element indented over several lines, ``[`` and ``]`` on lines of their own."""
bracket_lines = _array_transform("bracket_lines", lambda el: el, b"[\n", b"\n,\r\n", b"\n]")
"""``[\\n{...}\\n,\\r\\n{...}\\n]``: the brackets and separators on lines of their own, CRLF before each next element (Google's REST streams write ``\\n,\\r\\n`` between elements)"""

# -- JSON escapes written raw ---------------------------------------------------------------------

_ESCAPE = re.compile(rb"(?<!\\)((?:\\\\)*)\\u(2028|2029|0085)")
_DATA = re.compile(_LINE_START + rb"data(?::(?: )?([^\r\n]*))?(?=[\r\n]|$)")


def _json_lines(body: bytes, kind: str) -> Iterator[tuple[int, int]]:
    """Spans of values that are one whole JSON document: the data line of a one-data-line event,
    or a JSON line."""
    for a, b in _spans(body, kind):
        if kind == _NDJSON:
            span = (a, b)
        else:
            found = list(_DATA.finditer(body, _head(body, a), b))
            if len(found) != 1 or found[0].group(1) is None:
                continue
            span = found[0].span(1)
        if _ESCAPE.search(body, *span) is None:
            continue
        try:
            orjson.loads(body[span[0] : span[1]])
        except orjson.JSONDecodeError:
            continue
        yield span


def _raw_unicode(body: bytes, kind: str) -> Iterator[Edit]:
    for a, b in _json_lines(body, kind):
        for m in _ESCAPE.finditer(body, a, b):
            yield m.end(1), m.end(), chr(int(m.group(2), 16)).encode()


raw_unicode = Transform(
    "raw_unicode",
    _raw_unicode,
    frozenset({_SSE, _NDJSON}),
    lambda body, kind: next(_json_lines(body, kind), None) is not None,
)
"""JSON `\\uXXXX` escapes written as the raw characters."""

# -- names ----------------------------------------------------------------------------------------

ALL: tuple[Transform, ...] = (
    crlf,
    cr,
    mixed,
    no_space,
    keepalive(),
    comments,
    ids,
    meta,
    retry,
    pad(),
    raw_unicode,
    blank_lines,
    no_final_newline,
    compact,
    pretty,
    bracket_lines,
)
"""What ``transform="all"`` runs, after the untransformed stream: every named transform alone."""
_NAMED = {t.name: t for t in ALL if t.name not in ("keepalive", "pad")}  # the two that take a value
_SHOWN = [*_NAMED, "keepalive[:COMMENT]", "pad[:N]"]
NETWORK: tuple[Transform, ...] = (keepalive(), comments, pad())
"""What networks and proxies do to a stream on its way (``transform="network"``): heartbeat comments and padding; a client that fails under one of these fails against the real provider behind a proxy or load balancer. (Re-chunking, the other thing networks do, is the chunking's job.)"""
CONFORMING: tuple[Transform, ...] = (
    crlf,
    cr,
    mixed,
    no_space,
    ids,
    meta,
    retry,
    raw_unicode,
    blank_lines,
    no_final_newline,
    compact,
    pretty,
    bracket_lines,
)
"""What another conforming server may send (``transform="conforming"``): other line endings, no space after the colon, ids, ``retry:``, event-only and id-only blocks, JSON escapes written raw, blank JSON lines, a JSON array laid out otherwise, a last JSON line without its newline; a client that fails under one of these breaks against another server (or a gateway that re-encodes), not necessarily against the provider the cassette was recorded from."""
SSE: tuple[Transform, ...] = tuple(t for t in ALL if _SSE in t.kinds)
"""Every transform of [`ALL`][ssemock.transforms.ALL] that can rewrite an SSE body (``transform="sse"``):
``"all"`` without the JSON-lines and JSON-array layouts, which an SSE cassette's matrix could only skip."""
NDJSON: tuple[Transform, ...] = tuple(t for t in ALL if _NDJSON in t.kinds)
"""Every transform that can rewrite a JSON-lines body (``transform="ndjson"``)."""
JSON_ARRAY: tuple[Transform, ...] = tuple(t for t in ALL if _ARRAY in t.kinds)
"""Every transform that can rewrite a JSON array stream (``transform="json_array"``)."""
SETS: dict[str, tuple[Transform, ...]] = {
    "all": ALL,
    "network": NETWORK,
    "conforming": CONFORMING,
    "sse": SSE,
    "ndjson": NDJSON,
    "json_array": JSON_ARRAY,
}
"""The named sets: each runs as alternatives (none, then each member alone) in a matrix. A
matrix's runs are fixed at collection, before a recording run has its cassette (and a recording
run makes the same test ids as its replay), so ``"all"`` cannot leave out what the cassette's
framing makes useless: those runs are reported skipped; name the framing's set to run only what
can apply."""


WEBSOCKET = "websocket"
"""The kind of the re-framings of WebSocket sessions among ``transform=`` (``fragments:N``, ``pings``,
``deflate``, ``no_deflate``; `ssemock.variants.websocket.frames`): no HTTP body is of it, so they change
no HTTP body."""


def _no_edits(body: bytes, kind: str) -> Iterable[Edit]:
    return ()


def get(name: str | Transform) -> Transform:
    """A transform from its short name: ``crlf``, ``cr``, ``mixed``, ``no_space``, ``comments``,
    ``ids``, ``meta``, ``retry``, ``raw_unicode``, ``blank_lines``, ``no_final_newline``,
    ``compact``, ``pretty``, ``bracket_lines``, ``keepalive[:COMMENT]``, ``pad[:N]``."""
    if isinstance(name, Transform):
        return name
    if not isinstance(name, str):
        raise ValueError(
            f"a transform is a name or a Transform, got {type(name).__name__} {name!r}; "
            f"valid names: {', '.join(_SHOWN)}"
        )
    if name.strip() in _NAMED:
        return _NAMED[name.strip()]
    head, sep, rest = name.strip().partition(":")
    if head == "keepalive":
        return keepalive(rest if sep and rest.startswith(":") else f": {rest}" if sep else ": ping")
    if head == "pad":
        if not sep:
            return pad()
        if not rest.strip().isdigit():
            raise ValueError(f"pad: the shift is a number of bytes, e.g. 'pad:7', got {name!r}")
        return pad(int(rest))
    if head in ("fragments", "pings", "deflate", "no_deflate"):  # a WebSocket session's re-framing
        return Transform(ws_frames.get(name).name, _no_edits, kinds=frozenset({WEBSOCKET}))
    raise unknown("transform", name, [*_NAMED, "keepalive", "pad"], shown=_SHOWN, head=head)


def alternatives(spec: str | Transform | Sequence[str | Transform] | None) -> list[list[Transform]]:
    """Transform chains to run a test under, one run each: ``"all"`` (none, then each of
    [`ALL`][ssemock.transforms.ALL] alone; ``"network"`` and ``"conforming"`` the same over [`NETWORK`][ssemock.transforms.NETWORK] and
    [`CONFORMING`][ssemock.transforms.CONFORMING]), ``"none,crlf,cr+keepalive"`` (comma: alternatives; plus: a chain), or a
    list of those."""
    if spec is None:
        return [[]]
    if isinstance(spec, Transform):
        return [[spec]]
    if isinstance(spec, str):
        if spec.strip() in SETS:
            return [[], *([t] for t in SETS[spec.strip()])]
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
