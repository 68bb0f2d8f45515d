"""The secret scan reads every WebSocket message and the handshake in every form (issue 34): an
ephemeral ``ek_`` key in a ``session.created``, Gemini's ``x-goog-api-key`` header and ``?key=``
URL, ``Authorization``, the browser's ``openai-insecure-api-key.*`` subprotocol; a refused
recording is kept with each of them masked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ssemock import Cassette, SecretError
from ssemock.redaction.keep import keep_masked
from ssemock.scan.walk import scan_cassette
from ssemock.store.model import Interaction, Request, Response
from ssemock.store.websocket import Close, Message, WebSocket, Wire

# fake keys, put together here so that no key-shaped literal sits in the file
EK = "ek_" + "test" + "68af2c1e9f3b4a7d8e6c5b4a3f2e"
SK = "sk-" + "test-" + "abcdefghijklmnop1234567890abcd"
GOOGLE = "AIza" + "SyTest1234567890abcdefghijklmnopqrs"


def _cassette() -> Cassette:
    created = {"type": "session.created", "session": {"client_secret": {"value": EK, "expires_at": 1}}}
    ws = WebSocket(
        [
            Message("recv", 0.01, "text", json.dumps(created)),
            Message("send", 0.02, "binary", json.dumps({"setup": {"model": "m", "key": EK}}).encode()),
        ],
        [],
        Wire(),
        Close(),
    )
    request = Request(
        "GET",
        f"wss://generativelanguage.example/ws/x?key={GOOGLE}",
        [
            ("authorization", f"Bearer {SK}"),
            ("x-goog-api-key", GOOGLE),
            ("sec-websocket-protocol", f"realtime, openai-insecure-api-key.{SK}"),
        ],
    )
    return Cassette([Interaction(request, Response(101, [("upgrade", "websocket")]), ws)])


def test_every_form_is_found_and_the_save_refused(tmp_path: Path) -> None:
    places = {f.field for f in scan_cassette(_cassette())}
    assert {
        "websocket.messages[0]",
        "websocket.messages[1]",
        "request.url",
        "request.headers['authorization']",
        "request.headers['x-goog-api-key']",
        "request.headers['sec-websocket-protocol']",
    } <= places
    with pytest.raises(SecretError):
        _cassette().save(tmp_path / "ws.json")
    assert not (tmp_path / "ws.json").exists()


def test_a_refused_recording_is_kept_masked(tmp_path: Path) -> None:
    kept = keep_masked(_cassette().interactions, tmp_path / "ws.refused.json")
    assert kept.path is not None and kept.left == []
    text = kept.path.read_text()
    assert EK not in text and SK not in text and GOOGLE not in text
    ws = Cassette.load(kept.path).interactions[0].websocket
    assert ws is not None and ws.messages[0].json()["type"] == "session.created"
