"""ssemock.sse against the WHATWG HTML "event stream interpretation" algorithm.

https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation

Where httpx-sse deviates from the spec (each one checked by running it, in
``test_httpx_sse_deviates`` below; httpx-sse as fed by ``EventSource.iter_sse``: httpx's
incremental UTF-8 ``TextDecoder``, ``SSELineDecoder``, ``SSEDecoder.decode`` per line):

1. BOM: a leading U+FEFF is not stripped; it becomes part of the first field name, so a first
   ``data`` field is ignored and the first event is lost (also when the BOM is split).
2. ``retry``: parsed with ``int()``, so values the spec ignores are accepted: `` 1000`` (two
   spaces after the colon), ``10 `` (trailing space), ``+5``, ``-1``, ``1_000`` and non-ASCII
   digits such as ``١٢``.
3. Empty data buffer: a block with no ``data`` field still dispatches an event when an
   ``event``, ``id`` or ``retry`` field was seen (``event: ping\\n\\n`` gives an event with
   type "ping" and data ""); the spec dispatches nothing.
4. Consequence of 3: once an ``id`` was seen, the last event ID persists, so *every* further
   blank line -- e.g. a doubled blank line -- dispatches an extra empty event.

Where it follows the spec (also checked below): CR / LF / CRLF line endings, a CRLF split
across chunks, U+2028 / U+0085 / VT / FF kept as data, invalid UTF-8 as U+FFFD, ``id`` with
NUL ignored, ``retry`` values ``10a`` and empty ignored, unterminated final event dropped, the
spec's examples.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import dataclasses
import pickle
import random
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from typing import Any

import pytest
from httpx._decoders import TextDecoder
from httpx_sse._decoders import SSEDecoder as HttpxSSEDecoder
from httpx_sse._decoders import SSELineDecoder
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from seeded import binary, seeded, sized, some, unicode_text

from ssemock import sse
from ssemock.framing import _speedups
from ssemock.sse import Decoder, ServerSentEvent, adecode, iter_decode

E = ServerSentEvent
Event = tuple[str, str, str, "int | None"]


def feed_each(chunks: Iterable[bytes]) -> list[ServerSentEvent]:
    """The incremental path: one ``Decoder.feed`` per chunk, then ``close``."""
    decoder = Decoder()
    events = [event for chunk in chunks for event in decoder.feed(chunk)]
    return events + decoder.close()


def decode(chunks: Iterable[bytes]) -> list[ServerSentEvent]:
    """The events through the incremental path (one ``Decoder.feed`` per chunk), checked equal to
    the public ``ssemock.sse.decode`` (which parses the joined chunks) and ``iter_decode`` (which
    feeds a chunk without a line ending with the next)."""
    chunks = list(chunks)
    fed = feed_each(chunks)
    assert sse.decode(chunks) == list(iter_decode(chunks)) == fed
    return fed


# --- a literal, character-by-character transcription of the spec, as an oracle --------------


def spec_decode(stream: bytes) -> list[ServerSentEvent]:
    """The spec's algorithm, one character at a time, on the whole stream at once."""
    return spec_run(stream)[0]


def spec_run(stream: bytes, last_event_id: str = "") -> tuple[list[ServerSentEvent], str]:
    """The spec's events, and its last event ID string when the stream ends (a new connection
    starts its buffer from ``last_event_id``, as browsers and ``Last-Event-ID`` resumption do)."""
    text = stream.decode("utf-8", "replace")  # UTF-8 decode: U+FFFD per maximal subpart
    if text.startswith("\ufeff"):  # ...which strips one leading BOM
        text = text[1:]
    lines: list[str] = []
    line: list[str] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c == "\r":
            lines.append("".join(line))
            line = []
            if i + 1 < len(text) and text[i + 1] == "\n":
                i += 1
        elif c == "\n":
            lines.append("".join(line))
            line = []
        else:
            line.append(c)
        i += 1
    # the unterminated last line (if any) is discarded along with any pending event
    data, event_type, last_id, retry = "", "", last_event_id, None
    id_string = last_event_id
    events: list[ServerSentEvent] = []
    for line_ in lines:
        if line_ == "":
            id_string = last_id  # dispatch, step 1: even a block without data sets the string
            if data == "":
                event_type, retry = "", None
                continue
            if data.endswith("\n"):
                data = data[:-1]
            events.append(E(event_type or "message", data, last_id, retry))
            data, event_type, retry = "", "", None
            continue
        if line_.startswith(":"):
            continue
        if ":" in line_:
            field, value = line_.split(":", 1)
            if value.startswith(" "):
                value = value[1:]
        else:
            field, value = line_, ""
        if field == "event":
            event_type = value
        elif field == "data":
            data += value + "\n"
        elif field == "id":
            if "\0" not in value:
                last_id = value
        elif field == "retry":
            if value and all(c in "0123456789" for c in value):
                retry = int(value)
    return events, id_string


def split_at(stream: bytes, cuts: Iterable[int]) -> list[bytes]:
    bounds = sorted({min(max(c, 0), len(stream)) for c in cuts} | {0, len(stream)})
    return [stream[a:b] for a, b in zip(bounds, bounds[1:])]


def bytewise(stream: bytes) -> list[bytes]:
    return [stream[i : i + 1] for i in range(len(stream))]


def httpx_sse_events(chunks: Iterable[bytes]) -> list[Event]:
    """httpx-sse, fed as ``EventSource.iter_sse`` feeds it (``Response.iter_text`` lines)."""
    text_decoder = TextDecoder("utf-8")
    lines = SSELineDecoder()
    decoder = HttpxSSEDecoder()

    def texts() -> Iterator[str]:
        for chunk in chunks:
            text = text_decoder.decode(chunk)
            if text:
                yield text
        text = text_decoder.flush()
        if text:
            yield text

    out: list[Event] = []
    for text in texts():
        for line in lines.decode(text):
            sse = decoder.decode(line.rstrip("\n"))
            if sse is not None:
                out.append((sse.event, sse.data, sse.id, sse.retry))
    for line in lines.flush():
        sse = decoder.decode(line.rstrip("\n"))
        if sse is not None:
            out.append((sse.event, sse.data, sse.id, sse.retry))
    return out


def tuples(events: Iterable[ServerSentEvent]) -> list[Event]:
    return [(e.event, e.data, e.id, e.retry) for e in events]


def check(stream: bytes, expected: list[ServerSentEvent]) -> None:
    """``stream`` gives ``expected`` whole, byte by byte, and per the oracle."""
    assert decode([stream]) == expected
    assert decode(bytewise(stream)) == expected
    assert spec_decode(stream) == expected


