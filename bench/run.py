"""Every benchmark in one run: ratios measured side by side, absolute figures, linearity curves.

    python bench/run.py            # about 2 minutes on 2 cores
    python bench/run.py --quick    # smaller sizes, for a smoke run

Prints (as Markdown, ready for bench/RESULTS.md):

1. the machine (date, nproc, python, CPU model);
2. a table of targets: each ratio measured in this run against its peer, the target, met or
   MISSED -- benchmarks never assert timings, they print;
3. absolute figures per benchmark;
4. the 1x/10x/100x curve of every operation (time per chunk / byte / event at three sizes);
5. a cProfile of where the time goes, for every missed timing target.

The parts live in bench/replay.py, bench/record.py, bench/decode.py (imported),
bench/cassette_io.py, bench/chunking.py, bench/matrix.py, bench/memory.py and bench/lazy_chunking.py.
"""

from __future__ import annotations

import cProfile
import datetime
import gc
import io
import os
import platform
import pstats
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent / "src"), str(HERE)]

import httpx  # noqa: E402
import httpx2  # noqa: E402
import respx  # noqa: E402

import ssemock  # noqa: E402
from ssemock.redact import find_secrets  # noqa: E402

import cassette_io  # noqa: E402
import chunking as chunking_bench  # noqa: E402
import decode as decode_bench  # noqa: E402
import lazy_chunking as lazy_bench  # noqa: E402
import matrix as matrix_bench  # noqa: E402
import memory as memory_bench  # noqa: E402
import record as record_bench  # noqa: E402
import replay as replay_bench  # noqa: E402
import secret_scan as secret_scan_bench  # noqa: E402

QUICK = "--quick" in sys.argv
SCALE = 10 if QUICK else 1


# -- reporting --------------------------------------------------------------------------------

@dataclass
class Target:
    name: str
    mine: str
    peer: str
    ratio: float
    target: str
    met: bool
    profile: str = ""  # cProfile top functions, taken at once when the target is missed


@dataclass
class Report:
    targets: list[Target] = field(default_factory=list)
    figures: dict[str, list[str]] = field(default_factory=dict)
    curves: list[tuple[str, str, list[str], list[float], str]] = field(default_factory=list)

    def target(self, name: str, mine: str, peer: str, ratio: float, target: str, met: bool,
               profile: Callable[[], Any] | None = None) -> None:
        text = profile_top(profile) if profile is not None and not met else ""
        self.targets.append(Target(name, mine, peer, ratio, target, met, text))

    def figure(self, section: str, line: str) -> None:
        self.figures.setdefault(section, []).append(line)
        print(f"  {line}", flush=True)

    def curve(self, operation: str, unit: str, sizes: list[str], values: list[float], note: str = "") -> None:
        self.curves.append((operation, unit, sizes, values, note))


REPORT = Report()


def section(title: str) -> Iterator[None]:
    print(f"\n## {title}", flush=True)
    start = time.perf_counter()
    yield
    print(f"  ({time.perf_counter() - start:.1f} s)", flush=True)


def run_section(title: str, fn: Callable[[], None]) -> None:
    gen = section(title)
    next(gen)
    fn()
    next(gen, None)


def best_interleaved(fns: dict[str, Callable[[], Any]], rounds: int) -> dict[str, float]:
    """Best seconds per function; each round runs every function once, so drift hits all alike."""
    best = {name: float("inf") for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            gc.collect()
            gc.disable()
            try:
                start = time.perf_counter()
                fn()
                best[name] = min(best[name], time.perf_counter() - start)
            finally:
                gc.enable()
    return best


def profile_top(fn: Callable[[], Any], limit: int = 12) -> str:
    profiler = cProfile.Profile()
    profiler.enable()
    fn()
    profiler.disable()
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out)
    stats.sort_stats("tottime").print_stats(limit)
    lines = out.getvalue().splitlines()
    start = next(i for i, line in enumerate(lines) if "ncalls" in line)
    return "\n".join(line.replace(str(HERE.parent) + "/", "").replace(sys.prefix + "/", "")
                     for line in lines[start:] if line.strip())


