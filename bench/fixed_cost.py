"""Fixed cost of one replay: enter a player, serve a 1-chunk stream through a reused client, exit.

    python bench/fixed_cost.py [--cpu]      # --cpu: CPU time instead of wall time

Against a hand-written respx mock doing the same (``respx.mock`` + one route streaming the same
chunk), sync and async, httpx and httpx2 (respx cannot mock httpx2, so ssemock on httpx2 is
compared with respx on httpx). Every client, and the async contestants' event loop, is built
once, outside the timed rounds. Interleaved rounds of PER_ROUND replays each, medians (garbage
collector off while timing), same run; the ratio is ssemock / respx (target <= 1.00x).
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path[:0] = [str(Path(__file__).resolve().parents[1] / "src"), str(Path(__file__).resolve().parent)]

import httpx  # noqa: E402
import httpx2  # noqa: E402
import respx  # noqa: E402
from timer import median_interleaved  # noqa: E402

import ssemock  # noqa: E402

URL = "https://api.example.test/v1/chat/completions"
CHUNK = b'data: {"choices": [{"delta": {"content": "hi"}}]}\n\n'
ROUNDS, PER_ROUND = 15, 200


def cassette() -> ssemock.Cassette:
    c = ssemock.Cassette()
    c.add("POST", URL, [CHUNK])
    return c


def ssemock_sync(client: Any) -> Callable[[], None]:
    c = cassette()

    def once() -> None:
        with ssemock.replay(c, allow_playback_repeats=True):
            with client.stream("POST", URL) as r:
                for _ in r.iter_raw():
                    pass

    return once


def respx_sync(client: httpx.Client) -> Callable[[], None]:
    def once() -> None:
        with respx.mock(assert_all_called=False) as mock:
            mock.post(URL).mock(
                side_effect=lambda request: httpx.Response(200, stream=httpx.ByteStream(CHUNK))
            )
            with client.stream("POST", URL) as r:
                for _ in r.iter_raw():
                    pass

    return once


def ssemock_async(client: Any) -> Callable[[], Awaitable[None]]:
    c = cassette()

    async def once() -> None:
        with ssemock.replay(c, allow_playback_repeats=True):
            async with client.stream("POST", URL) as r:
                async for _ in r.aiter_raw():
                    pass

    return once


def respx_async(client: httpx.AsyncClient) -> Callable[[], Awaitable[None]]:
    async def once() -> None:
        with respx.mock(assert_all_called=False) as mock:
            mock.post(URL).mock(
                side_effect=lambda request: httpx.Response(200, stream=httpx.ByteStream(CHUNK))
            )
            async with client.stream("POST", URL) as r:
                async for _ in r.aiter_raw():
                    pass

    return once


def measure(
    rounds: int = ROUNDS, per_round: int = PER_ROUND, clock: Callable[[], float] = time.perf_counter
) -> dict[str, float]:
    """Median microseconds per replay of every contestant (``rounds`` interleaved rounds of
    ``per_round`` replays each, timed by ``clock``: wall or CPU time)."""
    sync_x, sync_x2 = httpx.Client(), httpx2.Client()
    async_x, async_x2 = httpx.AsyncClient(), httpx2.AsyncClient()
    loop = asyncio.new_event_loop()

    def repeat(once: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:
            for _ in range(per_round):
                once()

        return run

    def arepeat(once: Callable[[], Awaitable[None]]) -> Callable[[], None]:
        async def go() -> None:
            for _ in range(per_round):
                await once()

        return lambda: loop.run_until_complete(go())

    contestants = {
        "respx httpx sync": repeat(respx_sync(sync_x)),
        "ssemock httpx sync": repeat(ssemock_sync(sync_x)),
        "ssemock httpx2 sync": repeat(ssemock_sync(sync_x2)),
        "respx httpx async": arepeat(respx_async(async_x)),
        "ssemock httpx async": arepeat(ssemock_async(async_x)),
        "ssemock httpx2 async": arepeat(ssemock_async(async_x2)),
    }
    try:
        for run in contestants.values():  # warm-up: imports, the first patches
            run()
        seconds = median_interleaved(contestants, rounds, clock)
    finally:
        loop.close()
    return {name: s / per_round * 1e6 for name, s in seconds.items()}


def main() -> None:
    med = measure(clock=time.process_time if "--cpu" in sys.argv else time.perf_counter)
    for name, t in med.items():
        base = med["respx httpx async" if "async" in name else "respx httpx sync"]
        print(f"{name:24} {t:8.1f} us per replay  ({t / base:.2f}x respx)")


if __name__ == "__main__":
    main()
