"""Cassette files: lossless, readable, deterministic, atomic, and loud about malformed input."""

from __future__ import annotations

import base64
import copy
import functools
import json
import os
import random
import re
from pathlib import Path
from typing import Any

import orjson
import pytest
from conftest import fill_the_disk
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from seeded import binary, seeded, sized, some, unicode_text
from streams import TEXT, openai_chat_events
from test_cassette_body import reference

import ssemock
from ssemock import Cassette, CassetteError
from ssemock.commands import rechunk

SSE_EVENTS = [
    b'event: message_start\ndata: {"type": "message_start"}\n\n',
    'data: {"text": "こんにちは、世界！🌏"}\n\n'.encode(),
    b": keep-alive comment\n\n",
    b"id: 7\ndata: line one\ndata: line two\n\n",
    b"data: [DONE]\n\n",
]
SSE_BODY = b"".join(SSE_EVENTS)


def _roundtrip(cassette: Cassette) -> Cassette:
    return Cassette.loads(cassette.dumps())


def _doc(cassette: Cassette) -> dict[str, Any]:
    return orjson.loads(cassette.dumps())


def _sse_cassette() -> Cassette:
    c = Cassette()
    # boundaries deliberately inside an event, inside a line and inside "世" (e4 b8 96)
    cut = SSE_BODY.index("世".encode()) + 1
    chunks = [SSE_BODY[:10], SSE_BODY[10:cut], SSE_BODY[cut : cut + 40], SSE_BODY[cut + 40 :]]
    c.add(
        "post",
        "https://api.example.com/v1/chat/completions?stream=1",
        chunks,
        times=[0.0123, 0.02, 0.5, 1.25],
        status=200,
        headers=[
            ("Content-Type", "text/event-stream; charset=utf-8"),
            ("X-Request-Id", "abc"),
            ("Set-Cookie", "a=1"),
            ("Set-Cookie", "b=2"),
        ],
        request_headers={"Content-Type": "application/json", "Accept": "text/event-stream"},
        request_json={
            "model": "gpt-test",
            "stream": True,
            "messages": [{"role": "user", "content": "héllo"}],
        },
    )
    return c


# -- round trip ------------------------------------------------------------------------------


def test_add_save_load_round_trip_is_lossless(tmp_path: Path) -> None:
    c = _sse_cassette()
    original = c.interactions[0]
    path = c.save(tmp_path / "c.json")
    assert path == tmp_path / "c.json"
    loaded = Cassette.load(path)
    assert len(loaded) == 1 and len(loaded.interactions) == 1
    x = loaded.interactions[0]
    assert x.request.method == "POST"
    assert x.request.url == "https://api.example.com/v1/chat/completions?stream=1"
    assert x.request.json() == {
        "model": "gpt-test",
        "stream": True,
        "messages": [{"role": "user", "content": "héllo"}],
    }
    assert sorted(x.request.headers) == sorted(original.request.headers)
    assert ("content-type", "application/json") in x.request.headers
    assert x.response.status == 200
    assert x.response.body == SSE_BODY
    assert x.response.chunks == original.response.chunks
    assert x.response.ends == original.response.ends
    assert x.response.times == pytest.approx([0.0123, 0.02, 0.5, 1.25], abs=5e-5)
    assert x.response.complete is True
    assert x.response.error is None
    assert sorted(x.response.headers) == sorted(original.response.headers)


def test_chunks_property_and_ends_of_added_interaction() -> None:
    c = Cassette()
    x = c.add("GET", "http://h/", [b"ab", "cé", b"\xff"])
    assert x.response.chunks == [b"ab", "cé".encode(), b"\xff"]
    assert x.response.ends == [2, 5, 6]
    assert x.response.body == b"abc\xc3\xa9\xff"
    assert x.response.times == [0.0, 0.0, 0.0]
    assert x.request.body is None
    assert c.interactions == [x]


def test_times_keep_0_1_ms_precision() -> None:
    c = Cassette()
    times = [0.00004, 0.00016, 0.0012345, 0.98764, 12.34567, 3600.00004]
    c.add("GET", "http://h/", [bytes([65 + i]) for i in range(len(times))], times=times)
    doc = _doc(c)
    assert [t for t, _ in doc["interactions"][0]["response"]["chunks"]] == [
        0.0,
        0.2,
        1.2,
        987.6,
        12345.7,
        3600000.0,
    ]
    got = _roundtrip(c).interactions[0].response.times
    for want, have in zip(times, got):
        assert abs(want - have) <= 0.05e-3 + 1e-9


def test_times_length_must_match_chunks() -> None:
    with pytest.raises(ValueError, match="times"):
        Cassette().add("GET", "http://h/", [b"a", b"b"], times=[0.1])


def test_repeated_headers_round_trip_in_order() -> None:
    c = Cassette()
    c.add(
        "GET",
        "http://h/",
        [b"data: x\n\n"],
        headers=[("Set-Cookie", "one"), ("X-A", "1"), ("set-cookie", "two"), ("SET-COOKIE", "three")],
        request_headers=[("Accept", "a"), ("accept", "b")],
    )
    doc = _doc(c)["interactions"][0]
    assert doc["response"]["headers"]["set-cookie"] == ["one", "two", "three"]
    assert doc["response"]["headers"]["x-a"] == "1"
    assert doc["request"]["headers"]["accept"] == ["a", "b"]
    x = _roundtrip(c).interactions[0]
    assert [v for k, v in x.response.headers if k == "set-cookie"] == ["one", "two", "three"]
    assert [v for k, v in x.request.headers if k == "accept"] == ["a", "b"]
    assert x.response.header("Set-Cookie") == "one"
    assert x.response.header("missing", "dflt") == "dflt"