# --- the spec's examples ----------------------------------------------------------------------


def test_spec_example_stock_ticker() -> None:
    check(b"data: YHOO\ndata: +2\ndata: 10\n\n", [E(data="YHOO\n+2\n10")])


def test_spec_example_four_blocks() -> None:
    stream = b": test stream\n\ndata: first event\nid: 1\n\ndata:second event\nid\n\ndata:  third event\n\n"
    check(
        stream, [E(data="first event", id="1"), E(data="second event", id=""), E(data=" third event", id="")]
    )


def test_spec_example_four_blocks_last_needs_a_blank_line() -> None:
    stream = b": test stream\n\ndata: first event\nid: 1\n\ndata:second event\nid\n\ndata:  third event\n"
    check(stream, [E(data="first event", id="1"), E(data="second event", id="")])


def test_spec_example_two_events_empty_and_newline() -> None:
    # "The first block fires events with the data set to the empty string [...] The middle
    # block fires an event with the data set to a single newline character. The last block is
    # discarded because it is not followed by a blank line."
    check(b"data\n\ndata\ndata\n\ndata:", [E(data=""), E(data="\n")])


def test_spec_example_two_identical_events() -> None:
    check(b"data:test\n\ndata: test\n\n", [E(data="test"), E(data="test")])


def test_only_one_space_is_stripped() -> None:
    check(b"data:  two\n\ndata:\ttab\n\n", [E(data=" two"), E(data="\ttab")])


# --- line endings -----------------------------------------------------------------------------


@pytest.mark.parametrize("eol", [b"\n", b"\r", b"\r\n"], ids=["LF", "CR", "CRLF"])
def test_every_line_ending(eol: bytes) -> None:
    stream = b"event: e" + eol + b"data: a" + eol + b"data: b" + eol + eol + b"data: c" + eol + eol
    check(stream, [E("e", "a\nb"), E(data="c")])


def test_mixed_line_endings() -> None:
    check(b"data: a\rdata: b\r\ndata: c\n\r\ndata: d\r\r", [E(data="a\nb\nc"), E(data="d")])


def test_lf_then_crlf_is_a_blank_line() -> None:
    check(b"data: x\n\r\ndata: y\n\n", [E(data="x"), E(data="y")])


def test_lf_cr_is_a_blank_line_but_cr_lf_is_one_ending() -> None:
    check(b"data: x\n\rdata: y\r\n\r\n", [E(data="x"), E(data="y")])
    check(b"data: x\r\ndata: y\r\n", [])  # no blank line: no event


def test_crlf_split_across_feeds_is_one_line_ending() -> None:
    decoder = Decoder()
    assert decoder.feed(b"data: x\r") == []
    assert decoder.feed(b"\n") == []  # the LF completes the CRLF: not a blank line
    assert decoder.feed(b"\r") == [E(data="x")]  # this CR is the blank line
    assert decoder.feed(b"\ndata: y\r") == []  # ...and this LF belongs to it
    assert decoder.feed(b"\r\n") == [E(data="y")]
    assert decoder.close() == []


def test_cr_at_a_chunk_end_dispatches_at_once() -> None:
    decoder = Decoder()
    assert decoder.feed(b"data: x\r") == []
    assert decoder.feed(b"\r") == [E(data="x")]  # no need to wait for the next byte


def test_crlf_split_into_empty_and_lone_feeds() -> None:
    assert decode([b"data: x\r", b"", b"\n", b"", b"\r", b"", b"\n"]) == [E(data="x")]
    assert decode([b"data: x\r", b"\n\r", b"\n"]) == [E(data="x")]


def test_unicode_line_separators_are_ordinary_characters() -> None:
    value = "a\u2028b\u2029c\x85d\x0be\x0cf\x1cg"
    check(f"data: {value}\n\nevent: \u2028\ndata: x\n\n".encode(), [E(data=value), E("\u2028", "x")])


# --- fields -----------------------------------------------------------------------------------


def test_comments_are_ignored() -> None:
    check(b": hi\n:\ndata: a\n: mid\ndata: b\n\n:only a comment\n\n", [E(data="a\nb")])


def test_unknown_fields_and_case_are_ignored() -> None:
    check(b"Data: no\nDATA: no\nfoo: bar\ndata : no\n data: no\ndata: yes\n\n", [E(data="yes")])


def test_field_without_colon() -> None:
    check(b"data\nevent\n\n", [E(data="")])


def test_event_type_and_its_reset() -> None:
    check(b"event: add\ndata: 1\n\ndata: 2\n\nevent:\ndata: 3\n\n", [E("add", "1"), E(data="2"), E(data="3")])


def test_empty_data_buffer_dispatches_nothing_but_resets_the_type() -> None:
    check(b"event: ping\n\ndata: x\n\n", [E(data="x")])
    check(b"event: a\nid: 7\nretry: 5\n\n\n\n", [])


def test_last_event_id_persists_and_can_be_reset() -> None:
    stream = b"id: 1\ndata: a\n\ndata: b\n\nid: 2\n\ndata: c\n\nid\ndata: d\n\n"
    check(stream, [E(data="a", id="1"), E(data="b", id="1"), E(data="c", id="2"), E(data="d", id="")])
    decoder = Decoder()
    decoder.feed(stream)
    assert decoder.last_event_id == ""


def test_id_with_nul_is_ignored() -> None:
    check(
        b"id: 1\ndata: a\n\nid: 2\x003\ndata: b\n\nid: \x00\ndata: c\n\n",
        [E(data="a", id="1"), E(data="b", id="1"), E(data="c", id="1")],
    )
    check(b"id: a\x01b\xc2\x85\ndata: x\n\n", [E(data="x", id="a\x01b\x85")])


@pytest.mark.parametrize(
    ("line", "retry"),
    [
        (b"retry: 1000", 1000),
        (b"retry:1000", 1000),
        (b"retry: 0", 0),
        (b"retry: 007", 7),
        (b"retry: 99999999999999999999999", 99999999999999999999999),
        (b"retry:  1000", None),  # " 1000": a space is not a digit
        (b"retry: 1000 ", None),
        (b"retry: 10a", None),
        (b"retry: ", None),
        (b"retry:", None),
        (b"retry", None),
        (b"retry: +5", None),
        (b"retry: -1", None),
        (b"retry: 1_000", None),
        (b"retry: 1.5", None),
        ("retry: ١٢".encode(), None),  # Arabic-Indic digits are not ASCII digits
        ("retry: ²".encode(), None),
    ],
)
def test_retry(line: bytes, retry: int | None) -> None:
    check(line + b"\ndata: x\n\n", [E(data="x", retry=retry)])
    decoder = Decoder()
    decoder.feed(line + b"\ndata: x\n\ndata: y\n\n")
    assert decoder.retry == retry


