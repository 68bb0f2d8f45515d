"""Drawn variants of a cassette's WebSocket sessions (issue 35, item 5): the hazard offsets of a
server wire, and ``ssemock.strategies.variants`` on a session cassette, each draw a set of replay
options a client is run under (a hand-written frame reader over httpx, ``tests/ws_frame_client.py``)."""

from __future__ import annotations

import ws_frame_client as client
from hypothesis import given, settings

import ssemock
from ssemock import cassettes, strategies
from ssemock.framing.websocket import Opcode, encode_frame
from ssemock.variants.websocket.draws import WS_FAULTS, wire_hazards

CASSETTE = cassettes.load(client.NAME)


def test_the_hazards_of_a_wire_are_inside_headers_inside_characters_and_at_frame_ends() -> None:
    short = encode_frame(Opcode.TEXT, "añb".encode())  # 2-byte header, 4-byte payload
    long = encode_frame(Opcode.BINARY, b"x" * 200)  # 4-byte header (16-bit length)
    found = wire_hazards(short + long)
    assert found["frame header"] == [1, 6 + 1, 6 + 3]
    assert found["inside a character"] == [2 + 2]  # between the two bytes of ñ
    assert found["frame end"] == [6]  # (the last frame's end is the wire's: no cut there)


@settings(max_examples=12, deadline=None, database=None)
@given(variant=strategies.variants(CASSETTE, faults=True))
def test_each_drawn_session_variant_replays_and_a_correct_reader_reads_it(
    variant: strategies.Variant,
) -> None:
    assert isinstance(variant.chunking, strategies.At)
    assert {t.name.split(":")[0] for t in variant.transforms} <= {"fragments", "pings"}
    assert variant.fault is None or variant.fault.name in WS_FAULTS
    with ssemock.replay(CASSETTE, **variant.options()) as player:
        try:
            text, calls, events = client.session(client.Correct)
        except ConnectionError:  # a fault ended the session: a conforming client says so
            assert variant.fault is not None and player.expected.rejects() is not None  # type: ignore[union-attr]
            return
        player.assert_text(text)
        player.expected.assert_events(events)
