"""``ssemock show`` and ``ssemock validate`` on gRPC calls (issue 46): each call's method path,
shape and message count ("7 messages"), the status, metadata and trailers by name, each message;
validate's checks of a call as stored."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ssemock import Cassette
from ssemock.commands.cli import main
from ssemock.store.grpc import GrpcCall, GrpcMessage, GrpcStatus, metadata_headers
from ssemock.store.model import Interaction, Request, Response


def _save(path: Path, status: GrpcStatus, received: int = 6) -> Path:
    messages = [GrpcMessage("send", 0.001, b"\n\x05hello")]
    messages += [GrpcMessage("recv", 0.012 + 0.01 * k, f"delta {k}".encode()) for k in range(received)]
    call = GrpcCall(
        "/xai_api.Chat/GetCompletionChunk", "unary_stream", messages, [("x-trace-bin", "AAE")], status
    )
    response = Response(200, metadata_headers([("x-served-by", "b")]))
    request = Request("POST", "http://127.0.0.1:50051/xai_api.Chat/GetCompletionChunk")
    return Cassette([Interaction(request, response, grpc=call)]).save(path)


def test_show_lists_each_call_s_method_and_message_count(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _save(tmp_path / "c.json", GrpcStatus("OK", "", 0.08))
    assert main(["show", str(path)]) == 0
    out = capsys.readouterr().out
    assert "#0  gRPC /xai_api.Chat/GetCompletionChunk  unary_stream" in out
    assert "7 messages (1 sent, 6 received), first response at 12.0 ms; status OK at 80.0 ms" in out
    assert "metadata: x-served-by; trailers: x-trace-bin" in out
    assert "12.0 ms <-       7 B  'delta 0'" in out
    assert main(["show", "--json", str(path)]) == 0
    shown = json.loads(capsys.readouterr().out)["shown"][0]
    assert (shown["method"], shown["messages"], shown["received"]) == (
        "/xai_api.Chat/GetCompletionChunk",
        7,
        6,
    )


def test_validate_counts_messages_and_says_a_failed_status_and_a_missing_response(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ok = _save(tmp_path / "ok.json", GrpcStatus("OK", "", 0.08))
    assert main(["validate", str(ok)]) == 0
    assert "1 interaction, 7 events" in capsys.readouterr().out
    failed = _save(tmp_path / "failed.json", GrpcStatus("UNAVAILABLE", "upstream gone", 0.02), received=1)
    assert main(["validate", "-v", str(failed)]) == 0
    assert "the call ended with UNAVAILABLE: 'upstream gone'" in capsys.readouterr().out
    cassette = Cassette.load(ok)
    call = cassette.interactions[0].grpc
    assert call is not None
    call.kind, call.messages = "unary_unary", call.messages[:1]
    empty = cassette.save(tmp_path / "empty.json")
    assert main(["validate", str(empty)]) != 0
    assert "a unary_unary call that ended OK has no response message" in capsys.readouterr().out
