"""Anthropic Messages (``anthropic.messages``): content blocks by index, typed deltas."""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

from ..store.cassette import Cassette
from . import Protocol, _path
from . import synthesis as syn
from .base import (
    JSON,
    HTTPErrorBody,
    TypedFold,
    anthropic_error_body,
    anthropic_error_event,
    error_of,
    obj,
    seq,
    sse_json,
    string,
)

__all__ = ["PROTOCOL", "URL", "synthesize"]


_TOOL_BLOCKS = ("tool_use", "server_tool_use", "mcp_tool_use")
# delta type -> the content block types it may extend
_BLOCK_DELTAS: dict[str, tuple[str, ...]] = {
    "text_delta": ("text",),
    "citations_delta": ("text",),
    "thinking_delta": ("thinking",),
    "signature_delta": ("thinking",),
    "input_json_delta": _TOOL_BLOCKS,
}


class _Anthropic(TypedFold):
    """Messages API events: content blocks by index; text, thinking and tool input as deltas."""

    protocol = "anthropic.messages"
    container = "content block"

    def on(self, kind: str, payload: JSON) -> None:
        match kind:
            case "message_start":
                message = obj(payload.get("message"))
                self.identify(message)
                self.choice(0)
                if isinstance(message.get("usage"), dict):
                    self.result.usage = dict(message["usage"])
            case "content_block_start":
                self.block_start(self.need_int(payload, "index", kind), payload)
            case "content_block_delta":
                self.block_delta(self.need_int(payload, "index", kind), payload)
            case "content_block_stop":
                self.expect(self.need_int(payload, "index", kind), kind)
            case "message_delta":
                reason = obj(payload.get("delta")).get("stop_reason")
                if reason is not None:
                    self.choice(0).finish_reason = reason
                usage = {k: v for k, v in obj(payload.get("usage")).items() if v is not None}
                if usage:
                    self.result.usage = {**(self.result.usage or {}), **usage}
            case "message_stop":
                self.result.complete = True
            case "error":
                self.result.error = error_of(payload.get("error"))

    def block_start(self, index: int, payload: JSON) -> None:
        block = obj(payload.get("content_block"))
        kind = string(block.get("type"))
        self.open(index, kind)
        if kind in _TOOL_BLOCKS:
            call = self.tool(index, type=kind)
            call.id, call.name = string(block.get("id")), string(block.get("name"))
            call.arguments = json.dumps(block["input"]) if block.get("input") else ""
        elif kind in ("text", "thinking"):
            self.add(kind, string(block.get(kind)), key=(index, 0))
            self.result.citations.extend(seq(block.get("citations")))

    def block_delta(self, index: int, payload: JSON) -> None:
        delta = obj(payload.get("delta"))
        kind = string(delta.get("type"))
        self.expect(index, kind or "content_block_delta", _BLOCK_DELTAS.get(kind))
        match kind:
            case "text_delta" | "thinking_delta" | "signature_delta":
                name = kind.removesuffix("_delta")
                self.add(name, string(delta.get(name)), key=(index, 0))
            case "citations_delta":
                self.result.citations.append(delta.get("citation"))
            case "input_json_delta":
                self.tool(index).arguments += string(delta.get("partial_json"))


_EVENTS = frozenset(
    {
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    }
)
_KINDS = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


error_event = anthropic_error_event
"""``event: error`` with ``{"type": "error", "error": {type, message}}`` (the SDK raises it)."""


def http_error(status: int, message: str | None) -> HTTPErrorBody:
    """``{"type": "error", "error": {type, message}}`` with the type Anthropic uses for ``status``."""
    return anthropic_error_body(_KINDS.get(status, "api_error"), message)


def _is_message_event(event: Any) -> bool:
    return bool({getattr(event, "event", ""), string(sse_json(event).get("type"))} & _EVENTS)


