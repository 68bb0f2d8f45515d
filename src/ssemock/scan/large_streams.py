"""A stream too large to walk event by event (past 2 MiB): read about a MiB at a time, at C speed.

Every JSON string member's values are joined per member name, the data of non-JSON SSE events
joined, and each join scanned a window at a time (about 1 MiB of whole pieces, each window
starting with the one before's last pieces: a secret split across two windows is still whole in
one), so memory stays bounded however large the stream; every base64 run is decoded once. Per
segment of the body: one pass for the members (the accelerator's, from quote to quote; without it
a regex: events of a repeated shape split by their plan, `ssemock.scan.segment_plans`, else every
member found and grouped per name in one loop),
the data lines that are not JSON (one C pass with the accelerator, else a count that skips the
regex when every event's data is JSON), and a split of the base64
runs (of the strings and the text between them, each once, where a plan read the segment).
"""

from __future__ import annotations

import functools
import itertools
import json
import re
from collections.abc import Callable, Sequence
from typing import Protocol

from .. import framing
from ..framing.accelerator import b64_runs as _c_b64_runs
from ..framing.accelerator import data_lines as _c_data_lines
from ..framing.accelerator import members as _c_members
from ..framing.accelerator import plain as _c_plain
from .credential_shapes import _WHOLE, Hits, base64_text, has_b64_run, scan
from .fields import _FORM_MAX
from .seams import seam_hits, seams_clear
from .segment_plans import SegmentPlans, members

__all__ = ["LargeStream", "TextScan", "TextWalker", "cut_after", "large_stream", "segment_end", "text_scan"]


class TextScan(Protocol):
    """The scan of a decoded form: (its text, where it is in the field, its depth of decoding), and
    the UTF-8 bytes the text is, when they are at hand (``raw``: the scan need not encode it).
    ``text`` as bytes: ASCII in which the walk finds nothing to read past its shapes
    (`nothing_to_read`): only the shapes are searched, and no text is made of it."""

    def __call__(
        self, text: str | bytes, where: str, depth: int, *, raw: bytes | None = None, hits: Hits | None = None
    ) -> None: ...


class TextWalker(Protocol):
    """What scans a large stream's windows (`ssemock.scan.walk._Scan`)."""

    def text(self, field: str, text: str, path: str, depth: int, shapes: bool = True) -> None: ...

    def add(self, field: str, rule: str, value: str | bytes, preview: str, path: str = "") -> None: ...


def text_scan(walker: TextWalker, field: str) -> TextScan:
    """``walker``'s scan of the decoded forms of ``field``: the shapes searched in ``raw`` when
    given (a window of ASCII text: the bytes it was joined into; ``hits``: what `find_hits` finds
    in them, when known), then the rest of the scan."""

    def scan_text(
        text: str | bytes, where: str, depth: int, *, raw: bytes | None = None, hits: Hits | None = None
    ) -> None:
        if isinstance(text, bytes):  # ASCII with nothing to read past its shapes
            for s in scan(text, hits, text):
                walker.add(field, s.what, text[s.start : s.end].decode("ascii"), s.preview, where)
            return
        for s in scan(text, hits, raw):
            walker.add(field, s.what, text[s.start : s.end], s.preview, where)
        walker.text(field, text, where, depth, shapes=False)

    return scan_text


_TEXT_DATA_LINE = re.compile(rb"^data: ?+(?![{\[])([^\r\n]*)", re.M)  # the data of a non-JSON event
_JSON_DATA = (b"data: {", b"data: [", b"data:{", b"data:[")
# the bytes of a base64 or base64url run; every other byte a space (runs split at C speed)
_B64_SPLIT = bytes(
    c if chr(c).isascii() and (chr(c).isalnum() or chr(c) in "+/_-") else 32 for c in range(256)
)
_SEGMENT = 256 << 10  # a large stream is read this many bytes at a time (cut after a line: `cut_after`)
_WINDOW = 1 << 20  # a reassembled join is scanned this many bytes at a time ...
_OVERLAP = 1024  # ... with at least this much of the window before at its start (longer than any secret)


Piece = bytes | memoryview  # a long piece of a segment is a view of it (`_data_lines`'s)
Seams = tuple[list[int], bool, bool]
"""Where a window's pieces end in it, whether none holds an escape either, and whether every one is
also ASCII without ``=``, ``:`` or ``\\`` (`_unjoined`)."""


