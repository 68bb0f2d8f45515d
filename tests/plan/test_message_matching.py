"""Matching a replayed client's WebSocket messages (issue 43 item 4): the JSON paths
``ignore_message_paths`` takes, the protocol's defaults (Gemini Live's base64 audio compared by
length), strict matching of binary audio, and the first differing offset with the context on
both sides; sessions built in code, replayed offline through the ``websockets`` sync client."""

from __future__ import annotations

import base64
import json

import pytest
from websockets.sync.client import connect

import ssemock
from ssemock import Interaction, Request, Response
from ssemock.plan.conversation import UnmatchedMessageError
from ssemock.plan.message_matching import parse_path, resolve
from ssemock.websocket import Close, Message, WebSocket

LIVE = "wss://generativelanguage.googleapis.com/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent"
STT = "wss://streaming.assemblyai.com/v3/ws?sample_rate=16000"


def _cassette(url: str, messages: list[Message]) -> ssemock.Cassette:
    session = WebSocket(messages=messages, close=Close(1000, "", by="client", clean=True))
    return ssemock.Cassette([Interaction(Request("GET", url), Response(101), session)])


def _audio(changed: int | None = None) -> bytes:
    pcm = bytearray(bytes(range(256)) * 12)
    if changed is not None:
        pcm[changed] ^= 1
    return bytes(pcm)


def _live_turn(pcm: bytes) -> str:
    """A Gemini Live client as google-genai writes it: setup, then audio as realtime_input."""
    with connect(LIVE) as ws:
        ws.send(json.dumps({"setup": {"model": "models/gemini-live-2.5-flash"}}))
        ws.recv()
        chunk = {"data": base64.b64encode(pcm).decode(), "mimeType": "audio/pcm;rate=16000"}
        ws.send(json.dumps({"realtime_input": {"audio": chunk}}))
        return json.loads(ws.recv())["serverContent"]["modelTurn"]["parts"][0]["text"]


LIVE_SESSION = [
    Message("send", 0.01, "text", json.dumps({"setup": {"model": "models/gemini-live-2.5-flash"}})),
    Message("recv", 0.05, "binary-text", json.dumps({"setupComplete": {}})),
    Message(
        "send",
        0.06,
        "text",
        json.dumps(
            {
                "realtime_input": {
                    "audio": {"data": base64.b64encode(_audio()).decode(), "mimeType": "audio/pcm;rate=16000"}
                }
            }
        ),
    ),
    Message(
        "recv",
        0.30,
        "binary-text",
        json.dumps({"serverContent": {"modelTurn": {"parts": [{"text": "Hi."}]}}}),
    ),
]


def test_gemini_live_audio_matches_by_its_length_unless_strict() -> None:
    cassette = _cassette(LIVE, LIVE_SESSION)
    with ssemock.replay(cassette):
        assert _live_turn(_audio(changed=1000)) == "Hi."
    with (
        pytest.raises(UnmatchedMessageError) as failed,
        ssemock.replay(cassette, ignore_message_paths="strict"),
    ):
        _live_turn(_audio(changed=1000))
    sent, recorded = (base64.b64encode(p).decode() for p in (_audio(changed=1000), _audio()))
    at = next(i for i, (x, y) in enumerate(zip(recorded, sent)) if x != y)
    assert f"differs at $.realtime_input.audio.data, character {at} (" in str(failed.value)
    assert f"byte {at * 3 // 4} of the base64-decoded data" in str(failed.value)


def test_audio_of_another_length_is_another_message() -> None:
    with pytest.raises(UnmatchedMessageError, match=r"\$\.realtime_input\.audio\.data: <4096 characters"):
        with ssemock.replay(_cassette(LIVE, LIVE_SESSION)):
            _live_turn(_audio()[:-3] + b"\x00\x01\x02\x03\x04\x05")


def _stt(pcm: bytes) -> str:
    """A speech-to-text client streaming binary PCM, then asking for the transcript."""
    with connect(STT) as ws:
        for at in range(0, len(pcm), 1024):
            ws.send(pcm[at : at + 1024])
        ws.send(json.dumps({"type": "Terminate"}))
        return json.loads(ws.recv())["transcript"]


