"""ssemock.store.layout: response bodies laid out in bulk, byte-identical to orjson laying out
the list of pieces, whatever the window size, the separators and the bytes in the body."""

from __future__ import annotations

import math
import random
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from seeded import Build, binary, seeded, sized, some, unicode_text

from ssemock import Cassette
from ssemock.framing import _speedups
from ssemock.store import layout as cassette_body
from ssemock.store.cassette import VERSION
from ssemock.store.dumping import _interaction_to_json, _times_ms

OPTION = orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE
CONTENT_TYPES = [
    "text/event-stream",
    "text/event-stream; charset=utf-8",
    "application/x-ndjson",
    "text/plain",
    None,
]
# every kind of byte the layout has to care about: separators, escapes, the placeholder candidates, multi-byte text
ATOMS = [
    b"\n",
    b"\n\n",
    b"\r",
    b"\r\n",
    b"\r\n\r\n",
    b'"',
    b"\\",
    b"\\n",
    b"\x00",
    b"\x01",
    b"\x1f",
    b"\t",
    b"\x7f",
    b"~",
    b"^",
    b"|",
    b"`",
    b"#",
    b",",
    b" ",
    b"data: ",
    b"x",
    "é".encode(),
    "世".encode(),
    "🙂".encode(),
    b'{"a": "b\\"c"}',
    b"\xff",
    b"\xc3",
]


def reference(c: Cassette) -> bytes:
    """What the file must be, made the obvious way: what orjson writes for the whole document with
    each body as its list of pieces, but each chunk map written a ``[t_ms, end]`` pair a line."""
    items = [_interaction_to_json(x) for x in c.interactions]
    maps = []
    for k, item in enumerate(items):
        maps.append(item["response"]["chunks"])
        item["response"]["chunks"] = f"\x00chunk map {k}\x00"
    raw = orjson.dumps({"version": VERSION, "interactions": items}, option=OPTION)
    for k, pairs in enumerate(maps):
        lines = [b"          [" + orjson.dumps(t) + b", " + orjson.dumps(end) + b"]" for t, end in pairs]
        raw = raw.replace(
            orjson.dumps(f"\x00chunk map {k}\x00"),
            b"[\n" + b",\n".join(lines) + b"\n        ]" if lines else b"[]",
        )
    return raw


def _cassette(bodies: list[tuple[bytes, str | None]]) -> Cassette:
    c = Cassette()
    for body, content_type in bodies:
        headers = {} if content_type is None else {"content-type": content_type}
        c.add("POST", "http://h/x", [body] if body else [], headers=headers, request_json={"q": 1})
        if content_type is None:  # no content type at all (add() would give one)
            resp = c.interactions[-1].response
            resp.headers = [(k, v) for k, v in resp.headers if k != "content-type"]
    return c


