"""Synthesize realistic provider streams in code, from the result they should spell.

The implementation of [`ssemock.synth`][ssemock.synth], where its public names are documented."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ..protocols import anthropic_messages as _anthropic
from ..protocols import ollama_chat as _ollama
from ..protocols import openai_chat as _openai_chat
from ..protocols import openai_responses as _openai_responses

# The synthesizers by provider name; each lives in its protocol module (ssemock.protocols.*).
from ..protocols.anthropic_messages import synthesize as anthropic_messages
from ..protocols.gemini_live import synthesize as gemini_live
from ..protocols.ollama_chat import synthesize as ollama_chat
from ..protocols.openai_chat import synthesize as openai_chat
from ..protocols.openai_chat import synthesize_openrouter as openrouter_chat
from ..protocols.openai_live import synthesize as openai_live
from ..protocols.openai_realtime import synthesize as openai_realtime
from ..protocols.openai_responses import synthesize as openai_responses
from ..protocols.openai_responses import synthesize_websocket as openai_responses_websocket
from ..protocols.synthesis import DEFAULT_PROMPT, SOURCE_HEADER, SYNTH_SOURCE
from ..store.cassette import Cassette, Interaction, Request, Response

__all__ = [
    "ANTHROPIC_URL",
    "AZURE_URL",
    "DEFAULT_PROMPT",
    "HAZARDS",
    "LIBRARY",
    "LIBRARY_SOURCE",
    "OLLAMA_URL",
    "OPENAI_CHAT_URL",
    "OPENAI_RESPONSES_URL",
    "OPENAI_RESPONSES_WEBSOCKET_URL",
    "OPENROUTER_KEEPALIVE",
    "OPENROUTER_URL",
    "REALTIME_LIBRARY",
    "SOURCE_HEADER",
    "SYNTH_SOURCE",
    "anthropic_messages",
    "check_library",
    "gemini_live",
    "library_cassette",
    "main",
    "ollama_chat",
    "openai_chat",
    "openai_live",
    "openai_realtime",
    "openai_responses",
    "openai_responses_websocket",
    "openrouter_chat",
    "write_library",
    "write_realtime_library",
]


OPENAI_CHAT_URL = _openai_chat.URL
"""The OpenAI chat completions URL synthesized cassettes record."""
AZURE_URL = _openai_chat.AZURE_URL
"""An Azure OpenAI chat completions URL."""
OPENROUTER_URL = _openai_chat.OPENROUTER_URL
"""The OpenRouter chat completions URL."""
OPENROUTER_KEEPALIVE = _openai_chat.OPENROUTER_KEEPALIVE
"""The comment OpenRouter sends while a model is queued."""
OPENAI_RESPONSES_URL = _openai_responses.URL
"""The OpenAI Responses API URL synthesized cassettes record."""
OPENAI_RESPONSES_WEBSOCKET_URL = _openai_responses.WEBSOCKET_URL
"""The OpenAI Responses API WebSocket mode URL (``wss://.../v1/responses``)."""
ANTHROPIC_URL = _anthropic.URL
"""The Anthropic Messages API URL synthesized cassettes record."""
OLLAMA_URL = _ollama.URL
"""The Ollama chat URL synthesized cassettes record."""
LIBRARY_SOURCE = (
    "synthesized by ssemock.synth from the provider's documented event format; "
    "recorded through a loopback server; not captured from the real service"
)
"""The `_source` note of the shipped library's cassettes."""

# -- the shipped library -----------------------------------------------------------------------

WEATHER_TOKYO = {"name": "get_weather", "arguments": {"city": "東京", "unit": "celsius"}}
"""An example tool call (`get_weather` for Tokyo) with non-ASCII arguments."""
HAZARDS = "line\u2028separator, paragraph\u2029separator, next\u0085line"
"""Characters ``str.splitlines`` (and so httpx's ``iter_lines``) takes for line breaks but SSE and JSON lines do not: a client that splits on them cuts an event's JSON in two."""
_JA = (
    "こんにちは！ストリーミングは日本語でも動きます。🎌 Emoji too: 🌏🚀👩\u200d💻 — and ümlauts, ½, 𝄞. "
    + HAZARDS
)


WEATHER_PARIS = {"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}
REALTIME_LIBRARY: dict[str, Callable[[], Cassette]] = {
    "realtime/openai_realtime_audio": lambda: openai_realtime(
        "Grüße aus Paris — 22 °C, sonnig ☀.", prompt="Weather in Paris, in German?", seed=31
    ),
    "realtime/openai_realtime_text_tool_call": lambda: openai_realtime(
        "Let me check.", tool_calls=[WEATHER_PARIS], audio=False, prompt="Weather in Paris?", seed=32
    ),
    "realtime/gemini_live_text": lambda: gemini_live(
        "東京は晴れ — sunny in Tokyo 🌏.", prompt="Weather in Tokyo?", seed=33
    ),
    "realtime/gemini_live_audio_tool_call": lambda: gemini_live(
        "Checking.", tool_calls=[WEATHER_PARIS], audio=True, prompt="Weather in Paris?", seed=34
    ),
    "realtime/openai_live_audio_delegation": lambda: openai_live(
        "Sunny, 22 °C in Paris ☀ — Grüße!", tool_calls=[WEATHER_PARIS], prompt="Weather in Paris?", seed=36
    ),
    "realtime/openai_responses_websocket": lambda: openai_responses_websocket(
        [
            {"text": "Let me check.", "tool_calls": [WEATHER_PARIS], "input": "Weather in Paris?"},
            {"text": "Sunny, 22 °C in Paris ☀.", "outputs": ['{"temperature": 22, "sky": "sunny"}']},
        ],
        seed=35,
    ),
}
"""The shipped WebSocket sessions (``realtime/``), synthesized in each protocol's documented
shape and written as they are (no loopback recording: ``write_realtime_library``)."""


def write_realtime_library(directory: Path | None = None) -> list[Path]:
    """Write the shipped WebSocket sessions (``REALTIME_LIBRARY``) under ``directory`` (default:
    the package's cassettes folder); the paths written."""
    root = directory or Path(__file__).resolve().parent
    written = []
    for name, make in sorted(REALTIME_LIBRARY.items()):
        path = root / f"{name}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        make().save(path)
        written.append(path)
    return written


def _more_library() -> dict[str, Callable[[], Cassette]]:
    """The shipped cassettes of protocols whose synthesizer lives in their protocol module."""
    from ..protocols import cohere, gemini

    return {
        "gemini/stream_text": lambda: gemini.synthesize(
            _JA,
            thinking="The user wants a greeting in Japanese; add emoji.",
            prompt="Greet me in Japanese, with emoji.",
            seed=17,
        ),
        "gemini/stream_function_call": lambda: gemini.synthesize(
            "Let me check.",
            tool_calls=[WEATHER_TOKYO, {"name": "get_time", "arguments": {"timezone": "Asia/Tokyo"}}],
            prompt="Weather and time in Tokyo?",
            seed=18,
        ),
        "gemini/stream_safety": lambda: gemini.synthesize(
            "Here is how the knight", finish_reason="SAFETY", prompt="Tell me a violent story.", seed=19
        ),
        "gemini/array_text": lambda: gemini.synthesize(
            "Without alt=sse, Gemini streams one JSON array — élément par élément. 🧩",
            alt_sse=False,
            prompt="How does Gemini stream without SSE?",
            seed=20,
        ),
        "cohere/chat_text": lambda: cohere.synthesize(
            "Cohere v2 streams content-delta events — 日本語も 🌊.", prompt="Say hello.", seed=21
        ),
        "cohere/chat_tool_calls": lambda: cohere.synthesize(
            tool_calls=[WEATHER_TOKYO, {"name": "get_time", "arguments": {"timezone": "Asia/Tokyo"}}],
            tool_plan="I will look up the weather and the time in Tokyo.",
            prompt="Weather and time in Tokyo?",
            seed=22,
        ),
    }


LIBRARY: dict[str, Callable[[], Cassette]] = {
    "openai/chat_text": lambda: openai_chat(
        _JA, chunk_size=3, prompt="Greet me in Japanese, with emoji.", seed=1
    ),
    "openai/chat_tool_calls": lambda: openai_chat(
        tool_calls=[
            {**WEATHER_TOKYO, "id": "call_weather_tokyo"},
            {
                "name": "get_weather",
                "arguments": {"city": "Paris", "unit": "celsius"},
                "id": "call_weather_paris",
            },
            {"name": "get_time", "arguments": {"timezone": "Asia/Tokyo"}, "id": "call_time_tokyo"},
        ],
        interleave_tool_calls=True,
        prompt="Weather in Tokyo and Paris, and the time in Tokyo?",
        seed=2,
    ),
    "openai/chat_n2": lambda: openai_chat(
        ["Roses are red, the sky is blue.", "Violets are blue; streams arrive in pieces, too."],
        n=2,
        choices_out_of_order=True,
        prompt="Write a one-line poem.",
        seed=3,
    ),
    "openai/chat_usage": lambda: openai_chat(
        "Usage arrives last, in a chunk with no choices.",
        include_usage=True,
        usage={
            "prompt_tokens": 14,
            "completion_tokens": 12,
            "total_tokens": 26,
            "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
            "completion_tokens_details": {
                "reasoning_tokens": 0,
                "audio_tokens": 0,
                "accepted_prediction_tokens": 0,
                "rejected_prediction_tokens": 0,
            },
        },
        prompt="Say something short.",
        seed=4,
    ),
    "openai/chat_refusal": lambda: openai_chat(
        refusal="I'm sorry, but I can't help with that request.", prompt="Help me pick a lock.", seed=5
    ),
    "openai/chat_content_filter": lambda: openai_chat(
        "Here is the story you asked for. The knight drew his sword and",
        content_filter=True,
        finish_reason="content_filter",
        model="gpt-4o-mini",
        prompt="Tell me a violent story.",
        seed=6,
    ),
    "openai/responses_text": lambda: openai_responses(
        "The Responses API streams typed events: output_text deltas — ünïcödé and 絵文字 🎉 included.",
        prompt="Describe the Responses API stream in one sentence.",
        seed=7,
    ),
    "openai/responses_function_call": lambda: openai_responses(
        tool_calls=[{**WEATHER_TOKYO, "id": "call_resp_weather"}],
        prompt="What's the weather in Tokyo?",
        seed=8,
    ),
    "anthropic/messages_text": lambda: anthropic_messages(
        "Hello! Claude streams text_delta events — 日本語も大丈夫です 🌸. " + HAZARDS,
        prompt="Say hello.",
        seed=9,
    ),
    "anthropic/messages_tool_use": lambda: anthropic_messages(
        "I'll look up the weather in Tokyo for you.",
        tool_calls=[{**WEATHER_TOKYO, "id": "toolu_01WeatherTokyo"}],
        prompt="What's the weather in Tokyo?",
        seed=10,
    ),
    "anthropic/messages_thinking": lambda: anthropic_messages(
        "27 × 453 = 12,231.",
        thinking="Let me compute 27 × 453. 27 × 400 = 10,800; 27 × 53 = 1,431; 10,800 + 1,431 = 12,231.",
        prompt="What is 27 * 453?",
        seed=11,
    ),
    "anthropic/messages_ping": lambda: anthropic_messages(
        "Pings may arrive between any two events; a client must skip them.",
        ping=4,
        prompt="Tell me about pings.",
        seed=12,
    ),
    "anthropic/messages_overloaded": lambda: anthropic_messages(
        "This answer starts streaming, and then the API is",
        error="overloaded_error",
        prompt="Write a long essay.",
        seed=13,
    ),
    "ollama/chat": lambda: ollama_chat(
        "Ollama streams JSON lines — one object per line, ending with done: true. 🦙 " + HAZARDS,
        model="llama3.2",
        prompt="How does Ollama stream?",
        seed=14,
    ),
    "openrouter/chat_keepalive": lambda: openrouter_chat(
        "OpenRouter sends comment lines while the model warms up. " + HAZARDS,
        keepalives=3,
        prompt="What are SSE comments for?",
        seed=15,
    ),
    "compat/event_ids": lambda: openai_chat(
        "A gateway numbers its events and sends no charset. " + HAZARDS,
        event_ids=True,
        charset=False,
        prompt="Say something with line separators.",
        seed=17,
    ),
    "compat/repeated_tool_ids": lambda: openai_chat(
        tool_calls=[
            {**WEATHER_TOKYO, "id": "call_repeat_0"},
            {"name": "get_time", "arguments": {"timezone": "Asia/Tokyo"}, "id": "call_repeat_1"},
        ],
        repeat_tool_ids=True,
        model="compat-model",
        url="https://llm.example.com/v1/chat/completions",
        prompt="Weather and time in Tokyo?",
        seed=16,
    ),
    **_more_library(),
}
"""Name -> how that shipped cassette is synthesized (see ``docs/cassettes.md``)."""


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
    from .. import protocols

    found = protocols.detect(url=synth.request.url)
    return bool(found is not None and found.sdk_request is not None and found.sdk_request(base, synth))


def _record_one(base: str, name: str, holder: dict[str, Interaction], target: Path, attempts: int) -> None:
    import httpx

    from ..player.replay import use_cassette

    synth = library_cassette(name).interactions[0]
    holder["interaction"] = synth
    parts = urlsplit(synth.request.url)
    local = base + parts.path + (f"?{parts.query}" if parts.query else "")

    def as_provider(request: Request) -> Request:
        return Request(request.method, synth.request.url, list(synth.request.headers), request.body)

    def without_date(response: Response) -> Response:
        response.headers = [(k, v) for k, v in response.headers if k != "date"]
        return response

    problem, closest = "", None
    for _ in range(attempts):
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "recorded.json"
            with use_cassette(
                path,
                record_mode="all",
                before_record_request=as_provider,
                before_record_response=without_date,
            ):
                if not _through_sdk(base, synth):
                    with httpx.Client(timeout=30.0) as client:
                        with client.stream(
                            "POST",
                            local,
                            content=synth.request.body,
                            headers={"content-type": "application/json"},
                        ) as r:
                            for _chunk in r.iter_raw():
                                pass
            recorded = Cassette.load(path)
        (got,) = recorded.interactions
        if got.response.chunks != synth.response.chunks:
            problem = (
                f"the loopback recording of {name} has {len(got.response.chunks)} chunks, "
                f"{len(synth.response.chunks)} were written (the machine is too busy?)"
            )
            continue
        early = _early(got.response.times, synth.response.times)
        if early is not None:
            raise RuntimeError(
                f"chunk {early} of {name} was recorded before the server wrote it: the recorder's clock is wrong"
            )
        late = max((a - b for a, b in zip(got.response.times, synth.response.times)), default=0.0)
        if closest is None or late < closest[0]:
            closest = (late, recorded)
        if late <= PUNCTUAL:
            break
    if closest is None:
        raise RuntimeError(problem)
    target.parent.mkdir(parents=True, exist_ok=True)
    closest[1].save(target)


PUNCTUAL = 0.1
"""Seconds a recorded chunk may arrive after its schedule before `write_library` records it again
(a busy machine reads late; it keeps the most punctual of its attempts, never fails on it)."""


def _early(times: Sequence[float], schedule: Sequence[float]) -> int | None:
    """The first chunk recorded out of order or before its scheduled time (the server sleeps
    before each write, so a chunk can only be late), or None."""
    for k, (at, due) in enumerate(zip(times, schedule)):
        if at < due - 0.001 or (k and at < times[k - 1]):
            return k
    return None


def write_library(
    directory: str | Path | None = None, *, names: Sequence[str] | None = None, attempts: int = 3
) -> list[Path]:
    """Record every library cassette (or ``names``) through a real loopback server into
    ``directory`` (default: the installed ``ssemock/cassettes``); returns the files written.

    Each synthesized stream is served by a Starlette app on 127.0.0.1 that writes its chunks at
    their times, and recorded by [`ssemock.use_cassette`][ssemock.use_cassette] (``record_mode="all"``) from a
    plain httpx client: boundaries and times are real recordings of loopback writes. The
    recorded request is given the provider's URL and headers of the synthesized one; the
    response keeps the server's headers (``date`` dropped, for a stable file) and says how it
    was made in ``x-ssemock-source``.

    A recording is checked for what a loaded machine cannot change: the chunks as written, in
    order, none before its time. One whose chunks came more than `PUNCTUAL` seconds late is
    recorded again, up to ``attempts`` times, and the most punctual kept: lateness is the
    machine's, never a failure.
    """
    from ..commands.loopback import running

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
    parser = argparse.ArgumentParser(
        prog="python -m ssemock.synth",
        description=(
            "Regenerate the cassettes shipped in ssemock.cassettes: synthesize each stream and record it "
            "through a real loopback server."
        ),
    )
    parser.add_argument("--write-library", action="store_true", help="record every library cassette")
    parser.add_argument(
        "--check",
        action="store_true",
        help="re-record into a temporary folder and compare with the files (times aside)",
    )
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
