"""``ssemock show`` and ``ssemock validate`` on a WebSocket session (issue 34): the handshake and
the conversation (direction, time, kind, size, JSON ``type`` or Gemini's key); validate's checks;
the session's protocol and what it folds to (issue 44 item 1)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ssemock import Cassette, cassettes
from ssemock.accumulate import accumulate_session, detect_protocol
from ssemock.commands.cli import main
from ssemock.store.model import Interaction, Request, Response
from ssemock.store.websocket import Close, FrameNote, Message, WebSocket, Wire


def _save(path: Path, close: Close) -> Path:
    ws = WebSocket(
        [
            Message("recv", 0.0124, "text", '{"type":"session.created","event_id":"event_1"}'),
            Message("send", 0.02, "text", '{"type":"response.create"}'),
            Message("recv", 0.03, "binary", b'{"setupComplete":{}}'),
            Message("send", 0.04, "binary", b"\x00\xff\x01\x02"),
        ],
        [FrameNote("recv", 1, "ping", t=0.025, data=b"")],
        Wire(0, [50], [0.03]),
        close,
    )
    request = Request("GET", "wss://api.example/v1/realtime?model=gpt-realtime")
    return Cassette([Interaction(request, Response(101, [("upgrade", "websocket")]), ws)]).save(path)


def test_show_lists_the_handshake_and_the_conversation(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _save(tmp_path / "ws.json", Close(1000, "done", "client", True, 0.05))
    assert main(["show", str(path)]) == 0
    out = capsys.readouterr().out
    assert "#0  WebSocket wss://api.example/v1/realtime?model=gpt-realtime" in out
    assert "2 sent, 2 received, 1 control frames" in out
    assert "12.4 ms <- text" in out and "session.created" in out
    assert "<- binary      20 B  setupComplete" in out
    assert "closed 1000 'done' by the client, clean" in out
    assert main(["show", "--json", str(path)]) == 0
    shown = json.loads(capsys.readouterr().out)["shown"][0]
    assert [m["what"] for m in shown["messages"]] == [
        "session.created",
        "response.create",
        "setupComplete",
        "",
    ]


def test_validate_passes_a_session_and_names_a_bad_close_code(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = _save(tmp_path / "ws.json", Close())
    assert main(["validate", str(good)]) == 0
    data = json.loads(good.read_text())
    data["interactions"][0]["websocket"]["close"] = {
        "code": 1015,  # TLS failure: reported, never sent
        "reason": "",
        "by": "server",
        "clean": False,
    }
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    assert main(["validate", str(bad)]) != 0
    assert "websocket.close.code 1015" in capsys.readouterr().out


@pytest.mark.parametrize("name", [n for n in cassettes.names() if n.startswith("realtime/")])
def test_show_and_validate_name_each_websocket_protocol_and_what_it_folds_to(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every shipped WebSocket session (one per WebSocket protocol at least): ``show`` names its
    protocol and its responses' text, ``validate -v`` the protocol (issue 44 item 1)."""
    path = str(cassettes.path(name))
    (x,) = cassettes.load(name).interactions
    assert x.websocket is not None
    protocol = detect_protocol([m.json() for m in x.websocket.received()], url=x.request.url)
    *_, last = accumulate_session([m.payload for m in x.websocket.received()], protocol)
    assert main(["show", path]) == 0
    out = capsys.readouterr().out
    assert f"    protocol {protocol}: " in out and f"text {last.text!r}" in out
    assert main(["show", "--json", path]) == 0
    shown = json.loads(capsys.readouterr().out)["shown"][0]
    assert shown["protocol"] == protocol and shown["responses"][-1]["complete"] is True
    assert main(["validate", "-v", path]) == 0
    assert f"protocol {protocol}" in capsys.readouterr().out


def test_a_session_its_protocol_cannot_fold_is_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ws = WebSocket(
        [Message("recv", 0.01, "text", '{"type":"session.output_audio.delta","delta":"not base64!"}')],
        close=Close(),
    )
    request = Request("GET", "wss://api.openai.com/v1/live/sessions")
    path = Cassette([Interaction(request, Response(101), ws)]).save(tmp_path / "live.json")
    assert main(["validate", str(path)]) == 0  # a warning, not a problem
    out = capsys.readouterr().out
    assert "the reference accumulator (openai.live) fails: openai.live: event 0:" in out
    assert "session.output_audio.delta's delta is not base64" in out
    assert main(["show", str(path)]) == 0
    assert "protocol openai.live; the reference accumulator fails" in capsys.readouterr().out
