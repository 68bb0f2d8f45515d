"""Cohere v1 chat streams (``cohere.v1``): ``POST /v1/chat`` with ``stream: true``.

JSON lines (``application/stream+json``), each an object with ``event_type`` and ``is_finished``:
``stream-start`` (``generation_id``); ``text-generation`` (``text``, the answer's next piece);
``tool-calls-chunk`` (``tool_call_delta``: ``index``, ``name``, ``parameters`` as JSON text in
fragments; or ``text``, the model's plan before its tool calls, folded as ``thinking``);
``tool-calls-generation`` (the whole ``tool_calls``, ``[{name, parameters}]``, and the plan as
``text``); ``citation-generation``; ``search-queries-generation`` / ``search-results`` /
``debug`` (skipped); ``stream-end`` (``is_finished: true``, ``finish_reason`` ``COMPLETE``,
``MAX_TOKENS``, ``ERROR``, ``ERROR_TOXIC``, ``ERROR_LIMIT``, and ``response``: the whole
non-streamed answer, whose ``meta`` carries the token counts). v1 tool calls have no id.

A stream that fails ends with a ``stream-end`` whose ``finish_reason`` is ``ERROR``; v1 has no
error field, so ssemock's error event carries the message in the response's ``meta.warnings``
(which the SDK keeps). HTTP errors are ``{"message": ...}``.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

import orjson

from ..store.cassette import Cassette
from . import Protocol, _path
from . import synthesis as syn
from .base import JSON, Event, Fold, HTTPErrorBody, StreamError, cohere_stream, cohere_usage, obj, seq, string

__all__ = ["API_URL", "PROTOCOL", "synthesize"]

API_URL = "https://api.cohere.com/v1/chat"
CONTENT_TYPE = "application/stream+json"

_EVENTS = frozenset(
    {
        "stream-start",
        "search-queries-generation",
        "search-results",
        "text-generation",
        "citation-generation",
        "tool-calls-chunk",
        "tool-calls-generation",
        "stream-end",
        "debug",
    }
)


class _CohereV1(Fold):
    """Cohere v1 lines: text pieces, tool calls by chunk (else whole), the end's response."""

    protocol = "cohere.v1"

    def __init__(self) -> None:
        super().__init__()
        self._chunked = False  # tool calls arrived as tool-calls-chunk deltas
        self._planned = False  # the plan arrived in tool-calls-chunk pieces

    def feed(self, event: Event) -> None:
        if not isinstance(event, Mapping):
            raise self.fail(f"expected a parsed JSON line (dict), got {type(event).__name__}")
        kind = event.get("event_type")
        if not isinstance(kind, str):
            raise self.fail("a line without an event_type")
        self.choice(0)
        match kind:
            case "stream-start":
                self.result.id = self.result.id or string(event.get("generation_id"))
            case "text-generation":
                self.add("text", string(event.get("text")))
            case "tool-calls-chunk":
                self._planned = self._planned or bool(string(event.get("text")))
                self.add("thinking", string(event.get("text")))
                delta = obj(event.get("tool_call_delta"))
                if "index" in delta:
                    self._chunked = True
                    call = self.tool(self.need_int(delta, "index", kind))
                    call.name = call.name or string(delta.get("name"))
                    call.arguments += string(delta.get("parameters"))
            case "tool-calls-generation":
                if not self._planned:
                    self.add("thinking", string(event.get("text")))
                self._whole(event.get("tool_calls"))
            case "citation-generation":
                self.result.citations.extend(seq(event.get("citations")))
            case "stream-end":
                self._end(event)

    def _whole(self, tool_calls: Any) -> None:
        """Tool calls given whole (``{name, parameters}``), unless their chunks came first."""
        if self._chunked or self._tools:
            return
        for k, raw in enumerate(seq(tool_calls)):
            call = self.tool(k)
            call.name = string(obj(raw).get("name"))
            call.arguments = syn.compact(obj(raw).get("parameters") or {})

    def _end(self, event: Mapping[str, Any]) -> None:
        response = obj(event.get("response"))
        reason = string(event.get("finish_reason")) or string(response.get("finish_reason"))
        self.choice(0).finish_reason = reason or None
        self.result.id = self.result.id or string(response.get("generation_id"))
        self._whole(response.get("tool_calls"))
        meta = obj(response.get("meta"))
        usage = {k: meta[k] for k in ("billed_units", "tokens") if isinstance(meta.get(k), dict)}
        self.result.usage = usage or None
        if reason == "ERROR":
            warnings = [w for w in seq(meta.get("warnings")) if isinstance(w, str)]
            self.result.error = {"message": "; ".join(warnings) or reason}
        self.result.complete = True


def _line(payload: JSON, newline: str = "\n") -> bytes:
    return syn.compact(payload).encode() + newline.encode()


def error_event(error: StreamError) -> bytes:
    """``stream-end`` with ``finish_reason: ERROR``, the message in ``response.meta.warnings``."""
    response = {"text": "", "finish_reason": "ERROR", "meta": {"warnings": [error.message]}}
    return _line(
        {"is_finished": True, "event_type": "stream-end", "finish_reason": "ERROR", "response": response},
        error.newline,
    )


