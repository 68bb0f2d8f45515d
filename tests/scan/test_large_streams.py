"""A large stream's joins (issue 33): pieces kept joined a segment at a time, the JSON escapes of a
join undone by json's scanner, and a window with a lone surrogate still scanned (orjson refused
it, and the window was skipped); the accelerator's passes over its segments give what the pure
code gives (issue 48)."""

from __future__ import annotations

import base64
import json
import random
import re
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from seeded import seeded, sized, some

from ssemock import Cassette
from ssemock.framing import _speedups
from ssemock.scan import credential_shapes, large_streams
from ssemock.scan.large_streams import _SEGMENT
from ssemock.scan.segment_plans import STRING_MEMBER, members
from ssemock.scan.walk import _DEEP_MAX, _Scan, scan_cassette

KEY = "sk-ant-api03-" + "Q1w2E3r4T5y6U7i8O9p0" * 3


def _delta(text: str) -> bytes:
    return b'data: {"choices":[{"index":0,"delta":{"content":%s}}]}\n\n' % json.dumps(text).encode()


def _found(body: bytes) -> list[str]:
    cassette = Cassette()
    cassette.add("POST", "https://api.example.com/v1/chat/completions", [body, b"data: [DONE]\n\n"])
    assert len(body) > _DEEP_MAX
    return [f"{f.rule} @ {f.where}" for f in scan_cassette(cassette)]