def test_default_content_type_is_event_stream() -> None:
    x = Cassette().add("GET", "http://h/", [b"data: x\n\n"])
    assert x.response.header("content-type") == "text/event-stream"
    y = Cassette().add("GET", "http://h/", [b"{}\n"], headers={"Content-Type": "application/x-ndjson"})
    assert [v for k, v in y.response.headers if k == "content-type"] == ["application/x-ndjson"]


def test_request_json_is_stored_as_a_json_object() -> None:
    c = Cassette()
    c.add("POST", "http://h/", [b"data: x\n\n"], request_json={"b": 1, "a": [1, 2, {"c": None}]})
    c.add("POST", "http://h/", [b"data: x\n\n"], request_body=b'{ "z" :  true,\n "y": "\xc3\xa9" }')
    doc = _doc(c)
    assert doc["interactions"][0]["request"]["json"] == {"b": 1, "a": [1, 2, {"c": None}]}
    assert "body" not in doc["interactions"][0]["request"]
    assert doc["interactions"][1]["request"]["json"] == {"z": True, "y": "é"}
    loaded = _roundtrip(c)
    assert loaded.interactions[0].request.json() == {"b": 1, "a": [1, 2, {"c": None}]}
    assert loaded.interactions[1].request.json() == {"z": True, "y": "é"}


@pytest.mark.parametrize("body", [b"hello=world&x=1", "plain text ü".encode(), b"", b"null"])
def test_non_json_request_body_is_stored_as_text(body: bytes) -> None:
    c = Cassette()
    c.add("POST", "http://h/", [b"data: x\n\n"], request_body=body)
    req = _doc(c)["interactions"][0]["request"]
    assert req["body"] == body.decode()
    assert "json" not in req and "body_base64" not in req
    assert _roundtrip(c).interactions[0].request.body == body


def test_request_body_str_is_encoded() -> None:
    c = Cassette()
    c.add("POST", "http://h/", [b"x"], request_body="ünïcode")
    assert c.interactions[0].request.body == "ünïcode".encode()
    assert _roundtrip(c).interactions[0].request.body == "ünïcode".encode()


def test_non_utf8_request_body_is_base64() -> None:
    c = Cassette()
    c.add("POST", "http://h/", [b"x"], request_body=b"\x00\xff\xfe")
    req = _doc(c)["interactions"][0]["request"]
    assert base64.b64decode(req["body_base64"]) == b"\x00\xff\xfe"
    assert _roundtrip(c).interactions[0].request.body == b"\x00\xff\xfe"


def test_no_request_body_stays_none() -> None:
    c = Cassette()
    c.add("GET", "http://h/", [b"x"])
    req = _doc(c)["interactions"][0]["request"]
    assert set(req) == {"method", "url", "headers"}
    assert _roundtrip(c).interactions[0].request.body is None


def test_non_utf8_response_body_is_base64_and_back() -> None:
    c = Cassette()
    chunks = [b"data: \xff\xfe\n", b"\n\x80", b"\x00"]
    c.add("GET", "http://h/", chunks, times=[0.001, 0.002, 0.003])
    resp = _doc(c)["interactions"][0]["response"]
    assert "body" not in resp
    assert base64.b64decode(resp["body_base64"]) == b"".join(chunks)
    assert resp["chunks"] == [[1.0, 9], [2.0, 11], [3.0, 12]]
    x = _roundtrip(c).interactions[0]
    assert x.response.chunks == chunks
    assert x.response.body == b"".join(chunks)


def test_boundary_inside_a_multibyte_character_survives(tmp_path: Path) -> None:
    c = Cassette()
    chunks = [b"data: \xe4", b"\xb8", b"\x96\xf0\x9f\x8c", b"\x8f\n\n"]
    c.add("GET", "http://h/", chunks, times=[0.01, 0.02, 0.03, 0.04])
    resp = _doc(c)["interactions"][0]["response"]
    assert resp["body"] == ["data: 世🌏\n\n"]  # readable text, not base64
    assert [end for _, end in resp["chunks"]] == [7, 8, 12, 15]
    c.save(tmp_path / "u.json")
    assert "世🌏" in (tmp_path / "u.json").read_text("utf-8")  # not \u-escaped
    assert Cassette.load(tmp_path / "u.json").interactions[0].response.chunks == chunks


def test_complete_and_error_round_trip() -> None:
    c = Cassette()
    err = {"type": "RemoteProtocolError", "message": "peer closed", "at_byte": 9}
    c.add("GET", "http://h/", [b"data: one\n\ndata: tw"], complete=False, error=err)
    resp = _doc(c)["interactions"][0]["response"]
    assert resp["complete"] is False and resp["error"] == err
    x = _roundtrip(c).interactions[0]
    assert x.response.complete is False
    assert x.response.error == err


def test_status_round_trips() -> None:
    c = Cassette()
    c.add(
        "POST",
        "http://h/",
        [b'{"error": "rate limited"}'],
        status=429,
        headers={"retry-after": "3", "content-type": "application/json"},
    )
    x = _roundtrip(c).interactions[0]
    assert x.response.status == 429
    assert x.response.header("retry-after") == "3"


def test_empty_response_body_round_trips() -> None:
    c = Cassette()
    c.add("GET", "http://h/", [])
    resp = _doc(c)["interactions"][0]["response"]
    assert resp["body"] == [] and resp["chunks"] == []
    x = _roundtrip(c).interactions[0]
    assert x.response.body == b"" and x.response.chunks == []


def test_multiple_interactions_keep_their_order() -> None:
    c = Cassette()
    for i in range(4):
        c.add("GET", f"http://h/{i}", [f"data: {i}\n\n".encode()])
    assert [x.request.url for x in _roundtrip(c).interactions] == [f"http://h/{i}" for i in range(4)]


