"""One gRPC SDK's record-and-replay matrix against a loopback stand-in servicer, shared by the side
environments' scripts (tests/sdk/xai_grpc.py, vertex_grpc.py: a GAPIC client or an SDK with its
own stubs) and their tests. The script half (``matrix``) runs the client sync and async live,
recorded in-process (``ssemock.use_cassette``: grpcio's channels intercepted) and through ``ssemock
proxy`` (h2c), then with the servicer stopped replayed by ``ssemock serve`` under each gRPC wire
chunking, in-process, and the in-process recording served over the wire. The test half
(``run_matrix``) runs a script in its side environment's Python and checks what every way agrees
on."""

from __future__ import annotations

import asyncio
import json
import subprocess
from collections.abc import Callable, Coroutine
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc

import ssemock
from ssemock.commands.loopback import running
from ssemock.commands.proxy import app as proxy_app
from ssemock.commands.serve import app as serve_app
from ssemock.store.cassette import Cassette
from ssemock.variants.grpc import chunking as grpc_chunking

ROOT = Path(__file__).resolve().parents[2]
Seen = dict[str, Any]  # what the client saw of one call


def matrix(
    folder: Path,
    chunkings: list[str],
    name: str,
    add: Callable[[grpc.Server], None],
    sync: Callable[[str], Seen],
    aio: Callable[[str], Coroutine[Any, Any, Seen]],
) -> dict[str, Any]:
    """Every way of the client's ``sync`` and ``aio`` calls (given a host:port) against the servicer
    ``add`` puts on a loopback server: the proxy's cassette is ``folder/NAME.json``, the in-process
    one ``folder/inprocess.json``."""

    def both(target: str) -> dict[str, Seen]:
        return {"sync": sync(target), "async": asyncio.run(aio(target))}

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    add(server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    target = f"127.0.0.1:{port}"
    try:
        live = both(target)
        with ssemock.use_cassette(folder / "inprocess.json", record_mode="all"):  # grpcio intercepted
            recorded = both(target)
        with running(proxy_app(f"http://127.0.0.1:{port}", cassette_dir=folder, cassette=name)) as url:
            proxied = both(url.removeprefix("http://"))
    finally:
        server.stop(None)
    replays = {}
    for chunking in chunkings:
        with running(serve_app(folder / f"{name}.json", chunking=chunking)) as url:
            replays[chunking] = both(url.removeprefix("http://"))
    with ssemock.use_cassette(folder / "inprocess.json", record_mode="none"):  # the servicer is stopped
        inprocess = both(target)
    with running(serve_app(folder / "inprocess.json", chunking="mid_header")) as url:
        served_inprocess = both(url.removeprefix("http://"))  # an in-process recording, over the wire
    return {
        "live": live,
        "recorded": recorded,
        "inprocess": inprocess,
        "served_inprocess": served_inprocess,
        "proxied": proxied,
        "replays": replays,
        "cassette": str(folder / f"{name}.json"),
    }


def run_matrix(python: Path, script: str, folder: Path, live: Seen, method: str) -> dict[str, Any]:
    """Runs tests/sdk/SCRIPT (printing ``matrix``'s JSON line) in ``python`` under every chunking of
    the registry and checks it: the client saw ``live`` sync and async every way, and the proxy's
    cassette holds the two calls of ``method``, a message a piece of ``live``, OK. Returns the line."""
    chunkings = grpc_chunking.names()
    done = subprocess.run(
        [str(python), str(Path(__file__).with_name(script)), str(folder), ",".join(chunkings)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["live"] == {"sync": live, "async": live}
    assert out["proxied"] == out["recorded"] == out["live"]
    assert (
        out["inprocess"] == out["served_inprocess"] == out["live"]
    )  # recorded in-process: replayed both ways
    assert set(out["replays"]) == set(chunkings)
    for chunking, replay in out["replays"].items():
        assert replay == out["live"], chunking
    calls = [x.grpc for x in Cassette.load(out["cassette"]).interactions]
    assert [c.method if c else None for c in calls] == [method] * 2
    assert all(
        c is not None and len(c.received()) == len(live["pieces"]) and c.status.code == "OK" for c in calls
    )
    return out