def test_retry_belongs_to_its_block_and_the_decoder_keeps_the_latest() -> None:
    decoder = Decoder()
    events = decoder.feed(b"retry: 10\ndata: a\n\ndata: b\n\nretry: 20\n\nretry: x\ndata: c\n\n")
    assert events == [E(data="a", retry=10), E(data="b"), E(data="c")]
    assert decoder.retry == 20


def test_retry_with_more_digits_than_int_converts() -> None:
    many = b"0" * 5000 + b"42"
    assert decode([b"retry: " + many + b"\ndata: x\n\n"]) == [E(data="x", retry=42)]
    exact = b"7" + b"0" * (sse.RETRY_DIGITS - 1)  # the longest value kept exactly
    assert decode([b"retry: 000" + exact + b"\ndata: x\n\n"]) == [
        E(data="x", retry=7 * 10 ** (sse.RETRY_DIGITS - 1))
    ]
    for digits in (b"9" * 5000, b"1" + b"0" * sse.RETRY_DIGITS, b"12345" * 2_000_000):  # up to 10 MB
        decoder = Decoder()
        for chunk in (b"retry: ", digits, b"\ndata: x\n\n"):
            events = decoder.feed(chunk)
        assert events == [E(data="x", retry=sse.MAX_RETRY)]  # saturates: never ignored
        assert decoder.retry == sse.MAX_RETRY
    assert sse.MAX_RETRY == int("9" * sse.RETRY_DIGITS)


def test_retry_digits_ignore_a_lowered_int_conversion_limit() -> None:
    """A process that lowered ``sys.set_int_max_str_digits`` still gets every value exactly."""
    import sys

    value = "31" * 1000
    want = int(value)
    before = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(640)
    try:
        assert decode([f"retry: {value}\ndata: x\n\n".encode()])[0].retry == want
    finally:
        sys.set_int_max_str_digits(before)


# --- UTF-8 and BOM ----------------------------------------------------------------------------


def test_bom_is_stripped_once() -> None:
    bom = b"\xef\xbb\xbf"
    check(bom + b"data: x\n\n", [E(data="x")])
    check(bom + bom + b"data: x\n\n", [])  # the second BOM is part of the field name
    check(b"data: " + bom + b"x\n\n", [E(data="\ufeffx")])


def test_bom_split_across_feeds() -> None:
    stream = b"\xef\xbb\xbfdata: x\n\n"
    for cuts in ([1], [2], [3], [1, 2], [1, 2, 3]):
        assert decode(split_at(stream, cuts)) == [E(data="x")], cuts
    assert decode([b"", b"\xef", b"", b"\xbb", b"\xbf", b"data: x\n\n"]) == [E(data="x")]


def test_bom_prefix_that_is_not_a_bom() -> None:
    check(b"\xef\xbbdata: x\n\ndata: y\n\n", [E(data="y")])  # U+FFFD + "data": unknown field
    check(b"\xef\xbb\n\ndata: y\n\n", [E(data="y")])
    assert decode([b"\xef", b"\xbb", b"\n"]) == []


def test_bom_after_close_starts_a_new_stream() -> None:
    decoder = Decoder()
    assert decoder.feed(b"\xef\xbb\xbfid: 1\ndata: a\n\ndata: half") == [E(data="a", id="1")]
    assert decoder.close() == []
    assert decoder.feed(b"\xef\xbb\xbfdata: b\n\n") == [E(data="b", id="1")]


@pytest.mark.parametrize(
    ("raw", "text"),
    [  # the Encoding standard's UTF-8 decoder: one U+FFFD per maximal subpart
        (b"\xff", "\ufffd"),
        (b"\xc0\xaf", "\ufffd\ufffd"),
        (b"\xe0\x80\xaf", "\ufffd\ufffd\ufffd"),
        (b"\xed\xa0\x80", "\ufffd\ufffd\ufffd"),  # a surrogate
        (b"\xf4\x90\x80\x80", "\ufffd\ufffd\ufffd\ufffd"),  # above U+10FFFF
        (b"\xf0\x9f\x98", "\ufffd"),  # truncated, then the line ends
        (b"\xf0\x9f\x98!", "\ufffd!"),
        (b"\xe2\x82\xe2\x82\xac", "\ufffd\u20ac"),
        (b"\x80\x80", "\ufffd\ufffd"),
    ],
)
def test_invalid_utf8_becomes_replacement_characters(raw: bytes, text: str) -> None:
    stream = b"data: " + raw + b"\n\n"
    check(stream, [E(data=text)])
    for cut in range(1, len(stream)):
        assert decode(split_at(stream, [cut])) == [E(data=text)]


def test_truncated_utf8_at_the_end_of_the_stream() -> None:
    check(b"data: x\n\ndata: \xe2\x82", [E(data="x")])
    decoder = Decoder()
    assert decoder.feed(b"data: \xf0\x9f") == []
    assert decoder.close() == []


def test_multibyte_characters_split_at_every_offset() -> None:
    text = "event: é\nid: ∑€\ndata: naïve 東京 🙂\ndata: Ω\u2028\x85\n\ndata: 𝄞x\n\n"
    stream = text.encode()
    expected = [E("é", "naïve 東京 🙂\nΩ\u2028\x85", "∑€"), E(data="𝄞x", id="∑€")]
    assert decode([stream]) == expected
    for cut in range(1, len(stream)):
        assert decode(split_at(stream, [cut])) == expected, cut
        assert decode(split_at(stream, [cut, cut + 1, cut + 2])) == expected, cut
    assert decode(bytewise(stream)) == expected


# --- the API ----------------------------------------------------------------------------------


def test_unterminated_final_event_is_dropped() -> None:
    decoder = Decoder()
    assert decoder.feed(b"data: a\n\ndata: b\n") == [E(data="a")]
    assert decoder.close() == []
    assert decode([b"data: a\n\ndata: b"]) == [E(data="a")]
    assert decode([b"data: a\n\ndata: b\r"]) == [E(data="a")]
    assert decode([]) == []


