"""The SSE conformance corpus: the reference decoder passes it, naive decoders fail it, httpx-sse
passes it except where it deviates from the WHATWG algorithm (asserted exactly below)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import httpx
import httpx_sse
import pytest

from ssemock import chunking, conformance
from ssemock.conformance import Case, ConformanceError
from ssemock.sse import Decoder, ServerSentEvent, decode

CASES = conformance.cases()
NAMES = [c.name for c in CASES]


def ev(data: str, event: str = "message", id: str = "", retry: int | None = None) -> ServerSentEvent:
    return ServerSentEvent(event, data, id, retry)


# Hand-written from the text of the WHATWG HTML standard, section 9.2.6 and the introduction.
WHATWG = {
    "whatwg_stock_ticker": [ev("YHOO\n+2\n10")],
    "whatwg_multiline": [
        ev("This is the first message."),
        ev("This is the second message, it\nhas two lines."),
        ev("This is the third message."),
    ],
    "whatwg_event_types": [ev("73857293", "add"), ev("2153", "remove"), ev("113411", "add")],
    "whatwg_four_blocks": [ev("first event", id="1"), ev("second event", id=""), ev(" third event", id="")],
    "whatwg_space_optional": [ev("test"), ev("test")],
    "whatwg_empty_data": [ev(""), ev("\n")],
}

# More hand-written expectations, for the cases whose answer is easy to get wrong.
HAND = {
    "crlf_split": [ev("a\nb"), ev("c")],
    "lf_then_crlf": [ev("x"), ev("y")],
    "mixed_endings": [ev("a\nb\nc"), ev("d"), ev("e"), ev("f")],
    "bom": [ev("x"), ev("y")],
    "bom_only_once": [ev("y")],
    "keepalive_comments": [ev("a", id="7"), ev("b", id="7")],
    "data_two_spaces": [ev(" two spaces\ntrailing ")],
    "empty_data": [ev(""), ev("")],
    "field_without_colon": [ev("\nx"), ev("y")],
    "unknown_fields": [ev("a")],
    "event_type_reset": [ev("1", "add"), ev("2"), ev("3", "remove")],
    "event_without_data": [ev("x")],
    "id_with_nul": [ev("a", id="1"), ev("b", id="1")],
    "id_persists": [ev("a", id="1"), ev("b", id="1"), ev("c", id=""), ev("d", id="5")],
    "id_only_block": [ev("d", id="5")],
    "retry_digits_only": [ev("a", retry=1000), ev("b"), ev("c"), ev("d", retry=500)],
    "retry_not_an_int": [ev(x) for x in "abcdef"],
    "retry_only_block": [ev("x")],
    "unterminated_last_event": [ev("a")],
    "data_after_done": [ev("a"), ev("[DONE]"), ev("b"), ev("{}", "usage")],
    "unicode_line_separators": [ev("a\u2028b\u2029c\u0085d")],
    "multibyte_utf8": [ev("é ü 世界 😀 🇯🇵", id="世"), ev("ok", "ü", id="世")],
    "invalid_utf8": [ev("a\ufffdb\ufffd\n\ufffd")],
}

REQUIRED = {
    *WHATWG,
    "lf_endings",
    "crlf_endings",
    "cr_endings",
    "mixed_endings",
    "lf_then_crlf",
    "crlf_split",
    "bom",
    "keepalive_comments",
    "data_no_space",
    "data_two_spaces",
    "multiline_data",
    "event_type_reset",
    "id_with_nul",
    "id_persists",
    "retry_digits_only",
    "retry_not_an_int",
    "unterminated_last_event",
    "done_split",
    "data_after_done",
    "unicode_line_separators",
    "multibyte_utf8",
    "empty_data",
    "field_without_colon",
    "unknown_fields",
}


# -- the corpus itself ---------------------------------------------------------------------------


def test_corpus_shape() -> None:
    assert len(CASES) >= 25
    assert len(set(NAMES)) == len(NAMES)
    assert REQUIRED <= set(NAMES)
    for case in CASES:
        assert re.fullmatch(r"[a-z0-9_]+", case.name), case.name
        assert case.note and case.expected == decode([case.body]), case.name
    assert conformance.cases_by_name() == {c.name: c for c in CASES}
    assert conformance.cases() is not conformance.cases()  # a fresh list each time
    assert len(set(CASES)) == len(CASES)  # hashable
    assert {c.name for c in CASES if "whatwg" in c.tags} == set(WHATWG)


@pytest.mark.parametrize("name", sorted(WHATWG))
def test_whatwg_examples_match_hand_written_expectations(name: str) -> None:
    assert conformance.cases_by_name()[name].expected == WHATWG[name]


@pytest.mark.parametrize("name", sorted(HAND))
def test_hand_written_expectations(name: str) -> None:
    assert conformance.cases_by_name()[name].expected == HAND[name]


@pytest.mark.parametrize("case", CASES, ids=NAMES)
def test_reference_decoder_passes_every_case_under_every_chunking(case: Case) -> None:
    case.check(decode)
    case.check(decode, [*chunking.ALL, *(chunking.random(s, 3, 2) for s in range(5)), "fixed:4"])


def test_reference_incremental_decoder_with_close() -> None:
    def feed_close(chunks: list[bytes]) -> list[ServerSentEvent]:
        d = Decoder()
        return [e for c in chunks for e in d.feed(c)] + d.close()

    assert conformance.failures(feed_close) == {}


def test_recorded_ends_cut_where_the_case_is_interesting() -> None:
    by = conformance.cases_by_name()
    assert by["crlf_split"].chunks("as_recorded")[0].endswith(b"\r")
    assert by["crlf_split"].chunks("as_recorded")[1].startswith(b"\n")
    assert by["bom"].chunks("as_recorded")[:2] == [b"\xef", b"\xbb"]  # the BOM split three ways
    assert any(c.endswith(b"[DO") for c in by["done_split"].chunks("as_recorded"))
    assert by["lf_then_crlf"].chunks("as_recorded")[:3] == [b"data: x\n", b"\r", b"\ndata: y\n\r\n"]
    utf8 = by["multibyte_utf8"]
    cuts = set(range(1, len(utf8.body)))  # bytewise: a boundary at every offset inside every character
    for char in "éü世界😀🇯🇵":
        start = utf8.body.index(char.encode())
        assert set(range(start + 1, start + len(char.encode()))) <= cuts
        assert len(char.encode()) in (2, 3, 4)
    for case in CASES:
        for strategy in conformance.DEFAULT_CHUNKINGS:
            assert b"".join(case.chunks(strategy)) == case.body
        assert case.chunks(chunking.bytewise) == [bytes([b]) for b in case.body]


def test_chunkings_argument_forms() -> None:
    case = conformance.cases_by_name()["crlf_split"]
    cut = case.body.index(b"\r\n") + 1
    for spec in (f"at:{cut}", f"at:{cut},3", f"coalesced,at:{cut}", [f"at:{cut}"], "all", chunking.bytewise):
        case.check(decode, spec)

    def split_crlf_breaks(chunks: list[bytes]) -> list[ServerSentEvent]:  # a CR ending a chunk ends the line
        return decode([c.replace(b"\r", b"\n") if c.endswith(b"\r") else c for c in chunks])

    case.check(split_crlf_breaks, "coalesced")
    with pytest.raises(ConformanceError, match=rf"under chunking 'at:{cut}': event 0 differs.*'a\\nb'.*'a'"):
        case.check(split_crlf_breaks, [f"at:{cut}"])
    with pytest.raises(ConformanceError, match=r"under chunking 'as_recorded'"):
        case.check(split_crlf_breaks)


def test_default_chunkings() -> None:
    names = [c.name for c in conformance.DEFAULT_CHUNKINGS]
    assert set(names) == {c.name for c in chunking.ALL} | {"fixed:1", "fixed:2", "fixed:3"}
    assert names[0] == "coalesced"


# -- output shapes ---------------------------------------------------------------------------------


class Obj:
    """Like httpx_sse.ServerSentEvent: attributes, and an empty event type meaning "message"."""

    def __init__(self, e: ServerSentEvent, blank_type: bool = False) -> None:
        self.event = "" if blank_type and e.event == "message" else e.event
        self.data, self.id, self.retry = e.data, e.id, e.retry


@pytest.mark.parametrize("shape", ["objects", "blank_type_objects", "tuples", "strings", "generator"])
def test_decoder_output_shapes(shape: str) -> None:
    def adapted(chunks: list[bytes]) -> Any:
        events = decode(chunks)
        if shape == "objects":
            return [Obj(e) for e in events]
        if shape == "blank_type_objects":
            return [Obj(e, blank_type=True) for e in events]
        if shape == "tuples":
            return [(e.event, e.data) for e in events]
        if shape == "strings":
            return [e.data for e in events]
        return (e for e in events)

    assert conformance.failures(adapted) == {}


def test_only_the_fields_returned_are_compared() -> None:
    case = conformance.cases_by_name()["event_type_reset"]
    sticky: list[str] = []

    def sticky_type(chunks: list[bytes]) -> Iterator[tuple[str, str]]:  # keeps the last event type
        for e in decode(chunks):
            if e.event != "message":
                sticky.append(e.event)
            yield (sticky[-1] if sticky else "message", e.data)

    case.check(lambda chunks: [d for _, d in sticky_type(chunks)])  # data only: passes
    with pytest.raises(
        ConformanceError,
        match=r"event 1 differs: expected \{event='message', data='2'\}, "
        r"got \{event='add', data='2'\}",
    ):
        case.check(sticky_type)


def test_unsupported_output_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="cannot compare"):
        conformance.cases()[0].check(lambda chunks: [42])


# -- naive decoders fail, and the error tells where ------------------------------------------------


def naive(chunks: list[bytes]) -> list[str]:
    """The decoder people write first: decode each chunk, split on blank lines, data is line[6:]."""
    buf, out = "", []
    for chunk in chunks:
        buf += chunk.decode()
        while "\n\n" in buf:
            block, buf = buf.split("\n\n", 1)
            data = [line[6:] for line in block.split("\n") if line.startswith("data")]
            if data:
                out.append("\n".join(data))
    return out


def per_chunk(chunks: list[bytes]) -> list[str]:
    """Worse: assumes every chunk holds whole events."""
    return [
        "\n".join(line[6:] for line in block.split("\n") if line.startswith("data: "))
        for chunk in chunks
        for block in chunk.decode("utf-8", "replace").split("\n\n")
        if "data: " in block
    ]


NAIVE_FAILS = {
    # case: (the first chunking it fails under, a bit of the message)
    "data_no_space": ("coalesced", r"event 0 differs: expected \{data='x'\}, got \{data=''\}"),
    "whatwg_space_optional": ("coalesced", r"event 0 differs: expected \{data='test'\}, got \{data='est'\}"),
    "whatwg_four_blocks": ("coalesced", r"event 1 differs: expected \{data='second event'\}"),
    "crlf_endings": ("coalesced", r"event 0 differs"),
    "cr_endings": (
        "coalesced",
        (
            r"event 0 differs: expected \{event='a', data='1\\n2', id='', retry=None\}, "
            r"got no event 0 \(only 0\)"
        ),
    ),
    "bom": ("coalesced", r"event 0 differs: expected \{data='x'\}, got \{data='y'\}"),
    "multibyte_utf8": ("as_recorded", r"raised UnicodeDecodeError.*\n  it first raises once fed chunk 0"),
    "unicode_line_separators": ("mid_line", r"raised UnicodeDecodeError"),
}


def test_naive_decoder_fails_named_cases() -> None:
    failed = conformance.failures(naive)
    assert set(NAIVE_FAILS) <= set(failed)
    assert len(failed) >= 10
    assert "whatwg_stock_ticker" not in failed and "event_type_reset" not in failed  # data-only passes


@pytest.mark.parametrize("name", sorted(NAIVE_FAILS))
def test_naive_decoder_error_names_case_and_chunking(name: str) -> None:
    strategy, detail = NAIVE_FAILS[name]
    with pytest.raises(ConformanceError) as info:
        conformance.cases_by_name()[name].check(naive)
    err = info.value
    message = str(err)
    assert message.startswith(f"conformance case {name!r} under chunking {strategy!r}: ")
    assert re.search(detail, message), message
    assert (err.case, err.chunking) == (name, strategy)
    assert "'|' marks a boundary" in message and "case: " in message
    assert "also fails under:" in message


def test_decoder_exception_is_chained_and_located() -> None:
    case = conformance.cases_by_name()["multibyte_utf8"]
    with pytest.raises(ConformanceError) as info:
        case.check(naive, ["bytewise"])
    assert isinstance(info.value.__cause__, UnicodeDecodeError)
    assert info.value.index is None
    start = case.body.index("é".encode())
    assert f"first raises once fed chunk {start} (bytes {start}..{start + 1})" in str(info.value)
    assert "also fails under" not in str(info.value)


def test_boundaries_shown_around_the_first_differing_event() -> None:
    case = conformance.cases_by_name()["whatwg_stock_ticker"]
    case.check(per_chunk, ["coalesced", "per_event"])  # whole events per chunk: fine
    with pytest.raises(ConformanceError) as info:
        case.check(per_chunk, ["fixed:8"])
    message = str(info.value)
    assert info.value.chunking == "fixed:8" and info.value.index == 0
    assert "event 0 differs: expected {data='YHOO\\n+2\\n10'}, got {data='YH'}" in message
    assert "boundaries at bytes 8, 16, 24;" in message
    assert "data: YH|OO\\ndata:| +2\\ndata|: 10\\n\\n" in message


def test_window_after_the_last_expected_event_and_long_bodies() -> None:
    case = conformance.cases_by_name()["unterminated_last_event"]
    with pytest.raises(
        ConformanceError,
        match=r"expected no event 1 \(only 1\), got \{data='b'\}[\s\S]*"
        r"bytes 9\.\.17 of 17 \(no boundary",
    ):
        case.check(lambda chunks: [e.data for e in decode([*chunks, b"\n"])], ["coalesced"])
    long_line = conformance.cases_by_name()["long_line"]
    with pytest.raises(
        ConformanceError, match=r"\(3500 chars\)\}, got \{data='x'\}[\s\S]*bytes 0\.\.4008 of 4021 .* \.\.\. "
    ):
        long_line.check(lambda chunks: ["x"], ["coalesced"])


def test_failures_only() -> None:
    assert set(conformance.failures(naive, only=["data_no_space", "lf_endings"])) == {"data_no_space"}
    assert set(conformance.failures(naive, "coalesced", only=["multibyte_utf8"])) == set()


# -- httpx-sse ----------------------------------------------------------------------------------------


class _Chunks(httpx.SyncByteStream):
    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks

    def __iter__(self) -> Iterator[bytes]:
        return iter(self.chunks)


def httpx_sse_decode(chunks: list[bytes]) -> list[httpx_sse.ServerSentEvent]:
    response = httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=_Chunks(chunks))
    return list(httpx_sse.EventSource(response).iter_sse())


def _fields(e: httpx_sse.ServerSentEvent) -> tuple[str, str, str, int | None]:
    return (e.event, e.data, e.id, e.retry)


HTTPX_SSE_DEVIATIONS: dict[str, list[tuple[str, str, str, int | None]]] = {
    "bom": [("message", "y", "", None)],
    "event_without_data": [("ping", "", "", None), ("message", "x", "", None)],
    "id_only_block": [("message", "", "5", None), ("message", "d", "5", None)],
    "retry_only_block": [("message", "", "", 3000), ("message", "x", "", None)],
    "keepalive_comments": [
        ("message", "a", "7", None),
        ("message", "", "7", None),
        ("message", "", "7", None),
        ("message", "", "7", None),
        ("message", "b", "7", None),
        ("message", "", "7", None),
    ],
    "retry_not_an_int": [
        ("message", "a", "", -1),
        ("message", "b", "", 5),
        ("message", "c", "", 10),
        ("message", "d", "", 1000),
        ("message", "e", "", 3),
        ("message", "f", "", None),
    ],
}


def test_httpx_sse_conforms_except_known_deviations() -> None:
    """httpx-sse 0.4 (through httpx's ``iter_text``) passes every case under every chunking except:

    * ``bom``: the leading BOM is not stripped (httpx decodes ``text/event-stream`` as ``utf-8``,
      not ``utf-8-sig``, and httpx-sse does not strip it), so the first field is named
      ``'\\ufeffdata'`` and the first event is lost;
    * ``event_without_data``, ``id_only_block``, ``retry_only_block``: a block with an
      ``event``/``id``/``retry`` field but no data is dispatched as an event with empty data (the
      spec dispatches nothing when the data buffer is empty);
    * ``keepalive_comments``: once a last event ID is set, every comment-only keep-alive block
      (``: ping`` + blank line) is dispatched as an empty-data event carrying that ID;
    * ``retry_not_an_int``: ``retry`` goes through ``int()``, so ``-1``, ``+5``, `` 10``, ``1_000``
      and the Arabic-Indic digit ``'\\u0663'`` are accepted (the spec takes ASCII digits only).

    It gets chunk boundaries right everywhere (split CRLF, split UTF-8, split BOM aside), so each
    deviation is the same under every chunking.
    """
    failed = conformance.failures(httpx_sse_decode)
    assert set(failed) == set(HTTPX_SSE_DEVIATIONS)
    by = conformance.cases_by_name()
    for name, wrong in HTTPX_SSE_DEVIATIONS.items():
        assert failed[name].chunking == "coalesced"  # wrong even unsplit...
        for strategy in conformance.DEFAULT_CHUNKINGS:  # ...and the same under every chunking
            assert [_fields(e) for e in httpx_sse_decode(by[name].chunks(strategy))] == wrong, (
                name,
                strategy,
            )
        assert wrong != [(e.event, e.data, e.id, e.retry) for e in by[name].expected]
