"""OpenAI Chat Completions (``openai.chat``): ``chat.completion.chunk`` objects, ``data: [DONE]``.

Also every OpenAI-compatible server (Azure, OpenRouter, vLLM, DeepSeek, ...). Tool-call deltas
merge by their ``index``; a delta carrying a new ``id`` at an index already used starts a new call
(servers that stream every call at index 0), while a repeated id continues the call.
"""

from __future__ import annotations

import itertools
import json
import random
import re
from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from ..core.edits import rewrite
from ..framing.ends import event_ends
from ..store.cassette import Cassette
from . import Protocol, _path
from . import synthesis as syn
from .base import (
    JSON,
    Event,
    Fold,
    StreamError,
    error_of,
    obj,
    openai_error_body,
    seq,
    sse_json,
    string,
)

__all__ = [
    "AZURE_URL",
    "OPENROUTER_KEEPALIVE",
    "OPENROUTER_URL",
    "PROTOCOL",
    "URL",
    "synthesize",
    "synthesize_openrouter",
]


class _OpenAIChat(Fold):
    """Chat Completions chunks: deltas per choice index, tool calls merged by their own index."""

    protocol = "openai.chat"

    def __init__(self) -> None:
        super().__init__()
        self._generation: dict[tuple[int, int], int] = {}  # (choice, index) -> calls started there - 1

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
            self.result.error = error_of(chunk["error"])
        for raw in seq(chunk.get("choices")):
            choice = obj(raw)
            index = self.need_int(choice, "index", "choice")
            delta = obj(choice.get("delta"))
            self.add("text", string(delta.get("content")), choice=index)
            self.add("refusal", string(delta.get("refusal")), choice=index)
            reasoning = delta.get("reasoning_content") or delta.get("reasoning")  # DeepSeek, vLLM
            self.add("thinking", string(reasoning), choice=index)
            for call in seq(delta.get("tool_calls")):
                self.tool_delta(index, obj(call))
            if choice.get("finish_reason") is not None:
                self.choice(index).finish_reason = choice["finish_reason"]

    def tool_delta(self, choice: int, delta: JSON) -> None:
        """Merge one tool-call delta: id, name and type are set once, arguments concatenated.

        A new id at an index whose call already has another id starts a new call there. A delta
        without ``index`` (Mistral's, whole calls) goes by its id: the call of that id, else a new
        call at the next position; without an id either, the last call goes on."""
        index = (
            self.need_int(delta, "index", "tool call delta")
            if "index" in delta
            else self.unindexed(choice, delta)
        )
        function = obj(delta.get("function"))
        kind = string(delta.get("type")) or "function"
        call_id = string(delta.get("id"))
        generation = self._generation.get((choice, index), 0)
        current = self._tools.get((choice, (generation, index)))
        if current is not None and call_id and current.id and call_id != current.id:
            generation += 1
            self._generation[choice, index] = generation
        call = self.tool((generation, index), choice=choice, index=index, type=kind)
        call.id = call.id or call_id
        call.name = call.name or string(function.get("name"))
        call.arguments += string(function.get("arguments"))

    def unindexed(self, choice: int, delta: JSON) -> int:
        """The index of a tool call delta that has none: its id's call, else the next one."""
        calls = [call for (c, _), call in self._tools.items() if c == choice]
        call_id = string(delta.get("id"))
        for call in calls:
            if call_id and call.id == call_id:
                return call.index
        if call_id:
            return max((call.index for call in calls), default=-1) + 1
        if calls:
            return calls[-1].index
        raise self.fail("a tool call delta with neither 'index' nor 'id'")


def error_event(error: StreamError) -> bytes:
    """A ``data:`` event whose chunk is an ``error`` object (what OpenAI sends mid-stream)."""
    payload = {"error": {"message": error.message, "type": error.kind, "param": None, "code": None}}
    nl = error.newline.encode()
    return b"data: " + orjson.dumps(payload) + nl + nl