def test_events_are_returned_as_soon_as_complete() -> None:
    decoder = Decoder()
    assert decoder.feed(b"data: a\n") == []
    assert decoder.feed(b"\ndata: b\n\ndata: c\n\nda") == [E(data="a"), E(data="b"), E(data="c")]
    assert decoder.feed(b"ta: d\n\n") == [E(data="d")]


def test_events_are_frozen_values() -> None:
    (event,) = decode([b"event: e\nid: i\nretry: 5\ndata: d\n\n"])
    assert event == E("e", "d", "i", 5) and hash(event) == hash(E("e", "d", "i", 5))
    assert type(event) is ServerSentEvent
    with pytest.raises(AttributeError):
        event.data = "x"  # type: ignore[misc]
    assert repr(event) == "ServerSentEvent(event='e', data='d', id='i', retry=5)"
    (fast,) = decode([b"data: d\n\n"])  # built by the one-event fast path
    assert pickle.loads(pickle.dumps(fast)) == fast == E(data="d")
    assert dataclasses.replace(fast, id="x") == E(data="d", id="x")
    assert copy.copy(event) == event


def test_feed_accepts_bytearray_and_memoryview() -> None:
    decoder = Decoder()
    assert decoder.feed(bytearray(b"data: a")) == []
    assert decoder.feed(memoryview(b"\n\ndata: b\n\n")) == [E(data="a"), E(data="b")]


def test_iter_decode_and_adecode() -> None:
    chunks = [b"data: a\n", b"\ndata: b\n\n", b"data: c"]
    assert list(iter_decode(chunks)) == [E(data="a"), E(data="b")]

    async def source() -> AsyncIterator[bytes]:
        for chunk in chunks:
            yield chunk

    async def collect() -> list[ServerSentEvent]:
        return [event async for event in adecode(source())]

    assert asyncio.run(collect()) == [E(data="a"), E(data="b")]


def test_iter_decode_and_adecode_yield_each_event_before_the_next_chunk() -> None:
    """A chunk without a line ending waits for the next; an event still comes out as soon as the
    chunk that completes it is in, before the source is asked for more."""
    chunks = [b"da", b"ta", b": a", b"\n", b"\n", b"data: b", b"\r", b"\r", b"data: c"]
    log: list[str] = []

    def source() -> Iterator[bytes]:
        for chunk in chunks:
            log.append(f"pull {chunk!r}")
            yield chunk

    async def asource() -> AsyncIterator[bytes]:
        for chunk in source():
            yield chunk

    async def acollect() -> None:
        async for event in adecode(asource()):
            log.append(f"event {event.data}")

    expected = [f"pull {chunk!r}" for chunk in chunks]
    expected.insert(5, "event a")
    expected.insert(9, "event b")
    for event in iter_decode(source()):
        log.append(f"event {event.data}")
    assert log == expected
    log.clear()
    asyncio.run(acollect())
    assert log == expected


def test_a_huge_event_decodes_whole_however_it_is_cut() -> None:
    """(Linearity in the event's size is measured in bench/linearity.py, not timed here.)"""
    for size, cut in ((1 << 20, 65536), (1 << 16, 16)):
        body = b"data: " + b"x" * size + b"\n\n"
        (event,) = feed_each([body[i : i + cut] for i in range(0, len(body), cut)])
        assert event.data == "x" * size


# --- properties -------------------------------------------------------------------------------

TOKENS = [
    b"data",
    b"data:",
    b"data: ",
    b"event",
    b"event: ",
    b"id",
    b"id: ",
    b"retry",
    b"retry: ",
    b":",
    b" ",
    b"\n",
    b"\r",
    b"\r\n",
    b"\n\n",
    b"\r\r",
    b"x",
    b"message",
    b"42",
    b"0",
    b"a1",
    b"\x00",
    b"\t",
    b"\xef\xbb\xbf",
    b"\xef\xbb",
    b"\xe2\x82\xac",
    b"\xe2\x82",
    b"\xc2\x85",
    b"\xe2\x80\xa8",
    b"\xf0\x9f\x99\x82",
    b"\xff",
    b"\x80",
]

# built from a drawn seed (tests/seeded.py: drawn token by token and byte by byte, drawing was
# most of these tests' CPU, issue 48 item 4), sizes as hypothesis draws them
sse_like = seeded(lambda rng: b"".join(some(TOKENS, 60)(rng)))
any_bytes = seeded(binary(300))
cut_points = seeded(lambda rng: [rng.randint(0, 400) for _ in range(sized(rng, 30))])


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(stream=st.one_of(sse_like, any_bytes), cuts=cut_points)
def test_any_chunking_gives_the_events_of_the_whole(stream: bytes, cuts: list[int]) -> None:
    """Cut anywhere and byte by byte (one test: a second one drew the same streams again; drawing
    was most of their CPU, issue 48 item 4)."""
    whole = decode([stream])
    assert decode(split_at(stream, cuts)) == whole
    assert decode(bytewise(stream)) == whole
    assert whole == spec_decode(stream)


def per_event(stream: bytes) -> list[bytes]:
    """Cut after every LF LF, the way most servers write (and the decoder's fast path)."""
    return split_at(stream, [i + 2 for i in range(len(stream)) if stream.startswith(b"\n\n", i)])


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(stream=sse_like)
def test_per_event_chunks_give_the_events_of_the_whole(stream: bytes) -> None:
    assert decode(per_event(stream)) == spec_decode(stream)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(stream=sse_like, rng=st.randoms(use_true_random=True))
def test_chunks_cut_at_line_boundaries_give_the_events_of_the_whole(
    stream: bytes, rng: random.Random
) -> None:
    boundaries = [i for i in range(len(stream) + 1) if stream.startswith((b"\n", b"\r", b"d"), i)]
    boundaries += [i + 1 for i in boundaries]
    cuts = some(boundaries, 20)(rng) if boundaries else []
    assert decode(split_at(stream, cuts)) == spec_decode(stream)


def test_pending_fields_and_lines_defeat_the_one_event_fast_path() -> None:
    assert decode([b"event: x\n", b"data: y\n\n"]) == [E("x", "y")]
    assert decode([b"retry: 5\n", b"data: y\n\n"]) == [E(data="y", retry=5)]
    assert decode([b"data: a\n", b"data: y\n\n"]) == [E(data="a\ny")]
    assert decode([b"data: a\n\n", b"id", b"data: y\n\n"]) == [E(data="a")]
    assert decode([b"data: a\n\n", b"data: b\r", b"\n", b"data: c\n\n"]) == [E(data="a"), E(data="b\nc")]


