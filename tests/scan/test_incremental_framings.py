"""The scan as a recording arrives of the framings other than SSE (JSON lines, a JSON array,
AWS eventstream): the findings of the scan at save, however the body is cut (issue 48 item 1)."""

from __future__ import annotations

import base64
import functools
import json
import random
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from seeded import EDGE_INTS, lists, nested, seeded, sized, text, unicode_text
from starlette.applications import Starlette
from starlette.requests import Request as StarletteRequest
from starlette.responses import StreamingResponse
from starlette.routing import Route

import ssemock
from ssemock.commands.loopback import running
from ssemock.framing import accelerator, eventstream, json_array, ndjson
from ssemock.scan import findings, large_streams, walk
from ssemock.scan.incremental import BodyScan
from ssemock.scan.incremental_framings import JSONArrayDecoder, Text, decoder
from ssemock.scan.walk import scan_interaction
from ssemock.store.cassette import Interaction, Request, Response

# a fake key, put together at run time (no key-shaped literal in the repository)
KEY = "sk-" + "ant-" + "api03-" + "Zq8Xw2Lm9Rt4Vb7Nc1Pd6Hs3Jk5Fg0Ty"

Event = dict[str, object]


def _delta(text: str, index: int = 0) -> Event:
    return {"candidates": [{"index": index, "content": {"parts": [{"text": text}]}}]}


def _lines(events: list[Event]) -> bytes:
    return b"".join(json.dumps(e).encode() + b"\n" for e in events)


def _array(events: list[Event]) -> bytes:
    return b"[" + b"\n,\r\n".join(json.dumps(e).encode() for e in events) + b"\n]"


def _frames(events: list[Event]) -> bytes:
    """Bedrock's frames: each event's JSON in a base64 ``bytes`` member."""
    headers = {":event-type": "chunk", ":content-type": "application/json", ":message-type": "event"}
    return b"".join(
        eventstream.encode(
            headers, json.dumps({"bytes": base64.b64encode(json.dumps(e).encode()).decode()}).encode()
        )
        for e in events
    )


FRAMINGS: dict[str, tuple[str, Callable[[list[Event]], bytes]]] = {
    "ndjson": ("application/x-ndjson", _lines),
    "json_array": ("application/json; charset=utf-8", _array),
    "eventstream": (eventstream.CONTENT_TYPE, _frames),
}

FORMS: dict[str, Callable[[], list[Event]]] = {
    "whole": lambda: [_delta("my key is " + KEY)],
    "split": lambda: [_delta(c) for c in KEY],  # a key streamed back one character an event
    "split, interleaved with another candidate": lambda: [
        e for c in KEY for e in (_delta(c, index=1), _delta(" and", index=0))
    ],
    "credential-named member": lambda: [{"password": "hunter2-hunter2"}],
    "base64": lambda: [_delta(base64.b64encode(f"the key {KEY}".encode()).decode())],
    "none": list,
}


def _events(size: int, at: int, secret: list[Event]) -> list[Event]:
    """Filler events to about ``size`` bytes of JSON, with the ``secret`` events from byte ``at`` on."""
    out: list[Event] = []
    n = k = 0
    placed = False
    while n < size or not placed:
        if not placed and n >= at:
            out += secret
            placed = True
        out.append(_delta(f" word{k % 97} and more" * 12))  # about 300 bytes an event
        n += 300
        k += 1
    return out


def _saved(content_type: str, body: bytes) -> tuple[Response, list[str]]:
    response = Response(200, [("content-type", content_type)], body, [len(body)], [0.0])
    request = Request("POST", "http://127.0.0.1/v1/stream", [], b"{}")
    return response, [str(f) for f in scan_interaction(Interaction(request, response))]


def _fed(content_type: str, body: bytes, cuts: list[int], keep: bool) -> BodyScan:
    """The scan fed ``body`` cut at ``cuts``; with ``keep`` it reads the body so far as a
    recording hands it (else it keeps the pieces itself)."""
    pos = 0
    scan = BodyScan(content_type, (lambda: body[:pos]) if keep else None)
    for end in [*sorted(set(cuts)), len(body)]:
        if end > pos:
            scan.feed(body[pos:end])
            pos = end
    return scan


def _incremental(content_type: str, body: bytes, cuts: list[int], keep: bool) -> list[str] | None:
    response = Response(200, [("content-type", content_type)], body, [len(body)], [0.0])
    found = _fed(content_type, body, cuts, keep).findings(response)
    return None if found is None else [str(f) for f in findings.first_per_place(found)]


