"""OpenAI Responses (``openai.responses``): typed ``response.*`` events by ``output_index``.

One protocol, two transports: the SSE stream of ``POST /v1/responses`` and the WebSocket mode
(``/v1/responses`` upgraded), whose received messages are the same JSON events, one per message,
several responses per socket (`responses` splits them)."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from ..framing.sse import decode, is_event
from ..store.cassette import Cassette
from . import Protocol, _path
from . import synthesis as syn
from .base import (
    JSON,
    Event,
    StreamError,
    ToolCall,
    TypedFold,
    error_of,
    obj,
    openai_error_body,
    sse_json,
    string,
)
from .lanes import DEFAULT, Lanes
from .messages import message, one_session, split

__all__ = ["PROTOCOL", "URL", "synthesize"]


# text delta event -> (choice field, the part index field, the output item type it extends)
_RESPONSE_TEXT_DELTAS = {
    "response.output_text.delta": ("text", "content_index", "message"),
    "response.refusal.delta": ("refusal", "content_index", "message"),
    "response.reasoning_summary_text.delta": ("thinking", "summary_index", "reasoning"),
    "response.reasoning_text.delta": ("thinking", "content_index", "reasoning"),
}


class _Responses(TypedFold):
    """Responses API events: output items by output_index; function calls become tool calls.

    Deltas build each value; ``added``/``done`` events only fill what the deltas left empty.
    """

    protocol = "openai.responses"
    container = "output item"

    def feed(self, event: Event) -> None:
        if is_event(event):  # the SSE stream
            super().feed(event)
        else:  # the WebSocket mode: each message is the event's JSON
            payload = message(self, event)
            self.on(string(payload.get("type")), payload)

    def on(self, kind: str, payload: JSON) -> None:
        if kind in _RESPONSE_TEXT_DELTAS:
            name, part, item_type = _RESPONSE_TEXT_DELTAS[kind]
            index = self.need_int(payload, "output_index", kind)
            self.expect(index, kind, (item_type,))
            key = (index, self.need_int(payload, part, kind))
            self.add(name, string(payload.get("delta")), key=key)
            return
        match kind:
            case "response.created" | "response.in_progress":
                self.identify(obj(payload.get("response")))
                self.choice(0)
            case "response.output_item.added":
                item = obj(payload.get("item"))
                index = self.need_int(payload, "output_index", kind)
                self.open(index, string(item.get("type")))
                if item.get("type") == "function_call":
                    _fill_call(self.tool(index), item)
            case "response.output_text.annotation.added":
                self.result.citations.append(payload.get("annotation"))
            case "response.function_call_arguments.delta":
                self.call(payload, kind).arguments += string(payload.get("delta"))
            case "response.function_call_arguments.done":
                _fill_call(self.call(payload, kind), payload)
            case "response.output_item.done":
                item = obj(payload.get("item"))
                if item.get("type") == "function_call":
                    _fill_call(self.call(payload, kind), item)
            case "response.completed" | "response.incomplete" | "response.failed":
                self.ended(obj(payload.get("response")))
            case "error":
                self.result.error = (
                    error_of(payload["error"])
                    if "error" in payload
                    else {k: v for k, v in payload.items() if k not in ("type", "sequence_number")}
                )

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
            self.result.error = error_of(response["error"])
        reason = obj(response.get("incomplete_details")).get("reason") or response.get("status")
        self.choice(0).finish_reason = string(reason) or None
        self.result.complete = True


_ENDS = ("response.completed", "response.incomplete", "response.failed")
# steering's answers: about a queued input, not part of a response's output
_STEERING = ("response.steer.accepted", "response.steer.pending", "response.steer.failed")


def _stream_id(message: JSON) -> str | None:
    value = message.get("stream_id")
    return value if isinstance(value, str) else None


def _steered(message: JSON) -> str | None:
    """The response a ``response.steer`` aims at (steering sends no ``stream_id``)."""
    if message.get("type") != "response.steer":
        return None
    value = message.get("previous_response_id")
    return value if isinstance(value, str) else None


def _started(message: JSON) -> str | None:
    if message.get("type") != "response.created":
        return None
    value = obj(message.get("response")).get("id")
    return value if isinstance(value, str) else None


LANES = Lanes(key=_stream_id, target=_steered, starts=_started)
"""The WebSocket mode's lanes: ``response.create(stream_id=...)`` opens one, every event of its
responses echoes it, and ``response.steer`` joins the lane of the response it steers."""


def _role(payload: JSON) -> tuple[str, str | None]:
    kind = string(payload.get("type"))
    lane = _stream_id(payload) or DEFAULT
    if kind == "response.created":
        return "start", lane
    if kind in _ENDS:
        return "end", lane
    if kind == "error":
        return "notice", _stream_id(payload)
    if kind in _STEERING:
        return "skip", None
    return ("in", lane) if kind.startswith("response.") else ("skip", None)


def responses(events: Sequence[Event]) -> list[list[int]]:
    """The positions of each response's events in a WebSocket session's received messages: one
    per ``response.create`` the client sent (or successor a steer started), from
    ``response.created`` to its terminal event, each on its lane (``stream_id``: lanes
    interleave); an ``error`` event (``previous_response_not_found`` ...) joins the response in
    progress on its lane or, with none, stands alone. Steering's answers are no response's."""
    return split(events, _role)


def _fill_call(call: ToolCall, item: JSON) -> None:
    """Fill the fields of a Responses function call that are still empty."""
    call.id = call.id or string(item.get("call_id"))
    call.name = call.name or string(item.get("name"))
    call.arguments = call.arguments or string(item.get("arguments"))


def error_event(error: StreamError) -> bytes:
    """An ``error`` event, then ``response.failed`` carrying the same error (the stream ends);
    over a WebSocket (any framing but SSE) the WebSocket mode's one ``error`` message."""
    nl = error.newline.encode()
    first = {"type": "error", "code": error.kind, "message": error.message, "param": None}
    if error.framing != "sse":
        kind = (
            "server_error" if error.kind in ("server_error", "overloaded_error") else "invalid_request_error"
        )
        detail = {"type": kind, "code": error.kind, "message": error.message, "param": None}
        status = 500 if kind == "server_error" else 400
        return orjson.dumps({"type": "error", "status": status, "error": detail}) + nl
    failed = {
        "type": "response.failed",
        "response": {
            "object": "response",
            "status": "failed",
            "error": {"code": error.kind, "message": error.message},
            "incomplete_details": None,
            "output": [],
        },
    }
    return (
        b"event: error"
        + nl
        + b"data: "
        + orjson.dumps(first)
        + nl
        + nl
        + b"event: response.failed"
        + nl
        + b"data: "
        + orjson.dumps(failed)
        + nl
        + nl
    )


