"""Synthesize realistic provider streams in code, from the result they should spell.

Each function takes the final message a stream must accumulate to (text, tool calls, thinking,
usage, ...) and returns a one-interaction :class:`~ssemock.Cassette` whose response is that
stream, event for event in the provider's documented wire format:

* :func:`openai_chat` -- Chat Completions ``chat.completion.chunk`` objects, ``data: [DONE]``
  (n > 1 choices, parallel tool calls, refusals, ``stream_options.include_usage``, Azure's
  content filter annotations, OpenAI-compatible servers that repeat tool call ids);
* :func:`openai_responses` -- Responses API events (``response.created`` ...
  ``response.completed``), output text and function calls;
* :func:`anthropic_messages` -- Messages API events, with text, ``tool_use``, ``thinking`` +
  signature, citations, ``ping`` and a mid-stream ``event: error``;
* :func:`ollama_chat` -- Ollama ``/api/chat`` JSON lines (``application/x-ndjson``);
* :func:`openrouter_chat` -- OpenAI format with OpenRouter's ``: OPENROUTER PROCESSING`` comments.

The body is cut into writes as a real server and network deliver it: one to three events per
write, now and then a write that ends inside the next line (seeded by ``seed``, so the same call
always gives the same bytes and boundaries). Write ``k`` arrives at ``first_token + k * gap``
seconds. The request is the matching ``POST`` (model, messages, ``stream: true``) at the
provider's real URL, so ``accumulate(decode(...))`` of the response gives back what was asked for,
and the recorded request is what the provider's SDK sends for the same parameters.

Every synthesized response carries an ``x-ssemock-source`` header saying it was synthesized.

``python -m ssemock.synth --write-library`` regenerates the cassettes shipped in
:mod:`ssemock.cassettes` by streaming each synthesized response through a real loopback HTTP
server and recording it with :func:`ssemock.use_cassette` (``--check`` re-records into a temporary
folder and compares the files byte for byte, times aside).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import bisect
import itertools
import json
import random
import string
import sys
import tempfile
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeAlias
from urllib.parse import urlsplit

from .cassette import Cassette, Interaction, Request, Response

__all__ = [
    "ANTHROPIC_URL", "AZURE_URL", "HAZARDS", "LIBRARY", "LIBRARY_SOURCE", "OLLAMA_URL", "OPENAI_CHAT_URL",
    "OPENAI_RESPONSES_URL", "OPENROUTER_KEEPALIVE", "OPENROUTER_URL", "SOURCE_HEADER", "SYNTH_SOURCE",
    "anthropic_messages", "check_library", "library_cassette", "main", "ollama_chat", "openai_chat",
    "openai_responses", "openrouter_chat", "write_library",
]

JSON: TypeAlias = dict[str, Any]
ToolCallSpec: TypeAlias = Mapping[str, Any]

OPENAI_CHAT_URL = "https://api.openai.com/v1/chat/completions"
OPENAI_RESPONSES_URL = "https://api.openai.com/v1/responses"
AZURE_URL = ("https://example-resource.openai.azure.com/openai/deployments/{model}/chat/completions"
             "?api-version=2024-10-21")
ANTHROPIC_URL = "https://api.anthropic.com/v1/messages"
OLLAMA_URL = "http://localhost:11434/api/chat"
OPENROUTER_URL = "https://openrouter.ai/api/v1/chat/completions"
OPENROUTER_KEEPALIVE = b": OPENROUTER PROCESSING\n\n"

SOURCE_HEADER = "x-ssemock-source"
SYNTH_SOURCE = ("synthesized by ssemock.synth from the provider's documented event format; "
                "not captured from the real service")
LIBRARY_SOURCE = ("synthesized by ssemock.synth from the provider's documented event format; "
                  "recorded through a loopback server; not captured from the real service")

DEFAULT_PROMPT = "Say hello."
_CREATED = 1767225600  # 2026-01-01T00:00:00Z
_ALNUM = string.ascii_letters + string.digits
_GROUPS = (1, 1, 1, 2, 2, 3)  # events per write
_CUT_MID_LINE = 0.25  # chance that a write ends inside the next event's first line


# -- building blocks ---------------------------------------------------------------------------

def _compact(obj: Any) -> str:
    """JSON as the providers send it: no spaces, UTF-8 characters unescaped."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def _sse(obj: Any, event: str | None = None) -> bytes:
    head = f"event: {event}\n" if event else ""
    data = obj if isinstance(obj, str) else _compact(obj)
    return f"{head}data: {data}\n\n".encode()


class _Rng:
    """Independent seeded streams for ids, text pieces and writes (str seeds hash stably)."""

    def __init__(self, seed: int) -> None:
        self.ids = random.Random(f"ssemock.synth:ids:{seed}")
        self.pieces = random.Random(f"ssemock.synth:pieces:{seed}")
        self.writes = random.Random(f"ssemock.synth:writes:{seed}")

    def token(self, n: int) -> str:
        return "".join(self.ids.choice(_ALNUM) for _ in range(n))


