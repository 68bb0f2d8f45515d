"""Gemini Live (``gemini.live``): the server messages of a ``BidiGenerateContent`` WebSocket session.

Each received message (Google sends them in binary frames, UTF-8 JSON) is a
``BidiGenerateContentServerMessage`` holding one of ``setupComplete``, ``serverContent``,
``toolCall``, ``toolCallCancellation``, ``goAway`` or ``sessionResumptionUpdate``, and perhaps
``usageMetadata``. A model turn's parts arrive in ``serverContent.modelTurn.parts`` (``text``,
``thought`` text, ``inlineData`` with a ``mimeType`` and base64 ``data``); the transcript of its
audio in ``serverContent.outputTranscription.text``; the turn ends with
``serverContent.turnComplete``. Function calls arrive whole in ``toolCall.functionCalls``
(``id``, ``name``, ``args``), and ``toolCallCancellation.ids`` withdraws some. ``goAway`` says
the server will close the connection (``timeLeft``): the result's ``error``.

The fold's result is a [`Spoken`][ssemock.protocols.messages.Spoken]: ``audio`` joins the
``audio/*`` inline data, ``media`` keeps the rest; an audio turn's ``text`` is its transcript.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from . import Protocol, _path
from . import synthesis as syn
from .base import JSON, Event, HTTPErrorBody, MessageMatching, StreamError, obj, seq, string
from .messages import Spoken, SpokenFold, audio_bytes, message, one_session, split

__all__ = ["CLIENT_MESSAGES", "PROTOCOL", "URL", "responses", "synthesize"]

URL = "wss://generativelanguage.googleapis.com/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent"

_KEYS = (
    "setupComplete",
    "serverContent",
    "toolCall",
    "toolCallCancellation",
    "goAway",
    "sessionResumptionUpdate",
)


class _Live(SpokenFold):
    """Gemini Live server messages: one model turn's parts, tool calls, usage, ``turnComplete``."""

    protocol = "gemini.live"
    container = "part"

    def __init__(self) -> None:
        super().__init__()
        self._transcript: list[str] = []
        self._audio: list[bytes] = []
        self._calls = 0

    def feed(self, event: Event) -> None:
        payload = message(self, event)
        content = obj(payload.get("serverContent"))
        if content:
            self._content(content)
        tool_call = obj(payload.get("toolCall"))
        for raw in seq(tool_call.get("functionCalls")):
            raw = obj(raw)
            call = self.tool(self._calls)
            self._calls += 1
            call.id, call.name = string(raw.get("id")), string(raw.get("name"))
            args = raw.get("args", {})
            call.arguments = args if isinstance(args, str) else orjson.dumps(args).decode()
        cancelled = {string(i) for i in seq(obj(payload.get("toolCallCancellation")).get("ids"))}
        if cancelled:
            for key, call in list(self._tools.items()):
                if call.id in cancelled:
                    del self._tools[key]
        if isinstance(payload.get("usageMetadata"), dict):
            self.result.usage = payload["usageMetadata"]
        if "goAway" in payload:
            self.result.error = {"goAway": payload["goAway"]}
        if content.get("turnComplete") is True:
            reason = string(content.get("turnCompleteReason"))
            choice = self.choice(0)
            choice.finish_reason = reason or choice.finish_reason or "turn_complete"
            self.result.complete = True

    def _content(self, content: JSON) -> None:
        self.choice(0)
        for raw in seq(obj(content.get("modelTurn")).get("parts")):
            part = obj(raw)
            if isinstance(part.get("text"), str):
                self.add("thinking" if part.get("thought") is True else "text", part["text"])
            inline = obj(part.get("inlineData"))
            if inline:
                mime = string(inline.get("mimeType"))
                data = audio_bytes(self, inline.get("data"), "modelTurn inlineData")
                if mime.startswith("audio/"):
                    self._audio.append(data)
                else:
                    self.spoken.media.append((mime, data))
        transcript = string(obj(content.get("outputTranscription")).get("text"))
        if transcript:
            self._transcript.append(transcript)
        if content.get("interrupted") is True:
            self.choice(0).finish_reason = "interrupted"

    def finish(self) -> Spoken:
        super().finish()
        self.spoken.transcript = "".join(self._transcript)
        if not self.spoken.text and self.spoken.choices:  # an audio turn: what it said is its transcript
            self.spoken.choices[0].text = self.spoken.transcript
        self.spoken.audio = b"".join(self._audio)
        return self.spoken


def _role(payload: JSON) -> tuple[str, str | None]:
    if obj(payload.get("serverContent")).get("turnComplete") is True:
        return "end", None
    if "serverContent" in payload or "toolCall" in payload or "toolCallCancellation" in payload:
        return "in", None
    if "goAway" in payload:
        return "notice", None
    if "usageMetadata" in payload:
        return "late", None
    return "skip", None


def responses(events: Sequence[Event]) -> list[list[int]]:
    """The positions of each model turn's messages in a session's received messages: a turn ends
    with ``turnComplete``; a ``goAway`` joins the turn in progress or, with none, stands alone;
    usage sent on its own after a turn joins that turn."""
    return split(events, _role)


