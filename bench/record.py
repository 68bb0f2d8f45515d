"""Recording overhead: time to first chunk and throughput, recorded vs not, on a loopback server.

    python bench/record.py

The server sends a first event at once, then the rest after a pause; the client measures when
the first chunk reaches it, with and without ssemock recording (target: within 2 ms of live),
and the throughput of a large stream (target: >= 0.95x of unrecorded).
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import StreamingResponse
from starlette.routing import Route

import ssemock
from ssemock.commands.loopback import running

BIG_CHUNK = b"data: " + b"x" * 16_000 + b"\n\n"
BIG_COUNT = 2_000  # ~32 MB


async def first(request: Request) -> StreamingResponse:
    async def body() -> AsyncIterator[bytes]:
        yield b"data: first\n\n"
        await asyncio.sleep(0.05)
        yield b"data: last\n\n"

    return StreamingResponse(body(), media_type="text/event-stream")


async def big(request: Request) -> StreamingResponse:
    async def body() -> AsyncIterator[bytes]:
        for _ in range(BIG_COUNT):
            yield BIG_CHUNK

    return StreamingResponse(body(), media_type="text/event-stream")


APP = Starlette(routes=[Route("/first", first), Route("/big", big)])


def ttfc(client: httpx.Client, url: str) -> float:
    start = time.perf_counter()
    with client.stream("GET", url) as r:
        it = r.iter_raw()
        next(it)
        t = time.perf_counter() - start
        for _ in it:
            pass
    return t


def throughput(client: httpx.Client, url: str) -> float:
    start = time.perf_counter()
    n = 0
    with client.stream("GET", url) as r:
        for chunk in r.iter_raw():
            n += len(chunk)
    return n / (time.perf_counter() - start) / 1e6


def main() -> None:
    rounds = 20
    with running(APP) as url, tempfile.TemporaryDirectory() as tmp, httpx.Client() as client:
        live = [ttfc(client, f"{url}/first") for _ in range(rounds)]
        rec = []
        for i in range(rounds):
            with ssemock.use_cassette(Path(tmp) / f"t{i}.json", record_mode="all"):
                rec.append(ttfc(client, f"{url}/first"))
        live_mb = max(throughput(client, f"{url}/big") for _ in range(3))
        rec_mb = []
        for i in range(3):
            with ssemock.use_cassette(Path(tmp) / f"big{i}.json", record_mode="all"):
                rec_mb.append(throughput(client, f"{url}/big"))
    lm, rm = statistics.median(live) * 1e3, statistics.median(rec) * 1e3
    print(
        f"time to first chunk: live {lm:.2f} ms, recording {rm:.2f} ms, "
        f"difference {rm - lm:+.2f} ms (target within 2 ms)"
    )
    print(
        f"throughput on {len(BIG_CHUNK) * BIG_COUNT / 1e6:.0f} MB: live {live_mb:.0f} MB/s, "
        f"recording {max(rec_mb):.0f} MB/s, ratio {max(rec_mb) / live_mb:.2f} (target >= 0.95; "
        "the cassette save at exit is not timed)"
    )


if __name__ == "__main__":
    main()
