"""ssemock.ndjson: incremental JSON lines (Ollama-style streams)."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Iterable

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from seeded import lists, nested, scalars, seeded, text

from ssemock.ndjson import Decoder, NDJSONError, adecode, decode, iter_decode


def split_at(stream: bytes, cuts: Iterable[int]) -> list[bytes]:
    bounds = sorted({min(max(c, 0), len(stream)) for c in cuts} | {0, len(stream)})
    return [stream[a:b] for a, b in zip(bounds, bounds[1:])]


def bytewise(stream: bytes) -> list[bytes]:
    return [stream[i : i + 1] for i in range(len(stream))]


def naive(stream: bytes) -> list[object]:
    """The whole stream at once: split at LF, CRLF and lone CR bytes, skip blank lines, parse each."""
    return [orjson.loads(line) for line in re.split(rb"\r\n|\r|\n", stream) if line.strip(b" \t")]


OLLAMA = (
    b'{"model":"llama3.2","created_at":"2024-10-01T12:00:00Z",'
    b'"message":{"role":"assistant","content":"Hel"},"done":false}\n'
    b'{"model":"llama3.2","created_at":"2024-10-01T12:00:01Z",'
    b'"message":{"role":"assistant","content":"lo \xe2\x80\xa8 w\xc3\xb6rld \xf0\x9f\x99\x82"},"done":false}\n'
    b'{"model":"llama3.2","created_at":"2024-10-01T12:00:02Z",'
    b'"message":{"role":"assistant","content":""},"done":true,"eval_count":2}\n'
)


def test_ollama_stream() -> None:
    values = decode([OLLAMA])
    assert [v["message"]["content"] for v in values] == ["Hel", "lo \u2028 wörld 🙂", ""]  # type: ignore[index]
    assert values[-1] == orjson.loads(OLLAMA.split(b"\n")[2])
    assert decode(bytewise(OLLAMA)) == values
    for cut in range(1, len(OLLAMA)):
        assert decode(split_at(OLLAMA, [cut])) == values, cut


def test_unicode_line_separators_inside_strings_are_not_line_breaks() -> None:
    value = "a\u2028b\u2029c\x85d\x0be\x0cf\x1cg"
    stream = orjson.dumps({"s": value}) + b"\n" + orjson.dumps([value]) + b"\n"
    assert b"\xe2\x80\xa8" in stream  # raw, not escaped
    assert decode([stream]) == [{"s": value}, [value]]
    assert decode(bytewise(stream)) == [{"s": value}, [value]]


def test_crlf_and_crlf_split_across_feeds() -> None:
    assert decode([b'{"a":1}\r\n{"b":2}\r\n']) == [{"a": 1}, {"b": 2}]
    assert decode([b'{"a":1}\r', b'\n{"b":2}\r', b"\n"]) == [{"a": 1}, {"b": 2}]
    decoder = Decoder()
    assert decoder.feed(b"1\r") == [1]  # the line is complete at its CR
    assert decoder.feed(b"\n") == []  # the LF of its CRLF: no blank line, no second value
    assert decoder.feed(b"\n2\n") == [2]


def test_a_lone_cr_ends_a_line_as_httpx_iter_lines_does() -> None:
    assert decode([b"1\r2\r"]) == decode([b"1\r", b"2", b"\r"]) == [1, 2]
    with pytest.raises(NDJSONError) as error:
        decode([b"1\r\n{\r"])
    assert error.value.lineno == 2  # a CRLF is one line ending, not a line and a blank one


def test_blank_lines_are_skipped() -> None:
    assert decode([b"\n\n1\n \n\t\r\n\r\n2\n\n"]) == [1, 2]
    assert decode([b"\n", b"\n", b"  ", b"\n", b"3"]) == [3]
    assert decode([b""]) == []
    assert decode([]) == []


def test_every_json_value_kind() -> None:
    stream = b'null\ntrue\nfalse\n0\n-1.5e3\n"s"\n[]\n{}\n[1,{"a":[null]}]\n'
    assert decode([stream]) == [None, True, False, 0, -1500.0, "s", [], {}, [1, {"a": [None]}]]


def test_close_parses_a_final_unterminated_line() -> None:
    decoder = Decoder()
    assert decoder.feed(b'1\n{"last":') == [1]
    assert decoder.feed(b"true}") == []
    assert decoder.close() == [{"last": True}]
    assert decoder.close() == []
    assert decode([b"1\n2"]) == [1, 2]
    assert decode([b"1\n  \r"]) == [1]  # a blank final line is not parsed


def test_invalid_line_raises_with_line_number_and_excerpt() -> None:
    decoder = Decoder()
    assert decoder.feed(b'{"a":1}\n\n') == [{"a": 1}]
    with pytest.raises(NDJSONError) as info:
        decoder.feed(b'{"b":2}\n{"c": oops}\n{"d":4}\n')
    error = info.value
    assert isinstance(error, ValueError)
    assert error.lineno == 4  # blank lines count
    assert error.line == b'{"c": oops}'
    assert "line 4" in str(error) and '{"c": oops}' in str(error)
    assert isinstance(error.__cause__, orjson.JSONDecodeError)


def test_error_excerpt_is_short() -> None:
    line = b'{"text": "' + b"x" * 500 + b'"'
    with pytest.raises(NDJSONError) as info:
        decode([b"1\n", line[:100], line[100:], b"\n"])
    assert info.value.lineno == 2
    assert len(str(info.value)) < 200
    assert "..." in str(info.value)


def test_error_in_the_final_unterminated_line() -> None:
    with pytest.raises(NDJSONError, match="line 3"):
        decode([b"1\n2\n[3,"])


@pytest.mark.parametrize("bad", [b"1 2", b"{'a': 1}", b"[1,]", b"\x0c1", b'"\xff"', b"NaN", b"data: {}"])
def test_not_json(bad: bytes) -> None:
    with pytest.raises(NDJSONError, match="line 2"):
        decode([b"0\n" + bad + b"\n"])


def test_feed_accepts_bytearray_and_memoryview() -> None:
    decoder = Decoder()
    assert decoder.feed(bytearray(b"[1")) == []
    assert decoder.feed(memoryview(b"]\n2\n")) == [[1], 2]


def test_iter_decode_and_adecode() -> None:
    chunks = [b'{"a"', b":1}\n", b"2"]
    assert list(iter_decode(chunks)) == [{"a": 1}, 2]

    async def source() -> AsyncIterator[bytes]:
        for chunk in chunks:
            yield chunk

    async def collect() -> list[object]:
        return [value async for value in adecode(source())]

    assert asyncio.run(collect()) == [{"a": 1}, 2]


def test_a_huge_line_decodes_whole_however_it_is_cut() -> None:
    """(Linearity in the line's size is measured in bench/linearity.py, not timed here.)"""
    body = b'{"s":"' + b"x" * (1 << 18) + b'"}\n'
    (value,) = decode([body[i : i + 1024] for i in range(0, len(body), 1024)])
    assert value == {"s": "x" * (1 << 18)}


# --- properties -------------------------------------------------------------------------------

# JSON values orjson writes (64-bit integers), built from a drawn seed (tests/seeded.py: drawn leaf
# by leaf they were most of this file's CPU, issue 48 item 4)
json_values = nested(scalars(-(2**63), 2**63 - 1, text(max_size=30)), text(max_size=5), leaves=10, width=4)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(
    values=seeded(lists(json_values, max_size=8)),
    seps=st.lists(st.sampled_from([b"\n", b"\r\n", b"\n\n", b"\n \n", b"\r\n\r\n"]), min_size=8, max_size=8),
    final=st.sampled_from([b"", b"\n", b"\r\n", b" "]),
    cuts=st.lists(st.integers(min_value=0, max_value=2000), max_size=30),
)
def test_any_chunking_of_json_lines(
    values: list[object], seps: list[bytes], final: bytes, cuts: list[int]
) -> None:
    parts = [orjson.dumps(value) for value in values]
    stream = b"".join(part + sep for part, sep in zip(parts, seps))
    if parts:
        stream = stream[: -len(seps[len(parts) - 1])] + final  # the last line may lack its LF
    expected = [orjson.loads(part) for part in parts]  # floats round-trip exactly through orjson
    assert decode([stream]) == expected
    assert decode(split_at(stream, cuts)) == expected


def outcome(chunks: list[bytes]) -> tuple[str, object]:
    try:
        return ("ok", decode(chunks))
    except NDJSONError as error:
        return ("error", error.lineno)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(
    stream=st.lists(
        st.sampled_from(
            [
                b"1",
                b"[",
                b"]",
                b'"',
                b"\xe2\x80\xa8",
                b"\xc2\x85",
                b"\n",
                b"\r",
                b" ",
                b",",
                b"{}",
                b"\xff",
                b"null",
                b"\x0c",
            ]
        ),
        max_size=40,
    ).map(b"".join)
    | st.binary(max_size=100),
    cuts=st.lists(st.integers(min_value=0, max_value=200), max_size=20),
)
def test_any_chunking_of_any_bytes_gives_the_outcome_of_the_whole(stream: bytes, cuts: list[int]) -> None:
    whole = outcome([stream])
    assert outcome(split_at(stream, cuts)) == whole
    assert outcome(bytewise(stream)) == whole
    try:
        assert whole == ("ok", naive(stream))
    except orjson.JSONDecodeError:
        assert whole[0] == "error"
