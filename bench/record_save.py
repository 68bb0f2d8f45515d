"""The save at exit: from the recording's last byte to the file on disk, ssemock vs vcrpy.

    python bench/record_save.py [MB ...]            # default: 1 5 20
    python bench/record_save.py --memory [MB ...]   # the save's peak memory; default: 5 20

Issue 33 item 1: the time from the last byte the client reads to the end of the recording context
(the cassette written) is at most vcrpy's for the same recording; issue 48 item 1: so is the whole
recording, record + save (from entering the context to its end). Both record the same stream from
a loopback server in another process that sends as fast as it can (so nothing hides behind the
network), through httpx: an OpenAI chat stream and an Anthropic messages stream of 1, 5 and 20 MB
in ~400-byte chunks. ssemock runs its whole secret scan (every form) before it writes; vcrpy writes
YAML (libyaml's CDumper when PyYAML has it). Printed per shape and size: the save's wall time and
the measuring process's CPU time beside it, for each, and ssemock / vcrpy; the median of the
rounds, the two interleaved, GC off while timing. Benchmarks print, they never assert.

``--memory`` (issue 33 item 2: at most 2.5x the body at 5 and 20 MB): each shape and size is
recorded by ssemock in a fresh subprocess, and the save at exit is measured twice over: the peak of
``tracemalloc`` (Python allocations made during the save, over what was traced when it began) and
the growth of the RSS high-water mark (reset before the save; Linux), each as a multiple of the
body size.
"""

from __future__ import annotations

import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent / "src"), str(HERE)]

import httpx  # noqa: E402

SERVER = r"""
import asyncio, sys, json
import uvicorn
from starlette.applications import Starlette
from starlette.responses import StreamingResponse
from starlette.routing import Route

def openai(i):
    d = {"id": "chatcmpl-9ZbTest0000000000000000000", "object": "chat.completion.chunk",
         "created": 1718000000, "model": "gpt-4o-mini-2024-07-18", "system_fingerprint": "fp_0000000000",
         "choices": [{"index": 0, "delta": {"content": f" word{i % 97} and more"}, "logprobs": None,
                      "finish_reason": None}]}
    return b"data: " + json.dumps(d, separators=(",", ":")).encode() + b"\n\n"

def anthropic(i):
    d = {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": f" word{i % 97} and more"}}
    return b"event: content_block_delta\ndata: " + json.dumps(d, separators=(",", ":")).encode() + b"\n\n"

CACHE = {}

def body(shape, size):
    key = (shape, size)
    if key not in CACHE:
        make = openai if shape == "openai" else anthropic
        out, n, i = [], 0, 0
        while n < size:
            e = make(i); out.append(e); n += len(e); i += 1
        if shape == "openai":
            out.append(b"data: [DONE]\n\n")
        else:
            out.append(b'event: message_stop\ndata: {"type":"message_stop"}\n\n')
        whole = b"".join(out)
        CACHE[key] = [whole[a:a + 400] for a in range(0, len(whole), 400)]
    return CACHE[key]

async def stream(request):
    chunks = body(request.path_params["shape"], int(request.query_params["size"]))
    async def gen():
        for c in chunks:
            yield c
    return StreamingResponse(gen(), media_type="text/event-stream")

app = Starlette(routes=[Route("/{shape}", stream, methods=["GET", "POST"])])

config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="off", access_log=False)
server = uvicorn.Server(config)

async def main():
    task = asyncio.ensure_future(server.serve())
    while not server.started:
        await asyncio.sleep(0.01)
    print(server.servers[0].sockets[0].getsockname()[1], flush=True)
    await task

asyncio.run(main())
"""


@contextmanager
def loopback() -> Iterator[str]:
    proc = subprocess.Popen([sys.executable, "-c", SERVER], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        port = proc.stdout.readline().strip()
        if not port.isdigit():
            raise RuntimeError(f"the loopback server did not start: {port!r}")
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def timed_save(
    recorder: Callable[[], AbstractContextManager[object]], url: str, size: int
) -> tuple[float, float, float, float]:
    """(wall, CPU) seconds from the last byte the client reads to the recording context's end,
    then (wall, CPU) seconds of the whole recording: from entering the context (the client
    already built) to its end, the request, reading the stream and the save."""
    with httpx.Client(timeout=60) as client:
        begin, begin_cpu = time.perf_counter(), time.process_time()
        with recorder():
            with client.stream(
                "POST",
                url,
                params={"size": size},
                json={"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]},
                headers={"authorization": "Bearer sk-test-not-a-real-key"},
            ) as r:
                for _ in r.iter_raw():
                    pass
            wall, cpu = time.perf_counter(), time.process_time()
        end, end_cpu = time.perf_counter(), time.process_time()
        return end - wall, end_cpu - cpu, end - begin, end_cpu - begin_cpu


def ssemock_recorder(path: Path) -> Callable[[], AbstractContextManager[object]]:
    import ssemock

    return lambda: ssemock.use_cassette(path, record_mode="all")


def vcrpy_recorder(path: Path) -> Callable[[], AbstractContextManager[object]]:
    import vcr

    v = vcr.VCR(record_mode="all", filter_headers=["authorization"])
    return lambda: v.use_cassette(str(path))


MEMORY = r"""
import gc, json, sys, tempfile, tracemalloc
from pathlib import Path
import httpx, ssemock
from memory import _reset_peak, _status
base, shape, size = sys.argv[1], sys.argv[2], int(sys.argv[3])
with tempfile.TemporaryDirectory() as tmp, httpx.Client(timeout=60) as client:
    out = {}
    for traced in (False, True):
        cm = ssemock.use_cassette(Path(tmp) / f"m{traced}.json", record_mode="all")
        cm.__enter__()
        with client.stream("POST", f"{base}/{shape}", params={"size": size}, json={"stream": True}) as r:
            body = sum(len(c) for c in r.iter_raw())
        gc.collect()
        if traced:
            tracemalloc.start()
            before = tracemalloc.get_traced_memory()[0]
        else:
            _reset_peak()
            rss = _status("VmRSS")
        cm.__exit__(None, None, None)
        if traced:
            out["tracemalloc"] = (tracemalloc.get_traced_memory()[1] - before) / body
            tracemalloc.stop()
        else:
            out["rss"] = (_status("VmHWM") - rss) / body
print(json.dumps(out))
"""


def memory_rows(sizes: list[float]) -> list[dict[str, object]]:
    """One row per shape and size: the save's peak as multiples of the body (tracemalloc, RSS)."""
    rows: list[dict[str, object]] = []
    with loopback() as base:
        for shape in ("openai", "anthropic"):
            for mb in sizes:
                proc = subprocess.run(
                    [sys.executable, "-c", MEMORY, base, shape, str(int(mb * 1e6))],
                    capture_output=True,
                    text=True,
                    env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path[:2])},
                    check=True,
                )
                got = json.loads(proc.stdout.strip().splitlines()[-1])
                rows.append({"shape": shape, "mb": mb, **got})
    return rows