def _pieces(text: str, size: int, rng: random.Random) -> list[str]:
    """``text`` cut into deltas of about ``size`` characters (seeded sizes, as tokens vary)."""
    lo, hi = max(1, size - size // 2), size + size // 2
    out, pos = [], 0
    while pos < len(text):
        step = rng.randint(lo, hi)
        out.append(text[pos:pos + step])
        pos += step
    return out


@dataclass(frozen=True)
class _Call:
    """A tool call to stream: its id, name, and arguments as JSON text and as a value."""

    id: str
    name: str
    value: Any  # the arguments decoded (a dict for every provider's tool calls)
    text: str  # the arguments as the provider streams them


def _calls(specs: Sequence[ToolCallSpec], rng: _Rng, prefix: str, *, spaced: bool = False,
           id_size: int = 24) -> list[_Call]:
    out = []
    for k, spec in enumerate(specs):
        if not isinstance(spec, Mapping) or not isinstance(spec.get("name"), str) or not spec["name"]:
            raise ValueError(f"tool_calls[{k}] must be a mapping with a non-empty 'name', got {spec!r}")
        arguments = spec.get("arguments", {})
        if isinstance(arguments, str):
            text = arguments
            try:
                value = json.loads(arguments) if arguments else {}
            except ValueError:
                raise ValueError(f"tool_calls[{k}]['arguments'] is a string but not JSON: {arguments!r}") from None
        else:
            value = arguments
            text = json.dumps(arguments, ensure_ascii=False) if spaced else _compact(arguments)
        call_id = spec.get("id") or prefix + rng.token(id_size)
        out.append(_Call(str(call_id), spec["name"], value, text))
    return out


def _schedule(events: Sequence[bytes], rng: random.Random, *, first_token: float, gap: float,
              lead: Sequence[tuple[float, bytes]] = ()) -> tuple[list[bytes], list[float]]:
    """Cut the events into writes (1-3 events, sometimes ending mid-line) and time them.

    ``lead``: writes (time, bytes) sent before the first event, such as keep-alive comments.
    """
    body = b"".join(events)
    ends = list(itertools.accumulate(len(e) for e in events))
    cuts: list[int] = []
    i = 0  # the first event not yet fully written
    while i < len(ends):
        j = min(i + rng.choice(_GROUPS), len(ends)) - 1
        end = ends[j]
        if j + 1 < len(ends) and rng.random() < _CUT_MID_LINE:
            newline = body.find(b"\n", end, ends[j + 1])
            line_end = newline if newline >= 0 else ends[j + 1]
            if line_end - end >= 2:
                end += rng.randint(1, line_end - end - 1)
        cuts.append(end)
        i = bisect.bisect_right(ends, end)
    chunks = [body[a:b] for a, b in zip([0, *cuts], cuts)]
    times = [round(first_token + k * gap, 4) for k in range(len(chunks))]
    return [c for _, c in lead] + chunks, [round(t, 4) for t, _ in lead] + times


def _check_timing(chunk_size: int, gap: float, first_token: float) -> None:
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be >= 1, got {chunk_size}")
    if not (gap >= 0 and first_token >= 0):
        raise ValueError(f"gap and first_token must be >= 0 seconds, got gap={gap}, first_token={first_token}")


def _cassette(url: str, request_json: JSON, chunks: list[bytes], times: list[float], *,
              content_type: str, headers: Mapping[str, str],
              request_headers: Mapping[str, str] | None = None) -> Cassette:
    cassette = Cassette()
    cassette.add("POST", url, chunks, times=times,
                 headers={"content-type": content_type, **headers, SOURCE_HEADER: SYNTH_SOURCE},
                 request_headers={"content-type": "application/json", **(request_headers or {})},
                 request_json=request_json)
    return cassette


def _user(prompt: str) -> list[JSON]:
    return [{"role": "user", "content": prompt}]


def _schema(value: Any) -> JSON:
    """A JSON schema for a tool's parameters, read off an example of its arguments."""
    if isinstance(value, bool):
        return {"type": "boolean"}
    if isinstance(value, int):
        return {"type": "integer"}
    if isinstance(value, float):
        return {"type": "number"}
    if isinstance(value, str):
        return {"type": "string"}
    if isinstance(value, list):
        return {"type": "array", "items": _schema(value[0]) if value else {}}
    if isinstance(value, dict):
        return {"type": "object", "properties": {str(k): _schema(v) for k, v in value.items()},
                "required": [str(k) for k in value]}
    return {}


def _tools(calls: Sequence[_Call]) -> dict[str, JSON]:
    """One tool definition per distinct name, parameters read off the first call's arguments."""
    out: dict[str, JSON] = {}
    for call in calls:
        if call.name not in out:
            params = _schema(call.value) if isinstance(call.value, dict) else {"type": "object", "properties": {}}
            out[call.name] = {"name": call.name, "description": f"The {call.name.replace('_', ' ')} tool.",
                              "parameters": params}
    return out


# -- OpenAI Chat Completions (and Azure, OpenRouter, compatible servers) -----------------------

_SAFE = {"filtered": False, "severity": "safe"}
_CATEGORIES = ("hate", "self_harm", "sexual", "violence")


def _chat_events(texts: list[str], *, calls: list[_Call], refusal: str | None, usage: JSON | None,
                 include_usage: bool, finish_reason: str | None, model: str, chunk_size: int,
                 repeat_tool_ids: bool, choices_out_of_order: bool, interleave_tool_calls: bool,
                 style: str, rng: _Rng, prompt: str, reuse_tool_index: bool = False) -> list[bytes]:
    """Chat completion chunks; ``style`` is "openai", "azure" or "openrouter"."""
    if style == "openrouter":
        base: JSON = {"id": f"gen-{_CREATED}-{rng.token(20)}", "provider": "OpenAI", "model": model,
                      "object": "chat.completion.chunk", "created": _CREATED}
    else:
        base = {"id": f"chatcmpl-{rng.token(29)}", "object": "chat.completion.chunk", "created": _CREATED,
                "model": model}
        if style == "openai":
            base["service_tier"] = "default"
        base["system_fingerprint"] = f"fp_{rng.token(10).lower()}"
    if include_usage:
        base["usage"] = None

    def chunk(choices: list[JSON], **extra: Any) -> bytes:
        obj = {**base, "choices": choices, **extra}
        if style == "azure":  # Azure sends the keys sorted
            obj = json.loads(json.dumps(obj, sort_keys=True))
        return _sse(obj)

    def choice(index: int, delta: JSON, finish: str | None = None, filtered: JSON | None = None) -> JSON:
        out: JSON = {"index": index, "delta": delta, "logprobs": None, "finish_reason": finish}
        if style == "openrouter":
            out = {"index": index, "delta": {"role": "assistant", **delta}, "finish_reason": finish,
                   "native_finish_reason": finish, "logprobs": None}
        if style == "azure":
            out["content_filter_results"] = filtered if filtered is not None else {}
        return out

    deltas_count = 0
    per_choice: list[list[JSON]] = []
    for index, text in enumerate(texts):
        mine = calls if index == 0 else []
        role: JSON = {"role": "assistant", "content": None if (refusal is not None and index == 0) else "",
                      "refusal": None}
        if refusal is not None and index == 0:
            role["refusal"] = ""
        if style == "openrouter":
            role = {"content": ""}
        steps: list[JSON] = [choice(index, role, filtered={} if style == "azure" else None)]
        filters = {name: dict(_SAFE) for name in _CATEGORIES}
        for piece in _pieces(text, chunk_size, rng.pieces):
            steps.append(choice(index, {"content": piece}, filtered=filters))
        if refusal is not None and index == 0:
            for piece in _pieces(refusal, chunk_size, rng.pieces):
                steps.append(choice(index, {"refusal": piece}))
        queues: list[list[JSON]] = []
        for k, call in enumerate(mine):
            queue: list[JSON] = []
            pieces = _pieces(call.text, 5, rng.pieces)
            at = 0 if reuse_tool_index else k
            if repeat_tool_ids:
                for piece in pieces or [""]:
                    queue.append({"index": at, "id": call.id, "type": "function",
                                  "function": {"name": call.name, "arguments": piece}})
            else:
                queue.append({"index": at, "id": call.id, "type": "function",
                              "function": {"name": call.name, "arguments": ""}})
                queue += [{"index": at, "function": {"arguments": piece}} for piece in pieces]
            queues.append(queue)
        for delta in _interleave(queues, rng.writes) if interleave_tool_calls else itertools.chain(*queues):
            steps.append(choice(index, {"content": None, "tool_calls": [delta]} if style == "openrouter"
                                else {"tool_calls": [delta]}))
        deltas_count += len(steps) - 1
        reason = finish_reason or ("tool_calls" if mine else "stop")
        end_filter: JSON | None = None
        if style == "azure":
            end_filter = {}
            if reason == "content_filter":
                end_filter = {**filters, "violence": {"filtered": True, "severity": "medium"}}
        steps.append(choice(index, {}, reason, filtered=end_filter))
        per_choice.append(steps)

    events: list[bytes] = []
    if style == "azure":
        events.append(_sse(json.loads(json.dumps({
            "choices": [], "created": 0, "id": "", "model": "", "object": "",
            "prompt_filter_results": [{"prompt_index": 0, "content_filter_results": {
                **{name: dict(_SAFE) for name in _CATEGORIES},
                "jailbreak": {"filtered": False, "detected": False}}}]}, sort_keys=True))))
    order = (_interleave(per_choice[::-1], rng.writes) if choices_out_of_order
             else _round_robin(per_choice))
    events += [chunk([step]) for step in order]
    if include_usage:
        if usage is None:
            prompt_tokens = 8 + len(prompt) // 4
            usage = {"prompt_tokens": prompt_tokens, "completion_tokens": deltas_count,
                     "total_tokens": prompt_tokens + deltas_count,
                     "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
                     "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0,
                                                   "accepted_prediction_tokens": 0,
                                                   "rejected_prediction_tokens": 0}}
        events.append(chunk([], usage=usage))
    events.append(b"data: [DONE]\n\n")
    return events