def machine() -> list[str]:
    cpu = "unknown"
    try:
        with open("/proc/cpuinfo") as fh:
            cpu = next((line.split(":", 1)[1].strip() for line in fh if line.startswith("model name")), cpu)
    except OSError:
        pass
    versions = {m.__name__: getattr(m, "__version__", "?") for m in (httpx, httpx2, respx)}
    import openai
    import orjson
    versions.update(openai=openai.__version__, orjson=orjson.__version__)
    return [
        f"date: {datetime.datetime.now().astimezone().isoformat(timespec='seconds')}",
        f"machine: nproc {os.cpu_count()} ({len(os.sched_getaffinity(0))} usable), CPU {cpu!r}, "
        f"{platform.system()} {platform.release()}",
        f"python {platform.python_version()} ({platform.python_implementation()}); "
        + ", ".join(f"{k} {v}" for k, v in versions.items()),
    ]


# -- 1. replay --------------------------------------------------------------------------------

class _Handwritten2(httpx2.SyncByteStream):
    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks

    def __iter__(self) -> Iterator[bytes]:
        yield from self.chunks


def _consume(client: Any) -> int:
    n = 0
    with client.stream("POST", replay_bench.URL) as r:
        for _ in r.iter_raw():
            n += 1
    return n


def _replay_fns(chunks: list[bytes]) -> dict[str, Callable[[], int]]:
    cassette = ssemock.Cassette()
    cassette.add("POST", replay_bench.URL, chunks)
    mock1 = httpx.Client(transport=httpx.MockTransport(
        lambda request: httpx.Response(200, stream=replay_bench.HandWritten(chunks))))
    mock2 = httpx2.Client(transport=httpx2.MockTransport(
        lambda request: httpx2.Response(200, stream=_Handwritten2(chunks))))

    def ssemock_httpx2() -> int:
        with ssemock.replay(cassette), httpx2.Client() as client:
            return _consume(client)

    return {
        "ssemock (httpx)": replay_bench.run_ssemock(chunks),  # bench/replay.py: same cassette, same client
        "hand-written respx (httpx)": replay_bench.run_respx(chunks),
        "httpx.MockTransport": lambda: _consume(mock1),
        "ssemock (httpx2)": ssemock_httpx2,
        "httpx2.MockTransport": lambda: _consume(mock2),
    }