@pytest.mark.parametrize(
    "chunk",
    [
        b"event: a\ndata: x\n\n",
        b"event: \ndata: x\n\n",
        b"event: a\ndata: x\ndata: y\n\n",
        b"event: a\n\ndata: x\n\n",
        b"event: a\ndata:x\n\n",
        b"event: a\ndata: x\n\n\n",
        b"event: a\r\ndata: x\n\n",
        b"event: \xff\ndata: \xe2\x82\n\n",
        b"event: a\nid: 1\ndata: x\n\n",
    ],
)
def test_one_typed_event_chunks_after_a_first_event(chunk: bytes) -> None:
    """Chunks shaped like one "event: ...\\ndata: ...\\n\\n" event, fed once the decoder is between
    blocks (where its one-event fast path applies), give the spec's events."""
    first = b"id: 7\ndata: 0\n\n"
    decoder = Decoder()
    events = decoder.feed(first) + decoder.feed(chunk) + decoder.close()
    assert events == spec_decode(first + chunk)
    assert decoder.last_event_id == spec_run(first + chunk)[1]


def test_one_event_chunks_with_a_cr_inside() -> None:
    chunks = [b"data: a\n\n", b"data: b\r\n\n", b"data: c\rd\n\n", b"data: e\n\n", b"data: f\r\n", b"\n"]
    assert decode(chunks) == [E(data="a"), E(data="b"), E(data="c"), E(data="e"), E(data="f")]


@settings(max_examples=100)
@given(streams=st.lists(sse_like, min_size=1, max_size=4), cuts=cut_points)
def test_a_decoder_reused_after_close_treats_each_stream_alone(streams: list[bytes], cuts: list[int]) -> None:
    decoder = Decoder()
    last_id = ""
    for stream in streams:
        got: list[ServerSentEvent] = []
        for chunk in split_at(stream, cuts):
            got += decoder.feed(chunk)
        got += decoder.close()
        # per stream, like the oracle, except that the last event ID string carries over (as
        # browsers do when they reconnect with Last-Event-ID)
        expected, id_string = spec_run(stream, last_id)
        assert got == expected
        assert decoder.last_event_id == decoder.last_event_id_buffer == id_string
        last_id = decoder.last_event_id


# --- reconnection: the last event ID string apart from the buffer ---------------------------------


def test_a_cut_off_block_never_changes_the_last_event_id_string() -> None:
    decoder = Decoder()
    assert decoder.feed(b"id: 1\ndata: a\n\nid: 2\ndata: b") == [E(data="a", id="1")]
    assert (decoder.last_event_id, decoder.last_event_id_buffer) == ("1", "2")
    assert decoder.close() == []
    assert (decoder.last_event_id, decoder.last_event_id_buffer) == ("1", "1")  # "2" never dispatched
    assert decoder.feed(b"data: c\n\n") == [E(data="c", id="1")]  # the reconnection starts from "1"


def test_an_id_only_block_sets_the_string_at_its_blank_line() -> None:
    decoder = Decoder()
    assert decoder.feed(b"id: 5\n") == []
    assert (decoder.last_event_id, decoder.last_event_id_buffer) == ("", "5")
    assert decoder.feed(b"\n") == []  # dispatch without data: the string is set all the same
    assert decoder.last_event_id == "5"


@pytest.mark.parametrize(
    "chunks",
    [
        [b"id: 3\n", b"data: x\n\n"],  # the one-event fast path
        [b"id: 3\n", b"data: x\n\ndata: y\n\n"],  # the run of one-line events
        [b"id: 3\ndata: x\n\n"],
        [b"id: 3\r\n", b"data: x\r\n\r\n"],
    ],
)
def test_every_path_sets_the_string_at_dispatch(chunks: list[bytes]) -> None:
    decoder = Decoder()
    for chunk in chunks[:-1]:
        decoder.feed(chunk)
    assert decoder.last_event_id == ""
    events = decoder.feed(chunks[-1])
    assert events and all(e.id == "3" for e in events)
    assert decoder.last_event_id == decoder.last_event_id_buffer == "3"


def test_a_new_connection_starts_from_a_given_last_event_id() -> None:
    decoder = Decoder(last_event_id="7")
    assert decoder.last_event_id == decoder.last_event_id_buffer == "7"
    assert decoder.feed(b"data: x\n\nid\ndata: y\n\n") == [E(data="x", id="7"), E(data="y", id="")]
    decoder.close()
    decoder.last_event_id = "9"  # between streams, as a client that stored the ID elsewhere would
    assert decoder.feed(b"data: z\n\n") == [E(data="z", id="9")]


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(stream=st.one_of(sse_like, any_bytes), cuts=cut_points, start=st.sampled_from(["", "0", "é"]))
def test_events_and_last_event_id_string_are_the_same_under_any_chunking(
    stream: bytes, cuts: list[int], start: str
) -> None:
    """Under any chunking the events, and the string after every chunk and after close(), are the
    spec's for the bytes seen so far; the buffer falls back to the string at close()."""
    decoder = Decoder(last_event_id=start)
    got: list[ServerSentEvent] = []
    seen = b""
    for chunk in split_at(stream, cuts):
        got += decoder.feed(chunk)
        seen += chunk
        # a trailing CR has ended its line already; the spec sees it once the next byte comes
        want_events, want_string = spec_run(seen, start)
        assert got == want_events
        assert decoder.last_event_id == want_string
    assert decoder.close() == []
    assert (got, decoder.last_event_id) == spec_run(stream, start)
    assert decoder.last_event_id_buffer == decoder.last_event_id


# --- httpx-sse --------------------------------------------------------------------------------

field_text = unicode_text(12, excluded="\r\n\x00")


def ordinary_block(rng: random.Random) -> tuple[str | None, str | None, list[str]]:
    """An event type (no colon, not padded) or none, an id (no leading space) or none, 1-3 data."""
    event_type = field_text(rng).replace(":", "").strip() if rng.random() < 0.5 else None
    event_id = field_text(rng).lstrip(" ") if rng.random() < 0.5 else None
    return event_type, event_id, [field_text(rng) for _ in range(rng.randint(1, 3))]


def ordinary_stream(blocks: list[tuple[str | None, str | None, list[str]]], eol: str) -> bytes:
    out = []
    for event_type, event_id, data in blocks:
        lines = []
        if event_type is not None:
            lines.append(f"event: {event_type}")
        if event_id is not None:
            lines.append(f"id: {event_id}")
        lines += [f"data: {d}" for d in data]
        out.append(eol.join(lines) + eol + eol)
    return "".join(out).encode()


