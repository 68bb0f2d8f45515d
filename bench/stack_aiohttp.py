"""The aiohttp stack: replay cost per chunk, and time to first chunk while recording, same run.

    python bench/stack_aiohttp.py [EVENTS]

1. Replay per chunk: ssemock serving a cassette through aiohttp vs a hand-written aioresponses
   mock serving the same chunks (a StreamReader that feeds the next chunk each time a read waits,
   the least any mock needs to keep the chunks apart). Best of 5 of ``iter_any()`` over EVENTS
   chunks; target ssemock <= 1.10x.
2. Time to first chunk from a loopback server, live vs recording (median of 40 requests each,
   interleaved); target: recording within 2 ms of live.
"""

from __future__ import annotations

import asyncio
import gc
import inspect
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import aiohttp
from aiohttp import web
from aiohttp.base_protocol import BaseProtocol
from aiohttp.streams import StreamReader
from aioresponses import aioresponses

import ssemock

URL = "https://api.example.test/v1/chat/completions"
TAKES_STREAM_WRITER = "stream_writer" in inspect.signature(aiohttp.ClientResponse.__init__).parameters


def body(events: int) -> list[bytes]:
    return [
        f'data: {{"i":{i},"choices":[{{"delta":{{"content":"世界{i}"}}}}]}}\n\n'.encode()
        for i in range(events)
    ]


class ChunkReader(StreamReader):
    """The hand-written mock's body: one chunk per wait for data, then EOF."""

    def __init__(self, chunks: list[bytes], loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(BaseProtocol(loop), 2**16, loop=loop)
        self._chunks = iter(chunks)

    async def _wait(self, func_name: str) -> None:
        chunk = next(self._chunks, None)
        if chunk is None:
            StreamReader.feed_eof(self)
        else:
            self.feed_data(chunk)

    def feed_eof(self) -> None:  # aioresponses ends its own (empty) body at once; ours ends itself
        pass


def chunked_response(chunks: list[bytes]) -> type[aiohttp.ClientResponse]:
    class Chunked(aiohttp.ClientResponse):
        def __init__(self, method: str, url: Any, **kwargs: Any) -> None:
            if TAKES_STREAM_WRITER:  # aioresponses 0.7.9 predates aiohttp 3.14's required argument
                kwargs.setdefault("stream_writer", SimpleNamespace(output_size=0))
            super().__init__(method, url, **kwargs)

        @property  # type: ignore[override]
        def content(self) -> StreamReader:
            return self._reader  # type: ignore[no-any-return]

        @content.setter
        def content(self, value: StreamReader) -> None:
            self._reader = ChunkReader(chunks, asyncio.get_running_loop())

    return Chunked


async def consume(session: aiohttp.ClientSession) -> int:
    n = 0
    async with session.post(URL) as resp:
        async for _ in resp.content.iter_any():
            n += 1
    return n


def run_aioresponses(chunks: list[bytes]) -> Callable[[], int]:
    async def go() -> int:
        with aioresponses() as mock:
            mock.post(URL, response_class=chunked_response(chunks), content_type="text/event-stream")
            async with aiohttp.ClientSession() as session:
                return await consume(session)

    return lambda: asyncio.run(go())


def run_ssemock(chunks: list[bytes]) -> Callable[[], int]:
    cassette = ssemock.Cassette()
    cassette.add("POST", URL, chunks)

    async def go() -> int:
        with ssemock.replay(cassette):
            async with aiohttp.ClientSession() as session:
                return await consume(session)

    return lambda: asyncio.run(go())


def measure_per_chunk(events: int, rounds: int = 9) -> dict[str, float]:
    """CPU microseconds per chunk of both contestants (best of ``rounds`` alternated runs)."""
    chunks = body(events)
    runs = {"hand-written aioresponses": run_aioresponses(chunks), "ssemock aiohttp": run_ssemock(chunks)}
    for name, fn in runs.items():
        assert fn() == events, name
    results = dict.fromkeys(runs, float("inf"))
    for _ in range(rounds):  # alternated, best of each, in CPU time: other processes' load is not ours
        for name, fn in runs.items():
            gc.collect()
            gc.disable()
            try:
                start = time.process_time()
                fn()
                results[name] = min(results[name], time.process_time() - start)
            finally:
                gc.enable()
    return {name: seconds / events * 1e6 for name, seconds in results.items()}


def per_chunk(events: int) -> None:
    us = measure_per_chunk(events)
    for name, value in us.items():
        print(f"{name:26s} {value:7.3f} us/chunk")
    ratio = us["ssemock aiohttp"] / us["hand-written aioresponses"]
    print(f"replay per chunk: ssemock / aioresponses = {ratio:.3f}x (target <= 1.10x)")


async def _stream(request: web.Request) -> web.StreamResponse:
    resp = web.StreamResponse(headers={"content-type": "text/event-stream"})
    await resp.prepare(request)
    await resp.write(b"data: first\n\n")
    await asyncio.sleep(0.005)
    await resp.write(b"data: second\n\n")
    await resp.write_eof()
    return resp


@contextmanager
def server() -> Iterator[str]:
    """An aiohttp.web server on loopback in a thread of its own (it sets TCP_NODELAY, so the
    first chunk is not held back by Nagle and delayed ACKs)."""
    loop = asyncio.new_event_loop()
    app = web.Application()
    app.router.add_get("/stream", _stream)
    runner = web.AppRunner(app)
    loop.run_until_complete(runner.setup())
    site = web.TCPSite(runner, "127.0.0.1", 0)
    loop.run_until_complete(site.start())
    port = runner.addresses[0][1]
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}/stream"
    finally:
        asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(5)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)


async def first_chunk(session: aiohttp.ClientSession, url: str) -> float:
    start = time.perf_counter()
    async with session.get(url) as resp:
        await resp.content.readany()
        took = time.perf_counter() - start
        await resp.read()
    return took


def measure_first_chunk(requests: int = 40) -> tuple[float, float]:
    """Median seconds to the first chunk: live, and recording (``requests`` each, interleaved)."""
    live: list[float] = []
    recording: list[float] = []
    with server() as url, tempfile.TemporaryDirectory() as tmp:

        async def go() -> None:
            async with aiohttp.ClientSession() as session:
                await first_chunk(session, url)  # warm-up: connection pool, imports
                for i in range(requests):
                    live.append(await first_chunk(session, url))
                    with ssemock.use_cassette(Path(tmp) / f"{i}.json", record_mode="all"):
                        recording.append(await first_chunk(session, url))

        asyncio.run(go())
    return statistics.median(live), statistics.median(recording)


def time_to_first_chunk(requests: int = 40) -> None:
    a, b = measure_first_chunk(requests)
    print(
        f"time to first chunk: live {a * 1e3:.3f} ms, recording {b * 1e3:.3f} ms, "
        f"difference {(b - a) * 1e3:+.3f} ms (target within 2 ms)"
    )


def main(argv: list[str] | Any = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    events = int(argv[0]) if argv else 50_000
    per_chunk(events)
    time_to_first_chunk()


if __name__ == "__main__":
    main()
