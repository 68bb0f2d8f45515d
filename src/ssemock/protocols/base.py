"""The shared shapes of every protocol: the accumulated result, the fold base, error shapes.

A protocol module's reference accumulator subclasses `Fold`; its result is an
[`Accumulated`][ssemock.Accumulated]. `StreamError` and `HTTPErrorBody` are what a protocol's
``error_event`` and ``http_error`` take and give (see `ssemock.protocols`). What one provider's
protocols share (protocols never import each other) is here too: OpenAI's error body,
Anthropic's, Bedrock's frames and error body, Cohere's token counts and SDK stream.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeAlias

import orjson

from ..framing.eventstream import encode as encode_frame
from ..framing.sse import ServerSentEvent, is_event

__all__ = [
    "JSON",
    "Accumulated",
    "Choice",
    "Event",
    "Fold",
    "HTTPErrorBody",
    "MessageMatching",
    "ProtocolError",
    "StreamError",
    "ToolCall",
    "TypedFold",
    "anthropic_error_body",
    "anthropic_error_event",
    "bedrock_error_body",
    "bedrock_frame",
    "cohere_stream",
    "cohere_usage",
    "error_of",
    "excerpt",
    "obj",
    "openai_error_body",
    "seq",
    "sse_json",
    "string",
]

JSON: TypeAlias = dict[str, Any]
Event: TypeAlias = ServerSentEvent | Mapping[str, Any] | Any


class ProtocolError(ValueError):
    """The stream cannot be folded: unknown protocol, or input no server of it could send."""

    def __init__(self, message: str, *, protocol: str | None = None, index: int | None = None):
        super().__init__(message)
        self.protocol = protocol
        """The protocol being folded, when known."""
        self.index = index
        """The position of the offending event in the stream, when known."""


@dataclass
class ToolCall:
    """One tool call; ``arguments`` is the JSON text as streamed, concatenated.

    ``index`` is the wire index for openai.chat, elsewhere the call's position in the message.
    """

    index: int
    """The wire index (openai.chat) or the call's position in the message."""
    id: str = ""
    """The call's id."""
    name: str = ""
    """The tool's name."""
    arguments: str = ""
    """The arguments as JSON text, as streamed, concatenated."""
    type: str = "function"
    """The call's type (`"function"` unless the provider says otherwise)."""

    @property
    def parsed_arguments(self) -> Any:
        """The arguments decoded: ``{}`` when none were streamed, None when not valid JSON."""
        if not self.arguments:
            return {}
        try:
            return orjson.loads(self.arguments)
        except orjson.JSONDecodeError:
            return None

    def to_dict(self) -> JSON:
        """Plain JSON-able form, with the arguments both as streamed and parsed."""
        return {
            "index": self.index,
            "id": self.id,
            "type": self.type,
            "name": self.name,
            "arguments": self.arguments,
            "parsed_arguments": self.parsed_arguments,
        }


@dataclass
class Choice:
    """One completion choice (a single one for every protocol but openai.chat with ``n > 1``)."""

    index: int
    """The choice's index (0 for most streams)."""
    text: str = ""
    """The text, concatenated."""
    refusal: str = ""
    """The refusal text, if the model refused."""
    tool_calls: list[ToolCall] = field(default_factory=list)
    """The tool calls, in order."""
    finish_reason: str | None = None
    """Why the choice ended (`"stop"`, `"tool_calls"`, ...), as the provider names it."""
    thinking: str = ""
    """The reasoning text, concatenated."""
    signature: str = ""
    """The signature of the thinking text (Anthropic)."""

    def to_dict(self) -> JSON:
        """Plain JSON-able form."""
        return {
            "index": self.index,
            "text": self.text,
            "refusal": self.refusal,
            "thinking": self.thinking,
            "signature": self.signature,
            "tool_calls": [call.to_dict() for call in self.tool_calls],
            "finish_reason": self.finish_reason,
        }


