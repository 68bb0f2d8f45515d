"""Replay cost per chunk: ssemock vs a hand-written respx stream of the same chunks, sync and async.

    python bench/replay.py [EVENTS] [--cpu]      # --cpu: CPU time instead of wall time

Every contestant reads EVENTS chunks (~40 bytes each) as raw chunks through a client built once,
outside the timed rounds (for all of them); what is timed is entering the mock, the request and
reading the stream to its end. The async contestants run on one event loop, also made outside.

* ssemock on httpx and on httpx2 (``ssemock.replay`` of a cassette with those chunks);
* hand-written respx on httpx: ``respx.mock`` and one route whose response streams the same list
  (a byte-stream class iterating it; an async generator over it for ``async for``);
* hand-written pool mock on httpx2: what respx does on httpx (its default mocker patches the
  httpcore pools' ``handle_request``), written by hand for httpcore2's pools, since respx does not
  patch httpx2: the same byte-stream class as the pool's response content. httpx2's own layers
  above the pool cost more per chunk than httpx's, which no mock below them can take away, so this,
  not respx on httpx, is ssemock-on-httpx2's peer (the target of issue 48 item 2);
* httpx.MockTransport / httpx2.MockTransport (info: they skip httpcore, so no mock that patches
  the pool can match them).

Rounds are interleaved (each round runs every contestant once, in a rotated order), the garbage
collector is off while timing, and the median round counts; each target's ratio is the median of
its rounds' ratios (ssemock and its peer run next to each other in a round). Target (issue 48
item 2): ssemock <= 1.05x its peer, sync and async.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any
from unittest.mock import patch

sys.path[:0] = [str(Path(__file__).resolve().parents[1] / "src"), str(Path(__file__).resolve().parent)]

import httpcore2  # noqa: E402
import httpx  # noqa: E402
import httpx2  # noqa: E402
import respx  # noqa: E402
from timer import interleaved, paired_ratio  # noqa: E402

import ssemock  # noqa: E402

URL = "https://api.example.test/v1/chat/completions"


def body(events: int) -> list[bytes]:
    return [
        f'data: {{"i":{i},"choices":[{{"delta":{{"content":"世界{i}"}}}}]}}\n\n'.encode()
        for i in range(events)
    ]


class HandWritten(httpx.SyncByteStream, httpx.AsyncByteStream):
    """What a respx user writes to stream a list of chunks."""

    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks

    def __iter__(self) -> Iterator[bytes]:
        yield from self.chunks

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self.chunks:
            yield chunk


class HandWritten2(HandWritten, httpx2.SyncByteStream, httpx2.AsyncByteStream):
    """The same for httpx2.MockTransport."""


def consume(client: Any) -> int:
    n = 0
    with client.stream("POST", URL) as r:
        for _ in r.iter_raw():
            n += 1
    return n


async def aconsume(client: Any) -> int:
    n = 0
    async with client.stream("POST", URL) as r:
        async for _ in r.aiter_raw():
            n += 1
    return n


def contestants(chunks: list[bytes], loop: asyncio.AbstractEventLoop) -> dict[str, Callable[[], int]]:
    """Every contestant, its client already built: name -> one timed run (returns chunks read)."""
    cassette = ssemock.Cassette()
    cassette.add("POST", URL, chunks)
    x, x2 = httpx.Client(), httpx2.Client()
    ax, ax2 = httpx.AsyncClient(), httpx2.AsyncClient()
    mock = httpx.Client(
        transport=httpx.MockTransport(lambda request: httpx.Response(200, stream=HandWritten(chunks)))
    )
    mock2 = httpx2.Client(
        transport=httpx2.MockTransport(lambda request: httpx2.Response(200, stream=HandWritten2(chunks)))
    )
    amock = httpx.AsyncClient(
        transport=httpx.MockTransport(lambda request: httpx.Response(200, stream=HandWritten(chunks)))
    )

    def ssemock_sync(client: Any) -> Callable[[], int]:
        def run() -> int:
            with ssemock.replay(cassette, allow_playback_repeats=True):
                return consume(client)

        return run

    def ssemock_async(client: Any) -> Callable[[], int]:
        async def go() -> int:
            with ssemock.replay(cassette, allow_playback_repeats=True):
                return await aconsume(client)

        return lambda: loop.run_until_complete(go())

    def respx_sync() -> int:
        with respx.mock(assert_all_called=False) as router:
            router.post(URL).mock(side_effect=lambda request: httpx.Response(200, stream=HandWritten(chunks)))
            return consume(x)

    def pool_sync() -> int:
        def handle_request(self: Any, request: Any) -> Any:
            return httpcore2.Response(200, content=HandWritten(chunks))

        with patch.object(httpcore2.ConnectionPool, "handle_request", handle_request):
            return consume(x2)

    async def pool_async() -> int:
        async def handle_async_request(self: Any, request: Any) -> Any:
            return httpcore2.Response(200, content=HandWritten(chunks))

        with patch.object(httpcore2.AsyncConnectionPool, "handle_async_request", handle_async_request):
            return await aconsume(ax2)

    async def respx_async() -> int:
        with respx.mock(assert_all_called=False) as router:
            router.post(URL).mock(side_effect=lambda request: httpx.Response(200, stream=HandWritten(chunks)))
            return await aconsume(ax)

    return {
        "ssemock httpx sync": ssemock_sync(x),
        "respx httpx sync": respx_sync,
        "ssemock httpx2 sync": ssemock_sync(x2),
        "hand-written pool mock httpx2 sync": pool_sync,
        "httpx.MockTransport sync": lambda: consume(mock),
        "httpx2.MockTransport sync": lambda: consume(mock2),
        "ssemock httpx async": ssemock_async(ax),
        "respx httpx async": lambda: loop.run_until_complete(respx_async()),
        "ssemock httpx2 async": ssemock_async(ax2),
        "hand-written pool mock httpx2 async": lambda: loop.run_until_complete(pool_async()),
        "httpx.MockTransport async": lambda: loop.run_until_complete(aconsume(amock)),
    }


PAIRS = {
    f"{lib} {mode}": (f"ssemock {lib} {mode}", peer)
    for mode in ("sync", "async")
    for lib, peer in (("httpx", f"respx httpx {mode}"), ("httpx2", f"hand-written pool mock httpx2 {mode}"))
}
"""The targets: each stack and mode -> (ssemock's contestant, its peer's), next to each other in
`contestants`' order (so in every round's)."""


def measure(
    events: int = 100_000, rounds: int = 7, clock: Callable[[], float] = time.perf_counter
) -> tuple[dict[str, float], dict[str, float]]:
    """Microseconds per chunk of every contestant (median of ``rounds`` interleaved rounds, timed
    by ``clock``: wall time, or ``time.process_time`` for CPU time on a busy machine), and the
    ratio of each of `PAIRS` (the median of its rounds' ratios, `timer.paired_ratio`)."""
    chunks = body(events)
    loop = asyncio.new_event_loop()
    try:
        fns = contestants(chunks, loop)
        for name, fn in fns.items():  # warm-up, and every contestant reads every chunk
            assert fn() == events, name
        times = interleaved(fns, rounds, clock)
    finally:
        loop.close()
    us = {name: statistics.median(t) / events * 1e6 for name, t in times.items()}
    return us, {pair: paired_ratio(times, *names) for pair, names in PAIRS.items()}


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    events = int(args[0]) if args else 100_000
    us, ratios = measure(events, clock=time.process_time if "--cpu" in sys.argv else time.perf_counter)
    for name, value in us.items():
        base = us["respx httpx async" if "async" in name else "respx httpx sync"]
        print(f"{name:36s} {value:7.3f} us/chunk  ({value / base:.3f}x hand-written respx)")
    for pair, (_, peer) in PAIRS.items():
        print(
            f"{pair}: ssemock / {peer} = {ratios[pair]:.3f}x, the median of the rounds' ratios (target <= 1.05x)"
        )


if __name__ == "__main__":
    main()