def test_method_is_uppercased() -> None:
    c = Cassette()
    assert c.add("post", "http://h/", [b"x"]).request.method == "POST"


# -- file structure --------------------------------------------------------------------------


def test_file_has_one_string_per_sse_event_and_a_chunk_map() -> None:
    doc = _doc(_sse_cassette())
    assert list(doc) == ["version", "interactions"]
    assert doc["version"] == 1
    (inter,) = doc["interactions"]
    assert list(inter) == ["request", "response"]
    resp = inter["response"]
    assert isinstance(resp["body"], list) and all(isinstance(s, str) for s in resp["body"])
    assert resp["body"] == [e.decode() for e in SSE_EVENTS]
    assert isinstance(resp["chunks"], list)
    for pair in resp["chunks"]:
        assert isinstance(pair, list) and len(pair) == 2
        assert isinstance(pair[0], (int, float)) and isinstance(pair[1], int)
    assert [end for _, end in resp["chunks"]] == _sse_cassette().interactions[0].response.ends
    assert resp["chunks"][-1][1] == len(SSE_BODY)
    assert [t for t, _ in resp["chunks"]] == [12.3, 20.0, 500.0, 1250.0]


def test_unterminated_last_event_is_its_own_string() -> None:
    c = Cassette()
    c.add("GET", "http://h/", [b"data: a\n\ndata: b\n\ndata: partial"])
    assert _doc(c)["interactions"][0]["response"]["body"] == ["data: a\n\n", "data: b\n\n", "data: partial"]


def test_crlf_events_are_split_per_event() -> None:
    c = Cassette()
    c.add("GET", "http://h/", [b"data: a\r\n\r\ndata: b\r\n\r\n"])
    assert _doc(c)["interactions"][0]["response"]["body"] == ["data: a\r\n\r\n", "data: b\r\n\r\n"]


def test_json_lines_body_is_one_string_per_line() -> None:
    c = Cassette()
    c.add(
        "POST",
        "http://h/api/chat",
        [b'{"a": 1}\n{"b": 2}\n', b'{"done": true}\n'],
        headers={"content-type": "application/x-ndjson"},
    )
    assert _doc(c)["interactions"][0]["response"]["body"] == ['{"a": 1}\n', '{"b": 2}\n', '{"done": true}\n']


def test_dumps_is_deterministic_indented_and_newline_terminated(tmp_path: Path) -> None:
    a, b = _sse_cassette(), _sse_cassette()
    assert a.dumps() == b.dumps()
    a.save(tmp_path / "a.json")
    b.save(tmp_path / "b.json")
    data = (tmp_path / "a.json").read_bytes()
    assert data == (tmp_path / "b.json").read_bytes()
    assert data == a.dumps()
    assert data.endswith(b"}\n") and not data.endswith(b"\n\n")
    lines = data.decode().split("\n")
    assert lines[0] == "{"
    assert lines[1] == '  "version": 1,'
    assert lines[2] == '  "interactions": ['
    assert lines[3] == "    {"
    assert lines[4] == '      "request": {'
    for line in lines:
        indent = len(line) - len(line.lstrip(" "))
        assert indent % 2 == 0, line
    assert "\t" not in data.decode()
    # an unchanged cassette saved again gives an identical file (empty git diff)
    Cassette.load(tmp_path / "a.json").save(tmp_path / "a.json")
    assert (tmp_path / "a.json").read_bytes() == data


# -- the chunk map: a [t_ms, end] pair a line -------------------------------------------------

_PAIR_LINE = re.compile(r" {10}\[(-?[0-9][0-9.e+-]*), ([0-9]+)\],?")


def _chunk_map_lines(raw: bytes) -> list[list[str]]:
    """The lines of each interaction's chunk map, between ``"chunks": [`` and its bracket."""
    lines = raw.decode().split("\n")
    starts = [k for k, line in enumerate(lines) if line == '        "chunks": [']
    return [lines[k + 1 : lines.index("        ],", k)] for k in starts]


@pytest.mark.parametrize("chunking", ["as_recorded", "bytewise", "mid_utf8"])
def test_each_chunk_map_pair_takes_one_line(chunking: str) -> None:
    c = _sse_cassette()
    c.add(
        "POST",
        "http://h/api/chat",
        [b'{"a": 1}\n{"b"', b": 2}\n"],
        times=[0.0, 86_400.0],
        headers={"content-type": "application/x-ndjson"},
    )
    rechunk(c, ssemock.chunking.get(chunking))
    maps = _chunk_map_lines(c.dumps())
    assert len(maps) == 2
    for lines, x in zip(maps, c.interactions):
        pairs = [_PAIR_LINE.fullmatch(line) for line in lines]
        assert all(pairs), lines
        assert [int(m[2]) for m in pairs if m] == x.response.ends
        assert [float(m[1]) for m in pairs if m] == [round(t * 1000, 1) for t in x.response.times]
        assert [line.endswith(",") for line in lines] == [True] * (len(lines) - 1) + [False]
    assert maps[1][-1] == "          [86400000.0, 18]"