@dataclass
class Accumulated:
    """The final message a stream spells; the per-message shortcuts read choice 0.

    ``complete`` says the protocol's terminator was seen; ``error`` holds a mid-stream error.
    """

    protocol: str
    """The protocol folded (`"openai.chat"`, `"anthropic.messages"`, ...)."""
    choices: list[Choice] = field(default_factory=list)
    """Every choice (candidate message) of the stream."""
    usage: JSON | None = None
    """The token usage the stream reported, as JSON."""
    error: JSON | None = None
    """An error the stream carried mid-way, as JSON."""
    complete: bool = False
    """Whether the protocol's terminator was seen."""
    citations: list[Any] = field(default_factory=list)
    """Citations the provider sent, in order."""
    id: str = ""
    """The message or response id."""
    model: str = ""
    """The model name the stream reported."""

    @property
    def _main(self) -> Choice:
        return next((c for c in self.choices if c.index == 0), Choice(0))

    @property
    def text(self) -> str:
        """Choice 0's text ("" when there is none)."""
        return self._main.text

    @property
    def refusal(self) -> str:
        """Choice 0's refusal text."""
        return self._main.refusal

    @property
    def thinking(self) -> str:
        """Choice 0's reasoning text (Anthropic thinking, reasoning summaries, Ollama thinking)."""
        return self._main.thinking

    @property
    def signature(self) -> str:
        """Choice 0's thinking signature (Anthropic)."""
        return self._main.signature

    @property
    def tool_calls(self) -> list[ToolCall]:
        """Choice 0's tool calls, in order."""
        return self._main.tool_calls

    @property
    def finish_reason(self) -> str | None:
        """Choice 0's finish reason (Anthropic's stop_reason, Ollama's done_reason)."""
        return self._main.finish_reason

    def to_dict(self) -> JSON:
        """Plain JSON-able form of everything above."""
        return {
            "protocol": self.protocol,
            "id": self.id,
            "model": self.model,
            "text": self.text,
            "refusal": self.refusal,
            "thinking": self.thinking,
            "signature": self.signature,
            "tool_calls": [call.to_dict() for call in self.tool_calls],
            "finish_reason": self.finish_reason,
            "usage": self.usage,
            "error": self.error,
            "complete": self.complete,
            "citations": list(self.citations),
            "choices": [choice.to_dict() for choice in self.choices],
        }


def obj(value: Any) -> JSON:
    """``value`` if it is a JSON object, else an empty one (absent and null fields read alike)."""
    return value if isinstance(value, dict) else {}


