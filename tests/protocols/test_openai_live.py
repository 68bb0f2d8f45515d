"""openai.live: the reference accumulator fed a GPT-Live session's server events, compared with
what openai's own ``types.live`` make of the same events; detection from the URL (the primary,
a sideband, a fork) and from the events alone, where openai.realtime no longer claims them; the
error event and the synthesizer's sessions in the SDK's shapes (issue 44 item 1)."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from openai._models import construct_type_unchecked, validate_type
from openai.types.live import ErrorEvent
from openai.types.live.server_event import ServerEvent

from ssemock import protocols, synth
from ssemock.accumulate import ProtocolError, accumulate, accumulate_session, detect_protocol
from ssemock.protocols.base import StreamError
from ssemock.protocols.messages import Spoken

PCM = bytes(range(96))
SESSION = {"id": "sess_1", "expires_at": 1767229200, "model": "gpt-live-1", "status": "active"}


def events() -> list[dict[str, Any]]:
    audio = base64.b64encode(PCM).decode()
    call = {"id": "fc_1", "type": "function_call", "call_id": "call_1", "name": "get_weather"}
    return [
        {"type": "session.started", "event_id": "e1", "session": SESSION},
        {"type": "session.input_transcript.delta", "event_id": "e2", "delta": "Weather?", "start_ms": 0, "end_ms": 700},
        {"type": "session.delegation.created", "event_id": "e3", "offset_ms": 750,
         "delegation": {"id": "dlg_1", "target": "responses", "type": "delegation", "response_id": "resp_1"}},
        {"type": "response.event", "event_id": "e4", "delegation_id": "dlg_1",
         "event": {"type": "response.output_item.added", "output_index": 0, "item": {**call, "arguments": ""}}},
        {"type": "response.event", "event_id": "e5", "delegation_id": "dlg_1",
         "event": {"type": "response.function_call_arguments.delta", "item_id": "fc_1", "delta": '{"city":'}},
        {"type": "response.event", "event_id": "e6", "delegation_id": "dlg_1",
         "event": {"type": "response.function_call_arguments.delta", "item_id": "fc_1", "delta": '"Paris"}'}},
        {"type": "response.event", "event_id": "e7", "delegation_id": "dlg_1",
         "event": {"type": "response.output_text.delta", "item_id": "msg_1", "delta": "backend notes"}},
        {"type": "session.delegation.created", "event_id": "e8", "offset_ms": 800,
         "delegation": {"id": "dlg_2", "target": "client", "type": "delegation"}},
        {"type": "session.output_audio.delta", "delta": audio[:64]},
        {"type": "session.output_transcript.delta", "event_id": "e9", "delta": "Sunny — ", "start_ms": 900, "end_ms": 1000},
        {"type": "session.output_audio.delta", "delta": audio[64:]},
        {"type": "session.output_transcript.delta", "event_id": "e10", "delta": "東京 ☀", "start_ms": 1000, "end_ms": 1100},
        {"type": "session.thinking.appended", "event_id": "e11", "start_ms": 1100, "end_ms": 1100},
        {"type": "session.usage.updated", "event_id": "e12", "usage": {"seconds": 1.2}},
        {"type": "session.closed", "event_id": "e13", "reason": "close_requested", "session": SESSION,
         "usage": {"seconds": 1.5, "active_seconds": 1}},
        {"type": "session.output_transcript.delta", "event_id": "e14", "delta": "after", "start_ms": 0, "end_ms": 0},
    ]  # fmt: skip


def test_the_events_are_the_sdk_s_own_and_fold_to_what_it_reads() -> None:
    messages = events()
    parsed = [validate_type(type_=ServerEvent, value=m) for m in messages]  # type: ignore[arg-type]
    sdk_said = "".join(p.delta for p in parsed[:-1] if p.type == "session.output_transcript.delta")
    sdk_audio = b"".join(base64.b64decode(p.delta) for p in parsed if p.type == "session.output_audio.delta")
    result = accumulate(messages)  # detected from the events alone
    assert isinstance(result, Spoken) and result.protocol == "openai.live"
    assert result.text == result.transcript == sdk_said == "Sunny — 東京 ☀"  # nothing after session.closed
    assert result.audio == sdk_audio == PCM
    assert [(c.type, c.id, c.name, c.arguments) for c in result.tool_calls] == [
        ("delegation", "dlg_1", "responses", ""),
        ("function", "call_1", "get_weather", '{"city":"Paris"}'),
        ("delegation", "dlg_2", "client", ""),
    ]
    assert result.usage == {"seconds": 1.5, "active_seconds": 1} and result.complete
    assert result.finish_reason == "close_requested" and (result.id, result.model) == ("sess_1", "gpt-live-1")
    # the same from the messages' text (the stray delta after session.closed left out): one result
    (again,) = accumulate_session(
        [json.dumps(m) for m in messages[:-1]], url="wss://api.openai.com/v1/live/sessions"
    )
    assert again.to_dict() == result.to_dict()


def test_an_open_session_is_not_complete_and_an_error_is_kept() -> None:
    error = {"type": "error", "event_id": "e9", "error": {"type": "invalid_request_error", "code": "unknown_parameter",
             "message": "Unknown parameter.", "param": "session.voice", "client_event_id": "c1"}}  # fmt: skip
    result = accumulate([*events()[:9], error], protocol="openai.live")
    assert not result.complete and result.usage is None
    assert result.error == error["error"]


def test_a_sideband_attached_late_and_an_error_before_the_session_split_apart() -> None:
    error = {
        "type": "error",
        "event_id": "e0",
        "error": {"type": "server_error", "code": "x", "message": "m"},
    }
    late = [error, *events()[9:15]]  # no session.started: a sideband attached mid-session
    first, session = accumulate_session(late, "openai.live")
    assert first.error == error["error"] and not first.text
    assert session.text == "Sunny — 東京 ☀" and session.complete


@pytest.mark.parametrize(
    "bad, problem",
    [
        ({"type": "session.output_audio.delta", "delta": "not base64!"}, "session.output_audio.delta's delta is not base64"),
        ({"type": "session.delegation.created", "event_id": "e", "delegation": {"target": "client"}}, "has no delegation id"),
    ],
)  # fmt: skip
def test_input_no_server_sends_names_the_event(bad: dict[str, Any], problem: str) -> None:
    with pytest.raises(ProtocolError, match=rf"openai\.live: event 1: .*{problem}") as failed:
        accumulate([events()[0], bad], protocol="openai.live")
    assert failed.value.index == 1 and failed.value.protocol == "openai.live"


@pytest.mark.parametrize(
    "url",
    [
        "wss://api.openai.com/v1/live/sessions",
        "wss://api.openai.com/v1/live/sessions/sess_1/attach",
        "wss://api.openai.com/v1/live/sessions/sess_1/fork?x=1",
        "ws://127.0.0.1:8123/v1/live/sessions/",
    ],
)
def test_detected_from_the_url_of_each_connection(url: str) -> None:
    assert detect_protocol(url=url) == "openai.live"


def test_detected_from_the_events_alone_and_realtime_claims_none_of_them() -> None:
    realtime = protocols.get("openai.realtime")
    for event in events():
        assert not realtime.event(event), event["type"]
    assert (
        detect_protocol([{"type": "session.started", "event_id": "e", "session": SESSION}]) == "openai.live"
    )
    live_updated = {"type": "session.updated", "event_id": "e", "session": SESSION}
    realtime_updated = {"type": "session.updated", "event_id": "e", "session": {"type": "realtime", "model": "gpt-realtime"}}  # fmt: skip
    assert detect_protocol([live_updated]) == "openai.live"
    assert detect_protocol([realtime_updated]) == "openai.realtime"
    assert detect_protocol([{"type": "session.created", "event_id": "e", "session": {}}]) == "openai.realtime"
    assert detect_protocol(url="wss://api.openai.com/v1/realtime?model=gpt-realtime") == "openai.realtime"


def test_the_error_event_is_the_sdk_s_error_event() -> None:
    data = protocols.get("openai.live").error_event(StreamError("server_error", "boom"))
    assert data.endswith(b"\n")
    event = ErrorEvent.model_validate_json(data)
    assert (event.error.type, event.error.code, event.error.message) == (
        "server_error",
        "server_error",
        "boom",
    )
    assert accumulate([json.loads(data)], protocol="openai.live").error == json.loads(data)["error"]


@pytest.mark.parametrize("tool_calls", [[], [{"name": "get_weather", "arguments": {"city": "Paris"}}]])
def test_the_synthesizer_speaks_the_sdk_s_events_and_folds_to_what_it_was_asked(
    tool_calls: list[Any],
) -> None:
    cassette = synth.openai_live(
        "Grüße — 東京 ☀", tool_calls=tool_calls, usage={"seconds": 9.0}, chunk_size=3
    )
    (x,) = cassette.interactions
    assert x.websocket is not None and x.request.url == "wss://api.openai.com/v1/live/sessions"
    received = [m.payload for m in x.websocket.received()]
    for data in received:
        event = construct_type_unchecked(value=json.loads(data), type_=ServerEvent)  # type: ignore[arg-type]
        assert validate_type(type_=ServerEvent, value=json.loads(data)).type == event.type  # type: ignore[arg-type, union-attr]
    (result,) = accumulate_session(received, url=x.request.url)
    assert result.text == "Grüße — 東京 ☀" and result.usage == {"seconds": 9.0} and result.complete
    assert len(result.audio) == 48 * len(result.text)  # type: ignore[attr-defined]
    functions = [(c.name, c.parsed_arguments) for c in result.tool_calls if c.type == "function"]
    assert functions == [(t["name"], t["arguments"]) for t in tool_calls]
    assert [c.name for c in result.tool_calls if c.type == "delegation"] == (
        ["responses"] if tool_calls else []
    )
