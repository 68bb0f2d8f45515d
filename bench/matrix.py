"""The cost of the full chunking matrix on a 20-event cassette.

    python bench/matrix.py

A 20-event OpenAI chat stream (19 chunks + ``[DONE]``, bench/decode.py's events) is replayed
under every strategy of ``ssemock.chunking.ALL`` through what a user's test runs:

* in process: the real openai SDK (httpx2) consuming the stream and joining the text, plus the
  fixture's reference expectation (``player.expected.text``), per chunking; and ssemock's own
  share of that: the same replay read as raw chunks by an httpx2 client, plus the expectation;
* under pytest: a test marked ``@pytest.mark.ssemock(chunking="all")`` (7 runs) vs the same test
  unparametrized (1 run), each in a fresh ``pytest`` subprocess; the difference / 6 is what one
  more chunking costs a suite.

Then the 1x/10x/100x curve: ssemock's share of the whole matrix on 20/200/2000-event
cassettes, time per event (bytewise dominates: every byte becomes a chunk through httpx2).
"""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[1] / "src"), str(Path(__file__).resolve().parent)]

import httpx2  # noqa: E402
import openai  # noqa: E402
from decode import build_events  # noqa: E402

import ssemock  # noqa: E402

URL = "https://api.openai.com/v1/chat/completions"


def make_cassette(events: int = 20) -> ssemock.Cassette:
    """``events`` SSE events (the last is ``[DONE]``), recorded as one chunk per event."""
    cassette = ssemock.Cassette()
    chunks = build_events(events - 1)
    cassette.add("POST", URL, chunks, times=[0.1 + 0.02 * i for i in range(len(chunks))])
    return cassette


def _client() -> openai.OpenAI:
    return openai.OpenAI(
        api_key="sk-bench-not-a-real-key", base_url="https://api.openai.com/v1", max_retries=0
    )


def one_run(cassette: ssemock.Cassette, strategy: ssemock.chunking.Chunking, client: openai.OpenAI) -> str:
    """What one test of the matrix does: stream through the SDK, compare with the reference."""
    with ssemock.replay(cassette, chunking=strategy) as player:
        stream = client.chat.completions.create(model="gpt-4o-mini", messages=[], stream=True)
        text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
        assert text == player.expected.text
    return text


def one_raw_run(
    cassette: ssemock.Cassette, strategy: ssemock.chunking.Chunking, client: httpx2.Client
) -> str:
    """ssemock's own share of a run: replay to an httpx2 client reading raw chunks, plus the
    reference expectation (decode + accumulate) the fixture compares against."""
    with ssemock.replay(cassette, chunking=strategy) as player:
        with client.stream("POST", URL, json={"model": "gpt-4o-mini", "stream": True}) as r:
            for _ in r.iter_raw():
                pass
        return player.expected.text


def in_process(events: int = 20, repeat: int = 10, sdk: bool = True) -> dict[str, float]:
    """Best seconds per chunking for one run, and the whole matrix (``sdk``: through the
    openai SDK, else ssemock's own share, see one_raw_run)."""
    cassette = make_cassette(events)
    client = _client() if sdk else httpx2.Client()
    run = one_run if sdk else one_raw_run
    out: dict[str, float] = {}
    for _ in range(repeat):  # interleaved rounds
        for strategy in ssemock.chunking.ALL:
            gc.collect()
            start = time.perf_counter()
            run(cassette, strategy, client)  # type: ignore[arg-type]
            out[strategy.name] = min(out.get(strategy.name, float("inf")), time.perf_counter() - start)
    out["matrix"] = sum(out[s.name] for s in ssemock.chunking.ALL)
    out["events"] = events
    out["bytes"] = len(cassette.interactions[0].response.body)
    return out


TEST_FILE = """
import openai, pytest

@pytest.mark.ssemock(cassette={cassette!r}, chunking={chunking!r})
def test_stream(ssemock):
    client = openai.OpenAI(api_key="sk-bench-not-a-real-key", base_url="https://api.openai.com/v1", max_retries=0)
    stream = client.chat.completions.create(model="gpt-4o-mini", messages=[], stream=True)
    text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    ssemock.assert_text(text)
"""


def under_pytest(repeat: int = 2) -> dict[str, float]:
    """Wall seconds of a pytest run with the 7-way matrix and with one chunking (best of ``repeat``)."""
    out: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        cassette = Path(tmp) / "matrix.json"
        make_cassette(20).save(cassette)
        for label, spec in (("one", "as_recorded"), ("all", "all")):
            (Path(tmp) / f"test_{label}.py").write_text(
                textwrap.dedent(TEST_FILE.format(cassette=str(cassette), chunking=spec))
            )
        env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
        for _ in range(repeat):
            for label in ("one", "all"):
                start = time.perf_counter()
                proc = subprocess.run(
                    [
                        sys.executable,
                        "-m",
                        "pytest",
                        "-q",
                        "-p",
                        "no:cacheprovider",
                        "-p",
                        "no:randomly",
                        f"test_{label}.py",
                    ],
                    cwd=tmp,
                    capture_output=True,
                    text=True,
                    env=env,
                    timeout=300,
                )
                took = time.perf_counter() - start
                want = "7 passed" if label == "all" else "1 passed"
                if want not in proc.stdout:
                    raise RuntimeError(f"pytest matrix run failed:\n{proc.stdout}\n{proc.stderr}")
                out[label] = min(out.get(label, float("inf")), took)
    out["per_chunking"] = (out["all"] - out["one"]) / 6
    return out


def curve(sizes: tuple[int, ...] = (20, 200, 2000)) -> dict[int, dict[str, float]]:
    """ssemock's own share of the whole matrix (see one_raw_run) at each size."""
    return {n: in_process(n, repeat=5 if n < 2000 else 2, sdk=False) for n in sizes}


def main() -> None:
    results = curve()
    sdk = in_process(20, repeat=5)
    raw = results[20]
    print(f"in process, {sdk['bytes']:.0f}-byte 20-event cassette, ms per chunking (best of 5):")
    print(f"  {'chunking':<12} {'openai SDK':>10} {'ssemock share':>14}")
    for strategy in ssemock.chunking.ALL:
        print(f"  {strategy.name:<12} {sdk[strategy.name] * 1e3:10.2f} {raw[strategy.name] * 1e3:14.2f}")
    print(
        f"  {'matrix':<12} {sdk['matrix'] * 1e3:10.2f} {raw['matrix'] * 1e3:14.2f}   "
        f"(= {sdk['matrix'] / sdk['as_recorded']:.1f}x one as_recorded run through the SDK)"
    )
    p = under_pytest()
    print(
        f"under pytest (subprocess wall time): 1 run {p['one']:.2f} s, 7-way matrix {p['all']:.2f} s, "
        f"one more chunking costs {p['per_chunking'] * 1e3:.0f} ms"
    )
    print("linearity: whole matrix, ssemock share, us per event")
    for n, c in results.items():
        print(
            f"  {n:>5} events ({c['bytes'] / 1e3:7.1f} KB)  matrix {c['matrix'] * 1e3:8.1f} ms = "
            f"{c['matrix'] * 1e6 / n:8.1f} us/event"
        )


if __name__ == "__main__":
    main()
