"""A recording run on a server-push stream, with a chunking vs plain: the planner's cost per event.

    python bench/push_stream.py

A server-push stream (an event stream answering a GET) recorded under a chunking is served to the
client as it arrives, planned as its replay will be (`ssemock.plan.push_recording`). The loopback server
sends N one-event writes then ends; the client (httpx) reads them all. The same run is timed
plain (no chunking: the recording is teed, nothing planned) and under ``mid_line`` and
``bytewise``, at 500 and 4,000 events, side by side in one process (interleaved rounds, medians).
Printed: each case's time, its ratio to the plain recording at the same size, and the time it
adds per event over plain, at both sizes: a planner whose work is proportional to what arrived
adds about the same per event at 4,000 events as at 500 (before: each event re-planned the whole
recording so far, and the cost per event grew with the stream: 31 s for 4,000 events under
``mid_line``, 86x plain).
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

SIZES = (500, 4_000)
CHUNKINGS = (None, "mid_line", "bytewise")
ROUNDS = 3


async def push(request: Request) -> StreamingResponse:
    count = int(request.query_params["n"])

    async def body() -> AsyncIterator[bytes]:
        for n in range(count):
            yield b'data: {"n": %d, "text": "hello there"}\n\n' % n
            await asyncio.sleep(0)  # one write per event

    return StreamingResponse(body(), media_type="text/event-stream")


APP = Starlette(routes=[Route("/push", push)])


def record(base: str, folder: Path, count: int, chunking: str | None) -> float:
    """Seconds to record the stream while reading it whole (the client's view)."""
    cassette = folder / f"{chunking}-{count}-{time.perf_counter_ns()}.json"
    options = {} if chunking is None else {"chunking": chunking}
    start = time.perf_counter()
    with ssemock.use_cassette(cassette, record_mode="once", **options):
        with httpx.stream("GET", f"{base}/push?n={count}", timeout=60) as response:
            got = sum(len(chunk) for chunk in response.iter_raw())
    took = time.perf_counter() - start
    assert got == sum(len(b'data: {"n": %d, "text": "hello there"}\n\n' % n) for n in range(count))
    return took


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp, running(APP) as base:
        folder = Path(tmp)
        times: dict[tuple[int, str | None], list[float]] = {}
        for _ in range(ROUNDS):
            for count in SIZES:
                for chunking in CHUNKINGS:
                    times.setdefault((count, chunking), []).append(record(base, folder, count, chunking))
        median = {key: statistics.median(values) for key, values in times.items()}
        print(f"{'case':26} {'events':>7} {'time':>9} {'x plain':>8}")
        for count in SIZES:
            for chunking in CHUNKINGS:
                took = median[(count, chunking)]
                ratio = took / median[(count, None)]
                print(
                    f"{'plain' if chunking is None else chunking:26} {count:>7} {took:>8.3f}s {ratio:>8.2f}"
                )
        small, big = SIZES
        for chunking in CHUNKINGS[1:]:
            per = [(median[(n, chunking)] - median[(n, None)]) / n * 1e6 for n in SIZES]
            print(
                f"{chunking}: {per[0]:.0f} us more per event than plain at {small} events, {per[1]:.0f} us at "
                f"{big} ({per[1] / per[0]:.2f}x; proportional work: ~1x, re-planning all: ~{big // small}x)"
            )


if __name__ == "__main__":
    main()
