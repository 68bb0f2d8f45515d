"""OpenAI Responses (``openai.responses``): typed ``response.*`` events by ``output_index``."""

from __future__ import annotations

from typing import Any

import orjson

from . import Protocol, _path
from .base import JSON, Fold, HTTPErrorBody, StreamError, ToolCall, TypedFold, error_of, obj, string

__all__ = ["PROTOCOL"]


# text delta event -> (choice field, the part index field, the output item type it extends)
_RESPONSE_TEXT_DELTAS = {
    "response.output_text.delta": ("text", "content_index", "message"),
    "response.refusal.delta": ("refusal", "content_index", "message"),
    "response.reasoning_summary_text.delta": ("thinking", "summary_index", "reasoning"),
    "response.reasoning_text.delta": ("thinking", "content_index", "reasoning"),
}


class _Responses(TypedFold):
    """Responses API events: output items by output_index; function calls become tool calls.

    Deltas build each value; ``added``/``done`` events only fill what the deltas left empty.
    """

    protocol = "openai.responses"
    container = "output item"

    def on(self, kind: str, payload: JSON) -> None:
        if kind in _RESPONSE_TEXT_DELTAS:
            name, part, item_type = _RESPONSE_TEXT_DELTAS[kind]
            index = self.need_int(payload, "output_index", kind)
            self.expect(index, kind, (item_type,))
            key = (index, self.need_int(payload, part, kind))
            self.add(name, string(payload.get("delta")), key=key)
            return
        match kind:
            case "response.created" | "response.in_progress":
                self.identify(obj(payload.get("response")))
                self.choice(0)
            case "response.output_item.added":
                item = obj(payload.get("item"))
                index = self.need_int(payload, "output_index", kind)
                self.open(index, string(item.get("type")))
                if item.get("type") == "function_call":
                    _fill_call(self.tool(index), item)
            case "response.output_text.annotation.added":
                self.result.citations.append(payload.get("annotation"))
            case "response.function_call_arguments.delta":
                self.call(payload, kind).arguments += string(payload.get("delta"))
            case "response.function_call_arguments.done":
                _fill_call(self.call(payload, kind), payload)
            case "response.output_item.done":
                item = obj(payload.get("item"))
                if item.get("type") == "function_call":
                    _fill_call(self.call(payload, kind), item)
            case "response.completed" | "response.incomplete" | "response.failed":
                self.ended(obj(payload.get("response")))
            case "error":
                self.result.error = error_of(payload["error"]) if "error" in payload else {
                    k: v for k, v in payload.items() if k not in ("type", "sequence_number")
                }

    def call(self, payload: JSON, kind: str) -> ToolCall:
        """The function call at the event's output_index, which must have been added."""
        index = self.need_int(payload, "output_index", kind)
        self.expect(index, kind, ("function_call",))
        return self.tool(index)

    def ended(self, response: JSON) -> None:
        """A terminal response: usage, error, and why it ended (incomplete reason or status)."""
        self.identify(response)
        if isinstance(response.get("usage"), dict):
            self.result.usage = response["usage"]
        if response.get("error") is not None:
            self.result.error = error_of(response["error"])
        reason = obj(response.get("incomplete_details")).get("reason") or response.get("status")
        self.choice(0).finish_reason = string(reason) or None
        self.result.complete = True


def _fill_call(call: ToolCall, item: JSON) -> None:
    """Fill the fields of a Responses function call that are still empty."""
    call.id = call.id or string(item.get("call_id"))
    call.name = call.name or string(item.get("name"))
    call.arguments = call.arguments or string(item.get("arguments"))


def error_event(error: StreamError) -> bytes:
    """An ``error`` event, then ``response.failed`` carrying the same error (the stream ends)."""
    nl = error.newline.encode()
    first = {"type": "error", "code": error.kind, "message": error.message, "param": None}
    failed = {"type": "response.failed", "response": {
        "object": "response", "status": "failed", "error": {"code": error.kind, "message": error.message},
        "incomplete_details": None, "output": []}}
    return (b"event: error" + nl + b"data: " + orjson.dumps(first) + nl + nl
            + b"event: response.failed" + nl + b"data: " + orjson.dumps(failed) + nl + nl)


def _is_response_event(event: Any) -> bool:
    payload = _openai_chat._sse_json(event)
    kinds = (getattr(event, "event", ""), string(payload.get("type")))
    return any(kind.startswith("response.") for kind in kinds)


from . import openai_chat as _openai_chat  # noqa: E402  (its HTTP error body is OpenAI's too)

PROTOCOL = Protocol(
    name="openai.responses", framing="sse", fold=_Responses, error_event=error_event,
    http_error=_openai_chat.http_error, url=lambda url: _path(url).endswith("/responses"),
    event=_is_response_event,
)
