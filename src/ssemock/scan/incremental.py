"""A response body scanned while it is recorded, so the save at exit does not scan it again.

A recording (`ssemock.plan.record.Recorder`) feeds a `BodyScan` every piece of an event stream's
body as it arrives. The scan is the one `ssemock.scan.walk.scan_interaction` runs on a whole
body, done a segment at a time: in its first MiB each event is decoded (the SSE decoder does not
depend on where the body is cut) and walked as it completes, its string pieces collected per JSON
path; the events of the second MiB are walked at the save, should the body end before 2 MiB; past
2 MiB the large-stream pass (`ssemock.scan.large_streams.LargeStream`) reads it in the very
segments it cuts a whole body into, from the first byte on (the walk so far is dropped: the events
of the second MiB are never walked). What is left for the end is what
only the whole body can give: the shapes, escapes and credential-named members of the body as
stored (C-speed passes), and the text reassembled across events. The findings are those of the
scan at save, in the same order; `findings` hands them over only for the body that was fed, under
the headers it was scanned with (a hook that rewrites the response gets the whole scan again).

Memory stays bounded as in the scan at save: the event walk keeps what it keeps for a body of
2 MiB at most, the large-stream pass about a MiB per member name, and the segments fed are the
recording's own bytes (one segment joined at a time).
"""

from __future__ import annotations

import bisect
import operator
from collections.abc import Callable
from typing import Any

from .. import framing
from . import incremental_framings
from .credential_shapes import find_hits
from .fields import word_hits
from .large_streams import _SEGMENT, LargeStream, cut_after, text_scan
from .prescanned import scanned_as_recorded
from .walk import _DEEP_MAX, Finding, _Scan, wide_charset

__all__ = ["BodyScan", "scanned_as_recorded"]

_FIELD = "response.body"
_JSON_FRAMINGS = ("ndjson", "json_array")  # each event JSON: no plain data
_START = operator.itemgetter(1)  # where an anchor hit starts
_STEP = 64 << 10  # events are decoded and walked at least this many bytes at a time (cut after a
# `_cut_after` byte): a piece's events are read in runs of up to 256 (`ssemock.scan.event_plans.Shapes.bulk`),
# fewer fixed steps a MB
_WALK_AHEAD = 1 << 20  # events past this byte are walked at the save (`_finish`), if the body stays under
# _DEEP_MAX: a body that passes it is scanned by the large-stream pass alone, so their walk would be thrown away


def _content_type(response: Any) -> str:
    return next((v for k, v in response.headers if k.lower() == "content-type"), "") or ""


def _fold(pieces: list[str], joined: dict[str, int], key: str) -> None:
    """Join the parts of ``pieces`` after its earlier joins into one more, once they are over 256:
    many short strings held in a few long ones, each character copied once (the join of every part
    but the last, each time, copied the text held so far again: quadratic in it)."""
    done = joined.get(key, 0)
    if len(pieces) - done > 256:
        pieces[done:-1] = ["".join(pieces[done:-1])]
        joined[key] = done + 1


def _parts(pieces: list[bytes], skip: int, end: int) -> list[bytes | memoryview]:
    """``pieces`` but for the first ``skip`` bytes of the first and what follows ``end`` in the
    last, those two cut as views (joined, a view is copied once; a slice was copied twice)."""
    parts: list[bytes | memoryview] = list(pieces)
    if skip or end < len(pieces[-1]):
        parts[-1] = memoryview(pieces[-1])[:end]
        if skip:
            parts[0] = memoryview(pieces[0])[skip : end if len(pieces) == 1 else None]
    return parts


