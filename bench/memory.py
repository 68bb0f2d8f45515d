"""Memory: peak memory of recording a large stream, saving, loading and replaying its cassette.

    python bench/memory.py [MB]          # default 100 MB; runs the measurement in a subprocess

The stream comes from a loopback server in another process (so the server's buffers are not
counted); the measuring process records it with ``use_cassette(record_mode="all")``, saves,
loads and replays it, and reports, per phase, the peak of ``tracemalloc`` (Python allocations,
which is where every copy of the body lives) and the growth of the max RSS over the baseline
taken after imports. Target: every phase peaks under 3x the body size.

Also home of :func:`loopback_server`, the out-of-process streaming server that bench/run.py uses
for the recording benchmarks: a separate process has its own GIL, so the client's cost is
measured and not the server's.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"

SERVER = r"""
import asyncio, sys
sys.path.insert(0, sys.argv[1])
import uvicorn
from starlette.applications import Starlette
from starlette.responses import StreamingResponse
from starlette.routing import Route
from ssemock.framing import eventstream

def event(size, framing="sse"):
    if framing == "ndjson":
        return b'{"text":"' + b"x" * max(0, size - 12) + b'"}\n'
    if framing == "json":  # one element of an array, its comma after it on the next line, as Gemini's
        return b'{"text":"' + b"x" * max(0, size - 15) + b'"}\n,\r\n'
    if framing == "eventstream":
        headers = {":event-type": "chunk", ":message-type": "event", ":content-type": "application/json"}
        return eventstream.encode(headers, b'{"text":"' + b"x" * max(0, size - 120) + b'"}')
    return b"data: " + b"x" * max(0, size - 8) + b"\n\n"

MEDIA = {"sse": "text/event-stream", "ndjson": "application/x-ndjson", "json": "application/json",
         "eventstream": "application/vnd.amazon.eventstream"}

async def stream(request):
    q = request.query_params
    total, size = int(q.get("size", "1000000")), int(q.get("chunk", "16384"))
    framing = q.get("framing", "sse")
    one = event(size, framing)
    async def body():
        sent = 0
        if framing == "json":
            yield b"["
        while sent + len(one) <= total:
            yield one
            sent += len(one)
        if framing == "json":
            yield b'{"end":true}]'
        elif total - sent > 8 and framing == "sse":
            yield event(total - sent)
    return StreamingResponse(body(), media_type=MEDIA[framing])

async def first(request):
    async def body():
        yield b"data: first\n\n"
        await asyncio.sleep(0.02)
        yield b"data: last\n\n"
    return StreamingResponse(body(), media_type="text/event-stream")

app = Starlette(routes=[Route("/stream", stream), Route("/first", first)])
config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="off", access_log=False)
server = uvicorn.Server(config)

async def main():
    task = asyncio.ensure_future(server.serve())
    while not server.started:
        await asyncio.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    print(port, flush=True)
    await task

asyncio.run(main())
"""


@contextlib.contextmanager
def loopback_server() -> Iterator[str]:
    """A streaming server in its own process; yields its base URL.

    Routes: ``/stream?size=BYTES&chunk=BYTES`` (SSE events of ``chunk`` bytes, ``size`` in all;
    ``&framing=ndjson``, ``json`` (one JSON array) or ``eventstream``: the same in that framing)
    and ``/first`` (one event, a 20 ms pause, one more).
    """
    proc = subprocess.Popen([sys.executable, "-c", SERVER, str(SRC)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        if not line.isdigit():
            raise RuntimeError(f"the loopback server did not start: {line!r}")
        yield f"http://127.0.0.1:{line}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _status(field: str) -> int:
    """A memory figure of this process from /proc/self/status, in bytes (Linux)."""
    with open("/proc/self/status") as fh:
        match = re.search(rf"^{field}:\s+(\d+) kB", fh.read(), re.M)
    return int(match.group(1)) * 1024 if match else 0


def _reset_peak() -> bool:
    """Reset the RSS high-water mark (Linux >= 4.0: write 5 to /proc/self/clear_refs)."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


