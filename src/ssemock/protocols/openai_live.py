"""OpenAI GPT-Live (``openai.live``): the server events of a ``/v1/live/sessions`` WebSocket.

Not the Realtime protocol: a session is one timeline, not a series of responses. The primary
socket (``client.live.connect()``) sends ``session.start`` and waits for ``session.started``; a
sideband (``client.live.sideband.connect(session_id=...)``, ``/live/sessions/{id}/attach``) and a
fork (``client.live.forks.connect(session_id=...)``, ``/live/sessions/{id}/fork``) speak the
same events. Each received message is one JSON event with its ``type``: what the model says
arrives as ``session.output_transcript.delta`` (text, with ``start_ms``/``end_ms`` on the session
timeline) and ``session.output_audio.delta`` (base64 audio; no ``event_id`` on the primary);
``session.delegation.created`` hands work to the client, to Responses or to Decisions; a
Responses backend's own stream arrives wrapped in ``response.event`` (its ``event``: a Responses
streaming event, function calls included); ``session.usage.updated`` and ``session.closed``
carry the cumulative audio usage; ``session.closed`` ends the session with its ``reason``;
``error`` events carry ``{"error": {type, code, message, param, client_event_id}}``.

The fold's result is a [`Spoken`][ssemock.protocols.messages.Spoken]: ``text`` and
``transcript`` are the output transcript deltas joined, ``audio`` the output audio decoded;
``tool_calls`` holds each delegation (``type="delegation"``, ``name`` its target) and each
function call of a delegated Responses stream, in arrival order; ``complete`` once
``session.closed`` arrived.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import orjson

from . import Protocol, _path
from . import synthesis as syn
from .base import (
    JSON,
    Event,
    MessageMatching,
    StreamError,
    ToolCall,
    error_of,
    obj,
    openai_error_body,
    string,
)
from .messages import Spoken, SpokenFold, audio_bytes, is_live_event, message, one_session, split

__all__ = ["CLIENT_MESSAGES", "PROTOCOL", "URL", "responses", "session_ids", "synthesize"]

URL = "wss://api.openai.com/v1/live/sessions"

_PATH = re.compile(r"/live/sessions(?:/[^/]+/(?:attach|fork))?$")
_NAMED = re.compile(r"/live/sessions/([^/]+)/")
_SESSIONS = re.compile(r"/live/sessions(?:/|$)")


class _Live(SpokenFold):
    """GPT-Live server events: output transcript and audio, delegations and the function calls
    of delegated Responses streams, usage; ``session.closed`` ends the session."""

    protocol = "openai.live"
    container = "delegation"

    def __init__(self) -> None:
        super().__init__()
        self._transcript: list[str] = []
        self._audio: list[bytes] = []
        self._arrived: dict[tuple[str, str], int] = {}  # (delegation or "delegation", id) -> arrival

    def feed(self, event: Event) -> None:
        payload = message(self, event)
        kind = string(payload.get("type"))
        if kind == "session.output_transcript.delta":
            delta = string(payload.get("delta"))
            self.add("text", delta, key=(0, len(self._transcript)))
            self._transcript.append(delta)
        elif kind == "session.output_audio.delta":
            self.choice(0)
            self._audio.append(audio_bytes(self, payload.get("delta"), f"{kind}'s delta"))
        elif kind in ("session.started", "session.updated"):
            self.identify(obj(payload.get("session")))
        elif kind == "session.delegation.created":
            delegation = obj(payload.get("delegation"))
            if not string(delegation.get("id")):
                raise self.fail(f"{kind} has no delegation id")
            call = self._call(("delegation", delegation["id"]), type="delegation")
            call.id, call.name = delegation["id"], string(delegation.get("target"))
        elif kind == "response.event":
            self._nested(obj(payload.get("event")), string(payload.get("delegation_id")))
        elif kind == "session.usage.updated" and isinstance(payload.get("usage"), dict):
            self.result.usage = payload["usage"]
        elif kind == "session.closed":
            self.identify(obj(payload.get("session")))
            if isinstance(payload.get("usage"), dict):
                self.result.usage = payload["usage"]
            self.choice(0).finish_reason = string(payload.get("reason")) or None
            self.result.complete = True
        elif kind == "error":
            self.result.error = error_of(payload.get("error", payload))

    def _call(self, key: tuple[str, str], *, type: str = "function") -> ToolCall:
        """The call under ``key``, kept in arrival order (the fold sorts its calls by key)."""
        arrived = self._arrived.setdefault(key, len(self._arrived))
        return self.tool((arrived, *key), type=type)

    def _nested(self, event: JSON, delegation: str) -> None:
        """One event of a delegated Responses stream: its function calls, keyed by item id."""
        kind = string(event.get("type"))
        if kind in ("response.output_item.added", "response.output_item.done"):
            item = obj(event.get("item"))
            if item.get("type") == "function_call" and string(item.get("id")):
                call = self._call((delegation, item["id"]))
                call.id = call.id or string(item.get("call_id"))
                call.name = call.name or string(item.get("name"))
                if kind.endswith(".done") or not call.arguments:
                    call.arguments = string(item.get("arguments")) or call.arguments
        elif kind == "response.function_call_arguments.delta" and string(event.get("item_id")):
            self._call((delegation, event["item_id"])).arguments += string(event.get("delta"))

    def finish(self) -> Spoken:
        super().finish()
        self.spoken.transcript = "".join(self._transcript)
        self.spoken.audio = b"".join(self._audio)
        return self.spoken


def _role(payload: JSON) -> tuple[str, str | None]:
    kind = string(payload.get("type"))
    if kind == "session.started":
        return "start", None
    if kind == "session.closed":
        return "end", None
    if kind == "error":
        return "notice", None
    return "in", None


def responses(events: Sequence[Event]) -> list[list[int]]:
    """The positions of each session's events in a connection's received messages: GPT-Live has
    no responses on the wire (its transcript deltas define no turns), so the result is the
    session, from ``session.started`` (or the first event, on a sideband attached late) to
    ``session.closed``; an ``error`` outside it stands alone."""
    return split(events, _role)


def error_event(error: StreamError) -> bytes:
    """The ``error`` server event, one message: ``{"type": "error", "event_id", "error": {type,
    code, message, param, client_event_id}}``."""
    kind = "server_error" if error.kind in ("server_error", "overloaded_error") else "invalid_request_error"
    payload = {
        "type": "error",
        "event_id": "event_ssemock_error",
        "error": {"type": kind, "code": error.kind, "message": error.message, "param": None},
    }
    return orjson.dumps(payload) + error.newline.encode()


def synthesize(
    text: str = "",
    *,
    tool_calls: Sequence[syn.ToolCallSpec] = (),
    usage: Mapping[str, Any] | None = None,
    model: str = "gpt-live-1",
    chunk_size: int = 4,
    gap: float = 0.03,
    first_token: float = 0.25,
    seed: int = 0,
    prompt: str = syn.DEFAULT_PROMPT,
    url: str | None = None,
) -> Any:
    """A primary GPT-Live session: the client's ``session.start`` and its spoken prompt
    (``session.input_audio.append``), ``session.started``, the prompt's input transcript; with
    ``tool_calls`` a ``session.delegation.created`` to Responses and its function calls wrapped in
    ``response.event``; the model's speech as audio deltas, each with its output transcript delta;
    ``session.usage.updated``; the client's ``session.close`` and ``session.closed``."""
    syn.check_timing(chunk_size, gap, first_token)
    rng = syn.Rng(seed)
    calls = syn.calls(tool_calls, rng, "call_")
    session_id = f"sess_{rng.token(20)}"
    timeline = syn.Timeline()
    send = timeline.send
    counter = iter(range(1, 1_000_000))

    def ms() -> int:
        return round(timeline.clock * 1000)

    def recv(kind: str, after: float, *, event_id: bool = True, **fields: Any) -> None:
        head = {"event_id": f"event_{rng.token(8)}{next(counter)}"} if event_id else {}
        timeline.recv(after, {"type": kind, **head, **fields})

    def pcm(characters: int) -> str:  # 1 ms of 24 kHz PCM16 a character
        return base64.b64encode(bytes(rng.pieces.randrange(256) for _ in range(48 * characters))).decode()

    audio = {"format": {"type": "audio/pcm", "rate": 24000}}
    send({"type": "session.start", "session": {"model": model, "audio": audio}}, 0.0)
    session = {"id": session_id, "expires_at": syn.CREATED + 3600, "model": model, "status": "active",
               "audio": {**audio, "output": {"voice": "marin"}}}  # fmt: skip
    recv("session.started", 0.05, session=session)
    send({"type": "session.input_audio.append", "audio": pcm(len(prompt))})
    start = ms()
    recv("session.input_transcript.delta", 0.02, delta=prompt, start_ms=start, end_ms=start + len(prompt))
    after = first_token
    if calls:
        delegation, response_id = f"dlg_{rng.token(16)}", f"resp_{rng.token(20)}"
        target = {"id": delegation, "target": "responses", "type": "delegation", "response_id": response_id}
        recv("session.delegation.created", after, delegation=target, offset_ms=ms())
        after = gap
        for index, call in enumerate(calls):
            item = {"id": f"fc_{rng.token(20)}", "type": "function_call", "status": "in_progress",
                    "call_id": call.id, "name": call.name, "arguments": ""}  # fmt: skip
            nested: list[JSON] = [{"type": "response.output_item.added", "output_index": index, "item": item}]
            nested += [
                {
                    "type": "response.function_call_arguments.delta",
                    "item_id": item["id"],
                    "output_index": index,
                    "delta": piece,
                }  # fmt: skip
                for piece in syn.pieces(call.text, 5, rng.pieces)
            ]
            done = {**item, "status": "completed", "arguments": call.text}
            nested.append({"type": "response.output_item.done", "output_index": index, "item": done})
            for event in nested:
                recv("response.event", after, delegation_id=delegation, event=event)
                after = gap
    for piece in syn.pieces(text, chunk_size, rng.pieces) if text else []:
        recv("session.output_audio.delta", after, event_id=False, delta=pcm(len(piece)))
        start = ms()
        recv("session.output_transcript.delta", 0.0, delta=piece, start_ms=start, end_ms=start + len(piece))
        after = gap
    used = dict(usage) if usage is not None else {"seconds": round(timeline.clock + 0.5, 2)}
    recv("session.usage.updated", after, usage=used)
    send({"type": "session.close"})
    recv("session.closed", gap, reason="close_requested", session=session, usage=used)
    return one_session(
        url or URL,
        timeline.messages,
        request_headers={"user-agent": "OpenAI/Python 3.57.0"},
        response_headers={"x-request-id": f"req_{rng.token(16)}"},
    )


