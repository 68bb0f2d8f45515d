"""Cassettes shipped with ssemock, loadable by name: ``ssemock.cassettes.load("openai/chat_tool_calls")``.

Each one is a single streamed response in a provider's documented wire format, covering a case
that breaks hand-written stream handling: multi-byte text, parallel tool calls interleaved by
index, ``n=2`` choices out of order, a usage-only final chunk, refusals, Azure's content filter
chunk, Responses API events, Anthropic thinking + signature, pings and a mid-stream overloaded
error, Ollama JSON lines, OpenRouter keep-alive comments, and an OpenAI-compatible server that
repeats tool call ids and names in every delta.

They are **synthesized** by [`ssemock.synth`][ssemock.synth] and recorded through a real loopback server
(``python -m ssemock.synth --write-library``), not captured from the real services; every
response says so in its ``x-ssemock-source`` header. The request of each is what the provider's
SDK sends for the same parameters (``load(name).interactions[0].request.json()``).
"""

from __future__ import annotations

from pathlib import Path

from ..core.packages import fresh
from ..store.cassette import Cassette, CassetteError

__all__ = ["DIRECTORY", "load", "names", "path"]

DIRECTORY = Path(__file__).resolve().parent
"""The folder the shipped cassettes live in (``<provider>/<case>.json``)."""


def names() -> list[str]:
    """The names of the shipped cassettes, sorted: ``["anthropic/messages_overloaded", ...]``."""
    return sorted(p.relative_to(DIRECTORY).with_suffix("").as_posix() for p in DIRECTORY.rglob("*.json"))


def path(name: str) -> Path:
    """The file of the shipped cassette ``name`` (``"openai/chat_text"``; ``.json`` optional).

    Replay it in place (``ssemock.use_cassette(path(name))``), or copy it first if a test may
    record: ``load(name).save(my_path)``. Raises [`ssemock.CassetteError`][ssemock.CassetteError] for an unknown name.
    """
    clean = name.strip().removesuffix(".json")
    file = (DIRECTORY / f"{clean}.json").resolve()
    if not clean or DIRECTORY not in file.parents or not file.is_file():
        raise CassetteError(f"no shipped cassette named {name!r}; known: {', '.join(names())}")
    return file


def load(name: str) -> Cassette:
    """The shipped cassette ``name`` as a [`ssemock.Cassette`][ssemock.Cassette], e.g. ``load("ollama/chat")``."""
    return Cassette.load(path(name))


fresh(__name__)  # submodules read from sys.modules (pytester's in-process reruns drop them)
