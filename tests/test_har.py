"""``ssemock import-har`` / ``export-har``: HAR 1.2 as DevTools, Playwright and mitmproxy write it
(``_webSocketMessages`` included) in and out, each direction saying what the other cannot hold."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

import ssemock
from ssemock.commands.cli import main
from ssemock.commands.har import export_har, import_har
from ssemock.store.websocket import Close, Message, WebSocket

STREAM = 'data: {"choices": [{"delta": {"content": "世界"}}]}\n\ndata: [DONE]\n\n'


def chrome_har() -> dict[str, Any]:
    """Two entries as Chrome's DevTools writes them: an SSE POST and a WebSocket session."""
    return {
        "log": {
            "version": "1.2",
            "creator": {"name": "WebInspector", "version": "537.36"},
            "entries": [
                {
                    "startedDateTime": "2026-11-27T10:00:00.000Z",
                    "time": 812.5,
                    "request": {
                        "method": "POST",
                        "url": "https://api.example.com/v1/chat/completions",
                        "httpVersion": "h2",
                        "headers": [
                            {"name": ":authority", "value": "api.example.com"},
                            {"name": "Authorization", "value": "Bearer sk-test-not-a-real-key-0000000000"},
                            {"name": "content-type", "value": "application/json"},
                        ],
                        "postData": {"mimeType": "application/json", "text": '{"stream": true}'},
                    },
                    "response": {
                        "status": 200,
                        "headers": [
                            {"name": "content-type", "value": "text/event-stream"},
                            {"name": "content-encoding", "value": "br"},
                        ],
                        "content": {"size": 60, "mimeType": "text/event-stream", "text": STREAM},
                    },
                    "timings": {"send": 1, "wait": 300, "receive": 511.5},
                },
                {
                    "startedDateTime": "2026-11-27T10:00:01.000Z",
                    "time": 0,
                    "_resourceType": "websocket",
                    "request": {"method": "GET", "url": "wss://api.example.com/v1/realtime", "headers": []},
                    "response": {
                        "status": 101,
                        "headers": [],
                        "content": {"size": 0, "mimeType": "x-unknown"},
                    },
                    "_webSocketMessages": [
                        {"type": "send", "time": 1795773601.25, "opcode": 1, "data": '{"type": "hello"}'},
                        {"type": "receive", "time": 1795773601.5, "opcode": 1, "data": '{"type": "hi"}'},
                        {
                            "type": "receive",
                            "time": 1795773601.75,
                            "opcode": 2,
                            "data": base64.b64encode(b"\x00\xff").decode(),
                        },
                    ],
                },
            ],
        }
    }


def test_a_devtools_har_imports_with_what_it_cannot_hold_said(tmp_path: Path) -> None:
    path = tmp_path / "session.har"
    path.write_text(json.dumps(chrome_har()))
    cassette, notes = import_har(path)
    http, ws = cassette.interactions
    assert http.response.body == STREAM.encode() and http.response.chunks == [STREAM.encode()]
    assert http.response.times == [0.8125]  # one chunk, at the entry's end
    assert http.response.header("content-encoding") is None  # HAR bodies are decoded
    assert (
        dict(http.request.headers)["authorization"] != "Bearer sk-test-not-a-real-key-0000000000"
    )  # redacted
    assert not any(k.startswith(":") for k, _ in http.request.headers)
    assert ws.websocket is not None and ws.response.status == 101
    assert [(m.direction, m.t, m.type, m.data) for m in ws.websocket.messages] == [
        ("send", 0.25, "text", '{"type": "hello"}'),
        ("recv", 0.5, "text", '{"type": "hi"}'),
        ("recv", 0.75, "binary", b"\x00\xff"),
    ]
    assert ws.websocket.close.code == 1006
    assert "no chunk boundaries" in notes[0] and "no close frame" in notes[1]


