"""OpenAI Realtime (``openai.realtime``): the server events of a ``/v1/realtime`` WebSocket session.

Each received message is one JSON event with its ``type`` (and an ``event_id``). A response runs
from ``response.created`` to ``response.done``; its text arrives as ``response.output_text.delta``,
its audio as base64 PCM in ``response.output_audio.delta`` with the transcript in
``response.output_audio_transcript.delta``, its function calls' arguments in
``response.function_call_arguments.delta`` by ``call_id``; ``response.done`` carries the status
and the usage; ``error`` events carry ``{"error": {type, code, message, param, event_id}}``. The
beta names (``response.text.delta``, ``response.audio.delta``, ``response.audio_transcript.delta``)
are read too. Events outside a response (``session.*``, ``input_audio_buffer.*``,
``conversation.item.*``, ``rate_limits.updated``) are skipped, but for the two sessions that
have no responses:

- a transcription session (``/v1/realtime?intent=transcription``): one result per transcribed
  input item, ``conversation.item.input_audio_transcription.delta`` building its text (and
  transcript) by ``item_id``, ``.completed`` (its whole ``transcript`` and ``usage``) or
  ``.failed`` ending it;
- a translation session (``/v1/realtime/translations``, ``client.realtime.translations``): the
  session is one result, ``session.output_transcript.delta`` its text and transcript,
  ``session.output_audio.delta`` its audio, complete once ``session.closed`` arrived.

The fold's result is a [`Spoken`][ssemock.protocols.messages.Spoken]: ``text`` is what the
model said (text parts, and the transcripts of audio parts, in output order), ``transcript`` the
transcripts alone, ``audio`` the decoded audio.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
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
    seq,
    string,
)
from .messages import Spoken, SpokenFold, audio_bytes, is_live_event, message, one_session, split

__all__ = ["CLIENT_MESSAGES", "PROTOCOL", "URL", "responses", "synthesize"]

URL = "wss://api.openai.com/v1/realtime?model=gpt-realtime"

_TEXT = ("response.output_text.delta", "response.text.delta")
_TRANSCRIPT = ("response.output_audio_transcript.delta", "response.audio_transcript.delta")
_AUDIO = ("response.output_audio.delta", "response.audio.delta")
_CALL = ("response.function_call_arguments.delta", "response.function_call_arguments.done")
_PER_RESPONSE = ("response.created", "response.done")
_HEARD = "conversation.item.input_audio_transcription."  # + delta / completed / failed
_TRANSLATED = ("session.output_transcript.delta", "session.output_audio.delta")


class _Realtime(SpokenFold):
    """Realtime server events: text, transcripts and audio keyed by (output, content) index;
    function calls by call id; ``response.done`` ends the response."""

    protocol = "openai.realtime"
    container = "output item"

    def __init__(self) -> None:
        super().__init__()
        self._transcripts: dict[tuple[int, int], list[str]] = {}
        self._audio: dict[tuple[int, int], list[bytes]] = {}
        self._calls: dict[str, tuple[int, str]] = {}  # call id -> its key (output index, call id)

    def feed(self, event: Event) -> None:
        payload = message(self, event)
        kind = string(payload.get("type"))
        if kind in _TEXT or kind in _TRANSCRIPT:
            key = self._key(payload, kind)
            delta = string(payload.get("delta"))
            self.add("text", delta, key=key)
            if kind in _TRANSCRIPT and delta:
                self._transcripts.setdefault(key, []).append(delta)
        elif kind in _AUDIO:
            key = self._key(payload, kind)
            self.choice(0)
            self._audio.setdefault(key, []).append(audio_bytes(self, payload.get("delta"), f"{kind}'s delta"))
        elif kind in _CALL:
            call = self._call(payload, kind)
            if kind.endswith(".delta"):
                call.arguments += string(payload.get("delta"))
            else:
                _fill(call, payload)
        elif kind in ("response.output_item.added", "response.output_item.done"):
            item = obj(payload.get("item"))
            if item.get("type") == "function_call":
                _fill(self._call({**item, "output_index": payload.get("output_index")}, kind), item)
        elif kind == "response.created":
            self.identify(obj(payload.get("response")))
            self.choice(0)
        elif kind == "response.done":
            self._done(obj(payload.get("response")))
        elif kind == "error":
            self.result.error = error_of(payload.get("error", payload))
        elif kind.startswith(_HEARD):
            self._heard(payload, kind)
        elif kind in _TRANSLATED or kind == "session.closed":
            self._translated(payload, kind)

    def _heard(self, payload: JSON, kind: str) -> None:
        """A transcription session's input item: its transcript deltas, then its end."""
        self.result.id = self.result.id or string(payload.get("item_id"))
        index = payload.get("content_index")
        key = (0, index if isinstance(index, int) else 0)
        if kind.endswith(".delta"):
            delta = string(payload.get("delta"))
            self.add("text", delta, key=key)
            self._transcripts.setdefault(key, []).append(delta)
        elif kind.endswith(".completed"):
            if not self._transcripts.get(key):  # no deltas (whisper-1 sends none): the whole
                self.add("text", string(payload.get("transcript")), key=key)
                self._transcripts[key] = [string(payload.get("transcript"))]
            if isinstance(payload.get("usage"), dict):
                self.result.usage = payload["usage"]
            self.choice(0).finish_reason = "completed"
            self.result.complete = True
        elif kind.endswith(".failed"):
            self.result.error = error_of(payload.get("error", payload))
            self.choice(0).finish_reason = "failed"
            self.result.complete = True

    def _translated(self, payload: JSON, kind: str) -> None:
        """A translation session: what it said in the output language, until it closed."""
        if kind == "session.output_transcript.delta":
            delta = string(payload.get("delta"))
            self.add("text", delta, key=(0, 0))
            self._transcripts.setdefault((0, 0), []).append(delta)
        elif kind == "session.output_audio.delta":
            self.choice(0)
            self._audio.setdefault((0, 0), []).append(
                audio_bytes(self, payload.get("delta"), f"{kind}'s delta")
            )
        else:
            self.choice(0).finish_reason = "closed"
            self.result.complete = True

    def _key(self, payload: JSON, kind: str) -> tuple[int, int]:
        return (self.need_int(payload, "output_index", kind), self.need_int(payload, "content_index", kind))

    def _call(self, payload: JSON, kind: str) -> ToolCall:
        call_id = string(payload.get("call_id"))
        if not call_id:
            raise self.fail(f"{kind} has no call_id")
        if call_id not in self._calls:
            index = payload.get("output_index")
            order = index if isinstance(index, int) and not isinstance(index, bool) else 1 << 30
            self._calls[call_id] = (order, call_id)
        call = self.tool(self._calls[call_id])
        call.id = call_id
        return call

    def _done(self, response: JSON) -> None:
        self.identify(response)
        for index, item in enumerate(seq(response.get("output"))):
            item = obj(item)
            if item.get("type") == "function_call" and string(item.get("call_id")):
                _fill(self._call({**item, "output_index": index}, "response.done"), item)
        if isinstance(response.get("usage"), dict):
            self.result.usage = response["usage"]
        details = obj(response.get("status_details"))
        if details.get("error") is not None:
            self.result.error = error_of(details["error"])
        reason = string(details.get("reason")) or string(response.get("status"))
        self.choice(0).finish_reason = reason or None
        self.result.complete = True

    def finish(self) -> Spoken:
        super().finish()
        self.spoken.transcript = "".join(
            piece for _, pieces in sorted(self._transcripts.items()) for piece in pieces
        )
        self.spoken.audio = b"".join(piece for _, pieces in sorted(self._audio.items()) for piece in pieces)
        return self.spoken


