"""``ssemock demo``: record a real SSE stream, then replay it under every chunking through real clients.

A loopback Starlette server streams an OpenAI-style chat completion (Japanese text, an emoji, a
tool call whose arguments arrive in fragments), written in several pieces with 30-50 ms gaps and
sometimes cut mid-line, as real servers do. The demo records one request through the official
``openai`` SDK into a cassette, stops the server, and replays the cassette with the network
blocked under every strategy of [`ssemock.chunking.ALL`][ssemock.chunking.ALL] through three clients: the openai
SDK, httpx-sse, and the classic hand-written ``split("data: ")`` decoder. The real decoders get
the same result under every chunking; the hand-written one loses events silently under mid-line
splits and raises UnicodeDecodeError where a chunk ends inside a character.

The cassette is written to a temporary folder that is removed at the end, unless a ``directory``
(``ssemock demo --dir DIR``) is given: then it is kept, and the demo ends with the command to look
inside it (``ssemock show PATH``). Output to a pipe or a file is not wrapped at the console width
(a sentence stays on one line for the reader's pager to wrap), only the table is laid out.

Needs the ``demo`` extra (starlette, uvicorn, openai, httpx-sse, rich).
"""

from __future__ import annotations

import asyncio
import json
import shlex
import shutil
import tempfile
import time
from collections.abc import AsyncIterator, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from itertools import accumulate, cycle
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import httpx_sse
import openai
from rich import box
from rich.console import Console, JustifyMethod
from rich.markup import escape
from rich.table import Table
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import StreamingResponse
from starlette.routing import Route

from ..player.explore import Failure
from ..player.explore import explore as explore_search
from ..player.replay import Player, replay, use_cassette
from ..store.cassette import Cassette, Interaction
from ..variants import chunking as _chunking
from .server import running

if TYPE_CHECKING:
    from openai.types.chat import ChatCompletionMessageParam, ChatCompletionToolUnionParam

__all__ = [
    "API_KEY",
    "APP",
    "EVENTS",
    "GAPS",
    "MODEL",
    "TEXT",
    "TOOL_ARGS",
    "TOOL_ID",
    "TOOL_NAME",
    "WRITES",
    "ChunkingResult",
    "DemoResult",
    "Outcome",
    "ToolCall",
    "run_demo",
]

TEXT = "こんにちは、世界！🌏 Streaming works."
TOOL_NAME = "get_weather"
TOOL_ID = "call_demo_1"
TOOL_ARGS = '{"city": "東京", "unit": "celsius"}'
MODEL = "gpt-demo"
API_KEY = "sk-test-demo"
MESSAGES: list[ChatCompletionMessageParam] = [
    {"role": "user", "content": "Say hello, then look up the weather in Tokyo."}
]
TOOLS: list[ChatCompletionToolUnionParam] = [
    {
        "type": "function",
        "function": {
            "name": TOOL_NAME,
            "description": "Current weather for a city.",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string"},
                    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                },
                "required": ["city"],
            },
        },
    }
]
CASSETTE_NAME = "chat_completions.json"


# -- the stream the server sends ---------------------------------------------------------------


def _event(delta: dict[str, Any], finish_reason: str | None = None) -> bytes:
    chunk = {
        "id": "chatcmpl-demo",
        "object": "chat.completion.chunk",
        "created": 1767225600,
        "model": MODEL,
        "system_fingerprint": "fp_demo",
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}],
    }
    return f"data: {json.dumps(chunk, ensure_ascii=False)}\n\n".encode()


def _events() -> list[bytes]:
    out = [_event({"role": "assistant", "content": ""})]
    out += [_event({"content": TEXT[i : i + 3]}) for i in range(0, len(TEXT), 3)]
    out.append(
        _event(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": TOOL_ID,
                        "type": "function",
                        "function": {"name": TOOL_NAME, "arguments": ""},
                    }
                ]
            }
        )
    )
    out += [
        _event({"tool_calls": [{"index": 0, "function": {"arguments": TOOL_ARGS[i : i + 8]}}]})
        for i in range(0, len(TOOL_ARGS), 8)
    ]
    out.append(_event({}, "tool_calls"))
    out.append(b"data: [DONE]\n\n")
    return out