http_error = openai_error_body  # OpenAI's error body; the Responses API answers with the same


def _is_chunk(event: Any) -> bool:
    payload = sse_json(event)
    return payload.get("object") == "chat.completion.chunk" or "choices" in payload


URL = "https://api.openai.com/v1/chat/completions"
AZURE_URL = (
    "https://example-resource.openai.azure.com/openai/deployments/{model}/chat/completions"
    "?api-version=2024-10-21"
)
OPENROUTER_URL = "https://openrouter.ai/api/v1/chat/completions"
OPENROUTER_KEEPALIVE = b": OPENROUTER PROCESSING\n\n"

# -- synthesizer (and Azure's, OpenRouter's, compatible servers') ------------------------------

_SAFE = {"filtered": False, "severity": "safe"}
_CATEGORIES = ("hate", "self_harm", "sexual", "violence")


def _chat_events(
    texts: list[str],
    *,
    calls: list[syn.Call],
    refusal: str | None,
    usage: JSON | None,
    include_usage: bool,
    finish_reason: str | None,
    model: str,
    chunk_size: int,
    repeat_tool_ids: bool,
    choices_out_of_order: bool,
    interleave_tool_calls: bool,
    style: str,
    rng: syn.Rng,
    prompt: str,
    reuse_tool_index: bool = False,
) -> list[bytes]:
    """Chat completion chunks; ``style`` is "openai", "azure" or "openrouter"."""
    if style == "openrouter":
        base: JSON = {
            "id": f"gen-{syn.CREATED}-{rng.token(20)}",
            "provider": "OpenAI",
            "model": model,
            "object": "chat.completion.chunk",
            "created": syn.CREATED,
        }
    else:
        base = {
            "id": f"chatcmpl-{rng.token(29)}",
            "object": "chat.completion.chunk",
            "created": syn.CREATED,
            "model": model,
        }
        if style == "openai":
            base["service_tier"] = "default"
        base["system_fingerprint"] = f"fp_{rng.token(10).lower()}"
    if include_usage:
        base["usage"] = None

    def chunk(choices: list[JSON], **extra: Any) -> bytes:
        obj = {**base, "choices": choices, **extra}
        if style == "azure":  # Azure sends the keys sorted
            obj = json.loads(json.dumps(obj, sort_keys=True))
        return syn.sse_event(obj)

    def choice(index: int, delta: JSON, finish: str | None = None, filtered: JSON | None = None) -> JSON:
        out: JSON = {"index": index, "delta": delta, "logprobs": None, "finish_reason": finish}
        if style == "openrouter":
            out = {
                "index": index,
                "delta": {"role": "assistant", **delta},
                "finish_reason": finish,
                "native_finish_reason": finish,
                "logprobs": None,
            }
        if style == "azure":
            out["content_filter_results"] = filtered if filtered is not None else {}
        return out

    deltas_count = 0
    per_choice: list[list[JSON]] = []
    for index, text in enumerate(texts):
        mine = calls if index == 0 else []
        role: JSON = {
            "role": "assistant",
            "content": None if (refusal is not None and index == 0) else "",
            "refusal": None,
        }
        if refusal is not None and index == 0:
            role["refusal"] = ""
        if style == "openrouter":
            role = {"content": ""}
        steps: list[JSON] = [choice(index, role, filtered={} if style == "azure" else None)]
        filters = {name: dict(_SAFE) for name in _CATEGORIES}
        for piece in syn.pieces(text, chunk_size, rng.pieces):
            steps.append(choice(index, {"content": piece}, filtered=filters))
        if refusal is not None and index == 0:
            for piece in syn.pieces(refusal, chunk_size, rng.pieces):
                steps.append(choice(index, {"refusal": piece}))
        queues: list[list[JSON]] = []
        for k, call in enumerate(mine):
            queue: list[JSON] = []
            pieces = syn.pieces(call.text, 5, rng.pieces)
            at = 0 if reuse_tool_index else k
            if repeat_tool_ids:
                for piece in pieces or [""]:
                    queue.append(
                        {
                            "index": at,
                            "id": call.id,
                            "type": "function",
                            "function": {"name": call.name, "arguments": piece},
                        }
                    )
            else:
                queue.append(
                    {
                        "index": at,
                        "id": call.id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": ""},
                    }
                )
                queue += [{"index": at, "function": {"arguments": piece}} for piece in pieces]
            queues.append(queue)
        for delta in _interleave(queues, rng.writes) if interleave_tool_calls else itertools.chain(*queues):
            steps.append(
                choice(
                    index,
                    {"content": None, "tool_calls": [delta]}
                    if style == "openrouter"
                    else {"tool_calls": [delta]},
                )
            )
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
        events.append(
            syn.sse_event(
                json.loads(
                    json.dumps(
                        {
                            "choices": [],
                            "created": 0,
                            "id": "",
                            "model": "",
                            "object": "",
                            "prompt_filter_results": [
                                {
                                    "prompt_index": 0,
                                    "content_filter_results": {
                                        **{name: dict(_SAFE) for name in _CATEGORIES},
                                        "jailbreak": {"filtered": False, "detected": False},
                                    },
                                }
                            ],
                        },
                        sort_keys=True,
                    )
                )
            )
        )
    order = _interleave(per_choice[::-1], rng.writes) if choices_out_of_order else _round_robin(per_choice)
    events += [chunk([step]) for step in order]
    if include_usage:
        if usage is None:
            prompt_tokens = 8 + len(prompt) // 4
            usage = {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": deltas_count,
                "total_tokens": prompt_tokens + deltas_count,
                "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
                "completion_tokens_details": {
                    "reasoning_tokens": 0,
                    "audio_tokens": 0,
                    "accepted_prediction_tokens": 0,
                    "rejected_prediction_tokens": 0,
                },
            }
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