def _is_response_event(event: Any) -> bool:
    payload = sse_json(event)
    kinds = (getattr(event, "event", ""), string(payload.get("type")))
    return any(kind.startswith("response.") for kind in kinds)


URL = "https://api.openai.com/v1/responses"

# -- synthesizer ---------------------------------------------------------------------------------


def synthesize(
    text: str = "",
    *,
    tool_calls: Sequence[syn.ToolCallSpec] = (),
    usage: Mapping[str, Any] | None = None,
    model: str = "gpt-4o-mini",
    chunk_size: int = 4,
    gap: float = 0.03,
    first_token: float = 0.25,
    seed: int = 0,
    prompt: str = syn.DEFAULT_PROMPT,
    url: str | None = None,
) -> Cassette:
    """A streamed Responses API response: ``response.created``, ``response.in_progress``, then
    per output item ``response.output_item.added`` ... ``response.output_item.done`` (a message
    with ``response.content_part.added`` / ``response.output_text.delta`` / ``.done``, or a
    function call with ``response.function_call_arguments.delta`` / ``.done``), and
    ``response.completed`` with the whole response and its usage."""
    syn.check_timing(chunk_size, gap, first_token)
    rng = syn.Rng(seed)
    calls = syn.calls(tool_calls, rng, "call_")
    tools = [{"type": "function", **tool, "strict": False} for tool in syn.tools(calls).values()]
    response_id = f"resp_{rng.token(48).lower()}"
    seq = itertools.count()
    events: list[bytes] = []

    def emit(kind: str, **fields: Any) -> None:
        events.append(syn.sse_event({"type": kind, "sequence_number": next(seq), **fields}, kind))

    def response(status: str, output: list[JSON], used: JSON | None) -> JSON:
        return {
            "id": response_id,
            "object": "response",
            "created_at": syn.CREATED,
            "status": status,
            "background": False,
            "error": None,
            "incomplete_details": None,
            "instructions": None,
            "max_output_tokens": None,
            "model": model,
            "output": output,
            "parallel_tool_calls": True,
            "previous_response_id": None,
            "reasoning": {"effort": None, "summary": None},
            "service_tier": "auto",
            "store": True,
            "temperature": 1.0,
            "text": {"format": {"type": "text"}, "verbosity": "medium"},
            "tool_choice": "auto",
            "tools": tools,
            "top_p": 1.0,
            "truncation": "disabled",
            "usage": used,
            "user": None,
            "metadata": {},
        }

    emit("response.created", response=response("in_progress", [], None))
    emit("response.in_progress", response=response("in_progress", [], None))
    output: list[JSON] = []
    deltas = 0
    if text:
        item_id = f"msg_{rng.token(48).lower()}"
        index = len(output)
        item: JSON = {
            "id": item_id,
            "type": "message",
            "status": "in_progress",
            "content": [],
            "role": "assistant",
        }
        emit("response.output_item.added", output_index=index, item=item)
        part: JSON = {"type": "output_text", "annotations": [], "logprobs": [], "text": ""}
        emit("response.content_part.added", item_id=item_id, output_index=index, content_index=0, part=part)
        for piece in syn.pieces(text, chunk_size, rng.pieces):
            deltas += 1
            emit(
                "response.output_text.delta",
                item_id=item_id,
                output_index=index,
                content_index=0,
                delta=piece,
                logprobs=[],
            )
        emit(
            "response.output_text.done",
            item_id=item_id,
            output_index=index,
            content_index=0,
            text=text,
            logprobs=[],
        )
        done_part = {**part, "text": text}
        emit(
            "response.content_part.done", item_id=item_id, output_index=index, content_index=0, part=done_part
        )
        item = {**item, "status": "completed", "content": [done_part]}
        emit("response.output_item.done", output_index=index, item=item)
        output.append(item)
    for call in calls:
        item_id = f"fc_{rng.token(48).lower()}"
        index = len(output)
        item = {
            "id": item_id,
            "type": "function_call",
            "status": "in_progress",
            "arguments": "",
            "call_id": call.id,
            "name": call.name,
        }
        emit("response.output_item.added", output_index=index, item=item)
        for piece in syn.pieces(call.text, 5, rng.pieces):
            deltas += 1
            emit("response.function_call_arguments.delta", item_id=item_id, output_index=index, delta=piece)
        emit(
            "response.function_call_arguments.done", item_id=item_id, output_index=index, arguments=call.text
        )
        item = {**item, "status": "completed", "arguments": call.text}
        emit("response.output_item.done", output_index=index, item=item)
        output.append(item)
    if usage is None:
        input_tokens = 8 + len(prompt) // 4
        used: JSON = {
            "input_tokens": input_tokens,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": deltas,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": input_tokens + deltas,
        }
    else:
        used = dict(usage)
    emit("response.completed", response=response("completed", output, used))
    chunks, times = syn.schedule(events, rng.writes, first_token=first_token, gap=gap)
    body: JSON = {"model": model, "input": syn.user(prompt), "stream": True}
    if calls:
        body["tools"] = tools
    return syn.one_interaction(
        url or URL,
        body,
        chunks,
        times,
        content_type="text/event-stream; charset=utf-8",
        headers={
            "openai-processing-ms": str(int(first_token * 1000)),
            "openai-version": "2020-10-01",
            "x-request-id": f"req_{rng.token(32).lower()}",
        },
    )


