"""A conformance corpus for Server-Sent Events client authors.

The implementation of [`ssemock.conformance`][ssemock.conformance], where its public names are documented."""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ..framing.sse import Decoder, ServerSentEvent, decode
from ..variants import chunking as _chunking
from ..variants.chunking import Chunking

__all__ = [
    "DEFAULT_CHUNKINGS",
    "Case",
    "ChunkingSpec",
    "ConformanceError",
    "DecodeFn",
    "cases",
    "cases_by_name",
    "failures",
    "normalize",
]

DecodeFn = Callable[[list[bytes]], Iterable[Any]]
"""A decoder under test: takes the chunks of a body and returns the events it decodes."""
ChunkingSpec = str | Chunking
"""A chunking, or its name."""

DEFAULT_CHUNKINGS: tuple[Chunking, ...] = tuple(
    {
        c.name: c
        for c in (
            _chunking.coalesced,
            _chunking.as_recorded,
            _chunking.per_event,
            _chunking.mid_line,
            _chunking.mid_utf8,
            *_chunking.ALL,
            _chunking.fixed(3),
            _chunking.fixed(2),
            _chunking.fixed(1),
            _chunking.bytewise,
        )
    }.values()
)
"""The chunkings [`Case.check`][ssemock.conformance.Case.check] uses by default: every one of [`ssemock.chunking.ALL`][ssemock.chunking.ALL] and ``fixed:1``..``fixed:3``, simplest first (so a decoder that fails even unsplit is reported under ``coalesced``)."""

_FIELDS = ("event", "data", "id", "retry")
_WINDOW = 160  # bytes of body shown around a failure


class ConformanceError(AssertionError):
    """A decoder's events differ from the reference under some chunking (or it raised)."""

    def __init__(self, message: str, *, case: str, chunking: str, index: int | None) -> None:
        super().__init__(message)
        self.case = case
        """The name of the case that failed."""
        self.chunking = chunking
        """The chunking it failed under."""
        self.index = index
        """The first differing event, or None when the decoder raised."""


def _ours(event: object) -> bool:
    """Whether ``event`` is ssemock's own ServerSentEvent (every field is meaningful), told by the
    class's module and name: one from another import of ssemock (pytester re-imports it) is too."""
    kind = type(event)
    return kind.__module__ == ServerSentEvent.__module__ and kind.__qualname__ == ServerSentEvent.__qualname__


def normalize(events: Iterable[Any]) -> list[dict[str, Any]]:
    """Each event as a dict of the fields it carries (see the module docstring)."""
    out: list[dict[str, Any]] = []
    for ev in events:
        if _ours(ev):
            out.append({"event": ev.event, "data": ev.data, "id": ev.id, "retry": ev.retry})
        elif isinstance(ev, str):
            out.append({"data": ev})
        elif isinstance(ev, bytes):
            out.append({"data": ev.decode("utf-8", "replace")})
        elif isinstance(ev, tuple | list) and len(ev) == 2:
            out.append({"event": ev[0] or "message", "data": ev[1]})
        elif hasattr(ev, "data"):
            d: dict[str, Any] = {"data": ev.data}
            if hasattr(ev, "event"):
                d["event"] = ev.event or "message"
            if hasattr(ev, "id"):
                d["id"] = ev.id if ev.id is not None else ""
            if hasattr(ev, "retry"):
                d["retry"] = ev.retry
            out.append(d)
        else:
            raise TypeError(
                f"cannot compare decoder output {ev!r}: expected a ServerSentEvent, an object "
                "with .data, an (event, data) tuple or a data string"
            )
    return out


def _short(value: Any, limit: int = 120) -> str:
    text = repr(value)
    return text if len(text) <= limit else f"{text[: limit - 20]}...{text[-16:]} ({len(value)} chars)"


def _show(ev: dict[str, Any]) -> str:
    return "{" + ", ".join(f"{k}={_short(ev[k])}" for k in _FIELDS if k in ev) + "}"


def _marked(body: bytes, ends: Sequence[int], start: int, stop: int) -> str:
    """``body[start:stop]`` as escaped text with ``|`` at each chunk boundary."""
    cuts = [e for e in ends if start < e < stop]
    out, pos = [], start
    for e in [*cuts, stop]:
        out.append(repr(body[pos:e])[2:-1])
        pos = e
    return "|".join(out)