def _fill(call: ToolCall, item: Mapping[str, Any]) -> None:
    """Fill the fields of a function call that the deltas left empty."""
    call.name = call.name or string(item.get("name"))
    call.arguments = call.arguments or string(item.get("arguments"))


def _role(payload: JSON) -> tuple[str, str | None]:
    kind = string(payload.get("type"))
    if kind.startswith(_HEARD):  # a transcription session's input item
        return ("in" if kind.endswith(".delta") else "end"), f"item {string(payload.get('item_id'))}"
    if kind in _TRANSLATED:  # a translation session: one result
        return "in", "translation"
    if kind == "session.closed":
        return "late", None
    if kind in _PER_RESPONSE:
        key = string(obj(payload.get("response")).get("id")) or None
        return ("start" if kind == "response.created" else "end"), key
    if kind == "error":
        return "notice", None
    if kind.startswith("response."):
        return "in", string(payload.get("response_id")) or None
    return "skip", None


def responses(events: Sequence[Event]) -> list[list[int]]:
    """The positions of each response's events in a session's received messages: from
    ``response.created`` to ``response.done`` by response id; an ``error`` event joins the
    response in progress or, with none, stands alone."""
    return split(events, _role)


def error_event(error: StreamError) -> bytes:
    """The ``error`` server event, one message: ``{"type": "error", "event_id", "error": {type,
    code, message, param, event_id}}``."""
    kind = "server_error" if error.kind in ("server_error", "overloaded_error") else "invalid_request_error"
    payload = {
        "type": "error",
        "event_id": "event_ssemock_error",
        "error": {
            "type": kind,
            "code": error.kind,
            "message": error.message,
            "param": None,
            "event_id": None,
        },
    }
    return orjson.dumps(payload) + error.newline.encode()