def http_error(status: int, message: str | None) -> HTTPErrorBody:
    """``{"message": ...}``."""
    return HTTPErrorBody(orjson.dumps({"message": message or f"ssemock http_error {status}"}))


def _is_v1_chat(url: str) -> bool:
    """Cohere's own ``/v1/chat`` (Writer's API has one too, in SSE): elsewhere the lines decide."""
    return _path(url).endswith("/v1/chat") and "cohere" in urlsplit(url).netloc


def _is_v1_line(event: Any) -> bool:
    return isinstance(event, Mapping) and "is_finished" in event and event.get("event_type") in _EVENTS


# -- synthesizer ---------------------------------------------------------------------------------


def synthesize(
    text: str = "",
    *,
    tool_calls: Sequence[syn.ToolCallSpec] = (),
    tool_plan: str | None = None,
    usage: Mapping[str, Any] | None = None,
    finish_reason: str | None = None,
    error: str | None = None,
    model: str = "command-r-plus",
    chunk_size: int = 4,
    gap: float = 0.03,
    first_token: float = 0.3,
    seed: int = 0,
    prompt: str = "Say hello.",
    url: str | None = None,
) -> Cassette:
    """A Cohere v1 chat stream: ``stream-start``, the text in ``text-generation`` pieces, the
    ``tool_plan`` and tool calls in ``tool-calls-chunk`` fragments then ``tool-calls-generation``,
    and ``stream-end`` with ``finish_reason`` (``COMPLETE``; with calls too) and the whole
    response (``usage``: its ``meta`` counts); ``error``: the stream fails after the text."""
    syn.check_timing(chunk_size, gap, first_token)
    rng = syn.Rng(seed)
    calls = syn.calls(tool_calls, rng, "")
    generation = str(uuid.UUID(int=rng.ids.getrandbits(128)))
    lines = [_line({"is_finished": False, "event_type": "stream-start", "generation_id": generation})]
    count = 0
    for piece in syn.pieces(text, chunk_size, rng.pieces):
        count += 1
        lines.append(_line({"is_finished": False, "event_type": "text-generation", "text": piece}))
    plan = tool_plan or ""
    for piece in syn.pieces(plan, chunk_size, rng.pieces):
        lines.append(
            _line(
                {"is_finished": False, "event_type": "tool-calls-chunk", "text": piece, "tool_call_delta": {}}
            )
        )
    for k, call in enumerate(calls):
        head = {"index": k, "name": call.name}
        lines.append(_line({"is_finished": False, "event_type": "tool-calls-chunk", "tool_call_delta": head}))
        for piece in syn.pieces(call.text, 5, rng.pieces):
            count += 1
            delta = {"index": k, "parameters": piece}
            lines.append(
                _line({"is_finished": False, "event_type": "tool-calls-chunk", "tool_call_delta": delta})
            )
    whole = [{"name": c.name, "parameters": c.value} for c in calls]
    if calls:
        lines.append(
            _line(
                {
                    "is_finished": False,
                    "event_type": "tool-calls-generation",
                    "text": plan,
                    "tool_calls": whole,
                }
            )
        )
    if error is not None:
        lines.append(error_event(StreamError("server_error", error, framing="ndjson")))
    else:
        meta = dict(usage) if usage is not None else cohere_usage(prompt, count)
        reason = finish_reason or "COMPLETE"
        response: JSON = {
            "response_id": str(uuid.UUID(int=rng.ids.getrandbits(128))),
            "text": text,
            "generation_id": generation,
            "chat_history": [
                {"role": "USER", "message": prompt},
                {"role": "CHATBOT", "message": text, **({"tool_calls": whole} if calls else {})},
            ],
            **({"tool_calls": whole} if calls else {}),
            "finish_reason": reason,
            "meta": {"api_version": {"version": "1"}, **meta},
        }
        lines.append(
            _line(
                {
                    "is_finished": True,
                    "event_type": "stream-end",
                    "response": response,
                    "finish_reason": reason,
                }
            )
        )
    chunks, times = syn.schedule(lines, rng.writes, first_token=first_token, gap=gap)
    body: JSON = {"message": prompt, "model": model, "stream": True}
    if calls:
        body["tools"] = [
            {
                "name": tool["name"],
                "description": tool["description"],
                "parameter_definitions": {
                    name: {"type": spec.get("type", "object"), "required": True}
                    for name, spec in obj(tool["parameters"].get("properties")).items()
                },
            }
            for tool in syn.tools(calls).values()
        ]
    return syn.one_interaction(
        url or API_URL, body, chunks, times, content_type=CONTENT_TYPE, headers={"num_tokens": str(count)}
    )


def sdk_request(base_url: str, interaction: Any) -> bool:
    """Stream the interaction's request through cohere's v1 ``Client.chat_stream``."""
    import cohere

    return cohere_stream(cohere.Client(api_key="test-key-0000", base_url=base_url), interaction)


PROTOCOL = Protocol(
    name="cohere.v1",
    framing="ndjson",
    fold=_CohereV1,
    error_event=error_event,
    http_error=http_error,
    url=_is_v1_chat,
    event=_is_v1_line,
    synthesize=synthesize,
    sdk_request=sdk_request,
)
"""The `cohere.v1` protocol, as registered in `ssemock.protocols`."""