def _round_robin(queues: Sequence[Sequence[JSON]]) -> list[JSON]:
    return [x for group in itertools.zip_longest(*queues) for x in group if x is not None]


def _interleave(queues: Sequence[Sequence[JSON]], rng: random.Random) -> list[JSON]:
    """Merge queues in a seeded order: each queue's items stay in order, and the queues start in
    their order (queue k+1's first item never comes before queue k's)."""
    pending = [list(q) for q in queues if q]
    out: list[JSON] = []
    started = 0
    while any(pending):
        live = [k for k in range(min(started + 1, len(pending))) if pending[k]]
        k = live[0] if not out else rng.choice(live)
        started = max(started, k + 1)
        out.append(pending[k].pop(0))
    return out


def _chat_request(model: str, prompt: str, n: int, include_usage: bool, calls: list[_Call]) -> JSON:
    body: JSON = {"model": model, "messages": _user(prompt), "stream": True}
    if n > 1:
        body["n"] = n
    if include_usage:
        body["stream_options"] = {"include_usage": True}
    if calls:
        body["tools"] = [{"type": "function", "function": tool} for tool in _tools(calls).values()]
    return body


def _texts(text: str | Sequence[str], n: int) -> list[str]:
    if isinstance(text, str):
        if n < 1:
            raise ValueError(f"n must be >= 1, got {n}")
        return [text] * n
    texts = list(text)
    if n not in (1, len(texts)) or not texts:
        raise ValueError(f"n={n} but {len(texts)} texts were given (one per choice)")
    return texts


def openai_chat(text: str | Sequence[str] = "", *, tool_calls: Sequence[ToolCallSpec] = (), n: int = 1,
                usage: Mapping[str, Any] | None = None, refusal: str | None = None,
                finish_reason: str | None = None, model: str = "gpt-4o-mini", chunk_size: int = 4,
                gap: float = 0.03, first_token: float = 0.25, include_usage: bool = False,
                repeat_tool_ids: bool = False, choices_out_of_order: bool = False,
                content_filter: bool = False, interleave_tool_calls: bool = False, seed: int = 0,
                prompt: str = DEFAULT_PROMPT, url: str | None = None, reuse_tool_index: bool = False,
                event_ids: bool = False, charset: bool = True) -> Cassette:
    """A streamed Chat Completion (``chat.completion.chunk`` events, then ``data: [DONE]``).

    ``text``: choice 0's content, or one text per choice (``n`` choices; a single text is given
    to every choice). ``tool_calls``: ``[{"name": ..., "arguments": {...}, "id": optional}]``,
    in choice 0, each started by a delta with id/type/name and continued by argument fragments
    (``repeat_tool_ids``: id, type and name repeated in every delta, as some OpenAI-compatible
    servers do; ``interleave_tool_calls``: the calls' deltas interleaved by index;
    ``reuse_tool_index``: every call at index 0, told apart by its new id, as some compatible
    servers stream them -- a client that merges by index alone fuses them).
    ``usage`` (or ``include_usage``): ``stream_options.include_usage`` -- ``"usage": null`` on
    every chunk and a final chunk with ``"choices": []`` and the usage.
    ``choices_out_of_order``: with n > 1, the choices' chunks interleave, the last choice first.
    ``content_filter``: Azure OpenAI's shape -- a first chunk with ``"choices": []`` and
    ``prompt_filter_results``, ``content_filter_results`` on every choice, keys sorted (and the
    Azure deployment URL); with ``finish_reason="content_filter"`` the last one is filtered.
    ``event_ids``: an ``id:`` line in every event, as some OpenAI-compatible gateways send;
    ``charset=False``: ``content-type: text/event-stream`` without ``; charset=utf-8`` (a client
    that guesses the encoding then garbles non-ASCII text).
    """
    _check_timing(chunk_size, gap, first_token)
    if reuse_tool_index and interleave_tool_calls:
        raise ValueError("reuse_tool_index and interleave_tool_calls cannot be combined: calls at one index "
                         "are told apart only by order")
    texts = _texts(text, n)
    rng = _Rng(seed)
    calls = _calls(tool_calls, rng, "call_")
    include = include_usage or usage is not None
    style = "azure" if content_filter else "openai"
    events = _chat_events(texts, calls=calls, refusal=refusal, usage=None if usage is None else dict(usage),
                          include_usage=include, finish_reason=finish_reason, model=model,
                          chunk_size=chunk_size, repeat_tool_ids=repeat_tool_ids,
                          choices_out_of_order=choices_out_of_order,
                          interleave_tool_calls=interleave_tool_calls, style=style, rng=rng, prompt=prompt,
                          reuse_tool_index=reuse_tool_index)
    chunks, times = _schedule(events, rng.writes, first_token=first_token, gap=gap)
    if event_ids:
        chunks = _with_ids(chunks)
    target = url or (AZURE_URL.format(model=model) if content_filter else OPENAI_CHAT_URL)
    headers = ({"apim-request-id": rng.token(32).lower(), "x-ms-region": "East US"} if content_filter else
               {"openai-processing-ms": str(int(first_token * 1000)), "openai-version": "2020-10-01",
                "x-request-id": f"req_{rng.token(32).lower()}"})
    return _cassette(target, _chat_request(model, prompt, len(texts), include, calls), chunks, times,
                     content_type="text/event-stream; charset=utf-8" if charset else "text/event-stream",
                     headers=headers)


