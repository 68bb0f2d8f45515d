"""a2a (Agent2Agent over SSE, issues 31 and 45): the synthesized ``message/stream`` answer replayed
to httpx-sse under several chunkings folds to the agent's text; every event answers the one
request id (no 'answered twice' as MCP would say); a JSON-RPC error event and error body carry the
request's id and code; a status message, a direct message and artifacts with ``append`` read right.
A2A 1.0: a2a-sdk 1.3.0's client against its own server on loopback, over JSON-RPC
(``SendStreamingMessage``, a random id per call) and HTTP+JSON (``POST /message:stream``), and
a subscription to a running task (``SubscribeToTask``, ``POST /tasks/{id}:subscribe``), recorded, then replayed with the server stopped under every chunking; labelled ``a2a`` by
``show`` and ``validate``; the error event fault raises the SDK's error in each binding."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import httpx_sse
import pytest
import uvicorn
from a2a.client import ClientConfig, ClientFactory
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_jsonrpc_routes, create_rest_routes
from a2a.server.tasks import InMemoryTaskStore
from a2a.types import (
    AgentCard,
    SubscribeToTaskRequest,
    TaskState,
)
from a2a.utils.errors import InternalError
from a2a_agent import WAIT, Weather, card, request
from starlette.applications import Starlette
from waiting import until

import ssemock
from ssemock import Cassette, framing
from ssemock.commands.cli import main
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


# --- A2A 1.0 through a2a-sdk 1.3.0 (issue 45 item 3): its own server on loopback, its own client ---

WEATHER = "Looking. Sunny ☀️, 21 °C."
BINDINGS = ("JSONRPC", "HTTP+JSON")


def _card(base: str) -> AgentCard:
    return card(("JSONRPC", f"{base}/rpc"), ("HTTP+JSON", f"{base}/rest"))


def _client(http: httpx.AsyncClient, card: AgentCard, binding: str) -> Any:
    config = ClientConfig(httpx_client=http, supported_protocol_bindings=[binding])
    return ClientFactory(config).create(card)


async def _ask(card: AgentCard, binding: str) -> list[Any]:
    """What a2a-sdk's client yields for one streamed message over ``binding``."""
    async with httpx.AsyncClient() as http:
        client = _client(http, card, binding)
        return [event async for event in client.send_message(request())]


async def _subscribe(card: AgentCard, binding: str, gate: threading.Event) -> list[Any]:
    """A streamed message's task joined by ``subscribe`` (SubscribeToTask, ``/tasks/{id}:subscribe``)
    once it is working: what the subscription yields."""
    async with httpx.AsyncClient() as http:
        client = _client(http, card, binding)
        sent = aiter(client.send_message(request(WAIT, "m-2")))
        task = (await anext(sent)).task
        subscription = aiter(client.subscribe(SubscribeToTaskRequest(id=task.id)))
        got = [await anext(subscription)]
        gate.set()  # the agent goes on: both streams see the rest
        got += [event async for event in subscription]
        async for _ in sent:
            pass
        return got


