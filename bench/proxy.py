"""What ``ssemock proxy`` adds while recording: time to first byte and the p95 gap between chunks,
through the proxy vs straight to the same loopback upstream, same run, interleaved.

    python bench/proxy.py [ROUNDS]

The upstream sends 20 SSE events, one every 5 ms; the client (httpx, raw reads) times the first
byte from the moment it sends the request, and each gap between the chunks it reads. Each round
makes one direct request and one through the proxy (record mode ``all``, so every request is
recorded and saved: the merge, the secret scan and the atomic write of a growing cassette run
after each response, as they do for a real recording). Prints the median time to first byte and
the p95 gap of both, and what the proxy adds (goal on an idle machine: under 5 ms and 2 ms).
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[1] / "src")]

import httpx  # noqa: E402
from starlette.applications import Starlette  # noqa: E402
from starlette.requests import Request  # noqa: E402
from starlette.responses import StreamingResponse  # noqa: E402
from starlette.routing import Route  # noqa: E402

from ssemock.commands.loopback import running  # noqa: E402
from ssemock.commands.proxy import app  # noqa: E402

EVENTS, GAP = 20, 0.005
TTFB_GOAL, GAP_GOAL = 0.005, 0.002


async def stream(request: Request) -> StreamingResponse:
    await request.body()

    async def body() -> AsyncIterator[bytes]:
        for i in range(EVENTS):
            if i:
                await asyncio.sleep(GAP)
            yield b'data: {"choices": [{"delta": {"content": "token %d"}}]}\n\n' % i

    return StreamingResponse(body(), media_type="text/event-stream")


def one(client: httpx.Client, url: str) -> tuple[float, list[float]]:
    """Time to first byte and the gaps between reads of one streamed response."""
    start = time.perf_counter()
    arrivals = []
    with client.stream("POST", url + "/v1/chat/completions", json={"stream": True}) as resp:
        for _ in resp.iter_raw():
            arrivals.append(time.perf_counter())
    return arrivals[0] - start, [b - a for a, b in zip(arrivals, arrivals[1:], strict=False)]


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[-1]


def measure(rounds: int) -> dict[str, float]:
    """Seconds: the median time to first byte and the p95 gap, direct and through the proxy
    (``ttfb direct``, ``ttfb proxy``, ``gap direct``, ``gap proxy``), and ``saved``: the
    recordings the proxy saved."""
    upstream = Starlette(routes=[Route("/v1/chat/completions", stream, methods=["POST"])])
    with tempfile.TemporaryDirectory() as folder, running(upstream) as up:
        proxy = app(up, cassette_dir=folder, record_mode="all")
        with running(proxy) as via, httpx.Client(timeout=30) as client:
            one(client, up), one(client, via)  # warm both paths up
            ttfb: dict[str, list[float]] = {"direct": [], "proxy": []}
            gaps: dict[str, list[float]] = {"direct": [], "proxy": []}
            for _ in range(rounds):
                for name, url in (("direct", up), ("proxy", via)):
                    first, between = one(client, url)
                    ttfb[name].append(first)
                    gaps[name].extend(between)
            saved = proxy.state.ssemock.books["proxy"].saved
    out = {f"ttfb {name}": statistics.median(values) for name, values in ttfb.items()}
    out.update({f"gap {name}": p95(values) for name, values in gaps.items()})
    out["saved"] = saved
    return out


def main(rounds: int) -> None:
    got = measure(rounds)
    print(f"{rounds} rounds of {EVENTS} events {GAP * 1000:g} ms apart; {got['saved']:.0f} recordings saved")
    ms = 1000.0
    for name in ("direct", "proxy"):
        print(
            f"  {name:6}  median time to first byte {got[f'ttfb {name}'] * ms:7.2f} ms"
            f"   p95 gap {got[f'gap {name}'] * ms:6.2f} ms"
        )
    added_first = got["ttfb proxy"] - got["ttfb direct"]
    added_gap = got["gap proxy"] - got["gap direct"]
    print(
        f"  added by recording through the proxy: first byte {added_first * ms:+.2f} ms "
        f"({'PASS' if added_first < TTFB_GOAL else 'ABOVE'} goal {TTFB_GOAL * ms:g} ms), "
        f"p95 gap {added_gap * ms:+.2f} ms ({'PASS' if added_gap < GAP_GOAL else 'ABOVE'} goal {GAP_GOAL * ms:g} ms)"
    )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 50)
