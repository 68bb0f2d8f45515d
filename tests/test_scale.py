"""Scale: many concurrent streams recorded into one cassette and replayed without cross-talk,
xdist workers recording at the same time, memory bounds of record/save/load/replay, and a
stream the client abandons early.

The loopback server here answers ``POST /echo`` with events that carry the request's id, so a
replayed stream that went to the wrong request shows at once.
"""

from __future__ import annotations

import asyncio
import json
import random
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from conftest import run_xdist_inprocess
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import StreamingResponse
from starlette.routing import Route
from waiting import until

import ssemock
from ssemock.commands.loopback import running

EVENTS = 6


class Gate:
    """Holds streams until ``want`` of them are open at once (or a deadline passes): proves the
    recorded streams really overlapped."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.open = 0
        self.peak = 0
        self.active = 0  # streams whose generator is still running (for the abandon test)
        self.sent = 0


GATE = Gate()


async def _echo(request: Request) -> StreamingResponse:
    doc = json.loads(await request.body() or b"{}")
    rid, want, n = str(doc.get("id")), int(doc.get("gate", 0)), int(doc.get("n", EVENTS))
    with GATE.lock:
        GATE.open += 1
        GATE.peak = max(GATE.peak, GATE.open)

    async def body() -> AsyncIterator[bytes]:
        try:
            deadline = time.monotonic() + 5
            while want and GATE.open < want and time.monotonic() < deadline:
                await asyncio.sleep(0.002)
            for i in range(n):
                yield f'data: {{"id": "{rid}", "i": {i}}}\n\n'.encode()
                await asyncio.sleep(0.003)
            yield b"data: [DONE]\n\n"
        finally:
            with GATE.lock:
                GATE.open -= 1

    return StreamingResponse(body(), media_type="text/event-stream")


async def _forever(request: Request) -> StreamingResponse:
    """An endless stream, one event every 5 ms, until the client goes away."""

    async def body() -> AsyncIterator[bytes]:
        with GATE.lock:
            GATE.active += 1
        try:
            i = 0
            while True:
                yield f"data: {i}\n\n".encode()
                with GATE.lock:
                    GATE.sent += 1
                i += 1
                await asyncio.sleep(0.005)
        finally:
            with GATE.lock:
                GATE.active -= 1

    return StreamingResponse(body(), media_type="text/event-stream")


APP = Starlette(routes=[Route("/echo", _echo, methods=["POST"]), Route("/forever", _forever)])


@pytest.fixture(scope="module")
def echo() -> Iterator[str]:
    with running(APP) as url:
        yield url


def _ids(body: bytes) -> set[str]:
    return {json.loads(e.data)["id"] for e in ssemock.sse.decode([body]) if e.data != "[DONE]"}


def _check_own(rid: str, body: bytes) -> None:
    events = ssemock.sse.decode([body])
    assert [e.data for e in events][-1] == "[DONE]", (rid, body[-60:])
    assert _ids(body) == {rid}, f"cross-talk: {rid} got events of {_ids(body) - {rid}}"
    assert len(events) == EVENTS + 1


def _check_cassette(path: Path, ids: list[str]) -> None:
    cassette = ssemock.Cassette.load(path)
    assert len(cassette.interactions) == len(ids)
    seen = set()
    for x in cassette.interactions:
        rid = x.request.json()["id"]
        seen.add(rid)
        assert x.response.complete
        _check_own(rid, x.response.body)
    assert seen == set(ids)


# -- concurrency -------------------------------------------------------------------------------


async def _astream(client: Any, url: str, rid: str, gate: int = 0) -> bytes:
    async with client.stream("POST", f"{url}/echo", json={"id": rid, "gate": gate}) as r:
        return b"".join([c async for c in r.aiter_raw()])


@pytest.mark.asyncio
async def test_50_concurrent_async_streams_record_into_one_cassette_then_replay_without_cross_talk(
    tmp_path: Path, echo: str
) -> None:
    path = tmp_path / "async50.json"
    ids = [f"req-{i:02d}" for i in range(50)]
    GATE.peak = 0
    with ssemock.use_cassette(path, record_mode="all"):
        async with httpx.AsyncClient(timeout=30) as c1, httpx2.AsyncClient(timeout=30) as c2:
            clients = [c1, c2]
            live = await asyncio.gather(
                *(_astream(clients[i % 2], echo, rid, gate=50) for i, rid in enumerate(ids))
            )
    assert GATE.peak == 50, f"only {GATE.peak} streams were open at once while recording"
    for rid, body in zip(ids, live):
        _check_own(rid, body)
    _check_cassette(path, ids)

    # replay (the network is blocked), in another order, each request on the other stack than it
    # was recorded with
    order = ids[:]
    random.Random(3).shuffle(order)
    for chunking in ("as_recorded", "bytewise"):
        with ssemock.use_cassette(path, chunking=chunking) as player:
            async with httpx.AsyncClient() as c1, httpx2.AsyncClient() as c2:
                clients = [c2, c1]
                got = await asyncio.gather(
                    *(_astream(clients[ids.index(rid) % 2], echo, rid, gate=50) for rid in order)
                )
        assert len(player.plays) == 50 and not player.unplayed()
        for rid, body in zip(order, got):
            _check_own(rid, body)
            assert body == live[ids.index(rid)]


def _sync_stream(lib: Any, url: str, rid: str, gate: int = 0) -> bytes:
    with lib.Client(timeout=30) as client:
        with client.stream("POST", f"{url}/echo", json={"id": rid, "gate": gate}) as r:
            return b"".join(r.iter_raw())


def test_8_threads_record_into_one_cassette_then_replay_without_cross_talk(tmp_path: Path, echo: str) -> None:
    path = tmp_path / "threads.json"
    ids = [f"thread-{i}" for i in range(8)]
    libs = [httpx, httpx2]
    GATE.peak = 0
    with ssemock.use_cassette(path, record_mode="all"):
        with ThreadPoolExecutor(8) as pool:
            live = list(pool.map(lambda k: _sync_stream(libs[k % 2], echo, ids[k], gate=8), range(8)))
    assert GATE.peak == 8, f"only {GATE.peak} streams were open at once while recording"
    for rid, body in zip(ids, live):
        _check_own(rid, body)
    _check_cassette(path, ids)

    for round_ in range(2):  # replay from 8 threads, twice, reversed order the second time
        order = ids if round_ == 0 else ids[::-1]
        with ssemock.use_cassette(path, chunking="mid_line") as player:
            with ThreadPoolExecutor(8) as pool:
                got = list(
                    pool.map(lambda rid: _sync_stream(libs[ids.index(rid) % 2 - 1], echo, rid, gate=8), order)
                )
        assert len(player.plays) == 8 and not player.unplayed()
        for rid, body in zip(order, got):
            assert body == live[ids.index(rid)]


def test_rerecording_all_from_threads_replaces_each_interaction_once(tmp_path: Path, echo: str) -> None:
    """record_mode="all" over an existing cassette: the 8 re-recorded requests replace their old
    versions (none duplicated, none lost), an interaction not re-recorded is kept."""
    path = tmp_path / "again.json"
    ids = [f"t{i}" for i in range(8)]
    with ssemock.use_cassette(path, record_mode="all"):
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda rid: _sync_stream(httpx, echo, rid), ids + ["kept"]))
    with ssemock.use_cassette(path, record_mode="all"):
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda rid: _sync_stream(httpx2, echo, rid), ids))
    _check_cassette(path, ids + ["kept"])


XDIST_TEST = """
import os, httpx, pytest