def _writes(events: Sequence[bytes]) -> list[bytes]:
    """Group the events into writes of 1-3 events; every third write ends inside the next line."""
    body = b"".join(events)
    ends = list(accumulate(len(e) for e in events))
    sizes = cycle([2, 1, 3, 2])
    cuts: list[int] = []
    count = 0
    while (count := count + next(sizes)) < len(events):
        cut = ends[count - 1]
        if len(cuts) % 3 == 2:
            cut += 24  # inside '"chatcmpl-demo"' of the next event: ASCII, mid-line
        cuts.append(cut)
    cuts.append(len(body))
    return [body[a:b] for a, b in zip([0, *cuts], cuts)]


#: The SSE events of the demo stream, one ``data: ...\n\n`` each (the last is ``[DONE]``).
EVENTS: list[bytes] = _events()
#: What the server writes, in order: the events grouped, a few writes ending mid-line.
WRITES: list[bytes] = _writes(EVENTS)
#: Seconds the server waits before each write (30-50 ms; none before the first).
GAPS: list[float] = [0.0] + [0.030 + 0.005 * ((3 * i) % 5) for i in range(1, len(WRITES))]


async def _chat_completions(request: Request) -> StreamingResponse:
    await request.body()

    async def body() -> AsyncIterator[bytes]:
        for gap, data in zip(GAPS, WRITES):
            if gap:
                await asyncio.sleep(gap)
            yield data

    return StreamingResponse(
        body(),
        media_type="text/event-stream",
        headers={"cache-control": "no-cache", "x-request-id": "req_demo"},
    )


#: The loopback server: ``POST /v1/chat/completions`` streams `WRITES`.
APP = Starlette(routes=[Route("/v1/chat/completions", _chat_completions, methods=["POST"])])


# -- what a client made of the stream ----------------------------------------------------------


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


# -- results -----------------------------------------------------------------------------------


@dataclass
class ChunkingResult:
    """One row of the table: one chunking, three clients."""

    chunking: str
    chunks: int
    bytes: int
    events: int
    openai_text_ok: bool
    openai_tool_args_ok: bool
    httpx_sse_ok: bool
    naive_ok: bool
    naive_got: str  # e.g. "17/17 chunks", "9/17 chunks", "UnicodeDecodeError"
    openai: Outcome
    httpx_sse: Outcome
    naive: Outcome

    @property
    def real_clients_ok(self) -> bool:
        return self.openai_text_ok and self.openai_tool_args_ok and self.httpx_sse_ok


