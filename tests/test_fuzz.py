"""Fuzzing (hypothesis): the cassette loader, the SSE and NDJSON decoders, the accumulators.

The contract under test, for any input at all:

* ``Cassette.loads`` / ``Cassette.load`` give a Cassette or raise ``CassetteError``, never
  another exception; what loads saves again and reloads to the same file (idempotent);
* ``ssemock.sse.decode`` never raises, and gives the same events however the bytes are
  chunked -- the events of a straightforward reading of the WHATWG algorithm on the whole body;
* ``ssemock.ndjson.decode`` gives the same values however the bytes are chunked, or raises
  ``NDJSONError`` for the same line; nothing else;
* ``ssemock.accumulate`` gives a result or raises ``ProtocolError`` that names the event
  index (``.index`` and ``"event N"`` in the message), never another exception.

Example counts are modest (the file is about 11 CPU-s of the suite's run, issue 48 item 4): each
run draws new examples (its seed is new), and a deep run takes more, e.g. ``SSEMOCK_FUZZ_SCALE=50``
for 50 times as many (as test_har's and test_hostile's fuzzers).
"""

from __future__ import annotations

import copy
import json
import os
import random
import re
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from seeded import binary, lists, nested, pick, scalars, seeded, sized, some, text
from streams import anthropic_events, openai_chat_events

from ssemock import Cassette, CassetteError, ndjson, sse
from ssemock.accumulate import PROTOCOLS, Accumulated, ProtocolError, accumulate
from ssemock.commands.har import export_har
from ssemock.commands.show import format_summary, summarize
from ssemock.commands.validate import validate_cassette
from ssemock.framing.websocket import Opcode, encode_frame
from ssemock.plan.conversation import Conversation, UnmatchedMessageError
from ssemock.sse import ServerSentEvent
from ssemock.store.model import Interaction, Request, Response
from ssemock.store.websocket import DIRECTIONS, Close, FrameNote, Message, WebSocket, Wire

# SSEMOCK_FUZZ_SCALE=50 pytest tests/test_fuzz.py: a deep run (50x the examples). FAST and SOME
# were 200 and 100 (22 CPU-s of the suite's run, a fifth of its hypothesis tests; issue 48 item 4).
SCALE = int(os.environ.get("SSEMOCK_FUZZ_SCALE", "1"))
_QUIET = [HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large]
FAST = settings(max_examples=100 * SCALE, deadline=None, suppress_health_check=_QUIET)
SOME = settings(max_examples=50 * SCALE, deadline=None, suppress_health_check=_QUIET)
MANY = settings(max_examples=400 * SCALE, deadline=None, suppress_health_check=_QUIET)

# -- JSON values ------------------------------------------------------------------------------

_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
)
# any JSON value (ints past 64 bits too), built from a drawn seed (tests/seeded.py: drawn leaf by
# leaf, these and the accumulators' events were most of this file's CPU, issue 48 item 4)
_json_value = nested(scalars(-(2**70), 2**70, text(max_size=12)), text(max_size=8), leaves=20, width=4)
json_values = seeded(_json_value)


def _serialize(doc: Any) -> bytes:
    """JSON text for any value (json, not orjson: integers beyond 64 bits are allowed)."""
    return json.dumps(doc, ensure_ascii=False).encode("utf-8", "surrogatepass")


def _load_or_cassette_error(raw: bytes | str) -> Cassette | None:
    try:
        cassette = Cassette.loads(raw, path="fuzz.json")
    except CassetteError as exc:
        assert "fuzz.json" in str(exc)
        return None
    # what loads saves, and saves the same way again (no crash on save, no drift)
    first = cassette.dumps()
    again = Cassette.loads(first)
    assert again.dumps() == first
    for a, b in zip(cassette.interactions, again.interactions):
        assert a.response.body == b.response.body
        assert a.response.ends == b.response.ends
        assert a.request.body == b.request.body or a.request.json() == b.request.json()
    return cassette