def test_a_byte_by_byte_chunk_map_takes_a_line_a_byte() -> None:
    """A 2.5 KB stream cut byte by byte is as many lines as bytes, and a few (orjson's own indent
    gives each number a line: four a chunk, over 10,000 lines)."""
    body = b"".join(openai_chat_events(text=TEXT[:16]))
    c = Cassette()
    c.add(
        "POST",
        "https://api.openai.com/v1/chat/completions",
        [body],
        times=[0.25],
        request_json={"stream": True},
    )
    whole = c.dumps()
    rechunk(c, ssemock.chunking.bytewise)
    raw = c.dumps()
    assert len(body) == 2535
    assert raw.count(b"\n") - whole.count(b"\n") == len(body) - 1
    assert raw.count(b"\n") < len(body) + 40
    assert orjson.dumps(orjson.loads(raw), option=orjson.OPT_INDENT_2).count(b"\n") > 4 * len(body)
    assert Cassette.loads(raw).interactions[0].response.ends == list(range(1, len(body) + 1))


@pytest.mark.parametrize("chunking", ["as_recorded", "bytewise"])
def test_both_layouts_load_the_same_and_save_in_the_compact_one(tmp_path: Path, chunking: str) -> None:
    """A file written before the chunk map took a line per pair (orjson's indent: a number a line)
    loads to the same cassette, on the small and the large-file path, and saves compact."""
    import ssemock.store.reading as reading

    c = _sse_cassette()
    rechunk(c, ssemock.chunking.get(chunking))
    compact = c.dumps()
    old = orjson.dumps(orjson.loads(compact), option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE)
    assert old.count(b"\n") - compact.count(b"\n") == 3 * len(c.interactions[0].response.ends)
    expected = Cassette.loads(compact)
    for raw in (old, compact):
        path = tmp_path / "c.json"
        path.write_bytes(raw)
        for lean in (False, True):
            with pytest.MonkeyPatch.context() as mp:
                mp.setattr(reading, "LEAN_MIN_SIZE", 0 if lean else reading.LEAN_MIN_SIZE)
                loaded = Cassette.load(path)
            _same(loaded, expected)
            assert loaded.dumps() == compact
        Cassette.load(path).save(path)
        assert path.read_bytes() == compact


def test_the_readme_shows_a_cassette_file_as_ssemock_writes_it() -> None:
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("\n## Cassettes\n") :]
    block = section[section.index("```json\n") + 8 : section.index("\n```\n")] + "\n"
    loaded = Cassette.loads(block)
    assert loaded.dumps().decode() == block
    assert loaded.interactions[0].response.chunks[0] == b'data: {"choices":[{"d'


def test_headers_are_sorted_in_the_file() -> None:
    c = Cassette()
    c.add(
        "GET",
        "http://h/",
        [b"x"],
        headers=[("z-last", "1"), ("a-first", "2"), ("content-type", "text/plain")],
    )
    assert list(_doc(c)["interactions"][0]["response"]["headers"]) == ["a-first", "content-type", "z-last"]


# -- hypothesis ------------------------------------------------------------------------------

# values built from a drawn seed (tests/seeded.py, sizes as hypothesis draws them: drawn character
# by character and chunk by chunk, drawing was most of these tests' CPU, issue 48 item 4)
_NAME_CHARS = "abcdefghijklmnopqrstuvwxyz-0123456789"
_header_value = unicode_text(20, excluded="\r\n\x00")  # add() refuses those
_data_text = unicode_text(10, excluded="\r\n")


def _headers(rng: random.Random) -> list[tuple[str, str]]:
    return [
        ("".join(rng.choices(_NAME_CHARS, k=1 + sized(rng, 11))), _header_value(rng))
        for _ in range(sized(rng, 5))
    ]


def _sse_event(rng: random.Random) -> str:
    event = rng.choice([None, None, None, "delta", "ping", "エラー"])
    lines = "".join(f"data: {_data_text(rng)}\n" for _ in range(rng.randint(1, 3)))
    return (f"event: {event}\n" if event else "") + lines + "\n"


_TIMES = [0.0, 5e-324, 1e-9, 0.00005, 0.5, 1.0, 86_400.0]


def _chunked(rng: random.Random) -> tuple[list[bytes], list[float]]:
    """Any bytes, SSE text or any text, cut at up to 20 points, with times in a day, in order."""
    kind = rng.randrange(3)
    if kind == 0:
        body = binary(200)(rng)
    elif kind == 1:
        body = "".join(_sse_event(rng) for _ in range(sized(rng, 6))).encode()
    else:
        body = unicode_text(60)(rng).encode()
    cuts = (
        sorted({rng.randint(1, max(1, len(body) - 1)) for _ in range(sized(rng, 20))})
        if len(body) > 1
        else []
    )
    ends = [*[c for c in cuts if c < len(body)], len(body)] if body else []
    starts = [0, *ends]
    chunks = [body[a:b] for a, b in zip(starts, ends)]
    times = sorted(
        rng.choice(_TIMES) if rng.random() < 0.3 else rng.uniform(0, 86_400) / 10 ** rng.choice([0, 3, 6])
        for _ in chunks
    )
    return chunks, times


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seeded(_chunked),
    st.integers(100, 599),
    seeded(_headers),
    st.sampled_from(["text/event-stream", "application/x-ndjson", "application/json", None]),
)
def test_arbitrary_bodies_chunks_and_times_round_trip(
    chunked: tuple[list[bytes], list[float]],
    status: int,
    headers: list[tuple[str, str]],
    content_type: str | None,
) -> None:
    chunks, times = chunked
    if content_type is not None:
        headers = [*headers, ("content-type", content_type)]
    c = Cassette()
    c.add("GET", "http://h/x", chunks, times=times, status=status, headers=headers)
    raw = c.dumps()
    loaded = Cassette.loads(raw)
    resp = loaded.interactions[0].response
    assert resp.body == b"".join(chunks)
    assert resp.chunks == chunks
    assert len(resp.times) == len(times)
    for want, have in zip(times, resp.times):
        assert abs(want - have) <= 0.05e-3 + 1e-9 * max(1.0, want)
    assert resp.status == status
    assert sorted(resp.headers) == sorted(c.interactions[0].response.headers)
    assert loaded.dumps() == raw  # stable: loading and saving again changes nothing
    doc = orjson.loads(raw)["interactions"][0]["response"]
    if "body" in doc:
        assert "".join(doc["body"]).encode() == b"".join(chunks)
    else:
        assert base64.b64decode(doc["body_base64"]) == b"".join(chunks)


