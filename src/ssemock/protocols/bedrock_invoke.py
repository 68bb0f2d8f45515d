"""``bedrock.invoke``: Amazon Bedrock's InvokeModelWithResponseStream
(``POST /model/{modelId}/invoke-with-response-stream``): AWS eventstream frames whose
``:event-type`` is ``chunk`` and whose payload is ``{"bytes": base64(JSON)}``, the JSON being the
model family's own streaming event:

* Anthropic Claude (Messages API: ``anthropic_version`` and ``messages`` in the request):
  ``message_start``, ``content_block_start`` / ``_delta`` / ``_stop``, ``message_delta``,
  ``message_stop``, as the Anthropic API streams them;
* Claude v2 Text Completions: ``{"completion": ..., "stop_reason": ...}``;
* Amazon Titan Text: ``{"outputText": ..., "completionReason": ...}``;
* Amazon Nova: the ConverseStream shapes, one per chunk (``{"contentBlockDelta": {...}}``);
* Cohere Command: ``{"text", "index", "is_finished"}`` (``index`` when ``num_generations`` > 1),
  or ``{"generations": [...]}``, the last chunk ``{"is_finished": true, "finish_reason"}``;
  Command R: Cohere's v1 chat events (``event_type`` ``text-generation``, ``stream-end``);
* Meta Llama: ``{"generation", "stop_reason", ...}``;
* Mistral: ``{"outputs": [{"text", "stop_reason"}]}``; Mistral Large 2, AI21 Jamba and DeepSeek:
  OpenAI-like ``{"choices": [...]}`` (``delta.content``, ``message.content`` or ``text``).

The last chunk carries ``amazon-bedrock-invocationMetrics`` (token counts and latency), which ends
the stream. An exception frame (``:message-type`` ``exception``) is the stream's error. The fold
also takes botocore's event dicts (``{"chunk": {"bytes": b"..."}}``).
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, unquote

import orjson

from ..framing.eventstream import CONTENT_TYPE as EVENTSTREAM
from ..framing.eventstream import is_frame
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
    seq,
    string,
)

__all__ = ["PROTOCOL", "URL", "chunk_frame", "synthesize"]

URL = "https://bedrock-runtime.us-east-1.amazonaws.com/model/{model}/invoke-with-response-stream"
"""The InvokeModelWithResponseStream URL, with a `{model}` placeholder."""
_EXCEPTIONS = {
    "overloaded_error": "serviceUnavailableException",
    "server_error": "internalServerException",
    "api_error": "internalServerException",
    "rate_limit_error": "throttlingException",
    "rate_limit_exceeded": "throttlingException",
    "invalid_request_error": "validationException",
    "timeout": "modelTimeoutException",
}
_NOVA = frozenset(
    {"messageStart", "contentBlockStart", "contentBlockDelta", "contentBlockStop", "messageStop", "metadata"}
)


class _InvokeFold(Fold):
    """Each chunk's base64 JSON decoded and folded by its model family (fixed at the first chunk)."""

    protocol = "bedrock.invoke"
    container = "content block"

    def feed(self, event: Event) -> None:
        inner = self.chunk(event)
        if inner is None:
            return
        metrics = None
        for key in [k for k in inner if k.startswith("amazon-bedrock-")]:
            value = inner.pop(key)
            if key == "amazon-bedrock-invocationMetrics":
                metrics = obj(value)
        self.identify(inner)
        self.choice(0)
        if "type" in inner:
            self.anthropic(inner)
        elif "completion" in inner:
            self.add("text", string(inner.get("completion")))
            self.finished(inner.get("stop_reason"))
        elif "outputText" in inner:
            self.add("text", string(inner.get("outputText")))
            self.finished(inner.get("completionReason"))
        elif "generation" in inner:  # Meta Llama
            self.add("text", string(inner.get("generation")))
            self.finished(inner.get("stop_reason"))
        elif "outputs" in inner:  # Mistral 7B, Mixtral, Mistral Large (2402)
            for k, output in enumerate(seq(inner.get("outputs"))):
                self.add("text", string(obj(output).get("text")), choice=k)
                self.finished(obj(output).get("stop_reason"), k)
        elif "choices" in inner:  # AI21 Jamba, Mistral Large 2, DeepSeek: OpenAI-like chunks
            self.choices(seq(inner.get("choices")))
        elif {"text", "generations", "event_type", "is_finished"} & inner.keys():  # Cohere Command, Command R
            self.cohere(inner)
        else:
            for kind, payload in inner.items():
                if kind in _NOVA:
                    self.nova(kind, obj(payload))
        if metrics is not None:
            self.result.usage = self.result.usage or metrics
            self.result.complete = True

    def chunk(self, event: Event) -> JSON | None:
        """The decoded JSON of one chunk; None for a frame that carries none."""
        if is_frame(event):
            if event.message_type in ("exception", "error"):
                message = string(event.headers.get(":error-message"))
                try:
                    message = string(obj(event.json()).get("message")) or message
                except ValueError:
                    pass
                self.result.error = {"type": event.exception_type, "message": message}
                return None
            if event.event_type != "chunk":
                return None
            try:
                payload = obj(event.json())
            except ValueError:
                raise self.fail(f"chunk payload is not JSON: {event.payload[:40]!r}") from None
        elif isinstance(event, Mapping) and "chunk" in event:
            payload = obj(event["chunk"])
        else:
            raise self.fail(
                f"expected an eventstream frame or a botocore event dict, got {type(event).__name__}"
            )
        raw = payload.get("bytes")
        try:
            data = raw if isinstance(raw, bytes) else base64.b64decode(string(raw), validate=True)
            inner = json.loads(data)
        except (binascii.Error, ValueError):
            raise self.fail(f"chunk bytes are not base64 of JSON: {str(raw)[:40]!r}") from None
        if not isinstance(inner, dict):
            raise self.fail("chunk bytes are not a JSON object")
        return inner

    def finished(self, reason: Any, choice: int = 0) -> None:
        """Choice ``choice``'s finish reason, when the chunk gives one."""
        if reason is not None:
            self.choice(choice).finish_reason = string(reason) or None

    def choices(self, choices: list[Any]) -> None:
        """OpenAI-like choices: ``delta.content`` (AI21 Jamba), ``message.content`` (Mistral
        Large 2) or ``text`` (DeepSeek), each with ``finish_reason`` or ``stop_reason``."""
        for k, raw in enumerate(choices):
            choice = obj(raw)
            index = choice.get("index")
            index = index if isinstance(index, int) else k
            content = obj(choice.get("delta")) or obj(choice.get("message"))
            self.add("text", string(content.get("content")) or string(choice.get("text")), choice=index)
            self.finished(choice.get("finish_reason") or choice.get("stop_reason"), index)

    def cohere(self, chunk: JSON) -> None:
        """Cohere Command (``text`` by ``index``, or ``generations``; ``is_finished`` and
        ``finish_reason`` last) and Command R (the v1 chat events by ``event_type``)."""
        for k, generation in enumerate(seq(chunk.get("generations"))):
            index = obj(generation).get("index")
            index = index if isinstance(index, int) else k
            self.add("text", string(obj(generation).get("text")), choice=index)
            self.finished(obj(generation).get("finish_reason"), index)
        index = chunk.get("index")
        if chunk.get("event_type", "text-generation") == "text-generation":
            self.add("text", string(chunk.get("text")), choice=index if isinstance(index, int) else 0)
        if chunk.get("is_finished") is True and chunk.get("finish_reason") is not None:
            for choice in ([index] if isinstance(index, int) else list(self._choices)) or [0]:
                self.finished(chunk["finish_reason"], choice)

    def anthropic(self, event: JSON) -> None:
        kind = string(event.get("type"))
        raw = event.get("index")
        index = raw if isinstance(raw, int) else 0
        if kind == "message_start":
            message = obj(event.get("message"))
            self.identify(message)
            if isinstance(message.get("usage"), dict):
                self.result.usage = dict(message["usage"])
        elif kind == "content_block_start":
            block = obj(event.get("content_block"))
            if block.get("type") in ("tool_use", "server_tool_use"):
                call = self.tool(index)
                call.id, call.name = string(block.get("id")), string(block.get("name"))
            else:
                self.add("text", string(block.get("text")), key=(index, 0))
        elif kind == "content_block_delta":
            delta = obj(event.get("delta"))
            match delta.get("type"):
                case "text_delta":
                    self.add("text", string(delta.get("text")), key=(index, 0))
                case "thinking_delta":
                    self.add("thinking", string(delta.get("thinking")), key=(index, 0))
                case "signature_delta":
                    self.add("signature", string(delta.get("signature")), key=(index, 0))
                case "input_json_delta":
                    self.tool(index).arguments += string(delta.get("partial_json"))
        elif kind == "message_delta":
            reason = obj(event.get("delta")).get("stop_reason")
            if reason is not None:
                self.choice(0).finish_reason = string(reason) or None
            if isinstance(event.get("usage"), dict):
                self.result.usage = {**(self.result.usage or {}), **event["usage"]}
        elif kind == "message_stop":
            self.result.complete = True
        elif kind == "error":
            self.result.error = obj(event.get("error"))

    def nova(self, kind: str, payload: JSON) -> None:
        raw = payload.get("contentBlockIndex")
        index = raw if isinstance(raw, int) else 0
        if kind == "contentBlockStart":
            tool = obj(obj(payload.get("start")).get("toolUse"))
            if tool:
                call = self.tool(index)
                call.id, call.name = string(tool.get("toolUseId")), string(tool.get("name"))
        elif kind == "contentBlockDelta":
            delta = obj(payload.get("delta"))
            if "toolUse" in delta:
                self.tool(index).arguments += string(obj(delta["toolUse"]).get("input"))
            self.add("text", string(delta.get("text")), key=(index, 0))
            self.add("thinking", string(obj(delta.get("reasoningContent")).get("text")), key=(index, 0))
        elif kind == "messageStop":
            self.choice(0).finish_reason = string(payload.get("stopReason")) or None
        elif kind == "metadata" and isinstance(payload.get("usage"), dict):
            self.result.usage = dict(payload["usage"])