def test_export_then_import_keeps_chunks_and_messages_and_says_what_other_tools_lose(tmp_path: Path) -> None:
    cassette = ssemock.Cassette()
    cassette.add(
        "POST",
        "https://api.example.com/v1/chat/completions",
        [b"data: a\n\n", b"data: \xe4\xb8", b"\x96\n\n"],
        times=[0.1, 0.2, 0.35],
        request_json={"stream": True},
    )
    cassette.add("GET", "https://api.example.com/raw", [b"\x00\x01\xfe"])
    cassette.interactions.append(
        ssemock.Interaction(
            ssemock.Request("GET", "wss://api.example.com/v1/realtime", [], None),
            ssemock.Response(101, [], b""),
            WebSocket(
                messages=[Message("send", 0.1, "text", "ping?"), Message("recv", 0.2, "binary", b"\x01")],
                close=Close(1000, "bye", "server", True, 0.3),
            ),
        )
    )
    har, notes = export_har(cassette)
    entries = har["log"]["entries"]
    assert har["log"]["version"] == "1.2" and len(entries) == 3
    assert entries[0]["response"]["content"]["text"] == "data: a\n\ndata: 世\n\n"
    assert entries[1]["response"]["content"]["encoding"] == "base64"
    assert [m["opcode"] for m in entries[2]["_webSocketMessages"]] == [1, 2]
    assert (
        "_ssemockChunks" in notes[0]
        and "no close code" in notes[1]
        and "1 close frame(s) dropped" in notes[1]
    )
    path = tmp_path / "out.har"
    path.write_text(json.dumps(har))
    back, back_notes = import_har(path)
    first = back.interactions[0].response
    assert first.chunks == cassette.interactions[0].response.chunks and first.times == [0.1, 0.2, 0.35]
    assert back.interactions[1].response.body == b"\x00\x01\xfe"
    ws = back.interactions[2].websocket
    assert ws is not None and [(m.direction, m.t, m.data) for m in ws.messages] == [
        ("send", 0.1, "ping?"),
        ("recv", 0.2, b"\x01"),
    ]
    assert len(back_notes) == 1 and "WebSocket" in back_notes[0]  # the chunks came back


def test_the_commands_write_files_and_name_what_is_wrong(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    har = tmp_path / "in.har"
    har.write_text(json.dumps(chrome_har()))
    out = tmp_path / "c.json"
    assert main(["import-har", str(har), "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "2 interaction(s) written" in printed and "HAR cannot hold" in printed
    assert len(ssemock.Cassette.load(out).interactions) == 2
    assert main(["export-har", str(out), "-o", str(tmp_path / "again.har")]) == 0
    assert json.loads((tmp_path / "again.har").read_text())["log"]["entries"][1]["_webSocketMessages"]
    broken = chrome_har()
    del broken["log"]["entries"][1]["response"]
    har.write_text(json.dumps(broken))
    assert main(["import-har", str(har), "-o", str(tmp_path / "x.json")]) == 1
    err = capsys.readouterr().err
    assert f"{har}: log.entries[1]: response is missing" in err
    leaky = chrome_har()
    leaky["log"]["entries"][0]["response"]["content"]["text"] = (
        'data: {"key": "sk-proj-' + "A1b2C3d4E5f6G7h8I9j0" * 3 + '"}\n\n'
    )
    har.write_text(json.dumps(leaky))
    assert main(["import-har", str(har), "-o", str(tmp_path / "y.json")]) == 1
    assert "secret" in capsys.readouterr().err and not (tmp_path / "y.json").exists()


def test_a_refused_har_lists_every_finding_and_json_lists_them_all(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each secret left on its line (a screenful at most), then what to do; ``--json`` has every
    one (issue 42 item 3)."""
    from ssemock.commands.cli.output import SCREENFUL

    leaky = chrome_har()
    entry = leaky["log"]["entries"][0]
    entry["request"]["postData"]["text"] = json.dumps({"payload": json.dumps({"password": "hunter2"})})
    leaky["log"]["entries"] = [entry] * (SCREENFUL + 2)
    har, out = tmp_path / "leaky.har", tmp_path / "c.json"
    har.write_text(json.dumps(leaky))
    assert main(["import-har", str(har), "-o", str(out)]) == 1
    lines = capsys.readouterr().err.splitlines()
    assert (
        lines[0]
        == f"ssemock: error: {har}: not written to {out}: a secret is left ({SCREENFUL + 2} findings):"
    )
    assert lines[1] == (
        "  interaction 0 request.body: a credential-named field 'password' at $.payload $.password "
        "('***', 7 chars: digits a-z)"
    )
    assert len(lines) == SCREENFUL + 2 and lines[SCREENFUL] == "  and 3 more (--json lists them all)"
    assert lines[-1].startswith("  what to do: remove the secrets from the HAR file")
    assert main(["import-har", str(har), "-o", str(out), "--json"]) == 1
    findings = json.loads(capsys.readouterr().out)["refused"]["findings"]
    assert [f.split(" ", 2)[1] for f in findings] == [str(k) for k in range(SCREENFUL + 2)]
    assert not out.exists()
