"""What a client made of the stream: the text, tool calls and finish reason accumulated from the
chunks the openai SDK, httpx-sse and the classic hand-written ``split("data: ")`` decoder
decoded (or the error that ended their loop)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

import httpx
import httpx_sse
import openai

from .stream import API_KEY, MESSAGES, MODEL, TOOLS


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: str


@dataclass
class Outcome:
    """What one client got: chunk objects decoded, the text and tool calls accumulated from them."""

    chunks: int = 0
    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    finish_reason: str | None = None
    error: str | None = None  # the exception that ended the client's loop, if any

    def same_as(self, other: Outcome) -> bool:
        return (
            self.error is None
            and self.chunks == other.chunks
            and self.text == other.text
            and self.tool_calls == other.tool_calls
            and self.finish_reason == other.finish_reason
        )


class _Folder:
    """Accumulates chat-completion deltas of choice 0 (text, tool calls by index)."""

    def __init__(self) -> None:
        self.chunks = 0
        self.text: list[str] = []
        self.calls: dict[int, dict[str, str]] = {}
        self.finish_reason: str | None = None

    def delta(
        self,
        content: str | None,
        tool_calls: Iterable[tuple[int, str | None, str | None, str | None]],
        finish_reason: str | None,
    ) -> None:
        if content:
            self.text.append(content)
        for index, call_id, name, arguments in tool_calls:
            slot = self.calls.setdefault(index, {"id": "", "name": "", "arguments": ""})
            slot["id"] = call_id or slot["id"]
            slot["name"] = name or slot["name"]
            slot["arguments"] += arguments or ""
        if finish_reason:
            self.finish_reason = finish_reason

    def fold_dict(self, obj: object) -> None:
        """One decoded JSON chunk (hand-written decoders: anything may come out)."""
        if not isinstance(obj, dict) or not isinstance(obj.get("choices"), list):
            return
        self.chunks += 1
        for choice in obj["choices"]:
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            calls = []
            for tc in delta.get("tool_calls") or []:
                fn = tc.get("function") or {}
                calls.append((int(tc.get("index", 0)), tc.get("id"), fn.get("name"), fn.get("arguments")))
            self.delta(delta.get("content"), calls, choice.get("finish_reason"))

    def outcome(self, error: BaseException | None = None) -> Outcome:
        calls = [ToolCall(c["id"], c["name"], c["arguments"]) for _, c in sorted(self.calls.items())]
        return Outcome(
            self.chunks,
            "".join(self.text),
            calls,
            self.finish_reason,
            None if error is None else f"{type(error).__name__}: {error}",
        )


def _openai_client(base_url: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{base_url}/v1", api_key=API_KEY, max_retries=0, timeout=10.0)


def _via_openai(client: openai.OpenAI, first_chunk: list[float] | None = None) -> Outcome:
    """(a) The official SDK, accumulating its typed chunks as an application would."""
    folder = _Folder()
    t0 = time.perf_counter()
    try:
        stream = client.chat.completions.create(model=MODEL, messages=MESSAGES, tools=TOOLS, stream=True)
        for chunk in stream:
            if first_chunk is not None and not first_chunk:
                first_chunk.append(time.perf_counter() - t0)
            folder.chunks += 1
            for choice in chunk.choices:
                if choice.index != 0:
                    continue
                calls = [
                    (
                        tc.index,
                        tc.id,
                        tc.function.name if tc.function else None,
                        tc.function.arguments if tc.function else None,
                    )
                    for tc in choice.delta.tool_calls or []
                ]
                folder.delta(choice.delta.content, calls, choice.finish_reason)
    except Exception as exc:  # a decoding failure is a result to show, not a crash of the demo
        return folder.outcome(exc)
    return folder.outcome()


def _via_httpx_sse(client: httpx.Client, url: str, body: bytes) -> tuple[Outcome, int]:
    """(b) httpx-sse over a plain httpx.Client; returns the outcome and the number of SSE events."""
    folder = _Folder()
    events = 0
    try:
        with httpx_sse.connect_sse(
            client, "POST", url, content=body, headers={"content-type": "application/json"}
        ) as source:
            for sse in source.iter_sse():
                events += 1
                if sse.data == "[DONE]":
                    continue
                folder.fold_dict(json.loads(sse.data))
    except Exception as exc:
        return folder.outcome(exc), events
    return folder.outcome(), events


def _via_naive(client: httpx.Client, url: str, body: bytes) -> Outcome:
    """(c) The classic hand-written decoder: split each network chunk on ``"data: "``."""
    folder = _Folder()
    try:
        with client.stream("POST", url, content=body, headers={"content-type": "application/json"}) as r:
            for chunk in r.iter_bytes():
                for part in chunk.decode().split("data: "):
                    try:
                        obj = json.loads(part)
                    except ValueError:
                        continue
                    folder.fold_dict(obj)
    except Exception as exc:  # UnicodeDecodeError when a chunk ends inside a character
        return folder.outcome(exc)
    return folder.outcome()
