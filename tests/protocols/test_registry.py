"""The protocol and framing registries, the four moved protocols' error shapes, and tool calls at a
reused index (issue 13 item 6)."""

from __future__ import annotations

import importlib
import json
from typing import Any

import httpx
import openai
import pytest

import ssemock
import ssemock.framing.ndjson
from ssemock import cassettes, faults, framing, protocols, synth
from ssemock.protocols.base import Fold, HTTPErrorBody, StreamError


def test_registry_lists_every_protocol_with_the_whole_interface() -> None:
    assert protocols.names() == (
        "openai.completions",
        "openai.chat",
        "openai.responses",
        "anthropic.sessions",
        "anthropic.messages",
        "ollama.chat",
        "cohere.v1",
        "gemini.generate_content",
        "cohere.chat",
        "bedrock.invoke",
        "bedrock.agent",
        "bedrock.converse",
        "a2a",
        "mcp",
        "openai.live",
        "openai.realtime",
        "gemini.live",
        "deepgram.listen",
        "gemini.interactions",
    )
    assert importlib.import_module("ssemock.accumulate").PROTOCOLS == protocols.names()
    for protocol in protocols.all_protocols():
        assert issubclass(protocol.fold, Fold) and protocol.fold.protocol == protocol.name
        assert framing.get(protocol.framing).name == protocol.framing
        event = protocol.error_event(StreamError("server_error", "boom"))
        # Gemini Live's own error message is goAway, which carries no text (errors are close frames)
        assert isinstance(event, bytes) and (b"boom" in event or b"goAway" in event)
        body = protocol.http_error(503, None)
        assert isinstance(body, HTTPErrorBody) and json.loads(body.body)
    with pytest.raises(
        ssemock.ProtocolError,
        match=r"unknown protocol 'x'; known: openai\.completions, openai\.chat, .*cohere\.chat",
    ):
        protocols.get("x")


def test_moved_modules_keep_their_names() -> None:
    assert ssemock.ndjson is ssemock.framing.ndjson
    assert ssemock.ndjson.decode([b'{"a": 1}\n']) == [{"a": 1}]
    from ssemock.framing import sse as framed_sse

    assert framed_sse.decode is ssemock.sse.decode and framed_sse.ServerSentEvent is ssemock.ServerSentEvent
    from ssemock.accumulate import Accumulated, Choice, ProtocolError, ToolCall, accumulate, detect_protocol

    assert (Accumulated, ProtocolError) == (ssemock.Accumulated, ssemock.ProtocolError)
    assert accumulate is ssemock.accumulate and detect_protocol is ssemock.detect_protocol
    assert (
        Choice(0).index == 0 and ToolCall(1).index == 1 and detect_protocol(url="/api/chat") == "ollama.chat"
    )


@pytest.mark.parametrize(
    "content_type, body, name",
    [
        ("text/event-stream; charset=utf-8", b"data: x\n\n", "sse"),
        ("application/x-ndjson", b'{"a":1}\n', "ndjson"),
        (None, b'  {"a":1}\n', "ndjson"),
        ("application/json; charset=UTF-8", b'[{"a":1}\n,\r\n{"b":2}\n]', "json_array"),
        (None, b"", "sse"),
    ],
)
def test_framing_detection(content_type: str | None, body: bytes, name: str) -> None:
    assert framing.detect(content_type, body).name == name


def test_json_array_framing() -> None:
    body = b'[{"a": "x]}\\"{"}\n,\r\n{"b": [1, {"c": []}]}\n]'
    assert framing.decode(body, None) == [{"a": 'x]}"{'}, {"b": [1, {"c": []}]}]
    ends = framing.event_ends(body, None)
    assert [body[e - 1 : e] for e in ends] == [b"}", b"}"] and ends[-1] == len(body) - 2
    for cut in range(len(body)):  # an unfinished array decodes to its complete elements
        assert framing.decode(body[:cut], None) == [
            v for v, e in zip([{"a": 'x]}"{'}, {"b": [1, {"c": []}]}], ends) if e <= cut
        ]
    with pytest.raises(ValueError, match="JSON array stream, byte 0: does not start with"):
        framing.get("json_array").decode(b"nope")
    with pytest.raises(ValueError, match="byte 9: elements must be separated by one ','"):
        framing.get("json_array").decode(b'[{"a":1} {"b":2}]')


# -- the moved protocols' own error shapes --------------------------------------------------------


def _served(cassette: ssemock.Cassette, fault: str) -> bytes:
    x = cassette.interactions[0]
    with ssemock.replay(cassette, faults=fault, match_on=["method", "path"]) as player:
        with httpx.Client() as client, client.stream("POST", x.request.url, json={}) as response:
            body = b"".join(response.iter_bytes())
    assert body == player.plays[0].body
    return body


def test_ollama_error_event_is_an_ndjson_line() -> None:
    body = _served(cassettes.load("ollama/chat"), "error_event:kind=server_error,after_event=2")
    lines = [json.loads(line) for line in body.splitlines()]  # every line is JSON: no SSE data: line
    assert lines[-1] == {"error": "The server had an error while processing your request. Sorry about that!"}
    result = ssemock.accumulate(lines, "ollama.chat")
    assert result.error == {"message": lines[-1]["error"]} and not result.complete


def test_ollama_http_error_body() -> None:
    body = _served(cassettes.load("ollama/chat"), "http_error:status=500")
    assert json.loads(body) == {"error": "ssemock http_error 500"}


