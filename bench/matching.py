"""Per-request cost of replaying a cassette of N interactions (N = 10, 100, 1000).

Matching is indexed (ssemock.selection), so the cost per request stays flat as N grows; the
ratio printed is per-request time at N against N = 10, measured in the same run.
"""

from __future__ import annotations

import time

import httpx

import ssemock


def per_request(n: int) -> float:
    cassette = ssemock.Cassette()
    for i in range(n):
        cassette.add("POST", f"https://api.example.test/v1/chat/{i}", [b"data: x\n\n"], request_json={"i": i})
    with ssemock.replay(cassette), httpx.Client() as client:
        t0 = time.perf_counter()
        for i in range(n):
            client.post(f"https://api.example.test/v1/chat/{i}", json={"i": i})
        return (time.perf_counter() - t0) / n


def main() -> None:
    per_request(10)  # warm up
    base = min(per_request(10) for _ in range(5))
    print(f"{'N':>6} {'us/request':>12} {'vs N=10':>8}")
    for n in (10, 100, 300, 1000):
        t = min(per_request(n) for _ in range(3))
        print(f"{n:>6} {t * 1e6:>12.0f} {t / base:>7.2f}x")


if __name__ == "__main__":
    main()
