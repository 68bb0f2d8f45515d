"""Reference accumulators: fold a decoded stream into the final message it spells.

The result is the expectation a test compares a client's own accumulation against, so each protocol
is folded the way its provider documents it and nothing is guessed. Unknown event and delta types
are skipped (forward compatibility); structurally impossible input (a delta for a content block that
never started, a tool-call delta without an index, data that is not JSON) raises
:class:`ProtocolError` naming the protocol and the event's position in the stream.

Protocols: ``"openai.chat"``, ``"openai.responses"``, ``"anthropic.messages"`` (events are
:class:`~ssemock.sse.ServerSentEvent`) and ``"ollama.chat"`` (events are the parsed JSON lines).
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeAlias
from urllib.parse import urlsplit

import orjson

from .sse import ServerSentEvent

__all__ = [
    "PROTOCOLS", "Accumulated", "Choice", "ProtocolError", "ToolCall", "accumulate",
    "detect_protocol",
]

JSON: TypeAlias = dict[str, Any]
Event: TypeAlias = ServerSentEvent | Mapping[str, Any]

PROTOCOLS = ("openai.chat", "openai.responses", "anthropic.messages", "ollama.chat")


class ProtocolError(ValueError):
    """The stream cannot be folded: unknown protocol, or input no server of it could send."""

    def __init__(self, message: str, *, protocol: str | None = None, index: int | None = None):
        super().__init__(message)
        self.protocol = protocol
        self.index = index


@dataclass
class ToolCall:
    """One tool call; ``arguments`` is the JSON text as streamed, concatenated.

    ``index`` is the wire index for openai.chat, elsewhere the call's position in the message.
    """

    index: int
    id: str = ""
    name: str = ""
    arguments: str = ""
    type: str = "function"

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
            "index": self.index, "id": self.id, "type": self.type, "name": self.name,
            "arguments": self.arguments, "parsed_arguments": self.parsed_arguments,
        }


@dataclass
class Choice:
    """One completion choice (a single one for every protocol but openai.chat with ``n > 1``)."""

    index: int
    text: str = ""
    refusal: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    finish_reason: str | None = None
    thinking: str = ""
    signature: str = ""

    def to_dict(self) -> JSON:
        """Plain JSON-able form."""
        return {
            "index": self.index, "text": self.text, "refusal": self.refusal,
            "thinking": self.thinking, "signature": self.signature,
            "tool_calls": [call.to_dict() for call in self.tool_calls],
            "finish_reason": self.finish_reason,
        }


@dataclass
class Accumulated:
    """The final message a stream spells; the per-message shortcuts read choice 0.

    ``complete`` says the protocol's terminator was seen; ``error`` holds a mid-stream error.
    """

    protocol: str
    choices: list[Choice] = field(default_factory=list)
    usage: JSON | None = None
    error: JSON | None = None
    complete: bool = False
    citations: list[Any] = field(default_factory=list)
    id: str = ""
    model: str = ""

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
            "protocol": self.protocol, "id": self.id, "model": self.model,
            "text": self.text, "refusal": self.refusal, "thinking": self.thinking,
            "signature": self.signature, "tool_calls": [call.to_dict() for call in self.tool_calls],
            "finish_reason": self.finish_reason, "usage": self.usage, "error": self.error,
            "complete": self.complete, "citations": list(self.citations),
            "choices": [choice.to_dict() for choice in self.choices],
        }


def accumulate(
    events: Iterable[Event],
    protocol: str | None = None,
    *,
    url: str | None = None,
    content_type: str | None = None,
) -> Accumulated:
    """Fold ``events`` into the final message; ``protocol=None`` detects it (see detect_protocol).

    Events after the terminator (``[DONE]``, ``message_stop``, ...) are ignored.
    """
    if protocol is None:
        events = list(events)
        protocol = detect_protocol(events, url=url, content_type=content_type)
    fold_class = _FOLDS.get(protocol)
    if fold_class is None:
        raise ProtocolError(f"unknown protocol {protocol!r}; known: {', '.join(PROTOCOLS)}")
    fold = fold_class()
    for position, event in enumerate(events):
        if fold.result.complete:
            break
        fold.at = position
        fold.feed(event)
    return fold.finish()


_URL_SUFFIXES = (
    ("/chat/completions", "openai.chat"), ("/responses", "openai.responses"),
    ("/v1/messages", "anthropic.messages"), ("/api/chat", "ollama.chat"),
    ("/api/generate", "ollama.chat"),
)
_ANTHROPIC_EVENTS = frozenset({
    "message_start", "content_block_start", "content_block_delta", "content_block_stop",
    "message_delta", "message_stop",
})


def detect_protocol(
    events: Iterable[Event] = (), *, url: str | None = None, content_type: str | None = None,
) -> str:
    """The protocol of a stream: from the request URL, else the content type, else the events.

    Events are read until one is telling (it consumes an iterator that far).
    """
    if url:
        path = urlsplit(url).path.rstrip("/")
        for suffix, protocol in _URL_SUFFIXES:
            if path.endswith(suffix):
                return protocol
    if content_type and content_type.split(";")[0].strip().lower() == "application/x-ndjson":
        return "ollama.chat"
    for event in events:
        found = _protocol_of(event)
        if found:
            return found
    raise ProtocolError(
        f"cannot detect the protocol: nothing in url={url!r}, content_type={content_type!r} "
        "or the events matches any of " + ", ".join(PROTOCOLS)
    )


def _protocol_of(event: Event) -> str | None:
    """The protocol one event belongs to, if it tells."""
    if not isinstance(event, ServerSentEvent):
        return "ollama.chat" if isinstance(event, Mapping) else None
    try:
        payload = _obj(orjson.loads(event.data))
    except orjson.JSONDecodeError:
        payload = {}
    kinds = {event.event, _str(payload.get("type"))}
    if kinds & _ANTHROPIC_EVENTS:
        return "anthropic.messages"
    if any(kind.startswith("response.") for kind in kinds):
        return "openai.responses"
    if payload.get("object") == "chat.completion.chunk" or "choices" in payload:
        return "openai.chat"
    return None


def _obj(value: Any) -> JSON:
    """``value`` if it is a JSON object, else an empty one (absent and null fields read alike)."""
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _error_of(value: Any) -> JSON:
    """An error payload as a dict (Ollama sends a bare message string)."""
    return dict(value) if isinstance(value, dict) else {"message": str(value)}


def _excerpt(text: str, size: int = 40) -> str:
    return repr(text[:size]) + ("..." if len(text) > size else "")


class _Fold(ABC):
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
        self._tools: dict[tuple[int, int], ToolCall] = {}
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

    def tool(self, key: int, *, choice: int = 0, index: int | None = None,
             type: str = "function") -> ToolCall:
        """The tool call under ``key``, created on first use (``index``: default its position)."""
        self.choice(choice)
        if (choice, key) not in self._tools:
            position = sum(1 for c, _ in self._tools if c == choice)
            self._tools[choice, key] = ToolCall(position if index is None else index, type=type)
        return self._tools[choice, key]

    def identify(self, message: Mapping[str, Any]) -> None:
        """Take the message id and model; the first non-empty value wins."""
        self.result.id = self.result.id or _str(message.get("id"))
        self.result.model = self.result.model or _str(message.get("model"))

    def need_int(self, obj: JSON, key: str, what: str) -> int:
        value = obj.get(key)
        if not isinstance(value, int) or isinstance(value, bool):
            found = _excerpt(orjson.dumps(obj).decode(), 80)
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
        if not isinstance(event, ServerSentEvent):
            raise self.fail(f"expected a ServerSentEvent, got {type(event).__name__}")
        return event

    def json_object(self, data: str) -> JSON:
        try:
            value = orjson.loads(data)
        except orjson.JSONDecodeError:
            raise self.fail(f"data is not JSON: {_excerpt(data)}") from None
        if not isinstance(value, dict):
            raise self.fail(f"data is not a JSON object: {_excerpt(data)}")
        return value


class _OpenAIChat(_Fold):
    """Chat Completions chunks: deltas per choice index, tool calls merged by their own index."""

    protocol = "openai.chat"

    def feed(self, event: Event) -> None:
        data = self.sse(event).data
        if data == "[DONE]":
            self.result.complete = True
            return
        chunk = self.json_object(data)
        self.identify(chunk)
        if isinstance(chunk.get("usage"), dict):
            self.result.usage = chunk["usage"]
        if chunk.get("error") is not None:
            self.result.error = _error_of(chunk["error"])
        for raw in _list(chunk.get("choices")):
            choice = _obj(raw)
            index = self.need_int(choice, "index", "choice")
            delta = _obj(choice.get("delta"))
            self.add("text", _str(delta.get("content")), choice=index)
            self.add("refusal", _str(delta.get("refusal")), choice=index)
            reasoning = delta.get("reasoning_content") or delta.get("reasoning")  # DeepSeek, vLLM
            self.add("thinking", _str(reasoning), choice=index)
            for call in _list(delta.get("tool_calls")):
                self.tool_delta(index, _obj(call))
            if choice.get("finish_reason") is not None:
                self.choice(index).finish_reason = choice["finish_reason"]

    def tool_delta(self, choice: int, delta: JSON) -> None:
        """Merge one tool-call delta: id, name and type are set once, arguments concatenated."""
        index = self.need_int(delta, "index", "tool call delta")
        function = _obj(delta.get("function"))
        kind = _str(delta.get("type")) or "function"
        call = self.tool(index, choice=choice, index=index, type=kind)
        call.id = call.id or _str(delta.get("id"))
        call.name = call.name or _str(function.get("name"))
        call.arguments += _str(function.get("arguments"))


class _TypedFold(_Fold):
    """SSE protocols whose data is a JSON object carrying its event ``type``."""

    def feed(self, event: Event) -> None:
        sse = self.sse(event)
        payload = self.json_object(sse.data)
        self.on(_str(payload.get("type")) or sse.event, payload)

    @abstractmethod
    def on(self, kind: str, payload: JSON) -> None:
        """Fold one event of type ``kind``."""


_TOOL_BLOCKS = ("tool_use", "server_tool_use")
# delta type -> the content block types it may extend
_BLOCK_DELTAS: dict[str, tuple[str, ...]] = {
    "text_delta": ("text",), "citations_delta": ("text",), "thinking_delta": ("thinking",),
    "signature_delta": ("thinking",), "input_json_delta": _TOOL_BLOCKS,
}


class _Anthropic(_TypedFold):
    """Messages API events: content blocks by index; text, thinking and tool input as deltas."""

    protocol = "anthropic.messages"
    container = "content block"

    def on(self, kind: str, payload: JSON) -> None:
        match kind:
            case "message_start":
                message = _obj(payload.get("message"))
                self.identify(message)
                self.choice(0)
                if isinstance(message.get("usage"), dict):
                    self.result.usage = dict(message["usage"])
            case "content_block_start":
                self.block_start(self.need_int(payload, "index", kind), payload)
            case "content_block_delta":
                self.block_delta(self.need_int(payload, "index", kind), payload)
            case "content_block_stop":
                self.expect(self.need_int(payload, "index", kind), kind)
            case "message_delta":
                reason = _obj(payload.get("delta")).get("stop_reason")
                if reason is not None:
                    self.choice(0).finish_reason = reason
                usage = {k: v for k, v in _obj(payload.get("usage")).items() if v is not None}
                if usage:
                    self.result.usage = {**(self.result.usage or {}), **usage}
            case "message_stop":
                self.result.complete = True
            case "error":
                self.result.error = _error_of(payload.get("error"))

    def block_start(self, index: int, payload: JSON) -> None:
        block = _obj(payload.get("content_block"))
        kind = _str(block.get("type"))
        self.open(index, kind)
        if kind in _TOOL_BLOCKS:
            call = self.tool(index, type=kind)
            call.id, call.name = _str(block.get("id")), _str(block.get("name"))
            call.arguments = json.dumps(block["input"]) if block.get("input") else ""
        elif kind in ("text", "thinking"):
            self.add(kind, _str(block.get(kind)), key=(index, 0))
            self.result.citations.extend(_list(block.get("citations")))

    def block_delta(self, index: int, payload: JSON) -> None:
        delta = _obj(payload.get("delta"))
        kind = _str(delta.get("type"))
        self.expect(index, kind or "content_block_delta", _BLOCK_DELTAS.get(kind))
        match kind:
            case "text_delta" | "thinking_delta" | "signature_delta":
                name = kind.removesuffix("_delta")
                self.add(name, _str(delta.get(name)), key=(index, 0))
            case "citations_delta":
                self.result.citations.append(delta.get("citation"))
            case "input_json_delta":
                self.tool(index).arguments += _str(delta.get("partial_json"))


# text delta event -> (choice field, the part index field, the output item type it extends)
_RESPONSE_TEXT_DELTAS = {
    "response.output_text.delta": ("text", "content_index", "message"),
    "response.refusal.delta": ("refusal", "content_index", "message"),
    "response.reasoning_summary_text.delta": ("thinking", "summary_index", "reasoning"),
    "response.reasoning_text.delta": ("thinking", "content_index", "reasoning"),
}


class _Responses(_TypedFold):
    """Responses API events: output items by output_index; function calls become tool calls.

    Deltas build each value; ``added``/``done`` events only fill what the deltas left empty.
    """

    protocol = "openai.responses"
    container = "output item"

    def on(self, kind: str, payload: JSON) -> None:
        if kind in _RESPONSE_TEXT_DELTAS:
            name, part, item_type = _RESPONSE_TEXT_DELTAS[kind]
            index = self.need_int(payload, "output_index", kind)
            self.expect(index, kind, (item_type,))
            key = (index, self.need_int(payload, part, kind))
            self.add(name, _str(payload.get("delta")), key=key)
            return
        match kind:
            case "response.created" | "response.in_progress":
                self.identify(_obj(payload.get("response")))
                self.choice(0)
            case "response.output_item.added":
                item = _obj(payload.get("item"))
                index = self.need_int(payload, "output_index", kind)
                self.open(index, _str(item.get("type")))
                if item.get("type") == "function_call":
                    _fill_call(self.tool(index), item)
            case "response.output_text.annotation.added":
                self.result.citations.append(payload.get("annotation"))
            case "response.function_call_arguments.delta":
                self.call(payload, kind).arguments += _str(payload.get("delta"))
            case "response.function_call_arguments.done":
                _fill_call(self.call(payload, kind), payload)
            case "response.output_item.done":
                item = _obj(payload.get("item"))
                if item.get("type") == "function_call":
                    _fill_call(self.call(payload, kind), item)
            case "response.completed" | "response.incomplete" | "response.failed":
                self.ended(_obj(payload.get("response")))
            case "error":
                self.result.error = _error_of(payload["error"]) if "error" in payload else {
                    k: v for k, v in payload.items() if k not in ("type", "sequence_number")
                }

    def call(self, payload: JSON, kind: str) -> ToolCall:
        """The function call at the event's output_index, which must have been added."""
        index = self.need_int(payload, "output_index", kind)
        self.expect(index, kind, ("function_call",))
        return self.tool(index)

    def ended(self, response: JSON) -> None:
        """A terminal response: usage, error, and why it ended (incomplete reason or status)."""
        self.identify(response)
        if isinstance(response.get("usage"), dict):
            self.result.usage = response["usage"]
        if response.get("error") is not None:
            self.result.error = _error_of(response["error"])
        reason = _obj(response.get("incomplete_details")).get("reason") or response.get("status")
        self.choice(0).finish_reason = _str(reason) or None
        self.result.complete = True


