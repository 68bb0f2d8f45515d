"""``anthropic.sessions``: the event stream of an Anthropic managed-agents session
(``GET /v1/sessions/{id}/events/stream``, beta ``managed-agents-2026-04-01``; the anthropic SDK's
``client.beta.sessions.events.stream(session_id)``).

A long-lived SSE stream: one ``event: <type>`` block per session event, its data the event's
JSON object with the same ``type`` (the SDK's ``BetaManagedAgentsStreamSessionEvents`` union:
``agent.message``, ``agent.tool_use``, ``session.status_running``, ``session.status_idle``,
``session.usage``, ...); ``event: ping`` keep-alives through the idle stretches while the agent
waits, which the SDK passes over; with ``event_deltas`` previews (``event_start``, then
``event_delta`` fragments) before the event they preview. The stream stays open across turns:
the client closes it.

The reference fold gives a [`SessionResult`][ssemock.protocols.anthropic_sessions.SessionResult]:
``text`` the agent messages' text blocks, the tool calls (agent, MCP and custom tool uses, their
``input`` as the arguments), the last status and its stop reason, the last usage snapshot, a
``session.error``'s error (an ``event: error`` block, which the SDK raises, too); ``complete``
once the session went idle or terminated (its turn ended). Each preview that no event concluded
stays in ``previews``, by the previewed event's id.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import orjson

from ..framing.sse import is_event
from ..store.cassette import Cassette
from . import Protocol, _path
from . import synthesis as syn
from .base import (
    JSON,
    Accumulated,
    Event,
    Fold,
    HTTPErrorBody,
    anthropic_error_body,
    anthropic_error_event,
    obj,
    seq,
    sse_json,
    string,
)

__all__ = ["PROTOCOL", "SessionResult", "synthesize"]

_STATUS = re.compile(r"^session\.status_(\w+)$")
_TOOL_USES = frozenset({"agent.tool_use", "agent.mcp_tool_use", "agent.custom_tool_use"})
_KINDS = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error"}
_KINDS |= {404: "not_found_error", 429: "rate_limit_error", 500: "api_error", 529: "overloaded_error"}


@dataclass
class SessionResult(Accumulated):
    """What a session's event stream spells (see the module)."""

    types: list[str] = field(default_factory=list)
    """The session events' types, in order (keep-alives left out)."""
    status: str = ""
    """The last status the session reported: ``running``, ``idle``, ``rescheduled``, ``terminated``."""
    stop_reason: str | None = None
    """Why the session went idle last (``end_turn``, ``requires_action``, ...)."""
    previews: dict[str, str] = field(default_factory=dict)
    """The text of each preview (``event_start`` / ``event_delta``) no event concluded, by event id."""

    def to_dict(self) -> JSON:
        """Plain JSON-able form."""
        return {
            **super().to_dict(),
            "types": list(self.types),
            "status": self.status,
            "stop_reason": self.stop_reason,
            "previews": dict(self.previews),
        }


class _SessionFold(Fold):
    protocol = "anthropic.sessions"
    result: SessionResult

    def __init__(self) -> None:
        super().__init__()
        self.result = SessionResult(self.protocol)
        self._messages = 0
        self._previews: dict[str, dict[int, str]] = {}

    def feed(self, event: Event) -> None:
        sse = self.sse(event)
        if sse.event == "ping" or not sse.data:
            return
        payload = self.json_object(sse.data)
        kind = string(payload.get("type")) or sse.event
        if sse.event == "error" or kind == "error":
            self.result.error = self.result.error or obj(payload.get("error")) or payload
            return
        self.result.types.append(kind)
        if kind == "agent.message":
            self._conclude(string(payload.get("id")))
            self._messages += 1
            for k, block in enumerate(seq(payload.get("content"))):
                if obj(block).get("type") == "text":
                    self.add("text", string(obj(block).get("text")), key=(self._messages, k))
        elif kind in _TOOL_USES:
            call = self.tool(string(payload.get("id")) or len(self.result.types))
            call.id, call.name = string(payload.get("id")), string(payload.get("name"))
            call.arguments = orjson.dumps(payload.get("input") or {}).decode()
        elif kind == "session.usage":
            self.result.usage = obj(payload.get("usage"))
        elif kind == "session.error":
            self.result.error = self.result.error or obj(payload.get("error"))
        elif kind == "event_start":
            self._previews.setdefault(string(obj(payload.get("event")).get("id")), {})
        elif kind == "event_delta":
            delta = obj(payload.get("delta"))
            given = delta.get("index")
            index = given if isinstance(given, int) else 0
            parts = self._previews.setdefault(string(payload.get("event_id")), {})
            parts[index] = parts.get(index, "") + string(obj(delta.get("content")).get("text"))
        elif found := _STATUS.match(kind):
            self.result.status = found.group(1)
            reason = obj(payload.get("stop_reason")).get("type")
            self.result.stop_reason = string(reason) if reason else None
            self.choice(0).finish_reason = self.result.stop_reason
        self._conclude(string(payload.get("id")))
        self.choice(0)

    def _conclude(self, event_id: str) -> None:
        self._previews.pop(event_id, None)

    def finish(self) -> Accumulated:
        self.result.previews = {
            k: "".join(v for _, v in sorted(p.items())) for k, p in self._previews.items()
        }
        self.result.complete = self.result.status in ("idle", "terminated")
        return super().finish()


