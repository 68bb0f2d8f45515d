"""Gemini Live Interactions (``gemini.interactions``): the server events of an
``.../interactions/live`` WebSocket session (google-genai 3.6's experimental
``client.aio.interactions.connect(id)``).

Each event is a JSON object keyed by ``event_type`` (a frame may batch several as
``{"events": [...]}``): ``interaction.created`` / ``interaction.connected``, then per step of the
interaction ``step.start`` (its ``step``, a ``model_output`` ...), ``step.delta`` (a ``text``
delta's ``text``, an ``audio`` delta's base64 ``data``), ``step.stop`` (its usage), and
``interaction.completed`` (the status and usage) or ``interaction.cancelled``; ``error`` carries
``{"error": {code, message}}``. The client sends ``interaction.connect``, ``input`` (content
parts), ``interaction.complete`` / ``.cancel`` / ``.disconnect``.

The session is one result (a [`Spoken`][ssemock.protocols.messages.Spoken]): ``id`` the
interaction's, ``text`` its text deltas in step order, ``audio`` its audio deltas, ``complete``
once ``interaction.completed`` (or ``.cancelled``) arrived.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson

from . import Protocol, _path
from . import synthesis as syn
from .base import JSON, Event, HTTPErrorBody, StreamError, error_of, obj, seq, string
from .messages import Spoken, SpokenFold, audio_bytes, message, one_session

__all__ = ["PROTOCOL", "URL", "synthesize"]

URL = "wss://generativelanguage.googleapis.com/v1beta/interactions/live"

_ENDS = ("interaction.completed", "interaction.cancelled", "interaction.canceled")


def _events(payload: JSON) -> Iterator[JSON]:
    """The events a frame holds: itself, or its ``events`` batch."""
    if isinstance(payload.get("events"), list):
        yield from (obj(e) for e in seq(payload["events"]))
    else:
        yield payload


class _Interactions(SpokenFold):
    """Live Interactions events: text and audio deltas by step index; the interaction's end."""

    protocol = "gemini.interactions"
    container = "step"

    def __init__(self) -> None:
        super().__init__()
        self._audio: dict[int, list[bytes]] = {}

    def feed(self, event: Event) -> None:
        for payload in _events(message(self, event)):
            self._on(string(payload.get("event_type")), payload)

    def _on(self, kind: str, payload: JSON) -> None:
        if kind == "interaction.created":
            self.result.id = self.result.id or string(payload.get("interaction_id"))
        elif kind == "step.start":
            self.open(self.need_int(payload, "index", kind), string(obj(payload.get("step")).get("type")))
        elif kind == "step.delta":
            index = self.need_int(payload, "index", kind)
            self.expect(index, kind)
            delta = obj(payload.get("delta"))
            if delta.get("type") == "text":
                self.add("text", string(delta.get("text")), key=(index, 0))
            elif delta.get("type") == "audio" and delta.get("data") is not None:
                self.choice(0)
                self._audio.setdefault(index, []).append(
                    audio_bytes(self, delta.get("data"), "an audio delta")
                )
        elif kind in _ENDS:
            if isinstance(payload.get("usage"), dict):
                self.result.usage = payload["usage"]
            self.choice(0).finish_reason = kind.split(".")[1]
            self.result.complete = True
        elif kind == "error":
            self.result.error = error_of(payload.get("error", payload))

    def finish(self) -> Spoken:
        super().finish()
        self.spoken.audio = b"".join(piece for _, pieces in sorted(self._audio.items()) for piece in pieces)
        return self.spoken


def error_event(error: StreamError) -> bytes:
    """The ``error`` event: ``{"event_type": "error", "error": {code, message}}``."""
    payload = {"event_type": "error", "error": {"code": error.kind, "message": error.message}}
    return orjson.dumps(payload) + error.newline.encode()


def http_error(status: int, text: str | None) -> HTTPErrorBody:
    """Google's error body for a refused upgrade."""
    statuses = {
        400: "INVALID_ARGUMENT",
        401: "UNAUTHENTICATED",
        403: "PERMISSION_DENIED",
        429: "RESOURCE_EXHAUSTED",
    }
    body = {"error": {"code": status, "message": text or f"ssemock http_error {status}",
                      "status": statuses.get(status, "UNAVAILABLE")}}  # fmt: skip
    return HTTPErrorBody(orjson.dumps(body))


def _is_interaction_event(event: Any) -> bool:
    kind = string(obj(event).get("event_type"))
    return kind in ("interaction.created", "interaction.connected", *_ENDS) or kind.startswith("step.")


def synthesize(
    text: str = "",
    *,
    chunk_size: int = 4,
    gap: float = 0.03,
    first_token: float = 0.25,
    seed: int = 0,
    prompt: str = syn.DEFAULT_PROMPT,
    url: str | None = None,
) -> Any:
    """A Live Interactions session: the client's ``interaction.connect`` and ``input`` (the
    prompt); ``interaction.connected``, a ``model_output`` step (``step.start``, its text in
    ``chunk_size`` pieces as ``step.delta``, ``step.stop``); the client's
    ``interaction.complete``, then ``interaction.completed`` with the usage."""
    syn.check_timing(chunk_size, gap, first_token)
    rng = syn.Rng(seed)
    interaction = f"v1_{rng.token(24)}"
    session = syn.Timeline()
    session.send({"event_type": "interaction.connect", "id": interaction})
    session.recv(0.05, {"event_type": "interaction.connected"})
    session.send({"event_type": "input", "content": [{"type": "text", "text": prompt}]})
    session.recv(first_token, {"event_type": "step.start", "index": 0, "step": {"type": "model_output"}})
    for piece in syn.pieces(text, chunk_size, rng.pieces):
        session.recv(gap, {"event_type": "step.delta", "index": 0, "delta": {"type": "text", "text": piece}})
    used = {"total_input_tokens": 8 + len(prompt) // 4, "total_output_tokens": max(1, len(text) // 4)}
    session.recv(gap, {"event_type": "step.stop", "index": 0, "usage": used})
    session.send({"event_type": "interaction.complete"})
    session.recv(0.05, {"event_type": "interaction.completed", "usage": used})
    return one_session(url or URL, session.messages, request_headers={"user-agent": "google-genai-sdk/3.6.1"})


PROTOCOL = Protocol(
    name="gemini.interactions",
    # over a WebSocket the events are the messages, one JSON object each, as JSON lines are
    framing="ndjson",
    fold=_Interactions,
    error_event=error_event,
    http_error=http_error,
    url=lambda url: _path(url).endswith("/interactions/live"),
    event=_is_interaction_event,
    synthesize=synthesize,
)