class BodyScan:
    """The scan of one response body, fed as it arrives (`feed`), read at the save (`findings`).

    Made for a body whose content type alone says it is an SSE stream, stored as received (no
    ``Content-Encoding`` left on it); `wanted` says whether a response is one."""

    def __init__(self, content_type: str, so_far: Callable[[], bytes | None] | None = None) -> None:
        """``so_far``: the body fed so far (the recording's own bytes: the scan then keeps no copy
        of them for the large-stream pass, should the body pass 2 MiB); None when it is gone (the
        save then scans the body itself)."""
        self.content_type = content_type
        self._so_far = so_far
        self._size = 0  # bytes fed
        self._cut_after = cut_after(content_type)  # what a piece ends after: a newline (eventstream: a NUL)
        self._line: list[bytes | memoryview] = []  # the parts fed since the last piece (cut after that byte)
        self._line_size = 0
        self._at = 0  # where the next piece starts in the body
        self._anchors: list[tuple[int, int]] = []  # what the searches find in the pieces so far
        self._escapes: list[int] = []
        self._words: list[tuple[int, int]] = []
        self._kept: list[bytes] = []  # the pieces, while the body is small enough to walk (no so_far)
        self._walk: _Scan | None = _Scan(0)
        self._unwalked: int | None = None  # where the events left to the save begin (`_WALK_AHEAD`)
        self._decoder: incremental_framings.Framed | None = incremental_framings.decoder(content_type)
        self._events = 0
        self._plain: list[str] = []
        self._joined: dict[str, int] = {}  # per piece list (the plain data's: ""), its parts that are joins
        self._large = _Scan(0)
        self._stream: LargeStream | None = None
        self._segment: list[bytes] = []  # the large-stream pass's segment so far ...
        self._skip = 0  # ... but for this many bytes of its first piece (in the segment before)
        self._segment_size = 0
        self._segment_at = 0  # where the segment so far starts in the body
        self._done: list[Finding] | None = None
        self.broken = False  # something went wrong: the save scans the body itself

    @staticmethod
    def wanted(content_type: str) -> bool:
        """Whether a body of this content type is scanned as it arrives (a stream of a framing
        `ssemock.scan.incremental_framings` decodes)."""
        media = content_type.split(";")[0].strip().lower()
        return incremental_framings.wanted(media) and wide_charset(content_type, b"") is None

    def feed(self, data: bytes) -> None:
        """The next bytes of the body, in order."""
        self.feed_parts([data])

    def feed_parts(self, parts: list[bytes]) -> None:
        """The next bytes of the body, in order, in the parts they arrived in (a recording's chunks
        since the last call): the large-stream pass holds them as they are (its segments join
        them once); before it, they are joined."""
        size = sum(map(len, parts))
        if self.broken or not size:
            return
        if self._done is not None:  # more after the findings were read: the save scans it whole
            self.broken = True
            return
        try:
            self._size += size
            if self._stream is not None:  # the large-stream pass: no piece, searched a segment at a time
                self._large_pieces(parts)
                return
            line = self._line
            line += parts
            self._line_size += size
            if self._line_size >= _STEP:  # cut after the last `_cut_after` byte of these parts, if any
                k = len(parts)
                while k and (end := parts[k - 1].rfind(self._cut_after) + 1) == 0:
                    k -= 1
                if k:
                    k += len(line) - len(parts) - 1  # the part cut, in line
                    part, rest = line[k], line[k + 1 :]
                    if end < len(part):  # (a view: the join below copies it, once)
                        line[k], rest = memoryview(part)[:end], [part[end:], *rest]
                    self._line, self._line_size = rest, sum(map(len, rest))
                    self._piece(b"".join(line[: k + 1]))  # (the parts joined once; one joined is itself)
                    if self._stream is not None:  # the large-stream pass began: the rest fed to it
                        self._large_pieces(self._line)
                        self._line, self._line_size = [], 0
        except Exception:  # never fail a recording: the save scans the body as a whole instead
            self.broken = True

    def _piece(self, piece: bytes, whole: bool = False) -> None:
        """The next piece of the body (it ends after a `_cut_after` byte, but for the last;
        ``whole``: it is the whole body)."""
        self._search(piece)
        if self._walk is not None and self._size > _DEEP_MAX:  # too large to walk: the large-stream pass
            self._walk = self._decoder = None
            self._plain = []
            self._stream = LargeStream("", text_scan(self._large, _FIELD))
            kept, self._kept = self._kept, []
            if self._so_far is not None:  # the pieces before this one
                body = self._so_far()
                if body is None:
                    raise LookupError("the recording is gone")  # broken: the save scans the body itself
                self._large_body(body, self._at - len(piece))
            self._large_pieces(kept)
        if self._stream is not None:
            self._large_pieces([piece])
            return
        if self._so_far is None:
            self._kept.append(piece)
        start = self._at - len(piece)
        if self._unwalked is None and start >= _WALK_AHEAD:
            self._unwalked = start
        if self._unwalked is None:
            self._walk_piece(piece, whole)

    def _walk_piece(self, piece: bytes, whole: bool = False) -> None:
        """Decode and walk the events ``piece`` completes; the piece lists joined as they grow.
        The whole body in one piece (a short stream, walked at the save) is walked as the scan
        of a whole body walks it: no event plans under `PLANNED_MIN` events (their regexes cost
        more than they save: ~0.5 ms a recording of a few events)."""
        assert self._walk is not None and self._decoder is not None
        events = self._decoder.feed(piece)
        if whole:
            self._walk.shapes.whole(len(events))
        self._walked(events)
        joined = self._joined
        for key, pieces in self._walk.pieces.items():  # joined as they come (two parts kept: still a join)
            if not key.endswith(".bytes"):  # (AWS payload parts: decoded one by one)
                _fold(pieces, joined, key)
        _fold(self._plain, joined, "")

    def _search(self, text: bytes) -> None:
        """The searches `_finish` hands the scan of the body as stored, over ``text``, the body's
        next bytes (cut after a `_cut_after` byte, but for the last: the hits are those of the whole
        body, `ssemock.scan.large_streams.cut_after`)."""
        (anchors, escapes), words = find_hits(text, self._at), word_hits(text, self._at)
        self._anchors += anchors
        self._escapes += escapes
        self._words += words
        self._at += len(text)

    def _walked(self, events: list[Any]) -> None:
        """Walk the next events. An event of a JSON framing (JSON lines, a JSON array) that is no
        JSON after all (a `ssemock.scan.incremental_framings.Text` the walk took for plain data)
        raises, where the framing's decoder raises: the save then scans the body itself."""
        assert self._walk is not None and self._decoder is not None
        self._walk.stream(_FIELD, self._events, events, "", self._plain)
        self._events += len(events)
        if self._plain and self._decoder.name in _JSON_FRAMINGS:
            raise ValueError(f"{self._decoder.name}: an event that is no JSON")

    def _large_body(self, body: bytes, end: int) -> None:
        """The body's first ``end`` bytes, read before the large-stream pass began: each whole
        segment handed over where it lies in ``body``, the rest held as a piece (held whole, it was
        sliced again at every segment cut from it: ~7 MiB copied for 2 MiB)."""
        assert self._stream is not None
        at = 0
        while (cut := body.find(self._cut_after, at + _SEGMENT, end)) >= 0:
            self._stream.segment(body, at, cut + 1, *self._plainness(at, cut + 1))
            at = cut + 1
        self._segment_at = at
        if at < end:
            self._large_pieces([body[at:end]])

    def _large_pieces(self, pieces: list[bytes]) -> None:
        """The body's next pieces, held as they are until they make whole segments, cut where
        `ssemock.scan.large_streams.segment_end` cuts a whole body: each ends after the first
        `_cut_after` byte at least `_SEGMENT` bytes after its start."""
        assert self._stream is not None
        self._segment += pieces
        self._segment_size += sum(map(len, pieces))
        if self._segment_size > _SEGMENT:
            self._cut(final=False)

    def _cut(self, final: bool) -> None:
        """Hand the stream each whole segment of the pieces held (the last one too when ``final``),
        each joined once from the pieces it spans (the parts of a piece it starts or ends in as
        views of it: no slice copied), and search its bytes not searched yet (`_search`: the pieces
        fed since the pass began are not)."""
        assert self._stream is not None
        pieces, skip = self._segment, self._skip
        start = self._segment_at
        while pieces:
            at = -skip  # where pieces[k] starts in the segment (the first one's skipped bytes before it)
            for k in range(len(pieces)):  # k: the piece the segment ends in, after the loop
                piece = pieces[k]
                if at + len(piece) > _SEGMENT:  # a cut byte _SEGMENT bytes on or later ends it
                    cut = piece.find(self._cut_after, max(0, _SEGMENT - at))
                    if cut >= 0:
                        break
                at += len(piece)
            else:  # none: the segment runs on into pieces still to come, or to the body's end
                if final:
                    self._segment_cut(b"".join(_parts(pieces, skip, len(pieces[-1]))), start)
                    pieces, skip = [], 0
                break
            end = cut + 1
            segment = b"".join(_parts(pieces[: k + 1], skip, end))
            self._segment_cut(segment, start)
            start += len(segment)
            pieces, skip = (pieces[k:], end) if end < len(piece) else (pieces[k + 1 :], 0)
        self._segment, self._skip, self._segment_at = pieces, skip, start
        self._segment_size = sum(map(len, pieces)) - skip

    def _segment_cut(self, segment: bytes, start: int) -> None:
        """Hand the stream ``segment``, which starts at ``start`` in the body, searched past `_at`
        (which lies after a cut byte in it, or at its start: the first segment after the pass
        began holds pieces searched before)."""
        assert self._stream is not None
        if start + len(segment) > self._at:
            self._search(segment if start == self._at else segment[self._at - start :])
        self._stream.segment(segment, 0, len(segment), *self._plainness(start, start + len(segment)))

    def _plainness(self, start: int, end: int) -> tuple[bool, bool]:
        """Whether the body's bytes from ``start`` to ``end`` (searched) hold no shape anchor, and
        whether they hold no escape either."""
        k = bisect.bisect_left(self._anchors, start, key=_START)
        if k < len(self._anchors) and self._anchors[k][1] < end:
            return False, False
        k = bisect.bisect_left(self._escapes, start)
        return True, k == len(self._escapes) or self._escapes[k] >= end

    def findings(self, response: Any) -> list[Finding] | None:
        """What the scan at save finds in ``response``'s body (as interaction 0), or None: not the
        body fed (another length), another content type, an encoding or a charset the scan
        decodes first, or the scan broke off."""
        body = response.body
        if (
            self.broken
            or len(body) != self._size
            or _content_type(response) != self.content_type
            or any(k.lower() == "content-encoding" for k, _ in response.headers)
            or wide_charset(self.content_type, body) is not None
        ):
            return None
        if self._done is None:
            try:
                self._done = self._finish(body)
            except Exception:
                self.broken = True
                return None
        return self._done

    def _finish(self, body: bytes) -> list[Finding]:
        if self._line:
            last = b"".join(self._line)
            self._line, self._line_size = [], 0
            self._piece(last, whole=self._at == 0)
        if self._stream is not None:  # (its last segment searched, for the scan of the body as stored)
            self._cut(final=True)
        head = _Scan(0)  # the body as stored: shapes, escapes, credential-named members
        head.raw(_FIELD, body, ((self._anchors, self._escapes), self._words))
        self._anchors, self._escapes, self._words, self._kept = [], [], [], []  # let go before the write
        if self._stream is not None:
            self._stream.close()
            found = head.found + self._large.found
        else:
            assert self._walk is not None and self._decoder is not None
            if self._unwalked is not None:  # the events left for the save: the body stayed under _DEEP_MAX
                for at in range(self._unwalked, len(body), _STEP):
                    self._walk_piece(body[at : at + _STEP])
            self._walked(list(self._decoder.close()))
            if self._decoder.name != framing.detect(self.content_type, body).name:
                raise LookupError("the save decodes another framing")  # (a JSON body that is no array)
            self._walk.joined(_FIELD, "", self._plain)
            found = head.found + self._walk.found
        self._walk, self._decoder, self._stream, self._plain = None, None, None, []
        return found
