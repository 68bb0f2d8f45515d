"""Chunking computation: time for each strategy to place its boundaries on a 10 MB SSE body.

    python bench/chunking.py [MB]

The body is bench/decode.py's OpenAI-style stream (mixed ASCII and multi-byte UTF-8), with
recorded boundaries every ~400 bytes. For every strategy in ``ssemock.chunking.ALL`` plus
``fixed:3`` it times ``strategy.ends(body, recorded)`` (the boundary computation a replay
does once per stream) and cutting the body into chunks at those ends, and prints the time per
byte at 0.1/1/10 MB (the 1x/10x/100x curve; equal ns/byte = linear).
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path

from timer import best

sys.path[:0] = [str(Path(__file__).resolve().parents[1] / "src"), str(Path(__file__).resolve().parent)]

from decode import build_events  # noqa: E402

from ssemock import chunking  # noqa: E402

EVENT_BYTES = 268
STRATEGIES = [*chunking.ALL, chunking.fixed(3)]


@functools.lru_cache(maxsize=1)
def _events(n: int) -> list[bytes]:
    return build_events(n)


def make_body(size: int) -> tuple[bytes, list[int]]:
    """About ``size`` bytes of SSE events, and recorded ends every ~400 bytes."""
    n = max(1, size // EVENT_BYTES)
    body = b"".join(_events(max(n, 10_000_000 // EVENT_BYTES))[:n])
    return body, chunking.random(1, average_size=400, size_variation=300).ends(body)


def _cut(body: bytes, ends: list[int]) -> list[bytes]:
    return [body[a:b] for a, b in zip([0, *ends], ends)]


def measure(size: int, repeat: int = 3) -> dict[str, dict[str, float]]:
    """Per strategy: seconds for ``ends`` and for cutting, the chunk count, and the body size."""
    body, recorded = make_body(size)
    out: dict[str, dict[str, float]] = {}
    for strategy in STRATEGIES:
        ends = strategy.ends(body, recorded)
        assert ends[-1] == len(body)
        out[strategy.name] = {
            "bytes": len(body),
            "chunks": len(ends),
            "ends": best(lambda: strategy.ends(body, recorded), repeat),
            "cut": best(lambda: _cut(body, ends), repeat),
        }
    return out


def curve(
    sizes: tuple[int, ...] = (100_000, 1_000_000, 10_000_000),
) -> dict[int, dict[str, dict[str, float]]]:
    return {size: measure(size, repeat=3 if size < 10_000_000 else 1) for size in sizes}


def main() -> None:
    size = int(float(sys.argv[1]) * 1e6) if len(sys.argv) > 1 else 10_000_000
    sizes = (size // 100, size // 10, size)
    results = curve(sizes)
    top = results[size]
    first = next(iter(top.values()))
    print(f"body {first['bytes'] / 1e6:.1f} MB; ends = boundary computation, cut = slicing the chunks")
    print(
        f"  {'strategy':<12} {'chunks':>12} {'ends ms':>9} {'cut ms':>9}   ns/byte of ends at "
        + " / ".join(f"{s / 1e6:g} MB" for s in sizes)
        + "   (100x/1x)"
    )
    for name, r in top.items():
        per = [results[s][name]["ends"] * 1e9 / results[s][name]["bytes"] for s in sizes]
        print(
            f"  {name:<12} {r['chunks']:>12,.0f} {r['ends'] * 1e3:9.1f} {r['cut'] * 1e3:9.1f}   "
            + " / ".join(f"{p:6.2f}" for p in per)
            + f"   ({per[-1] / per[0]:.2f})"
        )


if __name__ == "__main__":
    main()