def synthesize(
    text: str = "",
    *,
    tool_calls: Sequence[syn.ToolCallSpec] = (),
    usage: Mapping[str, Any] | None = None,
    audio: bool = True,
    model: str = "gpt-realtime",
    chunk_size: int = 4,
    gap: float = 0.03,
    first_token: float = 0.25,
    seed: int = 0,
    prompt: str = syn.DEFAULT_PROMPT,
    url: str | None = None,
) -> Any:
    """A Realtime session (GA events): ``session.created``; the client's ``session.update``,
    ``conversation.item.create`` (the prompt) and ``response.create``; then ``response.created``
    and, per output item, the text (``audio=False``) or the audio (base64 PCM16 deltas) and its
    transcript, or a function call's argument deltas, then ``response.done`` with the usage."""
    syn.check_timing(chunk_size, gap, first_token)
    rng = syn.Rng(seed)
    calls = syn.calls(tool_calls, rng, "call_")
    session_id, response_id = f"sess_{rng.token(20)}", f"resp_{rng.token(20)}"
    counter = iter(range(1, 1_000_000))
    timeline = syn.Timeline()
    send = timeline.send

    def recv(kind: str, after: float, **fields: Any) -> None:
        timeline.recv(after, {"type": kind, "event_id": f"event_{rng.token(8)}{next(counter)}", **fields})

    session = {"type": "realtime", "object": "realtime.session", "id": session_id, "model": model,
               "output_modalities": ["audio" if audio else "text"]}  # fmt: skip
    recv("session.created", 0.05, session=session)
    tools = [{"type": "function", **t} for t in syn.tools(calls).values()]
    send({"type": "session.update", "session": {"type": "realtime", "output_modalities": session["output_modalities"], "tools": tools}})  # fmt: skip
    recv("session.updated", 0.02, session={**session, "tools": tools})
    item = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": prompt}]}
    send({"type": "conversation.item.create", "item": item})
    send({"type": "response.create"})
    recv("response.created", first_token, response={"object": "realtime.response", "id": response_id, "status": "in_progress", "output": [], "usage": None})  # fmt: skip
    output: list[JSON] = []
    deltas = 0
    if text:
        item_id, index = f"item_{rng.token(20)}", len(output)
        recv("response.output_item.added", gap, response_id=response_id, output_index=index, item={"id": item_id, "type": "message", "role": "assistant", "status": "in_progress", "content": []})  # fmt: skip
        where = {"response_id": response_id, "item_id": item_id, "output_index": index, "content_index": 0}
        for piece in syn.pieces(text, chunk_size, rng.pieces):
            deltas += 1
            if audio:
                pcm = bytes(rng.pieces.randrange(256) for _ in range(2 * 24 * len(piece)))  # 1 ms a character
                recv("response.output_audio.delta", gap, **where, delta=base64.b64encode(pcm).decode())
                recv("response.output_audio_transcript.delta", 0.0, **where, delta=piece)
            else:
                recv("response.output_text.delta", gap, **where, delta=piece)
        part = (
            {"type": "output_audio", "transcript": text} if audio else {"type": "output_text", "text": text}
        )
        output.append(
            {"id": item_id, "type": "message", "role": "assistant", "status": "completed", "content": [part]}
        )
    for call in calls:
        item_id, index = f"item_{rng.token(20)}", len(output)
        added = {"id": item_id, "type": "function_call", "status": "in_progress", "call_id": call.id, "name": call.name, "arguments": ""}  # fmt: skip
        recv("response.output_item.added", gap, response_id=response_id, output_index=index, item=added)
        where = {"response_id": response_id, "item_id": item_id, "output_index": index, "call_id": call.id}
        for piece in syn.pieces(call.text, 5, rng.pieces):
            deltas += 1
            recv("response.function_call_arguments.delta", gap, **where, delta=piece)
        recv("response.function_call_arguments.done", gap, **where, name=call.name, arguments=call.text)
        output.append({**added, "status": "completed", "arguments": call.text})
    used = dict(usage) if usage is not None else {
        "total_tokens": 20 + deltas, "input_tokens": 20, "output_tokens": deltas,
        "input_token_details": {"text_tokens": 20, "audio_tokens": 0, "cached_tokens": 0},
        "output_token_details": {"text_tokens": deltas, "audio_tokens": deltas if audio else 0},
    }  # fmt: skip
    done = {"object": "realtime.response", "id": response_id, "status": "completed", "status_details": None, "output": output, "usage": used}  # fmt: skip
    recv("response.done", gap, response=done)
    return one_session(
        url or URL,
        timeline.messages,
        request_headers={"user-agent": "OpenAI/Python 3.57.0"},
        response_headers={"x-request-id": f"req_{rng.token(16)}"},
    )


