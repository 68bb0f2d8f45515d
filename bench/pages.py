"""Why a recorder cannot match a client that drops its chunks: the cost of new memory here.

    python bench/pages.py [MB]

No network, no ssemock: makes ``MB`` of new 64 KB bytes objects (as each socket read does) and
either drops each one or keeps them all, best of 5 each. Then the same with glibc told to keep
freed memory instead of handing it back to the kernel (``mallopt(M_TRIM_THRESHOLD)``), so that
kept blocks land on pages already touched. The difference between the two "keep" figures is what
first-touch page faults cost on this machine, and any recorder pays it for every byte it holds.
"""

from __future__ import annotations

import ctypes
import gc
import sys
import time

BLOCK = 65536


def run(size: int, keep: bool) -> float:
    source = b"x" * (BLOCK + 1)
    gc.collect()
    kept: list[bytes] = []
    start = time.perf_counter()
    for _ in range(size // BLOCK):
        block = source[1:]  # a new bytes object
        if keep:
            kept.append(block)
    took = time.perf_counter() - start
    del kept
    return took


def report(label: str, size: int) -> None:
    drop = min(run(size, False) for _ in range(5))
    keep = min(run(size, True) for _ in range(5))
    print(
        f"  {label}: drop {drop * 1e3:.1f} ms, keep {keep * 1e3:.1f} ms "
        f"({(keep - drop) * 1e3 / (size / 1e6):.2f} ms per MB held)"
    )


def main() -> None:
    size = int(float(sys.argv[1]) * 1e6) if len(sys.argv) > 1 else 50_000_000
    print(f"{size / 1e6:.0f} MB in new {BLOCK // 1024} KB blocks, best of 5:")
    report("default allocator (freed memory goes back to the kernel)", size)
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        print("  (no glibc here: the warm-heap comparison needs mallopt)")
        return
    libc.mallopt(-1, 1 << 30)  # M_TRIM_THRESHOLD: keep up to 1 GB of freed memory
    libc.mallopt(-3, 1 << 24)  # M_MMAP_THRESHOLD fixed, so blocks stay on the heap
    run(size, True)  # touch the pages once
    report("warm heap (pages already touched)", size)


if __name__ == "__main__":
    main()