def _chat_request(model: str, prompt: str, n: int, include_usage: bool, calls: list[syn.Call]) -> JSON:
    body: JSON = {"model": model, "messages": syn.user(prompt), "stream": True}
    if n > 1:
        body["n"] = n
    if include_usage:
        body["stream_options"] = {"include_usage": True}
    if calls:
        body["tools"] = [{"type": "function", "function": tool} for tool in syn.tools(calls).values()]
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


def synthesize(
    text: str | Sequence[str] = "",
    *,
    tool_calls: Sequence[syn.ToolCallSpec] = (),
    n: int = 1,
    usage: Mapping[str, Any] | None = None,
    refusal: str | None = None,
    finish_reason: str | None = None,
    model: str = "gpt-4o-mini",
    chunk_size: int = 4,
    gap: float = 0.03,
    first_token: float = 0.25,
    include_usage: bool = False,
    repeat_tool_ids: bool = False,
    choices_out_of_order: bool = False,
    content_filter: bool = False,
    interleave_tool_calls: bool = False,
    seed: int = 0,
    prompt: str = syn.DEFAULT_PROMPT,
    url: str | None = None,
    reuse_tool_index: bool = False,
    event_ids: bool = False,
    charset: bool = True,
) -> Cassette:
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
    syn.check_timing(chunk_size, gap, first_token)
    if reuse_tool_index and interleave_tool_calls:
        raise ValueError(
            "reuse_tool_index and interleave_tool_calls cannot be combined: calls at one index "
            "are told apart only by order"
        )
    texts = _texts(text, n)
    rng = syn.Rng(seed)
    calls = syn.calls(tool_calls, rng, "call_")
    include = include_usage or usage is not None
    style = "azure" if content_filter else "openai"
    events = _chat_events(
        texts,
        calls=calls,
        refusal=refusal,
        usage=None if usage is None else dict(usage),
        include_usage=include,
        finish_reason=finish_reason,
        model=model,
        chunk_size=chunk_size,
        repeat_tool_ids=repeat_tool_ids,
        choices_out_of_order=choices_out_of_order,
        interleave_tool_calls=interleave_tool_calls,
        style=style,
        rng=rng,
        prompt=prompt,
        reuse_tool_index=reuse_tool_index,
    )
    chunks, times = syn.schedule(events, rng.writes, first_token=first_token, gap=gap)
    if event_ids:
        chunks = _with_ids(chunks)
    target = url or (AZURE_URL.format(model=model) if content_filter else URL)
    headers = (
        {"apim-request-id": rng.token(32).lower(), "x-ms-region": "East US"}
        if content_filter
        else {
            "openai-processing-ms": str(int(first_token * 1000)),
            "openai-version": "2020-10-01",
            "x-request-id": f"req_{rng.token(32).lower()}",
        }
    )
    return syn.one_interaction(
        target,
        _chat_request(model, prompt, len(texts), include, calls),
        chunks,
        times,
        content_type="text/event-stream; charset=utf-8" if charset else "text/event-stream",
        headers=headers,
    )


