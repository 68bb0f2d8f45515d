"""Cassette load/save of a 10 MB cassette vs plain orjson on the same document, same run.

    python bench/cassette_io.py [MB]

The cassette holds one OpenAI-style chat stream (bench/decode.py's events, with a paragraph
break every 9th delta and a quote every 13th, so data lines hold JSON escapes as real answers
do) with realistic recorded boundaries (seeded random cuts, ~400 bytes a chunk, each with its
arrival time). Baselines: ``orjson.loads(raw)`` of the cassette file's bytes (what any JSON
format must at least pay) and ``orjson.dumps(doc, OPT_INDENT_2)`` of the same parsed document
(its strings already serialized once, so CPython has cached their UTF-8: the strict baseline;
``orjson.dumps`` of a freshly parsed copy is shown beside it; orjson's own layout gives each
number of a chunk map a line, ssemock's a ``[t_ms, end]`` pair, so its file is a little smaller). ``save`` adds a temp file, fsync
and os.replace; its baseline writes the orjson output with the same fsync. Targets (issue 16):
load within 2x of orjson.loads, dumps within 2.5x of orjson.dumps. Prints best-of-N times,
ratios and PASS/BELOW, then the 1x/10x/100x curve (time per byte) of load and dumps.
"""

from __future__ import annotations

import functools
import os
import sys
import tempfile
from pathlib import Path

from timer import best

sys.path[:0] = [str(Path(__file__).resolve().parents[1] / "src"), str(Path(__file__).resolve().parent)]

import orjson  # noqa: E402
from decode import openai_event  # noqa: E402

import ssemock  # noqa: E402

URL = "https://api.openai.com/v1/chat/completions"
EVENT_BYTES = 268  # about the size of one event
LOAD_TARGET, DUMPS_TARGET = 2.0, 2.5


def _event(i: int) -> bytes:
    """bench/decode.py's OpenAI chat chunk, with the text real answers have: a paragraph break
    every 9th delta and a quoted word every 13th (escapes in the JSON of the data line)."""
    event = openai_event(i)
    if i % 9 == 0:
        event = event.replace(b'"content":"', b'"content":"\\n\\n', 1)
    if i % 13 == 0:
        event = event.replace(b'"content":"', b'"content":"\\"', 1)
    return event


@functools.lru_cache(maxsize=1)
def _events(n: int) -> list[bytes]:
    return [_event(i) for i in range(n)] + [b"data: [DONE]\n\n"]


def make_cassette(size: int) -> ssemock.Cassette:
    """One interaction whose body is about ``size`` bytes, cut at seeded random boundaries."""
    n = max(1, size // EVENT_BYTES)
    events = _events(max(n, 10_000_000 // EVENT_BYTES))[:n]
    body = b"".join(events)
    ends = ssemock.chunking.random(1, average_size=400, size_variation=300).ends(body)
    chunks = [body[a:b] for a, b in zip([0, *ends], ends)]
    cassette = ssemock.Cassette()
    cassette.add(
        "POST",
        URL,
        chunks,
        times=[0.2 + i * 0.0125 for i in range(len(chunks))],
        request_json={
            "model": "gpt-4o-mini",
            "stream": True,
            "messages": [{"role": "user", "content": "Say hi"}],
        },
        request_headers={"content-type": "application/json", "authorization": "REDACTED"},
    )
    return cassette


def _write_fsync(path: Path, data: bytes) -> None:
    with open(path, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())


def measure(size: int, repeat: int = 5) -> dict[str, float]:
    """Seconds (best of ``repeat``): Cassette.loads / orjson.loads, dumps / orjson.dumps (and of a
    freshly parsed copy), save / write."""
    cassette = make_cassette(size)
    raw = cassette.dumps()
    doc = orjson.loads(raw)
    option = orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE
    # the same document; orjson's own layout gives each number of a chunk map a line of its own
    assert orjson.loads(orjson.dumps(doc, option=option)) == doc, "the baseline must write the same document"
    loaded = ssemock.Cassette.loads(raw)
    assert loaded.interactions[0].response.body == cassette.interactions[0].response.body
    out: dict[str, float] = {
        "bytes": len(cassette.interactions[0].response.body),
        "file": len(raw),
        "chunks": len(cassette.interactions[0].response.ends),
    }
    with tempfile.TemporaryDirectory() as tmp:
        path, plain = Path(tmp) / "c.json", Path(tmp) / "plain.json"
        for _ in range(repeat):  # interleaved rounds: drift hits both sides alike
            fresh = orjson.loads(raw)  # parsed outside the timing: no string of it serialized yet
            for name, fn in (
                ("load", lambda: ssemock.Cassette.loads(raw)),
                ("orjson_loads", lambda: orjson.loads(raw)),
                ("load_file", lambda: ssemock.Cassette.load(path if path.exists() else cassette.save(path))),
                ("dumps", cassette.dumps),
                ("orjson_dumps", lambda: orjson.dumps(doc, option=option)),
                ("orjson_dumps_fresh", lambda: orjson.dumps(fresh, option=option)),
                ("save", lambda: cassette.save(path)),
                ("orjson_write", lambda: _write_fsync(plain, orjson.dumps(doc, option=option))),
            ):
                out[name] = min(out.get(name, float("inf")), best(fn, 1))
    return out


def curve(sizes: tuple[int, ...] = (100_000, 1_000_000, 10_000_000)) -> dict[int, dict[str, float]]:
    """measure() at each size (best of 5)."""
    return {size: measure(size) for size in sizes}


def verdict(ratio: float, target: float) -> str:
    return f"PASS (<= {target}x)" if ratio <= target else f"BELOW target ({target}x)"


def main() -> None:
    size = int(float(sys.argv[1]) * 1e6) if len(sys.argv) > 1 else 10_000_000
    sizes = (size // 100, size // 10, size)
    results = curve(sizes)
    r = results[size]
    print(
        f"cassette: body {r['bytes'] / 1e6:.1f} MB in {r['chunks']:,.0f} recorded chunks, "
        f"file {r['file'] / 1e6:.1f} MB"
    )
    for mine, base, target in (
        ("load", "orjson_loads", LOAD_TARGET),
        ("dumps", "orjson_dumps", DUMPS_TARGET),
        ("save", "orjson_write", None),
    ):
        ratio = r[mine] / r[base]
        print(
            f"  {mine:<6} {r[mine] * 1e3:8.1f} ms   {base:<13} {r[base] * 1e3:8.1f} ms   ratio {ratio:5.2f}x"
            + (f"   {verdict(ratio, target)}" if target else "")
        )
    print(
        f"  (dumps vs orjson.dumps of a freshly parsed copy, {r['orjson_dumps_fresh'] * 1e3:.1f} ms: "
        f"{r['dumps'] / r['orjson_dumps_fresh']:.2f}x)"
    )
    print(f"  load from file (read + parse) {r['load_file'] * 1e3:.1f} ms")
    print("linearity (ns per body byte):")
    for s, c in results.items():
        print(
            f"  {s / 1e6:6.1f} MB  load {c['load'] * 1e9 / c['bytes']:6.2f}  "
            f"orjson.loads {c['orjson_loads'] * 1e9 / c['bytes']:6.2f}  dumps {c['dumps'] * 1e9 / c['bytes']:6.2f}  "
            f"orjson.dumps {c['orjson_dumps'] * 1e9 / c['bytes']:6.2f}  ({c['dumps'] / c['orjson_dumps']:.2f}x)"
        )


if __name__ == "__main__":
    main()