@settings(max_examples=200)
@given(
    blocks=seeded(lambda rng: [ordinary_block(rng) for _ in range(sized(rng, 6))]),
    eol=st.sampled_from(["\n", "\r\n", "\r"]),
    cuts=cut_points,
)
def test_agrees_with_httpx_sse_on_ordinary_streams(
    blocks: list[tuple[str | None, str | None, list[str]]], eol: str, cuts: list[int]
) -> None:
    stream = ordinary_stream(blocks, eol)
    chunks = split_at(stream, cuts)
    assert tuples(decode(chunks)) == httpx_sse_events(chunks)


def test_agrees_with_httpx_sse_on_the_spec_examples_and_edge_cases() -> None:
    streams = [
        b"data: YHOO\ndata: +2\ndata: 10\n\n",
        b": test stream\n\ndata: first event\nid: 1\n\ndata:second event\nid\n\ndata:  third event\n\n",
        b"data\n\ndata\ndata\n\ndata:",
        b"data:test\n\ndata: test\n\n",
        b"data: x\r\ndata: y\rdata: z\n\r\n",
        b"id: a\x00b\ndata: x\n\n",
        b"retry: 10a\ndata: x\n\nretry:\ndata: y\n\n",
        "data: a\u2028b\x85c\x0bd\n\n".encode(),
        b"data: \xff\xe2\x82\n\n",
        b"data: unterminated\n",
    ]
    for stream in streams:
        assert tuples(decode([stream])) == httpx_sse_events([stream]), stream
        assert tuples(decode(bytewise(stream))) == httpx_sse_events(bytewise(stream)), stream
    crlf_split = [b"data: x\r", b"\n\r", b"\n"]
    assert tuples(decode(crlf_split)) == httpx_sse_events(crlf_split) == [("message", "x", "", None)]


@pytest.mark.parametrize(
    ("stream", "httpx_sse_gives"),
    [
        # 1. a leading BOM is not stripped: "\ufeffdata" is an unknown field, the event is lost
        (b"\xef\xbb\xbfdata: x\n\n", []),
        # 2. retry through int(): values that are not all ASCII digits are accepted
        (b"retry:  1000\ndata: x\n\n", [("message", "x", "", 1000)]),
        (b"retry: 1000 \ndata: x\n\n", [("message", "x", "", 1000)]),
        (b"retry: +5\ndata: x\n\n", [("message", "x", "", 5)]),
        (b"retry: -1\ndata: x\n\n", [("message", "x", "", -1)]),
        (b"retry: 1_000\ndata: x\n\n", [("message", "x", "", 1000)]),
        ("retry: ١٢\ndata: x\n\n".encode(), [("message", "x", "", 12)]),
        # 3. a block without data is dispatched anyway
        (b"event: ping\n\n", [("ping", "", "", None)]),
        (b"id: 1\n\n", [("message", "", "1", None)]),
        (b"retry: 5\n\n", [("message", "", "", 5)]),
        # 4. ...so after an id, every extra blank line is an extra, empty event
        (b"id: 1\ndata: a\n\n\n", [("message", "a", "1", None), ("message", "", "1", None)]),
    ],
)
def test_httpx_sse_deviates(stream: bytes, httpx_sse_gives: list[Event]) -> None:
    assert httpx_sse_events([stream]) == httpx_sse_gives
    assert tuples(decode([stream])) != httpx_sse_gives
    assert decode([stream]) == spec_decode(stream)


def test_httpx_sse_deviates_on_a_split_bom_too() -> None:
    chunks = [b"\xef", b"\xbb\xbfdata: x\n\n"]
    assert httpx_sse_events(chunks) == []
    assert decode(chunks) == [E(data="x")]


# --- the C accelerator (ssemock.framing._speedups, built by the install) against the pure code ----------

BLOCK_LINES = [
    b"id: 7",
    b"id: ",
    b"id: a\x00b",
    b"id:  x",
    b"event: delta",
    b"event: ",
    b"event: d\xe2\x82",
    b'data: {"a": 1}',
    b"data: ",
    b"data: \xff\xf0\x9f\x99\x82",
    b"data:x",
    b": keep-alive",
    b"retry: 5",
    b"",
]
EOLS = [b"\n", b"\r\n", b"\r", b"\n\n", b"\r\n\r\n"]
block_streams = seeded(lambda rng: b"".join(line + rng.choice(EOLS) for line in some(BLOCK_LINES, 40)(rng)))


@settings(max_examples=500, suppress_health_check=[HealthCheck.too_slow])
@given(stream=st.one_of(block_streams, sse_like, any_bytes), rng=st.randoms(use_true_random=True))
def test_the_accelerator_takes_the_same_blocks_as_the_pure_code(stream: bytes, rng: random.Random) -> None:
    """Without CR the two take the same blocks; with CRLF the C code takes them itself (its
    blocks then equal the pure code's on the stream with CRLF made LF)."""
    start = rng.randint(0, len(stream))
    compiled: list[sse.ServerSentEvent] = []
    pure: list[sse.ServerSentEvent] = []
    taken, last = _speedups.blocks(stream, start, "last", compiled)
    assert all(type(event) is sse.ServerSentEvent for event in compiled)
    if b"\r" not in stream[start:]:
        assert (taken, last) == sse._py_blocks(stream, start, "last", pure)
    else:
        head = stream[start:taken]
        assert not head or b"\r" not in head.replace(b"\r\n", b"")
        lf_only = head.replace(b"\r\n", b"\n")
        assert sse._py_blocks(lf_only, 0, "last", pure) == (len(lf_only), last)
    assert compiled == pure


@contextlib.contextmanager
def pure_code() -> Iterator[None]:
    """The decoder as it runs where the accelerator is not built (the pure feed, blocks and text)."""
    saved = sse._blocks, sse._text, sse._until_line, Decoder.__dict__["feed"]
    sse._blocks, sse._text, sse._until_line = sse._py_blocks, sse._py_text, sse._py_until_line
    Decoder.feed = sse._py_feed  # type: ignore[method-assign]
    try:
        yield
    finally:
        sse._blocks, sse._text, sse._until_line = saved[:3]
        Decoder.feed = saved[3]  # type: ignore[method-assign]


