"""The cassette shape of a gRPC call: a round trip keeps every message both ways, the metadata
(``-bin`` values too), the trailers, the status and the wire chunks; a cassette with a call is
version 3; malformed input names the file, the interaction and the part at fault."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ssemock import Cassette, CassetteError
from ssemock.framing.grpc import frame_all
from ssemock.store.grpc import GrpcCall, GrpcMessage, GrpcStatus, GrpcWire, header_metadata, metadata_headers
from ssemock.store.model import Interaction, Request, Response


def _call() -> GrpcCall:
    received = [b"\n\x05hello", b"\xff\x00\x01"]
    return GrpcCall(
        "/chat.Chat/Talk",
        "stream_stream",
        [
            GrpcMessage("send", 0.0, b"\n\x02hi"),
            GrpcMessage("recv", 0.0124, received[0]),
            GrpcMessage("send", 0.02, b"\x80\x81"),
            GrpcMessage("recv", 0.03, received[1]),
        ],
        metadata_headers([("x-served-by", "b"), ("x-trace-bin", b"\x00\x01\x02")]),
        GrpcStatus("RESOURCE_EXHAUSTED", "slow down", 0.031),
        GrpcWire([4, len(frame_all(received))], [0.012, 0.03]),
    )


def _cassette() -> Cassette:
    return Cassette(
        [
            Interaction(
                Request(
                    "POST", "http://127.0.0.1:50051/chat.Chat/Talk", metadata_headers([("x-user", "u1")])
                ),
                Response(200, metadata_headers([("x-region-bin", b"\xfe")])),
                grpc=_call(),
            )
        ]
    )


def test_a_call_round_trips_one_message_a_line(tmp_path: Path) -> None:
    path = _cassette().save(tmp_path / "grpc.json")
    text = path.read_text()
    assert json.loads(text)["version"] == 3
    assert '        ["send",20.0,"base64","gIE="],\n' in text
    assert '["recv",12.4,"utf8","\\n\\u0005hello"]' in text
    loaded = Cassette.load(path).interactions[0]
    assert loaded.grpc == _call()
    assert header_metadata(loaded.response.headers) == (("x-region-bin", b"\xfe"),)
    assert header_metadata(loaded.grpc.trailers) == (("x-served-by", "b"), ("x-trace-bin", b"\x00\x01\x02"))
    assert [m.data for m in loaded.grpc.received()] == [b"\n\x05hello", b"\xff\x00\x01"]
    assert Cassette.loads(path.read_bytes()).dumps() == path.read_bytes()


def test_a_call_without_wire_chunks_or_status_time_round_trips() -> None:
    cassette = _cassette()
    call = cassette.interactions[0].grpc
    assert call is not None
    call.wire, call.status = GrpcWire(), GrpcStatus()
    doc = json.loads(cassette.dumps())
    assert "wire" not in doc["interactions"][0]["grpc"]
    assert Cassette.loads(cassette.dumps()).interactions[0].grpc == call


def _edited(edit: Any) -> bytes:
    doc = json.loads(_cassette().dumps())
    edit(doc["interactions"][0]["grpc"])
    return json.dumps(doc).encode()


@pytest.mark.parametrize(
    ("edit", "named"),
    [
        (lambda g: g.__setitem__("method", "chat.Chat/Talk"), "grpc.method must be a method path"),
        (lambda g: g.__setitem__("method", "/chat.Chat/Other"), "is not the request URL's path"),
        (lambda g: g.__setitem__("kind", "bidi"), "grpc.kind must be one of"),
        (lambda g: g.__setitem__("kind", "unary_stream"), "a unary_stream call has one request message"),
        (lambda g: g["messages"][1].__setitem__(0, "sideways"), "grpc.messages[1]: direction"),
        (lambda g: g["messages"][2].__setitem__(3, "not base64!"), "grpc.messages[2]: not valid base64"),
        (lambda g: g["messages"][2].__setitem__(2, "hex"), "grpc.messages[2]: the encoding must be"),
        (lambda g: g["messages"][3].__setitem__(1, 1.0), "grpc.messages[3]: time 1.0 ms goes back"),
        (lambda g: g["messages"].__setitem__(0, ["send", 0]), "grpc.messages[0] must be [direction"),
        (lambda g: g["status"].__setitem__("code", "NOPE"), "grpc.status.code must be a status code's name"),
        (lambda g: g["status"].__setitem__("code", 14), "grpc.status.code must be"),
        (lambda g: g["status"].__setitem__("details", 3), "grpc.status.details must be a string"),
        (
            lambda g: g["trailers"].__setitem__("x-trace-bin", "!!"),
            "grpc.trailers['x-trace-bin']: a -bin value",
        ),
        (lambda g: g["trailers"].__setitem__("x-a", "a\r\nb"), "grpc.trailers['x-a']: the value"),
        (lambda g: g["wire"]["chunks"][1].__setitem__(1, 99), "grpc.wire: the last end is 99"),
        (lambda g: g["wire"]["chunks"][1].__setitem__(1, 2), "grpc.wire.chunks[1]: ends must increase"),
        (lambda g: g.__setitem__("wire", []), "grpc.wire must be an object"),
    ],
)
def test_a_malformed_call_names_the_file_the_interaction_and_the_part(edit: Any, named: str) -> None:
    with pytest.raises(CassetteError) as caught:
        Cassette.loads(_edited(edit), path="c.json")
    assert caught.value.path == "c.json" and caught.value.interaction == 0
    assert named in caught.value.reason


def test_a_call_that_would_not_load_is_not_saved(tmp_path: Path) -> None:
    cassette = _cassette()
    call = cassette.interactions[0].grpc
    assert call is not None
    call.kind = "unary_unary"  # two messages each way
    with pytest.raises(CassetteError, match="interaction 0: refusing to save: grpc.messages: a unary_unary"):
        cassette.save(tmp_path / "c.json")
    assert not list(tmp_path.iterdir())


def test_an_interaction_is_not_both_a_websocket_session_and_a_grpc_call() -> None:
    doc = json.loads(_cassette().dumps())
    doc["interactions"][0]["websocket"] = {"messages": []}
    with pytest.raises(CassetteError, match="WebSocket session or a gRPC call, not both"):
        Cassette.loads(json.dumps(doc))


def test_an_older_reader_s_versions_still_load_and_an_unknown_one_is_named() -> None:
    doc = json.loads(_cassette().dumps())
    doc["version"] = 4
    with pytest.raises(CassetteError, match="unknown cassette version 4"):
        Cassette.loads(json.dumps(doc))


def test_metadata_headers_round_trip_bin_values_unpadded() -> None:
    pairs = [("X-Key-Bin", b"\x00"), ("x-plain", "v"), ("x-two-bin", b"ab")]
    headers = metadata_headers(pairs)
    assert headers == [("x-key-bin", "AA"), ("x-plain", "v"), ("x-two-bin", "YWI")]
    assert header_metadata(headers) == (("x-key-bin", b"\x00"), ("x-plain", "v"), ("x-two-bin", b"ab"))
    with pytest.raises(ValueError, match="metadata 'x-key-bin': a -bin value must be base64"):
        header_metadata([("x-key-bin", "!")])
