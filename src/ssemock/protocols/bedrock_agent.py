"""``bedrock.agent``: Amazon Bedrock Agents' InvokeAgent
(``POST /agents/{agentId}/agentAliases/{aliasId}/sessions/{sessionId}/text`` on
``bedrock-agent-runtime``): AWS eventstream frames by ``:event-type``:

* ``chunk``: ``{"bytes": base64(text), "attribution": {"citations": [...]}}``, the agent's answer
  as raw UTF-8 text (no JSON inside, unlike InvokeModel's chunks; a character may be split
  between two chunks);
* ``trace``: the agent's reasoning steps (``{"agentId", ..., "trace": {...}}``), skipped;
* ``returnControl``: ``{"invocationId", "invocationInputs": [...]}``: the agent hands a call
  back to the application (a ``functionInvocationInput`` with ``function`` and ``parameters``
  ``[{name, type, value}]``, or an ``apiInvocationInput`` with ``apiPath``): its tool calls;
* ``files``: files the agent made, skipped;
* an exception frame (``:message-type`` ``exception``): the stream's error.

The stream has no terminator (it ends with the connection): ``complete`` stays False. The fold
also takes botocore's event dicts (``{"chunk": {"bytes": b"..."}}``, ``{"trace": {...}}``).
"""

from __future__ import annotations

import base64
import binascii
import codecs
from collections.abc import Mapping, Sequence
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
    Accumulated,
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

__all__ = ["PROTOCOL", "URL", "synthesize"]

URL = (
    "https://bedrock-agent-runtime.us-east-1.amazonaws.com/agents/{agent}/agentAliases/{alias}"
    "/sessions/{session}/text"
)
"""The InvokeAgent URL, with `{agent}`, `{alias}` and `{session}` placeholders."""
_EVENTS = frozenset({"chunk", "trace", "returnControl", "files"})
_EXCEPTIONS = {
    "server_error": "internalServerException",
    "api_error": "internalServerException",
    "overloaded_error": "serviceQuotaExceededException",
    "rate_limit_error": "throttlingException",
    "rate_limit_exceeded": "throttlingException",
    "invalid_request_error": "validationException",
}
_HTTP: dict[int, tuple[str, str | None]] = {
    400: ("ValidationException", None),
    403: ("AccessDeniedException", None),
    404: ("ResourceNotFoundException", None),
    409: ("ConflictException", None),
    424: ("DependencyFailedException", None),
    429: ("ThrottlingException", None),
    502: ("BadGatewayException", None),
}


class _AgentFold(Fold):
    """The agent's text from its chunks, its tool calls from ``returnControl``."""

    protocol = "bedrock.agent"

    def __init__(self) -> None:
        super().__init__()
        self._utf8 = codecs.getincrementaldecoder("utf-8")("replace")

    def feed(self, event: Event) -> None:
        kind, payload = self._event(event)
        self.choice(0)
        if kind == "chunk":
            raw = payload.get("bytes")
            try:
                data = raw if isinstance(raw, bytes) else base64.b64decode(string(raw), validate=True)
            except binascii.Error:
                raise self.fail(f"chunk bytes are not base64: {str(raw)[:40]!r}") from None
            self.add("text", self._utf8.decode(data))
            self.result.citations.extend(seq(obj(payload.get("attribution")).get("citations")))
        elif kind == "returnControl":
            for item in seq(payload.get("invocationInputs")):
                function = obj(obj(item).get("functionInvocationInput"))
                api = obj(obj(item).get("apiInvocationInput"))
                call = self.tool(len(self._tools), type="function" if function else "api")
                call.id = string(payload.get("invocationId"))
                call.name = string(function.get("function")) or string(api.get("apiPath"))
                params = seq((function or api).get("parameters"))
                call.arguments = syn.compact(
                    {string(obj(p).get("name")): obj(p).get("value") for p in params}
                )

    def _event(self, event: Event) -> tuple[str, JSON]:
        """(event type, payload) of a frame or a botocore event dict; ("", {}) for an error."""
        if is_frame(event):
            if event.message_type in ("exception", "error"):
                message = string(event.headers.get(":error-message"))
                try:
                    message = string(obj(event.json()).get("message")) or message
                except ValueError:
                    pass
                self.result.error = {"type": event.exception_type, "message": message}
                return "", {}
            try:
                return event.event_type, obj(event.json())
            except ValueError:
                raise self.fail(f"{event.event_type} payload is not JSON: {event.payload[:40]!r}") from None
        if isinstance(event, Mapping) and len(event) == 1:
            kind, payload = next(iter(event.items()))
            return str(kind), obj(payload)
        raise self.fail(f"expected an eventstream frame or a botocore event dict, got {type(event).__name__}")

    def finish(self) -> Accumulated:
        self.add("text", self._utf8.decode(b"", final=True))
        return super().finish()