def _window(body: bytes, ends: Sequence[int], start: int, stop: int) -> str:
    """Where the chunk boundaries fell in ``body[start:stop]`` (shortened when long)."""
    start, stop = max(0, start), min(len(body), stop)
    if stop - start > _WINDOW:
        half = _WINDOW // 2
        text = f"{_marked(body, ends, start, start + half)} ... {_marked(body, ends, stop - half, stop)}"
    else:
        text = _marked(body, ends, start, stop)
    cuts = [e for e in ends if start < e < stop]
    listed = ", ".join(map(str, cuts[:12])) + (f", ... ({len(cuts)} in all)" if len(cuts) > 12 else "")
    where = f"boundaries at bytes {listed}" if cuts else "no boundary"
    return f"bytes {start}..{stop} of {len(body)} ({where}; '|' marks a boundary): {text}"


@dataclass(frozen=True)
class Case:
    """One conformance case: a body, the events it must decode to, and why it matters.

    ``ends`` are the chunk ends as "recorded" (used by the ``as_recorded`` chunking), chosen
    to cut where the case is interesting; empty means one chunk.
    """

    name: str
    """The case's name, as failures report it."""
    body: bytes
    """The body the decoder is fed."""
    expected: list[ServerSentEvent]
    """The events the body must decode to."""
    note: str
    """Why the case matters: the rule of the specification it checks."""
    ends: tuple[int, ...] = ()
    """The chunk ends as "recorded" (empty: one chunk)."""
    tags: tuple[str, ...] = ()
    """Labels to select cases by."""

    def __hash__(self) -> int:
        return hash((self.name, self.body))

    def chunks(self, chunking: ChunkingSpec) -> list[bytes]:
        """The body cut by ``chunking`` (a [`Chunking`][ssemock.chunking.Chunking] or its name)."""
        return _chunking.get(chunking)(self.body, list(self.ends) or None)

    def check(
        self, decode_fn: DecodeFn, chunkings: Iterable[ChunkingSpec] | ChunkingSpec | None = None
    ) -> None:
        """Run ``decode_fn`` on the body under every chunking; raise [`ConformanceError`][ssemock.conformance.ConformanceError] on a difference.

        ``chunkings``: strategies or their names (``"bytewise"``, ``"fixed:3"``, ``"at:17,40"``
        from [`ssemock.strategies.get`][ssemock.strategies.get], ``"all"``), a comma list of names, or a list of
        them; default [`DEFAULT_CHUNKINGS`][ssemock.conformance.DEFAULT_CHUNKINGS]. The error is for the first chunking that fails (simplest first); its message also lists
        the other chunkings that fail.
        """
        strategies = (
            list(DEFAULT_CHUNKINGS)
            if chunkings is None
            else _chunking.resolve(chunkings)
            if chunkings
            else []
        )
        first: ConformanceError | None = None
        also: list[str] = []
        want = normalize(self.expected)
        for strategy in strategies:
            error = self._check_one(decode_fn, strategy, want)
            if error is None:
                continue
            if first is None:
                first = error
            else:
                also.append(strategy.name)
        if first is not None:
            if also:
                first.args = (f"{first.args[0]}\n  also fails under: {', '.join(also)}",)
            raise first

    def _check_one(
        self, decode_fn: DecodeFn, strategy: Chunking, want: list[dict[str, Any]]
    ) -> ConformanceError | None:
        chunks = self.chunks(strategy)
        ends = list(itertools.accumulate(map(len, chunks)))
        head = f"conformance case {self.name!r} under chunking {strategy.name!r}"
        try:
            raw = list(decode_fn(list(chunks)))
        except Exception as exc:
            m = _first_raising_prefix(decode_fn, chunks)
            a, b = (ends[m - 2] if m >= 2 else 0), ends[m - 1]
            error = ConformanceError(
                f"{head}: the decoder raised {type(exc).__name__}: {exc}\n"
                f"  it first raises once fed chunk {m - 1} (bytes {a}..{b})\n"
                f"  case: {self.note}\n"
                f"  {_window(self.body, ends, a - 40, b + 40)}",
                case=self.name,
                chunking=strategy.name,
                index=None,
            )
            error.__cause__ = exc
            return error
        got = normalize(raw)
        for i in range(max(len(got), len(want))):
            g = got[i] if i < len(got) else None
            w = want[i] if i < len(want) else None
            if g is not None and w is not None and {k: w[k] for k in g} == g:
                continue
            if w is None:
                diff = f"expected no event {i} (only {len(want)}), got {_show(g or {})}"
            elif g is None:  # compare the fields the decoder does return
                shown = {k: w[k] for k in (got[0] if got else w)}
                diff = f"expected {_show(shown)}, got no event {i} (only {len(got)})"
            else:
                diff = f"expected {_show({k: w[k] for k in g})}, got {_show(g)}"
            start, stop = _event_span(self.body, i)
            return ConformanceError(
                f"{head}: event {i} differs: {diff}\n"
                f"  got {len(got)} events, expected {len(want)}\n"
                f"  case: {self.note}\n"
                f"  {_window(self.body, ends, start, stop)}",
                case=self.name,
                chunking=strategy.name,
                index=i,
            )
        return None