WEBSOCKET_URL = "wss://api.openai.com/v1/responses"
"""Where Responses API WebSocket mode connects (one socket, many responses)."""


def synthesize_websocket(
    turns: Sequence[Mapping[str, Any]] = ({"text": "Hello."},),
    *,
    model: str = "gpt-5",
    chunk_size: int = 4,
    gap: float = 0.03,
    first_token: float = 0.25,
    seed: int = 0,
    url: str | None = None,
) -> Cassette:
    """A Responses API WebSocket mode session: per turn the client's ``response.create`` (what a
    POST's body would hold, ``"type": "response.create"`` instead of ``stream``, ``store: false``,
    ``previous_response_id`` after the first), then the events of `synthesize`'s stream for that
    turn, each a JSON text message (no SSE framing; ``sequence_number`` from 0 per response).

    A turn is a mapping: ``text``, ``tool_calls`` (as for `synthesize`), and ``input`` (the
    prompt), or ``outputs`` (one string per function call of the turn before: sent as its
    ``function_call_output`` items)."""
    messages: list[tuple[str, float, str, str | bytes]] = []
    clock, previous = 0.0, None
    pending: list[JSON] = []
    for k, turn in enumerate(turns):
        prompt = str(turn.get("input") or syn.DEFAULT_PROMPT)
        stream = synthesize(str(turn.get("text", "")), tool_calls=turn.get("tool_calls", ()), model=model,
                            chunk_size=chunk_size, gap=gap, first_token=first_token, seed=seed + k,
                            prompt=prompt).interactions[0]  # fmt: skip
        events = [orjson.loads(e.data) for e in decode([stream.response.body])]
        used = events[-1]["response"].get("usage") or {}
        used.get("input_tokens_details", {}).setdefault(
            "cache_write_tokens", 0
        )  # (the openai SDK 3.57 models require it)
        create: JSON = {"type": "response.create", "model": model}
        outputs = turn.get("outputs")
        if outputs is not None:
            create["input"] = [
                {"type": "function_call_output", "call_id": c["call_id"], "output": o}
                for c, o in zip(pending, outputs)
            ]
        else:
            create["input"] = prompt
        if previous is not None:
            create["previous_response_id"] = previous
        create["store"] = False
        tools = (stream.request.json() or {}).get("tools")
        if tools:
            create["tools"] = tools
        clock += 0.01
        messages.append(("send", round(clock, 4), "text", syn.compact(create)))
        clock += first_token
        for j, event in enumerate(events):
            messages.append(("recv", round(clock + j * gap, 4), "text", syn.compact(event)))
        clock += len(events) * gap
        done = events[-1]["response"]
        previous, pending = done["id"], [o for o in done["output"] if o["type"] == "function_call"]
    session: Cassette = one_session(
        url or WEBSOCKET_URL,
        messages,
        request_headers={"user-agent": "OpenAI/Python 3.57.0"},
        response_headers={"x-request-id": f"req_{syn.Rng(seed).token(32).lower()}"},
    )
    return session


PROTOCOL = Protocol(
    name="openai.responses",
    framing="sse",
    fold=_Responses,
    error_event=error_event,
    http_error=openai_error_body,
    url=lambda url: _path(url).endswith("/responses"),
    event=_is_response_event,
    synthesize=synthesize,
    responses=responses,
    lanes=LANES,
)
