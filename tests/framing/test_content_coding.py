"""`ssemock.framing.content_coding`: a body's Content-Encoding undone as it streams in, piece by
piece, and a bomb stopped at the limit with a bounded output (measured with tracemalloc)."""

from __future__ import annotations

import gzip
import tracemalloc
import zlib

import brotli
import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from ssemock.framing.content_coding import InflateLimit, decoder

BODY = b"".join(b'data: {"n": %d}\n\n' % i for i in range(2000))
ENCODE = {  # (the fastest levels: the bombs below are made in a few tenths of a second)
    "gzip": lambda b: gzip.compress(b, 1),
    "deflate": lambda b: zlib.compress(b, 1),
    "zstd": lambda b: zstandard.ZstdCompressor(level=1).compress(b),
    "br": lambda b: brotli.compress(b, quality=1),
}


@settings(max_examples=40, deadline=None)
@given(name=st.sampled_from(sorted(ENCODE)), cuts=st.lists(st.integers(1, 400), max_size=30))
def test_any_cut_of_the_encoded_body_decodes_to_the_body(name: str, cuts: list[int]) -> None:
    encoded = ENCODE[name](BODY)
    decode = decoder(name, len(BODY))
    assert decode is not None
    out, at = [], 0
    for size in cuts:
        out.append(decode(encoded[at : at + size]))
        at += size
    out.append(decode(encoded[at:]))
    assert b"".join(out) == BODY


def test_stacked_layers_are_undone_last_first() -> None:
    decode = decoder("gzip, br", len(BODY))
    assert decode is not None and decode(brotli.compress(gzip.compress(BODY))) == BODY
    assert decoder("identity", 10) is None and decoder("gzip, compress", 10) is None


@pytest.mark.parametrize("name", sorted(ENCODE))
def test_a_bomb_stops_at_the_limit_with_a_bounded_output(name: str) -> None:
    bomb = ENCODE[name](b"\0" * (64 << 20))  # 64 MiB of zeros, under 300 KiB encoded
    decode = decoder(name, 1 << 20)
    assert decode is not None
    tracemalloc.start()
    try:
        with pytest.raises(InflateLimit, match=str(1 << 20)):
            for at in range(0, len(bomb), 1 << 16):
                decode(bomb[at : at + (1 << 16)])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 << 20  # the limit and a few pieces, never the 64 MiB


@pytest.mark.parametrize("encoding", ["gzip", "zstd", "br", "gzip, br"])
def test_the_limit_keeps_what_was_decoded_up_to_it(encoding: str) -> None:
    encoded = BODY
    for name in [e.strip() for e in encoding.split(",")]:
        encoded = ENCODE[name](encoded)
    decode = decoder(encoding, 1000)
    assert decode is not None
    with pytest.raises(InflateLimit) as cut:
        decode(encoded)
    assert cut.value.kept == BODY[:1000]
