"""The synthesis toolkit every protocol's synthesizer builds on: seeded ids and text pieces,
tool calls, writes cut and timed as a real server and network deliver them, and the
one-interaction cassette a synthesizer returns.

Each protocol module (``ssemock.protocols.*``) owns its provider's synthesizer and imports these
pieces; [`ssemock.synth`][ssemock.synth] is the front door (the functions by provider name, the shipped
library, the command line).
"""

from __future__ import annotations

import bisect
import itertools
import json
import random
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

from ..store.cassette import Cassette

__all__ = [
    "CREATED",
    "DEFAULT_PROMPT",
    "JSON",
    "SOURCE_HEADER",
    "SYNTH_SOURCE",
    "Call",
    "Rng",
    "Timeline",
    "ToolCallSpec",
    "calls",
    "check_timing",
    "compact",
    "one_interaction",
    "pieces",
    "schedule",
    "schema",
    "sse_event",
    "tools",
    "user",
]

JSON: TypeAlias = dict[str, Any]
ToolCallSpec: TypeAlias = Mapping[str, Any]

SOURCE_HEADER = "x-ssemock-source"
"""The response header every synthesized response carries, saying it was synthesized."""
SYNTH_SOURCE = (
    "synthesized by ssemock.synth from the provider's documented event format; "
    "not captured from the real service"
)
"""The value of the [`SOURCE_HEADER`][ssemock.synth.SOURCE_HEADER] header."""
DEFAULT_PROMPT = "Say hello."
"""The user message of the synthesized request when no ``prompt`` is given."""
CREATED = 1767225600  # 2026-01-01T00:00:00Z
_ALNUM = string.ascii_letters + string.digits
_GROUPS = (1, 1, 1, 2, 2, 3)  # events per write
_CUT_MID_LINE = 0.25  # chance that a write ends inside the next event's first line


def compact(obj: Any) -> str:
    """JSON as the providers send it: no spaces, UTF-8 characters unescaped."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def sse_event(obj: Any, event: str | None = None) -> bytes:
    """One SSE event: an optional ``event:`` line and a ``data:`` line of compact JSON (or text)."""
    head = f"event: {event}\n" if event else ""
    data = obj if isinstance(obj, str) else compact(obj)
    return f"{head}data: {data}\n\n".encode()


class Rng:
    """Independent seeded streams for ids, text pieces and writes (str seeds hash stably)."""

    def __init__(self, seed: int) -> None:
        self.ids = random.Random(f"ssemock.synth:ids:{seed}")
        self.pieces = random.Random(f"ssemock.synth:pieces:{seed}")
        self.writes = random.Random(f"ssemock.synth:writes:{seed}")

    def token(self, n: int) -> str:
        """``n`` seeded letters and digits (ids)."""
        return "".join(self.ids.choice(_ALNUM) for _ in range(n))


def pieces(text: str, size: int, rng: random.Random) -> list[str]:
    """``text`` cut into deltas of about ``size`` characters (seeded sizes, as tokens vary)."""
    lo, hi = max(1, size - size // 2), size + size // 2
    out, pos = [], 0
    while pos < len(text):
        step = rng.randint(lo, hi)
        out.append(text[pos : pos + step])
        pos += step
    return out


@dataclass(frozen=True)
class Call:
    """A tool call to stream: its id, name, and arguments as JSON text and as a value."""

    id: str
    name: str
    value: Any  # the arguments decoded (a dict for every provider's tool calls)
    text: str  # the arguments as the provider streams them


def calls(
    specs: Sequence[ToolCallSpec], rng: Rng, prefix: str, *, spaced: bool = False, id_size: int = 24
) -> list[Call]:
    """The tool calls a synthesizer streams, checked (a name each; string arguments must be JSON)."""
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
                raise ValueError(
                    f"tool_calls[{k}]['arguments'] is a string but not JSON: {arguments!r}"
                ) from None
        else:
            value = arguments
            text = json.dumps(arguments, ensure_ascii=False) if spaced else compact(arguments)
        call_id = spec.get("id") or prefix + rng.token(id_size)
        out.append(Call(str(call_id), spec["name"], value, text))
    return out


def schedule(
    events: Sequence[bytes],
    rng: random.Random,
    *,
    first_token: float,
    gap: float,
    lead: Sequence[tuple[float, bytes]] = (),
) -> tuple[list[bytes], list[float]]:
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


def check_timing(chunk_size: int, gap: float, first_token: float) -> None:
    """A synthesizer's size and timing arguments, refused when they cannot be honoured."""
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be >= 1, got {chunk_size}")
    if not (gap >= 0 and first_token >= 0):
        raise ValueError(
            f"gap and first_token must be >= 0 seconds, got gap={gap}, first_token={first_token}"
        )


def one_interaction(
    url: str,
    request_json: JSON,
    chunks: list[bytes],
    times: list[float],
    *,
    content_type: str,
    headers: Mapping[str, str],
    request_headers: Mapping[str, str] | None = None,
) -> Cassette:
    """The cassette a synthesizer returns: the ``POST`` and its streamed answer, marked synthesized."""
    cassette = Cassette()
    cassette.add(
        "POST",
        url,
        chunks,
        times=times,
        headers={"content-type": content_type, **headers, SOURCE_HEADER: SYNTH_SOURCE},
        request_headers={"content-type": "application/json", **(request_headers or {})},
        request_json=request_json,
    )
    return cassette


class Timeline:
    """A synthesized WebSocket session's messages as they happen, each ``after`` seconds past the
    one before (the clock starts at ``start``): ``messages`` is what
    `ssemock.protocols.messages.one_session` takes."""

    def __init__(self, start: float = 0.0) -> None:
        self.clock = start
        """Seconds since the session opened, at the last message."""
        self.messages: list[tuple[str, float, str, str | bytes]] = []
        """``(direction, t seconds, "text" | "binary", data)``, in order."""

    def add(self, direction: str, after: float, data: JSON | str | bytes, *, binary: bool = False) -> None:
        """A message ``direction`` (``send``: the client's, ``recv``: the server's): a JSON object
        (compact, in a binary frame with ``binary``), a text, or bytes (a binary frame)."""
        self.clock += after
        if isinstance(data, dict):
            data = compact(data).encode() if binary else compact(data)
        self.messages.append(
            (direction, round(self.clock, 4), "binary" if isinstance(data, bytes) else "text", data)
        )

    def send(self, data: JSON | str | bytes, after: float = 0.01) -> None:
        """The client's message, ``after`` seconds (10 ms) on."""
        self.add("send", after, data)

    def recv(self, after: float, data: JSON | str | bytes, *, binary: bool = False) -> None:
        """The server's message, ``after`` seconds on."""
        self.add("recv", after, data, binary=binary)


def user(prompt: str) -> list[JSON]:
    """The ``messages`` of a one-turn request."""
    return [{"role": "user", "content": prompt}]


def schema(value: Any) -> JSON:
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
        return {"type": "array", "items": schema(value[0]) if value else {}}
    if isinstance(value, dict):
        return {
            "type": "object",
            "properties": {str(k): schema(v) for k, v in value.items()},
            "required": [str(k) for k in value],
        }
    return {}


def tools(calls: Sequence[Call]) -> dict[str, JSON]:
    """One tool definition per distinct name, parameters read off the first call's arguments."""
    out: dict[str, JSON] = {}
    for call in calls:
        if call.name not in out:
            params = (
                schema(call.value) if isinstance(call.value, dict) else {"type": "object", "properties": {}}
            )
            out[call.name] = {
                "name": call.name,
                "description": f"The {call.name.replace('_', ' ')} tool.",
                "parameters": params,
            }
    return out