URL = os.environ["SSEMOCK_SCALE_SERVER"]

@pytest.mark.ssemock
@pytest.mark.parametrize("who", ["left", "right"])
def test_record(who):
    with httpx.Client(timeout=30) as client:
        with client.stream("POST", URL + "/echo", json={"id": who, "gate": 2}) as r:
            body = b"".join(r.iter_raw())
    assert body.count(b'"' + who.encode() + b'"') == 6, body
    assert body.endswith(b"data: [DONE]\\n\\n")
"""


def test_two_xdist_workers_record_different_cassettes_at_the_same_time(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_pair=XDIST_TEST)
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    GATE.peak = 0
    with running(APP) as url:
        pytester._monkeypatch.setenv("SSEMOCK_SCALE_SERVER", url)
        first = run_xdist_inprocess(pytester, "-n", "2", "--ssemock-record-mode=once")
        first.assert_outcomes(passed=2)
    assert GATE.peak == 2, "the two workers did not record at the same time"
    folder = pytester.path / "cassettes" / "test_pair"
    files = sorted(p.name for p in folder.iterdir())
    assert files == ["test_record[left].json", "test_record[right].json"], files
    for who in ("left", "right"):
        (x,) = ssemock.Cassette.load(folder / f"test_record[{who}].json").interactions
        _check_own(who, x.response.body)
    # the server is gone: both replay offline (in process: a third xdist start-up would cost ~6 s)
    pytester.runpytest_inprocess("-p", "no:xdist").assert_outcomes(passed=2)
    assert sorted(p.name for p in folder.iterdir()) == files  # no temp files left behind


# -- a stream the client abandons -------------------------------------------------------------


def _settle(seconds: float = 0.15) -> None:
    time.sleep(seconds)


@pytest.mark.parametrize("lib", [httpx, httpx2], ids=["httpx", "httpx2"])
def test_abandoned_stream_stops_growing_when_the_client_closes(tmp_path: Path, echo: str, lib: Any) -> None:
    path = tmp_path / "abandon.json"
    with ssemock.use_cassette(path, record_mode="all", drain_on_close=False) as player:
        with lib.Client() as client:
            with client.stream("GET", f"{echo}/forever") as r:
                got = []
                for chunk in r.iter_raw():
                    got.append(chunk)
                    if len(got) == 3:
                        break
                (recorder,) = player.recorders
                # not closed yet, but nobody reads: the recorder takes nothing more
                size = recorder._size
                _settle()
                assert recorder._size == size
            assert recorder.ended and not recorder.complete  # closed by the client
            size = recorder._size
            _settle()
            assert recorder._size == size
            until(lambda: GATE.active == 0, "the server's stop streaming to a closed client")
    (x,) = ssemock.Cassette.load(path).interactions
    assert x.response.complete is False and x.response.error is None
    assert x.response.body == b"".join(got)


@pytest.mark.asyncio
@pytest.mark.parametrize("lib", [httpx, httpx2], ids=["httpx", "httpx2"])
async def test_abandoned_async_stream_stops_growing_when_the_client_closes(
    tmp_path: Path, echo: str, lib: Any
) -> None:
    path = tmp_path / "abandon.json"
    with ssemock.use_cassette(path, record_mode="all", drain_on_close=False) as player:
        async with lib.AsyncClient() as client:
            async with client.stream("GET", f"{echo}/forever") as r:
                got = []
                async for chunk in r.aiter_raw():
                    got.append(chunk)
                    if len(got) == 3:
                        break
            (recorder,) = player.recorders
            assert recorder.ended and not recorder.complete
            size = recorder._size
            await asyncio.sleep(0.15)
            assert recorder._size == size
    (x,) = ssemock.Cassette.load(path).interactions
    assert x.response.body == b"".join(got)


# -- memory -------------------------------------------------------------------------------------

MEMORY_MB = 30
SLACK_MB = 12  # interpreter and allocator noise around a phase

MEMORY_SCRIPT = r"""
import gc, json, re, sys
from pathlib import Path
import asyncio, httpx
from starlette.applications import Starlette
from starlette.responses import StreamingResponse
from starlette.routing import Route
import ssemock
from ssemock.commands.loopback import running