def seq(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def string(value: Any) -> str:
    return value if isinstance(value, str) else ""


def error_of(value: Any) -> JSON:
    """An error payload as a dict (Ollama sends a bare message string)."""
    return dict(value) if isinstance(value, dict) else {"message": str(value)}


def excerpt(text: str, size: int = 40) -> str:
    return repr(text[:size]) + ("..." if len(text) > size else "")


class Fold(ABC):
    """State shared by every protocol: choices built from keyed text parts and tool calls.

    Text arrives as parts keyed by (block, part) index and is joined in key order at the end,
    so a message's blocks read in their order even when their deltas interleave.
    """

    protocol: ClassVar[str]
    container: ClassVar[str] = "block"  # what an opened index is called in errors

    def __init__(self) -> None:
        self.at = 0  # position of the event being fed, for errors
        self.result = Accumulated(self.protocol)
        self._choices: dict[int, Choice] = {}
        self._parts: dict[tuple[int, str], dict[tuple[int, int], list[str]]] = {}
        self._tools: dict[tuple[int, Any], ToolCall] = {}  # (choice, sortable key)
        self._opened: dict[int, str] = {}

    @abstractmethod
    def feed(self, event: Event) -> None:
        """Fold one event."""

    def finish(self) -> Accumulated:
        """The result, with text joined and tool calls attached in order."""
        for (index, name), parts in self._parts.items():
            text = "".join(piece for _, pieces in sorted(parts.items()) for piece in pieces)
            setattr(self._choices[index], name, text)
        for (index, _), call in sorted(self._tools.items()):
            self._choices[index].tool_calls.append(call)
        self.result.choices = [self._choices[index] for index in sorted(self._choices)]
        return self.result

    def fail(self, problem: str) -> ProtocolError:
        return ProtocolError(
            f"{self.protocol}: event {self.at}: {problem}", protocol=self.protocol, index=self.at
        )

    def choice(self, index: int) -> Choice:
        return self._choices.setdefault(index, Choice(index))

    def add(self, name: str, text: str, *, choice: int = 0, key: tuple[int, int] = (0, 0)) -> None:
        """Append ``text`` to the choice's field ``name`` (text, refusal, thinking, signature)."""
        self.choice(choice)
        if text:
            self._parts.setdefault((choice, name), {}).setdefault(key, []).append(text)

    def tool(
        self, key: Any, *, choice: int = 0, index: int | None = None, type: str = "function"
    ) -> ToolCall:
        """The tool call under ``key``, created on first use (``index``: default its position)."""
        self.choice(choice)
        if (choice, key) not in self._tools:
            position = sum(1 for c, _ in self._tools if c == choice)
            self._tools[choice, key] = ToolCall(position if index is None else index, type=type)
        return self._tools[choice, key]

    def identify(self, message: Mapping[str, Any]) -> None:
        """Take the message id and model; the first non-empty value wins."""
        self.result.id = self.result.id or string(message.get("id"))
        self.result.model = self.result.model or string(message.get("model"))

    def need_int(self, obj: JSON, key: str, what: str) -> int:
        value = obj.get(key)
        if not isinstance(value, int) or isinstance(value, bool):
            found = excerpt(orjson.dumps(obj).decode(), 80)
            raise self.fail(f"{what} has no integer {key!r}: {found}")
        return value

    def open(self, index: int, kind: str) -> None:
        """Start the content block / output item ``index``."""
        if index in self._opened:
            raise self.fail(f"{self.container} {index} started twice")
        self._opened[index] = kind

    def expect(self, index: int, what: str, kinds: tuple[str, ...] | None = None) -> str:
        """The kind of the started block ``index``, which must be one of ``kinds``."""
        kind = self._opened.get(index)
        if kind is None:
            raise self.fail(f"{what} for {self.container} {index}, which never started")
        if kinds is not None and kind not in kinds:
            raise self.fail(f"{what} for {self.container} {index}, a {kind!r} {self.container}")
        return kind

    def sse(self, event: Event) -> ServerSentEvent:
        if not is_event(event):
            raise self.fail(f"expected a ServerSentEvent, got {type(event).__name__}")
        return event

    def json_object(self, data: str) -> JSON:
        try:
            value = orjson.loads(data)
        except orjson.JSONDecodeError:
            raise self.fail(f"data is not JSON: {excerpt(data)}") from None
        if not isinstance(value, dict):
            raise self.fail(f"data is not a JSON object: {excerpt(data)}")
        return value


class TypedFold(Fold):
    """SSE protocols whose data is a JSON object carrying its event ``type``."""

    def feed(self, event: Event) -> None:
        sse = self.sse(event)
        payload = self.json_object(sse.data)
        self.on(string(payload.get("type")) or sse.event, payload)

    @abstractmethod
    def on(self, kind: str, payload: JSON) -> None:
        """Fold one event of type ``kind``."""


@dataclass(frozen=True)
class StreamError:
    """A mid-stream error to write in a protocol's own shape (``faults.error_event``).

    ``kind``: the provider's error type (``"overloaded_error"``, ``"server_error"``, ...);
    ``message``: its text; ``framing``: the framing of the body it goes into; ``newline``:
    the body's line ending (``"\r\n"`` for CRLF streams); ``after_first``: for a JSON array
    body, whether an element precedes the error (then it starts with the separator);
    ``request_id``: the JSON-RPC id of the request the stream still owes an answer (MCP: the
    error answers it, so the client fails that call), None when there is none; ``before``: the
    body's bytes before the error (a protocol with several shapes writes the one the stream
    speaks: A2A's JSON-RPC or HTTP+JSON).
    """

    kind: str
    message: str
    framing: str = "sse"
    newline: str = "\n"
    after_first: bool = True
    request_id: str | int | None = None
    before: bytes = b""


@dataclass(frozen=True)
class MessageMatching:
    """How a replay matches the client's messages of a protocol spoken over a WebSocket, unless
    the test asks for strict matching (``ignore_message_paths=["strict"]``).

    ``ignore``: JSON paths of the client's messages left out (ids the client draws at random);
    ``by_length``: JSON paths whose text is compared by its length only (the base64 audio a voice
    app sends inside JSON: a replay matches it by its place in the conversation and its length,
    not by samples that differ from one run to the next). Paths as ``ignore_message_paths``
    takes them: ``$.name``, ``[N]``, ``[*]``."""

    ignore: tuple[str, ...] = ()
    by_length: tuple[str, ...] = ()


@dataclass(frozen=True)
class HTTPErrorBody:
    """The body a provider answers an HTTP error with, and its content type."""

    body: bytes
    content_type: str = "application/json"


def sse_json(event: Any) -> JSON:
    """The JSON object an SSE event's data holds ({} when it is not one)."""
    data = getattr(event, "data", None)
    if not isinstance(data, str):
        return {}
    try:
        return obj(orjson.loads(data))
    except orjson.JSONDecodeError:
        return {}


_OPENAI_CODES = {429: "rate_limit_exceeded", 500: "server_error", 503: "server_error", 401: "invalid_api_key"}


def openai_error_body(status: int, message: str | None) -> HTTPErrorBody:
    """OpenAI's ``{"error": {message, type, param, code}}``: the HTTP error body of both OpenAI
    protocols (Chat Completions and Responses) and of the servers compatible with them."""
    kind = "requests" if status == 429 else "server_error" if status >= 500 else "invalid_request_error"
    return HTTPErrorBody(
        orjson.dumps(
            {
                "error": {
                    "message": message or f"ssemock http_error {status}",
                    "type": kind,
                    "param": None,
                    "code": _OPENAI_CODES.get(status),
                }
            }
        )
    )


def anthropic_error_body(kind: str, message: str | None) -> HTTPErrorBody:
    """Anthropic's error body, ``{"type": "error", "error": {type, message}}`` (no ``message``:
    the type's words): the HTTP error body of the Messages and the sessions protocols."""
    return HTTPErrorBody(
        orjson.dumps({"type": "error", "error": {"type": kind, "message": message or kind.replace("_", " ")}})
    )


def anthropic_error_event(error: StreamError) -> bytes:
    """``event: error`` with ``{"type": "error", "error": {type, message}}``, as Anthropic's API
    writes a mid-stream error (the SDK raises it)."""
    nl = error.newline.encode()
    payload = {"type": "error", "error": {"type": error.kind, "message": error.message}}
    return b"event: error" + nl + b"data: " + orjson.dumps(payload) + nl + nl


def bedrock_frame(event_type: str, payload: Any, *, message_type: str = "event") -> bytes:
    """One eventstream frame as Bedrock writes it (ConverseStream, InvokeModel's, InvokeAgent's):
    ``:event-type`` (or ``:exception-type``), ``:content-type`` and ``:message-type`` headers, a
    JSON payload."""
    name = ":exception-type" if message_type == "exception" else ":event-type"
    headers = {name: event_type, ":content-type": "application/json", ":message-type": message_type}
    return encode_frame(headers, orjson.dumps(payload))


_BEDROCK_RUNTIME: dict[int, tuple[str, str | None]] = {
    400: ("ValidationException", "Malformed input request, please reformat your input and try again."),
    403: ("AccessDeniedException", "You don't have access to the model with the specified model ID."),
    404: ("ResourceNotFoundException", "The provided model identifier is invalid."),
    408: ("ModelTimeoutException", "Model has timed out in processing the request. Try your request again."),
    424: ("ModelErrorException", "The model encountered an error processing the request."),
    429: ("ThrottlingException", "Too many requests, please wait before trying again."),
    500: (
        "InternalServerException",
        "The server encountered an internal error while processing the request.",
    ),
    503: ("ServiceUnavailableException", "Bedrock is unable to process your request."),
}  # HTTP status -> (error code, message) of bedrock-runtime's operations (ConverseStream, InvokeModel...)


def bedrock_error_body(
    status: int, message: str | None, known: Mapping[int, tuple[str, str | None]] = _BEDROCK_RUNTIME
) -> HTTPErrorBody:
    """Bedrock's JSON error body; ``__type`` names the error, which botocore reads as its code:
    ``known[status]`` (the code, and the message when none is given; None: ssemock's; by default
    bedrock-runtime's), else ``InternalServerException`` (5xx) or ``ValidationException``."""
    fallback = "InternalServerException" if status >= 500 else "ValidationException"
    code, text = known.get(status, (fallback, None))
    return HTTPErrorBody(
        orjson.dumps({"message": message or text or f"ssemock http_error {status}", "__type": code})
    )


def cohere_usage(prompt: str, count: int) -> JSON:
    """The token counts of a synthesized Cohere answer of ``count`` pieces to ``prompt``, as v2's
    ``usage`` and v1's ``meta`` give them."""
    prompt_tokens = 4 + len(prompt) // 4
    return {
        "billed_units": {"input_tokens": prompt_tokens, "output_tokens": count},
        "tokens": {"input_tokens": prompt_tokens + 60, "output_tokens": count + 2},
    }


def cohere_stream(client: Any, interaction: Any) -> bool:
    """An interaction's request streamed through a cohere SDK client's ``chat_stream`` (v2's
    ``ClientV2``, v1's ``Client``), read to its end."""
    body = {k: v for k, v in interaction.request.json().items() if k != "stream"}
    for _ in client.chat_stream(**body):
        pass
    return True
