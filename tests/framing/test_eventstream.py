"""ssemock.framing.eventstream: AWS eventstream frames decoded incrementally, checked like botocore
checks them, and their boundaries used as the events of a binary Bedrock body."""

from __future__ import annotations

import struct
import uuid
from binascii import crc32
from datetime import UTC, datetime

import pytest
from botocore.eventstream import EventStreamBuffer
from hypothesis import given, settings
from hypothesis import strategies as st

import ssemock
from ssemock.framing import eventstream as es

ALL_TYPES: dict[str, es.HeaderValue | es.Typed] = {
    "yes": True,
    "no": False,
    "i8": es.Typed("byte", -5),
    "i16": es.Typed("short", 1234),
    "i32": 70000,
    "i64": es.Typed("long", 2**40),
    "blob": b"\x00\xffbin",
    "text": "世界",
    "when": datetime(2026, 11, 23, 7, 0, 1, 250000, tzinfo=UTC),
    "id": uuid.UUID("12345678-1234-5678-1234-567812345678"),
}
PLAIN = {
    "yes": True,
    "no": False,
    "i8": -5,
    "i16": 1234,
    "i32": 70000,
    "i64": 2**40,
    "blob": b"\x00\xffbin",
    "text": "世界",
    "when": datetime(2026, 11, 23, 7, 0, 1, 250000, tzinfo=UTC),
    "id": uuid.UUID("12345678-1234-5678-1234-567812345678"),
}


def _event(kind: str, payload: bytes) -> bytes:
    return es.encode(
        {":event-type": kind, ":content-type": "application/json", ":message-type": "event"}, payload
    )


FRAMES = [
    _event("messageStart", b'{"role":"assistant"}'),
    es.encode(ALL_TYPES, b"payload \xe4\xb8\x96"),
    _event("contentBlockDelta", b'{"contentBlockIndex":0,"delta":{"text":"hi"}}'),
    es.encode({}, b""),
]
BODY = b"".join(FRAMES)


def test_every_header_type_round_trips_and_botocore_reads_the_same() -> None:
    (frame,) = es.decode(es.encode(ALL_TYPES, b"payload"))
    assert frame.headers == PLAIN and frame.payload == b"payload"
    buffer = EventStreamBuffer()
    buffer.add_data(es.encode(ALL_TYPES, b"payload"))
    (theirs,) = list(buffer)
    assert theirs.payload == b"payload"
    ours = {**PLAIN, "when": 1795417201250, "id": PLAIN["id"].bytes}  # type: ignore[union-attr]
    assert theirs.headers == ours  # botocore gives timestamps as milliseconds, UUIDs as bytes


@pytest.mark.parametrize("chunking", ssemock.chunking.ALL, ids=str)
def test_any_chunking_decodes_the_same_frames(chunking: ssemock.chunking.Chunking) -> None:
    frames = es.decode(chunking(BODY))
    assert [f.raw for f in frames] == FRAMES
    assert [f.offset for f in frames] == [0, *es.frame_ends(BODY)[:-1]]
    assert [f.index for f in frames] == [0, 1, 2, 3]
    assert frames[0].event_type == "messageStart" and frames[0].message_type == "event"
    assert frames[2].json() == {"contentBlockIndex": 0, "delta": {"text": "hi"}}


def test_a_frame_comes_out_with_its_last_byte() -> None:
    decoder = es.Decoder()
    first = FRAMES[0]
    assert decoder.feed(first[:-1]) == [] and decoder.pending == len(first) - 1
    (frame,) = decoder.feed(first[-1:] + FRAMES[1][:5])
    assert frame.raw == first and decoder.pending == 5
    decoder.close()
    assert decoder.pending == 0


def test_a_frame_cut_off_by_the_end_is_dropped() -> None:
    assert [f.raw for f in es.decode(BODY[:-3])] == FRAMES[:-1]


def _corrupt(body: bytes, at: int) -> bytes:
    return body[:at] + bytes([body[at] ^ 0x01]) + body[at + 1 :]


def test_a_bad_message_crc_names_the_frame_and_its_offset() -> None:
    offset = es.frame_ends(BODY)[1]  # frame 2 starts here
    bad = _corrupt(BODY, offset + 20)  # a header byte of frame 2
    with pytest.raises(
        es.FrameError, match=rf"eventstream frame 2 \(at byte {offset}\): message CRC32 is"
    ) as info:
        es.decode(ssemock.chunking.bytewise(bad))
    assert (info.value.index, info.value.offset) == (2, offset)
    assert isinstance(info.value, ValueError)