def _fill_call(call: ToolCall, item: JSON) -> None:
    """Fill the fields of a Responses function call that are still empty."""
    call.id = call.id or _str(item.get("call_id"))
    call.name = call.name or _str(item.get("name"))
    call.arguments = call.arguments or _str(item.get("arguments"))


_OLLAMA_COUNTERS = (
    "prompt_eval_count", "eval_count", "total_duration", "load_duration",
    "prompt_eval_duration", "eval_duration",
)


class _Ollama(_Fold):
    """Ollama JSON lines (/api/chat and /api/generate): content deltas, whole tool calls."""

    protocol = "ollama.chat"

    def feed(self, event: Event) -> None:
        if not isinstance(event, Mapping):
            raise self.fail(f"expected a parsed JSON line (dict), got {type(event).__name__}")
        self.identify(event)
        message = _obj(event.get("message"))
        self.add("text", _str(message.get("content")) + _str(event.get("response")))
        self.add("thinking", _str(message.get("thinking")) + _str(event.get("thinking")))
        for raw in _list(message.get("tool_calls")):
            function = _obj(_obj(raw).get("function"))
            call = self.tool(len(self._tools))
            call.id, call.name = _str(_obj(raw).get("id")), _str(function.get("name"))
            arguments = function.get("arguments", {})
            call.arguments = arguments if isinstance(arguments, str) else json.dumps(arguments)
        if event.get("error") is not None:
            self.result.error = _error_of(event["error"])
        if event.get("done") is True:
            self.result.complete = True
            self.choice(0).finish_reason = _str(event.get("done_reason")) or None
            counters = {key: event[key] for key in _OLLAMA_COUNTERS if key in event}
            if counters:
                self.result.usage = {
                    "prompt_tokens": counters.get("prompt_eval_count"),
                    "completion_tokens": counters.get("eval_count"), **counters,
                }


_FOLDS: dict[str, type[_Fold]] = {
    fold.protocol: fold for fold in (_OpenAIChat, _Responses, _Anthropic, _Ollama)
}
