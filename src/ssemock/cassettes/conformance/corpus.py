"""The cases themselves: the WHATWG specification's examples, then line endings, the BOM, comments,
the data, event, id and retry fields, framing and characters, each with the decoder bug it
catches and chunk ends recorded where it is interesting."""

from __future__ import annotations

from collections.abc import Sequence

from ...framing.sse import decode
from .case import Case


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
