"""gemini.live: the reference accumulator fed a Live session's server messages (binary frames of
JSON, as Google sends them), one result per model turn, compared with what google-genai's own
``LiveServerMessage`` makes of the same messages."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from google.genai import types

from ssemock import protocols
from ssemock.accumulate import ProtocolError, accumulate_session, detect_protocol
from ssemock.protocols.base import StreamError
from ssemock.protocols.messages import Spoken

URL = "wss://generativelanguage.googleapis.com/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent"
PCM = bytes(range(64))
USAGE = {
    "promptTokenCount": 9,
    "responseTokenCount": 2,
    "totalTokenCount": 11,
    "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 9}],
    "responseTokensDetails": [{"modality": "TEXT", "tokenCount": 2}],
}


def turn(*parts: dict[str, Any], **more: Any) -> dict[str, Any]:
    return {"serverContent": {"modelTurn": {"role": "model", "parts": list(parts)}, **more}}


def session() -> list[dict[str, Any]]:
    audio = base64.b64encode(PCM).decode()
    return [
        {"setupComplete": {}},
        turn({"text": "Thinking", "thought": True}),
        turn({"text": "Sun"}),
        turn({"text": "ny — 東京 ☀"}, outputTranscription={"text": "Sunny"}),
        turn({"inlineData": {"mimeType": "audio/pcm;rate=24000", "data": audio[:40]}}),
        turn({"inlineData": {"mimeType": "audio/pcm;rate=24000", "data": audio[40:]}}),
        {"serverContent": {"turnComplete": True}, "usageMetadata": USAGE},
        {"toolCall": {"functionCalls": [{"id": "fc_1", "name": "get_weather", "args": {"city": "Paris"}}, {"id": "fc_2", "name": "get_time", "args": {}}]}},
        {"toolCallCancellation": {"ids": ["fc_2"]}},
        turn({"text": "It is sunny."}),
        {"serverContent": {"turnComplete": True}},
        {"usageMetadata": USAGE},
        {"sessionResumptionUpdate": {"newHandle": "h1", "resumable": True}},
        {"goAway": {"timeLeft": "10s"}},
    ]  # fmt: skip


def test_the_messages_are_google_genai_s_own_shapes_and_fold_to_what_it_reads() -> None:
    messages = session()
    parsed = [types.LiveServerMessage.model_validate(m) for m in messages]
    assert all(p.model_dump(exclude_none=True) for p in parsed)  # every message has a field genai knows
    # binary frames of JSON, as the service sends them
    first, second, go_away = accumulate_session([json.dumps(m).encode() for m in messages], url=URL)
    assert isinstance(first, Spoken) and first.protocol == "gemini.live"
    sdk_text = "".join(
        part.text
        for p in parsed[:7]
        if p.server_content and p.server_content.model_turn
        for part in p.server_content.model_turn.parts or []
        if part.text and not part.thought
    )
    assert first.text == sdk_text == "Sunny — 東京 ☀" and first.thinking == "Thinking"
    assert first.audio == PCM == b"".join(p.data or b"" for p in parsed[4:6])
    assert (first.transcript, first.usage, first.complete, first.finish_reason) == (
        "Sunny",
        USAGE,
        True,
        "turn_complete",
    )
    [call] = second.tool_calls  # fc_2 was cancelled
    assert (call.id, call.name, call.parsed_arguments) == ("fc_1", "get_weather", {"city": "Paris"})
    assert second.text == "It is sunny." and second.usage == USAGE  # usage sent after the turn joins it
    assert go_away.error == {"goAway": {"timeLeft": "10s"}} and not go_away.complete
    assert detect_protocol(url=URL) == "gemini.live" and detect_protocol(messages) == "gemini.live"


def test_interrupted_turn_and_non_audio_inline_data() -> None:
    png = b"\x89PNG\r\n\x1a\n"
    messages = [
        turn({"inlineData": {"mimeType": "image/png", "data": base64.b64encode(png).decode()}}),
        {"serverContent": {"interrupted": True}},
        {"goAway": {"timeLeft": "1s"}},
        {"serverContent": {"turnComplete": True}},
    ]
    [result] = accumulate_session(messages, "gemini.live")
    assert result.media == [("image/png", png)] and result.audio == b""  # type: ignore[attr-defined]
    assert (
        result.finish_reason == "interrupted"
        and result.complete
        and result.error == {"goAway": {"timeLeft": "1s"}}
    )
    assert result.to_dict()["media"] == [{"mime_type": "image/png", "bytes": len(png)}]


@pytest.mark.parametrize(
    "bad, problem",
    [
        (
            turn({"inlineData": {"mimeType": "audio/pcm", "data": "@@@"}}),
            "modelTurn inlineData is not base64",
        ),
        ("not json", "message is not JSON"),
        (3, "expected a WebSocket message"),
    ],
)
def test_impossible_messages_name_their_position(bad: Any, problem: str) -> None:
    with pytest.raises(ProtocolError, match=rf"gemini\.live: event 1: {problem}"):
        accumulate_session([turn({"text": "a"}), bad], "gemini.live")


def test_error_event_is_go_away_and_http_error_is_google_s_body() -> None:
    live = protocols.get("gemini.live")
    message = json.loads(live.error_event(StreamError("server_error", "boom")))
    assert types.LiveServerMessage.model_validate(message).go_away is not None
    body = json.loads(live.http_error(429, None).body)
    assert body["error"]["status"] == "RESOURCE_EXHAUSTED" and body["error"]["code"] == 429