class _Join:
    """Pieces (one per event) joined and handed to ``scan`` a window at a time: whole pieces, about
    `_WINDOW` bytes, each window starting with the last pieces of the one before (at least
    `_OVERLAP` bytes), so that a secret split across pieces is whole in some window. Only a
    join of two pieces or more is scanned (one piece was scanned where it is stored). A segment's
    small pieces are kept joined (a piece of a few bytes costs about 50 more as a bytes object in a
    list); large ones as they are (a join would copy them once more).

    ``scan`` is also handed `_last`, the last window's join (and text, where one was made), to let
    go of once its own join exists (`_joined`): their blocks then lie below that join, kept for the
    next window's. Let go of as soon as scanned, they lay at the top of the heap, which glibc handed back
    to the kernel, and each window's ~2 MiB came back as fresh pages (a page fault every 4 KiB).

    Where every piece of a window is known to hold no shape anchor (each from a segment whose search
    found none: ``plain``) and the pieces are held as they are, ``scan`` is also handed the seams
    between them (`ssemock.scan.seams.seam_hits`: an anchor in the join spans one),
    and whether every piece is known to hold no escape either (``clean``), and whether every one is
    also bare (ASCII without ``=``, ``:`` or ``\\``: told at `extend`, while the segment's bytes are
    still in the cache, not when the window is read), else None."""

    def __init__(self, scan: Callable[[list[Piece], list[bytes | str], Seams | None], None]) -> None:
        self._scan = scan
        self._last: list[bytes | str] = []  # the last window's join and text (see above)
        self._blocks: list[Piece] = []  # the pieces held, joined a segment at a time
        self._tail: list[Piece] = []  # the last pieces held, at least _OVERLAP bytes when there are
        self._size = 0
        self._held = 0  # pieces held
        self._count = 0  # pieces seen
        self._sizes: list[int] = []  # the sizes of the last pieces held, as far back as they are plain
        self._clean = 0  # how many of the last pieces held are clean, as far back as they are plain
        self._bare = 0  # how many of them are bare too, as far back as they are clean

    def extend(self, pieces: Sequence[Piece], plain: bool = False, clean: bool = False) -> None:
        """The pieces of one segment, in order (``plain``: none holds a shape anchor; ``clean``:
        nor an escape)."""
        if not pieces:
            return
        size = sum(map(len, pieces))
        if len(pieces) << 10 <= size:  # pieces of a KiB or more on average: held as they are (no copy)
            self._blocks += pieces
            if plain:
                self._sizes += map(len, pieces)
                self._clean = self._clean + len(pieces) if clean else 0
                bare = clean and _plain(pieces if type(pieces) is list else list(pieces), _NOT_BARE)
                self._bare = self._bare + len(pieces) if bare else 0
            else:
                self._sizes, self._clean, self._bare = [], 0, 0
        else:
            self._blocks.append(b"".join(pieces))
            self._sizes, self._clean, self._bare = [], 0, 0
        self._size += size
        self._held += len(pieces)
        self._count += len(pieces)
        tail, size = [], 0
        for part in reversed(pieces):
            if size >= _OVERLAP:
                break
            tail.append(part)
            size += len(part)
        if size < _OVERLAP:  # the segment had too few bytes: the tail runs on into the ones before
            for part in reversed(self._tail):
                if size >= _OVERLAP:
                    break
                tail.append(part)
                size += len(part)
        self._tail = tail[::-1]
        if self._size >= _WINDOW:
            self._scan(self._blocks, self._last, self._seams())
            self._blocks = [b"".join(self._tail)]
            self._size, self._held = len(self._blocks[0]), len(self._tail)
            self._sizes = self._sizes[-self._held :] if len(self._sizes) >= self._held else []

    def _seams(self) -> Seams | None:
        """Where each piece held but the last ends in their join, when every one is plain, and
        whether every one is clean, and bare."""
        if len(self._sizes) != self._held:
            return None
        return (
            list(itertools.accumulate(self._sizes[:-1])),
            self._clean >= self._held,
            self._bare >= self._held,
        )

    def close(self) -> None:
        if self._count >= 2 and (self._count > self._held or self._held >= 2):
            self._scan(self._blocks, self._last, self._seams())
        self._blocks, self._tail, self._size, self._held, self._last = [], [], 0, 0, []
        self._sizes, self._clean, self._bare = [], 0, 0