def _with_ids(chunks: list[bytes]) -> list[bytes]:
    """The same writes with an ``id: N`` line opening every event (N counts from 1), each in the
    line ending of its event, the writes' ends carried along."""
    body = b"".join(chunks)
    ends = list(itertools.accumulate(map(len, chunks)))
    starts = [0, *(e for e in event_ends(body, sse=True) if e < len(body))]
    edits = []
    for i, start in enumerate(starts):
        newline = _NEWLINE.search(body, start)
        edits.append((start, start, b"id: %d" % (i + 1) + (newline.group() if newline else b"\n")))
    body, new_ends = rewrite(body, edits, ends)
    return [body[a:b] for a, b in zip([0, *new_ends], new_ends)]


_NEWLINE = re.compile(rb"\r\n|\r|\n")


def synthesize_openrouter(
    text: str = "",
    *,
    tool_calls: Sequence[syn.ToolCallSpec] = (),
    usage: Mapping[str, Any] | None = None,
    finish_reason: str | None = None,
    model: str = "openai/gpt-4o-mini",
    keepalives: int = 3,
    chunk_size: int = 4,
    gap: float = 0.03,
    first_token: float = 0.6,
    include_usage: bool = False,
    seed: int = 0,
    prompt: str = syn.DEFAULT_PROMPT,
    url: str | None = None,
) -> Cassette:
    """An OpenRouter chat stream: OpenAI's chunk format (plus ``provider`` and
    ``native_finish_reason``), preceded by ``keepalives`` ``: OPENROUTER PROCESSING`` comment
    lines sent while the upstream model has not answered yet (evenly before ``first_token``)."""
    syn.check_timing(chunk_size, gap, first_token)
    rng = syn.Rng(seed)
    calls = syn.calls(tool_calls, rng, "call_")
    include = include_usage or usage is not None
    events = _chat_events(
        [text],
        calls=calls,
        refusal=None,
        usage=None if usage is None else dict(usage),
        include_usage=include,
        finish_reason=finish_reason,
        model=model,
        chunk_size=chunk_size,
        repeat_tool_ids=False,
        choices_out_of_order=False,
        interleave_tool_calls=False,
        style="openrouter",
        rng=rng,
        prompt=prompt,
    )
    lead = [(first_token * k / (keepalives + 1), OPENROUTER_KEEPALIVE) for k in range(1, keepalives + 1)]
    chunks, times = syn.schedule(events, rng.writes, first_token=first_token, gap=gap, lead=lead)
    return syn.one_interaction(
        url or OPENROUTER_URL,
        _chat_request(model, prompt, 1, include, calls),
        chunks,
        times,
        content_type="text/event-stream",
        headers={"x-generation-id": f"gen-{rng.token(20)}"},
    )


PROTOCOL = Protocol(
    name="openai.chat",
    framing="sse",
    fold=_OpenAIChat,
    error_event=error_event,
    http_error=http_error,
    url=lambda url: _path(url).endswith("/chat/completions"),
    event=_is_chunk,
    synthesize=synthesize,
)