@pytest.fixture(scope="module")
def recorded(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[AgentCard, dict[str, tuple[Path, list[Any]]]]]:
    """Each binding's stream recorded from a2a-sdk's server (stopped before any replay)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    card = _card(f"http://127.0.0.1:{sock.getsockname()[1]}")
    gate = threading.Event()
    handler = DefaultRequestHandler(Weather(gate), InMemoryTaskStore(), card)
    app = Starlette(
        routes=[*create_jsonrpc_routes(handler, "/rpc"), *create_rest_routes(handler, path_prefix="/rest")]
    )
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    until(lambda: server.started, "the A2A server's start")
    out = {}
    for binding in BINDINGS:
        path = tmp_path_factory.mktemp("a2a") / "stream.json"
        with ssemock.use_cassette(path, record_mode="all"):
            out[binding] = (path, asyncio.run(_ask(card, binding)))
        gate.clear()
        path = tmp_path_factory.mktemp("a2a") / "subscribed.json"
        with ssemock.use_cassette(path, record_mode="all"):
            out[f"{binding} subscribe"] = (path, asyncio.run(_subscribe(card, binding, gate)))
    server.should_exit = True
    thread.join(timeout=5)
    sock.close()
    yield card, out


@pytest.mark.parametrize("chunking", ssemock.chunking.ALL, ids=str)
@pytest.mark.parametrize("binding", BINDINGS)
def test_a2a_sdk_replays_what_it_got_live(
    recorded: tuple[AgentCard, dict[str, tuple[Path, list[Any]]]], binding: str, chunking: Any
) -> None:
    card, runs = recorded
    path, live = runs[binding]
    with ssemock.use_cassette(path, chunking=chunking) as player:
        got = asyncio.run(_ask(card, binding))
    assert got == live
    assert [e.WhichOneof("payload") for e in got] == [
        "task",
        "status_update",
        "artifact_update",
        "artifact_update",
        "status_update",
    ]
    [play] = player.plays
    sent = json.loads(play.request.content)
    events = framing.decode(play.body, "text/event-stream")
    if binding == "JSONRPC":  # a fresh random id this run: matched anyway, and answered with it
        assert sent["method"] == "SendStreamingMessage"
        assert sent["id"] != json.loads(play.interaction.request.body)["id"]
        assert {json.loads(e.data)["id"] for e in events} == {sent["id"]}
    result = ssemock.accumulate(events, "a2a")
    assert (result.text, result.finish_reason, result.complete) == (WEATHER, "TASK_STATE_COMPLETED", True)


@pytest.mark.parametrize("chunking", ["as_recorded", "bytewise", "mid_utf8"])
@pytest.mark.parametrize("binding", BINDINGS)
def test_a_subscription_to_a_task_replays(
    recorded: tuple[AgentCard, dict[str, tuple[Path, list[Any]]]], binding: str, chunking: str
) -> None:
    card, runs = recorded
    path, live = runs[f"{binding} subscribe"]
    with ssemock.use_cassette(path, chunking=chunking) as player:
        got = asyncio.run(_subscribe(card, binding, threading.Event()))
    assert got == live
    assert got[0].HasField("task") and got[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED
    _, subscribed = player.plays  # the message's stream, then the subscription's
    if binding == "JSONRPC":
        assert [json.loads(p.request.content)["method"] for p in player.plays] == [
            "SendStreamingMessage",
            "SubscribeToTask",
        ]
    else:
        assert [p.request.url.path for p in player.plays] == [
            "/rest/message:stream",
            f"/rest/tasks/{got[0].task.id}:subscribe",
        ]
    events = framing.decode(subscribed.body, "text/event-stream")
    assert ssemock.detect_protocol(events, url=str(subscribed.request.url)) == "a2a"
    result = ssemock.accumulate(events, "a2a")
    # the task it starts with holds the working status's message
    assert (result.text, result.finish_reason, result.complete) == (WEATHER, "TASK_STATE_COMPLETED", True)


@pytest.mark.parametrize("binding", BINDINGS)
def test_both_bindings_are_labelled_a2a_by_show_and_validate(
    recorded: tuple[AgentCard, dict[str, tuple[Path, list[Any]]]],
    binding: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path, live = recorded[1][binding]
    task_id = live[0].task.id
    assert main(["show", "--json", str(path)]) == 0
    [shown] = json.loads(capsys.readouterr().out)["shown"]
    assert (shown["protocol"], shown["text"], shown["finish_reason"]) == (
        "a2a",
        WEATHER,
        "TASK_STATE_COMPLETED",
    )
    assert main(["validate", "--json", str(path)]) == 0
    [report] = json.loads(capsys.readouterr().out)
    assert report["ok"] is True and report["warnings"] == []  # its events decode and fold as a2a
    assert main(["validate", "-v", str(path)]) == 0
    assert "interaction 0: protocol a2a" in capsys.readouterr().out
    [x] = ssemock.Cassette.load(path).interactions
    events = framing.decode(x.response.body, "text/event-stream")
    assert ssemock.detect_protocol(events) == "a2a"  # the events alone tell, whatever the URL
    assert ssemock.accumulate(events, "a2a").id == task_id


@pytest.mark.parametrize("binding", BINDINGS)
def test_the_error_event_fault_is_the_sdks_internal_error(
    recorded: tuple[AgentCard, dict[str, tuple[Path, list[Any]]]], binding: str
) -> None:
    card, runs = recorded
    path, _ = runs[binding]
    with ssemock.use_cassette(path, faults=ssemock.faults.error_event("server_error", after_event=2)):
        with pytest.raises(InternalError):
            asyncio.run(_ask(card, binding))


def _rest(result: dict[str, Any]) -> ServerSentEvent:
    return ServerSentEvent(data=json.dumps(result))


def test_1_0_shapes_fold_and_input_required_ends_the_stream() -> None:
    working = {"statusUpdate": {"taskId": "t9", "status": {"state": "TASK_STATE_WORKING"}}}
    asked = {
        "statusUpdate": {
            "taskId": "t9",
            "status": {
                "state": "TASK_STATE_INPUT_REQUIRED",
                "message": {"messageId": "m", "role": "ROLE_AGENT", "parts": [{"text": "Which city?"}]},
            },
        }
    }
    for events in ([_rest(working), _rest(asked)], [_event(working), _event(asked)]):
        assert ssemock.detect_protocol(events) == "a2a"
        result = ssemock.accumulate(events, "a2a")
        assert (result.id, result.text, result.finish_reason, result.complete) == (
            "t9",
            "Which city?",
            "TASK_STATE_INPUT_REQUIRED",
            True,
        )
    status = {"error": {"code": 500, "status": "INTERNAL", "message": "agent crashed"}}
    failed = ssemock.accumulate(
        [_rest(working), ServerSentEvent(event="error", data=json.dumps(status))], "a2a"
    )
    assert failed.error == status["error"] and failed.complete


def test_an_mcp_task_result_is_no_a2a_event() -> None:
    """MCP 2025-11-25's CreateTaskResult is ``{"task": {"taskId", "status": "working"}}``: MCP's."""
    created = {"task": {"taskId": "t1", "status": "working", "createdAt": "2026-01-01T00:00:00Z"}}
    event = ServerSentEvent(data=json.dumps({"jsonrpc": "2.0", "id": 1, "result": created}))
    assert ssemock.detect_protocol([event]) == "mcp"


def test_the_rest_routes_are_a2a_by_url() -> None:
    for url in (
        "http://agent/message:stream",
        "http://agent/t1/tasks/abc-1:subscribe",
        "http://a/v1/message:stream",
    ):
        assert ssemock.detect_protocol([], url=url) == "a2a"
    with pytest.raises(ssemock.ProtocolError, match="cannot detect"):  # not a stream's route
        ssemock.detect_protocol([], url="http://agent/message:send")