@pytest.fixture(params=["accelerated", "pure"])
def accelerator(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each test twice: with the C accelerator's ``escaped`` (as installed) and without it."""
    if request.param == "pure":
        monkeypatch.setattr(cassette_body, "_c_escaped", None)
    return str(request.param)


# bodies, windows and times built from a drawn seed (tests/seeded.py, sizes as hypothesis draws
# them: drawn atom by atom and float by float, drawing was most of these tests' CPU, issue 48 item 4)
def _atoms(max_size: int) -> Build:
    return lambda rng: b"".join(some(ATOMS, max_size)(rng))


@settings(max_examples=300, deadline=None)
@given(
    bodies=seeded(
        lambda rng: [(_atoms(60)(rng), rng.choice(CONTENT_TYPES)) for _ in range(rng.randint(1, 3))]
    ),
    window=st.sampled_from([1, 2, 3, 5, 8, 13, 64, 1 << 18]),
)
def test_any_body_at_any_window_is_laid_out_as_orjson_lays_out_its_pieces(
    bodies: list[tuple[bytes, str | None]], window: int
) -> None:
    """With the C accelerator's ``escaped`` and without it, on each drawn example (drawn once for
    both: drawing them for each, as the ``accelerator`` fixture's two runs did, was most of the
    CPU; issue 48 item 4)."""
    c = _cassette(bodies)
    expected = reference(c)
    for pure in (False, True):
        with pytest.MonkeyPatch.context() as m:
            m.setattr(cassette_body, "WINDOW", window)
            if pure:
                m.setattr(cassette_body, "_c_escaped", None)
            raw = c.dumps()
        assert raw == expected, "pure" if pure else "accelerated"
        assert [x.response.body for x in Cassette.loads(raw).interactions] == [body for body, _ in bodies]


@settings(max_examples=500)
@given(
    window=st.one_of(seeded(_atoms(80)), seeded(binary(40)), seeded(unicode_text(40)).map(str.encode)),
    kind=st.sampled_from(["lf", "lines"]),
    layout=st.sampled_from([b'",\n      "', b'",\n  "', b""]),
)
def test_the_accelerated_window_is_the_pure_code_s_byte_for_byte(
    window: bytes, kind: str, layout: bytes
) -> None:
    """``_speedups.escaped`` makes what the markers and orjson make; on bytes that are not UTF-8
    it gives None and the pure code raises the decoding error."""
    compiled = _speedups.escaped(window, b"\n" if kind == "lines" else b"\n\n", layout)
    try:
        window.decode("utf-8")
    except UnicodeDecodeError:
        assert compiled is None
        return
    saved, cassette_body._c_escaped = cassette_body._c_escaped, None
    try:
        assert compiled == cassette_body._escaped(window, kind, layout)
    finally:
        cassette_body._c_escaped = saved


@pytest.mark.parametrize("kind", ["lf", "lines"])
def test_an_escape_at_any_offset_of_a_long_window_is_the_pure_code_s(kind: str) -> None:
    """``_speedups.escaped`` makes room for 256 bytes of window at a time (with AVX2, where each
    escape stands in them found first, 64 bytes a word): a separator (an event's two newlines
    among them, or three), an escape or a multi-byte character at every offset across a word's
    end and the first block's end is made as the pure code makes it."""
    sep, layout = (b"\n" if kind == "lines" else b"\n\n"), b'",\n      "'
    saved = cassette_body._c_escaped
    for tail in (b"\n\n", b"\n\n\n", b'"x', b"\x01", "\u00e9\u20ac".encode(), b"\\n"):
        for k in [*range(56, 72), *range(240, 272)]:
            window = b"a" * k + tail + b'data: {"b": "' + b"c" * 300 + b'"}\n\n'
            compiled = _speedups.escaped(window, sep, layout)
            cassette_body._c_escaped = None
            try:
                assert compiled == cassette_body._escaped(window, kind, layout), (tail, k)
            finally:
                cassette_body._c_escaped = saved


def test_the_accelerator_is_in_use_and_refuses_bad_arguments() -> None:
    assert cassette_body._c_escaped is _speedups.escaped
    for sep in (b"\r", b"", b"\n\x00", b"\n\n\n"):
        with pytest.raises(TypeError, match="escaped"):
            _speedups.escaped(b"x", sep, b"")
    with pytest.raises(TypeError, match="escaped"):
        _speedups.escaped("x", b"\n", b"")  # type: ignore[arg-type]


@pytest.mark.parametrize("content_type", CONTENT_TYPES)
def test_a_window_holding_every_placeholder_candidate_is_laid_out_piece_by_piece(
    monkeypatch: pytest.MonkeyPatch, accelerator: str, content_type: str | None
) -> None:
    monkeypatch.setattr(cassette_body, "WINDOW", 200)
    crowded = bytes(b for b in cassette_body._CANDIDATES if b != 0x7F) + "\x7f é\n".encode()
    body = b"".join(b"data: %d " % i + crowded + b"\n\n" for i in range(20))
    c = _cassette([(body, content_type), (b"data: plain\n\n" * 30, content_type)])
    assert c.dumps() == reference(c)
    assert Cassette.loads(c.dumps()).interactions[0].response.body == body


def test_a_large_sse_body_in_many_windows(monkeypatch: pytest.MonkeyPatch, accelerator: str) -> None:
    monkeypatch.setattr(cassette_body, "WINDOW", 4096)
    events = [
        f'data: {{"i": {i}, "text": "{"é" * (i % 7)}\\n\\"q\\"", "run": "{chr(10) * (i % 4)}"}}\n\n'.encode()
        for i in range(3000)
    ]
    c = Cassette()
    c.add("GET", "http://h/s", events, times=[i / 997 for i in range(len(events))])
    raw = c.dumps()
    assert raw == reference(c)
    doc = orjson.loads(raw)
    assert "".join(doc["interactions"][0]["response"]["body"]).encode() == b"".join(events)


@pytest.mark.parametrize("where", ["dumps", "save"])
def test_a_body_that_stops_being_utf8_late_is_saved_in_base64(
    tmp_path: Path, accelerator: str, where: str
) -> None:
    """Only a body's first bytes are checked before it is laid out; a bad byte further on makes
    the whole document be written again (the file rewound), with that body in base64."""
    late = b"data: ok\n\n" * 2000 + b"data: \xff\n\n" + b"data: ok\n\n" * 10  # past the checked prefix
    c = _cassette(
        [
            (b"data: first\n\n", "text/event-stream"),
            (late, "text/event-stream"),
            (b"\xfe early", "text/plain"),
            (late + b"x", "text/event-stream"),
        ]
    )
    raw = c.dumps() if where == "dumps" else c.save(tmp_path / "c.json").read_bytes()
    assert raw == reference(c)
    doc = orjson.loads(raw)
    kinds = ["body" if "body" in x["response"] else "body_base64" for x in doc["interactions"]]
    assert kinds == ["body", "body_base64", "body_base64", "body_base64"]
    assert [x.response.body for x in Cassette.loads(raw).interactions] == [
        x.response.body for x in c.interactions
    ]


_EDGE_TIMES = [
    0.0,
    5e-324,
    1e-9,
    0.00005,
    0.00015,
    0.2 + 0.0125 * 3,
    86_400.0,
    1.0,
    0.5,
    2.2250738585072014e-308,
]


def _time(rng: random.Random) -> float:
    """A chunk time: any in a day (at any scale), on or next to a 0.05 ms half, or an edge one."""
    kind = rng.randrange(4)
    if kind == 0:
        return rng.uniform(0, 86_400) / 10 ** rng.choice([0, 0, 3, 6])
    if kind == 1:
        return rng.randint(0, 10**9) / 20_000  # on or next to a 0.05 ms half
    if kind == 2:
        return (rng.randint(0, 8 * 10**8) + 0.5) / 10_000
    return rng.choice(_EDGE_TIMES)


@settings(max_examples=300, deadline=None)
@given(times=seeded(lambda rng: sorted(_time(rng) for _ in range(1 + sized(rng, 39)))))
def test_chunk_times_are_rounded_as_round_ms_1(times: list[float]) -> None:
    c = Cassette()
    c.add("GET", "http://h/s", [b"x"] * len(times), times=times)
    chunks = orjson.loads(c.dumps())["interactions"][0]["response"]["chunks"]
    written = [t for t, _ in chunks]
    expected = [round(t * 1000, 1) for t in times]
    assert written == expected
    assert [math.copysign(1, t) for t in written] == [math.copysign(1, t) for t in expected]


def test_times_that_are_not_plain_floats_are_written_as_round_writes_them() -> None:
    c = Cassette()
    c.add("GET", "http://h/s", [b"a", b"b", b"c"])
    c.interactions[0].response.times = [0, -0.0, 2.5]  # set by hand: an int and a negative zero
    written: list[Any] = [t for t, _ in orjson.loads(c.dumps())["interactions"][0]["response"]["chunks"]]
    assert written == [0, -0.0, 2500.0] and type(written[0]) is int and math.copysign(1, written[1]) == -1


def _tenths_and_times(rng: random.Random) -> tuple[list[int], list[Any]]:
    """A recorder's tenths of a millisecond (any to 2**50 and past it, zeros, near a 0.05 ms half)
    and the times that a hook may have left in their place: as made from them, or one edited
    (a neighbour, an int, -0.0, NaN, a rounded or extended copy)."""
    top = rng.choice([10, 10**4, 10**9, 2**50 - 1, 2**50, 2**52])
    tenths = sorted(rng.choice([0, top, rng.randint(0, top)]) for _ in range(1 + sized(rng, 39)))
    times: list[Any] = [k / 10_000 for k in tenths]
    i = rng.randrange(len(times))
    edit = rng.randrange(8)
    if edit == 1:
        times[i] = math.nextafter(times[i], math.inf)
    elif edit == 2:
        times[i] = tenths[i] // 10_000
    elif edit == 3:
        times[i] = -0.0 if tenths[i] == 0 else -times[i]
    elif edit == 4:
        times[i] = math.nan
    elif edit == 5:
        times[i] = round(times[i], 3)
    elif edit == 6:
        times.append(times[-1])
    return tenths, times


@settings(max_examples=300, deadline=None)
@given(drawn=seeded(_tenths_and_times))
def test_times_written_from_a_recorders_tenths_are_rounded_as_round_ms_1(
    drawn: tuple[list[int], list[Any]],
) -> None:
    """The save writes a recording's times from the recorder's integer tenths when they still give
    the times; whatever a hook left there, it writes ``round(t * 1000, 1)`` (the same repr: sign,
    type, NaN)."""
    tenths, times = drawn
    expected = [round(t * 1000, 1) for t in times]
    assert list(map(repr, _times_ms(times, tenths))) == list(map(repr, expected))  # NaN, -0.0, int kept


@pytest.mark.parametrize("content_type", ["text/event-stream", "text/plain"])
def test_runs_of_blank_lines_across_every_window_edge(
    monkeypatch: pytest.MonkeyPatch, accelerator: str, content_type: str
) -> None:
    """A run of 3+ newlines pairs up from its first (``\\n\\n`` ends an event, the odd one
    starts the next), wherever a window's edge falls in it."""
    bodies = [b"".join(b"e%d" % i + b"\n" * (i % 6 + 1) for i in range(n)) for n in (1, 5, 12)]
    bodies += [b"\n" * k for k in range(1, 8)] + [b"x\n\n\n" * 4, b"\n\n\nx" * 4, b"\r\n\r\n\r\n\n\r\r" * 3]
    for window in range(1, 14):
        monkeypatch.setattr(cassette_body, "WINDOW", window)
        c = _cassette([(body, content_type) for body in bodies])
        assert c.dumps() == reference(c), window