def _first_raising_prefix(decode_fn: DecodeFn, chunks: list[bytes]) -> int:
    """The fewest leading chunks the decoder raises on (binary search; all of them if it never does)."""
    lo, hi = 1, len(chunks)

    def raises(m: int) -> bool:
        try:
            list(decode_fn(chunks[:m]))
        except Exception:
            return True
        return False

    return max(lo + bisect.bisect_left(range(lo, hi), True, key=raises), 1)


def _event_span(body: bytes, index: int) -> tuple[int, int]:
    """Byte span of the block the reference dispatches as event ``index`` (or what follows the last)."""
    decoder = Decoder()
    dispatched = [0]
    for pos in range(len(body)):
        for _ in decoder.feed(body[pos : pos + 1]):
            dispatched.append(pos + 1)
    if index + 1 < len(dispatched):
        return dispatched[index], dispatched[index + 1]
    return dispatched[-1], len(body)


def _case(name: str, body: bytes, note: str, ends: Sequence[int] = (), tags: tuple[str, ...] = ()) -> Case:
    return Case(name, body, decode([body]), note, tuple(ends), tags)


def _at(body: bytes, marker: bytes, offset: int = 0, nth: int = 0) -> int:
    """The offset of the ``nth`` occurrence of ``marker`` in ``body``, plus ``offset``."""
    pos = -1
    for _ in range(nth + 1):
        pos = body.index(marker, pos + 1)
    return pos + offset


