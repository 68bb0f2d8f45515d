"""``openai.completions``: OpenAI's legacy Completions API (``POST /v1/completions``) and every
server that copies it (vLLM, LocalAI, llama.cpp's server): SSE ``data:`` chunks whose choices
carry ``text`` (not ``delta``), ``finish_reason`` on the last one, an optional ``usage`` chunk,
then ``data: [DONE]``.

Detected by its events only (``object: "text_completion"``, or a choice with ``text`` and neither
``delta`` nor ``message``): other APIs answer at a ``/completions`` path too (Writer's ``{"value"}``
stream). A choice without ``index`` is choice 0 (some compatible servers leave it out).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from ..store.cassette import Cassette
from . import Protocol
from . import synthesis as syn
from .base import JSON, Event, Fold, StreamError, error_of, obj, openai_error_body, seq, sse_json, string

__all__ = ["PROTOCOL", "URL", "synthesize"]

URL = "https://api.openai.com/v1/completions"


class _Completions(Fold):
    """Completions chunks: ``choices[].text`` per choice index (0 when absent)."""

    protocol = "openai.completions"

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
            index = self.need_int(choice, "index", "choice") if "index" in choice else 0
            self.choice(index)
            self.add("text", string(choice.get("text")), choice=index)
            if choice.get("finish_reason") is not None:
                self.choice(index).finish_reason = choice["finish_reason"]


def error_event(error: StreamError) -> bytes:
    """A ``data:`` event whose chunk is an ``error`` object (what OpenAI sends mid-stream)."""
    payload = {"error": {"message": error.message, "type": error.kind, "param": None, "code": None}}
    nl = error.newline.encode()
    return b"data: " + orjson.dumps(payload) + nl + nl


def is_completion_chunk(event: Any) -> bool:
    """A Completions chunk: ``object: "text_completion"``, or a first choice with ``text`` and
    neither ``delta`` nor ``message`` (a chat chunk has ``delta``)."""
    payload = sse_json(event)
    if payload.get("object") == "text_completion":
        return True
    choices = payload.get("choices")
    first = choices[0] if isinstance(choices, list) and choices else None
    return isinstance(first, Mapping) and "text" in first and "delta" not in first and "message" not in first


def synthesize(
    text: str = "",
    *,
    usage: Mapping[str, Any] | None = None,
    finish_reason: str | None = None,
    model: str = "gpt-3.5-turbo-instruct",
    chunk_size: int = 4,
    gap: float = 0.03,
    first_token: float = 0.25,
    seed: int = 0,
    prompt: str = syn.DEFAULT_PROMPT,
    url: str | None = None,
) -> Cassette:
    """A ``/v1/completions`` stream: one ``text_completion`` chunk per piece of ``text``, the last
    with ``finish_reason``, a ``usage`` chunk when ``usage`` is given, then ``[DONE]``."""
    syn.check_timing(chunk_size, gap, first_token)
    rng = syn.Rng(seed)
    ident = f"cmpl-{rng.token(29)}"

    def chunk(choices: list[JSON], **extra: Any) -> bytes:
        head = {"id": ident, "object": "text_completion", "created": syn.CREATED, "model": model}
        return syn.sse_event({**head, "choices": choices, **extra})

    def choice(piece: str, finish: str | None = None) -> JSON:
        return {"text": piece, "index": 0, "logprobs": None, "finish_reason": finish}

    events = [chunk([choice(piece)]) for piece in syn.pieces(text, chunk_size, rng.pieces)]
    events.append(chunk([choice("", finish_reason or "stop")]))
    if usage is not None:
        events.append(chunk([], usage=dict(usage)))
    events.append(b"data: [DONE]\n\n")
    chunks, times = syn.schedule(events, rng.writes, first_token=first_token, gap=gap)
    body: JSON = {"model": model, "prompt": prompt, "stream": True}
    return syn.one_interaction(url or URL, body, chunks, times, content_type="text/event-stream", headers={})


PROTOCOL = Protocol(
    name="openai.completions",
    framing="sse",
    fold=_Completions,
    error_event=error_event,
    http_error=openai_error_body,
    event=is_completion_chunk,
    synthesize=synthesize,
)
"""The `openai.completions` protocol, as registered in `ssemock.protocols`."""
