"""What exploring costs, and what one more variant of a fixed matrix costs, under pytest.

    python bench/explore.py [--examples N] [--bugs]

Real ``pytest`` subprocesses in a temporary folder; a conftest times each test item from the
start to the end of its ``pytest_runtest_protocol`` (setup, call, teardown, reports), in CPU time
of the pytest process. The client: the official ``openai`` SDK (one ``openai.OpenAI`` over one
``httpx.Client`` built at import) streaming a 20-event chat completion and checking its text.
Every figure is a ratio or a difference against a baseline measured in the same run.

1. Explore (issue 26): one item ``@pytest.mark.ssemock("chat", explore=N)`` vs one item that
   runs the same client N times in a loop under ``@pytest.mark.ssemock("chat")`` (the client's
   time, ssemock's replay included) and vs N loops through ``respx`` (the client's time without
   ssemock). ssemock's own cost per explored example = (explore - respx loop) / N.
   Target: <= 2 ms per example (1,000 examples in under 10 s).
2. Matrix: ``chunking="all"`` x the network set and the conforming transforms the openai SDK
   decodes (7 x 9 items; the SDK crashes on data-less ``retry:``/``meta`` blocks, which
   ``transform="all"`` would add: failures, not timings) vs the same test unmarked by a matrix: the median item of each, the difference is
   what one more variant costs beyond the client. Target: <= 5 ms per variant.
With ``--bugs``: examples to the first failure on each bug class of tests/test_bug_classes.py,
over ten seeds (the numbers the explore guide quotes).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(Path(__file__).resolve().parent)]

from decode import build_events  # noqa: E402

import ssemock  # noqa: E402
from ssemock import synth  # noqa: E402

CONFTEST = """
import json, os, time
import pytest

_times = {}


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    start = time.process_time()
    yield
    _times[item.nodeid] = time.process_time() - start


def pytest_sessionfinish(session):
    with open(os.environ["BENCH_TIMES"], "w") as fh:
        json.dump(_times, fh)
"""

HEADER = """
import httpx, openai, pytest, respx

EXPECTED = {expected!r}
CHUNKS = {chunks!r}
client = openai.OpenAI(api_key="sk-test-bench", base_url="https://api.openai.com/v1", max_retries=0,
                       http_client=httpx.Client())


def chat():
    stream = client.chat.completions.create(model="gpt-4o-mini", messages=[{{"role": "user", "content": "hi"}}],
                                            stream=True)
    return "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
"""

EXPLORE = """
@pytest.mark.ssemock("chat", explore={n}, match_on=["method", "path"])
def test_explore(ssemock):
    assert chat() == EXPECTED


@pytest.mark.ssemock("chat", match_on=["method", "path"], allow_playback_repeats=True)
def test_loop(ssemock):
    for _ in range({n}):
        assert chat() == EXPECTED


def test_respx_loop():
    with respx.mock:
        respx.post("https://api.openai.com/v1/chat/completions").mock(side_effect=lambda request: httpx.Response(
            200, headers={{"content-type": "text/event-stream"}}, content=iter(CHUNKS)))
        for _ in range({n}):
            assert chat() == EXPECTED
"""

MATRIX = """
@pytest.mark.ssemock("chat", chunking="all", transform=["network", "crlf", "cr", "mixed", "no_space", "ids"],
                     match_on=["method", "path"])
def test_matrix(ssemock):
    assert chat() == EXPECTED


@pytest.mark.ssemock("chat", match_on=["method", "path"])
@pytest.mark.parametrize("i", range(40))
def test_single(ssemock, i):
    assert chat() == EXPECTED
