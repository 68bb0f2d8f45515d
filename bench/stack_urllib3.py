"""The urllib3 stack through requests: replay cost per chunk, and time to first chunk recording.

    python bench/stack_urllib3.py [CHUNKS]

1. Replay per chunk: ssemock serving a cassette vs a hand-written ``responses`` mock whose body
   is a generator of the same chunks, both read with requests' ``iter_content(SIZE)`` (one piece
   per chunk in both: a non-chunked mock body gives ``iter_content(None)`` everything at once).
   Best of 5 after a warm-up; target: ssemock <= 1.10x the hand-written mock.
2. Time to first chunk from a loopback server, live vs recorded, 100 runs each, alternating, on a
   new connection each; the median of the paired differences (steadier than a difference of
   medians on a busy machine) and the difference of the fastest runs; target: within 2 ms of live.
"""

from __future__ import annotations

import asyncio
import io
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import requests
import responses
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import StreamingResponse
from starlette.routing import Route
from timer import best

import ssemock
from ssemock.commands.loopback import running

URL = "https://api.example.test/v1/chat/completions"
SIZE = 64


def chunks_of(count: int) -> list[bytes]:
    """``count`` chunks of SIZE bytes cut from a chat-like SSE stream (as many events as it takes)."""
    body = b"".join(
        f'data: {{"i":{i},"choices":[{{"delta":{{"content":"世界{i}"}}}}]}}\n\n'.encode()
        for i in range(count * 2)
    )
    return [body[i : i + SIZE] for i in range(0, SIZE * count, SIZE)]


class GeneratorBody(io.RawIOBase):
    """A mock socket body that hands out one chunk per read, from a generator."""

    def __init__(self, chunks: list[bytes]) -> None:
        self._chunks: Iterator[bytes] = iter(chunks)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        chunk = next(self._chunks, b"")
        buffer[: len(chunk)] = chunk
        return len(chunk)


def consume() -> int:
    n = 0
    with requests.Session() as session, session.post(URL, json={"stream": True}, stream=True) as r:
        for _ in r.iter_content(SIZE):
            n += 1
    return n


def run_responses(chunks: list[bytes]) -> Callable[[], int]:
    def go() -> int:
        with responses.RequestsMock() as mock:
            mock.add(
                responses.POST,
                URL,
                body=io.BufferedReader(GeneratorBody(chunks)),  # type: ignore[arg-type]
                content_type="text/event-stream",
            )
            return consume()

    return go


def run_ssemock(chunks: list[bytes]) -> Callable[[], int]:
    cassette = ssemock.Cassette()
    cassette.add("POST", URL, chunks, request_json={"stream": True})

    def go() -> int:
        with ssemock.replay(cassette):
            return consume()

    return go


async def first(request: Request) -> StreamingResponse:
    async def body() -> AsyncIterator[bytes]:
        yield b"data: first\n\n"
        await asyncio.sleep(0.02)
        yield b"data: last\n\n"

    return StreamingResponse(body(), media_type="text/event-stream")


def ttfc(url: str) -> float:
    """On a new connection each time (a reused one adds TCP's delayed-ACK wait to the first chunk)."""
    start = time.perf_counter()
    with requests.get(url, stream=True, timeout=5) as r:
        pieces = r.iter_content(None)
        next(pieces)
        t = time.perf_counter() - start
        for _ in pieces:
            pass
    return t


def measure_per_chunk(count: int, repeat: int = 5) -> dict[str, float]:
    """Microseconds per chunk of both contestants (best of ``repeat`` after a warm-up)."""
    chunks = chunks_of(count)
    results = {}
    for name, make in (("hand-written responses", run_responses), ("ssemock", run_ssemock)):
        fn = make(chunks)
        assert fn() == len(chunks), name
        results[name] = best(fn, repeat) / len(chunks) * 1e6
    return results


def measure_first_chunk(runs: int = 100) -> tuple[list[float], list[float]]:
    """Seconds to the first chunk, live and recording, ``runs`` each, alternating."""
    live, recorded = [], []
    with running(Starlette(routes=[Route("/first", first)])) as url, tempfile.TemporaryDirectory() as tmp:
        ttfc(f"{url}/first")
        for i in range(runs):
            live.append(ttfc(f"{url}/first"))
            with ssemock.use_cassette(Path(tmp) / f"{i}.json", record_mode="all"):
                recorded.append(ttfc(f"{url}/first"))
    return live, recorded


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 20_000
    results = measure_per_chunk(count)
    base = results["hand-written responses"]
    for name, us in results.items():
        print(f"{name:24s} {us:7.3f} us/chunk  ({us / base:.2f}x)")
    print(
        f"replay per chunk, ssemock / hand-written responses: {results['ssemock'] / base:.3f} (target <= 1.10)"
    )

    live, recorded = measure_first_chunk()
    a, b = statistics.median(live) * 1e3, statistics.median(recorded) * 1e3
    paired = statistics.median(r - x for r, x in zip(recorded, live)) * 1e3
    print(
        f"time to first chunk: live {a:.3f} ms, recording {b:.3f} ms (medians); recording - live: "
        f"{paired:+.3f} ms (median of pairs), {(min(recorded) - min(live)) * 1e3:+.3f} ms (fastest runs) "
        f"(target within 2 ms)"
    )


if __name__ == "__main__":
    main()