def error_event(error: StreamError) -> bytes:
    """An exception frame (``:exception-type`` such as ``throttlingException``)."""
    member = _EXCEPTIONS.get(error.kind, error.kind)
    return bedrock_frame(member, {"message": error.message or member}, message_type="exception")


def http_error(status: int, message: str | None) -> HTTPErrorBody:
    """Bedrock's JSON error body, with InvokeAgent's codes."""
    return bedrock_error_body(status, message, _HTTP)


def _is_agent(url: str) -> bool:
    parts = unquote(_path(url)).split("/")
    return len(parts) == 8 and parts[1] == "agents" and parts[3] == "agentAliases" and parts[5] == "sessions"


def _raw_text(payload: Any) -> bool:
    """A chunk's ``bytes`` hold text that is no JSON object (InvokeModel's chunks hold one)."""
    raw = obj(payload).get("bytes")
    try:
        data = raw if isinstance(raw, bytes) else base64.b64decode(string(raw), validate=True)
        return not isinstance(orjson.loads(data), dict)
    except (binascii.Error, orjson.JSONDecodeError):
        return True


def _telling(event: Any) -> bool:
    if is_frame(event):
        if event.event_type in ("trace", "returnControl", "files"):
            return True
        try:
            return event.event_type == "chunk" and _raw_text(event.json())
        except ValueError:
            return False
    if isinstance(event, Mapping) and len(event) == 1:
        kind = next(iter(event))
        return kind in ("trace", "returnControl", "files") or (kind == "chunk" and _raw_text(event[kind]))
    return False


def synthesize(
    text: str = "",
    *,
    tool_calls: Sequence[syn.ToolCallSpec] = (),
    chunk_size: int = 40,
    gap: float = 0.03,
    first_token: float = 0.6,
    seed: int = 0,
    prompt: str = syn.DEFAULT_PROMPT,
    url: str | None = None,
) -> Cassette:
    """An InvokeAgent answer: a ``trace`` frame, the text in ``chunk`` frames of raw UTF-8 (cut
    by bytes, so a character may span two chunks), then the ``tool_calls`` handed back in one
    ``returnControl`` frame (arguments as ``parameters`` ``[{name, type, value}]``)."""
    syn.check_timing(chunk_size, gap, first_token)
    rng = syn.Rng(seed)
    calls = syn.calls(tool_calls, rng, "")
    agent, alias, session = rng.token(10).upper(), rng.token(10).upper(), f"session-{rng.token(8)}"
    trace = {"orchestrationTrace": {"rationale": {"traceId": f"{rng.token(8)}-0", "text": "Answering."}}}
    frames = [
        bedrock_frame(
            "trace", {"agentId": agent, "agentAliasId": alias, "sessionId": session, "trace": trace}
        )
    ]
    data, at = text.encode(), 0
    for piece in syn.pieces(text, chunk_size, rng.pieces):  # now and then a byte more or less
        cut = min(len(data), at + len(piece.encode()) + rng.pieces.choice((-1, 0, 0, 1)))
        if cut > at:
            frames.append(bedrock_frame("chunk", {"bytes": base64.b64encode(data[at:cut]).decode()}))
            at = cut
    if at < len(data):
        frames.append(bedrock_frame("chunk", {"bytes": base64.b64encode(data[at:]).decode()}))
    if calls:
        inputs = [
            {
                "functionInvocationInput": {
                    "actionGroup": "tools",
                    "function": c.name,
                    "parameters": [
                        {"name": k, "type": "string", "value": v if isinstance(v, str) else syn.compact(v)}
                        for k, v in (c.value.items() if isinstance(c.value, dict) else ())
                    ],
                }
            }
            for c in calls
        ]
        frames.append(
            bedrock_frame("returnControl", {"invocationId": str(rng.token(12)), "invocationInputs": inputs})
        )
    chunks, times = syn.schedule(frames, rng.writes, first_token=first_token, gap=gap)
    return syn.one_interaction(
        url or URL.format(agent=agent, alias=alias, session=quote(session)),
        {"inputText": prompt, "enableTrace": True},
        chunks,
        times,
        content_type=EVENTSTREAM,
        headers={"x-amz-bedrock-agent-session-id": session},
    )


PROTOCOL = Protocol(
    name="bedrock.agent",
    framing="eventstream",
    fold=_AgentFold,
    error_event=error_event,
    http_error=http_error,
    url=_is_agent,
    content_type=lambda media: media == EVENTSTREAM,
    event=_telling,
    synthesize=synthesize,
)
"""The `bedrock.agent` protocol, as registered in `ssemock.protocols`."""