# -- add() input that save() cannot represent -----------------------------------------------


@pytest.mark.parametrize(
    "chunks,times",
    [
        pytest.param([b"a", b"", b"b"], None),
        pytest.param([b"a", b"b"], [0.2, 0.1]),
        pytest.param([b"a"], [-0.5]),
    ],
)
def test_add_rejects_or_round_trips(chunks: list[bytes], times: list[float] | None) -> None:
    """What add() accepts, a saved file must be able to hold: either add() raises, or it loads back."""
    c = Cassette()
    try:
        c.add("GET", "http://h/", chunks, times=times)
    except ValueError:
        return
    loaded = Cassette.loads(c.dumps())
    assert loaded.interactions[0].response.body == b"".join(chunks)


@pytest.mark.parametrize("bad", ["a\r\nx-injected: 1", "a\nb", "a\x00b"])
@pytest.mark.parametrize("part", ["name", "value"])
def test_a_header_holding_a_line_break_or_nul_is_refused_at_add_and_at_load(
    tmp_path: Path, bad: str, part: str
) -> None:
    """A header that would end its line where `serve` or a handshake writes it: `add` refuses it,
    and a file holding one (edited, or written by another tool) names the file, interaction and
    header."""
    header = (bad, "v") if part == "name" else ("x-note", bad)
    with pytest.raises(ValueError, match="which no HTTP message may carry"):
        Cassette().add("GET", "http://h/", [b"data: 1\n\n"], headers=[header])
    doc = orjson.loads(_sse_cassette().dumps())
    doc["interactions"][0]["response"]["headers"][header[0]] = header[1]
    path = tmp_path / "edited.json"
    path.write_bytes(orjson.dumps(doc))
    with pytest.raises(CassetteError) as failed:
        Cassette.load(path)
    message = str(failed.value)
    assert message.startswith(f"{path}: interaction 0: response.headers[")
    assert f"the header's {part} holds" in message and "\n" not in message


@pytest.mark.parametrize("part", ["name", "value"])
def test_a_header_holding_a_lone_surrogate_is_refused_at_add(part: str) -> None:
    """A lone surrogate, which no encoding writes: `add` refuses it naming the header, instead of
    the save failing later with the JSON writer's own error (found by hypothesis)."""
    header = ("x-\ud800", "v") if part == "name" else ("x-note", "a\udfffb")
    with pytest.raises(ValueError, match=r"holds a lone surrogate \(U\+D[89A-F]"):
        Cassette().add("GET", "http://h/", [b"data: 1\n\n"], headers=[header])


# -- atomic save -----------------------------------------------------------------------------


def test_save_leaves_no_temp_files(tmp_path: Path) -> None:
    c = _sse_cassette()
    c.save(tmp_path / "c.json")
    c.save(tmp_path / "c.json")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.json"]


def test_save_creates_parent_folders_and_remembers_path(tmp_path: Path) -> None:
    c = _sse_cassette()
    target = tmp_path / "deep" / "er" / "c.json"
    c.save(target)
    assert target.exists()
    assert c.path == target
    c.interactions[0].response.status = 201
    c.save()  # to the remembered path
    assert Cassette.load(target).interactions[0].response.status == 201
    assert Cassette.load(target).path == target


def test_save_without_path_needs_one() -> None:
    with pytest.raises(ValueError, match="path"):
        Cassette().save()


@pytest.mark.parametrize("fail_in", ["replace", "chmod", "write"])
def test_failed_save_keeps_previous_file_and_no_temp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fail_in: str
) -> None:
    target = tmp_path / "c.json"
    old = Cassette()
    old.add("GET", "http://h/old", [b"data: old\n\n"])
    old.save(target)
    before = target.read_bytes()

    def boom(*args: Any, **kwargs: Any) -> None:
        raise OSError(28, "No space left on device")

    if fail_in == "write":  # the first write goes through, the next ones find the disk full
        fill_the_disk(monkeypatch, OSError(28, "No space left on device"), after=1)
    else:
        monkeypatch.setattr(os, fail_in, boom)
    with pytest.raises(OSError, match="No space"):
        _sse_cassette().save(target)
    monkeypatch.undo()
    assert target.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.json"]
    assert Cassette.load(target).interactions[0].request.url == "http://h/old"


def test_failed_first_save_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "replace", lambda *a, **k: (_ for _ in ()).throw(KeyboardInterrupt()))
    with pytest.raises(KeyboardInterrupt):
        _sse_cassette().save(tmp_path / "c.json")
    monkeypatch.undo()
    assert list(tmp_path.iterdir()) == []


# -- malformed files -------------------------------------------------------------------------


def _valid_doc() -> dict[str, Any]:
    c = Cassette()
    c.add("GET", "http://h/ok", [b"data: ok\n\n"])
    c.add(
        "POST",
        "http://h/x",
        [b"data: a\n\n", b"data: b\n\n"],
        times=[0.01, 0.02],
        request_json={"model": "m"},
    )
    return orjson.loads(c.dumps())


def _load_doc(tmp_path: Path, doc: Any) -> Cassette:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))  # json, not orjson: it writes JSON nested deeper than 254 levels
    return Cassette.load(path)