_UPPER, _LOWER = re.compile(rb"[A-Z]"), re.compile(rb"[a-z]")  # base64 of text mixes cases


def large_stream(body: bytes, path: str, text: TextScan, cut: bytes) -> None:
    """Hand ``text`` each join of a large stream's pieces (see the module), and its base64 runs
    decoded; ``cut``: the byte its segments end after (`cut_after`)."""
    stream = LargeStream(path, text)
    pos, size = 0, len(body)
    while pos < size:  # a segment at a time
        end = segment_end(body, pos, cut)
        stream.segment(body, pos, end)
        pos = end
    stream.close()


def cut_after(content_type: str) -> bytes:
    """The byte a stream of ``content_type`` is cut after, into pieces searched one by one and
    into segments: a newline; in AWS eventstream, whose binary frames may hold none, a NUL (each
    frame's length and each header value's starts with one). No shape anchor, escape or
    credential word holds either, nor does a JSON string or a base64 run: the searches of the
    pieces, put together, find what the search of the whole body finds."""
    return b"\0" if framing.detect(content_type).name == "eventstream" else b"\n"


def segment_end(body: bytes, pos: int, cut: bytes) -> int:
    """Where the segment of ``body`` that starts at ``pos`` ends: after the first ``cut`` byte at
    least `_SEGMENT` bytes on, else at the end (`LargeStream.segment` is fed these cuts)."""
    end = body.find(cut, pos + _SEGMENT)
    return len(body) if end < 0 else end + 1


class LargeStream:
    """`large_stream` a segment at a time: a recording feeds each segment as it arrives
    (`ssemock.scan.incremental`), cut where `segment_end` cuts the whole body."""

    def __init__(self, path: str, text: TextScan, *, plans: bool = True) -> None:
        """``plans``: read segments of repeated events by `SegmentPlans` (off: every member by the
        member regex, the reference the plans are tested against); none with the accelerator,
        whose one pass over a segment's members costs less than a plan's split."""
        self._path, self._text = path, text
        self._plans = SegmentPlans() if plans and _members is members else None
        self._joins: dict[bytes, _Join] = {}
        self._data = _Join(functools.partial(_joined, text, path, b"data"))
        self._runs: set[bytes] = set()

    def segment(self, body: bytes, pos: int, end: int, plain: bool = False, clean: bool = False) -> None:
        """``body[pos:end]``, the next segment (``plain``: it holds no shape anchor, as its search
        found: the joins then search only the seams of its pieces for one; ``clean``: nor an
        escape, likewise)."""
        segment = body[pos:end]
        read = self._plans.read(segment) if self._plans is not None else None
        groups, runs = read if read is not None else (_members(segment), segment)
        joins = self._joins
        for name, group in groups.items():
            join = joins.get(name)
            if join is None:
                join = joins[name] = _Join(functools.partial(_joined, self._text, self._path, name))
            join.extend(group, plain, clean)
        self._data.extend(_data_lines(segment), plain, clean)
        # the base64 runs that mix cases (an id repeated in every event: decoded once), as _B64_RUN_BYTES finds them
        self._runs.update(_b64_runs(runs, 16))

    def close(self) -> None:
        """After the last segment: the joins' last windows and the base64 runs scanned."""
        for join in (self._data, *self._joins.values()):
            join.close()
        for run in self._runs:
            decoded = base64_text(run)
            if decoded is not None:
                self._text(decoded, f"{self._path} base64".strip(), 2)


_members = _c_members or members  # the optional C accelerator: what the member regex finds, in one pass


def _py_data_lines(segment: bytes) -> list[Piece]:
    """The data of every data line of ``segment`` whose value is not JSON (the reference of the
    accelerator's one pass): none looked for where every ``data:`` in it starts JSON."""
    return _TEXT_DATA_LINE.findall(segment) if _text_data(segment) else []


_data_lines = _c_data_lines or _py_data_lines  # the optional C accelerator: the same lines in one pass


def _py_b64_runs(data: bytes, least: int) -> set[bytes]:
    """The distinct base64 runs of ``data`` at least ``least`` bytes long that mix cases (base64 of
    text does: the only runs decoded; split at C speed: the reference of the accelerator's pass)."""
    runs = data.translate(_B64_SPLIT).split()
    return {r for r in runs if len(r) >= least and _UPPER.search(r) and _LOWER.search(r)}


