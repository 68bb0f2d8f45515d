"""``a2a``: Google's Agent2Agent protocol streamed over SSE (``message/stream``,
``tasks/resubscribe``): every event is a JSON-RPC 2.0 response to the one request, its ``result``
one of ``task``, ``message``, ``status-update`` or ``artifact-update`` (``kind``).

The text is the agent's: the text parts of the agent's messages (a ``message`` result, a
``status-update``'s or a ``task``'s ``status.message``) and of the artifacts, in order. A
status-update's ``state`` is the finish reason; ``final: true``, a ``message`` result or a
terminal state (completed, failed, canceled, rejected) ends the stream. A JSON-RPC ``error`` is
the stream's error. Unlike MCP, every event answers the same request id: that is no error here.
"""

from __future__ import annotations

from typing import Any

import orjson

from ..store.cassette import Cassette
from . import Protocol
from . import synthesis as syn
from .base import JSON, Event, Fold, HTTPErrorBody, StreamError, error_of, obj, seq, sse_json, string

__all__ = ["PROTOCOL", "URL", "synthesize"]

URL = "http://localhost:9999/"
_KINDS = frozenset({"task", "message", "status-update", "artifact-update"})
_TERMINAL = frozenset({"completed", "failed", "canceled", "rejected"})
# JSON-RPC and A2A error codes: HTTP status -> (code, message)
_HTTP = {
    400: (-32600, "Request payload validation error"),
    404: (-32001, "Task not found"),
    405: (-32601, "Method not found"),
    500: (-32603, "Internal error"),
}


class _A2AFold(Fold):
    """A2A JSON-RPC results: agent text from messages, status messages and artifacts."""

    protocol = "a2a"

    def __init__(self) -> None:
        super().__init__()
        self._part = 0  # the position of the next text piece

    def feed(self, event: Event) -> None:
        message = self.json_object(self.sse(event).data)
        if message.get("jsonrpc") != "2.0":
            raise self.fail("not a JSON-RPC 2.0 message")
        if message.get("error") is not None:
            self.result.error = error_of(message["error"])
            self.result.complete = True
            return
        result = obj(message.get("result"))
        kind = string(result.get("kind"))
        self.choice(0)
        if kind in ("status-update", "task"):
            self.result.id = self.result.id or string(result.get("taskId") or result.get("id"))
            status = obj(result.get("status"))
            self.agent_text(obj(status.get("message")))
            state = string(status.get("state"))
            if state:
                self.choice(0).finish_reason = state
            if result.get("final") is True or state in _TERMINAL:
                self.result.complete = True
        elif kind == "message":
            self.agent_text(result)
            self.result.complete = True
        elif kind == "artifact-update":
            self.parts(obj(result.get("artifact")))
            if result.get("lastChunk") is True and self.choice(0).finish_reason in _TERMINAL:
                self.result.complete = True

    def agent_text(self, message: JSON) -> None:
        if message.get("role") == "agent":
            self.parts(message)

    def parts(self, holder: JSON) -> None:
        for part in seq(holder.get("parts")):
            part = obj(part)
            if part.get("kind") == "text" or ("text" in part and "kind" not in part):
                self.add("text", string(part.get("text")), key=(self._part, 0))
                self._part += 1


def _error(code: int, message: str, request_id: Any, newline: str, *, sse: bool) -> bytes:
    payload = orjson.dumps({"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}})
    return b"data: " + payload + (newline * 2).encode() if sse else payload


def error_event(error: StreamError) -> bytes:
    """A JSON-RPC error response as an SSE event, with the id of the request it answers (null when
    unknown): the A2A client raises it as the call's error."""
    return _error(-32603, error.message, error.request_id, error.newline, sse=True)


def http_error(status: int, message: str | None) -> HTTPErrorBody:
    """A JSON-RPC error body with a null id, as an A2A server answers a request it cannot serve."""
    code, text = _HTTP.get(status, (-32603 if status >= 500 else -32600, f"HTTP {status}"))
    return HTTPErrorBody(
        orjson.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message or text}})
    )


def _telling(event: Any) -> bool:
    payload = sse_json(event)
    return payload.get("jsonrpc") == "2.0" and obj(payload.get("result")).get("kind") in _KINDS


def synthesize(
    text: str = "",
    *,
    finish_reason: str | None = None,
    chunk_size: int = 8,
    gap: float = 0.03,
    first_token: float = 0.25,
    seed: int = 0,
    prompt: str = syn.DEFAULT_PROMPT,
    url: str | None = None,
) -> Cassette:
    """A ``message/stream`` answer: the task submitted, working, the agent's text as artifact
    chunks of about ``chunk_size`` characters, then the final status (``finish_reason``, default
    ``completed``)."""
    syn.check_timing(chunk_size, gap, first_token)
    rng = syn.Rng(seed)
    request_id, task, context = rng.token(8), rng.token(12), rng.token(12)
    artifact = rng.token(10)

    def event(result: JSON) -> bytes:
        return syn.sse_event({"jsonrpc": "2.0", "id": request_id, "result": result})

    def status(state: str, final: bool = False) -> JSON:
        return {
            "kind": "status-update",
            "taskId": task,
            "contextId": context,
            "status": {"state": state},
            "final": final,
        }

    events = [
        event(
            {
                "kind": "task",
                "id": task,
                "contextId": context,
                "status": {"state": "submitted"},
                "history": [],
            }
        ),
        event(status("working")),
    ]
    pieces = syn.pieces(text, chunk_size, rng.pieces)
    for k, piece in enumerate(pieces):
        events.append(
            event(
                {
                    "kind": "artifact-update",
                    "taskId": task,
                    "contextId": context,
                    "append": k > 0,
                    "lastChunk": k == len(pieces) - 1,
                    "artifact": {"artifactId": artifact, "parts": [{"kind": "text", "text": piece}]},
                }
            )
        )
    events.append(event(status(finish_reason or "completed", final=True)))
    chunks, times = syn.schedule(events, rng.writes, first_token=first_token, gap=gap)
    body: JSON = {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "message/stream",
        "params": {
            "message": {
                "role": "user",
                "kind": "message",
                "messageId": rng.token(12),
                "parts": [{"kind": "text", "text": prompt}],
            }
        },
    }
    return syn.one_interaction(url or URL, body, chunks, times, content_type="text/event-stream", headers={})


PROTOCOL = Protocol(
    name="a2a",
    framing="sse",
    fold=_A2AFold,
    error_event=error_event,
    http_error=http_error,
    event=_telling,
    synthesize=synthesize,
)
"""The `a2a` protocol, as registered in `ssemock.protocols`."""
