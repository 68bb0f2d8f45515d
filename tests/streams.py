"""Realistic provider streams for tests, written as a server would: scripted writes and gaps."""

from __future__ import annotations

import json

TEXT = "こんにちは、世界！🌏 Streams survive."
TOOL_ARGS = '{"city": "東京", "unit": "celsius"}'


def _sse(obj: object, event: str | None = None) -> bytes:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(obj, ensure_ascii=False)}\n\n".encode()


def openai_chat_events(text: str = TEXT, args: str = TOOL_ARGS) -> list[bytes]:
    base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-test"}

    def chunk(delta: dict, finish: str | None = None) -> bytes:
        return _sse({**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})

    out = [chunk({"role": "assistant", "content": ""})]
    out += [chunk({"content": text[i : i + 4]}) for i in range(0, len(text), 4)]
    out.append(
        chunk(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": ""},
                    }
                ]
            }
        )
    )
    out += [
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": args[i : i + 7]}}]})
        for i in range(0, len(args), 7)
    ]
    out.append(chunk({}, "tool_calls"))
    out.append(b"data: [DONE]\n\n")
    return out


def anthropic_events(text: str = TEXT, args: str = TOOL_ARGS) -> list[bytes]:
    out = [
        _sse(
            {
                "type": "message_start",
                "message": {
                    "id": "msg_1",
                    "type": "message",
                    "role": "assistant",
                    "model": "claude-test",
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {"input_tokens": 10, "output_tokens": 1},
                },
            },
            "message_start",
        ),
        _sse(
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
            "content_block_start",
        ),
        b'event: ping\ndata: {"type": "ping"}\n\n',
    ]
    out += [
        _sse(
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": text[i : i + 5]},
            },
            "content_block_delta",
        )
        for i in range(0, len(text), 5)
    ]
    out.append(_sse({"type": "content_block_stop", "index": 0}, "content_block_stop"))
    out.append(
        _sse(
            {
                "type": "content_block_start",
                "index": 1,
                "content_block": {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}},
            },
            "content_block_start",
        )
    )
    out += [
        _sse(
            {
                "type": "content_block_delta",
                "index": 1,
                "delta": {"type": "input_json_delta", "partial_json": args[i : i + 6]},
            },
            "content_block_delta",
        )
        for i in range(0, len(args), 6)
    ]
    out.append(_sse({"type": "content_block_stop", "index": 1}, "content_block_stop"))
    out.append(
        _sse(
            {
                "type": "message_delta",
                "delta": {"stop_reason": "tool_use", "stop_sequence": None},
                "usage": {"output_tokens": 42},
            },
            "message_delta",
        )
    )
    out.append(_sse({"type": "message_stop"}, "message_stop"))
    return out


def writes(events: list[bytes], mid_line_every: int = 3) -> list[bytes]:
    """Group events into server writes, some cut mid-line, as real servers and proxies do."""
    body = b"".join(events)
    out, pos, k = [], 0, 0
    for e in events:
        end = pos + len(e)
        k += 1
        if k % mid_line_every == 0 and len(e) > 10:
            out.append(body[pos : pos + len(e) // 2])
            out.append(body[pos + len(e) // 2 : end])
        else:
            out.append(body[pos:end])
        pos = end
    # merge pairs so that writes are not always whole events
    return [b"".join(out[i : i + 2]) for i in range(0, len(out), 2)]