@settings(max_examples=60, deadline=None)
@given(
    name=st.sampled_from(sorted(FRAMINGS)),
    form=st.sampled_from(sorted(FORMS)),
    before=st.integers(0, 12),
    after=st.integers(0, 12),
    rng=st.randoms(use_true_random=True),
)
def test_the_scan_as_it_arrives_finds_what_the_save_finds_however_the_body_is_cut(
    name: str, form: str, before: int, after: int, rng: random.Random
) -> None:
    content_type, encode = FRAMINGS[name]
    events = (
        [_delta(f"w{k}") for k in range(before)] + FORMS[form]() + [_delta(f"v{k}") for k in range(after)]
    )
    body = encode(events)
    cuts = [rng.randint(0, len(body)) for _ in range(sized(rng, 40))]
    response, whole = _saved(content_type, body)
    assert _incremental(content_type, body, cuts, keep=bool(len(cuts) % 2)) == whole
    if form != "none":
        assert whole, f"{form} in {name}: not found"


@pytest.mark.parametrize("name", sorted(FRAMINGS))
@pytest.mark.parametrize(
    ("size", "at", "form"),
    [
        (600_000, (256 << 10) - 900, "split"),  # across the first cut of a large stream's segments
        (
            2_400_000,
            (2 << 20) - 1_500,
            "base64",
        ),  # across the size where the walk gives way to the large pass
    ],
)
def test_a_large_body_is_scanned_as_it_arrives_as_the_save_scans_it(
    name: str, size: int, at: int, form: str
) -> None:
    content_type, encode = FRAMINGS[name]
    body = encode(_events(size, at, FORMS[form]()))
    _, whole = _saved(content_type, body)
    rng = random.Random(size + at)
    cuts = [rng.randrange(len(body)) for _ in range(len(body) // 8000)]
    assert _incremental(content_type, body, cuts, keep=True) == whole
    assert _incremental(content_type, body, cuts[::2], keep=False) == whole
    assert whole, f"{form} in {name} at {at} of {size} bytes: not found"


@pytest.mark.parametrize("form", ["whole", "split", "base64"])
def test_eventstream_frames_holding_no_newline_are_scanned_as_they_arrive(
    monkeypatch: pytest.MonkeyPatch, form: str
) -> None:
    """Frames whose bytes hold no newline (large text payloads: the recording bench's) were held
    back whole until the save, which then scanned the body at once: a piece now ends after a
    NUL (`ssemock.scan.large_streams.cut_after`), so the large-stream pass is handed the body's
    segments while it arrives, and the findings stay those of the save."""
    headers = {":event-type": "chunk", ":content-type": "application/json", ":message-type": "event"}
    frames = [eventstream.encode(headers, json.dumps(e).encode()) for e in FORMS[form]()]
    filler = eventstream.encode(headers, b'{"text":"' + b"x" * 16_000 + b'"}')
    body = filler * 100 + b"".join(frames) + filler * 100  # past 2 MiB: the large-stream pass
    assert b"\n" not in filler
    _, whole = _saved(eventstream.CONTENT_TYPE, body)
    handed: list[int] = []
    segment = large_streams.LargeStream.segment

    def spied(stream: large_streams.LargeStream, data: bytes, pos: int, end: int, *flags: bool) -> None:
        handed.append(end - pos)
        segment(stream, data, pos, end, *flags)

    monkeypatch.setattr(large_streams.LargeStream, "segment", spied)
    scan = _fed(eventstream.CONTENT_TYPE, body, list(range(0, len(body), 4096)), keep=True)
    assert sum(handed) > len(body) - 2 * large_streams._SEGMENT  # before the save: all but the tail
    response = Response(200, [("content-type", eventstream.CONTENT_TYPE)], body, [len(body)], [0.0])
    found = scan.findings(response)
    assert found is not None and [str(f) for f in findings.first_per_place(found)] == whole
    assert whole, f"{form}: not found"


@pytest.mark.parametrize(
    "body",
    [
        b'[{"a": 1}, {"b": "x]"}, {"c": [1, {"d": "\\""}]}]',
        b'  [ {"a": 1} , [2, 3] ]  trailing bytes that are never read',
        b'[{"a": 1}, {"b": 2',  # cut short: the partial element is left out
        b'[{"a": 1} {"b": 2}]',  # no comma
        b'[{"a": 1},, {"b": 2}]',
        b'[{"a": 1}, }',
        b'[{"a": 1},]',
        b'x[{"a": 1}]',
        b'[{"a": 1e}]',
        b"   ",
    ],
)
def test_the_json_array_decoder_decodes_and_fails_as_the_whole_body_does(body: bytes) -> None:
    try:
        expected: list[object] | type[Exception] = json_array.decode(body)
    except json_array.JSONArrayError:
        expected = json_array.JSONArrayError
    for size in (1, 2, 3, 7, len(body) or 1):
        decoder, got = JSONArrayDecoder(), []
        try:
            for a in range(0, len(body), size):
                got += decoder.feed(body[a : a + size])
            got += decoder.close()
        except json_array.JSONArrayError:
            assert expected is json_array.JSONArrayError
        else:
            assert got == expected


# an element: objects of strings with quotes, escapes, brackets and separators in them, nested in
# lists and objects; built from a drawn seed (seeded.py: drawn leaf by leaf it was most of the
# CPU of these tests, issue 48 item 4)
_TEXT = text('ab"\\[]{},\n é', max_size=12)
_ELEMENT = nested(
    lambda rng: {_TEXT(rng): _TEXT(rng) for _ in range(rng.randint(0, 3))}, _TEXT, leaves=8, width=3
)


@settings(max_examples=150, deadline=None)
@given(
    elements=seeded(lists(_ELEMENT, max_size=6)),
    separator=st.sampled_from([",", "\n,\r\n", " , "]),
    rng=st.randoms(use_true_random=True),
)
def test_the_json_array_decoder_fed_in_any_pieces_gives_the_elements(
    elements: list[object], separator: str, rng: random.Random
) -> None:
    body = ("[" + separator.join(json.dumps(e) for e in elements) + "]").encode()
    cuts = _cuts(rng, len(body), 20)
    for texts in (False, True):
        array, got, pos = JSONArrayDecoder(texts), [], 0
        for end in [*cuts, len(body)]:
            got += array.feed(body[pos:end])
            pos = max(pos, end)
        got += array.close()
        if texts:  # each element as the text it was received as
            assert all(type(e) is Text for e in got)
            got = [json.loads(e.data) for e in got]
        assert got == json_array.decode(body) == elements


def _cuts(rng: random.Random, size: int, max_size: int) -> list[int]:
    """Up to ``max_size`` cuts (hypothesis' sizes) in a body of ``size`` bytes, in order."""
    return sorted({rng.randint(0, size) for _ in range(sized(rng, max_size))})


# A JSON array stream, well formed or not: elements with quotes, escapes and brackets in their
# strings, nested brackets, separators, and stray bytes anywhere; built from a drawn seed.
_STRAYS = ["[", "]", "{", "}", '"', "\\", ",", " ", "\n", "\x0b", "a", "1", '"\\"', "é"]
_ARRAY_PIECES = seeded(
    lambda rng: [
        json.dumps(_ELEMENT(rng)) if rng.random() < 0.5 else rng.choice(_STRAYS)
        for _ in range(sized(rng, 12))
    ]
)


def _outcome(run: Callable[[], object]) -> object:
    try:
        return run()
    except json_array.JSONArrayError as exc:
        return ("error", exc.offset, str(exc))
    except UnicodeDecodeError as exc:
        return ("undecodable", exc.start)


def _array_fed(body: bytes, cuts: list[int], texts: bool) -> list[object]:
    """What a JSONArrayDecoder gives, feed by feed, fed body cut at cuts (an error ends it)."""
    array, out, pos = JSONArrayDecoder(texts), [], 0
    for end in [*cuts, len(body)]:
        out.append(_outcome(functools.partial(array.feed, body[pos:end])))
        if isinstance(out[-1], tuple):
            return out
        pos = max(pos, end)
    return [*out, array.close()]


@settings(max_examples=300, deadline=None)
@given(
    pieces=_ARRAY_PIECES,
    head=st.sampled_from(["[", " [", "", "[\n", "x"]),
    separator=st.sampled_from([",", "\n,\r\n", " , ", "", ",,"]),
    tail=st.sampled_from(["]", "", " ]", "]x"]),
    rng=st.randoms(use_true_random=True),
)
def test_the_accelerator_finds_a_json_arrays_elements_as_the_pure_loop_does(
    pieces: list[str], head: str, separator: str, tail: str, rng: random.Random
) -> None:
    # the elements and errors of json_array.decode and of the decoder fed the body in any pieces,
    # with the accelerator's array_spans and with the pure loop alone (issue 48 item 1)
    assert accelerator.array_spans is not None  # the install builds it
    body = (head + separator.join(pieces) + tail).encode()
    cuts = _cuts(rng, len(body), 12)

    def outcomes() -> list[object]:
        whole = _outcome(lambda: json_array.decode(body))
        return [
            whole,
            _outcome(lambda: json_array.event_ends(body)),
            _array_fed(body, cuts, False),
            _array_fed(body, cuts, True),
        ]

    with_c = outcomes()
    with pytest.MonkeyPatch.context() as m:
        m.setattr(
            json_array, "_c_array_spans", None
        )  # (the scan's decoder reads through json_array.Elements)
        assert outcomes() == with_c


def test_the_accelerators_array_spans_resumes_across_any_cut() -> None:
    assert accelerator.array_spans is not None
    body = b'[{"a": "x\\"]"}, [1, [2]] ]'
    state, found = (1, 0, 0, -1, 1, 0), []
    for end in range(1, len(body) + 1):  # a byte more at a time, an escape's byte cut off too
        flat, *rest = accelerator.array_spans(body[:end], *state)
        state = (rest[0], rest[1], rest[2], rest[3], rest[4], rest[5])
        found += [body[a:b] for a, b in zip(flat[::2], flat[1::2], strict=True)]
    assert found == [b'{"a": "x\\"]"}', b"[1, [2]]"]
    assert state == (len(body) - 1, 0, 0, 16, len(body) - 2, 2)  # stopped before the ']'
    with pytest.raises(TypeError, match="array_spans"):
        accelerator.array_spans("[]", 1, 0, 0, -1, 1, 0)  # type: ignore[arg-type]


def _parsed(events: list[object]) -> list[object]:
    return [json.loads(e.data) if isinstance(e, Text) else e for e in events]


_ODD_LINES = ["", "  ", "\t", "{", '{"a": 1} x', "[1,", " [1] ", "x", "\x0c{}"]
_SHORT = unicode_text(4)


def _line(rng: random.Random) -> str:
    """An element, a number, a short string or null, or a line no JSON value or not one alone."""
    kind = rng.randrange(3)
    if kind == 0:
        return json.dumps(_ELEMENT(rng))
    if kind == 2:
        return rng.choice(_ODD_LINES)
    scalar = rng.randrange(3)
    if scalar == 0:
        return json.dumps(
            rng.choice(EDGE_INTS) if rng.random() < 0.3 else rng.randint(-(10 ** rng.randint(1, 24)), 10**24)
        )
    return json.dumps(_SHORT(rng) if scalar == 1 else None)


@settings(max_examples=150, deadline=None)
@given(
    lines=seeded(lambda rng: [_line(rng) for _ in range(sized(rng, 8))]),
    ending=st.sampled_from(["\n", "\r\n", "\r"]),
    last=st.booleans(),
    rng=st.randoms(use_true_random=True),
)
def test_the_json_lines_decoder_gives_the_lines_that_decode_gives_values_or_raises(
    lines: list[str], ending: str, last: bool, rng: random.Random
) -> None:
    """The scan's JSON-lines decoder gives an object or an array as its text (`Text`), any other
    value parsed; a line that is no JSON raises there or, a `Text`, is plain data to the walk."""
    body = (ending.join(lines) + (ending if last else "")).encode()
    cuts = _cuts(rng, len(body), 12)
    try:
        expected: list[object] | None = ndjson.decode([body])
    except ndjson.NDJSONError:
        expected = None
    lines_decoder, got, pos = decoder("application/x-ndjson"), [], 0
    try:
        for end in [*cuts, len(body)]:
            got += lines_decoder.feed(body[pos:end])
            pos = max(pos, end)
        got += lines_decoder.close()
    except ValueError:  # (orjson's error)
        assert expected is None
        return
    plain: list[str] = []  # the data the walk takes for no JSON
    walk._Scan(0).stream("response.body", 0, got, "", plain)
    if expected is None:  # decoded whole it raises: a line given as its text is no JSON
        assert plain  # (where the scan as it arrives breaks off)
    else:
        assert not plain and _parsed(got) == expected


@pytest.mark.parametrize("name", ["ndjson", "json_array"])
def test_an_event_that_is_no_json_after_its_shape_was_planned_breaks_the_scan(name: str) -> None:
    """A line (an element) of the shape of the events before it, but no JSON: the decoder
    decoding the whole body raises, so the scan as it arrives leaves the body to the save."""
    content_type, encode = FRAMINGS[name]
    good = encode([_delta(f"w{k}") for k in range(40)])
    broken = good.replace(b'"w20"', b'"w20\x01"', 1)  # a raw control character in a string
    assert broken != good
    response = Response(200, [("content-type", content_type)], broken, [len(broken)], [0.0])
    assert _fed(content_type, broken, [len(broken) // 2], keep=True).findings(response) is None
    assert _incremental(content_type, good, [len(good) // 2], keep=True) == _saved(content_type, good)[1]


def _agents_frames(texts: list[str]) -> bytes:
    """Bedrock Agents' frames: raw text chunks, each its own base64 in a ``bytes`` member."""
    headers = {":event-type": "chunk", ":content-type": "application/json", ":message-type": "event"}
    return b"".join(
        eventstream.encode(headers, json.dumps({"bytes": base64.b64encode(t.encode()).decode()}).encode())
        for t in texts
    )


def test_a_key_split_across_many_raw_text_chunks_is_found_as_it_arrives() -> None:
    """Past 256 raw text chunks the scan as it arrives joined their base64 parts, each padded, into
    one that no longer decoded: a key split across two later chunks was not found (and the save
    took those findings). Each part is decoded apart, as the save does."""
    texts = [f" word{k % 97} and more ab" for k in range(600)]  # base64 with padding
    texts[400:400] = [KEY[:20], KEY[20:]]
    body = _agents_frames(texts)
    _, whole = _saved(eventstream.CONTENT_TYPE, body)
    rng = random.Random(7)
    cuts = [rng.randrange(len(body)) for _ in range(200)]
    assert any("reassembled $.bytes base64" in f for f in whole)
    assert _incremental(eventstream.CONTENT_TYPE, body, cuts, keep=True) == whole
    assert _incremental(eventstream.CONTENT_TYPE, body, cuts[::3], keep=False) == whole


def test_a_json_body_that_is_no_array_is_scanned_at_the_save() -> None:
    """``application/json`` is decoded as a JSON array only when the body says so; a document
    cut in pieces (no stream) is scanned whole at the save, as its framing differs."""
    body = json.dumps({"note": "x" * 5000, "password": "hunter2-hunter2"}).encode()
    response = Response(200, [("content-type", "application/json")], body, [len(body)], [0.0])
    assert _fed("application/json", body, [100, 4500], keep=True).findings(response) is None
    assert _saved("application/json", body)[1]


# -- recordings through the public API ----------------------------------------------------------


def _app(content_type: str, body: bytes) -> Starlette:
    async def stream(request: StarletteRequest) -> StreamingResponse:
        async def chunks() -> AsyncIterator[bytes]:
            for a in range(0, len(body), 997):  # pieces that cut events anywhere
                yield body[a : a + 997]

        return StreamingResponse(chunks(), media_type=content_type)

    return Starlette(routes=[Route("/v1/stream", stream, methods=["POST"])])


def _record(url: str, path: Path) -> bytes:
    with ssemock.use_cassette(path, record_mode="all"):
        with httpx.Client() as client, client.stream("POST", f"{url}/v1/stream", json={"stream": True}) as r:
            return b"".join(r.iter_raw())


@pytest.mark.parametrize("name", sorted(FRAMINGS))
def test_a_recording_whose_key_is_split_across_events_is_refused(tmp_path: Path, name: str) -> None:
    content_type, encode = FRAMINGS[name]
    body = encode(_events(150_000, 60_000, FORMS["split"]()))
    with running(_app(content_type, body)) as url:
        with pytest.raises(ssemock.SecretError) as refused:
            _record(url, tmp_path / "c.json")
    assert "reassembled" in str(refused.value) and KEY not in str(refused.value)
    assert not (tmp_path / "c.json").exists()


@pytest.mark.parametrize("name", sorted(FRAMINGS))
def test_the_save_takes_the_findings_of_the_scan_done_as_it_arrived(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    content_type, encode = FRAMINGS[name]
    body = encode(_events(150_000, 0, []))
    with running(_app(content_type, body)) as url:

        def walked_again(*args: object) -> None:
            raise AssertionError("the body was walked again at the save")

        with monkeypatch.context() as m:  # only the save is watched: the recording walks as it arrives
            _record(url, tmp_path / "warm.json")
            m.setattr(walk._Scan, "events", walked_again)
            assert _record(url, tmp_path / "c.json") == body
    assert ssemock.Cassette.load(tmp_path / "c.json").interactions[0].response.body == body