_STATUS = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND"}
_STATUS |= {429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED"}


def http_error(status: int, message: str | None) -> HTTPErrorBody:
    """A refused handshake's body: ``{"error": {"code", "message", "status"}}``, as Google sends it."""
    error = {
        "code": status,
        "message": message or f"ssemock http_error {status}",
        "status": _STATUS.get(status, "UNKNOWN"),
    }
    return HTTPErrorBody(
        orjson.dumps({"error": error}, option=orjson.OPT_INDENT_2), "application/json; charset=UTF-8"
    )


def error_event(error: StreamError) -> bytes:
    """The server's own warning before it ends a session: ``{"goAway": {"timeLeft": "0s"}}``
    (Gemini Live reports errors in close frames; ``goAway`` is the one message it sends)."""
    return orjson.dumps({"goAway": {"timeLeft": "0s"}}) + error.newline.encode()


def synthesize(
    text: str = "",
    *,
    tool_calls: Sequence[syn.ToolCallSpec] = (),
    usage: Mapping[str, Any] | None = None,
    audio: bool = False,
    model: str = "gemini-live-2.5-flash",
    chunk_size: int = 4,
    gap: float = 0.03,
    first_token: float = 0.25,
    seed: int = 0,
    prompt: str = syn.DEFAULT_PROMPT,
    url: str | None = None,
) -> Any:
    """A Live session: the client's ``setup`` and ``client_content`` (snake_case, as google-genai
    sends it); ``setupComplete``; the model turn's parts in ``serverContent.modelTurn`` (text, or
    with ``audio=True`` inline PCM and an ``outputTranscription``), a ``toolCall`` with every
    function call, then ``turnComplete`` with ``usageMetadata``. Server messages are binary
    frames of JSON, as the service sends them."""
    syn.check_timing(chunk_size, gap, first_token)
    rng = syn.Rng(seed)
    calls = syn.calls(tool_calls, rng, "fc_")
    session = syn.Timeline()

    def recv(after: float, value: JSON) -> None:
        session.recv(after, value, binary=True)  # JSON in binary frames, as the service sends it

    setup: JSON = {
        "model": f"models/{model}",
        "generationConfig": {"responseModalities": ["AUDIO" if audio else "TEXT"]},
    }
    if calls:
        declarations = [{"name": t["name"], "parameters": t["parameters"]} for t in syn.tools(calls).values()]
        setup["tools"] = [{"functionDeclarations": declarations}]
    session.send({"setup": setup})
    recv(0.05, {"setupComplete": {}})
    session.send(
        {"client_content": {"turns": [{"role": "user", "parts": [{"text": prompt}]}], "turn_complete": True}}
    )
    after = first_token
    for piece in syn.pieces(text, chunk_size, rng.pieces) if text else []:
        if audio:
            pcm = bytes(rng.pieces.randrange(256) for _ in range(2 * 24 * len(piece)))
            part = {
                "inlineData": {"mimeType": "audio/pcm;rate=24000", "data": base64.b64encode(pcm).decode()}
            }
            recv(after, {"serverContent": {"modelTurn": {"role": "model", "parts": [part]}, "outputTranscription": {"text": piece}}})  # fmt: skip
        else:
            recv(after, {"serverContent": {"modelTurn": {"role": "model", "parts": [{"text": piece}]}}})
        after = gap
    if calls:
        recv(
            after,
            {"toolCall": {"functionCalls": [{"id": c.id, "name": c.name, "args": c.value} for c in calls]}},
        )
    pieces = len(syn.pieces(text, chunk_size, syn.Rng(seed).pieces)) if text else 0
    used = dict(usage) if usage is not None else {
        "promptTokenCount": 9, "responseTokenCount": pieces + len(calls), "totalTokenCount": 9 + pieces + len(calls),
        "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 9}],
        "responseTokensDetails": [{"modality": "AUDIO" if audio else "TEXT", "tokenCount": pieces + len(calls)}],
    }  # fmt: skip
    recv(gap, {"serverContent": {"turnComplete": True}, "usageMetadata": used})
    return one_session(
        url or URL,
        session.messages,
        request_headers={"user-agent": "google-genai-sdk/3.6.1"},
    )


def _is_live_message(event: Any) -> bool:
    return isinstance(event, Mapping) and any(key in event for key in _KEYS)


CLIENT_MESSAGES = MessageMatching(
    # the base64 data of the audio, video and media chunks of realtimeInput (google-genai writes
    # realtime_input, the API reference realtimeInput) and of inline data in a turn's parts
    by_length=tuple(
        f"$.{head}.{blob}.data"
        for head in ("realtimeInput", "realtime_input")
        for blob in ("audio", "video", "mediaChunks[*]", "media_chunks[*]")
    )
    + tuple(
        f"$.{head}.turns[*].parts[*].{inline}.data"
        for head in ("clientContent", "client_content")
        for inline in ("inlineData", "inline_data")
    ),
)
"""How a replay matches a Live client's messages by default (its messages carry no ids)."""

PROTOCOL = Protocol(
    name="gemini.live",
    # over a WebSocket the events are the messages, one JSON object each, as JSON lines are
    framing="ndjson",
    fold=_Live,
    error_event=error_event,
    http_error=http_error,
    url=lambda url: _path(url).endswith(("BidiGenerateContent", "BidiGenerateContentConstrained")),
    event=_is_live_message,
    responses=responses,
    synthesize=synthesize,
    client_messages=CLIENT_MESSAGES,
)
