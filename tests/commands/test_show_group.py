"""``ssemock show`` and the timeline page on a session that spans connections (issue 44 item 2):
the group's connections and its one timeline, each part in the order it happened across them,
in the text, the JSON and the page's DOM."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest

from ssemock import Cassette
from ssemock.commands.cli import main
from ssemock.commands.serve.page import render
from ssemock.store.group import Group
from ssemock.store.model import Interaction, Request, Response
from ssemock.store.websocket import Message, WebSocket


def _save(path: Path) -> Path:
    body = b'{"session":{"id":"sess_1"},"transport":{"type":"webrtc","sdp":"v=0"}}'
    create = Interaction(
        Request("POST", "https://api.openai.com/v1/live/sessions"),
        Response(200, [("content-type", "application/json")], body, [len(body)], [0.1]),
        group=Group("sess_1", [0]),
    )
    primary = Interaction(
        Request("GET", "wss://api.openai.com/v1/live/sessions"),
        Response(101),
        WebSocket([Message("send", 0.01, "text", '{"type":"session.start"}'),
                   Message("recv", 0.2, "text", '{"type":"session.started","session":{"id":"sess_1"}}'),
                   Message("send", 0.5, "text", '{"type":"session.close"}')]),
        Group("sess_1", [1, 2, 4, 6]),
    )  # fmt: skip
    attach = Interaction(
        Request("GET", "wss://api.openai.com/v1/live/sessions/sess_1/attach"),
        Response(101),
        WebSocket([Message("recv", 0.3, "text", '{"type":"session.updated"}')]),
        Group("sess_1", [3, 5]),
    )
    return Cassette([create, primary, attach]).save(path)


TIMELINE = [
    (0, 0, None, "exchange POST /v1/live/sessions -> 200"),
    (1, 1, None, "handshake GET /v1/live/sessions -> 101"),
    (2, 1, "send", "session.start"),
    (3, 2, None, "handshake GET /v1/live/sessions/sess_1/attach -> 101"),
    (4, 1, "recv", "session.started"),
    (5, 2, "recv", "session.updated"),
    (6, 1, "send", "session.close"),
]


def test_show_tells_the_group_as_one_timeline(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _save(tmp_path / "g.json")
    assert main(["show", str(path)]) == 0
    out = capsys.readouterr().out
    assert out.count("part of session sess_1 (its timeline below)") == 3
    told = out[out.index("session sess_1 across 3 connections (#0, #1, #2), as it happened:") :]
    lines = told.splitlines()[1:]
    assert [re.sub(r"\s+", " ", line).strip() for line in lines] == [
        f"{seq} #{i}{' -> ' if d == 'send' else ' <- ' if d == 'recv' else ' '}{what}"
        for seq, i, d, what in TIMELINE
    ]
    assert main(["show", "--json", str(path)]) == 0
    (group,) = json.loads(capsys.readouterr().out)["groups"]
    assert group["id"] == "sess_1" and group["interactions"] == [0, 1, 2]
    assert [(p["seq"], p["interaction"], p["direction"], p["what"]) for p in group["timeline"]] == TIMELINE


def test_show_of_one_interaction_tells_its_group_only_and_none_without_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _save(tmp_path / "g.json")
    assert main(["show", "--json", "-i", "2", str(path)]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["shown"][0]["group"] == {"id": "sess_1", "order": [3, 5]}
    assert [g["id"] for g in shown["groups"]] == ["sess_1"]
    doc = json.loads(path.read_text())
    for item in doc["interactions"]:
        del item["group"]
    path.write_text(json.dumps(doc))
    assert main(["show", str(path)]) == 0
    assert "across" not in capsys.readouterr().out


def test_the_timeline_page_shows_the_group_as_one_timeline(tmp_path: Path) -> None:
    page = render([Cassette.load(_save(tmp_path / "g.json"))])
    (section,) = re.findall(r'<section class="interaction group"[^>]*>.*?</section>', page, re.S)
    assert 'data-group="sess_1" data-connections="3"' in section
    marks = re.findall(
        r'<rect class="part (\w+)" data-seq="(\d+)" data-interaction="(\d+)" data-what="([^"]*)"', section
    )
    kind = {None: "exchange", "send": "sent", "recv": "recv"}
    assert marks == [(kind[d], str(seq), str(i), html.escape(what)) for seq, i, d, what in TIMELINE]
    assert section.count('class="lane-name"') == 3


def test_validate_names_two_parts_of_a_group_with_one_number(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _save(tmp_path / "g.json")
    assert main(["validate", str(path)]) == 0
    doc = json.loads(path.read_text())
    doc["interactions"][2]["group"]["order"] = [3, 4]  # 4 is the primary's session.started too
    path.write_text(json.dumps(doc))
    assert main(["validate", str(path)]) == 1
    out = capsys.readouterr().out
    assert "interactions #1 and #2 of the group 'sess_1' both hold part 4 of its order" in out