SIZE, PATH, MODE = int(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
EVENT = b"data: " + b"x" * 16376 + b"\n\n"

def status(field):
    with open("/proc/self/status") as fh:
        return int(re.search(rf"^{field}:\s+(\d+) kB", fh.read(), re.M).group(1)) * 1024

def reset():
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")

async def stream(request):
    count = int(request.query_params.get("events", SIZE // len(EVENT)))
    async def body():
        for _ in range(count):
            yield EVENT
    return StreamingResponse(body(), media_type="text/event-stream")

out = {}
start = [0]
def begin():
    gc.collect(); reset(); start[0] = status("VmRSS")
def phase(name):
    out[name] = status("VmHWM") - start[0]

if MODE == "record":
    with running(Starlette(routes=[Route("/big", stream)])) as url, httpx.Client(timeout=60) as client:
        client.get(url + "/big?events=3")  # warm the server and client paths up outside the measure
        begin(); base = start[0]
        with ssemock.use_cassette(PATH, record_mode="all"):
            with client.stream("GET", url + "/big") as r:
                for _ in r.iter_raw():
                    pass
            phase("record")
        out["record_save"] = status("VmHWM") - base
else:
    begin(); base = start[0]
    cassette = ssemock.Cassette.load(PATH)
    phase("load")
    with ssemock.replay(cassette), httpx.Client() as client:
        with client.stream("GET", cassette.interactions[0].request.url) as r:
            n = sum(len(c) for c in r.iter_raw())
    assert n == len(cassette.interactions[0].response.body)
    out["load_replay"] = status("VmHWM") - base
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def memory(tmp_path_factory: pytest.TempPathFactory) -> dict[str, float]:
    """Peak RSS (VmHWM after a reset) of recording+saving, then loading+replaying a 30 MB stream,
    each in a fresh subprocess. tracemalloc is not used: orjson (yyjson) reserves ~13x its input
    that it never touches, which tracemalloc counts and RSS rightly does not."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
    except OSError:
        pytest.skip("needs Linux /proc/self/clear_refs to reset the RSS peak")
    path = tmp_path_factory.mktemp("memory") / "big.json"
    size = MEMORY_MB * 1_000_000 // 16384 * 16384
    out: dict[str, float] = {"size": size}
    for mode in ("record", "replay"):
        proc = subprocess.run(
            [sys.executable, "-c", MEMORY_SCRIPT, str(size), str(path), mode],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 0, proc.stderr
        out.update(json.loads(proc.stdout.strip().splitlines()[-1]))
    return out


def _bound(memory: dict[str, float], factor: float) -> float:
    return factor * memory["size"] + SLACK_MB * 1e6


def test_memory_streaming_while_recording_holds_the_body_once(memory: dict[str, float]) -> None:
    assert memory["record"] < _bound(memory, 1.5), f"{memory['record'] / memory['size']:.2f}x the body"


def test_memory_record_and_save_peak_under_3x(memory: dict[str, float]) -> None:
    assert memory["record_save"] < _bound(memory, 3.0), (
        f"{memory['record_save'] / memory['size']:.2f}x the body"
    )


def test_memory_load_and_replay_peak_under_3x(memory: dict[str, float]) -> None:
    assert memory["load_replay"] < _bound(memory, 3.0), (
        f"{memory['load_replay'] / memory['size']:.2f}x the body"
    )


def test_memory_loading_a_large_cassette_holds_its_body_about_twice(memory: dict[str, float]) -> None:
    """Bodies are read apart from the rest of the file (plain orjson.loads of the file alone peaks
    at ~3x), so load + replay stays near 2x; a regression to whole-file parsing fails here."""
    assert memory["load_replay"] < _bound(memory, 2.5), (
        f"{memory['load_replay'] / memory['size']:.2f}x the body"
    )
