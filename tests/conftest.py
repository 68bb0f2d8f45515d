"""A real loopback SSE server with scripted writes and gaps, started once per test session."""

from __future__ import annotations

import asyncio
import zlib
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field

import httpcore  # noqa: F401  imported here, not lazily inside a pytester test: pytester
import httpcore2  # noqa: F401  drops modules first imported during a test, and httpx2 caches them
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, StreamingResponse
from starlette.routing import Route

from ssemock.server import running
from streams import anthropic_events, openai_chat_events, writes

GAP = 0.03


@dataclass
class Script:
    """What the server sends for one route: these writes, each after ``gap`` seconds."""

    writes: list[bytes]
    gap: float = GAP
    fail_after: int | None = None  # drop the connection after this many writes
    headers: dict[str, str] = field(default_factory=dict)
    gzip: bool = False


SCRIPTS: dict[str, Script] = {
    "/v1/chat/completions": Script(writes(openai_chat_events())),
    "/v1/messages": Script(writes(anthropic_events())),
    "/events": Script([b"data: one\n\n", b"data: t", b"wo\n\nevent: x\ndata: \xe4\xb8", b"\x96\n\n"], 0.02),
    "/gzip": Script([b"data: one\n\n", b"data: two\n\n"], 0.02, gzip=True),
    "/fail": Script([b"data: one\n\n", b"data: tw"], 0.02, fail_after=2),
    "/cookie": Script([b"data: hi\n\n"], 0.0, headers={"set-cookie": "session=s3cr3t"}),
}


async def _stream(request: Request) -> StreamingResponse:
    script = SCRIPTS[request.url.path]
    await request.body()
    compressor = zlib.compressobj(6, zlib.DEFLATED, 16 + zlib.MAX_WBITS)

    async def body() -> AsyncIterator[bytes]:
        for i, data in enumerate(script.writes):
            if script.fail_after is not None and i >= script.fail_after:
                raise ConnectionResetError("scripted failure")
            if i:
                await asyncio.sleep(script.gap)
            yield compressor.compress(data) + compressor.flush(2) if script.gzip else data
        if script.fail_after is not None:
            raise ConnectionResetError("scripted failure")

    headers = {"cache-control": "no-cache", **script.headers}
    if script.gzip:
        headers["content-encoding"] = "gzip"
    return StreamingResponse(body(), media_type="text/event-stream", headers=headers)


async def _echo(request: Request) -> JSONResponse:
    return JSONResponse({"headers": dict(request.headers), "query": str(request.url.query)})


APP = Starlette(routes=[Route(path, _stream, methods=["GET", "POST"]) for path in SCRIPTS]
                + [Route("/echo", _echo, methods=["GET", "POST"])])


@pytest.fixture(scope="session")
def server() -> Iterator[str]:
    """Base URL of the loopback server."""
    with running(APP) as url:
        yield url


@pytest.fixture
def scripts() -> dict[str, Script]:
    return SCRIPTS


pytest_plugins = ["pytester"]
