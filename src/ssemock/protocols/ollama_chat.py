"""Ollama (``ollama.chat``): JSON lines from ``/api/chat`` and ``/api/generate``."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from ..store.cassette import Cassette
from . import Protocol, _path
from . import synthesis as syn
from .base import JSON, Event, Fold, HTTPErrorBody, StreamError, error_of, obj, seq, string

__all__ = ["PROTOCOL", "URL", "synthesize"]


_OLLAMA_COUNTERS = (
    "prompt_eval_count",
    "eval_count",
    "total_duration",
    "load_duration",
    "prompt_eval_duration",
    "eval_duration",
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
                    "completion_tokens": counters.get("eval_count"),
                    **counters,
                }


def error_event(error: StreamError) -> bytes:
    """One JSON line ``{"error": "message"}`` (what the server writes when a stream fails)."""
    return orjson.dumps({"error": error.message}) + error.newline.encode()


def http_error(status: int, message: str | None) -> HTTPErrorBody:
    """``{"error": "message"}``."""
    return HTTPErrorBody(orjson.dumps({"error": message or f"ssemock http_error {status}"}))


def _is_line(event: Any) -> bool:
    """An Ollama line (or a compatible server's); never Cohere v1's, whose ``stream-end`` has a
    ``response`` too but every line an ``is_finished``."""
    return (
        isinstance(event, Mapping)
        and "is_finished" not in event
        and any(k in event for k in ("done", "created_at", "message", "response"))
    )


URL = "http://localhost:11434/api/chat"

# -- synthesizer ---------------------------------------------------------------------------------


def synthesize(
    text: str = "",
    *,
    tool_calls: Sequence[syn.ToolCallSpec] = (),
    thinking: str | None = None,
    usage: Mapping[str, Any] | None = None,
    finish_reason: str | None = None,
    model: str = "llama3.2",
    chunk_size: int = 4,
    gap: float = 0.03,
    first_token: float = 0.25,
    seed: int = 0,
    prompt: str = syn.DEFAULT_PROMPT,
    url: str | None = None,
) -> Cassette:
    """An Ollama ``/api/chat`` stream: one JSON object per line (``application/x-ndjson``),
    ``message.thinking`` then ``message.content`` fragments, tool calls whole in one line
    (arguments as an object), and a last line with ``"done": true``, ``done_reason`` and the
    counters (``usage``: Ollama's ``prompt_eval_count``, ``eval_count``, durations)."""
    syn.check_timing(chunk_size, gap, first_token)
    rng = syn.Rng(seed)
    calls = syn.calls(tool_calls, rng, "call_", id_size=8)
    for call in calls:
        if not isinstance(call.value, dict):
            raise ValueError(
                f"Ollama tool call arguments are a JSON object, got {call.value!r} for {call.name!r}"
            )
    lines: list[bytes] = []
    ms = 0

    def line(message: JSON, **extra: Any) -> None:
        nonlocal ms
        ms += 23
        stamp = f"2026-01-01T00:00:{ms // 1000:02d}.{ms % 1000:03d}{rng.ids.randrange(10**6):06d}Z"
        obj = {
            "model": model,
            "created_at": stamp,
            "message": {"role": "assistant", "content": "", **message},
            **extra,
        }
        lines.append(syn.compact(obj).encode() + b"\n")

    count = 0
    for piece in syn.pieces(thinking or "", chunk_size, rng.pieces):
        line({"thinking": piece}, done=False)
        count += 1
    for piece in syn.pieces(text, chunk_size, rng.pieces):
        line({"content": piece}, done=False)
        count += 1
    if calls:
        line(
            {
                "tool_calls": [
                    {"id": c.id, "function": {"index": k, "name": c.name, "arguments": c.value}}
                    for k, c in enumerate(calls)
                ]
            },
            done=False,
        )
        count += 1
    counters: JSON = (
        dict(usage)
        if usage is not None
        else {
            "total_duration": 1_480_000_000 + 25_000_000 * count,
            "load_duration": 12_500_000,
            "prompt_eval_count": 8 + len(prompt) // 4,
            "prompt_eval_duration": 110_000_000,
            "eval_count": max(count, 1),
            "eval_duration": 25_000_000 * max(count, 1),
        }
    )
    line({}, done=True, done_reason=finish_reason or "stop", **counters)
    chunks, times = syn.schedule(lines, rng.writes, first_token=first_token, gap=gap)
    body: JSON = {"model": model, "messages": syn.user(prompt), "stream": True}
    if thinking is not None:
        body["think"] = True
    if calls:
        body["tools"] = [{"type": "function", "function": tool} for tool in syn.tools(calls).values()]
    return syn.one_interaction(
        url or URL, body, chunks, times, content_type="application/x-ndjson", headers={}
    )


PROTOCOL = Protocol(
    name="ollama.chat",
    framing="ndjson",
    fold=_Ollama,
    error_event=error_event,
    http_error=http_error,
    url=lambda url: _path(url).endswith(("/api/chat", "/api/generate")),
    content_type="application/x-ndjson".__eq__,
    event=_is_line,
    synthesize=synthesize,
)