def session_ids(url: str, received: Iterable[Any]) -> frozenset[str]:
    """The GPT-Live sessions a connection belongs to: the one its URL names (a sideband's
    ``.../{id}/attach``, a fork's ``.../{id}/fork``, a REST control call's) and the one its
    answers name (``{"session": {"id": ...}}``: the REST create's answer, ``session.started``);
    none for a URL that is not GPT-Live's."""
    path = _path(url)
    if not _SESSIONS.search(path):
        return frozenset()
    found = {m[1] for m in [_NAMED.search(path)] if m is not None}
    for value in received:
        session = value.get("session") if isinstance(value, dict) else None
        if isinstance(session, dict) and isinstance(session.get("id"), str) and session["id"]:
            found.add(session["id"])
    return frozenset(found)


CLIENT_MESSAGES = MessageMatching(
    # client event ids are optional and the client's own, drawn at random per run
    ignore=("$.event_id",),
    # the base64 audio of session.input_audio.append (the microphone's, different each run)
    by_length=("$.audio",),
)
"""How a replay matches a GPT-Live client's messages by default."""

PROTOCOL = Protocol(
    name="openai.live",
    # over a WebSocket the events are the messages, one JSON object each, as JSON lines are
    framing="ndjson",
    fold=_Live,
    error_event=error_event,
    http_error=openai_error_body,
    url=lambda url: bool(_PATH.search(_path(url))),
    event=is_live_event,
    responses=responses,
    synthesize=synthesize,
    client_messages=CLIENT_MESSAGES,
    session_ids=session_ids,
)