def test_a_bad_prelude_crc_names_the_frame() -> None:
    offset = es.frame_ends(BODY)[0]
    with pytest.raises(es.FrameError, match=rf"frame 1 \(at byte {offset}\): prelude CRC32"):
        es.decode(_corrupt(BODY, offset + 9))


def _raw(
    headers: bytes, payload: bytes = b"", *, total: int | None = None, header_length: int | None = None
) -> bytes:
    """A frame written by hand (valid CRCs), to say what the encoder never would."""
    size = 16 + len(headers) + len(payload) if total is None else total
    prelude = struct.pack(">II", size, len(headers) if header_length is None else header_length)
    message = prelude + struct.pack(">I", crc32(prelude)) + headers + payload
    return message + struct.pack(">I", crc32(message))


@pytest.mark.parametrize(
    ("frame", "problem"),
    [
        (_raw(b"\x01a\x0e"), "header 'a' has value type 14, which is none of 0-9"),
        (_raw(b"\x01a\x00\x01a\x01"), "header 'a' appears twice"),
        (_raw(b"\x01a\x07\x00\x02\xff\xfe"), "string header 'a' is not UTF-8"),
        (_raw(b"\x01a\x07\x00\x09abc"), "header 'a' needs 9 bytes, 3 left"),
        (_raw(b"\x00"), "a header with an empty name"),
        (_raw(b"", header_length=4), "total length 16 with headers length 4 is impossible"),
        (
            _raw(b"\x01a\x08" + struct.pack(">q", 2**62)),
            "timestamp header 'a' is 4611686018427387904 ms from 1970",
        ),
        (_raw(b"\x01a\x08" + struct.pack(">q", -(2**63))), "timestamp header 'a' .* outside years 1-9999"),
    ],
)
def test_malformed_frames_are_one_clear_error(frame: bytes, problem: str) -> None:
    with pytest.raises(es.FrameError, match=rf"frame 1 \(at byte {len(FRAMES[0])}\): .*{problem}"):
        es.decode(FRAMES[0] + frame)


@settings(max_examples=300, deadline=None)
@given(kind=st.integers(0, 255), value=st.binary(max_size=40), name=st.binary(min_size=1, max_size=4))
def test_any_header_block_decodes_or_is_a_frame_error(kind: int, value: bytes, name: bytes) -> None:
    """Every value type with any bytes after it: a header, or FrameError (never a bare
    ValueError, OverflowError or struct.error from one field)."""
    try:
        (frame,) = es.decode(_raw(bytes([len(name)]) + name + bytes([kind]) + value))
    except es.FrameError as exc:
        assert exc.index == 0 and exc.offset == 0
    else:
        assert len(frame.headers) >= 1


def test_a_huge_length_is_refused_before_anything_is_buffered() -> None:
    prelude = struct.pack(">II", 2**31, 0)
    decoder = es.Decoder()
    with pytest.raises(es.FrameError, match="payload length .* exceeds"):
        decoder.feed(prelude + struct.pack(">I", crc32(prelude)))


def test_encode_refuses_what_cannot_be_written() -> None:
    with pytest.raises(ValueError, match="does not fit a byte"):
        es.encode({"x": es.Typed("byte", 300)})
    with pytest.raises(ValueError, match="unknown type 'float'"):
        es.encode({"x": es.Typed("float", 1)})
    with pytest.raises(ValueError, match="1-255 bytes"):
        es.encode({"": "x"})


def test_frame_boundaries_are_the_events_of_a_binary_body() -> None:
    ends = es.frame_ends(BODY)
    assert ends == [sum(map(len, FRAMES[: k + 1])) for k in range(len(FRAMES))]
    assert ssemock.chunking.event_ends(BODY) == ends == ssemock.chunking.event_ends(BODY, sse=False)
    assert ssemock.chunking.per_event(BODY) == FRAMES
    assert es.frame_ends(BODY[:-1]) == ends[:-1]  # a cut-off frame is not an event
    assert es.is_eventstream(BODY) and not es.is_eventstream(b"data: x\n\n" * 3)
    assert ssemock.chunking.event_ends(b"data: x\n\ndata: y\n\n") == [9, 18]  # text bodies as before


def test_the_framing_registry_entry() -> None:
    assert es.FRAMING.name == "eventstream"
    assert es.FRAMING.content_type("application/vnd.amazon.eventstream")
    assert not es.FRAMING.content_type("text/event-stream")
    assert es.FRAMING.sniff(BODY) and [f.raw for f in es.FRAMING.decode(BODY)] == FRAMES
    assert es.FRAMING.event_ends(BODY) == es.frame_ends(BODY)