def test_error_event_keeps_crlf_line_endings() -> None:
    lf = _served(cassettes.load("openai/chat_text"), "error_event:kind=server_error,after_event=2")
    assert lf.endswith(b'"code":null}}\n\n') and b"\r" not in lf
    x = synth.openai_chat("hello there", seed=1).interactions[0]
    crlf = ssemock.Cassette()
    crlf.add(
        "POST",
        x.request.url,
        [c.replace(b"\n", b"\r\n") for c in x.response.chunks],
        headers=list(x.response.headers),
        request_json=x.request.json(),
    )
    body = _served(crlf, "error_event:kind=server_error,after_event=2")
    assert body.endswith(b"\r\n\r\n") and b"\n" not in body.replace(b"\r\n", b"")


def test_responses_error_event_is_error_then_response_failed() -> None:
    cassette = cassettes.load("openai/responses_text")
    x = cassette.interactions[0]
    params = {k: v for k, v in x.request.json().items() if k != "stream"}
    with ssemock.replay(cassette, faults="error_event:kind=server_error,after_event=4") as player:
        client = openai.OpenAI(
            api_key="sk-test-registry-0000", base_url="https://api.openai.com/v1", max_retries=0
        )
        events = list(client.responses.create(stream=True, **params))
    assert [e.type for e in events[-2:]] == ["error", "response.failed"]
    assert events[-2].code == "server_error" and events[-1].response.error.code == "server_error"
    result = player.expected.result
    assert result.error == {"code": "server_error", "message": events[-2].message} and result.complete
    assert result.finish_reason == "failed"


def test_http_error_bodies_per_provider() -> None:
    def body(url: str, status: int) -> Any:
        return json.loads(faults.error_body(url, status))

    assert body("https://api.openai.com/v1/chat/completions", 429)["error"]["code"] == "rate_limit_exceeded"
    assert body("https://api.anthropic.com/v1/messages", 529)["error"]["type"] == "overloaded_error"
    assert body("http://localhost:11434/api/chat", 404) == {"error": "ssemock http_error 404"}
    assert (
        body("https://generativelanguage.googleapis.com/v1beta/models/g:streamGenerateContent", 429)["error"][
            "status"
        ]
        == "RESOURCE_EXHAUSTED"
    )
    assert set(body("https://api.cohere.com/v2/chat", 500)) == {"id", "message"}
    assert "error" in body("https://example.com/unknown", 500)  # OpenAI's shape when nothing says


# -- a new tool-call id at a used index (issue 13 item 6) ---------------------------------------


def test_synth_reuses_index_zero_and_the_reference_keeps_the_calls_apart() -> None:
    cassette = synth.openai_chat(
        tool_calls=[
            {"name": "get_weather", "arguments": {"city": "Paris"}, "id": "call_a"},
            {"name": "get_time", "arguments": {"tz": "CET"}, "id": "call_b"},
        ],
        reuse_tool_index=True,
        seed=3,
    )
    x = cassette.interactions[0]
    events = framing.decode(x.response.body, "text/event-stream")
    indexes = {
        d["index"]
        for e in events
        if e.data != "[DONE]"
        for c in json.loads(e.data)["choices"]
        for d in c["delta"].get("tool_calls", [])
    }
    assert indexes == {0}
    calls = ssemock.accumulate(events, url=x.request.url).tool_calls
    assert [(c.id, c.name, c.parsed_arguments) for c in calls] == [
        ("call_a", "get_weather", {"city": "Paris"}),
        ("call_b", "get_time", {"tz": "CET"}),
    ]

    # a client that merges by index alone fuses them, and the reference says so
    with ssemock.replay(cassette) as player:
        client = openai.OpenAI(api_key="sk-test-registry-0000", max_retries=0)
        merged: dict[int, dict[str, str]] = {}
        for chunk in client.chat.completions.create(**x.request.json()):
            for choice in chunk.choices:
                for tc in choice.delta.tool_calls or []:
                    slot = merged.setdefault(tc.index, {"name": "", "arguments": ""})
                    slot["name"] = slot["name"] or (tc.function.name or "")
                    slot["arguments"] += tc.function.arguments or ""
        with pytest.raises(AssertionError):
            player.assert_tool_calls(
                [{"name": c["name"], "arguments": c["arguments"]} for c in merged.values()]
            )
    with pytest.raises(ValueError, match="reuse_tool_index and interleave_tool_calls cannot be combined"):
        synth.openai_chat(tool_calls=[{"name": "f"}], reuse_tool_index=True, interleave_tool_calls=True)


def test_every_protocols_client_message_defaults_are_json_paths() -> None:
    """A protocol's defaults for matching its client's WebSocket messages (issue 43 item 4): each
    one a path ``ignore_message_paths`` takes, none listed twice; the voice protocols have some."""
    from ssemock.plan.message_matching import parse_path

    for protocol in protocols.all_protocols():
        paths = [*protocol.client_messages.ignore, *protocol.client_messages.by_length]
        assert len(set(paths)) == len(paths), protocol.name
        for path in paths:
            assert parse_path(path), (protocol.name, path)
    defaults = {p.name: p.client_messages for p in protocols.all_protocols()}
    assert defaults["openai.realtime"].ignore == ("$.event_id",)
    assert "$.audio" in defaults["openai.realtime"].by_length
    assert "$.realtime_input.audio.data" in defaults["gemini.live"].by_length
    assert defaults["openai.live"].ignore == ("$.event_id",) and defaults["openai.live"].by_length == (
        "$.audio",
    )
