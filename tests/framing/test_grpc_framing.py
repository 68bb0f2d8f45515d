"""gRPC's length-prefixed messages: framing, whole and incremental decoding cut anywhere, the
ends the chunkings cut at, and a bad header named by its byte."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ssemock.framing.grpc import (
    STATUS_CODES,
    Decoder,
    GrpcFramingError,
    LengthPrefixed,
    decode,
    event_ends,
    frame,
    frame_all,
    header_ends,
    is_grpc_media,
    status_name,
)


def test_a_message_has_a_five_byte_header_flag_then_big_endian_length() -> None:
    assert frame(b"abc") == b"\x00\x00\x00\x00\x03abc"
    assert frame(b"", compressed=True) == b"\x01\x00\x00\x00\x00"


@given(st.lists(st.binary(max_size=40), max_size=6), st.data())
def test_a_body_cut_anywhere_decodes_to_its_messages(messages: list[bytes], data: st.DataObject) -> None:
    body = frame_all(messages)
    cuts = sorted(data.draw(st.sets(st.integers(0, len(body)))))
    decoder, got = Decoder(), []
    for a, b in zip([0, *cuts], [*cuts, len(body)]):
        got += decoder.feed(body[a:b])
    decoder.close()
    assert got == [LengthPrefixed(m) for m in messages] == decode(body)
    ends = event_ends(body)
    assert [body[a:b] for a, b in zip([0, *ends], ends)] == [frame(m) for m in messages]
    assert header_ends(body) == [e - len(m) for e, m in zip(ends, messages)]


def test_a_cut_body_a_bad_flag_and_an_oversized_length_are_named_by_byte() -> None:
    with pytest.raises(GrpcFramingError, match="byte 5: the body ends 3 bytes into a message"):
        decode(frame(b"") + frame(b"abcdef")[:3])
    with pytest.raises(GrpcFramingError, match="byte 7: the flag byte is 2"):
        decode(frame(b"hi") + b"\x02\x00\x00\x00\x00")
    with pytest.raises(GrpcFramingError, match="byte 0: a message of 1,000 bytes is over the 10 accepted"):
        Decoder(max_message=10).feed(b"\x00\x00\x00\x03\xe8")
    assert event_ends(frame(b"hi") + frame(b"abc")[:4]) == [7]


def test_status_names_and_media_types() -> None:
    assert status_name(14) == status_name("unavailable") == "UNAVAILABLE"
    assert STATUS_CODES["UNAUTHENTICATED"] == 16
    with pytest.raises(ValueError, match="unknown gRPC status code 99"):
        status_name(99)
    assert is_grpc_media("application/grpc") and is_grpc_media("application/grpc+proto")
    assert not is_grpc_media("application/grpc-web")