def chunk_frame(event: Any) -> bytes:
    """One ``chunk`` frame as Bedrock writes it: ``{"bytes": base64(JSON event)}``."""
    return bedrock_frame("chunk", {"bytes": base64.b64encode(orjson.dumps(event)).decode()})


def error_event(error: StreamError) -> bytes:
    """An exception frame (``:exception-type`` such as ``throttlingException``)."""
    member = _EXCEPTIONS.get(error.kind, error.kind)
    return bedrock_frame(member, {"message": error.message or member}, message_type="exception")


def http_error(status: int, message: str | None) -> HTTPErrorBody:
    """Bedrock's JSON error body, with the model runtime's codes and messages."""
    return bedrock_error_body(status, message)


def _is_invoke(url: str) -> bool:
    parts = unquote(_path(url)).split("/")
    return len(parts) >= 4 and parts[1] == "model" and parts[-1] == "invoke-with-response-stream"


def _telling(event: Any) -> bool:
    """A ``chunk`` whose bytes are base64 of a JSON object (an InvokeAgent chunk holds raw text)."""
    if is_frame(event):
        if event.event_type != "chunk":
            return False
        try:
            payload = event.json()
        except ValueError:
            return False
    elif isinstance(event, Mapping) and len(event) == 1 and isinstance(event.get("chunk"), Mapping):
        payload = event["chunk"]
    else:
        return False
    raw = obj(payload).get("bytes")
    try:
        return isinstance(json.loads(raw if isinstance(raw, bytes) else base64.b64decode(string(raw))), dict)
    except (binascii.Error, ValueError):
        return False


