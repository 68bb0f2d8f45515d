"""The shipped cassette library: every cassette loads, decodes, is what synth makes, and replays
through the matching real SDK under every chunking with the SDK's result equal to the reference."""

from __future__ import annotations

import asyncio
import json
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import anthropic
import cohere
import httpx
import openai
import pytest
from google import genai

import ssemock
from ssemock import cassettes, chunking, framing, ndjson, sse, synth
from ssemock.accumulate import accumulate

EXPECTED_NAMES = [
    "anthropic/messages_overloaded",
    "anthropic/messages_ping",
    "anthropic/messages_text",
    "anthropic/messages_thinking",
    "anthropic/messages_tool_use",
    "cohere/chat_text",
    "cohere/chat_tool_calls",
    "compat/event_ids",
    "compat/repeated_tool_ids",
    "gemini/array_text",
    "gemini/stream_function_call",
    "gemini/stream_safety",
    "gemini/stream_text",
    "ollama/chat",
    "openai/chat_content_filter",
    "openai/chat_n2",
    "openai/chat_refusal",
    "openai/chat_text",
    "openai/chat_tool_calls",
    "openai/chat_usage",
    "openai/responses_function_call",
    "openai/responses_text",
    "openrouter/chat_keepalive",
]
# the synthesized library; the protocol cassettes recorded through their SDKs (bedrock/, mcp/) are
# tested with their protocols in tests/protocols/; the WebSocket sessions (realtime/) in tests/cassettes/
NAMES = [name for name in cassettes.names() if name.split("/")[0] not in ("bedrock", "mcp", "realtime")]


def _decode(x: ssemock.Interaction) -> list[Any]:
    return framing.decode(x.response.body, x.response.header("content-type"))


def _reference(name: str) -> Any:
    x = cassettes.load(name).interactions[0]
    return accumulate(_decode(x), url=x.request.url, content_type=x.response.header("content-type"))


# -- the library as files ------------------------------------------------------------------------


def test_names_cover_the_documented_list() -> None:
    assert NAMES == EXPECTED_NAMES
    assert NAMES == sorted(synth.LIBRARY)


def test_unknown_names_say_what_exists() -> None:
    for bad in ("openai/nope", "../cassette", "", "openai"):
        with pytest.raises(ssemock.CassetteError, match="known: anthropic/messages_overloaded"):
            cassettes.load(bad)
    assert cassettes.path("ollama/chat.json") == cassettes.path("ollama/chat")


@pytest.mark.parametrize("name", NAMES)
def test_loads_decodes_and_says_how_it_was_made(name: str) -> None:
    cassette = cassettes.load(name)
    (x,) = cassette.interactions
    assert x.response.header(synth.SOURCE_HEADER) == synth.LIBRARY_SOURCE
    assert x.request.method == "POST" and x.request.url.startswith(("https://", "http://localhost:11434/"))
    body = x.request.json()
    if name.startswith("gemini/"):  # the model is in the URL; streaming is the method
        assert ":streamGenerateContent" in x.request.url and body["contents"]
    else:
        assert body["stream"] is True and body["model"] and (body.get("messages") or body.get("input"))
    assert "date" not in dict(x.response.headers) and "host" not in dict(x.request.headers)
    events = _decode(x)
    assert events, name
    result = _reference(name)
    assert result.complete == (name != "anthropic/messages_overloaded")
    assert result.text or result.tool_calls or result.refusal
    # file bytes are the deterministic dump (re-saving gives no diff)
    assert cassette.dumps() == cassettes.path(name).read_bytes()


@pytest.mark.parametrize("name", NAMES)
def test_is_a_recording_of_exactly_what_synth_writes(name: str) -> None:
    """Everything but the times is deterministic: the request, the bytes and the boundaries."""
    shipped = cassettes.load(name).interactions[0]
    made = synth.library_cassette(name).interactions[0]
    assert shipped.request.url == made.request.url
    assert shipped.request.json() == made.request.json()
    assert sorted(shipped.request.headers) == sorted(made.request.headers)
    assert shipped.response.body == made.response.body
    assert shipped.response.ends == made.response.ends
    assert shipped.response.complete and shipped.response.error is None
    made_headers = {k: v for k, v in made.response.headers if k != synth.SOURCE_HEADER}
    assert {
        k: v for k, v in shipped.response.headers if k not in (synth.SOURCE_HEADER, "server")
    } == made_headers


