"""``bedrock.converse``: Amazon Bedrock's ConverseStream (``POST /model/{modelId}/converse-stream``),
AWS eventstream frames ([`ssemock.framing.eventstream`][ssemock.framing.eventstream]) whose ``:event-type`` names the event
and whose payload is its JSON:

``messageStart`` (role), ``contentBlockStart`` (only for tool use: ``start.toolUse`` with
``toolUseId`` and ``name``), ``contentBlockDelta`` (``delta.text``, ``delta.toolUse.input`` -- the
tool input as JSON text in pieces --, ``delta.reasoningContent`` text / signature),
``contentBlockStop``, ``messageStop`` (``stopReason``) and ``metadata`` (``usage``, ``metrics``),
the last frame of a stream. An exception frame (``:message-type`` ``exception``,
``:exception-type`` such as ``throttlingException``, payload ``{"message": ...}``) ends the stream
with an error, which botocore raises as ``EventStreamError``.

The fold also takes the events as botocore yields them (``{"contentBlockDelta": {...}}``), so a
client's own list can be folded the same way. Payloads carry a ``p`` padding field on the wire;
like every unknown field it is ignored.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote, unquote

from ..framing.eventstream import CONTENT_TYPE as EVENTSTREAM
from ..framing.eventstream import Frame, is_frame
from ..store.cassette import Cassette
from . import Protocol, _path
from . import synthesis as syn
from .base import (
    JSON,
    Event,
    Fold,
    HTTPErrorBody,
    StreamError,
    bedrock_error_body,
    bedrock_frame,
    obj,
    string,
)

__all__ = ["EXCEPTIONS", "PROTOCOL", "URL", "frame", "synthesize"]

URL = "https://bedrock-runtime.us-east-1.amazonaws.com/model/{model}/converse-stream"
"""The ConverseStream URL, with a `{model}` placeholder."""
_EVENTS = frozenset(
    {"messageStart", "contentBlockStart", "contentBlockDelta", "contentBlockStop", "messageStop", "metadata"}
)
EXCEPTIONS = (
    "internalServerException",
    "modelStreamErrorException",
    "validationException",
    "throttlingException",
    "serviceUnavailableException",
)
"""The exception frames ConverseStream may send (botocore's ``ConverseStreamOutput`` members)."""
_KINDS = {
    "overloaded_error": "serviceUnavailableException",
    "server_error": "internalServerException",
    "api_error": "internalServerException",
    "rate_limit_error": "throttlingException",
    "rate_limit_exceeded": "throttlingException",
    "invalid_request_error": "validationException",
}
_MESSAGES = {
    "internalServerException": "The server encountered an internal error while processing the request.",
    "modelStreamErrorException": "The model stream encountered an error.",
    "validationException": "Malformed input request, please reformat your input and try again.",
    "throttlingException": "Too many requests, please wait before trying again.",
    "serviceUnavailableException": "Bedrock is unable to process your request.",
}


def _kind_and_payload(fold: Fold, event: Event) -> tuple[str, JSON]:
    """(event type, payload) of a frame or of a botocore event dict; exceptions as ``exception``."""
    if is_frame(event):
        if event.message_type in ("exception", "error"):
            message = string(event.headers.get(":error-message"))
            if event.payload:
                message = string(obj(_json(fold, event)).get("message")) or message
            return "exception", {"type": event.exception_type, "message": message}
        return event.event_type, obj(_json(fold, event))
    if isinstance(event, Mapping) and len(event) == 1:
        ((kind, payload),) = event.items()
        return str(kind), obj(payload)
    raise fold.fail(f"expected an eventstream frame or a botocore event dict, got {type(event).__name__}")


def _json(fold: Fold, frame: Frame) -> Any:
    try:
        return frame.json()
    except ValueError:
        raise fold.fail(
            f"{frame.event_type or 'frame'} payload is not JSON: {frame.payload[:40]!r}"
        ) from None


class _ConverseFold(Fold):
    """ConverseStream events: blocks by ``contentBlockIndex`` (text blocks open with their first
    delta), tool input as JSON text pieces, reasoning text and signature, usage from metadata."""

    protocol = "bedrock.converse"
    container = "content block"

    def feed(self, event: Event) -> None:
        kind, payload = _kind_and_payload(self, event)
        match kind:
            case "messageStart":
                self.choice(0)
            case "contentBlockStart":
                index = self.need_int(payload, "contentBlockIndex", kind)
                tool = obj(obj(payload.get("start")).get("toolUse"))
                self.open(index, "toolUse" if tool else "other")
                if tool:
                    call = self.tool(index)
                    call.id, call.name = string(tool.get("toolUseId")), string(tool.get("name"))
            case "contentBlockDelta":
                self.delta(self.need_int(payload, "contentBlockIndex", kind), obj(payload.get("delta")))
            case "contentBlockStop":
                self.need_int(payload, "contentBlockIndex", kind)
            case "messageStop":
                self.choice(0).finish_reason = string(payload.get("stopReason")) or None
            case "metadata":
                if isinstance(payload.get("usage"), dict):
                    self.result.usage = dict(payload["usage"])
                self.result.complete = True
            case "exception":
                self.result.error = payload

    def delta(self, index: int, delta: JSON) -> None:
        if "toolUse" in delta:
            self.expect(index, "a toolUse delta", ("toolUse",))
            self.tool(index).arguments += string(obj(delta["toolUse"]).get("input"))
            return
        if index not in self._opened:
            self.open(index, "text" if "text" in delta else "reasoning")
        if "text" in delta:
            self.add("text", string(delta["text"]), key=(index, 0))
        reasoning = obj(delta.get("reasoningContent"))
        self.add("thinking", string(reasoning.get("text")), key=(index, 0))
        self.add("signature", string(reasoning.get("signature")), key=(index, 0))
        if "citation" in delta:
            self.result.citations.append(delta["citation"])


frame = bedrock_frame
"""One ConverseStream frame as Bedrock writes it (`ssemock.protocols.base.bedrock_frame`)."""


def _exception_type(kind: str) -> str:
    """A ConverseStream exception member for ``kind``: its own name (any case, with or without
    ``Exception``), a generic error type mapped (``overloaded_error`` -> serviceUnavailable ...),
    else ``kind`` itself (botocore then reports it by the frame's headers)."""
    for member in EXCEPTIONS:
        if kind.lower() in (member.lower(), member.lower().removesuffix("exception")):
            return member
    return _KINDS.get(kind, kind)


def error_event(error: StreamError) -> bytes:
    """An exception frame (whatever the body's framing: a ConverseStream body is eventstream)."""
    member = _exception_type(error.kind)
    message = error.message or _MESSAGES.get(member, error.kind.replace("_", " "))
    return frame(member, {"message": message}, message_type="exception")


def http_error(status: int, message: str | None) -> HTTPErrorBody:
    """Bedrock's JSON error body, with the model runtime's codes and messages."""
    return bedrock_error_body(status, message)


def _is_converse(url: str) -> bool:
    parts = unquote(_path(url)).split("/")
    return len(parts) >= 4 and parts[1] == "model" and parts[-1] == "converse-stream"


def _telling(event: Any) -> bool:
    if is_frame(event):
        return event.event_type in _EVENTS or (
            event.message_type == "exception" and event.exception_type in EXCEPTIONS
        )
    return isinstance(event, Mapping) and len(event) == 1 and next(iter(event)) in _EVENTS


def synthesize(
    text: str = "",
    *,
    tool_calls: Sequence[Mapping[str, Any]] = (),
    thinking: str | None = None,
    usage: Mapping[str, Any] | None = None,
    finish_reason: str | None = None,
    error: str | None = None,
    model: str = "anthropic.claude-3-5-haiku-20241022-v1:0",
    chunk_size: int = 4,
    gap: float = 0.03,
    first_token: float = 0.25,
    seed: int = 0,
    prompt: str = "Say hello.",
    url: str | None = None,
) -> Cassette:
    """A ConverseStream response: messageStart, a reasoning block (``thinking``, then a signature
    delta), a text block, one toolUse block per tool call (input JSON in pieces), messageStop and
    metadata; or, with ``error`` (an exception name such as ``"throttlingException"`` or a generic
    kind), an exception frame after the content deltas instead of the stop and metadata.

    ``usage``: Bedrock's ``{"inputTokens", "outputTokens", "totalTokens"}``. Payloads carry the
    ``p`` padding field Bedrock adds. The request is what boto3's ``converse_stream`` sends."""

    syn.check_timing(chunk_size, gap, first_token)
    rng = syn.Rng(seed)
    calls = syn.calls(tool_calls, rng, "tooluse_", id_size=22)
    frames: list[bytes] = []

    def emit(kind: str, **payload: Any) -> None:
        frames.append(
            frame(kind, {**payload, "p": "abcdefghijklmnopqrstuvwxyzABCDEFGHIJ"[: 1 + len(frames) % 36]})
        )

    emit("messageStart", role="assistant")
    index, deltas = 0, 0
    if thinking is not None:
        for piece in syn.pieces(thinking, chunk_size, rng.pieces):
            emit("contentBlockDelta", contentBlockIndex=index, delta={"reasoningContent": {"text": piece}})
        emit(
            "contentBlockDelta",
            contentBlockIndex=index,
            delta={"reasoningContent": {"signature": rng.token(64)}},
        )
        emit("contentBlockStop", contentBlockIndex=index)
        index += 1
    if text:
        for piece in syn.pieces(text, chunk_size, rng.pieces):
            emit("contentBlockDelta", contentBlockIndex=index, delta={"text": piece})
            deltas += 1
        if error is None:
            emit("contentBlockStop", contentBlockIndex=index)
        index += 1
    for call in calls if error is None else ():
        emit(
            "contentBlockStart",
            contentBlockIndex=index,
            start={"toolUse": {"toolUseId": call.id, "name": call.name}},
        )
        for piece in syn.pieces(call.text, 5, rng.pieces):
            emit("contentBlockDelta", contentBlockIndex=index, delta={"toolUse": {"input": piece}})
            deltas += 1
        emit("contentBlockStop", contentBlockIndex=index)
        index += 1
    if error is not None:
        frames.append(error_event(StreamError(kind=error, message="", framing="eventstream")))
    else:
        emit("messageStop", stopReason=finish_reason or ("tool_use" if calls else "end_turn"))
        input_tokens = 8 + len(prompt) // 4
        emit(
            "metadata",
            usage=dict(usage)
            if usage is not None
            else {
                "inputTokens": input_tokens,
                "outputTokens": max(deltas, 1),
                "totalTokens": input_tokens + max(deltas, 1),
            },
            metrics={"latencyMs": round((first_token + gap * len(frames)) * 1000)},
        )
    chunks, times = syn.schedule(frames, rng.writes, first_token=first_token, gap=gap)
    body: JSON = {"messages": [{"role": "user", "content": [{"text": prompt}]}]}
    if calls:
        body["toolConfig"] = {
            "tools": [
                {
                    "toolSpec": {
                        "name": c.name,
                        "description": f"The {c.name} tool.",
                        "inputSchema": {"json": syn.schema(c.value)},
                    }
                }
                for c in calls
            ]
        }
    cassette = Cassette()
    cassette.add(
        "POST",
        url or URL.format(model=quote(model, safe="")),
        chunks,
        times=times,
        headers={
            "content-type": EVENTSTREAM,
            "x-amzn-requestid": str(uuid.UUID(bytes=rng.ids.randbytes(16), version=4)),
            syn.SOURCE_HEADER: syn.SYNTH_SOURCE,
        },
        request_headers={"content-type": "application/json"},
        request_body=json.dumps(body),
    )
    return cassette


PROTOCOL = Protocol(
    name="bedrock.converse",
    framing="eventstream",
    fold=_ConverseFold,
    error_event=error_event,
    http_error=http_error,
    url=_is_converse,
    content_type=lambda media: media == EVENTSTREAM,
    event=_telling,
    synthesize=synthesize,
)
"""The `bedrock.converse` protocol, as registered in `ssemock.protocols`."""