class _Phases:
    """Peak RSS per phase: what the phase needs on top of what was alive when it began, and
    its peak above the process's baseline (everything alive at once)."""

    def __init__(self) -> None:
        import gc

        self._gc = gc
        gc.collect()
        self.baseline = self.start = _status("VmRSS")
        self.resets = _reset_peak()
        self.out: dict[str, float] = {}

    def __call__(self, name: str) -> None:
        peak = _status("VmHWM")
        self.out[name] = peak - self.start
        self.out[f"{name}_total"] = peak - self.baseline
        self._gc.collect()
        _reset_peak()
        self.start = _status("VmRSS")


def measure_record(url: str, path: Path, size: int, chunk: int = 16384) -> dict[str, float]:
    """Record ``size`` bytes into ``path`` (record_mode="all") and save; peaks per phase."""
    import httpx

    import ssemock

    with httpx.Client(timeout=60) as client:
        phase = _Phases()
        received = 0
        with ssemock.use_cassette(
            path, record_mode="all", max_body_bytes=2 * size
        ):  # past the 64 MiB default
            with client.stream("GET", f"{url}/stream?size={size}&chunk={chunk}") as r:
                for data in r.iter_raw():
                    received += len(data)
            phase("record")
        phase("save")  # leaving the block saves the cassette
    assert received == size, (received, size)
    return {**phase.out, "size": size, "file": path.stat().st_size, "peak_reset": phase.resets}


def measure_replay(path: Path, size: int) -> dict[str, float]:
    """Load the cassette at ``path`` and replay it; peaks per phase, and plain orjson.loads."""
    import httpx
    import orjson

    import ssemock

    phase = _Phases()
    cassette = ssemock.Cassette.load(path)
    phase("load")
    url = cassette.interactions[0].request.url
    replayed = 0
    with ssemock.replay(cassette), httpx.Client() as offline:
        with offline.stream("GET", url) as r:
            for data in r.iter_raw():
                replayed += len(data)
    assert replayed == size, (replayed, size)
    phase("replay")
    del cassette
    phase("release")
    raw = path.read_bytes()
    doc = orjson.loads(raw)
    phase("orjson_loads")
    del raw, doc
    return phase.out


PHASES = ("record", "save", "load", "replay")


def _subprocess(code: str) -> dict[str, float]:
    head = f"import sys, json; sys.path[:0] = [{str(SRC)!r}, {str(Path(__file__).parent)!r}]\nimport memory\n"
    proc = subprocess.run([sys.executable, "-c", head + code], capture_output=True, text=True, timeout=600)
    if proc.returncode:
        raise RuntimeError(f"memory measurement failed:\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def run(size_mb: float = 100.0) -> dict[str, float]:
    """Record+save in one fresh subprocess, load+replay in another (clean baselines)."""
    size = int(size_mb * 1e6)
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "big.json")
        out = _subprocess(
            "with memory.loopback_server() as url:\n"
            f"    print(json.dumps(memory.measure_record(url, memory.Path({path!r}), {size})))\n"
        )
        out.update(_subprocess(f"print(json.dumps(memory.measure_replay(memory.Path({path!r}), {size})))\n"))
    out["record_save_peak"] = max(out["record_total"], out["save_total"])
    out["load_replay_peak"] = max(out["load_total"], out["replay_total"])
    return out


def report(result: dict[str, float]) -> list[str]:
    size = result["size"]
    lines = [
        f"body {size / 1e6:.0f} MB, cassette file {result['file'] / 1e6:.0f} MB; peak RSS "
        "(x = multiple of the body size); record+save in one process, load+replay in another"
    ]
    for name in PHASES:
        lines.append(
            f"  {name:<7} the phase needs {result[name] / 1e6:7.1f} MB = {result[name] / size:4.2f}x   "
            f"peak above the process baseline {result[name + '_total'] / 1e6:7.1f} MB = "
            f"{result[name + '_total'] / size:4.2f}x"
        )
    lines.append(
        f"  for reference: orjson.loads of the file needs {result['orjson_loads'] / 1e6:.1f} MB "
        f"= {result['orjson_loads'] / size:.2f}x"
    )
    lines.append(
        f"  peak record+save {result['record_save_peak'] / size:.2f}x, load+replay "
        f"{result['load_replay_peak'] / size:.2f}x (target < 3x)"
    )
    return lines


def main() -> None:
    size_mb = float(sys.argv[1]) if len(sys.argv) > 1 else 100.0
    start = time.perf_counter()
    for line in report(run(size_mb)):
        print(line)
    print(f"(target: every phase < 3x the body; {time.perf_counter() - start:.1f} s)")


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    main()