def feed_states(chunks: list[bytes], last_event_id: str) -> list[tuple[object, ...]]:
    """What each feed returns, with the state a caller can read after it (then after close)."""
    decoder = Decoder(last_event_id=last_event_id)
    states: list[tuple[object, ...]] = []
    for chunk in chunks:
        events = decoder.feed(chunk)
        states.append(
            (type(events), events, decoder.last_event_id, decoder.last_event_id_buffer, decoder.retry)
        )
    states.append((decoder.close(), decoder.last_event_id, decoder.last_event_id_buffer, decoder.retry))
    return states


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(
    stream=st.one_of(block_streams, sse_like, any_bytes),
    cuts=cut_points,
    start=st.sampled_from(["", "7"]),
    again=st.booleans(),
)
def test_the_accelerated_feed_returns_and_keeps_what_the_pure_feed_does(
    stream: bytes, cuts: list[int], start: str, again: bool
) -> None:
    """Call by call: the events (a new list each time), the last event ID string and buffer and
    the retry, cut anywhere and byte by byte (its C calls: a piece without a line ending, the
    line it ends, whole blocks at a block start), on one stream or the same one twice; and
    ``decode``/``iter_decode`` give the spec's events without the accelerator as with it (one
    test: a second one drew the same streams again, issue 48 item 4)."""
    with_it = decode(split_at(stream, cuts)), list(iter_decode(split_at(stream, cuts)))
    with pure_code():
        without = decode(split_at(stream, cuts)), list(iter_decode(split_at(stream, cuts)))
    assert with_it == without == (spec_decode(stream),) * 2
    lf_only = stream.replace(b"\r", b"")
    for chunks in (
        split_at(stream, cuts),
        bytewise(stream),
        per_event(lf_only),
        [b"\n", *per_event(lf_only)],
    ):
        chunks = chunks * 2 if again else chunks
        with_it = feed_states(chunks, start)
        with pure_code():
            without = feed_states(chunks, start)
        assert with_it == without


def test_the_accelerated_feed_of_whole_blocks_sets_the_last_event_id() -> None:
    chunks = [
        b"data: a\n\n",
        b"id: 1\ndata: b\n\n",
        b"id: 2\nevent: e\ndata: c\r\n\r\nid: 3\ndata: d\n",
        b"\n",
    ]
    states = feed_states(chunks, "")
    assert [state[1:4] for state in states[1:3]] == [
        ([E(data="b", id="1")], "1", "1"),
        ([E("e", "c", "2")], "2", "3"),
    ]
    with pure_code():
        assert feed_states(chunks, "") == states


def test_the_accelerated_feed_returns_a_new_list_each_call() -> None:
    decoder = Decoder()
    first, second = decoder.feed(b": "), decoder.feed(b"x")
    assert first == second == [] and first is not second
    first.append(E(data="mine"))
    assert decoder.feed(b"y") == [] and decoder.feed(b"\ndata: a\n\n") == [E(data="a")]


def lines_taken(until_line: Callable[[Iterator[bytes]], bytes | None], chunks: Iterable[Any]) -> list[object]:
    """What each call of ``until_line`` over ``chunks`` returns (type and value) until None, or
    the type of the error it raises."""
    source, out = iter(chunks), []
    try:
        while (got := until_line(source)) is not None:
            out.append((type(got), bytes(got)))
    except Exception as exc:
        out.append(type(exc))
    return out + list(source)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(stream=st.one_of(block_streams, sse_like, any_bytes), cuts=cut_points, kinds=st.randoms())
def test_the_accelerated_until_line_takes_what_the_pure_one_takes(
    stream: bytes, cuts: list[int], kinds: random.Random
) -> None:
    """Call by call: the next chunk with a line ending, those before it without one joined in
    front (empty ones too), None at the end; a bytearray or a view as it is when alone; and
    iter_decode's events from them are the spec's."""
    make = (bytes, bytearray, memoryview)
    for chunks in (split_at(stream, cuts), bytewise(stream), [b"", *split_at(stream, cuts), b""]):
        mixed = [kinds.choice(make)(chunk) for chunk in chunks]
        assert lines_taken(_speedups.until_line, mixed) == lines_taken(sse._py_until_line, mixed)
        with pure_code():
            without = list(iter_decode(chunks))
        assert list(iter_decode(chunks)) == without == spec_decode(stream)


def test_the_accelerated_until_line_stops_where_the_pure_one_does() -> None:
    """An error of the source, or a chunk that is no bytes, ends it as it ends the pure one; the
    chunks after it stay in the source."""

    def failing() -> Iterator[bytes]:
        yield b"data: a\n"
        yield b"data"
        raise OSError("the connection dropped")

    for until_line in (_speedups.until_line, sse._py_until_line):
        assert lines_taken(until_line, failing()) == [(bytes, b"data: a\n"), OSError]
        source = failing()
        assert until_line(source) == b"data: a\n"
        with pytest.raises(OSError):
            until_line(source)
        assert lines_taken(until_line, [b"x", "data: a\n", b"\n", b"y\n"]) == [TypeError, b"\n", b"y\n"]


# UTF-8 pieces that probe every rule of a strict decoder: each length, the bounds of each lead
# byte (overlongs, surrogates, past U+10FFFF), stray and missing continuation bytes.
UTF8_PIECES = [
    b"x" * 17,
    b"\x7f",
    b"\xc2\x80",
    b"\xc3\xbf",
    b"\xc4\x80",
    b"\xdf\xbf",
    b"\xe0\xa0\x80",
    b"\xe0\x9f\xbf",
    b"\xe2\x82\xac",
    b"\xed\x9f\xbf",
    b"\xed\xa0\x80",
    b"\xef\xbf\xbf",
    b"\xf0\x90\x80\x80",
    b"\xf0\x8f\xbf\xbf",
    b"\xf0\x9f\x99\x82",
    b"\xf4\x8f\xbf\xbf",
    b"\xf4\x90\x80\x80",
    b"\xf5\x80\x80\x80",
    b"\xc0\xaf",
    b"\xc1\xbf",
    b"\x80",
    b"\xbf",
    b"\xe2\x82",
    b"\xf0\x9f\x99",
    b"\xc3",
    b"\xff",
]
utf8_like = st.one_of(
    seeded(lambda rng: b"".join(some(UTF8_PIECES, 60)(rng))),
    seeded(unicode_text(40)).map(str.encode),
    seeded(binary(40)),
)