_b64_runs = _c_b64_runs or _py_b64_runs


_LSTRIPPED = b" \t\n\x0b\x0c\r\x1c\x1d\x1e\x1f"  # the ASCII str.lstrip strips
_JSON_START = re.compile(b"[" + re.escape(_LSTRIPPED) + rb"]*[{\[]")  # the start of JSON after it


def nothing_to_read(raw: bytes) -> bool:
    """Whether the walk reads nothing past its shapes in the text of ``raw``, a window's ASCII
    join: no JSON, no form, no URL, no base64 run, as `ssemock.scan.walk._Scan.text` looks for them
    (at the depth of a join). Its text is then not made: a fresh MiB each window, whose new pages
    cost the scan of a stream of filler more than all its searches."""
    return not (
        _JSON_START.match(raw)
        or (len(raw) <= _FORM_MAX and b"=" in raw)
        or (b":" in raw and b"://" in raw)  # (":" first: one memchr, ~10x faster than the search)
        or raw.startswith((b"/", b"?", b"#"))
        or (len(raw) <= _WHOLE * 16 and has_b64_run(raw))
    )


def _py_plain(parts: list[Piece], stop: bytes) -> bool:
    """Whether every byte of ``parts`` is ASCII and none is one of ``stop``'s (the reference of
    the accelerator's pass, which reads the parts as they are, without a copy)."""
    return all((part := bytes(p)).isascii() and not any(c in part for c in stop) for p in parts)


_plain = _c_plain or _py_plain
_NOT_BARE = b"=:\\"  # what a bare piece holds none of (nor a byte past ASCII)
_TEXT_STARTS = frozenset(_LSTRIPPED + b"{[/?#")  # what a window needing no text may not start with


def _unjoined(parts: list[Piece], seams: Seams) -> bool:
    """Whether a window of pieces holding no shape anchor nor escape, each bare (``seams``: where
    they end, and that none holds an escape and each is bare) gives no finding, told without
    joining them (a copy of each byte): more than `_WHOLE` * 16 bytes of ASCII without ``=``, ``:``
    or ``\\`` and not starting as JSON or a path (`nothing_to_read` holds of it), and nothing found
    around its seams."""
    ends, _, bare = seams
    if not bare or not parts or not len(parts[0]) or parts[0][0] in _TEXT_STARTS:
        return False
    return sum(map(len, parts)) > _WHOLE * 16 and seams_clear(parts, ends)


def _text_data(segment: bytes) -> bool:
    """Whether some event's data in ``segment`` is not JSON (counted: the data lines against
    the JSON ones, form by form until they are all accounted for)."""
    data, json_data = segment.count(b"data:"), 0
    for form in _JSON_DATA:
        if json_data == data:
            return False
        json_data += segment.count(form)
    return json_data < data


def _joined(
    text: TextScan,
    path: str,
    name: bytes,
    parts: list[Piece],
    last: list[bytes | str],
    seams: Seams | None,
) -> None:
    """Scan the text of the join of ``parts``; ``last`` (the window before's join and text) let
    go of once this join exists, and this window's put in it (see `_Join`); ``seams``: where its
    parts end, when none holds a shape anchor (and whether none holds an escape either)."""
    if seams is not None and _unjoined(parts, seams):
        return
    joined = b"".join(parts)
    last.clear()
    last.append(joined)
    where, raw, hits = f"{path} reassembled {name.decode('ascii')}".strip(), None, None
    if name == b"data" or b"\\" not in joined:
        ascii = joined.isascii()
        hits = seam_hits(joined, *seams[:2]) if seams is not None and ascii else None
        if ascii and nothing_to_read(joined):
            text(joined, where, 2, hits=hits)
            return
        # (the text of ASCII is these very bytes: not encoded again)
        whole, raw = (joined.decode("ascii"), joined) if ascii else (joined.decode("utf-8", "replace"), None)
    else:  # the JSON escapes undone: json's scanner (orjson takes about 13x a long string's size)
        try:
            whole = json.loads(b'"' + joined + b'"')
        except ValueError:
            return
        if b"\\ud" in joined or b"\\uD" in joined:  # a surrogate escaped: none left alone
            whole = whole.encode("utf-8", "replace").decode("utf-8")
    last.append(whole)
    text(whole, where, 2, raw=raw, hits=hits)