def _is_anthropic(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    return _path(url).endswith("/v1/messages") or host == "anthropic.com" or host.endswith(".anthropic.com")


URL = "https://api.anthropic.com/v1/messages"

# -- synthesizer ---------------------------------------------------------------------------------

_ANTHROPIC_ERRORS = {
    "overloaded_error": "Overloaded",
    "api_error": "Internal server error",
    "rate_limit_error": "Rate limited",
}


def synthesize(
    text: str = "",
    *,
    tool_calls: Sequence[syn.ToolCallSpec] = (),
    thinking: str | None = None,
    signature: str | None = None,
    citations: Sequence[Mapping[str, Any]] | None = None,
    usage: Mapping[str, Any] | None = None,
    ping: bool | int = True,
    error: str | Mapping[str, Any] | None = None,
    finish_reason: str | None = None,
    model: str = "claude-sonnet-4-6",
    chunk_size: int = 4,
    gap: float = 0.03,
    first_token: float = 0.25,
    seed: int = 0,
    prompt: str = syn.DEFAULT_PROMPT,
    url: str | None = None,
) -> Cassette:
    """A streamed Messages API response: ``message_start``, content blocks (``thinking`` with
    ``thinking_delta`` and a ``signature_delta``, ``text`` with ``text_delta`` and
    ``citations_delta``, ``tool_use`` with ``input_json_delta``), ``message_delta`` (stop reason,
    output tokens) and ``message_stop``.

    ``usage``: ``{"input_tokens": ..., "output_tokens": ...}`` (message_start carries the input
    side and ``output_tokens: 1``, message_delta the final ``output_tokens``; merged they give
    ``usage`` back). ``ping``: True sends one ``ping`` after the first content_block_start, as the
    docs show; an int N also pings after every N events. ``error`` (``"overloaded_error"`` or
    ``{"type": ..., "message": ...}``): after the content deltas, an ``event: error`` ends the stream
    (no message_delta / message_stop). ``citations``: citation objects sent as ``citations_delta``
    at the start of the text block.
    """
    syn.check_timing(chunk_size, gap, first_token)
    rng = syn.Rng(seed)
    calls = syn.calls(tool_calls, rng, "toolu_01", spaced=True)
    message_id = f"msg_01{rng.token(22)}"
    events: list[bytes] = []

    def emit(kind: str, **fields: Any) -> None:
        events.append(syn.sse_event({"type": kind, **fields}, kind))

    deltas = 0
    if usage is not None and not isinstance(usage.get("output_tokens"), int):
        raise ValueError(f"anthropic usage needs an integer 'output_tokens', got {dict(usage)!r}")
    start_usage: JSON = (
        {**usage, "output_tokens": 1}
        if usage is not None
        else {
            "input_tokens": 8 + len(prompt) // 4,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "output_tokens": 1,
            "service_tier": "standard",
        }
    )
    emit(
        "message_start",
        message={
            "id": message_id,
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": start_usage,
        },
    )
    blocks: list[tuple[JSON, list[JSON]]] = []  # (content_block at start, its deltas)
    if thinking is not None:
        sig = signature if signature is not None else base64.b64encode(rng.ids.randbytes(96)).decode("ascii")
        thinking_deltas: list[JSON] = [
            {"type": "thinking_delta", "thinking": piece}
            for piece in syn.pieces(thinking, chunk_size, rng.pieces)
        ]
        blocks.append(
            (
                {"type": "thinking", "thinking": ""},
                [*thinking_deltas, {"type": "signature_delta", "signature": sig}],
            )
        )
    elif signature is not None:
        raise ValueError("a signature needs thinking (it signs the thinking block)")
    if text or citations:
        text_deltas: list[JSON] = [{"type": "citations_delta", "citation": dict(c)} for c in citations or ()]
        text_deltas += [
            {"type": "text_delta", "text": piece} for piece in syn.pieces(text, chunk_size, rng.pieces)
        ]
        start: JSON = {"type": "text", "text": ""}
        if citations:
            start["citations"] = []
        blocks.append((start, text_deltas))
    for call in calls:
        pieces = syn.pieces(call.text, 5, rng.pieces)
        blocks.append(
            (
                {"type": "tool_use", "id": call.id, "name": call.name, "input": {}},
                [{"type": "input_json_delta", "partial_json": p} for p in ["", *pieces]],
            )
        )
    pinged = False
    every = 0 if isinstance(ping, bool) else int(ping)
    since_ping = 0

    def maybe_ping() -> None:
        nonlocal since_ping
        since_ping += 1
        if every and since_ping >= every:
            emit("ping")
            since_ping = 0

    for index, (block, block_deltas) in enumerate(blocks):
        emit("content_block_start", index=index, content_block=block)
        if ping is not False and ping != 0 and not pinged:
            emit("ping")
            pinged = True
        for delta in block_deltas:
            emit("content_block_delta", index=index, delta=delta)
            deltas += 1
            maybe_ping()
        if error is not None and index == len(blocks) - 1:
            break
        emit("content_block_stop", index=index)
    if error is not None:
        err = (
            {"type": error, "message": _ANTHROPIC_ERRORS.get(error, error.replace("_", " "))}
            if isinstance(error, str)
            else dict(error)
        )
        emit("error", error=err)
    else:
        reason = finish_reason or ("tool_use" if calls else "end_turn")
        output_tokens = usage["output_tokens"] if usage is not None else max(deltas, 1)
        emit(
            "message_delta",
            delta={"stop_reason": reason, "stop_sequence": None},
            usage={"output_tokens": output_tokens},
        )
        emit("message_stop")
    chunks, times = syn.schedule(events, rng.writes, first_token=first_token, gap=gap)
    body: JSON = {
        "model": model,
        "max_tokens": 2048 if thinking is not None else 1024,
        "messages": syn.user(prompt),
        "stream": True,
    }
    if thinking is not None:
        body["thinking"] = {"type": "enabled", "budget_tokens": 1024}
    if calls:
        body["tools"] = [
            {"name": t["name"], "description": t["description"], "input_schema": t["parameters"]}
            for t in syn.tools(calls).values()
        ]
    return syn.one_interaction(
        url or URL,
        body,
        chunks,
        times,
        content_type="text/event-stream; charset=utf-8",
        # an organization id is a credential header: recordings hold it redacted
        headers={"anthropic-organization-id": "REDACTED", "request-id": f"req_011{rng.token(21)}"},
        request_headers={"anthropic-version": "2023-06-01"},
    )


PROTOCOL = Protocol(
    name="anthropic.messages",
    framing="sse",
    fold=_Anthropic,
    error_event=error_event,
    http_error=http_error,
    url=_is_anthropic,
    event=_is_message_event,
    synthesize=synthesize,
)