def test_a_key_split_in_escaped_deltas_beside_a_lone_surrogate_is_found() -> None:
    filler = _delta('lorem \u00e9 "ipsum"\n')
    head = filler * ((_DEEP_MAX + 100) // len(filler))
    lone = b'data: {"choices":[{"index":0,"delta":{"content":"\\ud800"}}]}\n\n'
    pieces = b"".join(_delta(KEY[i : i + 3]) for i in range(0, len(KEY), 3))
    [found] = _found(head + lone + pieces + filler * 100)
    assert found == "an Anthropic key (sk-ant-...) @ response.body reassembled content"


def test_a_key_split_in_deltas_of_many_short_segments_is_found() -> None:
    """The overlap a window starts with runs back over segments too short to hold it alone."""
    other = b'data: {"choices":[{"index":0,"delta":{"role":"assistant"}}]}\n\n'
    head = other * ((_DEEP_MAX + _SEGMENT) // len(other))
    pieces = [_delta(KEY[i : i + 2]) for i in range(0, len(KEY), 2)]
    spread = b"".join(p + other * (_SEGMENT // len(other) // 3) for p in pieces)  # a few per segment
    [found] = _found(head + spread)
    assert found == "an Anthropic key (sk-ant-...) @ response.body reassembled content"


# -- the accelerator's passes (issue 48 item 1) ----------------------------------------------------
# (their texts built from a drawn seed, sizes as hypothesis draws them: drawn bit by bit, drawing
# was most of their CPU, issue 48 item 4)

_SSE_BITS = (
    [b"data:", b"data: ", b"data:  ", b"event: x\n", b"{", b"[", b'"k":"v"}', b" ", b"\r", b"\n", b"\r\n"]
    + [b"Q1w2E3r4", b"abcdefgh", b"ABCDEFGH", b"01234567", b"+/", b"_-", b"=", b"\x00", b"\xff", b"\xc3\xa9"]
    + [KEY.encode(), b"`", b"@", b"\xe1"]
    + [b"abcdefghijklmnopqrstuvwxyz" * 2, b"ABCDEFGHIJKLMNOPQRSTUVWXYZ" * 2]  # long runs of one case
    + [b"v" * 1023, b"w" * 1024]  # values of a KiB or more: views of the segment
)


@settings(max_examples=300, deadline=None)
@given(seeded(lambda rng: b"".join(some(_SSE_BITS, 60)(rng))))
def test_the_accelerator_finds_the_data_lines_and_base64_runs_the_pure_code_finds(segment: bytes) -> None:
    """The C passes a large stream's segments go through give what the pure code gives: the
    data of the non-JSON data lines (the regex), the distinct base64 runs that mix cases (translate
    and split; a run of one case, or of digits, is none)."""
    assert large_streams._data_lines is _speedups.data_lines
    assert large_streams._b64_runs is _speedups.b64_runs
    assert _speedups.data_lines(segment) == large_streams._py_data_lines(segment)
    assert _speedups.data_lines(segment) == large_streams._TEXT_DATA_LINE.findall(segment)
    for least in (1, 16):
        assert _speedups.b64_runs(segment, least) == large_streams._py_b64_runs(segment, least)
    with pytest.raises(TypeError, match="data_lines"):
        _speedups.data_lines(bytearray(segment))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="b64_runs"):
        _speedups.b64_runs(segment, "16")  # type: ignore[arg-type]


@pytest.mark.parametrize("case", [b"x", b"X"])
def test_a_long_run_of_one_case_ends_where_the_pure_code_ends_it(case: bytes) -> None:
    """The C passes read a run of letters of one case 64, sixteen or eight at once: a byte just
    outside the letters (``@ [ ` {``), a letter of the other case, a digit or a non-ASCII byte at
    any offset of the run ends it, or mixes it, where the pure split (and the regex) does."""
    for at in range(200):
        for byte in (b"@", b"[", b"`", b"{", b"A", b"Z", b"a", b"z", b"0", b"\xe1", b"\xc1", b"\x00"):
            data = case * at + byte + case * (199 - at) + case.swapcase()  # (the run after it mixes)
            for least in (1, 16):
                assert _speedups.b64_runs(data, least) == large_streams._py_b64_runs(data, least), (at, byte)
            text = data.decode("latin-1")
            assert credential_shapes.b64_findall(text) == credential_shapes.B64_RUN.findall(text), (at, byte)


_RUN_BITS = [
    "a",
    "Z",
    "0",
    "+",
    "/",
    "_",
    "-",
    "=",
    " ",
    ".",
    "\x00",
    "\x7f",
    "é",
    "\ud800",
    "\U0001f642",
] + ["abcdefgh", "ABCDEFG", "0123456", "a" * 15, "b" * 16, KEY]
_PADDED = ["==", "===", "a" * 17 + "=", "=" + "Q" * 16]


@settings(max_examples=400, deadline=None)
@given(seeded(lambda rng: "".join(some(_RUN_BITS, 40)(rng))))
def test_the_accelerator_says_whether_a_base64_run_is_there_as_the_pure_code_does(text: str) -> None:
    """``b64_run`` (has_b64_run's C pass, on ASCII text as it is, or bytes) answers what the
    translated copy answers, for any least; other text is the pure code's (the walk's strings)."""
    assert credential_shapes._c_b64_run is _speedups.b64_run
    expected = credential_shapes._py_b64_run(text)
    assert credential_shapes.has_b64_run(text) is expected
    if text.isascii():
        assert _speedups.b64_run(text, 16) is expected
    raw = text.encode("utf-8", "surrogatepass")
    classes = raw.translate(credential_shapes._B64_CLASS)  # each base64 byte an "a", others a space
    for least in (0, 1, 2, 16, 17, sys.maxsize):
        wanted = max(least, 1) <= len(raw) and b"a" * max(least, 1) in classes
        assert _speedups.b64_run(raw, least) is wanted
    with pytest.raises(TypeError, match="b64_run"):
        _speedups.b64_run("é" * 20, 16)  # not ASCII: the pure code's


_ALPHABET = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/-_"


def _run(rng: random.Random) -> bytes:
    """A run of base64 / base64url bytes (any length, mixed alphabets, any last bits), with a
    stray byte in it one time in three."""
    run = bytearray(rng.choices(_ALPHABET, k=sized(rng, 40)) + list(rng.choice([b"", KEY.encode()])))
    if rng.random() < 1 / 3:
        run.insert(rng.randint(0, len(run)), rng.choice(b"= .\x00\x7f\n\xc3\xff"))
    return bytes(run)


@settings(max_examples=400, deadline=None)
@given(seeded(_run))
def test_the_accelerator_decodes_a_base64_run_as_the_pure_code_does(raw: bytes) -> None:
    """``b64_decode`` gives the pure decoders' bytes for a run of base64 / base64url bytes with no
    "=" (every length but 4k + 1: the bits of a last partial group dropped), None for another
    byte or length, which the pure code then takes: the walk's decode gives the same either way."""
    assert credential_shapes._c_b64_decode is _speedups.b64_decode
    expected = credential_shapes._pure_decoded(raw.rstrip(b"="))
    assert credential_shapes.base64_bytes(raw) == (
        None if expected is None else credential_shapes._inflated(expected)
    )
    if raw.translate(None, _ALPHABET) or len(raw) % 4 == 1:
        assert _speedups.b64_decode(raw) is None
    else:
        assert expected is not None and _speedups.b64_decode(raw) == expected
    with pytest.raises(TypeError, match="b64_decode"):
        _speedups.b64_decode(raw.decode("latin-1"))  # type: ignore[arg-type]


@settings(max_examples=400, deadline=None)
@given(
    seeded(
        lambda rng: "".join(
            rng.choice(_RUN_BITS if rng.random() < 0.5 else _PADDED) for _ in range(sized(rng, 40))
        )
    )
)
def test_the_accelerator_finds_the_base64_runs_the_regex_finds(text: str) -> None:
    """``b64_findall`` (the walk's runs to decode, C on ASCII text) gives ``B64_RUN.findall``'s
    runs in order, each with up to two "=" after it; the regex's for any least too; other text
    is the regex's own."""
    assert credential_shapes._c_b64_findall is _speedups.b64_findall
    assert credential_shapes.b64_findall(text) == credential_shapes.B64_RUN.findall(text)
    if text.isascii():
        for least in (0, 1, 2, 16, 17, sys.maxsize):
            n = min(max(least, 1), len(text) + 1)  # (no run is longer than the text)
            regex = re.compile(rf"[A-Za-z0-9+/_\-]{{{n},}}={{0,2}}")
            assert _speedups.b64_findall(text, least) == regex.findall(text), least
    with pytest.raises(TypeError, match="b64_findall"):
        _speedups.b64_findall("é" * 20, 16)  # not ASCII: the regex's


_MEMBER_BITS = (
    [b'"', b'"id"', b'"content"', b'"a-b"', b'"' + b"n" * 40 + b'"', b'"' + b"n" * 41 + b'"', b":", b" : "]
    + [b'"v"', b"\\", b'\\"', b"\\\n", b"\\u00e9", b"\t", b"\x0b", b"\x0c", b"\r", b"\n", b" "]
    + [b"{", b"}", b",", b"[", b"]", b"1.5e3", b"null", b"x", b"Q1w2E3r4T5y6U7i8", b"abcdefghijklmnopq"]
    + [b"+/", b"_-", b"\xc3\xa9", b"\xff", b"\x00", b"data: ", KEY.encode()]
    + [b'"text":"' + b"v" * 1023 + b'"', b'"text":"' + b"w" * 1024 + b'"']  # a long one: a view
)


@settings(max_examples=400, deadline=None)
@given(seeded(lambda rng: b"".join(some(_MEMBER_BITS, 40)(rng))))
def test_the_accelerator_finds_the_members_and_base64_runs_the_regex_finds(text: bytes) -> None:
    """The C members pass gives each name's values as the member regex finds them (names of 1-40
    name bytes, whitespace around the colon, escapes, an escaped newline ending no string, a
    failed match resumed at the next quote), and the base64 runs' skipping search what the
    split finds, on text full of quotes and short runs."""
    assert large_streams._members is _speedups.members
    groups: dict[bytes, list[bytes]] = {}
    for name, value in STRING_MEMBER.findall(text):
        groups.setdefault(name, []).append(value)
    assert _speedups.members(text) == groups == members(text)
    assert list(_speedups.members(text)) == list(groups)  # the names in the order first met
    for least in (0, 1, 2, 16, sys.maxsize):
        assert _speedups.b64_runs(text, least) == large_streams._py_b64_runs(text, least)
    with pytest.raises(TypeError, match="members"):
        _speedups.members(bytearray(text))  # type: ignore[arg-type]


_WINDOW_BITS = [
    KEY[:9],
    KEY[9:30],
    KEY[30:],
    "Bearer ",
    "sk-test-",
    "ghp_",
    "AKIA",
    "x" * 20,
    " ",
    "\n",
    "é",
    "\ufffd",
] + [
    "%2F",
    "&amp;",
    "\\u0041",
    "password=",
    "https://u:p@h/?token=",
    base64.b64encode(KEY.encode()).decode(),
    *("{", "[", "/", "?", "#", "\x1c", ":", "=", "//"),  # what the walk reads past shapes, and their parts
]


@settings(max_examples=200, deadline=None)
@given(
    seeded(lambda rng: [bit.encode() for bit in some(_WINDOW_BITS, 30)(rng)]),
    st.sampled_from([b"data", b"content"]),
)
def test_a_window_scanned_from_its_own_bytes_finds_what_its_text_finds(
    parts: list[bytes], name: bytes
) -> None:
    """A reassembled window of ASCII text is searched in its joined bytes, not in its text encoded
    again, and its text is not made where the walk reads nothing in it past its shapes: the
    findings are the same as the whole walk's of the text (and a window of other text is encoded)."""
    fast, slow = _Scan(0), _Scan(0)
    large_streams._joined(large_streams.text_scan(fast, "response.body"), "", name, parts, [], None)
    large_streams._joined(
        lambda text, where, depth, raw=None, hits=None: slow.text(
            "response.body", text if isinstance(text, str) else text.decode("ascii"), where, depth
        ),
        "",
        name,
        parts,
        [],
        None,
    )
    assert fast.found == slow.found


def _plain_split(key: str, filler: bytes) -> bytes:
    """A key streamed one character per non-JSON event, after a large stream's worth of filler."""
    head = filler * ((_DEEP_MAX + _SEGMENT) // len(filler))
    return head + b"".join(b"data: " + c.encode() + b"\r\n\r\n" for c in key) + filler * 50


@pytest.mark.parametrize("form", ["split", "base64"])
@pytest.mark.parametrize(
    "filler",
    [
        b"data: plain text, no JSON\n\n",
        _delta("word and more"),
        b": ping\n\n",
        b'data: {"id":"chatcmpl-9ZbTest0000","model":"m","choices":[{"delta":{"content":"word"}}]}\n\n',
        b"data: " + b"long plain text " * 80 + b"\n\n",
    ],
    ids=["text", "json", "comment", "members", "long text"],
)
def test_a_large_stream_gives_the_same_findings_with_and_without_the_accelerator(
    monkeypatch: pytest.MonkeyPatch, filler: bytes, form: str
) -> None:
    """The findings of a large stream (a key split across its non-JSON events, or a base64 run
    holding one) are those of the pure passes."""
    if form == "base64":
        body = filler * ((_DEEP_MAX + _SEGMENT) // len(filler))
        body += _delta(base64.b64encode(f"the key is {KEY}".encode()).decode()) + filler * 50
    else:
        body = _plain_split(KEY, filler)
    fast = _found(body)
    with monkeypatch.context() as m:
        m.setattr(large_streams, "_data_lines", large_streams._py_data_lines)
        m.setattr(large_streams, "_b64_runs", large_streams._py_b64_runs)
        m.setattr(large_streams, "_members", members)
        pure = _found(body)
    assert fast == pure
    assert fast, "the key was not found"


# what the walk reads in a text past its shapes (JSON, a form, a URL, base64), each with a secret
_READ = [
    '{"password": "hunter2-Q1w2E3"}',
    "password=hunter2-Q1w2E3",
    "see https://h/v1?api_key=hunter2-Q1w2E3 there",
    "/v1?api_key=hunter2-Q1w2E3",
    "?api_key=hunter2-Q1w2E3",
    "#access_token=hunter2-Q1w2E3",
    "https://user:hunter2-Q1w2E3@h/v1",
    base64.b64encode(b"password=hunter2-Q1w2E3").decode(),
]
_UNREAD = ["x" * 20, " ", "\n", "\x1c", ":", "/", "?", "#", "{", "[", "word", "Q1w2E3r4", "sk-test-", "%2F"]


@pytest.mark.parametrize("text", [*_READ, " \n\t" + _READ[0]])
def test_a_window_the_walk_reads_past_its_shapes_is_made_text(text: str) -> None:
    """Each form the walk reads in a window's text (JSON, a form, a URL's query, base64) keeps
    its text made (`nothing_to_read` is False), and the walk finds the secret in it."""
    assert not large_streams.nothing_to_read(text.encode())
    walker = _Scan(0)
    walker.text("response.body", text, "", 2, shapes=False)
    assert walker.found


@settings(max_examples=300, deadline=None)
@given(seeded(lambda rng: "".join(some(_UNREAD + _READ, 12)(rng))))
def test_a_window_left_as_bytes_holds_nothing_the_walk_reads(text: str) -> None:
    """Where `nothing_to_read` spares a window's text, the walk past its shapes finds nothing in
    that text: the shapes searched in its bytes are all there is to find."""
    if large_streams.nothing_to_read(text.encode()):
        walker = _Scan(0)
        walker.text("response.body", text, "", 2, shapes=False)
        assert walker.found == []


_PLAIN_BITS = [
    b"x" * 15,
    b"y" * 16,
    b"z" * 33,
    b"=",
    b":",
    b"\\",
    b"\x80",
    b"\xff",
    b"\x7f",
    b"\x00",
    b"a",
    b"\x1d",
    b"\xbd",
]


@settings(max_examples=400, deadline=None)
@given(
    seeded(lambda rng: [b"".join(some(_PLAIN_BITS, 12)(rng)) for _ in range(rng.randint(0, 5))]),
    st.sampled_from([b"", b"=", b"=:\\", b"=:\\\x00", b"=\x1d"]),  # (the last: two bytes of one low half)
)
def test_the_accelerator_says_whether_parts_are_plain_as_the_pure_code_does(
    parts: list[bytes], stop: bytes
) -> None:
    """Whether a window's parts (bytes, or views of them) are ASCII without the stop bytes, at
    any offset of the 16 bytes it reads a step, as the pure code says; a wrong call is refused."""
    assert large_streams._plain is _speedups.plain
    views: list[bytes | memoryview] = [memoryview(b"." + p)[1:] if k % 2 else p for k, p in enumerate(parts)]
    assert _speedups.plain(views, stop) == large_streams._py_plain(views, stop)
    with pytest.raises(TypeError, match="plain"):
        _speedups.plain(tuple(views), stop)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="plain"):
        _speedups.plain(views, b"=:\\ab")


@pytest.mark.parametrize("size", [63, 64, 65, 128, 191, 200])
def test_the_accelerator_finds_a_byte_that_is_not_plain_at_every_offset_of_its_widest_step(size: int) -> None:
    """The accelerator reads 64 bytes a step where the CPU has AVX2 (16 with SSE2, then one at a
    time): a stop byte or one past ASCII is found wherever it stands in a part, views too."""
    assert large_streams._plain is _speedups.plain
    for bad in (b"=", b":", b"\\", b"\x80", b"\xff"):
        for at in range(size):
            part = b"x" * at + bad + b"y" * (size - at - 1)
            for parts in ([part], [b"z" * 5, memoryview(b"." + part)[1:]]):
                assert _speedups.plain(parts, b"=:\\") is False, (bad, at)
                assert large_streams._py_plain(parts, b"=:\\") is False
        assert _speedups.plain([b"x" * size, memoryview(b"y" * size)], b"=:\\") is True
