"""A large stream's joins (issue 33): pieces kept joined a segment at a time, the JSON escapes of a
join undone by json's scanner, and a window with a lone surrogate still scanned (orjson refused
it, and the window was skipped)."""

from __future__ import annotations

import json

from ssemock import Cassette
from ssemock.scan.large_streams import _SEGMENT
from ssemock.scan.walk import _DEEP_MAX, scan_cassette

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
