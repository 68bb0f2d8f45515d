"""Vertex AI's GAPIC client recorded and replayed (issue 46 item 6):
``PredictionServiceClient.stream_generate_content`` and the async client's, on insecure channels
to a loopback servicer (grpcio's generic handlers with the GAPIC's own message types), recorded
through ``ssemock proxy`` and replayed by ``ssemock serve`` with the servicer stopped, under
every gRPC wire chunking; and recorded in-process (``use_cassette``), replayed in-process with
the servicer stopped, and served over the wire. google-cloud-aiplatform 2.7.0 pins google-genai
below the dev environment's, so tests/sdk/vertex_grpc.py runs in the vertex side environment (``bash
.ci/side-env vertex``; CI does, SSEMOCK_VERTEX_PYTHON names another): one subprocess for the
whole matrix."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from conftest import side_env_python

from ssemock.store.cassette import Cassette
from ssemock.variants.grpc import chunking as grpc_chunking

ROOT = Path(__file__).resolve().parents[2]
METHOD = "/google.cloud.aiplatform.v1.PredictionService/StreamGenerateContent"


def test_gapic_stream_generate_content_records_and_replays_sync_and_async_under_every_chunking(
    tmp_path: Path,
) -> None:
    python = side_env_python("vertex")
    chunkings = grpc_chunking.names()
    done = subprocess.run(
        [str(python), str(Path(__file__).with_name("vertex_grpc.py")), str(tmp_path), ",".join(chunkings)],
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
            "pieces": ["Guten ", "Tag, ", "Wörld", "!"],
            "finish": ["FINISH_REASON_UNSPECIFIED"] * 3 + ["STOP"],
            "model_version": "gemini-test-001",
        }
    )
    assert out["proxied"] == out["recorded"] == live
    assert out["inprocess"] == out["served_inprocess"] == live  # recorded in-process: replayed both ways
    assert set(out["replays"]) == set(chunkings)
    for chunking, replay in out["replays"].items():
        assert replay == live, chunking
    calls = [x.grpc for x in Cassette.load(out["cassette"]).interactions]
    assert [c.method if c else None for c in calls] == [METHOD] * 2
    assert all(c is not None and len(c.received()) == 4 and c.status.code == "OK" for c in calls)
