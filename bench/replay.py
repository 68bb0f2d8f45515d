"""Replay cost per chunk: ssemock vs a hand-written respx stream with the same chunks, same run.

    python bench/replay.py [EVENTS]

Prints microseconds per chunk for both and the ratio (target: ssemock <= 1.10x hand-written).
Best of 5 after a warm-up: the cassette cuts its body into chunks once and keeps them, as it
does across a chunking matrix; the first, cold replay is printed too.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator

import httpx
import respx

import ssemock

URL = "https://api.example.test/v1/chat/completions"


def body(events: int) -> list[bytes]:
    return [f'data: {{"i":{i},"choices":[{{"delta":{{"content":"世界{i}"}}}}]}}\n\n'.encode() for i in range(events)]


class HandWritten(httpx.SyncByteStream):
    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks

    def __iter__(self) -> Iterator[bytes]:
        yield from self.chunks


def consume(client: httpx.Client) -> int:
    n = 0
    with client.stream("POST", URL) as r:
        for _ in r.iter_raw():
            n += 1
    return n


def run_ssemock(chunks: list[bytes]) -> Callable[[], int]:
    cassette = ssemock.Cassette()
    cassette.add("POST", URL, chunks)

    def go() -> int:
        with ssemock.replay(cassette), httpx.Client() as client:
            return consume(client)
    return go


def run_respx(chunks: list[bytes]) -> Callable[[], int]:
    def go() -> int:
        with respx.mock(assert_all_called=False) as router, httpx.Client() as client:
            router.post(URL).mock(side_effect=lambda request: httpx.Response(200, stream=HandWritten(chunks)))
            return consume(client)
    return go


def best_of(fn: Callable[[], int], repeats: int) -> tuple[float, int]:
    best, n = float("inf"), 0
    for _ in range(repeats):
        start = time.perf_counter()
        n = fn()
        best = min(best, time.perf_counter() - start)
    return best, n


def main() -> None:
    events = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    chunks = body(events)
    results = {}
    for name, make in (("hand-written respx", run_respx), ("ssemock", run_ssemock)):
        fn = make(chunks)
        cold, _ = best_of(fn, 1)
        print(f"{name:20s} first replay {cold / events * 1e6:7.3f} us/chunk")
        seconds, n = best_of(fn, 5)
        assert n == events, (name, n)
        results[name] = seconds / n * 1e6
    base = results["hand-written respx"]
    for name, us in results.items():
        print(f"{name:20s} {us:7.3f} us/chunk  ({us / base:.2f}x)")
    print(f"ratio ssemock / hand-written respx: {results['ssemock'] / base:.3f} (target <= 1.10)")


if __name__ == "__main__":
    main()
