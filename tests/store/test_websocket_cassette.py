"""The cassette shape of a WebSocket session: a round trip keeps every message, frame note, wire
chunk and the close; HTTP-only cassettes stay version 1; malformed input names the file, the
interaction and the message or frame."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ssemock import Cassette, CassetteError
from ssemock.store.model import Interaction, Request, Response
from ssemock.store.websocket import Close, FrameNote, Message, WebSocket, Wire


def _session() -> WebSocket:
    return WebSocket(
        [
            Message("recv", 0.0124, "text", '{"type":"session.created","event_id":"event_1"}'),
            Message("send", 0.02, "text", '{"type":"response.create"}'),
            Message("recv", 0.03, "binary", b'{"setupComplete":{}}'),
            Message("send", 0.04, "binary", b"\x00\xff\x01\x02"),
            Message("recv", 0.05, "text", "caf\u00e9 au lait"),
        ],
        [FrameNote("recv", 2, "ping", t=0.025, data=b"hi"), FrameNote("recv", 2, "fragments", [3, 9])],
        Wire(0, [40, 72, 90], [0.0124, 0.03, 0.05]),
        Close(1000, "bye", "client", True, 0.06),
        ["realtime"],
        "realtime",
        None,
    )


def _cassette() -> Cassette:
    return Cassette(
        [
            Interaction(
                Request("GET", "wss://api.example/v1/realtime"),
                Response(101, [("upgrade", "websocket")]),
                _session(),
            )
        ]
    )


def test_a_session_round_trips_one_message_a_line(tmp_path: Path) -> None:
    path = _cassette().save(tmp_path / "ws.json")
    text = path.read_text()
    assert json.loads(text)["version"] == 2
    assert '          ["send",40.0,"binary","AP8BAg=="],\n' in text
    assert '["recv",30.0,"binary-text","{\\"setupComplete\\":{}}"]' in text
    loaded = Cassette.load(path).interactions[0].websocket
    assert loaded == _session()
    assert [(f.type, f.fin, f.data) for f in loaded.frames if f.direction == "recv"][2:5] == [
        ("ping", True, b"hi"),
        ("text", False, b"caf"),
        ("continuation", False, "\u00e9 au ".encode()),  # a fragment may end inside a character
    ]
    assert Cassette.loads(path.read_bytes()).dumps() == path.read_bytes()


def test_http_only_cassettes_stay_version_1() -> None:
    c = Cassette()
    c.add("POST", "https://api.example/v1/x", [b"data: 1\n\n"])
    assert json.loads(c.dumps())["version"] == 1


@pytest.mark.parametrize(
    ("edit", "named"),
    [
        (lambda w: w["messages"][1].__setitem__(0, "sideways"), "websocket.messages[1]: direction"),
        (lambda w: w["messages"][3].__setitem__(3, "not base64!"), "websocket.messages[3]: not valid base64"),
        (lambda w: w["messages"][2].__setitem__(1, 1.0), "websocket.messages[2]: time 1.0 ms goes back"),
        (lambda w: w["frames"][1].__setitem__(3, [9, 3]), "websocket.frames[1]: fragment offsets"),
        (lambda w: w["frames"][0].__setitem__(1, 99), "websocket.frames[0]: message index 99"),
        (lambda w: w["close"].__setitem__("code", 1006), "websocket.close.code 1006"),
        (lambda w: w["wire"]["chunks"][1].__setitem__(1, 10), "websocket.wire.chunks[1]"),
    ],
)
def test_malformed_sessions_name_the_file_interaction_and_frame(tmp_path: Path, edit, named: str) -> None:  # type: ignore[no-untyped-def]
    data = json.loads(_cassette().dumps())
    edit(data["interactions"][0]["websocket"])
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(CassetteError) as failed:
        Cassette.load(path)
    assert str(path) in str(failed.value) and "interaction 0" in str(failed.value)
    assert named in str(failed.value)
