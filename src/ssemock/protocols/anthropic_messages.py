"""Anthropic Messages (``anthropic.messages``): content blocks by index, typed deltas."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit

import orjson

from . import Protocol, _path
from .base import JSON, HTTPErrorBody, StreamError, TypedFold, error_of, obj, seq, string

__all__ = ["PROTOCOL"]


_TOOL_BLOCKS = ("tool_use", "server_tool_use")
# delta type -> the content block types it may extend
_BLOCK_DELTAS: dict[str, tuple[str, ...]] = {
    "text_delta": ("text",), "citations_delta": ("text",), "thinking_delta": ("thinking",),
    "signature_delta": ("thinking",), "input_json_delta": _TOOL_BLOCKS,
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


_EVENTS = frozenset({
    "message_start", "content_block_start", "content_block_delta", "content_block_stop",
    "message_delta", "message_stop",
})
_KINDS = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
          404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error",
          500: "api_error", 529: "overloaded_error"}


def error_event(error: StreamError) -> bytes:
    """``event: error`` with ``{"type": "error", "error": {type, message}}``."""
    nl = error.newline.encode()
    payload = {"type": "error", "error": {"type": error.kind, "message": error.message}}
    return b"event: error" + nl + b"data: " + orjson.dumps(payload) + nl + nl


def http_error(status: int, message: str | None) -> HTTPErrorBody:
    """``{"type": "error", "error": {type, message}}`` with the type Anthropic uses for ``status``."""
    kind = _KINDS.get(status, "api_error")
    return HTTPErrorBody(orjson.dumps({"type": "error", "error": {
        "type": kind, "message": message or kind.replace("_", " ")}}))


def _is_message_event(event: Any) -> bool:
    from .openai_chat import _sse_json

    return bool({getattr(event, "event", ""), string(_sse_json(event).get("type"))} & _EVENTS)


def _is_anthropic(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    return _path(url).endswith("/v1/messages") or host == "anthropic.com" or host.endswith(".anthropic.com")


PROTOCOL = Protocol(
    name="anthropic.messages", framing="sse", fold=_Anthropic, error_event=error_event,
    http_error=http_error, url=_is_anthropic, event=_is_message_event,
)