@dataclass
class DemoResult:
    """Everything the demo measured; ``as_dict()`` is what ``ssemock demo --json`` prints."""

    cassette_path: Path  # where the demo wrote its cassette (removed afterwards unless cassette_kept)
    server_url: str
    live: Outcome
    recorded_chunks: list[bytes]
    recorded_times: list[float]  # seconds after the request was sent
    client_first_chunk_s: float  # when the SDK handed the first chunk to the caller, while recording
    stream_s: float  # the whole live stream, as the SDK consumed it
    rows: list[ChunkingResult]
    conclusion: str
    cassette_kept: bool = False  # a ``directory`` was given: the cassette is still there
    explored: Failure | None = None  # ``explore``: the naive decoder's smallest failing stream
    explore_examples: int = 0  # how many examples explore ran (0: not asked)

    @property
    def recorded_first_chunk_s(self) -> float:
        return self.recorded_times[0] if self.recorded_times else 0.0

    @property
    def live_ok(self) -> bool:
        """The live run got what the server sent."""
        return (
            self.live.error is None
            and self.live.text == TEXT
            and self.live.tool_calls == [ToolCall(TOOL_ID, TOOL_NAME, TOOL_ARGS)]
        )

    @property
    def real_clients_ok(self) -> bool:
        return all(r.real_clients_ok for r in self.rows)

    @property
    def naive_failed(self) -> list[str]:
        return [r.chunking for r in self.rows if not r.naive_ok]

    def row(self, chunking: str) -> ChunkingResult:
        return next(r for r in self.rows if r.chunking == chunking)

    def as_dict(self) -> dict[str, Any]:
        return {
            "cassette": str(self.cassette_path),
            "cassette_kept": self.cassette_kept,
            "server_url": self.server_url,
            "live": asdict(self.live),
            "live_ok": self.live_ok,
            "recorded": {
                "chunks": len(self.recorded_chunks),
                "bytes": sum(map(len, self.recorded_chunks)),
                "chunk_ends": list(accumulate(map(len, self.recorded_chunks))),
                "times_ms": [round(t * 1000, 1) for t in self.recorded_times],
                "first_chunk_ms": round(self.recorded_first_chunk_s * 1000, 1),
                "client_first_chunk_ms": round(self.client_first_chunk_s * 1000, 1),
                "stream_ms": round(self.stream_s * 1000, 1),
            },
            "rows": [asdict(r) for r in self.rows],
            "real_clients_ok": self.real_clients_ok,
            "naive_failed": self.naive_failed,
            "conclusion": self.conclusion,
            "explore": None
            if not self.explore_examples
            else {
                "examples": self.explore_examples,
                "failure": None
                if self.explored is None
                else {
                    "reproducer": self.explored.reproducer,
                    "boundaries": self.explored.boundaries,
                    "transforms": [t.name for t in self.explored.variant.transforms],
                    "error": f"{type(self.explored.error).__name__}: {self.explored.error}",
                    "examples_to_first_failure": self.explored.examples,
                },
            },
        }


# -- the demo ----------------------------------------------------------------------------------


def _say(console: Console, text: str, **options: Any) -> None:
    """Print a sentence: wrapped to the width of a terminal, never broken into lines in a pipe."""
    console.print(text, soft_wrap=not console.is_terminal, **options)


def _record(directory: Path, console: Console) -> tuple[Path, str, Outcome, Interaction, float, float]:
    path = directory / CASSETTE_NAME
    with running(APP) as base_url:
        _say(
            console,
            f"[bold]1. Recording[/] a live stream from the loopback server {base_url} "
            'through the real [cyan]openai[/] SDK (httpx2), record_mode="once"',
        )
        first: list[float] = []
        with _openai_client(base_url) as client:
            t0 = time.perf_counter()
            with use_cassette(path, record_mode="once") as player:
                live = _via_openai(client, first)
            stream_s = time.perf_counter() - t0
    if not player.cassette.interactions:
        raise RuntimeError(f"the demo recorded nothing into {path}")
    return path, base_url, live, player.cassette.interactions[-1], first[0] if first else 0.0, stream_s


def _replay_row(
    cassette: Cassette,
    chunking: _chunking.Chunking,
    sdk_client: openai.OpenAI,
    http: httpx.Client,
    url: str,
    body: bytes,
    live: Outcome,
) -> ChunkingResult:
    with replay(cassette, chunking=chunking, allow_playback_repeats=True) as player:
        sdk = _via_openai(sdk_client)
        sse, events = _via_httpx_sse(http, url, body)
        naive = _via_naive(http, url, body)
    play = player.plays[0]
    if naive.error is not None:
        naive_got = naive.error.split(":", 1)[0]
    else:
        naive_got = f"{naive.chunks}/{live.chunks} chunks"
    return ChunkingResult(
        chunking=chunking.name,
        chunks=len(play.ends),
        bytes=len(play.body),
        events=events,
        openai_text_ok=sdk.error is None and sdk.text == live.text,
        openai_tool_args_ok=sdk.error is None and sdk.tool_calls == live.tool_calls,
        httpx_sse_ok=sse.same_as(live),
        naive_ok=naive.same_as(live),
        naive_got=naive_got,
        openai=sdk,
        httpx_sse=sse,
        naive=naive,
    )