def _set(doc: dict[str, Any], where: str, value: Any) -> dict[str, Any]:
    """Set (or with value=DEL remove) ``request.method`` etc. in interaction 1."""
    doc = copy.deepcopy(doc)
    target = doc["interactions"][1]
    *parts, last = where.split(".")
    for p in parts:
        target = target[p]
    if value is _DEL:
        del target[last]
    else:
        target[last] = value
    return doc


_DEL = object()

_INTERACTION_CASES = [
    ("request", _DEL, "request"),
    ("response", _DEL, "response"),
    ("request", "GET http://h/", "request"),
    ("response", [200], "response"),
    ("request.method", _DEL, "method"),
    ("request.method", 5, "method"),
    ("request.method", "", "method"),
    ("request.url", _DEL, "url"),
    ("request.url", None, "url"),
    ("request.headers", ["authorization", "x"], "headers"),
    ("request.headers", {"accept": 5}, "headers"),
    ("request.headers", {"accept": ["a", 1]}, "headers"),
    ("response.headers", "content-type: text/plain", "headers"),
    ("response.headers", {"x": None}, "headers"),
    ("response.status", _DEL, "status"),
    ("response.status", "200", "status"),
    ("response.status", 99, "status"),
    ("response.status", 600, "status"),
    ("response.status", True, "status"),
    ("response.status", 200.5, "status"),
    ("response.body", _DEL, "body"),
    ("response.body", [1, 2], "body"),
    ("response.body", {"a": "b"}, "body"),
    ("response.body", ["data: a\n\n", None], "body"),
    ("response.chunks", "[[0, 9]]", "chunks"),
    ("response.chunks", {"0": 9}, "chunks"),
    ("response.chunks", [[0, 9], 18], "chunks[1]"),
    ("response.chunks", [[0, 9], [1, 18, 2]], "chunks[1]"),
    ("response.chunks", [[0, 9], [1]], "chunks[1]"),
    ("response.chunks", [[0, 9], [1, 18.0]], "chunks[1]"),
    ("response.chunks", [[0, 9], ["1", 18]], "chunks[1]"),
    ("response.chunks", [[0, 9], [1, True]], "chunks[1]"),
    ("response.chunks", [[0, 9], [None, 18]], "chunks[1]"),
    ("response.chunks", [[0, 9], [1, 9], [2, 18]], "does not increase"),
    ("response.chunks", [[0, 10], [1, 9], [2, 18]], "does not increase"),
    ("response.chunks", [[0, 0], [1, 18]], "does not increase"),
    ("response.chunks", [[0, 9], [1, 19]], "past the body"),
    ("response.chunks", [[0, 9], [1, 17]], "last end offset"),
    ("response.chunks", [[0, 9]], "last end offset"),
    ("response.chunks", [[5.0, 9], [4.9, 18]], "goes back"),
    ("response.chunks", [[-1.0, 9], [1.0, 18]], "time -1.0 ms is out of range"),
    ("response.chunks", [[0, 9], [1e308, 18]], "time 1e+308 ms is out of range"),
    ("response.chunks", [[0, 9], [86_400_001, 18]], "0 to 86,400,000 ms (a day)"),
    ("request.json", functools.reduce(lambda v, _: [v], range(250), []), "request.json is nested deeper"),
    (
        "response.error",
        {"type": "x", "deep": functools.reduce(lambda v, _: [v], range(250), [])},
        "response.error is nested deeper",
    ),
    ("response.complete", "yes", "complete"),
    ("response.error", "boom", "error"),
    ("response.error", {"message": "no type"}, "error"),
]


@pytest.mark.parametrize(
    "where,value,words",
    _INTERACTION_CASES,
    ids=[f"{w}={'DEL' if v is _DEL else v!r}"[:50] for w, v, _ in _INTERACTION_CASES],
)
def test_malformed_interaction_names_file_and_interaction(
    tmp_path: Path, where: str, value: Any, words: str
) -> None:
    with pytest.raises(CassetteError) as info:
        _load_doc(tmp_path, _set(_valid_doc(), where, value))
    msg = str(info.value)
    assert str(tmp_path / "bad.json") in msg
    assert "interaction 1" in msg
    assert words in msg
    assert info.value.interaction == 1
    assert info.value.path == str(tmp_path / "bad.json")


def test_bad_base64_response_body(tmp_path: Path) -> None:
    doc = _valid_doc()
    del doc["interactions"][1]["response"]["body"]
    doc["interactions"][1]["response"]["body_base64"] = "not*base64!"
    with pytest.raises(CassetteError, match=r"interaction 1.*base64"):
        _load_doc(tmp_path, doc)
    doc["interactions"][1]["response"]["body_base64"] = 12
    with pytest.raises(CassetteError, match=r"interaction 1.*base64"):
        _load_doc(tmp_path, doc)


def test_bad_base64_request_body(tmp_path: Path) -> None:
    doc = _valid_doc()
    doc["interactions"][0]["request"]["body_base64"] = "%%%"
    with pytest.raises(CassetteError, match=r"bad\.json: interaction 0: request.*base64"):
        _load_doc(tmp_path, doc)


def test_edited_event_text_is_reported_not_silently_wrong(tmp_path: Path) -> None:
    c = Cassette()
    c.add("GET", "http://h/", [b"data: a\n\n", b"data: b\n\n"], times=[0.1, 0.2])
    path = c.save(tmp_path / "c.json")
    text = path.read_text("utf-8")
    path.write_text(text.replace('"data: b\\n\\n"', '"data: bbb\\n\\n"'), "utf-8")
    with pytest.raises(CassetteError) as longer:
        Cassette.load(path)
    assert str(path) in str(longer.value) and "interaction 0" in str(longer.value)
    assert "ssemock fix" in str(longer.value)
    path.write_text(text.replace('"data: b\\n\\n"', '"data:\\n\\n"'), "utf-8")
    with pytest.raises(CassetteError, match="past the body") as shorter:
        Cassette.load(path)
    assert str(path) in str(shorter.value) and "interaction 0" in str(shorter.value)