@pytest.mark.parametrize("name", NAMES)
def test_times_are_real_loopback_times_close_to_the_schedule(name: str) -> None:
    shipped = cassettes.load(name).interactions[0].response
    planned = synth.library_cassette(name).interactions[0].response
    assert len(shipped.times) == len(planned.times)
    for got, want in zip(shipped.times, planned.times):
        assert want <= got + 0.002 and got - want < 0.1, (shipped.times, planned.times)
    gaps = [b - a for a, b in zip(shipped.times, shipped.times[1:])]
    assert all(0.0 < g < 0.2 for g in gaps), gaps
    assert shipped.times != planned.times  # measured, not copied


def test_the_cases_each_cassette_is_for() -> None:
    def body(name: str) -> str:
        return cassettes.load(name).interactions[0].response.body.decode()

    text = _reference("openai/chat_text").text
    assert "日本語" in text and "🌏" in text and any(len(ch.encode()) == 4 for ch in text)
    calls = _reference("openai/chat_tool_calls").tool_calls
    assert [c.name for c in calls] == ["get_weather", "get_weather", "get_time"]
    deltas = [
        json.loads(e.data)["choices"][0]["delta"]
        for e in sse.decode([body("openai/chat_tool_calls").encode()])
        if e.data != "[DONE]"
    ]
    indexes = [d["tool_calls"][0]["index"] for d in deltas if "tool_calls" in d]
    assert indexes != sorted(indexes)  # interleaved
    first = json.loads(sse.decode([body("openai/chat_n2").encode()])[0].data)
    assert first["choices"][0]["index"] == 1
    last = [
        json.loads(e.data) for e in sse.decode([body("openai/chat_usage").encode()]) if e.data != "[DONE]"
    ][-1]
    assert last["choices"] == [] and last["usage"]["total_tokens"] == 26
    assert _reference("openai/chat_refusal").refusal.startswith("I'm sorry")
    first = json.loads(sse.decode([body("openai/chat_content_filter").encode()])[0].data)
    assert first["choices"] == [] and "prompt_filter_results" in first
    assert _reference("openai/chat_content_filter").finish_reason == "content_filter"
    assert _reference("openai/responses_function_call").tool_calls[0].name == "get_weather"
    thinking = _reference("anthropic/messages_thinking")
    assert thinking.thinking.startswith("Let me compute") and thinking.signature
    assert body("anthropic/messages_ping").count("event: ping") >= 3
    overloaded = _reference("anthropic/messages_overloaded")
    assert (
        overloaded.error == {"type": "overloaded_error", "message": "Overloaded"} and not overloaded.complete
    )
    assert body("openrouter/chat_keepalive").startswith(": OPENROUTER PROCESSING\n\n")
    deltas = [
        json.loads(e.data)["choices"][0]["delta"]
        for e in sse.decode([body("compat/repeated_tool_ids").encode()])
        if e.data != "[DONE]"
    ]
    repeated = [d["tool_calls"][0] for d in deltas if "tool_calls" in d]
    assert all(d["id"] and d["function"]["name"] for d in repeated) and len(repeated) > 2


# -- replay through the real SDKs under every chunking -----------------------------------------


def _openai_client(url: str, cls: Any = openai.OpenAI) -> Any:
    parts = urlsplit(url)
    path = parts.path.removesuffix("/chat/completions").removesuffix("/responses")
    return cls(
        api_key="sk-test-library-0000",
        base_url=f"{parts.scheme}://{parts.netloc}{path}",
        default_query=dict(parse_qsl(parts.query)) or None,
        max_retries=0,
    )


def _fold_chat(chunks: Any) -> tuple[dict[int, dict[str, Any]], Any]:
    """What an application accumulates from the SDK's typed chunks (id and name set once)."""
    choices: dict[int, dict[str, Any]] = {}
    usage = None
    for chunk in chunks:
        if chunk.usage is not None:
            usage = chunk.usage.to_dict()
        for choice in chunk.choices:
            slot = choices.setdefault(choice.index, {"text": "", "refusal": "", "calls": {}, "finish": None})
            slot["text"] += choice.delta.content or ""
            slot["refusal"] += choice.delta.refusal or ""
            for tc in choice.delta.tool_calls or []:
                call = slot["calls"].setdefault(tc.index, {"id": "", "name": "", "arguments": ""})
                call["id"] = call["id"] or tc.id or ""
                if tc.function is not None:
                    call["name"] = call["name"] or tc.function.name or ""
                    call["arguments"] += tc.function.arguments or ""
            slot["finish"] = choice.finish_reason or slot["finish"]
    return choices, usage