def _with_ids(chunks: list[bytes]) -> list[bytes]:
    """The same writes with an ``id: N`` line opening every event (N counts from 1)."""
    from .transforms import apply, ids
    ends = list(itertools.accumulate(map(len, chunks)))
    body, new_ends = apply([ids], b"".join(chunks), ends)
    return [body[a:b] for a, b in zip([0, *new_ends], new_ends)]


def openrouter_chat(text: str = "", *, tool_calls: Sequence[ToolCallSpec] = (),
                    usage: Mapping[str, Any] | None = None, finish_reason: str | None = None,
                    model: str = "openai/gpt-4o-mini", keepalives: int = 3, chunk_size: int = 4,
                    gap: float = 0.03, first_token: float = 0.6, include_usage: bool = False,
                    seed: int = 0, prompt: str = DEFAULT_PROMPT, url: str | None = None) -> Cassette:
    """An OpenRouter chat stream: OpenAI's chunk format (plus ``provider`` and
    ``native_finish_reason``), preceded by ``keepalives`` ``: OPENROUTER PROCESSING`` comment
    lines sent while the upstream model has not answered yet (evenly before ``first_token``)."""
    _check_timing(chunk_size, gap, first_token)
    rng = _Rng(seed)
    calls = _calls(tool_calls, rng, "call_")
    include = include_usage or usage is not None
    events = _chat_events([text], calls=calls, refusal=None, usage=None if usage is None else dict(usage),
                          include_usage=include, finish_reason=finish_reason, model=model,
                          chunk_size=chunk_size, repeat_tool_ids=False, choices_out_of_order=False,
                          interleave_tool_calls=False, style="openrouter", rng=rng, prompt=prompt)
    lead = [(first_token * k / (keepalives + 1), OPENROUTER_KEEPALIVE) for k in range(1, keepalives + 1)]
    chunks, times = _schedule(events, rng.writes, first_token=first_token, gap=gap, lead=lead)
    return _cassette(url or OPENROUTER_URL, _chat_request(model, prompt, 1, include, calls), chunks, times,
                     content_type="text/event-stream", headers={"x-generation-id": f"gen-{rng.token(20)}"})


# -- OpenAI Responses API ----------------------------------------------------------------------

