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

from pathlib import Path

from conftest import side_env_python
from grpc_stand_in import run_matrix

METHOD = "/google.cloud.aiplatform.v1.PredictionService/StreamGenerateContent"


def test_gapic_stream_generate_content_records_and_replays_sync_and_async_under_every_chunking(
    tmp_path: Path,
) -> None:
    live = {
        "pieces": ["Guten ", "Tag, ", "Wörld", "!"],
        "finish": ["FINISH_REASON_UNSPECIFIED"] * 3 + ["STOP"],
        "model_version": "gemini-test-001",
    }
    run_matrix(side_env_python("vertex"), "vertex_grpc.py", tmp_path, live, METHOD)