def bench_replay() -> None:
    n = 100_000 // SCALE
    chunks = replay_bench.body(n)
    fns = _replay_fns(chunks)
    for fn in fns.values():  # warm-up: the cassette cuts its chunks once
        assert fn() == n
    best = best_interleaved(fns, rounds=5)
    us = {name: secs / n * 1e6 for name, secs in best.items()}
    for name, value in us.items():
        REPORT.figure("replay", f"{name:<28} {value:6.3f} us/chunk ({n:,} chunks of ~40 bytes, best of 5)")
    respx_ratio = us["ssemock (httpx)"] / us["hand-written respx (httpx)"]
    REPORT.target("replay per chunk", f"{us['ssemock (httpx)']:.3f} us", f"{us['hand-written respx (httpx)']:.3f} us "
                  "(hand-written respx)", respx_ratio, "<= 1.10x", respx_ratio <= 1.10,
                  profile=lambda: [fns["ssemock (httpx)"]() for _ in range(3)])
    REPORT.target("replay per chunk, httpx (info)", f"{us['ssemock (httpx)']:.3f} us",
                  f"{us['httpx.MockTransport']:.3f} us (httpx.MockTransport)",
                  us["ssemock (httpx)"] / us["httpx.MockTransport"], "none (MockTransport skips httpcore)", True)
    REPORT.target("replay per chunk, httpx2 (info)", f"{us['ssemock (httpx2)']:.3f} us",
                  f"{us['httpx2.MockTransport']:.3f} us (httpx2.MockTransport)",
                  us["ssemock (httpx2)"] / us["httpx2.MockTransport"], "none (MockTransport skips httpcore2)", True)
    sizes, per = [1_000 // SCALE, 10_000 // SCALE, 100_000 // SCALE], []
    for size in sizes:
        fn = _replay_fns(chunks[:size])["ssemock (httpx)"]
        fn()
        per.append(best_interleaved({"x": fn}, rounds=5)["x"] / size * 1e6)
    REPORT.curve("replay (ssemock, httpx)", "us/chunk", [f"{s:,} chunks" for s in sizes], per,
                 "includes ~1-2 ms fixed cost per replay (starting the mockers), spread over the chunks")


# -- 2. recording -----------------------------------------------------------------------------

def _recorded(path: Path, fn: Callable[[], Any], save: bool = True) -> tuple[Any, float]:
    """Run ``fn`` while recording into ``path``; its result and the seconds the save at exit took."""
    player = ssemock.use_cassette(path, record_mode="all")
    player.start()
    try:
        result = fn()
    finally:
        start = time.perf_counter()
        player.stop(save=save)
        took = time.perf_counter() - start
    return result, took


def bench_record() -> None:
    big = 50_000_000 // SCALE
    with memory_bench.loopback_server() as url, tempfile.TemporaryDirectory() as tmp, \
            httpx.Client(timeout=60) as client:
        first = f"{url}/first"
        record_bench.ttfc(client, first)
        live_t, rec_t = [], []
        for i in range(30 // (2 if QUICK else 1)):
            live_t.append(record_bench.ttfc(client, first))
            rec_t.append(_recorded(Path(tmp) / f"first{i}.json", lambda: record_bench.ttfc(client, first))[0])
        lm, rm = statistics.median(live_t) * 1e3, statistics.median(rec_t) * 1e3
        REPORT.figure("record", f"time to first chunk (median of {len(live_t)}): no recorder {lm:.2f} ms, "
                      f"recording {rm:.2f} ms, difference {rm - lm:+.2f} ms")
        REPORT.target("time to first chunk while recording", f"{rm:.2f} ms", f"{lm:.2f} ms (no recorder)",
                      rm / lm, "within 2 ms", rm - lm <= 2.0)

        def stream(size: int) -> Callable[[], float]:
            return lambda: record_bench.throughput(client, f"{url}/stream?size={size}&chunk=16384")

        def keeping(size: int) -> float:
            """No recorder, but the client keeps every chunk, as a recorder must."""
            gc.collect()  # each run starts from a collected heap
            start, kept = time.perf_counter(), []
            with client.stream("GET", f"{url}/stream?size={size}&chunk=16384") as r:
                for chunk in r.iter_raw():
                    kept.append(chunk)
            return size / (time.perf_counter() - start) / 1e6

        sizes = (big // 100, big // 10, big)
        curve_live, curve_rec = [], []
        keep_mb = 0.0
        for size in sizes:
            rounds = 9
            live, rec = [], []
            for i in range(rounds):  # interleaved; the save at exit is measured apart, below
                gc.collect()  # each run starts from a collected heap
                live.append(stream(size)())
                gc.collect()
                rec.append(_recorded(Path(tmp) / "big.json", stream(size), save=False)[0])
                if size == big:
                    keep_mb = max(keep_mb, keeping(size))
            curve_live.append(1e3 / max(live))  # ns/byte = 1e3 / (MB/s)
            curve_rec.append(1e3 / max(rec))
        live_mb, rec_mb = 1e3 / curve_live[-1], 1e3 / curve_rec[-1]
        ratio = rec_mb / live_mb
        REPORT.target("recording throughput", f"{rec_mb:.0f} MB/s", f"{live_mb:.0f} MB/s (no recorder)",
                      ratio, ">= 0.95x", ratio >= 0.95,
                      profile=lambda: _recorded(Path(tmp) / "p.json", stream(big), save=False))
        REPORT.target("recording throughput vs a client that keeps the chunks (info)", f"{rec_mb:.0f} MB/s",
                      f"{keep_mb:.0f} MB/s (no recorder, chunks kept in a list)", rec_mb / keep_mb, "none", True)
        REPORT.target("recording throughput: the best any recorder can do here (info)", f"{keep_mb:.0f} MB/s",
                      f"{live_mb:.0f} MB/s (no recorder)", keep_mb / live_mb, "none", True)
        REPORT.figure("record", f"a client that only keeps its chunks, as any recorder must, runs at "
                      f"{keep_mb / live_mb:.2f}x of one that drops them: the kernel hands out fresh pages for the "
                      f"kept {big / 1e6:.0f} MB while dropped chunks reuse warm ones. That is the bound here; "
                      f"ssemock records at {ratio:.2f}x, {rec_mb / keep_mb:.2f} of it")
        pages = subprocess.run([sys.executable, str(Path(__file__).with_name("pages.py")), str(big / 1e6)],
                               capture_output=True, text=True, check=True, timeout=120).stdout
        for line in pages.splitlines():  # the same cost without a network or ssemock (bench/pages.py)
            REPORT.figure("record", "pages.py: " + line.strip())
        _, save = _recorded(Path(tmp) / "big.json", stream(big))
        REPORT.figure("record", f"throughput on a {big / 1e6:.0f} MB loopback stream (16 KB events, server in "
                      f"another process, best of {rounds} interleaved): no recorder {live_mb:.0f} MB/s, recording "
                      f"{rec_mb:.0f} MB/s ({ratio:.2f}x), no recorder but the client keeps every chunk "
                      f"{keep_mb:.0f} MB/s; the cassette save at exit takes {save * 1e3:.0f} ms more "
                      f"({big / 1e6 / save:.0f} MB/s)")
        with_save = big / 1e6 / (big / 1e6 / rec_mb + save)
        REPORT.target("recording + the save at exit (info)", f"{with_save:.0f} MB/s",
                      f"{live_mb:.0f} MB/s (no recorder)", with_save / live_mb, "none", True)
        labels = [f"{s / 1e6:g} MB" for s in sizes]
        REPORT.curve("record a loopback stream", "ns/byte", labels, curve_rec,
                     "no recorder: " + " / ".join(f"{v:.2f}" for v in curve_live) + " ns/byte")
        cassette = ssemock.Cassette.load(Path(tmp) / "big.json")
        saves, scans = [], []
        for s in sizes:
            part = ssemock.Cassette()
            body = cassette.interactions[0].response.body[:s]
            part.add("GET", url, [body[i:i + 16384] for i in range(0, len(body), 16384)])
            best = best_interleaved({"save": lambda: part.save(Path(tmp) / "part.json"),
                                     "scan": lambda: find_secrets(part)}, 2)
            saves.append(best["save"] / len(body) * 1e9)
            scans.append(best["scan"] / len(body) * 1e9)
        REPORT.curve("Cassette.save of a recording", "ns/byte", labels, saves, "16 KB chunks, includes fsync")
        REPORT.curve("secret scan before saving (redact.find_secrets)", "ns/byte", labels, scans,
                     "runs on every save after recording")
        REPORT.figure("record", "of the save at exit, the secret scan (find_secrets) takes "
                      f"{scans[-1] * big / 1e6:.0f} ms "
                      f"and Cassette.save {saves[-1] * big / 1e6:.0f} ms")
        share = scans[-1] / saves[-1]
        REPORT.target("secret scan before the save at exit, share of the save (this body)",
                      f"{scans[-1] * big / 1e6:.0f} ms (find_secrets)", f"{saves[-1] * big / 1e6:.0f} ms (Cassette.save)",
                      share, "<= 0.10x", share <= 0.10, profile=lambda: find_secrets(part))


# -- 3. decoder -------------------------------------------------------------------------------

def bench_decode() -> None:
    """Issue 16 item 1: every shape, every installed peer, same-run medians (bench/decode.py)."""
    fns, missing = decode_bench.contestants()
    if missing:
        REPORT.figure("decode", "peers not installed (left out): " + ", ".join(missing))
    for shape in decode_bench.shapes(decode_bench.N_EVENTS // SCALE, decode_bench.BIG // SCALE,
                                     decode_bench.BYTEWISE // SCALE):
        ok, notes = decode_bench.agreeing(fns, shape)
        result = decode_bench.measure(shape, ok, rounds=3 if shape.unit == "byte" or "MB" in shape.name else 5)
        REPORT.figure("decode", f"{shape.name}: " + ", ".join(f"{k} {result.per_unit(k)}" for k in result.seconds)
                      + f" ({result.count:,} {shape.unit}s)" + "".join(f"; left out: {n}" for n in notes))
        peer = result.fastest_peer
        REPORT.target(f"SSE decoder, {shape.name}", f"{result.per_unit('ssemock')} (decode)",
                      f"{result.per_unit(peer)} ({peer})", result.ratio,
                      ">= 2x faster than the fastest peer", result.ratio >= 2.0,
                      profile=lambda chunks=shape.chunks: decode_bench.run_ssemock(chunks))
        REPORT.figure("decode", f"{shape.name}: Decoder.feed per chunk {result.per_unit('ssemock.feed')}, "
                      f"{result.feed_ratio:.2f}x the fastest peer ({peer})")
    events = decode_bench.build_events(decode_bench.N_EVENTS // SCALE)
    sizes = [len(events) // 100, len(events) // 10, len(events)]
    per = [best_interleaved({"x": lambda s=s: decode_bench.run_ssemock(events[:s])}, 3)["x"] / s * 1e6 for s in sizes]
    REPORT.curve("SSE decode (per-event chunks)", "us/event", [f"{s:,} events" for s in sizes], per)
    per_byte, floor = [], []
    for factor in (1, 10, 100 // SCALE):
        payload = "x" * 60 + "é€🙂"
        size = 256 * 1024 * factor
        big = b"data: " + (payload * (size // len(payload.encode()))).encode() + b"\n\n"
        chunks = [big[i:i + 4096] for i in range(0, len(big), 4096)]
        best = best_interleaved({"ssemock": lambda: decode_bench.run_ssemock_feed(chunks),
                                 "floor": lambda: b"".join(chunks).decode()}, 3)
        per_byte.append(best["ssemock"] / len(big) * 1e9)
        floor.append(best["floor"] / len(big) * 1e9)
    REPORT.curve("SSE decode (one huge event, 4 KiB chunks, Decoder.feed per chunk)", "ns/byte",
                 ["0.26 MB", "2.6 MB", "26 MB"], per_byte,
                 "floor (join + decode once): " + " / ".join(f"{v:.2f}" for v in floor) + " ns/byte")


# -- 4. chunking, 5. cassette I/O, 6. matrix, 7. memory ---------------------------------------

def bench_chunking() -> None:
    size = 10_000_000 // SCALE
    sizes = (size // 100, size // 10, size)
    results = chunking_bench.curve(sizes)
    for name, r in results[size].items():
        REPORT.figure("chunking", f"{name:<12} {r['chunks']:>12,.0f} chunks  boundaries {r['ends'] * 1e3:7.1f} ms  "
                      f"cutting {r['cut'] * 1e3:7.1f} ms  on {r['bytes'] / 1e6:.1f} MB")
        REPORT.curve(f"chunking {name}: boundaries", "ns/byte", [f"{s / 1e6:g} MB" for s in sizes],
                     [results[s][name]["ends"] / results[s][name]["bytes"] * 1e9 for s in sizes])


def bench_cassette_io() -> None:
    size = 10_000_000 // SCALE
    sizes = (size // 100, size // 10, size)
    results = cassette_io.curve(sizes)
    r = results[size]
    REPORT.figure("cassette", f"{r['bytes'] / 1e6:.1f} MB body in {r['chunks']:,.0f} recorded chunks, file "
                  f"{r['file'] / 1e6:.1f} MB: load {r['load'] * 1e3:.1f} ms "
                  f"(orjson.loads {r['orjson_loads'] * 1e3:.1f}), "
                  f"dumps {r['dumps'] * 1e3:.1f} ms (orjson.dumps {r['orjson_dumps'] * 1e3:.1f}), save "
                  f"{r['save'] * 1e3:.1f} ms (orjson.dumps + write + fsync {r['orjson_write'] * 1e3:.1f}), "
                  f"load from file {r['load_file'] * 1e3:.1f} ms")
    raw = cassette_io.make_cassette(size).dumps()
    ratio = r["load"] / r["orjson_loads"]
    REPORT.target("cassette load (10 MB)", f"{r['load'] * 1e3:.1f} ms",
                  f"{r['orjson_loads'] * 1e3:.1f} ms (orjson.loads)",
                  ratio, "<= 2x", ratio <= 2.0, profile=lambda: ssemock.Cassette.loads(raw))
    cassette = ssemock.Cassette.loads(raw)
    REPORT.target("cassette dumps (10 MB) (info)", f"{r['dumps'] * 1e3:.1f} ms",
                  f"{r['orjson_dumps'] * 1e3:.1f} ms (orjson.dumps)", r["dumps"] / r["orjson_dumps"], "none", True,
                  profile=cassette.dumps)
    labels = [f"{s / 1e6:g} MB" for s in sizes]
    for key, name in (("load", "cassette load"), ("dumps", "cassette dumps"),
                      ("orjson_loads", "orjson.loads (baseline)")):
        REPORT.curve(name, "ns/byte", labels, [results[s][key] / results[s]["bytes"] * 1e9 for s in sizes])


def bench_secret_scan() -> None:
    """bench/secret_scan.py: the scan vs the save on chat, filler and escaped bodies."""
    big = 50_000_000 // SCALE
    sizes = [big // 100, big // 10, big]
    rows = secret_scan_bench.measure(sizes, repeat=2)
    labels = [f"{s / 1e6:g} MB" for s in sizes]
    for name in ("chat", "filler", "escaped"):
        mine = [r for r in rows if r["body"] == name]
        ns = [float(r["scan"]) / int(r["bytes"]) * 1e9 for r in mine]  # type: ignore[arg-type]
        ns_re = [float(r["scan_re"]) / int(r["bytes"]) * 1e9 for r in mine]  # type: ignore[arg-type]
        REPORT.curve(f"secret scan, {name} body (find_secrets)", "ns/byte", labels, ns,
                     "re fallback without ahocorasick-rs: " + " / ".join(f"{v:.3g}" for v in ns_re))
        last = mine[-1]
        scan, scan_re, save = float(last["scan"]), float(last["scan_re"]), float(last["save"])  # type: ignore[arg-type]
        REPORT.target(f"secret scan of a {big / 1e6:g} MB {name} recording, share of its save",
                      f"{scan * 1e3:.0f} ms", f"{save * 1e3:.0f} ms (Cassette.save)", scan / save, "<= 0.10x",
                      scan / save <= 0.10)
        REPORT.figure("secret scan", f"{name}: the scan takes {scan * 1e3:.1f} ms of a {save * 1e3:.0f} ms save "
                      f"({scan / save:.1%}); with the re fallback (no ahocorasick-rs) {scan_re * 1e3:.0f} ms "
                      f"({scan_re / save:.0%})")


def bench_matrix() -> None:
    sdk = matrix_bench.in_process(20, repeat=5)
    results = matrix_bench.curve((20, 200, 2000 // SCALE))
    raw = results[20]
    for strategy in ssemock.chunking.ALL:
        REPORT.figure("matrix", f"{strategy.name:<12} openai SDK run {sdk[strategy.name] * 1e3:6.2f} ms, "
                      f"ssemock's share {raw[strategy.name] * 1e3:6.2f} ms")
    REPORT.figure("matrix", f"whole 7-way matrix on a 20-event cassette: {sdk['matrix'] * 1e3:.1f} ms through the "
                  f"openai SDK ({sdk['matrix'] / sdk['as_recorded']:.1f}x one run), ssemock's share "
                  f"{raw['matrix'] * 1e3:.1f} ms")
    if not QUICK:
        p = matrix_bench.under_pytest(repeat=2)
        REPORT.figure("matrix", f"under pytest (fresh subprocess, wall): 1 run {p['one']:.2f} s, 7-way matrix "
                      f"{p['all']:.2f} s: each more chunking costs {p['per_chunking'] * 1e3:.0f} ms")
    REPORT.curve("chunking matrix (ssemock share)", "us/event", [f"{n} events" for n in results],
                 [c["matrix"] / n * 1e6 for n, c in results.items()],
                 "all 7 chunkings; at 20 events the fixed cost per replay dominates")


def bench_memory() -> None:
    size_mb = 100 / SCALE
    result = memory_bench.run(size_mb)
    for line in memory_bench.report(result):
        REPORT.figure("memory", line.strip())
    for key, label in (("record_save_peak", "record + save"), ("load_replay_peak", "load + replay")):
        ratio = result[key] / result["size"]
        REPORT.target(f"peak memory, {label} of {size_mb:g} MB", f"{result[key] / 1e6:.0f} MB",
                      f"{result['size'] / 1e6:.0f} MB (body)", ratio, "< 3x the body", ratio < 3.0)
    sizes = [size_mb / 10, size_mb / 3, size_mb] if not QUICK else [size_mb / 4, size_mb / 2, size_mb]
    per = []
    for s in sizes[:-1]:
        r = memory_bench.run(s)
        per.append(max(r["record_save_peak"], r["load_replay_peak"]) / r["size"])
    per.append(max(result["record_save_peak"], result["load_replay_peak"]) / result["size"])
    REPORT.curve("peak memory (record+save, load+replay)", "x body", [f"{s:g} MB" for s in sizes], per,
                 "constant = linear memory; sizes 1x/3.3x/10x here (100x would need 10 GB)")


def bench_lazy_chunking() -> None:
    sizes = [1, 10 // SCALE or 2, 50 // SCALE]
    for chunking in ("bytewise", "fixed:1"):
        runs = [lazy_bench.measure(mb, chunking) for mb in sizes]
        for mb, r in zip(sizes, runs):
            REPORT.figure("per-byte replay", f"{chunking} {mb} MB: {r['seconds']:.2f} s, "
                          f"{r['seconds'] / r['chunks'] * 1e9:.0f} ns/chunk, RSS growth {r['growth'] / 1e6:.1f} MB")
        big = runs[-1]
        ratio = big["growth"] / big["size"]
        REPORT.target(f"RSS growth, {chunking} replay of {sizes[-1]} MB", f"{big['growth'] / 1e6:.1f} MB",
                      f"{big['size'] / 1e6:.0f} MB (body)", ratio, "<= 2x the body", ratio <= 2.0)
        REPORT.curve(f"{chunking} replay through httpx", "ns/byte", [f"{mb} MB" for mb in sizes],
                     [r["seconds"] / r["size"] * 1e9 for r in runs],
                     f"sizes 1x/{sizes[1]}x/{sizes[2]}x here; linear: about equal")


# -- main -------------------------------------------------------------------------------------

SECTIONS: list[tuple[str, Callable[[], None]]] = [
    ("replay per chunk", bench_replay),
    ("recording", bench_record),
    ("SSE decoder", bench_decode),
    ("chunking computation", bench_chunking),
    ("cassette load/save", bench_cassette_io),
    ("secret scan", bench_secret_scan),
    ("chunking matrix", bench_matrix),
    ("memory", bench_memory),
    ("per-byte chunking replay", bench_lazy_chunking),
]


def main() -> None:
    start = time.perf_counter()
    print("# ssemock benchmarks" + (" (--quick: sizes / 10)" if QUICK else ""))
    for line in machine():
        print(f"- {line}")
    only = [a for a in sys.argv[1:] if not a.startswith("--")]
    for title, fn in SECTIONS:
        if only and not any(o in title for o in only):
            continue
        run_section(title, fn)

    print("\n## targets (ratios measured side by side in this run)\n")
    print("| benchmark | ssemock | peer | ratio | target | |")
    print("|---|---|---|---|---|---|")
    for t in REPORT.targets:
        print(f"| {t.name} | {t.mine} | {t.peer} | {t.ratio:.2f}x | {t.target} | {'met' if t.met else '**MISSED**'} |")

    print("\n## linearity: cost per unit at 1x / 10x / 100x\n")
    print("| operation | unit | sizes | 1x | 10x | 100x | 100x / 1x | note |")
    print("|---|---|---|---|---|---|---|---|")
    for operation, unit, sizes, values, note in REPORT.curves:
        print(f"| {operation} | {unit} | {' / '.join(sizes)} | " + " | ".join(f"{v:.3g}" for v in values)
              + f" | {values[-1] / values[0]:.2f} | {note} |")

    for t in REPORT.targets:
        if t.profile:
            print(f"\n## profile: {t.name} (missed: {t.ratio:.2f}x, target {t.target})\n")
            print("```")
            print(t.profile)
            print("```")
    print(f"\ntotal {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