def _calls(calls: dict[int, dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {"name": c["name"], "arguments": json.loads(c["arguments"]), "id": c["id"]}
        for _, c in sorted(calls.items())
    ]


def _check_chat(name: str, player: ssemock.Player, body: dict[str, Any]) -> None:
    client = _openai_client(player.cassette.interactions[0].request.url)
    choices, usage = _fold_chat(client.chat.completions.create(**body))
    want = player.expected.result
    assert sorted(choices) == [c.index for c in want.choices]
    for choice in want.choices:
        got = choices[choice.index]
        player.assert_text(got["text"], choice=choice.index)
        assert got["refusal"] == choice.refusal and got["finish"] == choice.finish_reason
    player.assert_tool_calls(_calls(choices[0]["calls"]))
    assert [c["id"] for c in _calls(choices[0]["calls"])] == [c.id for c in want.tool_calls]
    assert usage == want.usage


def _check_responses(name: str, player: ssemock.Player, body: dict[str, Any]) -> None:
    client = _openai_client(player.cassette.interactions[0].request.url)
    params = {k: v for k, v in body.items() if k != "stream"}
    with client.responses.stream(**params) as stream:
        final = stream.get_final_response()
    want = player.expected.result
    player.assert_text(final.output_text)
    calls = [
        {"name": o.name, "arguments": json.loads(o.arguments), "id": o.call_id}
        for o in final.output
        if o.type == "function_call"
    ]
    player.assert_tool_calls(calls)
    assert [c["id"] for c in calls] == [c.id for c in want.tool_calls]
    assert final.usage is not None and final.usage.to_dict() == want.usage


def _check_anthropic(name: str, player: ssemock.Player, body: dict[str, Any]) -> None:
    client = anthropic.Anthropic(api_key="sk-ant-test-library-0000", max_retries=0)
    params = {k: v for k, v in body.items() if k != "stream"}
    if name == "anthropic/messages_overloaded":
        text = ""
        with pytest.raises(anthropic.APIStatusError) as info:
            with client.messages.stream(**params) as stream:
                for piece in stream.text_stream:
                    text += piece
        player.assert_text(text)
        assert isinstance(info.value.body, dict)
        assert info.value.body["error"] == player.expected.result.error
        return
    with client.messages.stream(**params) as stream:
        message = stream.get_final_message()
    want = player.expected.result
    player.assert_text("".join(b.text for b in message.content if b.type == "text"))
    player.assert_tool_calls(
        [{"name": b.name, "arguments": b.input} for b in message.content if b.type == "tool_use"]
    )
    assert [b.id for b in message.content if b.type == "tool_use"] == [c.id for c in want.tool_calls]
    thinking = [b for b in message.content if b.type == "thinking"]
    assert "".join(b.thinking for b in thinking) == want.thinking
    assert "".join(b.signature for b in thinking) == want.signature
    assert message.stop_reason == want.finish_reason
    assert message.usage.output_tokens == want.usage["output_tokens"]
    assert message.usage.input_tokens == want.usage["input_tokens"]


def _check_ollama(name: str, player: ssemock.Player, body: dict[str, Any]) -> None:
    text, thinking, calls, last = "", "", [], {}
    with httpx.Client() as client:
        with client.stream("POST", player.cassette.interactions[0].request.url, json=body) as response:
            # lines end at LF only: httpx's iter_lines also splits at U+2028/U+2029/U+0085 (str.splitlines),
            # which the shipped ollama cassette has inside its content (synth.HAZARDS)
            for last in ndjson.iter_decode(response.iter_bytes()):
                assert isinstance(last, dict)
                message = last.get("message") or {}
                text += message.get("content") or ""
                thinking += message.get("thinking") or ""
                calls += [
                    {"name": c["function"]["name"], "arguments": c["function"]["arguments"]}
                    for c in message.get("tool_calls") or []
                ]
    want = player.expected.result
    player.assert_text(text)
    player.assert_tool_calls(calls)
    assert thinking == want.thinking and last["done"] is True
    assert last["eval_count"] == want.usage["eval_count"]


def _check_gemini(name: str, player: ssemock.Player, body: dict[str, Any]) -> None:
    url = player.cassette.interactions[0].request.url
    if "alt=sse" not in url:  # the JSON array form: no SDK asks for it; a plain client parses the array
        with httpx.Client() as http, http.stream("POST", url, json=body) as response:
            elements = json.loads(b"".join(response.iter_bytes()))
        assert elements == player.expected.events
        player.assert_text(
            "".join(
                p.get("text", "")
                for e in elements
                for c in e.get("candidates", [])
                for p in c["content"]["parts"]
            )
        )
        return
    client = genai.Client(
        api_key="test-key-library",
        http_options={"base_url": url[: url.index("/v1beta/")] + "/", "api_version": "v1beta"},
    )
    config: dict[str, Any] = {"tools": body["tools"]} if body.get("tools") else {}
    if "thinkingConfig" in body.get("generationConfig", {}):
        config["thinking_config"] = genai.types.ThinkingConfig(include_thoughts=True)
    text, thinking, calls, finish, usage = "", "", [], None, None
    for chunk in client.models.generate_content_stream(
        model=url.split("/models/")[1].split(":")[0], contents=body["contents"], config=config or None
    ):
        for part in chunk.candidates[0].content.parts or []:
            if part.text is not None:
                thinking, text = (
                    (thinking + part.text, text) if part.thought else (thinking, text + part.text)
                )
            if part.function_call is not None:
                calls.append({"name": part.function_call.name, "arguments": part.function_call.args})
        finish = chunk.candidates[0].finish_reason or finish
        usage = chunk.usage_metadata.model_dump(mode="json", by_alias=True, exclude_none=True)
    want = player.expected.result
    player.assert_text(text)
    player.assert_tool_calls(calls)
    assert thinking == want.thinking and finish is not None and finish.value == want.finish_reason
    assert usage == want.usage


def _check_cohere(name: str, player: ssemock.Player, body: dict[str, Any]) -> None:
    client = cohere.ClientV2(api_key="test-key-library", base_url="https://api.cohere.com")
    text, plan, calls, finish = "", "", {}, None
    for event in client.chat_stream(**{k: v for k, v in body.items() if k != "stream"}):
        if event.type == "content-delta":
            text += event.delta.message.content.text
        elif event.type == "tool-plan-delta":
            plan += event.delta.message.tool_plan
        elif event.type == "tool-call-start":
            call = event.delta.message.tool_calls
            calls[event.index] = {
                "name": call.function.name,
                "arguments": call.function.arguments or "",
                "id": call.id,
            }
        elif event.type == "tool-call-delta":
            calls[event.index]["arguments"] += event.delta.message.tool_calls.function.arguments
        elif event.type == "message-end":
            finish = event.delta.finish_reason
    want = player.expected.result
    player.assert_text(text)
    player.assert_tool_calls(_calls(calls))
    assert [c["id"] for _, c in sorted(calls.items())] == [c.id for c in want.tool_calls]
    assert plan == want.thinking and finish == want.finish_reason


def _checker(name: str) -> Any:
    if name.startswith("gemini/"):
        return _check_gemini
    if name.startswith("cohere/"):
        return _check_cohere
    if name.startswith("anthropic/"):
        return _check_anthropic
    if name.startswith("ollama/"):
        return _check_ollama
    if "responses" in name:
        return _check_responses
    return _check_chat


@pytest.mark.parametrize("strategy", chunking.ALL, ids=str)
@pytest.mark.parametrize("name", NAMES)
def test_replays_through_the_matching_sdk(name: str, strategy: chunking.Chunking) -> None:
    cassette = cassettes.load(name)
    body = cassette.interactions[0].request.json()
    # the SDK sends exactly the recorded body: the default matcher compares it
    with ssemock.replay(cassette, chunking=strategy) as player:
        _checker(name)(name, player, body)
    assert len(player.plays) == 1 and player.plays[0].stream.finished
    assert player.plays[0].chunking is strategy


@pytest.mark.parametrize("name", ["openai/chat_n2", "openai/chat_tool_calls", "openrouter/chat_keepalive"])
def test_replays_through_the_async_sdk(name: str) -> None:
    cassette = cassettes.load(name)
    body = cassette.interactions[0].request.json()

    async def run() -> tuple[dict[int, dict[str, Any]], Any]:
        client = _openai_client(cassette.interactions[0].request.url, openai.AsyncOpenAI)
        stream = await client.chat.completions.create(**body)
        return _fold_chat([chunk async for chunk in stream])

    with ssemock.replay(cassette, chunking="mid_utf8") as player:
        choices, _ = asyncio.run(run())
    for choice in player.expected.result.choices:
        player.assert_text(choices[choice.index]["text"], choice=choice.index)
    player.assert_tool_calls(_calls(choices[0]["calls"]))


def test_openai_stream_helper_concatenates_repeated_tool_ids() -> None:
    """The openai SDK's ``chat.completions.stream()`` helper concatenates every string field of a
    tool call delta, so a server that repeats id and name yields ``get_weatherget_weather...``:
    the reason compat/repeated_tool_ids exists (documented in docs/cassettes.md)."""
    cassette = cassettes.load("compat/repeated_tool_ids")
    params = {k: v for k, v in cassette.interactions[0].request.json().items() if k != "stream"}
    with ssemock.replay(cassette) as player:
        with _openai_client(cassette.interactions[0].request.url).chat.completions.stream(**params) as stream:
            final = stream.get_final_completion()
    names = [t.function.name for t in final.choices[0].message.tool_calls or []]
    assert names != [c.name for c in player.expected.tool_calls]
    assert names[0].startswith("get_weatherget_weather")
