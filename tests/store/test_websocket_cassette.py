"""The cassette shape of a WebSocket session: a round trip keeps every message, frame note, wire
chunk and the close; HTTP-only cassettes stay version 1; malformed input names the file, the
interaction and the message or frame."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from ssemock import Cassette, CassetteError
from ssemock.commands.cli import main
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
        (lambda w: w.__setitem__("subprotocols", ["realtime"]), "websocket.subprotocols must be an object"),
        (lambda w: w["subprotocols"].__setitem__("offered", "realtime"), "websocket.subprotocols.offered"),
        (lambda w: w["subprotocols"].__setitem__("agreed", 7), "websocket.subprotocols.agreed must be"),
        (lambda w: w["subprotocols"].__setitem__("agreed", "a\r\nx: y"), "subprotocols.agreed holds a CR"),
        (
            lambda w: w.__setitem__("extensions", "permessage-deflate"),
            "websocket.extensions must be an object",
        ),
        (lambda w: w["extensions"].__setitem__("agreed", ["x"]), "websocket.extensions.agreed must be"),
        (lambda w: w["wire"].__setitem__("chunks", 5), "websocket.wire.chunks must be a list"),
        (lambda w: w["close"].__setitem__("reason", "\u00e9" * 62), "websocket.close.reason is 124 bytes"),
        (lambda w: w["close"].update(by=None, code=99999), "websocket.close.code 99999 is out of range"),
        (lambda w: w["close"].update(code="1000"), "websocket.close.code must be an integer"),
        (lambda w: w["close"].update(code=1005, reason="bye"), "websocket.close.code 1005"),
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


def test_a_close_frame_without_a_code_loads_and_replays_as_one(tmp_path: Path) -> None:
    """A server's empty close frame, recorded as code 1005 (what the receiver reports), loads and
    is served again as an empty close frame."""
    cassette = _cassette()
    session = cassette.interactions[0].websocket
    assert session is not None
    session.close = Close(1005, "", "server", True, 0.06)
    loaded = Cassette.load(cassette.save(tmp_path / "ws.json")).interactions[0]
    assert loaded.websocket is not None and loaded.websocket.close == session.close
    closes = [f for f in loaded.websocket.frames if f.type == "close"]
    assert [(f.direction, f.data) for f in closes] == [("recv", b""), ("send", b"")]


@pytest.mark.parametrize("command", ["validate", "show", "export-har"])
@pytest.mark.parametrize(
    ("edit", "named"),
    [
        (lambda w: w.__setitem__("subprotocols", ["realtime"]), "websocket.subprotocols"),
        (lambda w: w["wire"].__setitem__("chunks", 5), "websocket.wire.chunks"),
        (lambda w: w["close"].__setitem__("reason", "x" * 124), "websocket.close.reason"),
    ],
)
def test_the_commands_give_the_one_error_for_a_malformed_session(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    command: str,
    edit,
    named: str,  # type: ignore[no-untyped-def]
) -> None:
    data = json.loads(_cassette().dumps())
    edit(data["interactions"][0]["websocket"])
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    args = [command, str(path), *(["-o", str(tmp_path / "out.har")] if command == "export-har" else [])]
    assert main(args) == 1
    out, err = capsys.readouterr()
    shown = out + err
    assert re.search(rf"{re.escape(str(path))}: interaction 0: (problem: )?{re.escape(named)}", shown)
    assert "Traceback" not in shown
    assert not (tmp_path / "out.har").exists()
