"""xai-sdk (gRPC only) recorded and replayed (issue 46 item 6): its chat streaming, sync and
async, against a loopback servicer built from its own generated stubs, recorded through
``ssemock proxy`` and replayed by ``ssemock serve`` with the servicer stopped, under every gRPC
wire chunking of the registry; and recorded in-process (``use_cassette``: grpcio's channels
intercepted), replayed in-process with the servicer stopped, and served over the wire. xai-sdk pins packaging<26, below what the dev environment's pipx
needs, so tests/sdk/xai_grpc.py runs in the xai side environment (``bash .ci/side-env xai``; CI
does, SSEMOCK_XAI_PYTHON names another): one subprocess for the whole matrix."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from conftest import side_env_python

from ssemock.store.cassette import Cassette
from ssemock.variants.grpc import chunking as grpc_chunking

ROOT = Path(__file__).resolve().parents[2]
KEY = "xai-test-0123456789abcdefghijklmnopqrstuvwxyz"  # the script's fake key


def test_xai_chat_streaming_records_and_replays_sync_and_async_under_every_chunking(tmp_path: Path) -> None:
    python = side_env_python("xai")
    chunkings = grpc_chunking.names()
    done = subprocess.run(
        [str(python), str(Path(__file__).with_name("xai_grpc.py")), str(tmp_path), ",".join(chunkings)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    live = out["live"]
    assert (
        live["sync"]
        == live["async"]
        == {
            "pieces": ["Hel", "lo, ", "wörld", "!"],
            "content": "Hello, wörld!",
            "finish": "REASON_STOP",
        }
    )
    assert out["proxied"] == out["recorded"] == live
    assert out["inprocess"] == out["served_inprocess"] == live  # recorded in-process: replayed both ways
    assert set(out["replays"]) == set(chunkings)
    for chunking, replay in out["replays"].items():
        assert replay == live, chunking
    # the servicer got the SDK's key live and through the proxy; the cassette never holds it
    assert out["seen"] == [f"Bearer {KEY}"] * 6  # live, recorded in-process, through the proxy
    for cassette in (Path(out["cassette"]), tmp_path / "inprocess.json"):
        assert KEY not in cassette.read_text()
    calls = [x.grpc for x in Cassette.load(out["cassette"]).interactions]
    assert [c.method if c else None for c in calls] == ["/xai_api.Chat/GetCompletionChunk"] * 2
    assert all(c is not None and len(c.received()) == 4 and c.status.code == "OK" for c in calls)
