"""cohere.v1 (Cohere's v1 chat stream, JSON lines as ``application/stream+json``) through the real
cohere SDK's v1 ``Client.chat_stream`` (issue 42 item 4): the synthesized stream replayed under
several chunkings is what the reference fold reads (text, tool calls, plan, finish reason,
usage); the stream's own error is a ``stream-end`` with ``finish_reason: ERROR``; HTTP errors are
cohere's own exceptions; and a stream shaped as the corpora recorded it is labelled ``cohere.v1``
(never ``ollama.chat``) from its URL, or from its lines alone."""

from __future__ import annotations

import json
from typing import Any

import cohere
import pytest
from cohere import errors as cohere_errors

import ssemock
from ssemock import framing
from ssemock.protocols import cohere_v1

WEATHER = {"name": "get_weather", "arguments": {"city": "東京", "unit": "celsius"}}
TIME = {"name": "get_time", "arguments": {"timezone": "Asia/Tokyo"}}
TEXT = "Cohere v1 streams text-generation lines — 日本語も 🌊 too."
BASE = "https://api.cohere.com"
# the cohere SDK parses v1 events with pydantic's deprecated ``__fields__``, once per event
pytestmark = pytest.mark.filterwarnings("ignore::pydantic.PydanticDeprecatedSince20")


def _chat(cassette: ssemock.Cassette) -> list[Any]:
    """The SDK's typed events for the cassette's request."""
    body = {k: v for k, v in cassette.interactions[0].request.json().items() if k != "stream"}
    client = cohere.Client(api_key="test-key-0000", base_url=BASE)
    return list(client.chat_stream(**body))


def _fold(events: list[Any]) -> dict[str, Any]:
    """What an application builds from the SDK's v1 events."""
    text, plan, calls, finish, usage = "", "", [], None, None
    for event in events:
        if event.event_type == "text-generation":
            text += event.text
        elif event.event_type == "tool-calls-chunk":
            plan += event.text or ""
        elif event.event_type == "tool-calls-generation":
            calls = [{"name": c.name, "arguments": c.parameters} for c in event.tool_calls]
        elif event.event_type == "stream-end":
            finish = event.finish_reason
            meta = event.response.meta
            usage = meta.dict(exclude_none=True, include={"billed_units", "tokens"}) if meta else None
    return {"text": text, "plan": plan, "calls": calls, "finish": finish, "usage": usage}


CASES = {
    "text": lambda: cohere_v1.synthesize(TEXT, seed=5),
    "calls": lambda: cohere_v1.synthesize(
        tool_calls=[WEATHER, TIME], tool_plan="I will look up both.", seed=6
    ),
}


