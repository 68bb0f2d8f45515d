"""The stream the demo's loopback server sends: an OpenAI-style chat completion (Japanese text, an
emoji, a tool call whose arguments arrive in fragments) written in pieces with 30-50 ms gaps,
some ending mid-line, as real servers do; and the Starlette app that serves it."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Sequence
from itertools import accumulate, cycle
from typing import TYPE_CHECKING, Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import StreamingResponse
from starlette.routing import Route

if TYPE_CHECKING:
    from openai.types.chat import ChatCompletionMessageParam, ChatCompletionToolUnionParam


TEXT = "こんにちは、世界！🌏 Streaming works."
TOOL_NAME = "get_weather"
TOOL_ID = "call_demo_1"
TOOL_ARGS = '{"city": "東京", "unit": "celsius"}'
MODEL = "gpt-demo"
API_KEY = "sk-test-demo"
MESSAGES: list[ChatCompletionMessageParam] = [
    {"role": "user", "content": "Say hello, then look up the weather in Tokyo."}
]
TOOLS: list[ChatCompletionToolUnionParam] = [
    {
        "type": "function",
        "function": {
            "name": TOOL_NAME,
            "description": "Current weather for a city.",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string"},
                    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                },
                "required": ["city"],
            },
        },
    }
]
CASSETTE_NAME = "chat_completions.json"


def _event(delta: dict[str, Any], finish_reason: str | None = None) -> bytes:
    chunk = {
        "id": "chatcmpl-demo",
        "object": "chat.completion.chunk",
        "created": 1767225600,
        "model": MODEL,
        "system_fingerprint": "fp_demo",
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}],
    }
    return f"data: {json.dumps(chunk, ensure_ascii=False)}\n\n".encode()


def _events() -> list[bytes]:
    out = [_event({"role": "assistant", "content": ""})]
    out += [_event({"content": TEXT[i : i + 3]}) for i in range(0, len(TEXT), 3)]
    out.append(
        _event(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": TOOL_ID,
                        "type": "function",
                        "function": {"name": TOOL_NAME, "arguments": ""},
                    }
                ]
            }
        )
    )
    out += [
        _event({"tool_calls": [{"index": 0, "function": {"arguments": TOOL_ARGS[i : i + 8]}}]})
        for i in range(0, len(TOOL_ARGS), 8)
    ]
    out.append(_event({}, "tool_calls"))
    out.append(b"data: [DONE]\n\n")
    return out


def _writes(events: Sequence[bytes]) -> list[bytes]:
    """Group the events into writes of 1-3 events; every third write ends inside the next line."""
    body = b"".join(events)
    ends = list(accumulate(len(e) for e in events))
    sizes = cycle([2, 1, 3, 2])
    cuts: list[int] = []
    count = 0
    while (count := count + next(sizes)) < len(events):
        cut = ends[count - 1]
        if len(cuts) % 3 == 2:
            cut += 24  # inside '"chatcmpl-demo"' of the next event: ASCII, mid-line
        cuts.append(cut)
    cuts.append(len(body))
    return [body[a:b] for a, b in zip([0, *cuts], cuts)]


#: The SSE events of the demo stream, one ``data: ...\n\n`` each (the last is ``[DONE]``).
EVENTS: list[bytes] = _events()
#: What the server writes, in order: the events grouped, a few writes ending mid-line.
WRITES: list[bytes] = _writes(EVENTS)
#: Seconds the server waits before each write (30-50 ms; none before the first).
GAPS: list[float] = [0.0] + [0.030 + 0.005 * ((3 * i) % 5) for i in range(1, len(WRITES))]


async def _chat_completions(request: Request) -> StreamingResponse:
    await request.body()

    async def body() -> AsyncIterator[bytes]:
        for gap, data in zip(GAPS, WRITES):
            if gap:
                await asyncio.sleep(gap)
            yield data

    return StreamingResponse(
        body(),
        media_type="text/event-stream",
        headers={"cache-control": "no-cache", "x-request-id": "req_demo"},
    )


#: The loopback server: ``POST /v1/chat/completions`` streams `WRITES`.
APP = Starlette(routes=[Route("/v1/chat/completions", _chat_completions, methods=["POST"])])