error_event = anthropic_error_event
"""``event: error`` with ``{"type": "error", "error": {type, message}}``, as Anthropic's API
writes a mid-stream error (the SDK raises it)."""


def http_error(status: int, message: str | None) -> HTTPErrorBody:
    """Anthropic's error body for ``status`` (the sessions API has no 413 of its own)."""
    return anthropic_error_body(_KINDS.get(status, "api_error"), message)


_URL = re.compile(r"/v1/sessions/[^/]+/events/stream$")


def _is_session_stream(url: str) -> bool:
    return bool(_URL.search(_path(url)))


def _telling(event: Any) -> bool:
    if not is_event(event):
        return False
    kind = string(sse_json(event).get("type"))
    return kind.startswith(("session.status_", "agent.", "span.model_request")) and bool(
        sse_json(event).get("processed_at")
    )


URL = "https://api.anthropic.com/v1/sessions/sesn_test/events/stream"
"""Where a synthesized session stream is said to come from."""
_STAMP = "2026-11-01T12:00:00Z"


def synthesize(
    text: str = "",
    *,
    tool_calls: Any = (),
    usage: JSON | None = None,
    idle: float = 0.0,
    keepalive: float = 15.0,
    gap: float = 0.03,
    first_token: float = 0.05,
    seed: int = 0,
    url: str | None = None,
) -> Cassette:
    """One turn of a session's event stream: ``session.status_running``, then ``idle`` seconds in
    which only ``event: ping`` keep-alives come (one every ``keepalive`` seconds), the agent's
    message (``text``), its tool uses (``tool_calls``: ``{"name", "arguments"}``), a usage
    snapshot and ``session.status_idle`` (``end_turn``), each its own write ``gap`` seconds apart."""
    syn.check_timing(1, gap, first_token)
    if not (idle >= 0 and keepalive > 0):
        raise ValueError(
            f"idle must be >= 0 and keepalive > 0 seconds, got idle={idle}, keepalive={keepalive}"
        )
    rng = syn.Rng(seed)
    ident = f"sevt_{rng.ids.getrandbits(64):016x}"

    def event(kind: str, **fields: Any) -> bytes:
        return syn.sse_event({"type": kind, "id": f"{ident}_{kind}", "processed_at": _STAMP, **fields}, kind)

    ping = syn.sse_event({"type": "ping"}, "ping")
    at = first_token
    writes = [(at, event("session.status_running"))]
    beats = int(idle // keepalive)
    writes += [(at + keepalive * (k + 1), ping) for k in range(beats)]
    at += idle
    tail = [event("agent.message", content=[{"type": "text", "text": text}])]
    for call in syn.calls(list(tool_calls), rng, "sevt_tool_"):
        tail.append(
            syn.sse_event(
                {
                    "type": "agent.tool_use",
                    "id": call.id,
                    "name": call.name,
                    "input": call.value,
                    "processed_at": _STAMP,
                },
                "agent.tool_use",
            )
        )
    snapshot = usage if usage is not None else {"input_tokens": 12, "output_tokens": len(text.split())}
    tail.append(event("session.usage", usage=snapshot))
    tail.append(event("session.status_idle", stop_reason={"type": "end_turn"}))
    writes += [(at + gap * (k + 1), chunk) for k, chunk in enumerate(tail)]
    cassette = Cassette()
    cassette.add(
        "GET",
        url or URL,
        [chunk for _, chunk in writes],
        times=[round(t, 4) for t, _ in writes],
        headers={"content-type": "text/event-stream", syn.SOURCE_HEADER: syn.SYNTH_SOURCE},
        request_headers={"accept": "text/event-stream", "anthropic-beta": "managed-agents-2026-04-01"},
    )
    return cassette


PROTOCOL = Protocol(
    name="anthropic.sessions",
    framing="sse",
    fold=_SessionFold,
    error_event=error_event,
    http_error=http_error,
    url=_is_session_stream,
    event=_telling,
    synthesize=synthesize,
)
"""The `anthropic.sessions` protocol, as registered in `ssemock.protocols`."""