def _mark(ok: bool, detail: str = "") -> str:
    text = f"{'✓' if ok else '✗'}{' ' + escape(detail) if detail else ''}"
    return f"[green]{text}[/]" if ok else f"[bold red]{text}[/]"


def _conclusion(rows: Sequence[ChunkingResult]) -> str:
    n = len(rows)
    real = sum(r.real_clients_ok for r in rows)
    failed = [r for r in rows if not r.naive_ok]
    real_part = (
        f"the openai SDK and httpx-sse matched the live run under all {n} chunkings"
        if real == n
        else f"the openai SDK and httpx-sse matched the live run under only {real} of {n} chunkings"
    )
    if not failed:
        return f"Conclusion: {real_part}, and so did the naive decoder this time."
    silent = sum(r.naive.error is None for r in failed)
    raised = sorted({(r.naive.error or "").split(":", 1)[0] for r in failed if r.naive.error})
    how = [f"{silent} silently lost events"] if silent else []
    if raised:
        how.append(f"{len(failed) - silent} raised {'/'.join(raised)}")
    return (
        f'Conclusion: {real_part}; the naive split("data: ") decoder failed under {len(failed)} '
        f"({', '.join(r.chunking for r in failed)}): {', '.join(how)}."
    )


def run_demo(
    console: Console | None = None, *, directory: str | Path | None = None, explore: int = 0
) -> DemoResult:
    """Record the demo stream, replay it under every chunking through three clients, print the table.

    With ``explore`` (a number of examples), then search the streams a network can deliver for
    the naive decoder's smallest failing one ([`ssemock.explore`][ssemock.explore.explore]) and print it beside the
    table: the boundaries in words, the decoder's error and the marker that reproduces it.

    With ``directory``, the cassette is written to a new ``ssemock-demo-*`` folder under it and
    kept, and the demo ends by printing the ``ssemock show`` command to inspect it. Without, it
    goes to a folder in the system temp dir that is removed before returning (also on error).
    """
    console = console if console is not None else Console()
    keep = directory is not None
    folder = Path(tempfile.mkdtemp(prefix="ssemock-demo-", dir=directory))
    try:
        result = _run(console, folder, explore)
    finally:
        if not keep:
            shutil.rmtree(folder, ignore_errors=True)
    result.cassette_kept = keep
    if keep:
        _say(
            console,
            f"The cassette is kept in {result.cassette_path}. Look inside it (chunks, timing, events):",
            markup=False,
            highlight=False,
        )
        _say(
            console, f"  ssemock show {shlex.quote(str(result.cassette_path))}", markup=False, highlight=False
        )
    else:
        _say(
            console,
            "The cassette was recorded into a temporary folder, removed now. To keep it and look "
            "inside it (chunks, timing, events):",
            markup=False,
            highlight=False,
        )
        _say(
            console,
            f"  ssemock demo --dir .   then   ssemock show ./ssemock-demo-*/{CASSETTE_NAME}",
            markup=False,
            highlight=False,
        )
    return result


