"""gemini.interactions (google-genai 3.6's Live Interactions, ``.../interactions/live``; issue 44
item 4): the reference accumulator reads single events and ``{"events": [...]}`` batches, the
synthesized session is what the SDK's own ``ServerEvent`` model takes and folds back to its text,
and the error event is the protocol's own."""

from __future__ import annotations

import base64
import json

import pydantic
import pytest
from google.genai._gaos.types.interactions.serverevent import ServerEvent

import ssemock
from ssemock import protocols
from ssemock.accumulate import accumulate_session, detect_protocol
from ssemock.protocols.base import StreamError

LIVE = protocols.get("gemini.interactions")
URL = "wss://generativelanguage.googleapis.com/v1beta/interactions/live"
SERVER: pydantic.TypeAdapter[object] = pydantic.TypeAdapter(ServerEvent)


def test_text_and_audio_by_step_single_and_batched() -> None:
    pcm = bytes(range(12))
    session = [
        json.dumps({"event_type": "interaction.created", "interaction_id": "v1_abc"}),
        json.dumps(
            {
                "events": [
                    {"event_type": "step.start", "index": 0, "step": {"type": "model_output"}},
                    {"event_type": "step.delta", "index": 0, "delta": {"type": "text", "text": "Grüße "}},
                ]
            }
        ),  # fmt: skip
        json.dumps(
            {
                "event_type": "step.delta",
                "index": 0,
                "delta": {"type": "audio", "data": base64.b64encode(pcm).decode()},
            }
        ),
        json.dumps({"event_type": "step.delta", "index": 0, "delta": {"type": "text", "text": "aus Paris."}}),
        json.dumps({"event_type": "interaction.completed", "usage": {"total_output_tokens": 4}}),
    ]
    for frame in session:
        for event in json.loads(frame).get("events", [json.loads(frame)]):
            SERVER.validate_python(event)
    (result,) = accumulate_session(session, url=URL)
    assert (result.id, result.text, result.complete, result.usage) == (
        "v1_abc",
        "Grüße aus Paris.",
        True,
        {"total_output_tokens": 4},
    )
    assert result.audio == pcm  # type: ignore[attr-defined]


def test_a_delta_of_a_step_never_started_is_named() -> None:
    delta = json.dumps({"event_type": "step.delta", "index": 2, "delta": {"type": "text", "text": "x"}})
    with pytest.raises(ssemock.ProtocolError, match="step.delta for step 2, which never started"):
        accumulate_session([delta], protocol="gemini.interactions")


def test_detected_from_the_url_and_from_an_event() -> None:
    assert detect_protocol(url=URL) == "gemini.interactions"
    assert (
        detect_protocol([{"event_type": "step.start", "index": 0, "step": {"type": "model_output"}}])
        == "gemini.interactions"
    )


def test_the_synthesized_session_is_the_sdk_s_shape_and_folds_to_its_text() -> None:
    (x,) = LIVE.synthesize("Sunny in Paris, 22 °C.", chunk_size=3).interactions  # type: ignore[misc]
    assert x.websocket is not None
    received = [m.payload for m in x.websocket.received()]
    for data in received:
        SERVER.validate_python(json.loads(data))
    (result,) = accumulate_session(received, url=x.request.url)
    assert result.text == "Sunny in Paris, 22 °C." and result.complete and result.usage


def test_the_error_event_is_the_protocol_s_own() -> None:
    data = LIVE.error_event(StreamError("RESOURCE_EXHAUSTED", "Slow down.", framing="ndjson", newline=""))
    SERVER.validate_python(json.loads(data))
    (result,) = accumulate_session([data], protocol="gemini.interactions")
    assert result.error == {"code": "RESOURCE_EXHAUSTED", "message": "Slow down."}