"""


def _session(folder: Path, name: str, source: str, *args: str) -> dict[str, float]:
    (folder / f"{name}.py").write_text(textwrap.dedent(source))
    times = folder / f"{name}.json"
    env = {**os.environ, "BENCH_TIMES": str(times), "PYTHONPATH": str(ROOT / "src"), "CI": ""}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:randomly",
            "-p",
            "no:cacheprovider",
            f"{name}.py",
            *args,
        ],
        cwd=folder,
        env=env,
        check=False,
        capture_output=True,
        text=True,
    )
    if done.returncode:
        raise SystemExit(f"the {name} session failed:\n{done.stdout[-3000:]}")
    return dict(json.loads(times.read_text()))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--examples", type=int, default=1000)
    parser.add_argument("--bugs", action="store_true")
    args = parser.parse_args(argv)
    cassette = ssemock.Cassette()
    cassette.add(
        "POST",
        "https://api.openai.com/v1/chat/completions",
        build_events(19),
        headers={"content-type": "text/event-stream"},
    )
    response = cassette.interactions[0].response
    events = response.body.count(b"\n\n")
    expected = ssemock.accumulate(ssemock.sse.decode(response.chunks), protocol="openai.chat").text
    n = args.examples
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "conftest.py").write_text(CONFTEST)
        (folder / "pytest.ini").write_text("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
        for name in ("test_explore", "test_matrix"):
            (folder / "cassettes" / name).mkdir(parents=True)
        header = HEADER.format(expected=expected, chunks=list(response.chunks))
        for name in ("test_explore", "test_loop"):
            cassette.save(folder / "cassettes" / "test_explore" / "chat.json")
        cassette.save(folder / "cassettes" / "test_matrix" / "chat.json")
        got = _session(folder, "test_explore", header + EXPLORE.format(n=n))
        explore, loop, plain = (
            got[f"test_explore.py::{t}"] for t in ("test_explore", "test_loop", "test_respx_loop")
        )
        print(
            f"1. explore, {n} examples of a {events}-event OpenAI stream through the openai SDK (CPU time):"
        )
        print(f"   explore item        {explore:7.2f} s   {explore / n * 1e3:6.2f} ms per example")
        print(
            f"   ssemock loop        {loop:7.2f} s   {loop / n * 1e3:6.2f} ms per run (the client + replay)"
        )
        print(f"   respx loop          {plain:7.2f} s   {plain / n * 1e3:6.2f} ms per run (the client alone)")
        own = (explore - plain) / n * 1e3
        print(
            f"   ssemock's own cost per explored example: {own:.2f} ms beyond the client "
            f"({(explore - loop) / n * 1e3:.2f} ms beyond a replay), {explore / plain:.2f}x the client's time; "
            f"target <= 2 ms: {'PASS' if own <= 2 else 'MISS'}"
        )
        got = _session(folder, "test_matrix", header + MATRIX)
        matrix = [t for k, t in got.items() if "test_matrix[" in k]
        single = [t for k, t in got.items() if "test_single[" in k]
        m, s = statistics.median(matrix), statistics.median(single)
        print(
            f"2. fixed matrix: {len(matrix)} items (chunking x transform), median {m * 1e3:.2f} ms per item; "
            f"the same test without a matrix, median {s * 1e3:.2f} ms"
        )
        print(
            f"   one more variant costs {m * 1e3:.2f} ms of pytest time, {(m - s) * 1e3:.2f} ms beyond an "
            f"unparametrized marked test ({m / s:.2f}x); target <= 5 ms: {'PASS' if m * 1e3 <= 5 else 'MISS'}"
        )
    if args.bugs:
        _bugs()
    return 0


def _bugs() -> None:
    sys.path.insert(0, str(ROOT / "tests"))
    import test_bug_classes as t

    rows = dict(t.BUGS)
    rows["CR at a 64-byte buffer end (the matrix misses it)"] = (
        lambda: synth.anthropic_messages("Buffers end where they end.", seed=0),
        t._buffered_64,
        None,
    )
    print("3. examples to the first failure (explore, 200 examples, every transform), seeds 0-9:")
    for name, (make, client, fault) in rows.items():
        found = [
            f.examples if f else None for f in (t._explore(make(), client, fault, seed=s) for s in range(10))
        ]
        hits = [x for x in found if x]
        print(
            f"   {name:50s} found {len(hits)}/10, median {statistics.median(hits) if hits else '-'}, "
            f"most {max(hits) if hits else '-'}"
        )


if __name__ == "__main__":
    raise SystemExit(main())