def test_hand_written_cassette_without_chunks_is_one_chunk(tmp_path: Path) -> None:
    doc = {
        "version": 1,
        "interactions": [
            {
                "request": {"method": "get", "url": "http://h/"},
                "response": {"status": 200, "body": ["data: a\n\n", "data: b\n\n"]},
            }
        ],
    }
    x = _load_doc(tmp_path, doc).interactions[0]
    assert x.request.method == "GET"
    assert x.response.chunks == [b"data: a\n\ndata: b\n\n"]
    assert x.response.times == [0.0]
    assert x.response.complete is True


@pytest.mark.parametrize(
    "raw,words",
    [
        (b'{"version": 1, "interactions": [', "not valid JSON"),
        (b"", "not valid JSON"),
        (b"\xff\xfe{}", "not valid JSON"),
        (b"[1, 2]", "top level"),
        (b'"cassette"', "top level"),
        (b'{"version": 99, "interactions": []}', "version 99"),
        (b'{"version": "1", "interactions": []}', "version '1'"),
        (b'{"interactions": []}', "version None"),
        (b'{"version": 1}', "interactions"),
        (b'{"version": 1, "interactions": {}}', "interactions"),
        (b'{"version": 1, "interactions": "none"}', "interactions"),
    ],
)
def test_malformed_file_names_file_and_problem(tmp_path: Path, raw: bytes, words: str) -> None:
    path = tmp_path / "broken.json"
    path.write_bytes(raw)
    with pytest.raises(CassetteError) as info:
        Cassette.load(path)
    assert str(path) in str(info.value)
    assert words in str(info.value)
    assert info.value.__class__ is CassetteError


@pytest.mark.parametrize("item", [[], "x", 1, None])
def test_interaction_not_an_object(tmp_path: Path, item: Any) -> None:
    doc = _valid_doc()
    doc["interactions"].append(item)
    with pytest.raises(CassetteError, match=r"bad\.json: interaction 2: must be an object"):
        _load_doc(tmp_path, doc)


def test_cassette_error_is_a_value_error(tmp_path: Path) -> None:
    assert issubclass(CassetteError, ValueError)
    assert ssemock.CassetteError is CassetteError
    with pytest.raises(ValueError):
        Cassette.loads(b"{")


def test_loads_without_path_still_names_the_interaction() -> None:
    with pytest.raises(CassetteError, match=r"^interaction 0: response\.status"):
        Cassette.loads(
            b'{"version": 1, "interactions": [{"request": {"method": "GET", "url": "u"},'
            b' "response": {"status": 1, "body": []}}]}'
        )


def test_missing_file_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "nope" / "missing.json"
    with pytest.raises(CassetteError) as info:
        Cassette.load(path)
    assert str(path) in str(info.value)
    assert info.value.path == str(path)
    with pytest.raises(CassetteError, match="cannot read"):
        Cassette.load(tmp_path)  # a directory


def _pieces(rng: random.Random, max_bytes: int, max_size: int, known: list[bytes]) -> list[bytes]:
    """Up to ``max_size`` body pieces, each any 1 to ``max_bytes`` bytes or one of ``known``."""
    return [
        rng.randbytes(1 + sized(rng, max_bytes - 1)) if rng.random() < 0.5 else rng.choice(known)
        for _ in range(sized(rng, max_size))
    ]


@settings(max_examples=150, deadline=None)
@given(
    seeded(
        lambda rng: [
            (
                _pieces(rng, 30, 700, [b"data: x\n\n", "data: 世\n\n".encode(), b"\r\n\r\n"]),
                rng.random() < 0.5,
            )
            for _ in range(sized(rng, 3))
        ]
    )
)
def test_streamed_save_has_orjsons_exact_layout(spec: list[tuple[list[bytes], bool]]) -> None:
    """Bodies are written piece by piece; the file is byte-identical to orjson's whole-document
    output, but for the chunk maps' pairs, one a line."""
    c = Cassette()
    for chunks, sse in spec:
        c.add(
            "POST",
            "http://h/x",
            chunks,
            headers={"content-type": "text/event-stream" if sse else "text/plain"},
            request_json={"a": [1, {"b": "é"}]},
        )
    assert c.dumps() == reference(c)


# -- large files: bodies read apart from the rest --------------------------------------------