# -- the cassette loader ----------------------------------------------------------------------


@FAST
@given(st.binary(max_size=300))
def test_loader_on_arbitrary_bytes(raw: bytes) -> None:
    _load_or_cassette_error(raw)


@FAST
@given(json_values)
def test_loader_on_arbitrary_json(doc: Any) -> None:
    _load_or_cassette_error(_serialize(doc))


@SOME
@given(
    st.dictionaries(
        st.sampled_from(["version", "interactions", "extra"]), st.one_of(st.just(1), json_values), max_size=3
    ),
    st.lists(
        st.dictionaries(
            st.sampled_from(["request", "response"]),
            st.dictionaries(
                st.sampled_from(
                    [
                        "method",
                        "url",
                        "headers",
                        "json",
                        "body",
                        "body_base64",
                        "status",
                        "chunks",
                        "complete",
                        "error",
                    ]
                ),
                json_values,
                max_size=6,
            ),
            max_size=2,
        ),
        max_size=3,
    ),
)
def test_loader_on_cassette_shaped_json(top: dict[str, Any], items: list[Any]) -> None:
    top.setdefault("version", 1)
    top["interactions"] = items
    _load_or_cassette_error(_serialize(top))


def test_loader_from_a_file_says_which_file(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    for raw in (b"", b"\xff\xfe", b"[]", b'{"version": 1, "interactions": [1]}'):
        path.write_bytes(raw)
        with pytest.raises(CassetteError) as info:
            Cassette.load(path)
        assert str(path) in str(info.value)
    with pytest.raises(CassetteError):
        Cassette.load(tmp_path / "missing.json")
    with pytest.raises(CassetteError):
        Cassette.load(tmp_path)  # a directory


_EVENTS = [
    b"data: x\n\n",
    b"event: e\ndata: \xe4\xb8\x96\n\n",
    b": ping\n\n",
    b'data: {"a": 1}\n\n',
    b"data: [DONE]\n\n",
]
_TIMES = [0.0, 100.0, 5e-324, 1e-7, 0.1, 99.99999999999999]
_REQUEST_VALUE = scalars(-(2**63), 2**64 - 1, text(max_size=12))


def _valid_cassette(rng: random.Random) -> Cassette:
    """1-3 interactions: SSE events or any bytes cut at up to 5 points, times in 0-100 s in order,
    a request JSON object or none, complete or not, an error or none."""
    cassette = Cassette()
    for _ in range(rng.randint(1, 3)):
        if rng.random() < 0.5:
            body = b"".join(rng.choices(_EVENTS, k=1 + sized(rng, 4)))
        else:
            body = rng.randbytes(1 + sized(rng, 39))
        cuts = sorted(rng.sample(range(1, len(body)), min(len(body) - 1, sized(rng, 5))))
        ends = [*cuts, len(body)]
        chunks = [body[a:b] for a, b in zip([0, *ends], ends)]
        times = sorted(rng.choice(_TIMES) if rng.random() < 0.3 else rng.uniform(0, 100) for _ in chunks)
        request_json = None
        if rng.random() < 0.5:
            request_json = {text(max_size=5)(rng): _REQUEST_VALUE(rng) for _ in range(sized(rng, 3))}
        cassette.add(
            rng.choice(["GET", "POST"]),
            "http://h.test/v1/chat/completions",
            chunks,
            times=times,
            status=rng.choice([200, 429, 500]),
            request_json=request_json,
            complete=rng.random() < 0.5,
            error=rng.choice([None, {"type": "RemoteProtocolError", "message": "x"}]),
        )
    return cassette


def valid_cassettes() -> st.SearchStrategy[Cassette]:
    """Valid cassettes built from a drawn seed (drawn value by value through a composite they were
    most of the CPU of the four tests that take them, issue 48 item 4)."""
    return seeded(_valid_cassette)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _paths(v, (*prefix, i))
    return out


def _mutate(doc: Any, path: tuple[Any, ...], how: str, new: Any) -> Any:
    if not path:
        return new if how != "delete" else {}
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    key = path[-1]
    if how == "delete":
        del parent[key]
    elif how == "duplicate" and isinstance(parent, list):
        parent.insert(key, parent[key])
    elif how == "negate" and isinstance(parent[key], (int, float)) and not isinstance(parent[key], bool):
        parent[key] = -parent[key] - 1
    else:
        parent[key] = new
    return doc


@SOME
@given(valid_cassettes(), st.randoms(use_true_random=True))
def test_loader_on_valid_cassettes_with_random_mutations(cassette: Cassette, rng: random.Random) -> None:
    doc = orjson.loads(cassette.dumps())
    for _ in range(rng.randint(1, 3)):
        paths = _paths(doc)
        path = rng.choice(paths)
        how = rng.choice(["replace", "delete", "duplicate", "negate"])
        new = (
            _json_value(rng)
            if rng.random() < 0.5
            else rng.choice([0, -1, 2**63, 1.5, "", [], {}, None, True])
        )
        doc = _mutate(doc, path, how, new)
    _load_or_cassette_error(_serialize(doc))


@SOME
@given(
    valid_cassettes(),
    seeded(
        lambda rng: [
            (rng.randint(0, 10_000), rng.choice(["flip", "drop", "insert"]), rng.randint(0, 255))
            for _ in range(rng.randint(1, 4))
        ]
    ),
)
def test_loader_on_valid_cassettes_with_byte_edits(
    cassette: Cassette, edits: list[tuple[int, str, int]]
) -> None:
    raw = bytearray(cassette.dumps())
    for pos, how, byte in edits:
        pos %= len(raw)
        if how == "flip":
            raw[pos] ^= byte or 1
        elif how == "drop":
            del raw[pos]
        else:
            raw.insert(pos, byte)
    _load_or_cassette_error(bytes(raw))


@SOME
@given(
    valid_cassettes(),
    seeded(
        lambda rng: [
            (rng.randint(0, 10_000), rng.choice(["flip", "drop", "insert"]), rng.choice(b',\n"[]\\ x0'))
            for _ in range(rng.randint(1, 4))
        ]
    ),
)
def test_large_file_loader_agrees_with_the_whole_document_on_edited_files(
    cassette: Cassette, edits: list[tuple[int, str, int]]
) -> None:
    """Files read with their bodies apart (as large files are, here in 16-byte batches) give the
    same cassette, or the same error, as parsing the whole file, whatever the edits to them."""
    import tempfile
    from unittest import mock

    import ssemock.store.reading as reading

    raw = bytearray(cassette.dumps())
    for pos, how, byte in edits:  # structural bytes, where a body split could go wrong
        pos %= len(raw)
        if how == "flip":
            raw[pos] = byte
        elif how == "drop":
            del raw[pos]
        else:
            raw.insert(pos, byte)
    with (
        tempfile.TemporaryDirectory() as tmp,
        mock.patch.object(reading, "LEAN_MIN_SIZE", 0),
        mock.patch.object(reading, "_BATCH", 16),
    ):
        path = Path(tmp) / "edited.json"
        path.write_bytes(raw)
        try:
            whole: Cassette | str = Cassette.loads(bytes(raw), path=path)
        except CassetteError as exc:
            whole = str(exc)
        try:
            lean: Cassette | str = Cassette.load(path)
        except CassetteError as exc:
            lean = str(exc)
    if isinstance(whole, str) or isinstance(lean, str):
        assert lean == whole
    else:
        assert [(x.request, x.response) for x in lean.interactions] == [
            (x.request, x.response) for x in whole.interactions
        ]


@FAST
@given(valid_cassettes())
def test_valid_cassettes_round_trip(cassette: Cassette) -> None:
    loaded = _load_or_cassette_error(cassette.dumps())
    assert loaded is not None
    for a, b in zip(cassette.interactions, loaded.interactions):
        assert b.response.chunks == a.response.chunks
        assert b.response.complete == a.response.complete and b.response.error == a.response.error


@SOME
@given(st.text(max_size=200))
def test_loader_on_arbitrary_text(text: str) -> None:
    _load_or_cassette_error(text)


def test_loader_on_text_with_lone_surrogates() -> None:
    _load_or_cassette_error('{"version": 1, "interactions": [], "x": "\ud800"}')


def test_loader_on_deep_nesting() -> None:
    for depth in (100, 1000, 100_000):
        _load_or_cassette_error(b'{"version": 1, "interactions": [' + b"[" * depth + b"]" * depth + b"]}")


def test_loader_on_extreme_numbers() -> None:
    def doc(chunks: str, status: str = "200") -> str:
        return (
            '{"version": 1, "interactions": [{"request": {"method": "GET", "url": "http://h/"}, '
            f'"response": {{"status": {status}, "body": ["ab"], "chunks": {chunks}}}}}]}}'
        )

    for chunks in (
        "[[1e308, 2]]",
        "[[1.7976931348623157e308, 2]]",
        "[[1e400, 2]]",
        "[[-0.0, 2]]",
        "[[0, 18446744073709551615]]",
        "[[0, 99999999999999999999999]]",
        "[[0, 2.0]]",
        "[[NaN, 2]]",
        "[[0, 1], [0, 1]]",
        "[[0, 2, 3]]",
        "[[true, 2]]",
    ):
        _load_or_cassette_error(doc(chunks))
    for status in ("200.0", "true", "99999999999999999999", "-200", "1e3"):
        _load_or_cassette_error(doc("null", status))


def test_version_true_is_not_version_1() -> None:
    with pytest.raises(CassetteError):
        Cassette.loads(b'{"version": true, "interactions": []}')


# -- WebSocket sessions -----------------------------------------------------------------------

_HEAD = b"GET /v1/realtime HTTP/1.1\r\nHost: h.test\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"


@st.composite
def valid_sessions(draw: st.DrawFn) -> Cassette:
    """A cassette of a WebSocket session (messages both ways, fragments, pings, wire chunks, a
    close), after an HTTP interaction half the time: what mutations start from."""
    messages, last = [], {"send": 0.0, "recv": 0.0}
    for _ in range(draw(st.integers(0, 5))):
        direction = draw(st.sampled_from(DIRECTIONS))
        last[direction] += draw(st.floats(0, 2, allow_nan=False))
        if draw(st.booleans()):
            data: str | bytes = draw(st.sampled_from(['{"type":"session.created"}', "caf\u00e9", ""]))
            messages.append(Message(direction, round(last[direction], 4), "text", data))
        else:
            data = draw(st.sampled_from([b"\x00\xff\x01", b'{"setupComplete":{}}', b"abcdef"]))
            messages.append(Message(direction, round(last[direction], 4), "binary", data))
    received = [m for m in messages if m.direction == "recv"]
    notes = []
    if received and draw(st.booleans()):
        notes.append(FrameNote("recv", 0, "ping", t=0.0, data=b"hi"))
    big = next((k for k, m in enumerate(received) if len(m.payload) > 2), None)
    if big is not None and draw(st.booleans()):
        notes.append(FrameNote("recv", big, "fragments", [1, 2]))
    ends = sorted(draw(st.sets(st.integers(1, 500), max_size=3)))
    wire = Wire(draw(st.integers(0, 3)), ends, [0.001 * k for k in range(len(ends))])
    by = draw(st.sampled_from(["client", "server", None]))
    code = draw(st.sampled_from([1000, 1001, 1011, 4000])) if by else 1006
    close = Close(code, draw(st.sampled_from(["", "bye", "\u00e9" * 61])) if by else "", by, by is not None)
    session = WebSocket(
        messages,
        notes,
        wire,
        close,
        draw(st.sampled_from([[], ["realtime"]])),
        draw(st.sampled_from([None, "realtime"])),
        draw(st.sampled_from([None, "permessage-deflate", "permessage-deflate; server_max_window_bits=10"])),
    )
    cassette = Cassette()
    if draw(st.booleans()):
        cassette.add("POST", "http://h.test/v1/chat/completions", [b"data: 1\n\n"], times=[0.01])
    handshake = Response(101, [("upgrade", "websocket"), ("connection", "Upgrade")])
    cassette.interactions.append(Interaction(Request("GET", "ws://h.test/v1/realtime"), handshake, session))
    return cassette


def _every_reader(cassette: Cassette) -> None:
    """What ``validate``, ``show``, ``export-har`` and a replay do with a loaded cassette: none
    may raise."""
    validate_cassette(cassette, "fuzz.json")
    for i, x in enumerate(cassette.interactions):
        format_summary(summarize(x, i))
    export_har(cassette)
    for i, x in enumerate(cassette.interactions):
        if x.websocket is None:
            continue
        conversation = Conversation(x, i)
        conversation.answer(_HEAD)
        for m in x.websocket.sent():
            op = Opcode.TEXT if m.type == "text" else Opcode.BINARY
            try:
                conversation.feed(encode_frame(op, m.payload, mask=b"abcd"))
            except UnmatchedMessageError:
                break
        x.websocket.frames  # noqa: B018 (the frames a replay reports)


_HOSTILE = st.sampled_from(
    [0, -1, 2**63, 2**64, 1.5, -0.5, 1e300, "", "x" * 130, "a\r\nb", "\x00", "世界", [], {}, None, True]
)


@SOME
@given(valid_sessions(), st.data())
def test_loader_on_websocket_cassettes_with_random_mutations(cassette: Cassette, data: st.DataObject) -> None:
    """A WebSocket cassette mutated anywhere (a value replaced by another of any type, deleted,
    duplicated, negated) loads or raises one CassetteError naming the file; what loads,
    ``validate``, ``show``, ``export-har`` and a replay read without an exception."""
    doc = orjson.loads(cassette.dumps())
    last = len(cassette.interactions) - 1  # the session's interaction: most mutations go there
    for _ in range(data.draw(st.integers(1, 3))):
        paths = [p for p in _paths(doc) if p[:2] == ("interactions", last)] or _paths(doc)
        path = data.draw(st.sampled_from(paths))
        how = data.draw(st.sampled_from(["replace", "delete", "duplicate", "negate"]))
        new = copy.deepcopy(data.draw(st.one_of(json_values, _HOSTILE)))  # a later mutation may edit it
        doc = _mutate(doc, path, how, new)
    loaded = _load_or_cassette_error(_serialize(doc))
    if loaded is not None:
        _every_reader(loaded)


@SOME
@given(valid_sessions())
def test_valid_websocket_cassettes_round_trip_and_read(cassette: Cassette) -> None:
    loaded = _load_or_cassette_error(cassette.dumps())
    assert loaded is not None
    assert loaded.dumps() == cassette.dumps()
    _every_reader(loaded)


# -- the SSE decoder --------------------------------------------------------------------------

_LINE_END = re.compile("\r\n|\r|\n")


def reference_sse(body: bytes) -> list[tuple[str, str, str, int | None]]:
    """The WHATWG event stream interpretation, read plainly, on the whole body at once."""
    text = body.decode("utf-8", "replace")
    if text.startswith("\ufeff"):
        text = text[1:]
    lines = _LINE_END.split(text)[:-1]  # the last piece has no line ending: never processed
    events, data, kind, last_id, retry = [], [], "", "", None
    for line in lines:
        if not line:
            if data:
                events.append((kind or "message", "\n".join(data), last_id, retry))
            data, kind, retry = [], "", None
            continue
        if line.startswith(":"):
            continue
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "data":
            data.append(value)
        elif name == "event":
            kind = value
        elif name == "id":
            if "\0" not in value:
                last_id = value
        elif name == "retry" and value and all("0" <= c <= "9" for c in value):
            try:
                retry = int(value)
            except ValueError:  # more digits than int() converts
                pass
    return events


_SSE_TOKENS = [
    b"data",
    b"event",
    b"id",
    b"retry",
    b":",
    b": ",
    b" ",
    b"\n",
    b"\r",
    b"\r\n",
    b"\n\n",
    b"\xef\xbb\xbf",
    b"\xef\xbb",
    b"\x00",
    b"x",
    b"42",
    b"\xe4\xb8\x96",
    b"\xf0\x9f\x99\x82",
    b"\xe4",
    b"\x80",
    b"\xff",
    b"message",
    b"[DONE]",
    b'{"a": 1}',
    b"data: ",
    b"\n\r\n",
]
# built from a drawn seed, sizes as hypothesis draws them (drawn byte by byte, token by token)
sse_bodies = st.one_of(seeded(binary(120)), seeded(lambda rng: b"".join(some(_SSE_TOKENS, 40)(rng))))
_CUTS = seeded(lambda rng: [rng.randint(0, 200) for _ in range(sized(rng, 12))])


def _split(body: bytes, cuts: list[int]) -> list[bytes]:
    ends = sorted({c % (len(body) + 1) for c in cuts} | {len(body)})
    return [body[a:b] for a, b in zip([0, *ends], ends)]


def _events(events: list[ServerSentEvent]) -> list[tuple[str, str, str, int | None]]:
    return [(e.event, e.data, e.id, e.retry) for e in events]


@MANY
@given(sse_bodies, _CUTS)
def test_sse_any_bytes_any_chunking_match_the_reference(body: bytes, cuts: list[int]) -> None:
    whole = _events(sse.decode([body]))
    assert whole == reference_sse(body)
    assert _events(sse.decode(_split(body, cuts))) == whole
    # empty chunks mixed in change nothing either
    assert _events(sse.decode([b"", *(c for part in _split(body, cuts) for c in (part, b""))])) == whole


@FAST
@given(sse_bodies)
def test_sse_bytewise_matches_the_whole(body: bytes) -> None:
    assert _events(sse.decode([body[i : i + 1] for i in range(len(body))])) == _events(sse.decode([body]))


@FAST
@given(st.lists(sse_bodies, min_size=1, max_size=3), st.lists(st.integers(0, 200), max_size=6))
def test_sse_decoder_reused_after_close(bodies: list[bytes], cuts: list[int]) -> None:
    """After close() a decoder takes a new stream (a reconnection) as a fresh one would, keeping
    only the last event ID."""
    decoder = sse.Decoder()
    for body in bodies:
        fresh = sse.Decoder()
        fresh.last_event_id = decoder.last_event_id
        got, want = [], []
        for chunk in _split(body, cuts):
            got += decoder.feed(chunk)
            want += fresh.feed(chunk)
        assert decoder.close() == [] and fresh.close() == []
        assert _events(got) == _events(want)
        assert decoder.last_event_id == fresh.last_event_id


# -- the NDJSON decoder -----------------------------------------------------------------------


def reference_ndjson(body: bytes) -> list[object] | tuple[str, int]:
    out: list[object] = []
    for lineno, line in enumerate(re.split(rb"\r\n|\r|\n", body), 1):  # a lone CR ends a line too
        if not line.strip(b" \t"):
            continue
        try:
            out.append(orjson.loads(line))
        except orjson.JSONDecodeError:
            return ("error", lineno)
    return out


def _ndjson_outcome(chunks: list[bytes]) -> list[object] | tuple[str, int]:
    try:
        return ndjson.decode(chunks)
    except ndjson.NDJSONError as exc:
        return ("error", exc.lineno)


_ND_TOKENS = [
    b"{",
    b"}",
    b"[",
    b"]",
    b'"',
    b":",
    b",",
    b"1",
    b"-",
    b"e",
    b".",
    b"true",
    b"null",
    b" ",
    b"\t",
    b"\r",
    b"\n",
    b"\r\n",
    b'"a"',
    b'{"done": true}',
    b'{"message": {"content": "\xe4\xb8\x96"}}',
    b"\xe4",
    b"\x00",
    b"\xc2\x85",
    b"\xe2\x80\xa8",
    b"\xef\xbb\xbf",
]
ndjson_bodies = st.one_of(
    st.binary(max_size=100),
    st.lists(st.sampled_from(_ND_TOKENS), max_size=30).map(b"".join),
    st.lists(json_values.map(_serialize), max_size=5).map(b"\n".join),
)


@FAST
@given(ndjson_bodies, st.lists(st.integers(0, 200), max_size=10))
def test_ndjson_any_bytes_any_chunking_same_outcome(body: bytes, cuts: list[int]) -> None:
    whole = _ndjson_outcome([body])
    assert whole == reference_ndjson(body)
    assert _ndjson_outcome(_split(body, cuts)) == whole
    assert _ndjson_outcome([body[i : i + 1] for i in range(len(body))]) == whole


# -- the accumulators -------------------------------------------------------------------------

_KINDS = [
    "message_start",
    "content_block_start",
    "content_block_delta",
    "content_block_stop",
    "message_delta",
    "message_stop",
    "error",
    "ping",
    "response.created",
    "response.output_item.added",
    "response.output_text.delta",
    "response.refusal.delta",
    "response.reasoning_summary_text.delta",
    "response.function_call_arguments.delta",
    "response.function_call_arguments.done",
    "response.output_item.done",
    "response.completed",
    "response.failed",
    "response.incomplete",
    "response.output_text.annotation.added",
    "text_delta",
    "input_json_delta",
    "thinking_delta",
    "signature_delta",
    "citations_delta",
    "text",
    "tool_use",
    "thinking",
    "function_call",
    "message",
    "reasoning",
    "chat.completion.chunk",
]
_KEYS = [
    "type",
    "index",
    "delta",
    "content_block",
    "message",
    "usage",
    "choices",
    "tool_calls",
    "function",
    "arguments",
    "name",
    "id",
    "content",
    "text",
    "partial_json",
    "output_index",
    "content_index",
    "summary_index",
    "item",
    "response",
    "error",
    "finish_reason",
    "stop_reason",
    "refusal",
    "thinking",
    "signature",
    "citation",
    "annotation",
    "call_id",
    "done",
    "done_reason",
    "eval_count",
    "object",
    "input",
    "incomplete_details",
    "status",
    "reasoning_content",
    "model",
    "citations",
]


def _shaped_text(rng: random.Random) -> str:
    return rng.choice(_KINDS) if rng.random() < 0.5 else text(max_size=5)(rng)


# values shaped like the protocols' events (their keys, kinds and small indexes, nested) and events
# of them, built from a drawn seed (tests/seeded.py)
_shaped = nested(scalars(-2, 3, _shaped_text), pick(_KEYS), leaves=15, width=5)


def _shaped_object(rng: random.Random) -> dict[str, Any]:
    return {rng.choice(_KEYS): _shaped(rng) for _ in range(rng.randint(0, 6))}


def _payload(rng: random.Random) -> Any:
    return _shaped_object(rng) if rng.random() < 0.5 else _shaped(rng)


_ODD_DATA = ["[DONE]", "", "not json", "{", "[DONE] ", "null", "1e400"]


def _sse_event(rng: random.Random) -> ServerSentEvent:
    data = json.dumps(_payload(rng)) if rng.random() < 0.5 else rng.choice(_ODD_DATA)
    return ServerSentEvent("message" if rng.random() < 0.5 else rng.choice(_KINDS), data)


def _fold(events: list[Any], protocol: str | None) -> Accumulated | None:
    try:
        result = accumulate(events, protocol)
    except ProtocolError as exc:
        if exc.index is None:  # only detection and unknown-protocol failures have no event
            assert protocol is None or protocol not in PROTOCOLS, exc
            assert "protocol" in str(exc)
            return None
        assert 0 <= exc.index < len(events), exc
        assert f"event {exc.index}" in str(exc), exc
        return None
    result.to_dict()  # the JSON-able form works for whatever came out
    _ = (result.text, result.tool_calls, result.usage, result.finish_reason, result.complete)
    for call in result.tool_calls:
        _ = call.parsed_arguments
    return result


@SOME
@given(seeded(lists(_sse_event, max_size=12)), st.sampled_from([*PROTOCOLS[:3], None]))
def test_accumulators_on_random_sse_events(events: list[ServerSentEvent], protocol: str | None) -> None:
    _fold(events, protocol)


@SOME
@given(seeded(lists(_payload, max_size=12)))
def test_ollama_accumulator_on_random_json_lines(values: list[Any]) -> None:
    _fold(values, "ollama.chat")


@SOME
@given(
    seeded(
        lists(
            lambda rng: _shaped_object(rng) if rng.random() < 0.5 else ServerSentEvent(rng.choice(_KINDS)),
            max_size=6,
        )
    ),
    st.sampled_from(list(PROTOCOLS)),
)
def test_accumulators_on_the_wrong_kind_of_event(events: list[Any], protocol: str) -> None:
    _fold(events, protocol)


def _real_stream(protocol: str) -> list[ServerSentEvent]:
    raw = openai_chat_events() if protocol == "openai.chat" else anthropic_events()
    return sse.decode(raw)


@SOME
@given(st.sampled_from(["openai.chat", "anthropic.messages"]), st.data())
def test_accumulators_on_shuffled_dropped_and_repeated_real_events(
    protocol: str, data: st.DataObject
) -> None:
    events = _real_stream(protocol)
    order = data.draw(st.lists(st.integers(0, len(events) - 1), max_size=len(events) + 4))
    mangled = [events[i] for i in order]
    _fold(mangled, protocol)
    _fold(mangled, None)


def test_accumulators_on_the_real_streams_in_order() -> None:
    for protocol in ("openai.chat", "anthropic.messages"):
        result = _fold(_real_stream(protocol), protocol)
        assert result is not None and result.complete


@SOME
@given(
    st.lists(
        st.sampled_from(
            [
                ServerSentEvent(data=d)
                for d in [
                    '{"type": "response.output_item.added", "output_index": 0, "item": {"type": "function_call", "call_id": "c"}}',
                    '{"type": "response.output_item.added", "output_index": 1, "item": {"type": "message"}}',
                    '{"type": "response.output_text.delta", "output_index": 1, "content_index": 0, "delta": "hi"}',
                    '{"type": "response.function_call_arguments.delta", "output_index": 0, "delta": "{\\"a\\""}',
                    '{"type": "response.function_call_arguments.done", "output_index": 0, "arguments": "{}"}',
                    '{"type": "response.output_item.done", "output_index": 0, "item": {"type": "function_call", "name": "f"}}',
                    '{"type": "response.completed", "response": {"status": "completed", "usage": {"total_tokens": 3}}}',
                    '{"type": "error", "message": "boom"}',
                    '{"type": "response.output_text.delta", "output_index": 7, "content_index": 0, "delta": "x"}',
                ]
            ]
        ),
        max_size=10,
    )
)
def test_responses_accumulator_on_random_orders(events: list[ServerSentEvent]) -> None:
    _fold(events, "openai.responses")