@pytest.mark.parametrize("chunking", ["as_recorded", "bytewise", "mid_line", "fixed:7"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_the_sdk_reads_what_the_fold_reads(case: str, chunking: str) -> None:
    cassette = CASES[case]()
    with ssemock.replay(cassette, chunking=chunking) as player:
        got = _fold(_chat(cassette))
    want = player.expected.result
    assert want.protocol == "cohere.v1" and want.complete
    player.assert_text(got["text"])
    player.assert_tool_calls(got["calls"])
    assert [c.name for c in want.tool_calls] == (["get_weather", "get_time"] if case == "calls" else [])
    assert (got["plan"], got["finish"], got["usage"]) == (want.thinking, want.finish_reason, want.usage)
    assert want.finish_reason == "COMPLETE" and want.usage and want.usage["billed_units"]


def test_the_error_event_is_a_stream_end_with_finish_reason_error() -> None:
    cassette = CASES["text"]()
    with ssemock.replay(cassette, faults="error_event:kind=server_error,after_event=3") as player:
        events = _chat(cassette)
    body = player.plays[0].body
    last = json.loads(body.splitlines()[-1])
    assert (last["event_type"], last["finish_reason"], last["is_finished"]) == ("stream-end", "ERROR", True)
    assert events[-1].event_type == "stream-end" and events[-1].finish_reason == "ERROR"
    result = player.expected.result
    assert result.finish_reason == "ERROR" and result.error == {
        "message": last["response"]["meta"]["warnings"][0]
    }
    assert result.text == "".join(e.text for e in events if e.event_type == "text-generation")


@pytest.mark.parametrize(
    "status, exception",
    [(429, cohere_errors.TooManyRequestsError), (500, cohere_errors.InternalServerError)],
)
def test_an_http_error_is_the_sdks_own_exception(status: int, exception: type[Exception]) -> None:
    cassette = CASES["text"]()
    with ssemock.replay(cassette, faults=f"http_error:status={status}") as player:
        with pytest.raises(exception):
            _chat(cassette)
    assert json.loads(player.plays[0].body) == {"message": f"ssemock http_error {status}"}


# the lines of a stream as realtraffic3 recorded it (langtrace's and agentops' Cohere tests)
RECORDED = (
    b'{"is_finished":false,"event_type":"stream-start","generation_id":"04f2b675"}\n'
    b'{"is_finished":false,"event_type":"text-generation","text":"H"}\n'
    b'{"is_finished":false,"event_type":"text-generation","text":"ola."}\n'
    b'{"is_finished":true,"event_type":"stream-end","response":{"response_id":"6dec46f4","text":"Hola.",'
    b'"generation_id":"04f2b675","chat_history":[],"finish_reason":"COMPLETE","meta":{"api_version":'
    b'{"version":"1"},"billed_units":{"input_tokens":5,"output_tokens":3},"tokens":{"input_tokens":71,'
    b'"output_tokens":3}}},"finish_reason":"COMPLETE"}\n'
)


@pytest.mark.parametrize("url", ["https://api.cohere.com/v1/chat", None])
def test_a_recorded_stream_is_labelled_cohere_v1_and_folds_its_text(url: str | None) -> None:
    assert framing.detect("application/stream+json", RECORDED).name == "ndjson"
    events = framing.decode(RECORDED, "application/stream+json")
    # without the URL its lines decide, before Ollama's (whose lines it resembles: a "response")
    assert ssemock.detect_protocol(events, url=url, content_type="application/stream+json") == "cohere.v1"
    result = ssemock.accumulate(events, "cohere.v1")
    assert (result.text, result.finish_reason, result.id, result.complete) == (
        "Hola.",
        "COMPLETE",
        "04f2b675",
        True,
    )
    assert result.usage == {
        "billed_units": {"input_tokens": 5, "output_tokens": 3},
        "tokens": {"input_tokens": 71, "output_tokens": 3},
    }


def test_tool_calls_given_only_whole_fold_from_the_generation_event() -> None:
    """A stream without tool-calls-chunk lines (older API versions) still gives its calls."""
    lines = [
        {"is_finished": False, "event_type": "stream-start", "generation_id": "g"},
        {
            "is_finished": False,
            "event_type": "tool-calls-generation",
            "text": "I will check.",
            "tool_calls": [{"name": "get_weather", "parameters": {"city": "Paris"}}],
        },
        {"is_finished": True, "event_type": "stream-end", "finish_reason": "COMPLETE", "response": {}},
    ]
    result = ssemock.accumulate(lines, "cohere.v1")
    assert [(c.name, c.parsed_arguments, c.id) for c in result.tool_calls] == [
        ("get_weather", {"city": "Paris"}, "")
    ]
    assert result.thinking == "I will check."


@pytest.mark.parametrize(
    "line, problem",
    [({"text": "x"}, "a line without an event_type"), ("text", "expected a parsed JSON line")],
)
def test_the_fold_refuses_a_line_no_server_sends(line: Any, problem: str) -> None:
    with pytest.raises(ssemock.ProtocolError, match=f"cohere.v1: event 0: {problem}"):
        ssemock.accumulate([line], "cohere.v1")


def test_another_apis_v1_chat_is_not_cohere_v1() -> None:
    """Writer's API serves OpenAI-like SSE at ``/v1/chat`` too (realtraffic2): only Cohere's host
    says cohere.v1 by its URL; elsewhere the events decide."""
    data = '{"id":"w","choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}'
    events = framing.decode(f"data: {data}\n\n".encode(), "text/event-stream")
    assert ssemock.detect_protocol(events, url="https://api.writer.com/v1/chat") == "openai.chat"
    assert ssemock.detect_protocol(url="https://api.cohere.ai/v1/chat") == "cohere.v1"
