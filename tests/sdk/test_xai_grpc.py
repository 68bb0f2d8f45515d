"""xai-sdk (gRPC only) recorded and replayed (issue 46 item 6): its chat streaming, sync and
async, against a loopback servicer built from its own generated stubs, recorded through
``ssemock proxy`` and replayed by ``ssemock serve`` with the servicer stopped, under every gRPC
wire chunking of the registry; and recorded in-process (``use_cassette``: grpcio's channels
intercepted), replayed in-process with the servicer stopped, and served over the wire. xai-sdk pins packaging<26, below what the dev environment's pipx
needs, so tests/sdk/xai_grpc.py runs in the xai side environment (``bash .ci/side-env xai``; CI
does, SSEMOCK_XAI_PYTHON names another): one subprocess for the whole matrix."""

from __future__ import annotations

from pathlib import Path

from conftest import side_env_python
from grpc_stand_in import run_matrix

KEY = "xai-test-0123456789abcdefghijklmnopqrstuvwxyz"  # the script's fake key


def test_xai_chat_streaming_records_and_replays_sync_and_async_under_every_chunking(tmp_path: Path) -> None:
    live = {"pieces": ["Hel", "lo, ", "wörld", "!"], "content": "Hello, wörld!", "finish": "REASON_STOP"}
    out = run_matrix(
        side_env_python("xai"), "xai_grpc.py", tmp_path, live, "/xai_api.Chat/GetCompletionChunk"
    )
    # the servicer got the SDK's key live and through the proxy; the cassette never holds it
    assert out["seen"] == [f"Bearer {KEY}"] * 6  # live, recorded in-process, through the proxy
    for cassette in (Path(out["cassette"]), tmp_path / "inprocess.json"):
        assert KEY not in cassette.read_text()