def memory(sizes: list[float]) -> None:
    print(
        f"{'shape':10} {'size':>6}  save peak: {'tracemalloc':>11} {'RSS':>6}  (x the body; target <= 2.5x)"
    )
    for got in memory_rows(sizes):
        print(
            f"{got['shape']:10} {got['mb']:5g}MB  {'':10} {got['tracemalloc']:10.2f}x {got['rss']:5.2f}x",
            flush=True,
        )


def measure(sizes: list[float]) -> list[dict[str, object]]:
    """One row per shape and size: the median (wall, CPU) seconds of the save at exit for ssemock
    and vcrpy, and of the whole recording (``ssemock total``, ``vcrpy total``: record + save), over
    rounds interleaved (both see the same machine load), GC off while timing. Medians, not the
    best: on a shared machine the best of three swung 0.86-1.20x from one run to the next."""
    rows: list[dict[str, object]] = []
    with loopback() as base, tempfile.TemporaryDirectory() as tmp:
        for shape in ("openai", "anthropic"):
            for mb in sizes:
                size = int(mb * 1e6)
                url = f"{base}/{shape}"
                # a 1 MB round pair costs ~80 ms: 25 of them settle the median (9 swung 0.89-1.03x); a
                # 5 MB pair ~350 ms: 15 (one pair's ratio spans 0.8-1.25x here, and the median of 7
                # swung 0.78-1.01x)
                rounds = 25 if mb <= 1 else 15 if mb <= 5 else 3
                got: dict[str, list[tuple[float, float]]] = {}
                for i in range(rounds):  # interleaved: both see the same machine load
                    for name, make in (("ssemock", ssemock_recorder), ("vcrpy", vcrpy_recorder)):
                        ext = "json" if name == "ssemock" else "yaml"
                        # a file of its own: a cassette left by another shape or size would be merged into
                        # (and scanned, written) again by the save, by ssemock and vcrpy alike
                        cassette = Path(tmp) / f"{name}-{shape}-{mb:g}-{i}.{ext}"
                        gc.collect()
                        gc.disable()
                        try:
                            wall, cpu, total, total_cpu = timed_save(make(cassette), url, size)
                        finally:
                            gc.enable()
                        got.setdefault(name, []).append((wall, cpu))
                        got.setdefault(f"{name} total", []).append((total, total_cpu))
                medians = {
                    key: (statistics.median(w for w, _ in pairs), statistics.median(c for _, c in pairs))
                    for key, pairs in got.items()
                }
                rows.append({"shape": shape, "mb": mb, **medians})
    return rows


def main() -> None:
    if sys.argv[1:2] == ["--memory"]:
        memory([float(a) for a in sys.argv[2:]] or [5.0, 20.0])
        return
    sizes = [float(a) for a in sys.argv[1:]] or [1.0, 5.0, 20.0]
    print(
        f"{'shape':10} {'size':>6}  {'ssemock wall':>12} {'cpu':>8}  {'vcrpy wall':>10} {'cpu':>8}  {'ratio wall':>10} {'cpu':>6}"
    )
    for row in measure(sizes):
        for what in ("", " total"):
            (sw, sc), (vw, vc) = row["ssemock" + what], row["vcrpy" + what]  # type: ignore[misc]
            print(
                f"{row['shape']:10} {row['mb']:5g}MB  {sw * 1e3:10.1f}ms {sc * 1e3:6.1f}ms  {vw * 1e3:8.1f}ms "
                f"{vc * 1e3:6.1f}ms  {sw / vw:9.2f}x {sc / vc:5.2f}x  {'record + save' if what else 'save'}",
                flush=True,
            )


if __name__ == "__main__":
    main()
