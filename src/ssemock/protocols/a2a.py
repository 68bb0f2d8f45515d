"""``a2a``: Google's Agent2Agent protocol streamed over SSE, in its three shapes:

- v0.3 JSON-RPC (``message/stream``, ``tasks/resubscribe``): every event is a JSON-RPC 2.0
  response to the one request, its ``result`` one of ``task``, ``message``, ``status-update`` or
  ``artifact-update`` (``kind``);
- 1.0 JSON-RPC (``SendStreamingMessage``, ``SubscribeToTask``): the same responses, the
  ``result`` a ``StreamResponse``: one member ``task``, ``message``, ``statusUpdate`` or
  ``artifactUpdate`` holding the event (protobuf JSON: ``TASK_STATE_WORKING``, ``ROLE_AGENT``,
  parts without ``kind``);
- 1.0 HTTP+JSON (``POST /message:stream``, ``GET``/``POST /tasks/{id}:subscribe``): each event
  is the bare ``StreamResponse``; an error is an ``event: error`` whose data is a
  ``google.rpc.Status`` (``{"error": {"code", "status", "message", "details"}}``).

The text is the agent's: the text parts of the agent's messages (a ``message`` result, a
status update's or a task's ``status.message``) and of the artifacts, in order. A status's
``state``, as sent, is the finish reason; ``final: true`` (v0.3), a ``message`` or a state that
ends the task's stream ends the stream: completed, failed, canceled, rejected, and, in 1.0,
input-required (a2a-sdk's server closes the stream there). A JSON-RPC ``error`` (or an HTTP+JSON
error event) is the stream's error. Unlike MCP, every event answers the same request id: that
is no error here.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from ..framing.sse import decode as decode_sse
from ..store.cassette import Cassette
from . import Protocol, _path, jsonrpc_ids
from . import synthesis as syn
from .base import JSON, Event, Fold, HTTPErrorBody, StreamError, error_of, obj, seq, sse_json, string

__all__ = ["PROTOCOL", "URL", "stream_response", "synthesize"]

URL = "http://localhost:9999/"
_KINDS = frozenset({"task", "message", "status-update", "artifact-update"})
# 1.0's StreamResponse members -> the v0.3 kind of the event each holds
_MEMBERS = {
    "task": "task",
    "message": "message",
    "statusUpdate": "status-update",
    "artifactUpdate": "artifact-update",
}
_TERMINAL = frozenset({"completed", "failed", "canceled", "rejected"})
# 1.0 has no ``final``: a2a-sdk's server ends a stream on these states (its EventConsumer)
_ENDS_1_0 = _TERMINAL | {"input-required"}
_ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo"
_REST = re.compile(r"/(?:message:stream|tasks/[^/]+:subscribe)$")
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
        sse = self.sse(event)
        message = self.json_object(sse.data)
        if message.get("jsonrpc") == "2.0":
            if message.get("error") is not None:
                self.end_with(message["error"])
                return
            result = obj(message.get("result"))
        elif sse.event == "error" or ("error" in message and len(message) == 1):
            self.end_with(message.get("error", message))  # HTTP+JSON: a google.rpc.Status
            return
        elif stream_response(message):
            result = message
        else:
            raise self.fail("not a JSON-RPC 2.0 message nor an A2A 1.0 StreamResponse")
        kind, result, v1 = _event_of(result)
        self.choice(0)
        if kind in ("status-update", "task"):
            self.result.id = self.result.id or string(result.get("taskId") or result.get("id"))
            status = obj(result.get("status"))
            self.agent_text(obj(status.get("message")))
            state = string(status.get("state"))
            if state:
                self.choice(0).finish_reason = state
            ends = _ENDS_1_0 if v1 else _TERMINAL
            if result.get("final") is True or _state(state) in ends:
                self.result.complete = True
        elif kind == "message":
            self.agent_text(result)
            self.result.complete = True
        elif kind == "artifact-update":
            self.parts(obj(result.get("artifact")))
            finish = _state(self.choice(0).finish_reason or "")
            if result.get("lastChunk") is True and finish in _TERMINAL:
                self.result.complete = True

    def end_with(self, error: Any) -> None:
        self.result.error = error_of(error)
        self.result.complete = True

    def agent_text(self, message: JSON) -> None:
        if message.get("role") in ("agent", "ROLE_AGENT"):
            self.parts(message)

    def parts(self, holder: JSON) -> None:
        for part in seq(holder.get("parts")):
            part = obj(part)
            if part.get("kind") == "text" or ("text" in part and "kind" not in part):
                self.add("text", string(part.get("text")), key=(self._part, 0))
                self._part += 1


def stream_response(value: JSON) -> bool:
    """Whether a JSON object is an A2A 1.0 ``StreamResponse``: one member, ``task``, ``message``,
    ``statusUpdate`` or ``artifactUpdate``, holding an event of that type (a task's ``status``
    an object with a ``state``, unlike an MCP task's; a message's ``role`` a ``ROLE_`` name)."""
    if len(value) != 1:
        return False
    [(member, event)] = value.items()
    if member not in _MEMBERS or not isinstance(event, dict):
        return False
    if member == "message":
        return "messageId" in event and string(event.get("role")).startswith("ROLE_")
    if member == "artifactUpdate":
        return "taskId" in event and isinstance(event.get("artifact"), dict)
    return ("id" in event or "taskId" in event) and "state" in obj(event.get("status"))


def _event_of(result: JSON) -> tuple[str, JSON, bool]:
    """The event's v0.3 kind, the event itself and whether it came in 1.0's shape."""
    if "kind" in result or not stream_response(result):
        return string(result.get("kind")), result, False
    [(member, event)] = result.items()
    return _MEMBERS[member], obj(event), True


def _state(state: str) -> str:
    """A task state in v0.3's spelling (``TASK_STATE_INPUT_REQUIRED`` -> ``input-required``)."""
    return state.removeprefix("TASK_STATE_").lower().replace("_", "-")


