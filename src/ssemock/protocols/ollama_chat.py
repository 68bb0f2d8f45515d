"""Ollama (``ollama.chat``): JSON lines from ``/api/chat`` and ``/api/generate``."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import orjson

from . import Protocol, _path
from .base import Event, Fold, HTTPErrorBody, StreamError, error_of, obj, seq, string

__all__ = ["PROTOCOL"]


_OLLAMA_COUNTERS = (
    "prompt_eval_count", "eval_count", "total_duration", "load_duration",
    "prompt_eval_duration", "eval_duration",
)


class _Ollama(Fold):
    """Ollama JSON lines (/api/chat and /api/generate): content deltas, whole tool calls."""

    protocol = "ollama.chat"

    def feed(self, event: Event) -> None:
        if not isinstance(event, Mapping):
            raise self.fail(f"expected a parsed JSON line (dict), got {type(event).__name__}")
        self.identify(event)
        message = obj(event.get("message"))
        self.add("text", string(message.get("content")) + string(event.get("response")))
        self.add("thinking", string(message.get("thinking")) + string(event.get("thinking")))
        for raw in seq(message.get("tool_calls")):
            function = obj(obj(raw).get("function"))
            call = self.tool(len(self._tools))
            call.id, call.name = string(obj(raw).get("id")), string(function.get("name"))
            arguments = function.get("arguments", {})
            call.arguments = arguments if isinstance(arguments, str) else json.dumps(arguments)
        if event.get("error") is not None:
            self.result.error = error_of(event["error"])
        if event.get("done") is True:
            self.result.complete = True
            self.choice(0).finish_reason = string(event.get("done_reason")) or None
            counters = {key: event[key] for key in _OLLAMA_COUNTERS if key in event}
            if counters:
                self.result.usage = {
                    "prompt_tokens": counters.get("prompt_eval_count"),
                    "completion_tokens": counters.get("eval_count"), **counters,
                }


def error_event(error: StreamError) -> bytes:
    """One JSON line ``{"error": "message"}`` (what the server writes when a stream fails)."""
    return orjson.dumps({"error": error.message}) + error.newline.encode()


def http_error(status: int, message: str | None) -> HTTPErrorBody:
    """``{"error": "message"}``."""
    return HTTPErrorBody(orjson.dumps({"error": message or f"ssemock http_error {status}"}))


def _is_line(event: Any) -> bool:
    return isinstance(event, Mapping) and any(k in event for k in ("done", "created_at", "message", "response"))


PROTOCOL = Protocol(
    name="ollama.chat", framing="ndjson", fold=_Ollama, error_event=error_event, http_error=http_error,
    url=lambda url: _path(url).endswith(("/api/chat", "/api/generate")),
    content_type="application/x-ndjson".__eq__, event=_is_line,
)