def openai_responses(text: str = "", *, tool_calls: Sequence[ToolCallSpec] = (),
                     usage: Mapping[str, Any] | None = None, model: str = "gpt-4o-mini",
                     chunk_size: int = 4, gap: float = 0.03, first_token: float = 0.25, seed: int = 0,
                     prompt: str = DEFAULT_PROMPT, url: str | None = None) -> Cassette:
    """A streamed Responses API response: ``response.created``, ``response.in_progress``, then
    per output item ``response.output_item.added`` ... ``response.output_item.done`` (a message
    with ``response.content_part.added`` / ``response.output_text.delta`` / ``.done``, or a
    function call with ``response.function_call_arguments.delta`` / ``.done``), and
    ``response.completed`` with the whole response and its usage."""
    _check_timing(chunk_size, gap, first_token)
    rng = _Rng(seed)
    calls = _calls(tool_calls, rng, "call_")
    tools = [{"type": "function", **tool, "strict": False} for tool in _tools(calls).values()]
    response_id = f"resp_{rng.token(48).lower()}"
    seq = itertools.count()
    events: list[bytes] = []

    def emit(kind: str, **fields: Any) -> None:
        events.append(_sse({"type": kind, "sequence_number": next(seq), **fields}, kind))

    def response(status: str, output: list[JSON], used: JSON | None) -> JSON:
        return {"id": response_id, "object": "response", "created_at": _CREATED, "status": status,
                "background": False, "error": None, "incomplete_details": None, "instructions": None,
                "max_output_tokens": None, "model": model, "output": output, "parallel_tool_calls": True,
                "previous_response_id": None, "reasoning": {"effort": None, "summary": None},
                "service_tier": "auto", "store": True, "temperature": 1.0,
                "text": {"format": {"type": "text"}, "verbosity": "medium"}, "tool_choice": "auto",
                "tools": tools, "top_p": 1.0, "truncation": "disabled", "usage": used, "user": None,
                "metadata": {}}

    emit("response.created", response=response("in_progress", [], None))
    emit("response.in_progress", response=response("in_progress", [], None))
    output: list[JSON] = []
    deltas = 0
    if text:
        item_id = f"msg_{rng.token(48).lower()}"
        index = len(output)
        item: JSON = {"id": item_id, "type": "message", "status": "in_progress", "content": [], "role": "assistant"}
        emit("response.output_item.added", output_index=index, item=item)
        part: JSON = {"type": "output_text", "annotations": [], "logprobs": [], "text": ""}
        emit("response.content_part.added", item_id=item_id, output_index=index, content_index=0, part=part)
        for piece in _pieces(text, chunk_size, rng.pieces):
            deltas += 1
            emit("response.output_text.delta", item_id=item_id, output_index=index, content_index=0,
                 delta=piece, logprobs=[])
        emit("response.output_text.done", item_id=item_id, output_index=index, content_index=0, text=text,
             logprobs=[])
        done_part = {**part, "text": text}
        emit("response.content_part.done", item_id=item_id, output_index=index, content_index=0, part=done_part)
        item = {**item, "status": "completed", "content": [done_part]}
        emit("response.output_item.done", output_index=index, item=item)
        output.append(item)
    for call in calls:
        item_id = f"fc_{rng.token(48).lower()}"
        index = len(output)
        item = {"id": item_id, "type": "function_call", "status": "in_progress", "arguments": "",
                "call_id": call.id, "name": call.name}
        emit("response.output_item.added", output_index=index, item=item)
        for piece in _pieces(call.text, 5, rng.pieces):
            deltas += 1
            emit("response.function_call_arguments.delta", item_id=item_id, output_index=index, delta=piece)
        emit("response.function_call_arguments.done", item_id=item_id, output_index=index, arguments=call.text)
        item = {**item, "status": "completed", "arguments": call.text}
        emit("response.output_item.done", output_index=index, item=item)
        output.append(item)
    if usage is None:
        input_tokens = 8 + len(prompt) // 4
        used: JSON = {"input_tokens": input_tokens, "input_tokens_details": {"cached_tokens": 0},
                      "output_tokens": deltas, "output_tokens_details": {"reasoning_tokens": 0},
                      "total_tokens": input_tokens + deltas}
    else:
        used = dict(usage)
    emit("response.completed", response=response("completed", output, used))
    chunks, times = _schedule(events, rng.writes, first_token=first_token, gap=gap)
    body: JSON = {"model": model, "input": _user(prompt), "stream": True}
    if calls:
        body["tools"] = tools
    return _cassette(url or OPENAI_RESPONSES_URL, body, chunks, times,
                     content_type="text/event-stream; charset=utf-8",
                     headers={"openai-processing-ms": str(int(first_token * 1000)), "openai-version": "2020-10-01",
                              "x-request-id": f"req_{rng.token(32).lower()}"})


# -- Anthropic Messages ------------------------------------------------------------------------

_ANTHROPIC_ERRORS = {"overloaded_error": "Overloaded", "api_error": "Internal server error",
                     "rate_limit_error": "Rate limited"}


def anthropic_messages(text: str = "", *, tool_calls: Sequence[ToolCallSpec] = (), thinking: str | None = None,
                       signature: str | None = None, citations: Sequence[Mapping[str, Any]] | None = None,
                       usage: Mapping[str, Any] | None = None, ping: bool | int = True,
                       error: str | Mapping[str, Any] | None = None, finish_reason: str | None = None,
                       model: str = "claude-sonnet-4-6", chunk_size: int = 4, gap: float = 0.03,
                       first_token: float = 0.25, seed: int = 0, prompt: str = DEFAULT_PROMPT,
                       url: str | None = None) -> Cassette:
    """A streamed Messages API response: ``message_start``, content blocks (``thinking`` with
    ``thinking_delta`` and a ``signature_delta``, ``text`` with ``text_delta`` and
    ``citations_delta``, ``tool_use`` with ``input_json_delta``), ``message_delta`` (stop reason,
    output tokens) and ``message_stop``.

    ``usage``: ``{"input_tokens": ..., "output_tokens": ...}`` (message_start carries the input
    side and ``output_tokens: 1``, message_delta the final ``output_tokens``; merged they give
    ``usage`` back). ``ping``: True sends one ``ping`` after the first content_block_start, as the
    docs show; an int N also pings after every N events. ``error`` (``"overloaded_error"`` or
    ``{"type": ..., "message": ...}``): after the content deltas, an ``event: error`` ends the stream
    (no message_delta / message_stop). ``citations``: citation objects sent as ``citations_delta``
    at the start of the text block.
    """
    _check_timing(chunk_size, gap, first_token)
    rng = _Rng(seed)
    calls = _calls(tool_calls, rng, "toolu_01", spaced=True)
    message_id = f"msg_01{rng.token(22)}"
    events: list[bytes] = []

    def emit(kind: str, **fields: Any) -> None:
        events.append(_sse({"type": kind, **fields}, kind))

    deltas = 0
    if usage is not None and not isinstance(usage.get("output_tokens"), int):
        raise ValueError(f"anthropic usage needs an integer 'output_tokens', got {dict(usage)!r}")
    start_usage: JSON = ({**usage, "output_tokens": 1} if usage is not None else
                         {"input_tokens": 8 + len(prompt) // 4, "cache_creation_input_tokens": 0,
                          "cache_read_input_tokens": 0, "output_tokens": 1, "service_tier": "standard"})
    emit("message_start", message={"id": message_id, "type": "message", "role": "assistant", "model": model,
                                   "content": [], "stop_reason": None, "stop_sequence": None, "usage": start_usage})
    blocks: list[tuple[JSON, list[JSON]]] = []  # (content_block at start, its deltas)
    if thinking is not None:
        sig = signature if signature is not None else base64.b64encode(
            rng.ids.randbytes(96)).decode("ascii")
        thinking_deltas: list[JSON] = [{"type": "thinking_delta", "thinking": piece}
                                       for piece in _pieces(thinking, chunk_size, rng.pieces)]
        blocks.append(({"type": "thinking", "thinking": ""},
                       [*thinking_deltas, {"type": "signature_delta", "signature": sig}]))
    elif signature is not None:
        raise ValueError("a signature needs thinking (it signs the thinking block)")
    if text or citations:
        text_deltas: list[JSON] = [{"type": "citations_delta", "citation": dict(c)} for c in citations or ()]
        text_deltas += [{"type": "text_delta", "text": piece} for piece in _pieces(text, chunk_size, rng.pieces)]
        start: JSON = {"type": "text", "text": ""}
        if citations:
            start["citations"] = []
        blocks.append((start, text_deltas))
    for call in calls:
        pieces = _pieces(call.text, 5, rng.pieces)
        blocks.append(({"type": "tool_use", "id": call.id, "name": call.name, "input": {}},
                       [{"type": "input_json_delta", "partial_json": p} for p in ["", *pieces]]))
    pinged = False
    every = 0 if isinstance(ping, bool) else int(ping)
    since_ping = 0

    def maybe_ping() -> None:
        nonlocal since_ping
        since_ping += 1
        if every and since_ping >= every:
            emit("ping")
            since_ping = 0

    for index, (block, block_deltas) in enumerate(blocks):
        emit("content_block_start", index=index, content_block=block)
        if ping is not False and ping != 0 and not pinged:
            emit("ping")
            pinged = True
        for delta in block_deltas:
            emit("content_block_delta", index=index, delta=delta)
            deltas += 1
            maybe_ping()
        if error is not None and index == len(blocks) - 1:
            break
        emit("content_block_stop", index=index)
    if error is not None:
        err = ({"type": error, "message": _ANTHROPIC_ERRORS.get(error, error.replace("_", " "))}
               if isinstance(error, str) else dict(error))
        emit("error", error=err)
    else:
        reason = finish_reason or ("tool_use" if calls else "end_turn")
        output_tokens = usage["output_tokens"] if usage is not None else max(deltas, 1)
        emit("message_delta", delta={"stop_reason": reason, "stop_sequence": None},
             usage={"output_tokens": output_tokens})
        emit("message_stop")
    chunks, times = _schedule(events, rng.writes, first_token=first_token, gap=gap)
    body: JSON = {"model": model, "max_tokens": 2048 if thinking is not None else 1024,
                  "messages": _user(prompt), "stream": True}
    if thinking is not None:
        body["thinking"] = {"type": "enabled", "budget_tokens": 1024}
    if calls:
        body["tools"] = [{"name": t["name"], "description": t["description"], "input_schema": t["parameters"]}
                         for t in _tools(calls).values()]
    return _cassette(url or ANTHROPIC_URL, body, chunks, times, content_type="text/event-stream; charset=utf-8",
                     # an organization id is a credential header: recordings hold it redacted
                     headers={"anthropic-organization-id": "REDACTED",
                              "request-id": f"req_011{rng.token(21)}"},
                     request_headers={"anthropic-version": "2023-06-01"})