def _build() -> list[Case]:
    w = ("whatwg",)
    out: list[Case] = []
    add = out.append

    # -- the WHATWG HTML spec's own examples (section 9.2, server-sent events) ------------------
    add(
        _case(
            "whatwg_stock_ticker",
            b"data: YHOO\ndata: +2\ndata: 10\n\n",
            "spec example: three data lines form one event 'YHOO\\n+2\\n10' (joined with LF, no trailing LF)",
            tags=w,
        )
    )
    add(
        _case(
            "whatwg_multiline",
            b"data: This is the first message.\n\n"
            b"data: This is the second message, it\ndata: has two lines.\n\n"
            b"data: This is the third message.\n\n",
            "spec example: one event per blank-line-terminated block; a two-line block is one event",
            tags=w,
        )
    )
    add(
        _case(
            "whatwg_event_types",
            b"event: add\ndata: 73857293\n\nevent: remove\ndata: 2153\n\nevent: add\ndata: 113411\n\n",
            "spec example: the event field sets each event's type",
            tags=w,
        )
    )
    add(
        _case(
            "whatwg_four_blocks",
            b": test stream\n\ndata: first event\nid: 1\n\ndata:second event\nid\n\ndata:  third event\n\n",
            "spec example: a comment block dispatches nothing; 'id' without a value resets the last event "
            "ID to ''; 'data:  third event' keeps one of its two spaces",
            tags=w,
        )
    )
    add(
        _case(
            "whatwg_space_optional",
            b"data:test\n\ndata: test\n\n",
            "spec example: 'data:test' and 'data: test' are the same event (one space after the colon "
            "is optional)",
            tags=w,
        )
    )
    add(
        _case(
            "whatwg_empty_data",
            b"data\n\ndata\ndata\n\ndata:",
            "spec example: 'data' alone appends an empty line: events '' and '\\n'; the last, "
            "unterminated 'data:' is dropped",
            tags=w,
        )
    )

    # -- line endings --------------------------------------------------------------------------
    base = b"event: a\ndata: 1\ndata: 2\n\ndata: 3\n\n"
    add(_case("lf_endings", base, "LF line endings"))
    add(
        _case(
            "crlf_endings",
            base.replace(b"\n", b"\r\n"),
            "CRLF line endings: catches decoders that split on '\\n\\n' only or keep a trailing '\\r' "
            "in values",
        )
    )
    add(
        _case(
            "cr_endings",
            base.replace(b"\n", b"\r"),
            "bare CR line endings (legal, rare): catches decoders that only know LF/CRLF",
        )
    )
    body = b"data: a\r\ndata: b\rdata: c\n\r\ndata: d\n\r\ndata: e\r\rdata: f\r\n\n"
    add(
        _case(
            "mixed_endings",
            body,
            "CRLF, CR and LF mixed in one stream, including '\\n\\r\\n' (LF, then a blank line ended by "
            "CRLF) and '\\r\\r'",
            ends=[_at(body, b"\n\r\n", 2), _at(body, b"\r\r", 1)],
        )
    )
    body = b"data: x\n\r\ndata: y\n\r\n"
    add(
        _case(
            "lf_then_crlf",
            body,
            "'\\n\\r\\n' ends an event: an LF line end, then a blank line ended by CRLF",
            ends=[_at(body, b"\n\r\n", 1), _at(body, b"\n\r\n", 2)],
        )
    )
    body = b"data: a\r\ndata: b\r\n\r\ndata: c\r\n\r\n"
    add(
        _case(
            "crlf_split",
            body,
            "a CRLF split between two chunks ('...\\r' | '\\n...') is ONE line ending: a decoder that "
            "ends the line at '\\r' and then sees '\\n' as a blank line dispatches 'a' and 'b' apart",
            ends=[_at(body, b"\r\n", 1), _at(body, b"\r\n", 1, 2)],
        )
    )

    # -- BOM -----------------------------------------------------------------------------------
    body = b"\xef\xbb\xbfdata: x\n\ndata: y\n\n"
    add(
        _case(
            "bom",
            body,
            "a leading UTF-8 BOM is stripped (even split across chunks, as here): otherwise the first "
            "field is named '\\ufeffdata' and the first event is lost",
            ends=[1, 2],
        )
    )
    add(
        _case(
            "bom_only_once",
            b"\xef\xbb\xbf\xef\xbb\xbfdata: x\n\ndata: y\n\n",
            "only ONE leading BOM is stripped: the second makes the field name '\\ufeffdata', which is "
            "ignored, so only 'y' is dispatched",
        )
    )
    body = b"data: a\n\n\xef\xbb\xbfdata: b\n\n: ping\n\n\xef\xbb\xbfdata: c\n\ndata: d\n\n"
    add(
        _case(
            "bom_mid_stream",
            body,
            "a BOM is stripped only at the very start of the stream: at the start of a later block it is "
            "part of the field name ('\\ufeffdata', ignored), so only 'a' and 'd' are dispatched; catches "
            "decoders that strip a BOM per line or per chunk, and proxies that move it",
        )
    )
    body = b"data: a\n\rdata: b\r\n\rdata: c\n\r\ndata: d\r\n\n"
    add(
        _case(
            "blank_line_endings_per_event",
            body,
            "each event ends its lines its own way: '\\n\\r', '\\r\\n\\r', '\\n\\r\\n', '\\r\\n\\n' "
            "(ssemock's 'mixed' transform); a CR that ends a chunk ends the event at once: catches "
            "chunkers that hold a trailing CR back until the next chunk",
            ends=[_at(body, b"\n\r", 2), _at(body, b"\r\n\r", 3)],
        )
    )

    # -- comments and keep-alives ----------------------------------------------------------------
    body = (
        b": ping\n\n:\n\n: OPENROUTER PROCESSING\n\nid: 7\ndata: a\n\n"
        b": ping\n\n:\n\n: OPENROUTER PROCESSING\n\ndata: b\n\n: ping\n\n"
    )
    add(
        _case(
            "keepalive_comments",
            body,
            "comment lines (': ping', ':', ': OPENROUTER PROCESSING') and their blank lines dispatch "
            "nothing, and do not reset the last event ID",
            ends=[_at(body, b"PROCESSING", 3), _at(body, b"id: 7", 2)],
        )
    )
    add(
        _case(
            "comment_inside_event",
            b"data: a\n: note\ndata: b\n\n",
            "a comment between two data lines of one event is skipped: one event 'a\\nb'",
        )
    )

    # -- the data field ------------------------------------------------------------------------
    add(
        _case(
            "data_no_space",
            b'data:x\n\ndata:{"a":1}\n\n',
            "'data:x' without a space: catches decoders that strip a fixed 'data: ' (line[6:])",
        )
    )
    add(
        _case(
            "data_two_spaces",
            b"data:  two spaces\ndata: trailing \n\n",
            "only ONE leading space is stripped ('data:  x' keeps ' x'); trailing spaces are kept: "
            "catches .strip()/.lstrip()",
        )
    )
    add(
        _case(
            "colon_in_value",
            b'data: a: b:c\ndata: {"url": "http://x:80"}\n\n',
            "the field ends at the FIRST colon; the value may hold more: catches split(':')",
        )
    )
    add(
        _case(
            "multiline_data",
            b"data: line1\ndata:\ndata: line3\n\n",
            "multi-line data: lines joined with LF, an empty data line gives an empty line in between",
        )
    )
    add(
        _case(
            "empty_data",
            b"data:\n\ndata: \n\n",
            "'data:' and 'data: ' each dispatch an event with empty-string data (the data buffer is "
            "'\\n', not empty)",
        )
    )
    add(
        _case(
            "field_without_colon",
            b"data\ndata: x\n\nevent\ndata: y\n\n",
            "a line without a colon is a field with an empty value: 'data' adds an empty line, "
            "'event' sets the type to '' (so 'message')",
        )
    )
    add(
        _case(
            "unknown_fields",
            b"foo: bar\ndata: a\nDATA: no\nData: no\n data: no\nretry\nid:\x00\n\n",
            "unknown fields ('foo', 'DATA', 'Data', ' data' with a leading space) are ignored; field "
            "names are case-sensitive and not trimmed",
        )
    )
    add(_case("nul_in_data", b"data: a\x00b\n\n", "a NUL byte in data is kept (only 'id' values reject NUL)"))

    # -- event, id, retry -------------------------------------------------------------------------
    add(
        _case(
            "event_type_reset",
            b"event: add\ndata: 1\n\ndata: 2\n\nevent: remove\ndata: 3\n\n",
            "the event type is reset to 'message' after each dispatch: catches decoders that keep the "
            "last 'event:'",
        )
    )
    add(
        _case(
            "event_without_data",
            b"event: ping\n\ndata: x\n\n",
            "a block with an event type but no data dispatches NOTHING (empty data buffer) and still "
            "resets the type: the next event is a 'message'",
        )
    )
    add(
        _case(
            "id_with_nul",
            b"id: 1\ndata: a\n\nid: 2\x003\ndata: b\n\n",
            "an 'id' value containing NUL is ignored: 'b' keeps the last event ID '1'",
        )
    )
    add(
        _case(
            "id_persists",
            b"id: 1\ndata: a\n\ndata: b\n\nid\ndata: c\n\nid: 5\ndata: d\n\n",
            "the last event ID persists across events until an 'id' field changes it ('id' alone "
            "resets it to '')",
        )
    )
    add(
        _case(
            "id_only_block",
            b"id: 5\n\ndata: d\n\n",
            "a block with only 'id' sets the last event ID but dispatches nothing (empty data buffer)",
        )
    )
    add(
        _case(
            "retry_digits_only",
            b"retry: 1000\ndata: a\n\nretry: 10a\ndata: b\n\nretry:\ndata: c\n\nretry: 500\nretry: x\ndata: d\n\n",
            "'retry' takes ASCII digits only: '1000' is set; '10a' and '' are ignored; an invalid retry "
            "does not undo a valid one in the same block",
        )
    )
    add(
        _case(
            "retry_not_an_int",
            "retry: -1\ndata: a\n\nretry: +5\ndata: b\n\nretry:  10\ndata: c\n\nretry: 1_000\ndata: d\n\n"
            "retry: \u0663\ndata: e\n\nretry: 1.5\ndata: f\n\n".encode(),
            "'retry' is ignored unless its value is only ASCII digits: '-1', '+5', ' 10', '1_000', "
            "'\u0663' (an Arabic-Indic digit) and '1.5' are all ignored: catches int(value)",
        )
    )
    add(
        _case(
            "retry_only_block",
            b"retry: 3000\n\ndata: x\n\n",
            "a block with only 'retry' dispatches nothing; the next event's block has no retry",
        )
    )

    # -- framing ------------------------------------------------------------------------------------
    add(
        _case(
            "unterminated_last_event",
            b"data: a\n\ndata: b\n",
            "an event not ended by a blank line when the stream ends is discarded, even if its line is "
            "complete: catches decoders that flush the buffer at EOF",
        )
    )
    add(
        _case(
            "extra_blank_lines",
            b"\n\n\ndata: a\n\n\n\n\ndata: b\n\n\n",
            "blank lines with an empty data buffer dispatch nothing",
        )
    )
    body = b'data: {"choices":[{"delta":{"content":"Hi"}}]}\n\ndata: [DONE]\n\n'
    add(
        _case(
            "done_split",
            body,
            "'data: [DONE]' arriving split ('[DO' | 'NE]'): catches sentinel checks on raw chunks",
            ends=[_at(body, b"[DONE]", 3), _at(body, b"[DONE]", 6)],
        )
    )
    add(
        _case(
            "data_after_done",
            b"data: a\n\ndata: [DONE]\n\ndata: b\n\nevent: usage\ndata: {}\n\n",
            "'[DONE]' is an application-level sentinel, not part of SSE: a decoder must still yield the "
            "events after it",
        )
    )

    # -- characters -----------------------------------------------------------------------------
    add(
        _case(
            "unicode_line_separators",
            "data: a\u2028b\u2029c\u0085d\n\n".encode(),
            "U+2028, U+2029 and U+0085 inside data are ordinary characters, not line ends: catches "
            "str.splitlines()",
        )
    )
    add(
        _case(
            "ascii_separators_in_data",
            b"data: a\x0bb\x0cc\x1cd\x1de\x1ef\n\n",
            "VT, FF and FS/GS/RS (\\x0b \\x0c \\x1c-\\x1e) inside data are not line ends: catches "
            "str.splitlines()",
        )
    )
    body = "data: é ü 世界 😀 🇯🇵\nid: 世\n\nevent: ü\ndata: ok\n\n".encode()
    add(
        _case(
            "multibyte_utf8",
            body,
            "2-, 3- and 4-byte UTF-8 characters in data, id and event: bytewise and fixed:1..3 split "
            "each at every offset: catches decoding each chunk on its own",
            ends=[_at(body, "世".encode(), 1), _at(body, "😀".encode(), 2), _at(body, "😀".encode(), 3)],
        )
    )
    add(
        _case(
            "invalid_utf8",
            b"data: a\xffb\xe4\xb8\ndata: \xc3\n\n",
            "invalid UTF-8 becomes U+FFFD (one per maximal invalid subpart) and never ends a line "
            "or an event",
        )
    )
    big = ("data: " + "x" * 3000 + "é" * 500 + "\n\n").encode()
    add(_case("long_line", big + b"data: after\n\n", "a 4 KiB line: catches fixed-size line buffers"))
    return out


_CASES: tuple[Case, ...] = ()


def cases() -> list[Case]:
    """Every conformance case, in a stable order."""
    global _CASES
    if not _CASES:
        _CASES = tuple(_build())
    return list(_CASES)


def cases_by_name() -> dict[str, Case]:
    """The cases keyed by name."""
    return {c.name: c for c in cases()}


def failures(
    decode_fn: DecodeFn,
    chunkings: Iterable[ChunkingSpec] | ChunkingSpec | None = None,
    only: Iterable[str] | None = None,
) -> dict[str, ConformanceError]:
    """Run every case (or the named ones); the errors of those that fail, by case name."""
    wanted = None if only is None else set(only)
    out: dict[str, ConformanceError] = {}
    for case in cases():
        if wanted is not None and case.name not in wanted:
            continue
        try:
            case.check(decode_fn, chunkings)
        except ConformanceError as exc:
            out[case.name] = exc
    return out
