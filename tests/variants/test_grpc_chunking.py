"""The gRPC wire chunkings (`ssemock.variants.grpc.chunking`), driven by the registry: each cuts
the framed messages without changing a byte; ``per_message`` at every message's end,
``mid_header`` inside every 5-byte prefix; names of the HTTP registry map onto them; the HTTP-only
ones are refused naming the valid ones. And the frames a replayed call is planned into
(`ssemock.plan.grpc.wire`): turns of a bidirectional call and, when timed, messages never share
a frame."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ssemock.framing.grpc import event_ends, frame_all
from ssemock.plan.grpc.wire import wire_frames
from ssemock.store.grpc import GrpcCall, GrpcMessage, GrpcWire
from ssemock.variants import chunking as http_chunking
from ssemock.variants.grpc import chunking as grpc_chunking
from ssemock.variants.websocket import chunking as ws_chunking

messages = st.lists(st.binary(max_size=40), min_size=1, max_size=8)


@pytest.mark.parametrize("name", grpc_chunking.names())
@settings(max_examples=30)
@given(messages)
def test_every_chunking_cuts_the_wire_without_changing_a_byte(name: str, sent: list[bytes]) -> None:
    wire = frame_all(sent)
    chunking = grpc_chunking.get(name)
    ends = chunking.ends(wire, event_ends(wire))
    assert ends == sorted(set(ends)) and ends[-1] == len(wire)
    assert b"".join(chunking(wire, event_ends(wire))) == wire


@given(messages)
def test_per_message_and_mid_header_cut_where_their_names_say(sent: list[bytes]) -> None:
    wire = frame_all(sent)
    ends = event_ends(wire)
    assert grpc_chunking.per_message.ends(wire) == ends
    cut = grpc_chunking.mid_header.ends(wire)
    for start in [0, *ends[:-1]]:  # every prefix is split after its flag and inside its length
        assert start + 1 in cut and start + 3 in cut


def test_http_names_map_onto_the_wire_and_http_only_ones_are_refused() -> None:
    for http, wire in [
        ("per_event", "per_message"),
        ("mid_line", "mid_header"),
        ("per_message", "per_message"),
    ]:
        assert grpc_chunking.for_http(http_chunking.get(http)).name == wire
    assert grpc_chunking.for_http(http_chunking.get("random:3")).name == "random:3"
    assert [c.name for c in grpc_chunking.resolve("all")] == list(grpc_chunking.names())
    with pytest.raises(ValueError, match="cuts HTTP bodies, not gRPC messages.*per_message"):
        grpc_chunking.get("mid_line")
    with pytest.raises(ValueError, match="per_message"):
        grpc_chunking.get("per_mesage")


def _bidi() -> GrpcCall:
    return GrpcCall(
        "/chat.Chat/Talk",
        "stream_stream",
        [
            GrpcMessage("recv", 0.01, b"welcome"),
            GrpcMessage("send", 0.02, b"a"),
            GrpcMessage("recv", 0.03, b"re a"),
            GrpcMessage("recv", 0.04, b"more a"),
            GrpcMessage("send", 0.05, b"b"),
            GrpcMessage("recv", 0.06, b"re b"),
        ],
    )


def test_a_frame_never_spans_two_turns_of_a_conversation() -> None:
    frames = wire_frames(_bidi(), grpc_chunking.get("coalesced"))
    assert [(f.data, f.after_sends, f.messages) for f in frames] == [
        (frame_all([b"welcome"]), 0, 1),
        (frame_all([b"re a", b"more a"]), 1, 3),
        (frame_all([b"re b"]), 2, 4),
    ]
    timed = wire_frames(_bidi(), grpc_chunking.get("coalesced"), timed=True)
    assert [f.t for f in timed] == [0.01, 0.03, 0.04, 0.06]  # each message waits its own gap


def test_as_recorded_serves_the_recorded_frames_at_their_times() -> None:
    call = GrpcCall(
        "/chat.Chat/Stream",
        "unary_stream",
        [
            GrpcMessage("send", 0.0, b"q"),
            GrpcMessage("recv", 0.01, b"abc"),
            GrpcMessage("recv", 0.02, b"defg"),
        ],
        wire=GrpcWire([3, 17], [0.005, 0.025]),
    )
    frames = wire_frames(call, grpc_chunking.get("as_recorded"))
    assert [len(f.data) for f in frames] == [3, 14] and [f.t for f in frames] == [0.005, 0.025]
    assert [f.messages for f in frames] == [0, 2]


@pytest.mark.parametrize("module", [http_chunking, grpc_chunking, ws_chunking])
def test_every_transport_reads_a_chunking_spec_alike(module: object) -> None:
    """One reading of a spec for every transport (`ssemock.variants.chunking.resolve_among`):
    names split at the commas before them, "all" the transport's registry, None as recorded."""
    got = module.resolve("coalesced, random:7:32:8")  # type: ignore[attr-defined]
    assert [c.name for c in got] == ["coalesced", "random:7:32:8"]
    assert module.resolve(None) == [http_chunking.as_recorded]  # type: ignore[attr-defined]
    assert len(module.resolve("all")) == len(module.ALL)  # type: ignore[attr-defined]