# -- Ollama /api/chat --------------------------------------------------------------------------

def ollama_chat(text: str = "", *, tool_calls: Sequence[ToolCallSpec] = (), thinking: str | None = None,
                usage: Mapping[str, Any] | None = None, finish_reason: str | None = None,
                model: str = "llama3.2", chunk_size: int = 4, gap: float = 0.03, first_token: float = 0.25,
                seed: int = 0, prompt: str = DEFAULT_PROMPT, url: str | None = None) -> Cassette:
    """An Ollama ``/api/chat`` stream: one JSON object per line (``application/x-ndjson``),
    ``message.thinking`` then ``message.content`` fragments, tool calls whole in one line
    (arguments as an object), and a last line with ``"done": true``, ``done_reason`` and the
    counters (``usage``: Ollama's ``prompt_eval_count``, ``eval_count``, durations)."""
    _check_timing(chunk_size, gap, first_token)
    rng = _Rng(seed)
    calls = _calls(tool_calls, rng, "call_", id_size=8)
    for call in calls:
        if not isinstance(call.value, dict):
            raise ValueError(f"Ollama tool call arguments are a JSON object, got {call.value!r} for {call.name!r}")
    lines: list[bytes] = []
    ms = 0

    def line(message: JSON, **extra: Any) -> None:
        nonlocal ms
        ms += 23
        stamp = f"2026-01-01T00:00:{ms // 1000:02d}.{ms % 1000:03d}{rng.ids.randrange(10**6):06d}Z"
        obj = {"model": model, "created_at": stamp, "message": {"role": "assistant", "content": "", **message},
               **extra}
        lines.append(_compact(obj).encode() + b"\n")

    count = 0
    for piece in _pieces(thinking or "", chunk_size, rng.pieces):
        line({"thinking": piece}, done=False)
        count += 1
    for piece in _pieces(text, chunk_size, rng.pieces):
        line({"content": piece}, done=False)
        count += 1
    if calls:
        line({"tool_calls": [{"id": c.id, "function": {"index": k, "name": c.name, "arguments": c.value}}
                             for k, c in enumerate(calls)]}, done=False)
        count += 1
    counters: JSON = (dict(usage) if usage is not None else
                      {"total_duration": 1_480_000_000 + 25_000_000 * count, "load_duration": 12_500_000,
                       "prompt_eval_count": 8 + len(prompt) // 4, "prompt_eval_duration": 110_000_000,
                       "eval_count": max(count, 1), "eval_duration": 25_000_000 * max(count, 1)})
    line({}, done=True, done_reason=finish_reason or "stop", **counters)
    chunks, times = _schedule(lines, rng.writes, first_token=first_token, gap=gap)
    body: JSON = {"model": model, "messages": _user(prompt), "stream": True}
    if thinking is not None:
        body["think"] = True
    if calls:
        body["tools"] = [{"type": "function", "function": tool} for tool in _tools(calls).values()]
    return _cassette(url or OLLAMA_URL, body, chunks, times, content_type="application/x-ndjson", headers={})


# -- the shipped library -----------------------------------------------------------------------

WEATHER_TOKYO = {"name": "get_weather", "arguments": {"city": "東京", "unit": "celsius"}}
#: characters ``str.splitlines`` (and so httpx's ``iter_lines``) takes for line breaks but SSE and
#: JSON lines do not: a client that splits on them cuts an event's JSON in two
HAZARDS = "line\u2028separator, paragraph\u2029separator, next\u0085line"
_JA = ("こんにちは！ストリーミングは日本語でも動きます。🎌 Emoji too: 🌏🚀👩\u200d💻 — and ümlauts, ½, 𝄞. "
       + HAZARDS)

