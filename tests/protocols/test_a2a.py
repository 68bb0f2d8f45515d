"""a2a (Agent2Agent JSON-RPC over SSE, issue 31): the synthesized ``message/stream`` answer replayed
to httpx-sse under several chunkings folds to the agent's text; every event answers the one
request id (no 'answered twice' as MCP would say); a JSON-RPC error event and error body carry the
request's id and code; a status message, a direct message and artifacts with ``append`` read right."""

from __future__ import annotations

import json
from typing import Any

import httpx
import httpx_sse
import pytest

import ssemock
from ssemock import Cassette, framing
from ssemock.framing.sse import ServerSentEvent
from ssemock.protocols import a2a
from ssemock.protocols.base import StreamError

TEXT = "Das Wetter in Berlin: sonnig ☀️, 21 °C."


def _synth() -> Cassette:
    return a2a.synthesize(TEXT, chunk_size=5, seed=3)


def _read(chunking: str) -> list[dict[str, Any]]:
    cassette = _synth()
    [x] = cassette.interactions
    with ssemock.replay(cassette, chunking=chunking), httpx.Client() as client:
        with httpx_sse.connect_sse(client, "POST", x.request.url, content=x.request.body) as source:
            return [json.loads(e.data) for e in source.iter_sse()]


@pytest.mark.parametrize("chunking", ["as_recorded", "bytewise", "mid_utf8"])
def test_the_client_reads_what_the_fold_reads(chunking: str) -> None:
    messages = _read(chunking)
    assert {m["id"] for m in messages} == {json.loads(_synth().interactions[0].request.body)["id"]}
    client_text = "".join(
        p["text"]
        for m in messages
        if m["result"]["kind"] == "artifact-update"
        for p in m["result"]["artifact"]["parts"]
    )
    [x] = _synth().interactions
    events = framing.decode(x.response.body, "text/event-stream")
    assert ssemock.detect_protocol(events, url=x.request.url, content_type="text/event-stream") == "a2a"
    result = ssemock.accumulate(events, "a2a")
    assert (result.text, result.finish_reason, result.complete) == (client_text, "completed", True)
    assert result.text == TEXT


def _event(result: dict[str, Any] | None = None, error: dict[str, Any] | None = None) -> ServerSentEvent:
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": "req-1"}
    body.update({"error": error} if error else {"result": result})
    return ServerSentEvent(data=json.dumps(body))


def test_status_messages_direct_messages_and_artifacts() -> None:
    agent = {"role": "agent", "kind": "message", "parts": [{"kind": "text", "text": "Looking. "}]}
    user = {"role": "user", "kind": "message", "parts": [{"kind": "text", "text": "not the agent's"}]}
    events = [
        _event({"kind": "task", "id": "t1", "status": {"state": "submitted", "message": user}}),
        _event(
            {
                "kind": "status-update",
                "taskId": "t1",
                "status": {"state": "working", "message": agent},
                "final": False,
            }
        ),
        _event(
            {
                "kind": "artifact-update",
                "taskId": "t1",
                "artifact": {"artifactId": "a", "parts": [{"kind": "text", "text": "Done"}]},
            }
        ),
        _event(
            {
                "kind": "artifact-update",
                "taskId": "t1",
                "append": True,
                "artifact": {
                    "artifactId": "a",
                    "parts": [{"kind": "text", "text": "."}, {"kind": "data", "data": {}}],
                },
            }
        ),
        _event({"kind": "status-update", "taskId": "t1", "status": {"state": "completed"}, "final": True}),
    ]
    assert ssemock.detect_protocol(events) == "a2a"  # JSON-RPC, yet never MCP
    result = ssemock.accumulate(events, "a2a")
    assert (result.id, result.text, result.finish_reason, result.complete) == (
        "t1",
        "Looking. Done.",
        "completed",
        True,
    )
    reply = ssemock.accumulate([_event({"kind": "message", **agent})], "a2a")
    assert (reply.text, reply.complete) == ("Looking. ", True)


def test_the_error_event_and_the_http_error_body_are_json_rpc_errors() -> None:
    error = a2a.PROTOCOL.error_event(
        StreamError(kind="server_error", message="agent crashed", request_id="req-1")
    )
    [event] = framing.decode(error, "text/event-stream")
    assert json.loads(event.data) == {
        "jsonrpc": "2.0",
        "id": "req-1",
        "error": {"code": -32603, "message": "agent crashed"},
    }
    result = ssemock.accumulate(
        [_event({"kind": "status-update", "status": {"state": "working"}}), event], "a2a"
    )
    assert result.error == {"code": -32603, "message": "agent crashed"} and result.complete
    body = json.loads(a2a.PROTOCOL.http_error(404, None).body)
    assert body == {"jsonrpc": "2.0", "id": None, "error": {"code": -32001, "message": "Task not found"}}


def test_the_fold_refuses_what_is_not_json_rpc() -> None:
    with pytest.raises(ssemock.ProtocolError, match="a2a: event 0: not a JSON-RPC 2.0 message"):
        ssemock.accumulate([ServerSentEvent(data='{"result": {"kind": "task"}}')], "a2a")