@settings(max_examples=1000)
@given(raw=utf8_like)
def test_the_accelerated_text_is_the_utf8_decoder_s(raw: bytes) -> None:
    """``text`` gives exactly ``bytes.decode("utf-8", "replace")``, str kind included (big=0 takes
    its own path for any size, as it does from 1 MiB on by default)."""
    expected = raw.decode("utf-8", "replace")
    for got in (_speedups.text(raw, 0), _speedups.text(memoryview(raw), 0), _speedups.text(raw)):
        assert got == expected
        assert type(got) is str
        assert sys.getsizeof(got) == sys.getsizeof(expected)  # the same width per character


@pytest.mark.parametrize(
    "unit",
    [
        "x" * 60 + "é€🙂",
        "東京へようこそ",
        "Ā" * 3 + "y",
        "é" * 9,
        "ascii",
        "Hello wörld naïve café 東京 🙂 Ωmega — ok.",
    ],
)
def test_the_accelerated_text_of_a_large_value(unit: str) -> None:
    """Past 1 MiB (its own path), with one bad byte at either end (CPython's decoder), and from
    a view of bytes or a mutable buffer (which another thread could change: CPython's decoder)."""
    raw = (unit * (1_200_000 // len(unit.encode()))).encode()
    text = raw.decode()
    for got in (_speedups.text(raw), _speedups.text(memoryview(raw)), _speedups.text(bytearray(raw))):
        assert got == text and sys.getsizeof(got) == sys.getsizeof(text)
    assert _speedups.text(raw + b"\xff") == text + "\ufffd"
    assert _speedups.text(b"\xf0" + raw) == "\ufffd" + text


def test_a_large_event_decodes_the_same_however_it_is_cut() -> None:
    raw = b"data: " + ("x" * 60 + "é€🙂").encode() * 20_000 + b"\n\n"
    expected = [E(data=raw[6:-2].decode())]
    assert decode([raw]) == decode([raw[i : i + 65536] for i in range(0, len(raw), 65536)]) == expected
    assert list(iter_decode([raw[:100_001], raw[100_001:]])) == expected


def test_the_accelerator_is_in_use() -> None:
    """The install builds it (setup.py); a build without it would silently measure the pure code."""
    assert sse._blocks is _speedups.blocks
    assert sse._text is _speedups.text
    assert Decoder.feed is not sse._py_feed and type(Decoder.feed).__name__ == "builtin_function_or_method"


def test_the_accelerator_refuses_bad_arguments() -> None:
    with pytest.raises(TypeError, match="blocks"):
        _speedups.blocks("text", 0, "", [])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="pos"):
        _speedups.blocks(b"data: x\n\n", 99, "", [])
    with pytest.raises(TypeError, match="bytes-like"):
        _speedups.text("text")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="text"):
        _speedups.text(b"x", 1, 2)  # type: ignore[call-arg]


def test_feeder_refuses_a_class_whose_slots_it_could_read_past() -> None:
    """``_speedups.feeder`` reads and writes the decoder's slots: a class without them is a
    TypeError, and the decoder keeps the feed it had."""

    class Plain:
        _mode = _parts = _clean = _id_buffer = _id_string = None

    class Fewer:
        __slots__ = ("_mode", "_parts")

    for bad in (Plain, Fewer, int, 3):
        with pytest.raises(TypeError, match="feeder"):
            _speedups.feeder(bad, 0, sse._py_feed)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="feeder"):
        _speedups.feeder(Decoder, 0)  # type: ignore[call-arg]
    assert decode([b"data: a", b"\n", b"\n"]) == [E(data="a")]


def test_the_accelerated_feed_of_a_subclass_and_of_another_object() -> None:
    """A subclass's decoder takes the C calls; the feed called on another object is the pure
    feed's (its error)."""

    class Mine(Decoder):
        __slots__ = ("note",)

    decoder = Mine()
    assert [e for chunk in bytewise(b"id: 1\ndata: a\n\n") for e in decoder.feed(chunk)] == [
        E(data="a", id="1")
    ]
    with pytest.raises(AttributeError):
        Decoder.feed(object(), b"data")  # type: ignore[arg-type]


def test_init_refuses_a_class_whose_slots_it_could_write_past() -> None:
    """``_speedups.init`` takes the class whose slots ``blocks`` fills: a crafted class (slot
    descriptors borrowed from a larger class, one slot twice, no slots) is a TypeError and leaves
    the accelerator as it was. Run in a child so that a regression crashes it, not this run."""
    script = (
        "from ssemock import sse\nfrom ssemock.framing import _speedups\n"
        "class Big:\n"
        "    __slots__ = tuple(f's{i}' for i in range(64)) + ('event', 'data', 'id', 'retry')\n"
        "class Borrowed:\n"
        "    __slots__ = ()\n"
        "for name in ('event', 'data', 'id', 'retry'):\n"
        "    setattr(Borrowed, name, Big.__dict__[name])\n"
        "class Twice:\n"
        "    __slots__ = ('event', 'data', 'id', 'retry')\n"
        "Twice.data = Twice.__dict__['event']\n"
        "class Plain:\n"
        "    event = data = id = retry = None\n"
        "refused = []\n"
        "for bad in (Borrowed, Twice, Plain, int, tuple, 3):\n"
        "    try:\n"
        "        _speedups.init(bad)\n"
        "    except TypeError as exc:\n"
        "        refused.append(str(exc).split(':')[0])\n"
        "events = []\n"
        "_speedups.blocks(b'data: x\\n\\n' * 3, 0, '', events)\n"
        "assert all(type(e) is sse.ServerSentEvent for e in events), events\n"
        "print(len(refused), events[0])\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split(" ", 1) == ["6", f"{E('message', 'x', '')}\n"]


def test_without_the_accelerator_the_pure_code_runs() -> None:
    """Where the install could not build it (no C compiler), ``ssemock.sse`` imports and decodes."""
    script = (
        "import sys; sys.modules['ssemock.framing._speedups'] = None\n"
        "from ssemock import sse\n"
        "assert sse._blocks is sse._py_blocks and sse._text is sse._py_text and sse.Decoder.feed is sse._py_feed\n"
        "from ssemock.store import cassette, layout, size_guard\n"
        "assert size_guard._values is size_guard._py_values and layout._c_escaped is None\n"
        "c = cassette.Cassette(); c.add('GET', 'http://h/s', [b'data: \\xc3\\xa9\\n\\n'])\n"
        "assert cassette.Cassette.loads(c.dumps()).interactions[0].response.body == 'data: \\u00e9\\n\\n'.encode()\n"
        "print(sse.decode([b'id: 1\\r\\nevent: e\\r\\ndata: x\\r\\n\\r\\ndata: y\\n\\n']))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert out.strip() == str([E("e", "x", "1"), E("message", "y", "1")])