def _more_library() -> dict[str, Callable[[], Cassette]]:
    """The shipped cassettes of protocols whose synthesizer lives in their protocol module."""
    from .protocols import cohere, gemini

    return {
        "gemini/stream_text": lambda: gemini.synthesize(
            _JA, thinking="The user wants a greeting in Japanese; add emoji.", prompt="Greet me in Japanese, with emoji.",
            seed=17),
        "gemini/stream_function_call": lambda: gemini.synthesize(
            "Let me check.", tool_calls=[WEATHER_TOKYO, {"name": "get_time", "arguments": {"timezone": "Asia/Tokyo"}}],
            prompt="Weather and time in Tokyo?", seed=18),
        "gemini/stream_safety": lambda: gemini.synthesize(
            "Here is how the knight", finish_reason="SAFETY", prompt="Tell me a violent story.", seed=19),
        "gemini/array_text": lambda: gemini.synthesize(
            "Without alt=sse, Gemini streams one JSON array — élément par élément. 🧩", alt_sse=False,
            prompt="How does Gemini stream without SSE?", seed=20),
        "cohere/chat_text": lambda: cohere.synthesize(
            "Cohere v2 streams content-delta events — 日本語も 🌊.", prompt="Say hello.", seed=21),
        "cohere/chat_tool_calls": lambda: cohere.synthesize(
            tool_calls=[WEATHER_TOKYO, {"name": "get_time", "arguments": {"timezone": "Asia/Tokyo"}}],
            tool_plan="I will look up the weather and the time in Tokyo.", prompt="Weather and time in Tokyo?", seed=22),
    }


#: name -> how that shipped cassette is synthesized (see ``docs/cassettes.md``).
LIBRARY: dict[str, Callable[[], Cassette]] = {
    "openai/chat_text": lambda: openai_chat(_JA, chunk_size=3, prompt="Greet me in Japanese, with emoji.", seed=1),
    "openai/chat_tool_calls": lambda: openai_chat(
        tool_calls=[{**WEATHER_TOKYO, "id": "call_weather_tokyo"},
                    {"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"},
                     "id": "call_weather_paris"},
                    {"name": "get_time", "arguments": {"timezone": "Asia/Tokyo"}, "id": "call_time_tokyo"}],
        interleave_tool_calls=True, prompt="Weather in Tokyo and Paris, and the time in Tokyo?", seed=2),
    "openai/chat_n2": lambda: openai_chat(
        ["Roses are red, the sky is blue.", "Violets are blue; streams arrive in pieces, too."], n=2,
        choices_out_of_order=True, prompt="Write a one-line poem.", seed=3),
    "openai/chat_usage": lambda: openai_chat(
        "Usage arrives last, in a chunk with no choices.", include_usage=True,
        usage={"prompt_tokens": 14, "completion_tokens": 12, "total_tokens": 26,
               "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
               "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0,
                                             "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}},
        prompt="Say something short.", seed=4),
    "openai/chat_refusal": lambda: openai_chat(
        refusal="I'm sorry, but I can't help with that request.", prompt="Help me pick a lock.", seed=5),
    "openai/chat_content_filter": lambda: openai_chat(
        "Here is the story you asked for. The knight drew his sword and", content_filter=True,
        finish_reason="content_filter", model="gpt-4o-mini", prompt="Tell me a violent story.", seed=6),
    "openai/responses_text": lambda: openai_responses(
        "The Responses API streams typed events: output_text deltas — ünïcödé and 絵文字 🎉 included.",
        prompt="Describe the Responses API stream in one sentence.", seed=7),
    "openai/responses_function_call": lambda: openai_responses(
        tool_calls=[{**WEATHER_TOKYO, "id": "call_resp_weather"}], prompt="What's the weather in Tokyo?", seed=8),
    "anthropic/messages_text": lambda: anthropic_messages(
        "Hello! Claude streams text_delta events — 日本語も大丈夫です 🌸. " + HAZARDS, prompt="Say hello.", seed=9),
    "anthropic/messages_tool_use": lambda: anthropic_messages(
        "I'll look up the weather in Tokyo for you.", tool_calls=[{**WEATHER_TOKYO, "id": "toolu_01WeatherTokyo"}],
        prompt="What's the weather in Tokyo?", seed=10),
    "anthropic/messages_thinking": lambda: anthropic_messages(
        "27 × 453 = 12,231.",
        thinking="Let me compute 27 × 453. 27 × 400 = 10,800; 27 × 53 = 1,431; 10,800 + 1,431 = 12,231.",
        prompt="What is 27 * 453?", seed=11),
    "anthropic/messages_ping": lambda: anthropic_messages(
        "Pings may arrive between any two events; a client must skip them.", ping=4,
        prompt="Tell me about pings.", seed=12),
    "anthropic/messages_overloaded": lambda: anthropic_messages(
        "This answer starts streaming, and then the API is", error="overloaded_error",
        prompt="Write a long essay.", seed=13),
    "ollama/chat": lambda: ollama_chat(
        "Ollama streams JSON lines — one object per line, ending with done: true. 🦙 " + HAZARDS, model="llama3.2",
        prompt="How does Ollama stream?", seed=14),
    "openrouter/chat_keepalive": lambda: openrouter_chat(
        "OpenRouter sends comment lines while the model warms up. " + HAZARDS, keepalives=3,
        prompt="What are SSE comments for?", seed=15),
    "compat/event_ids": lambda: openai_chat(
        "A gateway numbers its events and sends no charset. " + HAZARDS, event_ids=True, charset=False,
        prompt="Say something with line separators.", seed=17),
    "compat/repeated_tool_ids": lambda: openai_chat(
        tool_calls=[{**WEATHER_TOKYO, "id": "call_repeat_0"},
                    {"name": "get_time", "arguments": {"timezone": "Asia/Tokyo"}, "id": "call_repeat_1"}],
        repeat_tool_ids=True, model="compat-model", url="https://llm.example.com/v1/chat/completions",
        prompt="Weather and time in Tokyo?", seed=16),
    **_more_library(),
}


def library_cassette(name: str) -> Cassette:
    """The in-memory synthesized cassette a shipped library cassette is recorded from."""
    try:
        return LIBRARY[name]()
    except KeyError:
        raise KeyError(f"no library cassette {name!r}; known: {', '.join(sorted(LIBRARY))}") from None


