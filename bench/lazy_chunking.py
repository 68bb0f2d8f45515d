"""Replay memory and time under the per-byte chunkings (bytewise, fixed:1) on large bodies.

    python bench/lazy_chunking.py [MB ...]      # default: 10 50

Each (chunking, size) runs in a fresh subprocess: it builds an SSE body of that size in an
in-memory cassette, resets the RSS peak (Linux /proc/self/clear_refs), replays it through an
httpx client reading ``iter_raw()`` chunk by chunk, and reports the wall time and the growth of
the RSS peak over the RSS before the replay. Printed, all measured in this run: seconds, ns per
chunk, the RSS growth as a multiple of the body (target <= 2x), and the time ratio of the largest
size to the smallest against the ratio of their sizes (linear: about equal). ``coalesced`` (one
chunk) is the baseline of what a replay costs without per-chunk work.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"

SCRIPT = r"""
import gc, json, re, sys, time
import httpx, ssemock

MB, CHUNKING = int(sys.argv[1]), sys.argv[2]

def status(field):
    with open("/proc/self/status") as fh:
        return int(re.search(rf"^{field}:\s+(\d+) kB", fh.read(), re.M).group(1)) * 1024

event = b'data: {"choices":[{"delta":{"content":"hello"}}]}\n\n'
body = event * (MB * 1_000_000 // len(event))
cassette = ssemock.Cassette()
cassette.add("GET", "http://bench.test/s", [body[i:i + 16384] for i in range(0, len(body), 16384)])
size = len(body)
del body
gc.collect()
with open("/proc/self/clear_refs", "w") as fh:
    fh.write("5")
base = status("VmRSS")
start = time.perf_counter()
with ssemock.replay(cassette, chunking=CHUNKING), httpx.Client() as client:
    with client.stream("GET", "http://bench.test/s") as r:
        n = got = 0
        for chunk in r.iter_raw():
            n += 1
            got += len(chunk)
seconds = time.perf_counter() - start
assert got == size, (got, size)
print(json.dumps({"seconds": seconds, "chunks": n, "size": size, "growth": status("VmHWM") - base}))
"""


def measure(mb: int, chunking: str) -> dict[str, float]:
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(mb), chunking],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(SRC), "PATH": ""},
        timeout=900,
    )
    if proc.returncode != 0:
        raise SystemExit(proc.stderr)
    result: dict[str, float] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    sizes = [int(a) for a in sys.argv[1:]] or [10, 50]
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
    except OSError:
        raise SystemExit("needs Linux /proc/self/clear_refs to reset the RSS peak") from None
    print(f"{'chunking':10s} {'MB':>4s} {'seconds':>8s} {'ns/chunk':>9s} {'RSS growth':>11s}")
    worst = 0.0
    for chunking in ("coalesced", "bytewise", "fixed:1"):
        runs = {}
        for mb in sizes:
            r = runs[mb] = measure(mb, chunking)
            growth = r["growth"] / r["size"]
            if chunking != "coalesced":
                worst = max(worst, growth)
            print(
                f"{chunking:10s} {mb:4d} {r['seconds']:8.2f} {r['seconds'] / r['chunks'] * 1e9:9.0f} "
                f"{growth:10.3f}x"
            )
        lo, hi = min(sizes), max(sizes)
        if lo != hi and chunking != "coalesced":
            print(
                f"{chunking:10s} time {hi} MB / {lo} MB: {runs[hi]['seconds'] / runs[lo]['seconds']:.2f}x "
                f"for {runs[hi]['size'] / runs[lo]['size']:.2f}x the bytes (linear: about equal)"
            )
    print(f"largest RSS growth under bytewise/fixed:1: {worst:.3f}x the body (target <= 2x)")


if __name__ == "__main__":
    main()
