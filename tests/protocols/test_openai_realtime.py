"""openai.realtime and openai.responses over a WebSocket: the reference accumulators fed a
session's received messages in the API reference's shapes (each checked against the openai SDK's
own event models), one result per response."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from openai._models import validate_type
from openai.types.realtime import RealtimeServerEvent
from openai.types.responses import ResponseStreamEvent

import ssemock
from ssemock import protocols
from ssemock.accumulate import ProtocolError, accumulate, accumulate_session, detect_protocol
from ssemock.protocols.base import StreamError
from ssemock.protocols.messages import Spoken

PCM_1 = bytes(range(48))
PCM_2 = bytes(range(200, 256)) + b"\x00\x01"
N = iter(range(1000))


def ev(kind: str, **fields: Any) -> dict[str, Any]:
    return {"type": kind, "event_id": f"event_{next(N)}", **fields}


def part(kind: str, response: str, item: str, delta: str, index: int = 0, content: int = 0) -> dict[str, Any]:
    return ev(
        kind, response_id=response, item_id=item, output_index=index, content_index=content, delta=delta
    )


USAGE = {
    "total_tokens": 253,
    "input_tokens": 132,
    "output_tokens": 121,
    "input_token_details": {"text_tokens": 119, "audio_tokens": 13, "cached_tokens": 0},
    "output_token_details": {"text_tokens": 30, "audio_tokens": 91},
}


def response(rid: str, status: str, output: list[Any], usage: Any = None, **more: Any) -> dict[str, Any]:
    return {
        "object": "realtime.response",
        "id": rid,
        "status": status,
        "status_details": more.pop("status_details", None),
        "output": output,
        "usage": usage,
        **more,
    }


def session() -> list[dict[str, Any]]:
    """A GA Realtime session: an audio answer (transcript + PCM deltas), then a function call,
    with session events around them."""
    audio_item = {
        "id": "item_1",
        "type": "message",
        "role": "assistant",
        "status": "in_progress",
        "content": [],
    }
    call_item = {
        "id": "item_2",
        "type": "function_call",
        "status": "in_progress",
        "call_id": "call_1",
        "name": "get_weather",
        "arguments": "",
    }
    b64 = [base64.b64encode(PCM_1[:30]).decode(), base64.b64encode(PCM_1[30:]).decode()]
    return [
        ev("session.created", session={"type": "realtime", "id": "sess_1", "model": "gpt-realtime"}),
        ev("session.updated", session={"type": "realtime", "id": "sess_1", "model": "gpt-realtime"}),
        ev("response.created", response=response("resp_1", "in_progress", [])),
        ev("response.output_item.added", response_id="resp_1", output_index=0, item=audio_item),
        part("response.output_audio_transcript.delta", "resp_1", "item_1", "Sunny, "),
        part("response.output_audio.delta", "resp_1", "item_1", b64[0]),
        part("response.output_audio_transcript.delta", "resp_1", "item_1", "22 °C — ☀."),
        part("response.output_audio.delta", "resp_1", "item_1", b64[1]),
        ev("rate_limits.updated", rate_limits=[{"name": "tokens", "limit": 1000, "remaining": 900, "reset_seconds": 1.0}]),
        ev(
            "response.done",
            response=response(
                "resp_1",
                "completed",
                [{**audio_item, "status": "completed", "content": [{"type": "output_audio", "transcript": "Sunny, 22 °C — ☀."}]}],
                USAGE,
            ),
        ),
        ev("response.created", response=response("resp_2", "in_progress", [])),
        ev("response.output_item.added", response_id="resp_2", output_index=0, item=call_item),
        ev("response.function_call_arguments.delta", response_id="resp_2", item_id="item_2", output_index=0, call_id="call_1", delta='{"city":'),
        ev("response.function_call_arguments.delta", response_id="resp_2", item_id="item_2", output_index=0, call_id="call_1", delta='"Paris"}'),
        ev("response.function_call_arguments.done", response_id="resp_2", item_id="item_2", output_index=0, call_id="call_1", name="get_weather", arguments='{"city":"Paris"}'),
        ev("response.done", response=response("resp_2", "completed", [{**call_item, "status": "completed", "arguments": '{"city":"Paris"}'}], USAGE)),
        ev("error", error={"type": "invalid_request_error", "code": "invalid_value", "message": "Invalid value: 'x'.", "param": "session.output_modalities", "event_id": None}),
    ]  # fmt: skip


def test_the_session_events_are_the_sdk_s_own_shapes() -> None:
    for event in session():
        parsed = validate_type(type_=RealtimeServerEvent, value=event)  # type: ignore[arg-type]
        assert parsed.type == event["type"]  # type: ignore[union-attr]


def test_a_session_folds_into_one_result_per_response_and_the_lone_error() -> None:
    first, second, error = accumulate_session(
        session(), url="wss://api.openai.com/v1/realtime?model=gpt-realtime"
    )
    assert isinstance(first, Spoken) and first.protocol == "openai.realtime"
    assert (first.id, first.text, first.transcript) == ("resp_1", "Sunny, 22 °C — ☀.", "Sunny, 22 °C — ☀.")
    assert (
        first.audio == PCM_1
        and first.usage == USAGE
        and first.complete
        and first.finish_reason == "completed"
    )
    assert first.tool_calls == [] and first.error is None
    assert second.id == "resp_2" and second.text == "" and second.audio == b""
    [call] = second.tool_calls
    assert (call.id, call.name, call.arguments, call.parsed_arguments) == (
        "call_1",
        "get_weather",
        '{"city":"Paris"}',
        {"city": "Paris"},
    )
    assert not error.complete and error.error is not None and error.error["code"] == "invalid_value"
    assert first.to_dict()["audio_bytes"] == len(PCM_1) and first.to_dict()["transcript"] == first.transcript


def test_messages_as_text_or_bytes_fold_alike_and_accumulate_takes_the_first_response() -> None:
    events = session()
    as_text = [json.dumps(e) for e in events]
    as_bytes = [t.encode() for t in as_text]
    assert [r.to_dict() for r in accumulate_session(as_text, "openai.realtime")] == [
        r.to_dict() for r in accumulate_session(as_bytes, "openai.realtime")
    ]
    assert detect_protocol(events) == "openai.realtime"  # by its first telling event
    assert (
        accumulate(events, "openai.realtime").to_dict()
        == accumulate_session(events, "openai.realtime")[0].to_dict()
    )


def test_interleaved_responses_split_by_response_id_and_text_joins_by_index() -> None:
    events = [
        ev("response.created", response=response("resp_a", "in_progress", [])),
        ev("response.created", response=response("resp_b", "in_progress", [])),
        part("response.output_text.delta", "resp_a", "i1", "world", content=1),
        part("response.output_text.delta", "resp_b", "i2", "other"),
        part("response.output_text.delta", "resp_a", "i1", "hello ", content=0),
        ev("error", error={"type": "server_error", "code": None, "message": "boom", "param": None, "event_id": None}),
        ev("response.done", response=response("resp_a", "cancelled", [], status_details={"type": "cancelled", "reason": "turn_detected"})),
        ev("response.done", response=response("resp_b", "failed", [], status_details={"type": "failed", "error": {"type": "server_error", "code": "x"}})),
    ]  # fmt: skip
    a, b = accumulate_session(events, "openai.realtime")
    assert (a.id, a.text, a.finish_reason, a.error) == ("resp_a", "hello world", "turn_detected", None)
    # the error came while both were open: it joins the one in progress last
    assert (b.id, b.text, b.finish_reason, b.error) == (
        "resp_b",
        "other",
        "failed",
        {"type": "server_error", "code": "x"},
    )


def test_the_beta_event_names_fold_too() -> None:
    events = [
        ev("response.created", response=response("r", "in_progress", [])),
        part("response.text.delta", "r", "i", "beta "),
        part("response.audio_transcript.delta", "r", "i", "words", index=1),
        part("response.audio.delta", "r", "i", base64.b64encode(PCM_2).decode(), index=1),
        ev("response.done", response=response("r", "completed", [])),
    ]
    [result] = accumulate_session(events, "openai.realtime")
    assert (result.text, result.transcript, result.audio) == ("beta words", "words", PCM_2)  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "bad, problem",
    [
        (part("response.output_audio.delta", "r", "i", "not base64!"), "response.output_audio.delta's delta is not base64"),
        ({"type": "response.output_text.delta", "delta": "x"}, "has no integer 'output_index'"),
        ({"type": "response.function_call_arguments.delta", "delta": "x"}, "has no call_id"),
        ("[1, 2]", "message is not a JSON object"),
        (b"\xff\xfe", "a binary message that is not UTF-8 JSON"),
    ],
)  # fmt: skip
def test_impossible_messages_name_their_position(bad: Any, problem: str) -> None:
    events = [ev("response.created", response=response("r", "in_progress", [])), bad]
    with pytest.raises(ProtocolError, match=rf"openai\.realtime: event 1: .*{problem}"):
        accumulate_session(events, "openai.realtime")


def test_error_event_is_one_realtime_error_message() -> None:
    raw = protocols.get("openai.realtime").error_event(StreamError("server_error", "boom", newline=""))
    event = json.loads(raw)
    assert validate_type(type_=RealtimeServerEvent, value=event).type == "error"  # type: ignore[arg-type,union-attr]
    [result] = accumulate_session([event], "openai.realtime")
    assert result.error == event["error"] and result.error["message"] == "boom"


# -- openai.responses over a WebSocket: the SSE protocol's accumulator, one message per event ----------


def responses_session() -> list[dict[str, Any]]:
    def created(rid: str, seq: int) -> dict[str, Any]:
        return {"type": "response.created", "sequence_number": seq, "response": {"id": rid, "object": "response", "created_at": 1, "status": "in_progress", "model": "gpt-5", "output": [], "parallel_tool_calls": True, "tool_choice": "auto", "tools": []}}  # fmt: skip

    item = {"id": "msg_1", "type": "message", "role": "assistant", "status": "in_progress", "content": []}
    usage = {"input_tokens": 9, "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0}, "output_tokens": 3, "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 12}  # fmt: skip
    done = {**created("resp_1", 0)["response"], "status": "completed", "usage": usage}
    return [
        created("resp_1", 0),
        {"type": "response.output_item.added", "sequence_number": 1, "output_index": 0, "item": item},
        {"type": "response.output_text.delta", "sequence_number": 2, "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": "Hel", "logprobs": []},
        {"type": "response.output_text.delta", "sequence_number": 3, "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": "lo.", "logprobs": []},
        {"type": "response.completed", "sequence_number": 4, "response": done},
        {"type": "error", "sequence_number": 5, "error": {"type": "invalid_request_error", "code": "previous_response_not_found", "message": "Previous response not found.", "param": "previous_response_id"}},
        created("resp_2", 0),
        {"type": "response.failed", "sequence_number": 1, "response": {**created("resp_2", 0)["response"], "status": "failed", "error": {"code": "server_error", "message": "boom"}}},
    ]  # fmt: skip


def test_responses_over_a_websocket_fold_with_the_sse_accumulator() -> None:
    events = responses_session()
    for event in events[:5]:  # the same events as the SSE stream's (the error differs: WS mode)
        assert validate_type(type_=ResponseStreamEvent, value=event).type == event["type"]  # type: ignore[arg-type,union-attr]
    url = "wss://api.openai.com/v1/responses"
    assert detect_protocol(url=url) == "openai.responses"
    first, error, second = accumulate_session([json.dumps(e) for e in events], url=url)
    assert (first.id, first.text, first.complete, first.usage) == (
        "resp_1",
        "Hello.",
        True,
        events[4]["response"]["usage"],
    )
    assert (
        error.error is not None
        and error.error["code"] == "previous_response_not_found"
        and not error.complete
    )
    assert (second.id, second.finish_reason, second.error) == (
        "resp_2",
        "failed",
        {"code": "server_error", "message": "boom"},
    )
    # the same events as SSE fold to the same result
    sse = [ssemock.ServerSentEvent(event=e["type"], data=json.dumps(e)) for e in events[:5]]
    assert accumulate(sse, "openai.responses").to_dict() == first.to_dict()