def _library_dir() -> Path:
    return Path(__file__).parent / "cassettes"


def _serve(holder: dict[str, Interaction]) -> Any:
    """A Starlette app that streams the held interaction's chunks at their times."""
    from starlette.applications import Starlette
    from starlette.requests import Request as HTTPRequest
    from starlette.responses import StreamingResponse
    from starlette.routing import Route

    async def endpoint(request: HTTPRequest) -> StreamingResponse:
        await request.body()
        response = holder["interaction"].response

        async def body() -> AsyncIterator[bytes]:
            last = 0.0
            for chunk, at in zip(response.chunks, response.times):
                await asyncio.sleep(max(at - last, 0.0))
                last = at
                yield chunk

        headers = {k: v for k, v in response.headers if k != SOURCE_HEADER}
        headers[SOURCE_HEADER] = LIBRARY_SOURCE
        return StreamingResponse(body(), status_code=response.status, headers=headers)

    return Starlette(routes=[Route("/{path:path}", endpoint, methods=["POST"])])


def _through_sdk(base: str, synth: Interaction) -> bool:
    """Make the request with the provider's real SDK, if its protocol module knows how."""
    from . import protocols

    found = protocols.detect(url=synth.request.url)
    return bool(found is not None and found.sdk_request is not None and found.sdk_request(base, synth))


def _record_one(base: str, name: str, holder: dict[str, Interaction], target: Path, attempts: int) -> None:
    import httpx

    from .replay import use_cassette

    synth = library_cassette(name).interactions[0]
    holder["interaction"] = synth
    parts = urlsplit(synth.request.url)
    local = base + parts.path + (f"?{parts.query}" if parts.query else "")

    def as_provider(request: Request) -> Request:
        return Request(request.method, synth.request.url, list(synth.request.headers), request.body)

    def without_date(response: Response) -> Response:
        response.headers = [(k, v) for k, v in response.headers if k != "date"]
        return response

    problem = ""
    for _ in range(attempts):
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "recorded.json"
            with use_cassette(path, record_mode="all", before_record_request=as_provider,
                              before_record_response=without_date):
                if not _through_sdk(base, synth):
                    with httpx.Client(timeout=30.0) as client:
                        with client.stream("POST", local, content=synth.request.body,
                                           headers={"content-type": "application/json"}) as r:
                            for _chunk in r.iter_raw():
                                pass
            recorded = Cassette.load(path)
            (got,) = recorded.interactions
            late = max(abs(a - b) for a, b in zip(got.response.times, synth.response.times)) \
                if len(got.response.times) == len(synth.response.times) else 0.0
            if got.response.chunks != synth.response.chunks:
                problem = (f"the loopback recording of {name} has {len(got.response.chunks)} chunks, "
                           f"{len(synth.response.chunks)} were written (the machine is too busy?)")
            elif late > 0.1:
                problem = f"a chunk of {name} arrived {late * 1000:.0f} ms off its schedule (the machine is too busy?)"
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                recorded.save(target)
                return
    raise RuntimeError(problem)


def write_library(directory: str | Path | None = None, *, names: Sequence[str] | None = None,
                  attempts: int = 3) -> list[Path]:
    """Record every library cassette (or ``names``) through a real loopback server into
    ``directory`` (default: the installed ``ssemock/cassettes``); returns the files written.

    Each synthesized stream is served by a Starlette app on 127.0.0.1 that writes its chunks at
    their times, and recorded by :func:`ssemock.use_cassette` (``record_mode="all"``) from a
    plain httpx client: boundaries and times are real recordings of loopback writes. The
    recorded request is given the provider's URL and headers of the synthesized one; the
    response keeps the server's headers (``date`` dropped, for a stable file) and says how it
    was made in ``x-ssemock-source``.
    """
    from .server import running

    out_dir = Path(directory) if directory is not None else _library_dir()
    holder: dict[str, Interaction] = {}
    written = []
    with running(_serve(holder)) as base:
        for name in names or sorted(LIBRARY):
            target = out_dir / f"{name}.json"
            _record_one(base, name, holder, target, attempts)
            written.append(target)
    return written


def _without_times(raw: bytes) -> Any:
    doc = json.loads(raw)
    for interaction in doc.get("interactions", []):
        chunks = interaction.get("response", {}).get("chunks", [])
        interaction["response"]["chunks"] = [[0, end] for _, end in chunks]
    return doc


def check_library(directory: str | Path | None = None) -> list[str]:
    """Re-record the library into a temporary folder; the names whose files differ from the
    ones in ``directory`` in anything but the chunk times (empty: all reproducible)."""
    shipped = Path(directory) if directory is not None else _library_dir()
    differ = []
    with tempfile.TemporaryDirectory() as tmp:
        write_library(tmp)
        for name in sorted(LIBRARY):
            old, new = shipped / f"{name}.json", Path(tmp) / f"{name}.json"
            if not old.exists() or _without_times(old.read_bytes()) != _without_times(new.read_bytes()):
                differ.append(name)
    return differ


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m ssemock.synth --write-library [--dir DIR] [--check]``."""
    parser = argparse.ArgumentParser(prog="python -m ssemock.synth", description=(
        "Regenerate the cassettes shipped in ssemock.cassettes: synthesize each stream and record it "
        "through a real loopback server."))
    parser.add_argument("--write-library", action="store_true", help="record every library cassette")
    parser.add_argument("--check", action="store_true",
                        help="re-record into a temporary folder and compare with the files (times aside)")
    parser.add_argument("--dir", default=None, help="the library folder (default: the installed one)")
    parser.add_argument("names", nargs="*", help="only these cassettes (default: all)")
    args = parser.parse_args(argv)
    if args.check:
        differ = check_library(args.dir)
        for name in differ:
            print(f"differs: {name}")
        print("reproducible" if not differ else f"{len(differ)} of {len(LIBRARY)} differ")
        return 1 if differ else 0
    if not args.write_library:
        parser.print_help(sys.stderr)
        return 2
    unknown = [n for n in args.names if n not in LIBRARY]
    if unknown:
        parser.error(f"unknown cassette(s) {unknown}; known: {', '.join(sorted(LIBRARY))}")
    for path in write_library(args.dir, names=args.names or None):
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