def synthesize(
    text: str = "",
    *,
    usage: Mapping[str, Any] | None = None,
    finish_reason: str | None = None,
    model: str = "anthropic.claude-3-haiku-20240307-v1:0",
    chunk_size: int = 4,
    gap: float = 0.03,
    first_token: float = 0.25,
    seed: int = 0,
    prompt: str = syn.DEFAULT_PROMPT,
    url: str | None = None,
) -> Cassette:
    """An InvokeModelWithResponseStream answer of Claude on Bedrock (Messages API): its events, each
    base64 JSON in a ``chunk`` frame, the last with ``amazon-bedrock-invocationMetrics``."""
    syn.check_timing(chunk_size, gap, first_token)
    rng = syn.Rng(seed)
    tokens = dict(usage) if usage is not None else {"input_tokens": 8 + len(prompt) // 4, "output_tokens": 1}
    events: list[JSON] = [
        {
            "type": "message_start",
            "message": {
                "id": f"msg_bdrk_{rng.token(24)}",
                "type": "message",
                "role": "assistant",
                "model": model.split(".", 1)[-1].rsplit("-v", 1)[0],
                "content": [],
                "stop_reason": None,
                "usage": {"input_tokens": tokens.get("input_tokens", 0), "output_tokens": 1},
            },
        },
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    ]
    events += [
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": piece}}
        for piece in syn.pieces(text, chunk_size, rng.pieces)
    ]
    events += [
        {"type": "content_block_stop", "index": 0},
        {
            "type": "message_delta",
            "delta": {"stop_reason": finish_reason or "end_turn", "stop_sequence": None},
            "usage": {"output_tokens": tokens.get("output_tokens", 1)},
        },
        {
            "type": "message_stop",
            "amazon-bedrock-invocationMetrics": {
                "inputTokenCount": tokens.get("input_tokens", 0),
                "outputTokenCount": tokens.get("output_tokens", 1),
                "invocationLatency": 480,
                "firstByteLatency": 250,
            },
        },
    ]
    frames = [chunk_frame(e) for e in events]
    chunks, times = syn.schedule(frames, rng.writes, first_token=first_token, gap=gap)
    body: JSON = {
        "anthropic_version": "bedrock-2023-05-31",
        "max_tokens": 1024,
        "messages": syn.user(prompt),
    }
    return syn.one_interaction(
        url or URL.format(model=quote(model, safe="")),
        body,
        chunks,
        times,
        content_type=EVENTSTREAM,
        headers={"x-amzn-bedrock-content-type": "application/json"},
    )


PROTOCOL = Protocol(
    name="bedrock.invoke",
    framing="eventstream",
    fold=_InvokeFold,
    error_event=error_event,
    http_error=http_error,
    url=_is_invoke,
    content_type=lambda media: media == EVENTSTREAM,
    event=_telling,
    synthesize=synthesize,
)
"""The `bedrock.invoke` protocol, as registered in `ssemock.protocols`."""
