"""Reference accumulators, fed streams shaped like the providers' documented examples."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ssemock.accumulate import (
    Accumulated,
    Choice,
    ProtocolError,
    ToolCall,
    accumulate,
    detect_protocol,
)
from ssemock.sse import ServerSentEvent

# ---------------------------------------------------------------------------- stream builders


def sse(data: Any, event: str = "message") -> ServerSentEvent:
    return ServerSentEvent(event=event, data=data if isinstance(data, str) else json.dumps(data))


DONE = ServerSentEvent(data="[DONE]")


def chunk(*choices: dict[str, Any], **extra: Any) -> ServerSentEvent:
    """An OpenAI chat.completion.chunk event, as sent with stream_options.include_usage."""
    body = {
        "id": "chatcmpl-9x",
        "object": "chat.completion.chunk",
        "created": 1718000000,
        "model": "gpt-4o-mini-2024-07-18",
        "system_fingerprint": "fp_0ba0d124f1",
        "choices": list(choices),
        "usage": None,
    }
    return sse({**body, **extra})


def delta(index: int = 0, finish_reason: str | None = None, **d: Any) -> dict[str, Any]:
    return {"index": index, "delta": d, "logprobs": None, "finish_reason": finish_reason}


def tc(index: int, arguments: str, *, id: str | None = None, name: str | None = None) -> dict[str, Any]:
    call: dict[str, Any] = {"index": index, "function": {"arguments": arguments}}
    if id is not None:
        call.update(id=id, type="function")
    if name is not None:
        call["function"]["name"] = name
    return call


def anthropic(kind: str, **fields: Any) -> ServerSentEvent:
    return sse({"type": kind, **fields}, event=kind)


def message_start(**usage: Any) -> ServerSentEvent:
    return anthropic(
        "message_start",
        message={
            "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
            "type": "message",
            "role": "assistant",
            "content": [],
            "model": "claude-sonnet-4-5-20250929",
            "stop_reason": None,
            "stop_sequence": None,
            "usage": usage or {"input_tokens": 25, "output_tokens": 1},
        },
    )


def block_start(index: int, **block: Any) -> ServerSentEvent:
    return anthropic("content_block_start", index=index, content_block=block)


def block_delta(index: int, kind: str, **d: Any) -> ServerSentEvent:
    return anthropic("content_block_delta", index=index, delta={"type": kind, **d})


def block_stop(index: int) -> ServerSentEvent:
    return anthropic("content_block_stop", index=index)


def message_end(stop_reason: str = "end_turn", **usage: Any) -> list[ServerSentEvent]:
    return [
        anthropic(
            "message_delta",
            delta={"stop_reason": stop_reason, "stop_sequence": None},
            usage=usage or {"output_tokens": 15},
        ),
        anthropic("message_stop"),
    ]


_SEQ = iter(range(10**6))


def resp(kind: str, **fields: Any) -> ServerSentEvent:
    return sse({"type": kind, "sequence_number": next(_SEQ), **fields}, event=kind)


RESPONSE = {
    "id": "resp_67ccd2bed1ec8190b14f964abc054267",
    "object": "response",
    "created_at": 1741476542,
    "status": "in_progress",
    "model": "gpt-4.1-2025-04-14",
    "output": [],
    "usage": None,
    "error": None,
    "incomplete_details": None,
}
RESPONSE_USAGE = {
    "input_tokens": 36,
    "input_tokens_details": {"cached_tokens": 0},
    "output_tokens": 87,
    "output_tokens_details": {"reasoning_tokens": 0},
    "total_tokens": 123,
}


def resp_start() -> list[ServerSentEvent]:
    return [resp("response.created", response=RESPONSE), resp("response.in_progress", response=RESPONSE)]


def resp_end(status: str = "completed", **extra: Any) -> ServerSentEvent:
    return resp(
        f"response.{status}",
        response={
            **RESPONSE,
            "status": status,
            "usage": RESPONSE_USAGE,
            **extra,
        },
    )


def resp_message(index: int, pieces: list[str]) -> list[ServerSentEvent]:
    item_id = f"msg_{index}"
    where = {"item_id": item_id, "output_index": index, "content_index": 0}
    return [
        resp(
            "response.output_item.added",
            output_index=index,
            item={
                "id": item_id,
                "type": "message",
                "status": "in_progress",
                "role": "assistant",
                "content": [],
            },
        ),
        resp(
            "response.content_part.added",
            **where,
            part={"type": "output_text", "text": "", "annotations": []},
        ),
        *(resp("response.output_text.delta", **where, delta=p, logprobs=[]) for p in pieces),
        resp("response.output_text.done", **where, text="".join(pieces), logprobs=[]),
        resp(
            "response.content_part.done",
            **where,
            part={"type": "output_text", "text": "".join(pieces), "annotations": []},
        ),
        resp(
            "response.output_item.done",
            output_index=index,
            item={
                "id": item_id,
                "type": "message",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "".join(pieces), "annotations": []}],
            },
        ),
    ]


def resp_function_call(index: int, name: str, pieces: list[str]) -> list[ServerSentEvent]:
    item = {"type": "function_call", "id": f"fc_{index}", "call_id": f"call_{index}", "name": name}
    where = {"item_id": f"fc_{index}", "output_index": index}
    return [
        resp(
            "response.output_item.added",
            output_index=index,
            item={**item, "arguments": "", "status": "in_progress"},
        ),
        *(resp("response.function_call_arguments.delta", **where, delta=p) for p in pieces),
        resp("response.function_call_arguments.done", **where, arguments="".join(pieces)),
        resp(
            "response.output_item.done",
            output_index=index,
            item={**item, "arguments": "".join(pieces), "status": "completed"},
        ),
    ]


def ollama(content: str = "", *, done: bool = False, **extra: Any) -> dict[str, Any]:
    line: dict[str, Any] = {
        "model": "llama3.2",
        "created_at": "2025-01-01T00:00:00.000000Z",
        "message": {"role": "assistant", "content": content},
        "done": done,
    }
    line["message"].update(extra.pop("message", {}))
    return {**line, **extra}


OLLAMA_DONE: dict[str, Any] = {
    "done_reason": "stop",
    "total_duration": 4883583458,
    "load_duration": 1334875,
    "prompt_eval_count": 26,
    "prompt_eval_duration": 342546000,
    "eval_count": 282,
    "eval_duration": 4535599000,
}

# ---------------------------------------------------------------------------- openai.chat


def test_openai_chat_text_with_include_usage_final_chunk() -> None:
    events = [
        chunk(delta(role="assistant", content="", refusal=None)),
        chunk(delta(content="Hello")),
        chunk(delta(content=", wor")),
        chunk(delta(content="ld!")),
        chunk(delta(finish_reason="stop")),
        chunk(usage={"prompt_tokens": 9, "completion_tokens": 4, "total_tokens": 13}),
        DONE,
    ]
    acc = accumulate(events, "openai.chat")
    assert acc.to_dict() == {
        "protocol": "openai.chat",
        "id": "chatcmpl-9x",
        "model": "gpt-4o-mini-2024-07-18",
        "text": "Hello, world!",
        "refusal": "",
        "thinking": "",
        "signature": "",
        "tool_calls": [],
        "finish_reason": "stop",
        "usage": {"prompt_tokens": 9, "completion_tokens": 4, "total_tokens": 13},
        "error": None,
        "complete": True,
        "citations": [],
        "choices": [
            {
                "index": 0,
                "text": "Hello, world!",
                "refusal": "",
                "thinking": "",
                "signature": "",
                "tool_calls": [],
                "finish_reason": "stop",
            }
        ],
    }
    json.dumps(acc.to_dict())  # JSON-able


def test_openai_chat_usage_is_never_overwritten_by_null() -> None:
    usage = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
    acc = accumulate(
        [chunk(delta(content="x"), usage=usage), chunk(delta(finish_reason="stop"))], "openai.chat"
    )
    assert acc.usage == usage
    assert not acc.complete


def test_openai_chat_parallel_tool_calls_interleaved_by_index() -> None:
    events = [
        chunk(delta(role="assistant", content=None)),
        chunk(delta(tool_calls=[tc(0, "", id="call_a", name="get_weather")])),
        chunk(delta(tool_calls=[tc(1, "", id="call_b", name="get_time")])),
        chunk(delta(tool_calls=[tc(1, '{"tz": ')])),
        chunk(delta(tool_calls=[tc(0, '{"city"')])),
        chunk(delta(tool_calls=[tc(0, ': "Paris"}'), tc(1, '"CET"}')])),
        chunk(delta(finish_reason="tool_calls")),
        DONE,
    ]
    acc = accumulate(events, "openai.chat")
    assert acc.tool_calls == [
        ToolCall(0, "call_a", "get_weather", '{"city": "Paris"}', "function"),
        ToolCall(1, "call_b", "get_time", '{"tz": "CET"}', "function"),
    ]
    assert [c.parsed_arguments for c in acc.tool_calls] == [{"city": "Paris"}, {"tz": "CET"}]
    assert acc.finish_reason == "tool_calls"
    assert acc.text == ""
    assert acc.to_dict()["tool_calls"][0] == {
        "index": 0,
        "id": "call_a",
        "type": "function",
        "name": "get_weather",
        "arguments": '{"city": "Paris"}',
        "parsed_arguments": {"city": "Paris"},
    }


def test_openai_chat_repeated_id_and_name_are_not_concatenated() -> None:
    events = [
        chunk(delta(tool_calls=[tc(0, '{"a":', id="call_1", name="f")])),
        chunk(delta(tool_calls=[tc(0, " 1", id="call_1", name="f")])),
        chunk(delta(tool_calls=[tc(0, "}")])),
        DONE,
    ]
    (call,) = accumulate(events, "openai.chat").tool_calls
    assert (call.id, call.name, call.arguments) == ("call_1", "f", '{"a": 1}')


def test_openai_chat_new_id_at_a_used_index_starts_a_new_call() -> None:
    """Servers that stream every call at index 0 (issue 13 item 6): a new id is a new call."""
    events = [
        chunk(delta(tool_calls=[tc(0, "", id="call_1", name="f")])),
        chunk(delta(tool_calls=[tc(0, '{"a": 1}')])),
        chunk(delta(tool_calls=[tc(1, "{}", id="call_x", name="h")])),
        chunk(delta(tool_calls=[tc(0, "", id="call_2", name="g")])),
        chunk(delta(tool_calls=[tc(0, '{"b": 2}')])),
        chunk(delta(tool_calls=[tc(0, "", id="call_2")])),  # a repeated id continues its call
        DONE,
    ]
    calls = accumulate(events, "openai.chat").tool_calls
    assert [(c.index, c.id, c.name, c.arguments) for c in calls] == [
        (0, "call_1", "f", '{"a": 1}'),
        (1, "call_x", "h", "{}"),
        (0, "call_2", "g", '{"b": 2}'),
    ]


def test_openai_chat_two_choices_out_of_order() -> None:
    events = [
        chunk(delta(1, role="assistant", content="")),
        chunk(delta(1, content="B1 ")),
        chunk(delta(0, role="assistant", content="A1 ")),
        chunk(delta(1, content="B2"), delta(0, content="A2")),
        chunk(delta(1, finish_reason="length")),
        chunk(delta(0, finish_reason="stop")),
        DONE,
    ]
    acc = accumulate(events, "openai.chat")
    assert [(c.index, c.text, c.finish_reason) for c in acc.choices] == [
        (0, "A1 A2", "stop"),
        (1, "B1 B2", "length"),
    ]
    assert (acc.text, acc.finish_reason) == ("A1 A2", "stop")


def test_openai_chat_refusal_and_reasoning() -> None:
    events = [
        chunk(delta(role="assistant", content=None, refusal="")),
        chunk(delta(reasoning_content="The user asks ")),
        chunk(delta(reasoning_content="for harm.")),
        chunk(delta(refusal="I'm sorry, ")),
        chunk(delta(refusal="I can't help with that.")),
        chunk(delta(finish_reason="stop")),
        DONE,
    ]
    acc = accumulate(events, "openai.chat")
    assert acc.refusal == "I'm sorry, I can't help with that."
    assert acc.thinking == "The user asks for harm."
    assert acc.text == ""


def test_openai_chat_mid_stream_error_object() -> None:
    error = {"message": "upstream overloaded", "code": 502}
    events = [chunk(delta(content="Hi")), sse({"error": error}), DONE]
    acc = accumulate(events, "openai.chat")
    assert (acc.text, acc.error, acc.complete) == ("Hi", error, True)


def test_openai_chat_events_after_done_are_ignored() -> None:
    events = [chunk(delta(content="a")), DONE, chunk(delta(content="b")), sse("not json")]
    acc = accumulate(events, "openai.chat")
    assert (acc.text, acc.complete) == ("a", True)


@pytest.mark.parametrize(
    "data, problem",
    [
        ("[DONE] ", "data is not JSON: '[DONE] '"),
        (" [DONE]", "data is not JSON: ' [DONE]'"),
        ('"[DONE]"', "data is not a JSON object: '\"[DONE]\"'"),
        (
            'data: {"id":"chatcmpl-9x","object":"chat.completion.chunk"}',
            'data is not JSON: \'data: {"id":"chatcmpl-9x","object":"chat\'...',
        ),
    ],
)
def test_openai_chat_done_is_an_exact_sentinel(data: str, problem: str) -> None:
    events = [chunk(delta(content="a")), chunk(delta(content="b")), ServerSentEvent(data=data)]
    with pytest.raises(ProtocolError) as info:
        accumulate(events, "openai.chat")
    assert str(info.value) == f"openai.chat: event 2: {problem}"
    assert (info.value.protocol, info.value.index) == ("openai.chat", 2)


def test_openai_chat_tool_call_delta_without_index() -> None:
    """Mistral's tool-call deltas carry no ``index``: each goes by its id (issue 31); an index that
    is there but no integer, or a delta with neither, is still refused."""
    first = {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}
    second = {"id": "call_2", "type": "function", "function": {"name": "g", "arguments": "{}"}}
    result = accumulate(
        [chunk(delta(content="")), chunk(delta(tool_calls=[first])), chunk(delta(tool_calls=[second]))],
        "openai.chat",
    )
    assert [(c.id, c.name, c.arguments) for c in result.tool_calls] == [
        ("call_1", "f", '{"a": 1}'),
        ("call_2", "g", "{}"),
    ]
    with pytest.raises(
        ProtocolError, match=r"^openai\.chat: event 1: tool call delta has no integer 'index'"
    ):
        accumulate(
            [chunk(delta(content="")), chunk(delta(tool_calls=[{**first, "index": "0"}]))], "openai.chat"
        )
    with pytest.raises(ProtocolError, match="neither 'index' nor 'id'"):
        accumulate([chunk(delta(tool_calls=[{"function": {"arguments": "{}"}}]))], "openai.chat")


# ---------------------------------------------------------------------------- anthropic.messages


def test_anthropic_text_and_tool_use() -> None:
    events = [
        message_start(
            input_tokens=472, cache_creation_input_tokens=0, cache_read_input_tokens=0, output_tokens=2
        ),
        block_start(0, type="text", text=""),
        anthropic("ping"),
        block_delta(0, "text_delta", text="Okay, let's check "),
        block_delta(0, "text_delta", text="the weather."),
        block_stop(0),
        block_start(1, type="tool_use", id="toolu_01T1x1fJ34qAmk2tNTrN7Up6", name="get_weather", input={}),
        block_delta(1, "input_json_delta", partial_json=""),
        block_delta(1, "input_json_delta", partial_json='{"location": "San Fra'),
        block_delta(1, "input_json_delta", partial_json='ncisco, CA", "unit": "fahrenheit"}'),
        block_stop(1),
        *message_end("tool_use", output_tokens=89, input_tokens=None),
    ]
    acc = accumulate(events)
    assert acc.protocol == "anthropic.messages"
    assert (acc.id, acc.model) == ("msg_01XFDUDYJgAACzvnptvVoYEL", "claude-sonnet-4-5-20250929")
    assert acc.text == "Okay, let's check the weather."
    assert acc.tool_calls == [
        ToolCall(
            0,
            "toolu_01T1x1fJ34qAmk2tNTrN7Up6",
            "get_weather",
            '{"location": "San Francisco, CA", "unit": "fahrenheit"}',
            "tool_use",
        )
    ]
    assert acc.tool_calls[0].parsed_arguments == {"location": "San Francisco, CA", "unit": "fahrenheit"}
    assert acc.finish_reason == "tool_use"
    assert acc.usage == {
        "input_tokens": 472,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "output_tokens": 89,
    }
    assert (acc.complete, acc.error) == (True, None)


def test_anthropic_thinking_signature_citations_and_tool_without_input() -> None:
    citation = {
        "type": "char_location",
        "cited_text": "The grass is green.",
        "document_index": 0,
        "document_title": "My Document",
        "start_char_index": 0,
        "end_char_index": 20,
    }
    events = [
        message_start(),
        block_start(0, type="thinking", thinking=""),
        block_delta(0, "thinking_delta", thinking="I need to find "),
        block_delta(0, "thinking_delta", thinking="the colour."),
        block_delta(0, "signature_delta", signature="EqQBCgIYAhIM1gbcDa9GJwZA2b3h"),
        block_stop(0),
        block_start(1, type="redacted_thinking", data="EmwKAhgBEgy3va3pzix/LafPsn4a"),
        block_stop(1),
        block_start(2, type="text", text="", citations=[]),
        block_delta(2, "citations_delta", citation=citation),
        block_delta(2, "text_delta", text="the grass is green"),
        block_delta(2, "future_delta", whatever=1),  # unknown delta type: ignored
        block_stop(2),
        anthropic("future_event", x=1),  # unknown event type: ignored
        block_start(3, type="tool_use", id="toolu_2", name="now", input={}),
        block_stop(3),
        *message_end(),
    ]
    acc = accumulate(events, "anthropic.messages")
    assert acc.thinking == "I need to find the colour."
    assert acc.signature == "EqQBCgIYAhIM1gbcDa9GJwZA2b3h"
    assert acc.text == "the grass is green"
    assert acc.citations == [citation]
    assert acc.tool_calls == [ToolCall(0, "toolu_2", "now", "", "tool_use")]
    assert acc.tool_calls[0].parsed_arguments == {}
    assert acc.usage == {"input_tokens": 25, "output_tokens": 15}


def test_anthropic_text_blocks_join_in_block_order_and_server_tool_use() -> None:
    events = [
        message_start(),
        block_start(0, type="text", text=""),
        block_start(1, type="server_tool_use", id="srvtoolu_1", name="web_search", input={}),
        block_delta(1, "input_json_delta", partial_json='{"query": "weather"}'),
        block_start(2, type="web_search_tool_result", tool_use_id="srvtoolu_1", content=[]),
        block_start(3, type="text", text=""),
        block_delta(3, "text_delta", text="Sunny."),
        block_delta(0, "text_delta", text="I'll search. "),  # block 0's text arrives last
        *message_end(),
    ]
    acc = accumulate(events, "anthropic.messages")
    assert acc.text == "I'll search. Sunny."
    assert acc.tool_calls == [
        ToolCall(0, "srvtoolu_1", "web_search", '{"query": "weather"}', "server_tool_use"),
    ]


def test_anthropic_mid_stream_overloaded_error() -> None:
    events = [
        message_start(),
        block_start(0, type="text", text=""),
        block_delta(0, "text_delta", text="Partial"),
        anthropic("error", error={"type": "overloaded_error", "message": "Overloaded"}),
    ]
    acc = accumulate(events)
    assert acc.error == {"type": "overloaded_error", "message": "Overloaded"}
    assert (acc.text, acc.complete, acc.finish_reason) == ("Partial", False, None)


@pytest.mark.parametrize(
    "bad, problem",
    [
        (block_delta(3, "text_delta", text="x"), "text_delta for content block 3, which never started"),
        (
            block_delta(1, "text_delta", text="x"),
            "text_delta for content block 1, a 'tool_use' content block",
        ),
        (
            block_delta(0, "input_json_delta", partial_json="{"),
            "input_json_delta for content block 0, a 'text' content block",
        ),
        (block_stop(7), "content_block_stop for content block 7, which never started"),
        (block_start(0, type="text", text=""), "content block 0 started twice"),
        (
            anthropic("content_block_delta", delta={"type": "text_delta", "text": "x"}),
            "content_block_delta has no integer 'index'",
        ),
        (DONE, "data is not JSON: '[DONE]'"),
    ],
)
def test_anthropic_impossible_input(bad: ServerSentEvent, problem: str) -> None:
    events = [
        message_start(),
        block_start(0, type="text", text=""),
        block_start(1, type="tool_use", id="t", name="f", input={}),
        bad,
    ]
    with pytest.raises(ProtocolError, match=r"^anthropic\.messages: event 3: ") as info:
        accumulate(events, "anthropic.messages")
    assert problem in str(info.value)


# ---------------------------------------------------------------------------- openai.responses


def test_responses_text_and_function_call() -> None:
    events = [
        *resp_start(),
        *resp_message(0, ["Let me ", "check", "."]),
        *resp_function_call(1, "get_weather", ['{"location":', ' "Paris, ', 'France"}']),
        resp_end(),
    ]
    acc = accumulate(events)
    assert acc.protocol == "openai.responses"
    assert (acc.id, acc.model) == (RESPONSE["id"], RESPONSE["model"])
    assert acc.text == "Let me check."
    assert acc.tool_calls == [
        ToolCall(0, "call_1", "get_weather", '{"location": "Paris, France"}', "function"),
    ]
    assert acc.usage == RESPONSE_USAGE
    assert (acc.finish_reason, acc.complete, acc.error) == ("completed", True, None)


def test_responses_reasoning_refusal_annotations_incomplete() -> None:
    annotation = {
        "type": "url_citation",
        "start_index": 0,
        "end_index": 4,
        "url": "https://example.com",
        "title": "Example",
    }
    where = {"item_id": "rs_0", "output_index": 0}
    events = [
        *resp_start(),
        resp(
            "response.output_item.added",
            output_index=0,
            item={"id": "rs_0", "type": "reasoning", "summary": []},
        ),
        resp(
            "response.reasoning_summary_part.added",
            **where,
            summary_index=0,
            part={"type": "summary_text", "text": ""},
        ),
        resp("response.reasoning_summary_text.delta", **where, summary_index=0, delta="**Plan** "),
        resp("response.reasoning_summary_text.delta", **where, summary_index=0, delta="answer"),
        resp("response.reasoning_summary_text.delta", **where, summary_index=1, delta=" then stop"),
        resp(
            "response.output_item.added",
            output_index=1,
            item={"id": "msg_1", "type": "message", "role": "assistant", "content": []},
        ),
        resp("response.output_text.delta", item_id="msg_1", output_index=1, content_index=0, delta="Sure"),
        resp(
            "response.output_text.annotation.added",
            item_id="msg_1",
            output_index=1,
            content_index=0,
            annotation_index=0,
            annotation=annotation,
        ),
        resp("response.refusal.delta", item_id="msg_1", output_index=1, content_index=1, delta="but no"),
        resp("response.some_future_event", output_index=1),
        resp_end("incomplete", incomplete_details={"reason": "max_output_tokens"}),
        resp(
            "response.output_text.delta",
            item_id="msg_1",
            output_index=1,
            content_index=0,
            delta="after the end",
        ),
    ]
    acc = accumulate(events, "openai.responses")
    assert acc.thinking == "**Plan** answer then stop"
    assert (acc.text, acc.refusal, acc.citations) == ("Sure", "but no", [annotation])
    assert (acc.finish_reason, acc.complete) == ("max_output_tokens", True)


def test_responses_done_events_fill_what_deltas_left_empty() -> None:
    item = {"type": "function_call", "id": "fc_0", "call_id": "call_0", "name": "f"}
    events = [
        *resp_start(),
        resp("response.output_item.added", output_index=0, item={**item, "arguments": ""}),
        resp("response.function_call_arguments.done", item_id="fc_0", output_index=0, arguments='{"x": 1}'),
        resp("response.output_item.done", output_index=0, item={**item, "arguments": "{}"}),
        resp_end(),
    ]
    (call,) = accumulate(events).tool_calls
    assert (call.id, call.name, call.arguments) == ("call_0", "f", '{"x": 1}')


def test_responses_failed_and_error_event() -> None:
    error = {"code": "server_error", "message": "The model failed."}
    failed = accumulate([*resp_start(), resp_end("failed", error=error)])
    assert (failed.error, failed.complete, failed.finish_reason) == (error, True, "failed")

    errored = accumulate([*resp_start(), resp("error", code="ERR_SOMETHING", message="boom", param=None)])
    assert errored.error == {"code": "ERR_SOMETHING", "message": "boom", "param": None}
    assert not errored.complete


def test_responses_delta_for_item_never_added() -> None:
    events = [
        *resp_start(),
        resp("response.output_text.delta", item_id="msg_0", output_index=0, content_index=0, delta="x"),
    ]
    with pytest.raises(ProtocolError) as info:
        accumulate(events)
    assert str(info.value) == (
        "openai.responses: event 2: response.output_text.delta for output item 0, which never started"
    )


# ---------------------------------------------------------------------------- ollama.chat


def test_ollama_chat_text_thinking_and_usage() -> None:
    lines = [
        ollama(message={"thinking": "Hmm, "}),
        ollama(message={"thinking": "a greeting."}),
        ollama("The"),
        ollama(" sky"),
        ollama(" is blue."),
        ollama(done=True, **OLLAMA_DONE),
    ]
    acc = accumulate(lines, content_type="application/x-ndjson")
    assert acc.protocol == "ollama.chat"
    assert (acc.text, acc.thinking, acc.model) == ("The sky is blue.", "Hmm, a greeting.", "llama3.2")
    assert (acc.finish_reason, acc.complete, acc.id) == ("stop", True, "")
    assert acc.usage == {
        "prompt_tokens": 26,
        "completion_tokens": 282,
        **{k: v for k, v in OLLAMA_DONE.items() if k != "done_reason"},
    }


def test_ollama_tool_calls_and_generate_endpoint() -> None:
    calls = [
        {"function": {"name": "get_weather", "arguments": {"city": "Tokyo"}}},
        {"id": "call_x", "function": {"index": 1, "name": "get_time", "arguments": {}}},
    ]
    acc = accumulate(
        [ollama(message={"tool_calls": calls}), ollama(done=True, done_reason="stop")],
        url="http://localhost:11434/api/chat",
    )
    assert acc.tool_calls == [
        ToolCall(0, "", "get_weather", json.dumps({"city": "Tokyo"}), "function"),
        ToolCall(1, "call_x", "get_time", "{}", "function"),
    ]
    assert acc.tool_calls[0].parsed_arguments == {"city": "Tokyo"}
    assert acc.usage is None

    generate = [
        {"model": "llama3.2", "created_at": "t", "response": r, "done": False} for r in ("Why", " not?")
    ]
    acc = accumulate(
        [*generate, {"model": "llama3.2", "response": "", "done": True, "done_reason": "length"}],
        url="/api/generate",
    )
    assert (acc.text, acc.finish_reason, acc.complete) == ("Why not?", "length", True)


def test_ollama_error_line_and_truncation() -> None:
    acc = accumulate([ollama("Hi"), {"error": "model runner has unexpectedly stopped"}])
    assert acc.error == {"message": "model runner has unexpectedly stopped"}
    assert (acc.text, acc.complete) == ("Hi", False)


def test_protocol_checks_the_event_type() -> None:
    with pytest.raises(
        ProtocolError,
        match=r"^ollama\.chat: event 1: expected a parsed JSON "
        r"line \(dict\), got ServerSentEvent",
    ):
        accumulate([ollama("a"), DONE], "ollama.chat")
    with pytest.raises(
        ProtocolError,
        match=r"^openai\.chat: event 0: expected a "
        r"ServerSentEvent, got dict",
    ):
        accumulate([ollama("a")], "openai.chat")


# ---------------------------------------------------------------------------- detection


@pytest.mark.parametrize(
    "url, protocol",
    [
        ("https://api.openai.com/v1/chat/completions", "openai.chat"),
        (
            "https://x.openai.azure.com/openai/deployments/gpt4/chat/completions?api-version=2024-10-21",
            "openai.chat",
        ),
        ("https://api.openai.com/v1/responses", "openai.responses"),
        ("https://api.anthropic.com/v1/messages", "anthropic.messages"),
        ("http://localhost:11434/api/chat", "ollama.chat"),
        ("http://localhost:11434/api/generate/", "ollama.chat"),
    ],
)
def test_detect_from_url(url: str, protocol: str) -> None:
    assert detect_protocol(url=url) == protocol


def test_detect_from_content_type_and_url_precedence() -> None:
    assert detect_protocol(content_type="application/x-ndjson; charset=utf-8") == "ollama.chat"
    assert (
        detect_protocol(
            [DONE], url="https://api.anthropic.com/v1/messages", content_type="application/x-ndjson"
        )
        == "anthropic.messages"
    )


@pytest.mark.parametrize(
    "events, protocol",
    [
        ([message_start()], "anthropic.messages"),
        ([ServerSentEvent(data='{"type": "message_start", "message": {}}')], "anthropic.messages"),
        ([ServerSentEvent(event="response.created", data="{}")], "openai.responses"),
        ([ServerSentEvent(data='{"type": "response.created"}')], "openai.responses"),
        ([ServerSentEvent(data=": junk"), chunk(delta(content="x"))], "openai.chat"),
        ([ollama("x")], "ollama.chat"),
    ],
)
def test_detect_from_events(events: list[Any], protocol: str) -> None:
    assert detect_protocol(events) == protocol


def test_accumulate_detects_from_a_generator() -> None:
    def events() -> Iterator[ServerSentEvent]:
        yield chunk(delta(content="gen"))
        yield DONE

    assert accumulate(events()).to_dict()["text"] == "gen"


def test_undetectable_and_unknown_protocol() -> None:
    with pytest.raises(ProtocolError, match="cannot detect the protocol"):
        accumulate([DONE], url="https://example.com/v1/embeddings", content_type="text/plain")
    with pytest.raises(ProtocolError, match="cannot detect the protocol"):
        detect_protocol([])
    with pytest.raises(
        ProtocolError, match=r"unknown protocol 'gemini'; known: openai\.completions, openai\.chat"
    ):
        accumulate([], "gemini")


# ---------------------------------------------------------------------------- small pieces


def test_tool_call_parsed_arguments_and_empty_result() -> None:
    assert ToolCall(0).parsed_arguments == {}
    assert ToolCall(0, arguments='{"a": [1, 2]}').parsed_arguments == {"a": [1, 2]}
    assert ToolCall(0, arguments='{"a": ').parsed_arguments is None
    empty = Accumulated("openai.chat")
    assert (empty.text, empty.tool_calls, empty.finish_reason, empty.refusal) == ("", [], None, "")
    assert Choice(0).to_dict()["tool_calls"] == []


def test_single_message_protocols_always_have_choice_zero() -> None:
    acc = accumulate([message_start(), *message_end()], "anthropic.messages")
    assert [c.index for c in acc.choices] == [0]
    assert (acc.text, acc.finish_reason, acc.complete) == ("", "end_turn", True)


# ---------------------------------------------------------------------------- property: splitting


def _openai_stream(text: list[str], args: list[str]) -> list[ServerSentEvent]:
    return [
        chunk(delta(role="assistant", content="")),
        *(chunk(delta(content=t)) for t in text),
        chunk(delta(tool_calls=[tc(0, "", id="call_1", name="f")])),
        *(chunk(delta(tool_calls=[tc(0, a, id="call_1", name="f")])) for a in args),
        chunk(delta(finish_reason="tool_calls")),
        DONE,
    ]


def _anthropic_stream(text: list[str], args: list[str]) -> list[ServerSentEvent]:
    return [
        message_start(),
        block_start(0, type="text", text=""),
        *(block_delta(0, "text_delta", text=t) for t in text),
        block_stop(0),
        block_start(1, type="tool_use", id="call_1", name="f", input={}),
        *(block_delta(1, "input_json_delta", partial_json=a) for a in args),
        block_stop(1),
        *message_end("tool_use"),
    ]


def _responses_stream(text: list[str], args: list[str]) -> list[ServerSentEvent]:
    return [*resp_start(), *resp_message(0, text), *resp_function_call(1, "f", args), resp_end()]


def _ollama_stream(text: list[str], args: list[str]) -> list[dict[str, Any]]:
    call = {"id": "call_1", "function": {"name": "f", "arguments": "".join(args)}}
    return [*(ollama(t) for t in text), ollama(message={"tool_calls": [call]}), ollama(done=True)]


def _split(draw: st.DrawFn, whole: str) -> list[str]:
    cuts = sorted(draw(st.lists(st.integers(0, len(whole)), max_size=12)))
    bounds = [0, *cuts, len(whole)]
    return [whole[a:b] for a, b in zip(bounds, bounds[1:])]


@st.composite
def _pieces(draw: st.DrawFn) -> tuple[str, list[str], str, list[str]]:
    text, args = draw(st.text()), draw(st.text())
    return text, _split(draw, text), args, _split(draw, args)


@given(pieces=_pieces())
def test_any_split_into_deltas_gives_back_the_same(pieces: tuple[str, list[str], str, list[str]]) -> None:
    """Each protocol's stream of every drawn split (was a parametrized test per protocol, each
    drawing its own: the drawing was most of the CPU; each is still checked on as many splits)."""
    text, text_pieces, args, arg_pieces = pieces
    for build in [_openai_stream, _anthropic_stream, _responses_stream, _ollama_stream]:
        acc = accumulate(build(text_pieces, arg_pieces))  # detection from the events, too
        assert acc.text == text, build.__name__
        (call,) = acc.tool_calls
        assert (call.id, call.name, call.arguments) == ("call_1", "f", args), build.__name__
        assert acc.complete, build.__name__
