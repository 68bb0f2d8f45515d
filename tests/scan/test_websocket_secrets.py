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
from ssemock.redaction.rules import redact_request, redact_subprotocol
from ssemock.redaction.scrub import redact
from ssemock.scan.shapes import mask_text
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


#: a value no shape gives away: only the subprotocol's name says it is a credential
PLAIN = "Zq7xWv9Lp2Rt8" + "YmK4"


@pytest.mark.parametrize(
    ("offered", "stored"),
    [
        (f"realtime, openai-insecure-api-key.{PLAIN}", "realtime, openai-insecure-api-key.REDACTED"),
        (
            f"base64url.bearer.authorization.k8s.io.{PLAIN}, base64.binary.k8s.io",
            "base64url.bearer.authorization.k8s.io.REDACTED, base64.binary.k8s.io",
        ),
        (f"x-api-key.{PLAIN}.more,graphql-ws", "x-api-key.REDACTED,graphql-ws"),
        (f"realtime, {SK}", "realtime, REDACTED"),
        ("openai-beta.realtime-v1, mqtt, v12.stomp", "openai-beta.realtime-v1, mqtt, v12.stomp"),
    ],
)
def test_a_credential_subprotocol_is_masked_by_default_and_found_in_the_session(
    offered: str, stored: str
) -> None:
    """As ``authorization`` is: the header redacted, and a session keeping the subprotocols
    unredacted (a hand-edited file) is found at each place and masked there."""
    request = Request("GET", "wss://api.example/v1/realtime", [("sec-websocket-protocol", offered)])
    assert redact_request(request).headers == [("sec-websocket-protocol", stored)]
    subprotocols = [p.strip() for p in offered.split(",")]
    agreed = next((p for p in subprotocols if redact_subprotocol(p) != p), subprotocols[0])
    ws = WebSocket([], [], Wire(), Close(), subprotocols, agreed)
    cassette = Cassette([Interaction(request, Response(101, []), ws)])
    found = {f.field for f in scan_cassette(cassette)}
    secret = offered != stored
    assert bool(found) == secret
    if secret:
        assert {"request.headers['sec-websocket-protocol']", "websocket.subprotocols.agreed"} <= found
        shown = mask_text(f"the client offered {subprotocols}")  # a message about the handshake
        assert PLAIN not in shown and SK not in shown
        redact(cassette)
        assert scan_cassette(cassette) == [] and ws.subprotocols == [p.strip() for p in stored.split(",")]


SPOKEN = ("sk-" + "proj-", "Flux44Spoken9" + "Key0123456789abcd")  # a key heard as two words


def _flux(*heard: tuple[str, ...]) -> Cassette:
    """A Deepgram Flux session whose turn's transcript and word list grow by what is ``heard``."""
    messages = [Message("recv", 0.0, "text", json.dumps({"type": "Connected", "request_id": "r"}))]
    for n, words in enumerate(heard):
        info = {"type": "TurnInfo", "event": "Update", "turn_index": 0, "transcript": " ".join(words),
                "words": [{"word": w, "confidence": 0.9} for w in words]}  # fmt: skip
        messages += [
            Message("send", n + 0.1, "binary", bytes(64)),
            Message("recv", n + 0.2, "text", json.dumps(info)),
        ]
    request = Request("GET", "wss://api.deepgram.example/v2/listen?model=flux-general-en", [])
    return Cassette(
        [
            Interaction(
                request, Response(101, [("upgrade", "websocket")]), WebSocket(messages, [], Wire(), Close())
            )
        ]
    )


@pytest.mark.parametrize(
    "heard",
    [
        [("my", "key"), ("my", "key", SPOKEN[0]), ("my", "key", *SPOKEN), ("my", "key", *SPOKEN, "thanks")],
        [("key", SPOKEN[0] + SPOKEN[1][:8]), ("key", SPOKEN[0] + SPOKEN[1][:16]), ("key", "".join(SPOKEN))],
        [("key", SPOKEN[0], SPOKEN[1][:9]), ("key", *SPOKEN)],
    ],
    ids=["words", "partial-word", "partial-words"],
)
def test_a_key_spoken_into_cumulative_transcripts_is_masked_in_every_message(
    heard: list[tuple[str, ...]], tmp_path: Path
) -> None:
    """Each message's transcript and word list hold the turn so far: the earlier ones a prefix
    of the key (a word still being heard); the kept recording holds no 6 characters of it."""
    cassette = _flux(*heard)
    assert scan_cassette(cassette)
    kept = keep_masked(cassette.interactions, tmp_path / "flux.refused.json")
    assert kept.path is not None and kept.left == []
    text = kept.path.read_text()
    secret = SPOKEN[1]
    assert not [secret[a : a + 6] for a in range(len(secret) - 5) if secret[a : a + 6] in text]
    masked = Cassette.load(kept.path)
    assert scan_cassette(masked) == []
    ws = masked.interactions[0].websocket
    assert ws is not None and [m.json()["type"] for m in ws.received()] == ["Connected"] + ["TurnInfo"] * len(
        heard
    )  # type: ignore[index]