STT_SESSION = [
    *(
        Message("send", 0.01 * i, "binary", _audio()[at : at + 1024])
        for i, at in enumerate(range(0, 3072, 1024))
    ),
    Message("send", 0.05, "text", json.dumps({"type": "Terminate"})),
    Message("recv", 0.20, "text", json.dumps({"type": "Turn", "transcript": "Hello."})),
]


def test_binary_audio_is_counted_by_default_and_compared_when_strict() -> None:
    cassette = _cassette(STT, STT_SESSION)
    with ssemock.replay(cassette):
        assert _stt(_audio(changed=1500)) == "Hello."
    with (
        pytest.raises(UnmatchedMessageError) as failed,
        ssemock.replay(cassette, ignore_message_paths=["strict"]),
    ):
        _stt(_audio(changed=1500))
    message = str(failed.value)
    # the second 1024-byte message differs at its byte 476: hex, the byte bracketed, 8 on each side
    assert "differs at byte 476 (1024 bytes recorded, 1024 sent)" in message
    assert "recorded: ...d4 d5 d6 d7 d8 d9 da db [dc] dd de df e0 e1 e2 e3..." in message
    assert "sent:     ...d4 d5 d6 d7 d8 d9 da db [dd] dd de df e0 e1 e2 e3..." in message


@pytest.mark.parametrize(
    "path, parts",
    [
        ("$.audio", ("audio",)),
        ("$.item.content[*].audio", ("item", "content", None, "audio")),
        ("$.items[2].data", ("items", 2, "data")),
        ("$.*.data", (None, "data")),
    ],
)
def test_paths_read_as_keys_indexes_and_wildcards(path: str, parts: tuple[object, ...]) -> None:
    assert tuple(None if not isinstance(p, (str, int)) else p for p in parse_path(path)) == parts


@pytest.mark.parametrize(
    "value, words",
    [
        (["audio"], "did you mean '$.audio'?"),
        (["strikt"], "unknown entry 'strikt': did you mean 'strict'?"),
        (["$.a[x]"], "is not a JSON path (at character 3)"),
        (["$"], "the whole message"),
        (["$.a", "strict"], "'strict' must come first"),
        ([3], "a JSON path is a string"),
        ([["$.audio"]], "a JSON path is a string"),
    ],
)
def test_a_bad_entry_says_what_a_path_looks_like(value: list[object], words: str) -> None:
    with pytest.raises(ValueError, match="ignore_message_paths: ") as failed:
        ssemock.replay(ssemock.Cassette(), ignore_message_paths=value)  # type: ignore[arg-type]
    assert words in str(failed.value)


def test_strict_first_drops_the_defaults_and_keeps_the_paths_after_it() -> None:
    assert resolve(None) == (False, ())
    assert resolve("strict") == (True, ())
    assert resolve(["STRICT", "$.event_id"]) == (True, ("$.event_id",))
    assert resolve(["$.session.instructions"]) == (False, ("$.session.instructions",))


CHAT = "ws://127.0.0.1:9/v1/chat"


def _say(text: str, ignore: list[str] | None = None) -> str:
    """A client that sends one user message and reads the answer, replayed offline."""
    cassette = _cassette(
        CHAT,
        [
            Message("send", 0.01, "text", json.dumps({"type": "say", "item": {"content": [{"text": "hi"}]}})),
            Message("recv", 0.05, "text", json.dumps({"type": "said"})),
        ],
    )
    with ssemock.replay(cassette, ignore_message_paths=ignore), connect(CHAT) as ws:
        ws.send(json.dumps({"type": "say", "item": {"content": [{"text": text}]}}))
        return str(json.loads(ws.recv())["type"])


def test_a_short_difference_names_the_path_that_skips_it() -> None:
    with pytest.raises(UnmatchedMessageError) as failed:
        _say("bye")
    assert "differs at $.item.content[0].text: 'hi' recorded, 'bye' sent" in str(failed.value)
    hint = "skip the field with ignore_message_paths=['$.item.content[0].text']"
    assert hint in str(failed.value).splitlines()[-1]
    assert _say("bye", ignore=["$.item.content[0].text"]) == "said"  # the hint, taken, replays
