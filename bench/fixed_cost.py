"""Fixed cost of one replay: enter a player, serve a 1-chunk stream through a reused client, exit.

Against a hand-written respx mock doing the same (``respx.mock`` + one route streaming the same
chunk), sync and async, httpx and httpx2 (ssemock's own httpcore2 mock for respx has no peer:
respx cannot mock httpx2, so httpx2 is compared with ssemock on httpx). Interleaved rounds,
medians, same run; the ratio is ssemock / respx.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Callable

import httpx
import httpx2
import respx

import ssemock

URL = "https://api.example.test/v1/chat/completions"
CHUNK = b'data: {"choices": [{"delta": {"content": "hi"}}]}\n\n'
ROUNDS, PER_ROUND = 15, 200


def cassette() -> ssemock.Cassette:
    c = ssemock.Cassette()
    c.add("POST", URL, [CHUNK])
    return c


def ssemock_sync(lib: object, client: object) -> Callable[[], None]:
    c = cassette()

    def once() -> None:
        with ssemock.replay(c, allow_playback_repeats=True):
            with client.stream("POST", URL) as r:  # type: ignore[attr-defined]
                for _ in r.iter_raw():
                    pass
    return once


def respx_sync(client: httpx.Client) -> Callable[[], None]:
    def once() -> None:
        with respx.mock(assert_all_called=False) as mock:
            mock.post(URL).mock(side_effect=lambda request: httpx.Response(200, stream=httpx.ByteStream(CHUNK)))
            with client.stream("POST", URL) as r:
                for _ in r.iter_raw():
                    pass
    return once


def ssemock_async(client: object) -> Callable[[], None]:
    c = cassette()

    async def run() -> None:
        for _ in range(PER_ROUND):
            with ssemock.replay(c, allow_playback_repeats=True):
                async with client.stream("POST", URL) as r:  # type: ignore[attr-defined]
                    async for _ in r.aiter_raw():
                        pass
    return lambda: asyncio.run(run())


def respx_async(client: httpx.AsyncClient) -> Callable[[], None]:
    async def run() -> None:
        for _ in range(PER_ROUND):
            with respx.mock(assert_all_called=False) as mock:
                mock.post(URL).mock(side_effect=lambda request: httpx.Response(200, stream=httpx.ByteStream(CHUNK)))
                async with client.stream("POST", URL) as r:
                    async for _ in r.aiter_raw():
                        pass
    return lambda: asyncio.run(run())


def timed(run: Callable[[], None], per: int) -> float:
    t0 = time.perf_counter()
    run()
    return (time.perf_counter() - t0) / per * 1e6


def loop(once: Callable[[], None]) -> Callable[[], None]:
    def run() -> None:
        for _ in range(PER_ROUND):
            once()
    return run


def main() -> None:
    sync_x, sync_x2 = httpx.Client(), httpx2.Client()
    async_x, async_x2 = httpx.AsyncClient(), httpx2.AsyncClient()  # built outside the timed rounds, for all
    contestants = {
        "respx httpx sync": loop(respx_sync(sync_x)),
        "ssemock httpx sync": loop(ssemock_sync(httpx, sync_x)),
        "ssemock httpx2 sync": loop(ssemock_sync(httpx2, sync_x2)),
        "respx httpx async": respx_async(async_x),
        "ssemock httpx async": ssemock_async(async_x),
        "ssemock httpx2 async": ssemock_async(async_x2),
    }
    times: dict[str, list[float]] = {name: [] for name in contestants}
    for _ in range(ROUNDS):
        for name, run in contestants.items():
            times[name].append(timed(run, PER_ROUND))
    med = {name: statistics.median(t) for name, t in times.items()}
    for name, t in med.items():
        base = med["respx httpx async"] if "async" in name else med["respx httpx sync"]
        print(f"{name:24} {t:8.1f} us per replay  ({t / base:.2f}x respx)")


if __name__ == "__main__":
    main()