@pytest.fixture
def lean(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every file takes the large-file path, in batches of a few lines."""
    import ssemock.store.reading as reading

    monkeypatch.setattr(reading, "LEAN_MIN_SIZE", 0)
    monkeypatch.setattr(reading, "_BATCH", 64)


def _read_bodies_apart(path: Path) -> Any:
    from ssemock.store.reading import _read_bodies_apart as read

    return read(path)


def _same(a: Cassette, b: Cassette) -> None:
    assert [(x.request, x.response) for x in a.interactions] == [
        (x.request, x.response) for x in b.interactions
    ]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    seeded(
        lambda rng: [
            (
                _pieces(
                    rng,
                    40,
                    60,
                    [
                        b"data: x\n\n",
                        "data: 世\n\n".encode(),
                        b"\r\n\r\n",
                        b'data: {"a": ",\\n"}\n\n',
                        b"\xff\xfe",
                    ],
                ),
                rng.random() < 0.5,
                rng.choice([None, b"raw", b'{"j": 1}']),
            )
            for _ in range(sized(rng, 3))
        ]
    )
)
def test_large_file_loads_exactly_as_the_whole_document(
    lean: None, tmp_path: Path, spec: list[tuple[list[bytes], bool, bytes | None]]
) -> None:
    c = Cassette()
    for chunks, sse, request_body in spec:
        c.add(
            "POST",
            "http://h/x",
            chunks,
            headers={"content-type": "text/event-stream" if sse else "text/plain"},
            request_body=request_body,
        )
    path = c.save(tmp_path / "big.json")
    assert _read_bodies_apart(path) is not None  # what save writes is always read apart
    _same(Cassette.load(path), Cassette.loads(path.read_bytes()))


def test_a_real_large_cassette_takes_the_large_file_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import ssemock.store.cassette as cassette_module
    import ssemock.store.reading as reading

    c = Cassette()
    events = [f"data: {i} {'é' * (i % 50)}\n\n".encode() for i in range(40_000)]
    c.add("GET", "http://h/stream", events)
    path = c.save(tmp_path / "big.json")
    assert path.stat().st_size >= reading.LEAN_MIN_SIZE
    taken: list[Any] = []
    real = cassette_module._read_bodies_apart
    monkeypatch.setattr(cassette_module, "_read_bodies_apart", lambda p: taken.append(real(p)) or taken[-1])
    loaded = Cassette.load(path)
    assert taken and taken[0] is not None  # read apart, not by the fallback
    assert loaded.interactions[0].response.body == b"".join(events)
    assert loaded.interactions[0].response.ends == c.interactions[0].response.ends


_BODY_IN_JSON = b"""{"version": 1, "interactions": [{"request": {"method": "POST", "url": "http://h/", "json": {
        "body": [
          "the request's own JSON, not a response body"
        ]}}, "response": {"status": 200, "body": ["data: x\\n\\n"]}}]}
"""


@pytest.mark.parametrize(
    "raw",
    [
        _BODY_IN_JSON,
        orjson.dumps(orjson.loads(_BODY_IN_JSON)),  # compact
        orjson.dumps(orjson.loads(_BODY_IN_JSON), option=orjson.OPT_INDENT_2).replace(b"  ", b"    "),
    ],
    ids=["body-key-inside-request-json", "compact", "4-space-indent"],
)
def test_other_layouts_load_the_same_on_the_large_file_path(lean: None, tmp_path: Path, raw: bytes) -> None:
    path = tmp_path / "hand.json"
    path.write_bytes(raw)
    loaded = Cassette.load(path)
    _same(loaded, Cassette.loads(raw))
    assert loaded.interactions[0].request.json() == {"body": ["the request's own JSON, not a response body"]}


def _laid_out(pieces: str) -> bytes:
    """A cassette in _write's layout whose response body list holds ``pieces`` (raw JSON lines)."""
    head = (
        b'{\n  "version": 1,\n  "interactions": [\n    {\n      "request": {\n        "method": "GET",\n'
        b'        "url": "http://h/"\n      },\n      "response": {\n        "status": 200,\n        "body": [\n'
    )
    return head + pieces.encode() + b"\n        ]\n      }\n    }\n  ]\n}\n"


def test_the_layout_helper_matches_what_save_writes() -> None:
    c = Cassette()
    c.add("GET", "http://h/", [b"data: a\n\n", b"data: b\n\n"], headers={"content-type": "text/event-stream"})
    written = orjson.loads(c.dumps())
    helper = orjson.loads(_laid_out('          "data: a\\n\\n",\n          "data: b\\n\\n"'))
    assert helper["interactions"][0]["response"]["body"] == written["interactions"][0]["response"]["body"]


@pytest.mark.parametrize(
    "pieces,words",
    [
        ('          "a",\n          1', "list of strings"),
        ('          "a",\n          "b",', "not valid JSON"),  # trailing comma
        ('          "a"\n          "b"', "not valid JSON"),  # missing comma
        ('          "a,\n          b"', "not valid JSON"),  # a raw newline inside a string
        ('          ["a",\n          "b"]', "list of strings"),
        # with 64-byte batches, the first batch ends on the first comma; the next starts on a stray one
        ('"' + "x" * 60 + '",\n,\n"' + "y" * 100 + '"', "not valid JSON"),
    ],
    ids=[
        "number",
        "trailing-comma",
        "missing-comma",
        "raw-newline",
        "nested-list",
        "stray-comma-at-a-batch-start",
    ],
)
def test_broken_body_lines_give_the_same_error_on_the_large_file_path(
    lean: None, tmp_path: Path, pieces: str, words: str
) -> None:
    path = tmp_path / "broken.json"
    path.write_bytes(_laid_out(pieces))
    with pytest.raises(CassetteError, match=words) as lean_error:
        Cassette.load(path)
    with pytest.raises(CassetteError) as whole_error:
        Cassette.loads(path.read_bytes(), path=path)
    assert str(lean_error.value) == str(whole_error.value)
    assert str(path) in str(lean_error.value)


@settings(max_examples=300)
@given(
    data=st.one_of(
        seeded(binary(2000)),
        seeded(lambda rng: b"".join(some([b",", b"[", b"{", b"x", b"\xff", b'"'], 1000)(rng))),
    )
)
def test_the_value_count_is_the_same_with_and_without_the_accelerator(data: bytes) -> None:
    """The JSON value count behind the size check, in C where it was built, equals the pure count."""
    from ssemock.framing import _speedups
    from ssemock.store import size_guard

    assert size_guard._values is _speedups.values
    assert (
        _speedups.values(data)
        == size_guard._py_values(data)
        == sum(data.count(c) for c in (b",", b"[", b"{"))
    )
    with pytest.raises(TypeError, match="values"):
        _speedups.values(bytearray(data))  # type: ignore[arg-type]