def _is_realtime_event(event: Any) -> bool:
    """A Realtime server event: its own ``session.created``/``session.updated`` and
    ``response.*``, ``conversation.*``, ``input_audio_buffer.*``, ``rate_limits.*`` events, with an
    ``event_id``; never a GPT-Live one (``session.started``, ``response.event``, ...)."""
    if not isinstance(event, Mapping) or "event_id" not in event or is_live_event(event):
        return False
    kind = string(event.get("type"))
    return kind in ("session.created", "session.updated") or kind.startswith(
        ("response.", "conversation.", "input_audio_buffer.", "rate_limits.")
    )


CLIENT_MESSAGES = MessageMatching(
    # client event ids are the client's own, drawn at random per run
    ignore=("$.event_id",),
    # the base64 audio of input_audio_buffer.append and of an input_audio content part
    by_length=("$.audio", "$.item.content[*].audio"),
)
"""How a replay matches a Realtime client's messages by default."""

PROTOCOL = Protocol(
    name="openai.realtime",
    # over a WebSocket the events are the messages, one JSON object each, as JSON lines are
    framing="ndjson",
    fold=_Realtime,
    error_event=error_event,
    http_error=openai_error_body,
    url=lambda url: _path(url).endswith(("/realtime", "/realtime/translations")),
    event=_is_realtime_event,
    responses=responses,
    synthesize=synthesize,
    client_messages=CLIENT_MESSAGES,
)