def _run(console: Console, folder: Path, explore: int = 0) -> DemoResult:
    path, base_url, live, recorded, first_s, stream_s = _record(folder, console)
    resp = recorded.response
    _say(
        console,
        f"   recorded into [bold]{escape(str(path))}[/]: {len(resp.ends)} chunks, {len(resp.body)} bytes; "
        f"first chunk at {resp.times[0] * 1000:.1f} ms, last at {resp.times[-1] * 1000:.1f} ms "
        f"(the SDK handed its first chunk to the caller after {first_s * 1000:.1f} ms)",
    )
    calls = ", ".join(f"{c.name}({c.arguments})" for c in live.tool_calls)
    _say(
        console,
        f"   live result: {live.chunks} chunks, text {live.text!r}, tool call {calls}",
        markup=False,
        highlight=False,
    )
    _say(
        console,
        "[bold]2. Replaying[/] the cassette with the server stopped and the network blocked, "
        f"under every chunking ({len(_chunking.ALL)}), through three clients",
    )

    cassette = Cassette.load(path)
    body = cassette.interactions[0].request.body or b""
    url = f"{base_url}/v1/chat/completions"
    with _openai_client(base_url) as sdk_client, httpx.Client() as http:
        rows = [_replay_row(cassette, c, sdk_client, http, url, body, live) for c in _chunking.ALL]

    table = Table(
        title="Replayed under every chunking (✓ = same result as the live run)",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        show_edge=False,
        padding=(0, 1, 0, 0),
    )
    columns: list[tuple[str, JustifyMethod]] = [
        ("chunking", "left"),
        ("chunks", "right"),
        ("bytes", "right"),
        ("events", "right"),
        ("openai\ntext", "center"),
        ("tool\nargs", "center"),
        ("httpx-\nsse", "center"),
        ("naive decoder", "left"),
    ]
    for name, justify in columns:
        table.add_column(name, justify=justify, no_wrap=True)
    for r in rows:
        table.add_row(
            r.chunking,
            str(r.chunks),
            str(r.bytes),
            str(r.events),
            _mark(r.openai_text_ok),
            _mark(r.openai_tool_args_ok),
            _mark(r.httpx_sse_ok),
            _mark(r.naive_ok, r.naive_got),
        )
    console.print(table)
    conclusion = _conclusion(rows)
    _say(console, conclusion, markup=False, highlight=False)
    result = DemoResult(
        path, base_url, live, resp.chunks, list(resp.times), first_s, stream_s, rows, conclusion
    )
    if explore:
        result.explored, result.explore_examples = (
            _explore(console, cassette, url, body, live, explore),
            explore,
        )
    return result


def _explore(
    console: Console, cassette: Cassette, url: str, body: bytes, live: Outcome, examples: int
) -> Failure | None:
    """Explore chunk boundaries (drawn where decoders break: inside characters, in the ``data:``
    prefix, around event ends, runs of 1-byte chunks, buffer multiples) for the naive decoder's
    smallest failing stream, and print it."""
    _say(
        console,
        f"[bold]3. Exploring[/] up to {examples} ways a network can cut this stream (boundaries drawn where "
        "decoders break) against the naive decoder, shrinking the first that breaks it",
    )

    with httpx.Client() as http:

        def naive_gets_the_live_result(player: Player) -> None:
            got = _via_naive(http, url, body)
            if not got.same_as(live):
                raise AssertionError(
                    got.error or f"it decoded {got.chunks} of {live.chunks} chunks, text {got.text!r}"
                )

        failure = explore_search(
            cassette,
            naive_gets_the_live_result,
            examples,
            transforms=None,
            database=False,
            seed=0,
            allow_playback_repeats=True,
        )
    if failure is None:
        _say(console, f"   the naive decoder got the live result under all {examples} streams", markup=False)
        return None
    _say(
        console,
        f"   the matrix above tried {len(_chunking.ALL)} fixed chunkings; explore's first failure came after "
        f"{failure.examples} example(s), shrunk to the smallest stream that still breaks it:",
        markup=False,
        highlight=False,
    )
    for line in failure.boundaries:
        _say(console, f"     a chunk boundary at byte {line}", markup=False, highlight=False)
    if failure.variant.transforms:
        _say(
            console, f"     transforms: {'+'.join(t.name for t in failure.variant.transforms)}", markup=False
        )
    _say(console, f"   the naive decoder under it: {failure.error}", markup=False, highlight=False)
    _say(console, f"   pin it as a regression test: {failure.reproducer}", markup=False, highlight=False)
    return failure