def _error(code: int, message: str, request_id: Any, newline: str, *, sse: bool) -> bytes:
    payload = orjson.dumps({"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}})
    return b"data: " + payload + (newline * 2).encode() if sse else payload


def error_event(error: StreamError) -> bytes:
    """The stream's error in the shape the stream speaks (``error.before``): over HTTP+JSON an
    ``event: error`` holding a ``google.rpc.Status``, as a2a-sdk's server writes it; over
    JSON-RPC an error response with the id of the request it answers (the stream's own id when
    ``error.request_id`` is unknown, else null): the A2A client raises either as the call's error."""
    first = next(iter(decode_sse([error.before])), None) if error.before else None
    payload = sse_json(first) if first is not None else {}
    if first is not None and payload.get("jsonrpc") != "2.0":
        status = {
            "error": {
                "code": 500,
                "status": "INTERNAL",
                "message": error.message,
                "details": [{"@type": _ERROR_INFO, "reason": "INTERNAL_ERROR", "domain": "a2a-protocol.org"}],
            }
        }
        nl = error.newline
        return f"event: error{nl}data: ".encode() + orjson.dumps(status) + (nl * 2).encode()
    request_id = error.request_id if error.request_id is not None else payload.get("id")
    return _error(-32603, error.message, request_id, error.newline, sse=True)


def http_error(status: int, message: str | None) -> HTTPErrorBody:
    """A JSON-RPC error body with a null id, as an A2A server answers a request it cannot serve."""
    code, text = _HTTP.get(status, (-32603 if status >= 500 else -32600, f"HTTP {status}"))
    return HTTPErrorBody(
        orjson.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message or text}})
    )


def _telling(event: Any) -> bool:
    payload = sse_json(event)
    if payload.get("jsonrpc") == "2.0":
        result = obj(payload.get("result"))
        return result.get("kind") in _KINDS or stream_response(result)
    return stream_response(payload)


def _url(url: str) -> bool:
    """The HTTP+JSON binding's streaming routes (``/message:stream``, ``/tasks/{id}:subscribe``,
    under any tenant or base path)."""
    return _REST.search(_path(url)) is not None


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
    url=_url,
    client_ids=jsonrpc_ids.RULE,
    event=_telling,
    synthesize=synthesize,
)
"""The `a2a` protocol, as registered in `ssemock.protocols`."""
