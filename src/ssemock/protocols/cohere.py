"""Cohere v2 chat streams (``cohere.chat``): ``POST /v2/chat`` with ``stream: true``.

Typed SSE events (``event:`` and a ``type`` in the data): ``message-start``; text blocks
``content-start`` / ``content-delta`` / ``content-end`` by ``index``; ``tool-plan-delta`` (the
model's plan before tool calls, folded as ``thinking``); ``tool-call-start`` (id, name, first
arguments) / ``tool-call-delta`` (argument fragments) / ``tool-call-end`` by ``index``;
``citation-start``/``-end``; ``message-end`` with ``finish_reason`` (``COMPLETE``, ``MAX_TOKENS``,
``TOOL_CALL``, ``ERROR``, ...) and ``usage``. A stream that fails ends with a ``message-end`` whose
``finish_reason`` is ``ERROR`` and whose ``delta.error`` says why: Cohere's error event (the SDK
hands it to the application; it raises nothing). HTTP errors are ``{"id", "message"}``.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from . import Protocol, _path
from . import synthesis as syn
from .base import (
    JSON,
    HTTPErrorBody,
    StreamError,
    TypedFold,
    cohere_stream,
    cohere_usage,
    obj,
    sse_json,
    string,
)

__all__ = ["API_URL", "PROTOCOL", "synthesize"]

API_URL = "https://api.cohere.com/v2/chat"

_EVENTS = frozenset(
    {
        "message-start",
        "content-start",
        "content-delta",
        "content-end",
        "tool-plan-delta",
        "tool-call-start",
        "tool-call-delta",
        "tool-call-end",
        "citation-start",
        "citation-end",
        "message-end",
    }
)


class _Cohere(TypedFold):
    """Cohere v2 events: text blocks and tool calls by index, the plan as thinking."""

    protocol = "cohere.chat"
    container = "content block"

    def on(self, kind: str, payload: JSON) -> None:
        message = obj(obj(payload.get("delta")).get("message"))
        match kind:
            case "message-start":
                self.result.id = self.result.id or string(payload.get("id"))
                self.choice(0)
            case "content-start":
                index = self.need_int(payload, "index", kind)
                content = obj(message.get("content"))
                self.open(index, string(content.get("type")) or "text")
                self.add("text", string(content.get("text")), key=(index, 0))
            case "content-delta":
                index = self.need_int(payload, "index", kind)
                self.expect(index, kind, ("text",))
                self.add("text", string(obj(message.get("content")).get("text")), key=(index, 0))
            case "content-end":
                self.expect(self.need_int(payload, "index", kind), kind)
            case "tool-plan-delta":
                self.add("thinking", string(message.get("tool_plan")), key=(0, 0))
            case "tool-call-start":
                index = self.need_int(payload, "index", kind)
                if index in self._calls:
                    raise self.fail(f"tool call {index} started twice")
                call_delta = obj(message.get("tool_calls"))
                function = obj(call_delta.get("function"))
                call = self.tool(index, index=index, type=string(call_delta.get("type")) or "function")
                self._calls.add(index)
                call.id, call.name = string(call_delta.get("id")), string(function.get("name"))
                call.arguments = string(function.get("arguments"))
            case "tool-call-delta" | "tool-call-end":
                index = self.need_int(payload, "index", kind)
                if index not in self._calls:
                    raise self.fail(f"{kind} for tool call {index}, which never started")
                function = obj(obj(message.get("tool_calls")).get("function"))
                self.tool(index).arguments += string(function.get("arguments"))
            case "citation-start":
                self.result.citations.append(obj(message.get("citations")))
            case "message-end":
                delta = obj(payload.get("delta"))
                self.choice(0).finish_reason = string(delta.get("finish_reason")) or None
                if isinstance(delta.get("usage"), dict):
                    self.result.usage = delta["usage"]
                if delta.get("error") is not None:
                    self.result.error = {"message": string(delta["error"]) or str(delta["error"])}
                self.result.complete = True

    def __init__(self) -> None:
        super().__init__()
        self._calls: set[int] = set()


def _sse(kind: str, payload: JSON, nl: bytes = b"\n") -> bytes:
    return b"event: " + kind.encode() + nl + b"data: " + orjson.dumps({"type": kind, **payload}) + nl + nl


def error_event(error: StreamError) -> bytes:
    """``message-end`` with ``finish_reason: ERROR`` and ``delta.error`` (how a Cohere stream fails)."""
    return _sse(
        "message-end", {"delta": {"finish_reason": "ERROR", "error": error.message}}, error.newline.encode()
    )


def http_error(status: int, message: str | None) -> HTTPErrorBody:
    """``{"id": ..., "message": ...}``."""
    return HTTPErrorBody(
        orjson.dumps({"id": str(uuid.UUID(int=status)), "message": message or f"ssemock http_error {status}"})
    )


def _is_cohere_event(event: Any) -> bool:
    return bool({getattr(event, "event", ""), string(sse_json(event).get("type"))} & _EVENTS)


# -- synthesizer ---------------------------------------------------------------------------------


def synthesize(
    text: str = "",
    *,
    tool_calls: Sequence[Mapping[str, Any]] = (),
    tool_plan: str | None = None,
    usage: Mapping[str, Any] | None = None,
    finish_reason: str | None = None,
    error: str | None = None,
    model: str = "command-r-plus-08-2024",
    chunk_size: int = 4,
    gap: float = 0.03,
    first_token: float = 0.3,
    seed: int = 0,
    prompt: str = "Say hello.",
    url: str | None = None,
) -> Any:
    """A Cohere v2 chat stream: ``message-start``, then the ``tool_plan`` (with tool calls), the
    text block and the tool calls (arguments in fragments), and ``message-end`` with
    ``finish_reason`` (``COMPLETE``, or ``TOOL_CALL`` with calls) and ``usage``; ``error``: the
    stream fails after the text with Cohere's ``message-end`` (``finish_reason: ERROR``)."""
    syn.check_timing(chunk_size, gap, first_token)
    rng = syn.Rng(seed)
    calls = syn.calls(tool_calls, rng, "", id_size=12)
    events = [
        _sse(
            "message-start",
            {
                "id": str(uuid.UUID(int=rng.ids.getrandbits(128))),
                "delta": {
                    "message": {
                        "role": "assistant",
                        "content": [],
                        "tool_plan": "",
                        "tool_calls": [],
                        "citations": [],
                    }
                },
            },
        )
    ]
    for piece in syn.pieces(tool_plan or "", chunk_size, rng.pieces):
        events.append(_sse("tool-plan-delta", {"delta": {"message": {"tool_plan": piece}}}))
    count = 0
    if text:
        events.append(
            _sse(
                "content-start", {"index": 0, "delta": {"message": {"content": {"type": "text", "text": ""}}}}
            )
        )
        for piece in syn.pieces(text, chunk_size, rng.pieces):
            count += 1
            events.append(
                _sse("content-delta", {"index": 0, "delta": {"message": {"content": {"text": piece}}}})
            )
        events.append(_sse("content-end", {"index": 0}))
    for k, call in enumerate(calls):
        call_id = call.id if tool_calls[k].get("id") else f"{call.name}_{call.id.lower()}"
        events.append(
            _sse(
                "tool-call-start",
                {
                    "index": k,
                    "delta": {
                        "message": {
                            "tool_calls": {
                                "id": call_id,
                                "type": "function",
                                "function": {"name": call.name, "arguments": ""},
                            }
                        }
                    },
                },
            )
        )
        for piece in syn.pieces(call.text, 5, rng.pieces):
            count += 1
            events.append(
                _sse(
                    "tool-call-delta",
                    {"index": k, "delta": {"message": {"tool_calls": {"function": {"arguments": piece}}}}},
                )
            )
        events.append(_sse("tool-call-end", {"index": k}))
    if error is not None:
        events.append(error_event(StreamError("server_error", error)))
    else:
        totals = dict(usage) if usage is not None else cohere_usage(prompt, count)
        reason = finish_reason or ("TOOL_CALL" if calls else "COMPLETE")
        events.append(_sse("message-end", {"delta": {"finish_reason": reason, "usage": totals}}))
    chunks, times = syn.schedule(events, rng.writes, first_token=first_token, gap=gap)
    body: JSON = {"model": model, "messages": [{"role": "user", "content": prompt}]}
    if calls:
        body["tools"] = [{"type": "function", "function": tool} for tool in syn.tools(calls).values()]
    body["stream"] = True
    return syn.one_interaction(
        url or API_URL,
        body,
        chunks,
        times,
        content_type="text/event-stream",
        headers={"x-api-warning": "ssemock synthesized", "num_tokens": str(count)},
    )


def sdk_request(base_url: str, interaction: Any) -> bool:
    """Stream the interaction's request through cohere's ``ClientV2.chat_stream``."""
    import cohere

    return cohere_stream(cohere.ClientV2(api_key="test-key-0000", base_url=base_url), interaction)


PROTOCOL = Protocol(
    name="cohere.chat",
    framing="sse",
    fold=_Cohere,
    error_event=error_event,
    http_error=http_error,
    url=lambda url: _path(url).endswith("/v2/chat"),
    event=_is_cohere_event,
    synthesize=synthesize,
    sdk_request=sdk_request,
)
