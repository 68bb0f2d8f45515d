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

from ...core.packages import fresh
from .clients import Outcome, ToolCall
from .results import ChunkingResult, DemoResult
from .run import run_demo
from .stream import API_KEY, APP, EVENTS, GAPS, MODEL, TEXT, TOOL_ARGS, TOOL_ID, TOOL_NAME, WRITES
from .stream import CASSETTE_NAME as CASSETTE_NAME
from .stream import MESSAGES as MESSAGES
from .stream import TOOLS as TOOLS

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

fresh(__name__)  # submodules read from sys.modules (pytester's in-process reruns drop them)
