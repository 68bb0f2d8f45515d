"""Transforms: time for ``transforms.apply`` per transform, and for every chunking after it, on
SSE bodies of 1x/10x/100x size (default 0.04/0.4/4 MB).

    python bench/transforms.py [MB]

Two bodies per size:

* ``many events``: bench/decode.py's OpenAI-style stream (mixed ASCII and multi-byte UTF-8)
  with ``\\u2028`` escapes in one event of ten, recorded chunk ends every ~400 bytes;
* ``one event``: a single ``data:`` event of the whole size (a JSON string with escapes), with 50
  recorded chunk ends inside it per 4 MB (0.5/5/50): the case where ``apply`` used to redo the
  event's prefix at every chunk end (4 MiB with 50 ends: 11.5 s; with 1 end: 0.41 s).

For each transform it prints ns per byte at each size and the 100x/1x ratio (1.0 = linear; the
baseline is the same transform on the smallest body, measured in the same run), and the same
for each chunking of the transformed body.
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[1] / "src"), str(Path(__file__).resolve().parent)]

from decode import build_events  # noqa: E402
from timer import best  # noqa: E402

from ssemock import chunking, transforms  # noqa: E402

EVENT_BYTES = 268
NAMES = [t.name for t in transforms.ALL if "sse" in t.kinds] + ["crlf+mixed+meta+pad+raw_unicode"]


@functools.lru_cache(maxsize=1)
def _events(n: int) -> list[bytes]:
    events = build_events(n)
    return [
        e.replace(b'"content":"', b'"content":"\\u2028', 1) if i % 10 == 0 else e
        for i, e in enumerate(events)
    ]


def many_events(size: int) -> tuple[bytes, list[int]]:
    n = max(1, size // EVENT_BYTES)
    body = b"".join(_events(max(n, 4_000_000 // EVENT_BYTES))[:n])
    return body, chunking.random(1, average_size=400, size_variation=300).ends(body)


def one_event(size: int, ends_per_4mb: int = 50) -> tuple[bytes, list[int]]:
    text = (b"x" * 60 + b"\\u2028") * max(1, size // 66)
    body = b'data: {"t": "' + text + b'"}\n\n'
    count = max(1, round(ends_per_4mb * size / 4_000_000))
    ends = sorted({len(body) * k // (count + 1) for k in range(1, count + 1)} | {len(body)})
    return body, ends


def measure(make: object, sizes: tuple[int, ...]) -> dict[str, list[float]]:
    """ns per byte of ``apply`` for each transform chain, and of each chunking after ``crlf+mixed``."""
    out: dict[str, list[float]] = {}
    bodies = [make(s) for s in sizes]  # type: ignore[operator]
    for name in NAMES:
        chain = transforms.resolve(name)
        out[name] = [
            best(lambda b=b, e=e: transforms.apply(chain, b, e), 3) * 1e9 / len(b) for b, e in bodies
        ]
    chain = transforms.resolve("crlf+mixed")
    for strategy in chunking.ALL:
        per = []
        for body, ends in bodies:
            new_body, new_ends = transforms.apply(chain, body, ends)
            per.append(best(lambda: strategy.ends(new_body, new_ends), 3) * 1e9 / len(new_body))
        out[f"chunking {strategy.name}"] = per
    return out


def main() -> None:
    size = int(float(sys.argv[1]) * 1e6) if len(sys.argv) > 1 else 4_000_000
    sizes = (size // 100, size // 10, size)
    for label, make in (("many events", many_events), ("one event, 50 chunk ends per 4 MB", one_event)):
        results = measure(make, sizes)
        print(f"{label}: ns/byte at " + " / ".join(f"{s / 1e6:g} MB" for s in sizes) + "   (100x/1x)")
        for name, per in results.items():
            print(f"  {name:<36} " + " / ".join(f"{p:7.1f}" for p in per) + f"   ({per[-1] / per[0]:.2f})")
    body, ends = one_event(4 * 2**20)
    for count in (1, 50, 500):
        ends = sorted({len(body) * k // (count + 1) for k in range(1, count + 1)} | {len(body)})
        seconds = best(lambda: transforms.apply([transforms.keepalive(), transforms.crlf], body, ends), 1)
        print(f"4 MiB event, {count} chunk ends inside: keepalive+crlf {seconds:.3f} s")


if __name__ == "__main__":
    main()
