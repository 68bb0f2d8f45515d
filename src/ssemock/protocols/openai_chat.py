"""OpenAI Chat Completions (``openai.chat``): ``chat.completion.chunk`` objects, ``data: [DONE]``.

Also every OpenAI-compatible server (Azure, OpenRouter, vLLM, DeepSeek, ...). Tool-call deltas
merge by their ``index``; a delta carrying a new ``id`` at an index already used starts a new call
(servers that stream every call at index 0), while a repeated id continues the call.
"""

from __future__ import annotations

from typing import Any

import orjson

from . import Protocol, _path
from .base import JSON, Event, Fold, HTTPErrorBody, StreamError, ToolCall, error_of, obj, seq, string

__all__ = ["PROTOCOL"]


class _OpenAIChat(Fold):
    """Chat Completions chunks: deltas per choice index, tool calls merged by their own index."""

    protocol = "openai.chat"

    def __init__(self) -> None:
        super().__init__()
        self._generation: dict[tuple[int, int], int] = {}  # (choice, index) -> calls started there - 1

    def feed(self, event: Event) -> None:
        data = self.sse(event).data
        if data == "[DONE]":
            self.result.complete = True
            return
        chunk = self.json_object(data)
        self.identify(chunk)
        if isinstance(chunk.get("usage"), dict):
            self.result.usage = chunk["usage"]
        if chunk.get("error") is not None:
            self.result.error = error_of(chunk["error"])
        for raw in seq(chunk.get("choices")):
            choice = obj(raw)
            index = self.need_int(choice, "index", "choice")
            delta = obj(choice.get("delta"))
            self.add("text", string(delta.get("content")), choice=index)
            self.add("refusal", string(delta.get("refusal")), choice=index)
            reasoning = delta.get("reasoning_content") or delta.get("reasoning")  # DeepSeek, vLLM
            self.add("thinking", string(reasoning), choice=index)
            for call in seq(delta.get("tool_calls")):
                self.tool_delta(index, obj(call))
            if choice.get("finish_reason") is not None:
                self.choice(index).finish_reason = choice["finish_reason"]

    def tool_delta(self, choice: int, delta: JSON) -> None:
        """Merge one tool-call delta: id, name and type are set once, arguments concatenated.

        A new id at an index whose call already has another id starts a new call there."""
        index = self.need_int(delta, "index", "tool call delta")
        function = obj(delta.get("function"))
        kind = string(delta.get("type")) or "function"
        call_id = string(delta.get("id"))
        generation = self._generation.get((choice, index), 0)
        current = self._tools.get((choice, (generation, index)))
        if current is not None and call_id and current.id and call_id != current.id:
            generation += 1
            self._generation[choice, index] = generation
        call = self.tool((generation, index), choice=choice, index=index, type=kind)
        call.id = call.id or call_id
        call.name = call.name or string(function.get("name"))
        call.arguments += string(function.get("arguments"))

_OPENAI_CODES = {429: "rate_limit_exceeded", 500: "server_error", 503: "server_error", 401: "invalid_api_key"}


def error_event(error: StreamError) -> bytes:
    """A ``data:`` event whose chunk is an ``error`` object (what OpenAI sends mid-stream)."""
    payload = {"error": {"message": error.message, "type": error.kind, "param": None, "code": None}}
    nl = error.newline.encode()
    return b"data: " + orjson.dumps(payload) + nl + nl


def http_error(status: int, message: str | None) -> HTTPErrorBody:
    """OpenAI's ``{"error": {message, type, param, code}}``."""
    kind = "requests" if status == 429 else "server_error" if status >= 500 else "invalid_request_error"
    return HTTPErrorBody(orjson.dumps({"error": {
        "message": message or f"ssemock http_error {status}", "type": kind, "param": None,
        "code": _OPENAI_CODES.get(status)}}))


def _is_chunk(event: Any) -> bool:
    payload = _sse_json(event)
    return payload.get("object") == "chat.completion.chunk" or "choices" in payload


def _sse_json(event: Any) -> JSON:
    """The JSON object an SSE event's data holds ({} when it is not one)."""
    data = getattr(event, "data", None)
    if not isinstance(data, str):
        return {}
    try:
        return obj(orjson.loads(data))
    except orjson.JSONDecodeError:
        return {}


PROTOCOL = Protocol(
    name="openai.chat", framing="sse", fold=_OpenAIChat, error_event=error_event, http_error=http_error,
    url=lambda url: _path(url).endswith("/chat/completions"), event=_is_chunk,
)
