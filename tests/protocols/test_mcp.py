"""mcp through the mcp SDK's Streamable HTTP client against an MCPServer (the SDK's FastMCP) on
loopback: recorded (with a session, and in the stateless 2026 protocol), replayed under every
chunking x transform, the reference fold equal to what the SDK built, errors in JSON-RPC's shape,
and the legacy transport's GET stream held back until the POSTs it answers."""

from __future__ import annotations

import asyncio
import json
import os
import re
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import mcp_types
import orjson
import pytest
import uvicorn
from mcp import Client
from mcp.client.sse import sse_client
from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import MCPError
from waiting import until

import ssemock
import ssemock.plan.push_replay
from ssemock.protocols import mcp
from ssemock.protocols.base import StreamError
from ssemock.sse import decode
from ssemock.store.cassette import Request, Response
from ssemock.synth import SOURCE_HEADER

SHIPPED = Path(mcp.__file__).parents[1] / "cassettes" / "mcp"
URL = "http://127.0.0.1:8000/mcp"  # where the recorded requests are said to go (the port varies)
TRANSFORMS = ["none", "crlf", "cr", "keepalive", "no_space"]
MODES = ["legacy", "2026-07-28"]
SOURCE = (
    "recorded from an MCPServer of the mcp SDK through the SDK's Streamable HTTP client on a loopback "
    "server; not captured from a production server"
)


def _server() -> MCPServer:
    server = MCPServer("weather")

    @server.tool()
    async def forecast(city: str, days: int, ctx: Context) -> str:
        """A forecast, reporting progress day by day."""
        for day in range(days):
            await ctx.report_progress(day + 1, days, f"{city}: day {day + 1} 🌤")
            await asyncio.sleep(0.01)
        return f"{city}: sunny for {days} days — 晴れ"

    @server.tool()
    def broken(x: int) -> str:
        """Always fails (a tool error: a result with isError)."""
        raise ValueError("the weather station is down")

    return server


def _running(app: Any) -> Iterator[str]:
    """``app`` served by uvicorn on a loopback port (its lifespan on: the session manager of the
    Streamable HTTP app runs there), for the module."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    until(lambda: server.started, "the MCP server's start")
    yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    server.should_exit = True
    thread.join(timeout=5)
    sock.close()


@pytest.fixture(scope="module")
def base() -> Iterator[str]:
    """The MCP server on loopback, Streamable HTTP at ``/mcp``."""
    yield from _running(_server().streamable_http_app())


async def _session(server: Any, mode: str) -> dict[str, Any]:
    """What a client does and gets: the tools, a streamed call with progress, a tool error, a
    JSON-RPC error. ``server``: a Streamable HTTP URL, or a transport (``sse_client(url)``)."""
    progress: list[tuple[float, float | None, str | None]] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, total, message))

    async with Client(server, mode=mode) as client:
        tools = await client.list_tools()
        called = await client.call_tool(
            "forecast", {"city": "Tokyo", "days": 3}, progress_callback=on_progress
        )
        broken = await client.call_tool("broken", {"x": 1})
        with pytest.raises(MCPError) as error:
            await client.read_resource("weather://nowhere")
    return {"tools": tools, "called": called, "broken": broken, "progress": progress, "error": error.value}


async def _failing_call(url: str, mode: str) -> MCPError:
    """The MCPError the streamed tool call raises (caught inside the client's task group)."""

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        pass

    async with Client(url, mode=mode) as client:
        await client.list_tools()
        with pytest.raises(MCPError) as info:
            await client.call_tool("forecast", {"city": "Tokyo", "days": 3}, progress_callback=on_progress)
    return info.value


def _redact(response: Response) -> Response:
    """The session id redacted (the scan refuses it otherwise), per-run headers dropped, and how
    it was made said."""
    response.headers = [
        (k, "REDACTED" if k == "mcp-session-id" else v)
        for k, v in response.headers
        if k not in ("date", "server")
    ] + [(SOURCE_HEADER, SOURCE)]
    return response


def _fixed_url(request: Request) -> Request:
    headers = [(k, v) for k, v in request.headers if k not in ("host", "user-agent")]
    return Request(request.method, URL, headers, request.body)


@pytest.fixture(scope="module")
def recorded(base: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, dict[str, Any]]]:
    out = {}
    for mode in MODES:
        path = tmp_path_factory.mktemp("mcp") / f"{mode}.json"
        with ssemock.use_cassette(
            path, record_mode="all", before_record_request=_fixed_url, before_record_response=_redact
        ):
            live = asyncio.run(_session(f"{base}/mcp", mode))
        out[mode] = (path, live)
    return out


def _fold(events: list[Any]) -> mcp.McpResult:
    """The reference fold, as ssemock.accumulate(events, "mcp") runs it."""
    fold = mcp.PROTOCOL.fold()
    for position, event in enumerate(events):
        fold.at = position
        fold.feed(event)
    result = fold.finish()
    assert isinstance(result, mcp.McpResult)
    return result


def _events(body: bytes, content_type: str) -> list[Any]:
    return [orjson.loads(body)] if content_type.startswith("application/json") and body else decode([body])


def _reference(bodies: list[tuple[bytes, str]]) -> mcp.McpResult:
    """One fold over every response served (results and errors by id across the session)."""
    return _fold([event for body, content_type in bodies for event in _events(body, content_type)])


def _served(player: Any) -> list[tuple[bytes, str]]:
    return [(play.body, play.interaction.response.header("content-type") or "") for play in player.plays]


def _recorded_bodies(path: Path) -> list[tuple[bytes, str]]:
    return [
        (x.response.body, x.response.header("content-type") or "")
        for x in ssemock.Cassette.load(path).interactions
    ]


def _check_against_sdk(result: mcp.McpResult, live: dict[str, Any]) -> None:
    """The reference fold equals what the SDK built, read with the SDK's own types."""
    ids = {name: int(i) for i, name in ((i, _method(r)) for i, r in result.results.items()) if name}
    assert mcp_types.ListToolsResult.model_validate(result.results[ids["tools"]]) == live["tools"]
    assert mcp_types.CallToolResult.model_validate(result.results[ids["called"]]) == live["called"]
    assert mcp_types.CallToolResult.model_validate(result.results[ids["broken"]]) == live["broken"]
    ((_, error),) = result.errors.items()
    assert (error["code"], error["message"]) == (live["error"].error.code, live["error"].error.message)
    progress = [n["params"] for n in result.notifications if n["method"] == "notifications/progress"]
    assert [(p["progress"], p["total"], p["message"]) for p in progress] == live["progress"]
    assert "Tokyo: sunny for 3 days — 晴れ" in result.text and result.complete


def _method(result: Any) -> str:
    if "tools" in result:
        return "tools"
    text = json.dumps(result, ensure_ascii=False)
    return "called" if "sunny" in text else "broken" if "Error executing tool broken" in text else ""


@pytest.mark.parametrize("mode", MODES)
def test_the_sdk_session_is_recorded_with_its_streams(
    recorded: dict[str, tuple[Path, dict[str, Any]]], mode: str
) -> None:
    path, live = recorded[mode]
    interactions = ssemock.Cassette.load(path).interactions
    methods = [json.loads(x.request.body)["method"] for x in interactions if x.request.body]
    assert "tools/call" in methods and "resources/read" in methods
    call = next(x for x in interactions if x.request.body and b'"forecast"' in x.request.body)
    assert call.response.header("content-type") == "text/event-stream"
    assert len(decode([call.response.body])) == 4  # three progress notifications, then the result
    assert len(call.response.chunks) == 4  # the server wrote them apart
    assert all(x.response.header(SOURCE_HEADER) == SOURCE for x in interactions)
    if mode == "legacy":  # the session: the initialize response names it, every later request echoes it
        assert methods[0] == "initialize"
        assert mcp.session_id(interactions[0].response.headers) == "REDACTED"
        assert all(mcp.session_id(x.request.headers) == "REDACTED" for x in interactions[1:])
        assert any(x.request.method == "GET" for x in interactions)  # the server-push stream
    _check_against_sdk(_reference(_recorded_bodies(path)), live)


@pytest.mark.parametrize("transform", TRANSFORMS)
@pytest.mark.parametrize("chunking", ssemock.chunking.ALL, ids=str)
@pytest.mark.parametrize("mode", MODES)
def test_replay_under_every_chunking_and_transform(
    recorded: dict[str, tuple[Path, dict[str, Any]]], mode: str, chunking: Any, transform: str
) -> None:
    path, live = recorded[mode]
    with ssemock.use_cassette(
        path, chunking=chunking, transform=None if transform == "none" else transform
    ) as player:
        got = asyncio.run(_session(URL, mode))
    assert {k: v for k, v in got.items() if k != "error"} == {k: v for k, v in live.items() if k != "error"}
    assert (got["error"].error.code, got["error"].error.message) == (
        live["error"].error.code,
        live["error"].error.message,
    )
    _check_against_sdk(_reference(_served(player)), got)


def test_a_json_rpc_error_event_mid_stream_is_the_sdks_mcp_error(
    recorded: dict[str, tuple[Path, Any]],
) -> None:
    path, live = recorded["legacy"]
    cassette = ssemock.Cassette.load(path)
    call = next(x for x in cassette.interactions if x.request.body and b'"forecast"' in x.request.body)
    body = call.response.body
    cut = ssemock.chunking.event_ends(body, sse=True)[0]
    error = mcp.PROTOCOL.error_event(
        StreamError(kind="invalid_params", message="days must be <= 2", newline="\r\n")
    )
    call.response.body = body[:cut] + error
    call.response.ends = [cut, len(call.response.body)]
    call.response.times = call.response.times[:2]
    with ssemock.replay(cassette, chunking="bytewise", allow_playback_repeats=True):
        error = asyncio.run(_failing_call(URL, "legacy"))
    assert (error.error.code, error.error.message) == (mcp.INVALID_PARAMS, "days must be <= 2")
    result = _fold(decode([call.response.body]))
    assert result.errors == {None: {"code": -32602, "message": "days must be <= 2"}}
    assert len(result.notifications) == 1 and result.error == result.errors[None]


@pytest.mark.parametrize("after", [1, 3])
def test_the_error_event_fault_answers_the_call_the_stream_owes(after: int) -> None:
    """faults.error_event writes the JSON-RPC error with the id of the request the stream still
    owes (the tool call's), so the SDK fails that very call with its own MCPError, and the
    reference fold files the error under the call's id."""
    cassette = ssemock.cassettes.load("mcp/streamable_http_session")
    call = next(x for x in cassette.interactions if x.request.body and b'"forecast"' in x.request.body)
    call_id = json.loads(call.request.body)["id"]
    with ssemock.replay(
        cassette, faults=f"error_event:kind=invalid_params,after_event={after}", allow_playback_repeats=True
    ) as player:
        error = asyncio.run(_failing_call(URL, "legacy"))
    assert isinstance(error, MCPError)
    assert (error.error.code, error.error.message) == (mcp.INVALID_PARAMS, "invalid params")
    (served,) = [play.body for play in player.plays if play.interaction.request.body == call.request.body]
    events = decode([served])
    assert len(events) == after + 1  # the progress notifications before the cut, then the error
    assert json.loads(events[-1].data) == {
        "jsonrpc": "2.0",
        "id": call_id,
        "error": {"code": mcp.INVALID_PARAMS, "message": "invalid params"},
    }
    assert _fold(events).errors == {call_id: {"code": mcp.INVALID_PARAMS, "message": "invalid params"}}


def test_the_error_event_fault_on_a_json_answer_is_the_sdks_mcp_error() -> None:
    """A POST answered by a JSON body (the stateless protocol): error_event makes the JSON-RPC
    error object the whole answer, with the request's id, and the SDK raises its own MCPError."""
    cassette = ssemock.cassettes.load("mcp/streamable_http_stateless")

    async def list_tools() -> MCPError:
        async with Client(URL, mode=MODES[1]) as client:
            with pytest.raises(MCPError) as info:
                await client.list_tools()
        return info.value

    with ssemock.replay(
        cassette, faults="error_event:kind=invalid_params", allow_playback_repeats=True
    ) as player:
        error = asyncio.run(list_tools())
    assert (error.error.code, error.error.message) == (mcp.INVALID_PARAMS, "invalid params")
    (play,) = player.plays
    answered = json.loads(play.interaction.response.body)["id"]
    assert json.loads(play.body) == {
        "jsonrpc": "2.0",
        "id": answered,
        "error": {"code": mcp.INVALID_PARAMS, "message": "invalid params"},
    }


def test_owed_is_the_request_a_cut_stream_still_answers() -> None:
    ends = ssemock.chunking.event_ends(LEGACY_GET, sse=True)
    assert mcp.owed(LEGACY_GET, 0) == mcp.owed(LEGACY_GET, ends[0]) == 1  # the first response after the cut
    assert mcp.owed(LEGACY_GET, ends[1]) == mcp.owed(LEGACY_GET, ends[3]) == 2  # progress of 2: 2 is owed
    assert mcp.owed(LEGACY_GET, ends[4]) == 3 and mcp.owed(LEGACY_GET, len(LEGACY_GET)) is None
    progress_only = mcp.message(
        {"method": "notifications/progress", "params": {"progressToken": "t", "progress": 1}}
    )
    assert mcp.owed(progress_only, len(progress_only)) == "t"  # cut before its answer was recorded
    error = mcp.PROTOCOL.error_event(StreamError("invalid_params", "no", request_id=7))
    assert json.loads(decode([error])[0].data)["id"] == 7


@pytest.mark.parametrize("status", [404, 500])
def test_the_http_error_body_is_a_json_rpc_error_the_sdk_reports(
    recorded: dict[str, tuple[Path, Any]], status: int
) -> None:
    path, _ = recorded["2026-07-28"]
    body = mcp.PROTOCOL.http_error(status, None)
    cassette = ssemock.Cassette.load(path)
    for x in cassette.interactions:
        if x.request.body and b'"forecast"' in x.request.body:
            x.response.status, x.response.headers = status, [("content-type", body.content_type)]
            x.response.body, x.response.ends, x.response.times = body.body, [len(body.body)], [0.0]
    with ssemock.replay(cassette, allow_playback_repeats=True):
        error = asyncio.run(_failing_call(URL, "2026-07-28"))
    expected = json.loads(body.body)["error"]
    assert (error.error.code, error.error.message) == (expected["code"], expected["message"])


def test_the_fold_correlates_by_id_and_refuses_what_is_not_json_rpc() -> None:
    events = [
        {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info"}},
        {"jsonrpc": "2.0", "id": "s-1", "method": "sampling/createMessage", "params": {}},
        [
            {"jsonrpc": "2.0", "id": 7, "result": {"content": [{"type": "text", "text": "a"}]}},
            {"jsonrpc": "2.0", "id": "x", "error": {"code": -32601, "message": "Method not found"}},
        ],
    ]
    result = _fold(events)
    assert result.results == {7: {"content": [{"type": "text", "text": "a"}]}} and result.text == "a"
    assert result.errors == {"x": {"code": -32601, "message": "Method not found"}}
    assert result.requests == [{"id": "s-1", "method": "sampling/createMessage", "params": {}}]
    assert result.notifications == [{"method": "notifications/message", "params": {"level": "info"}}]
    with pytest.raises(ValueError, match=r"mcp: event 1: request id 7 is answered twice"):
        _fold([events[2][0], {"jsonrpc": "2.0", "id": 7, "result": {}}])
    with pytest.raises(ValueError, match=r"mcp: event 0: not a JSON-RPC 2.0 message"):
        _fold([{"id": 1, "result": {}}])
    with pytest.raises(ValueError, match=r"one of result / error"):
        _fold([{"jsonrpc": "2.0", "id": 1, "result": {}, "error": {}}])
    assert not _fold([events[0]]).complete


@pytest.mark.parametrize("ident", [[1], {"a": 1}, True, [], {}])
@pytest.mark.parametrize("kind", ["result", "error", "method"])
def test_an_id_of_any_json_type_is_one_clear_error_or_kept(ident: object, kind: str) -> None:
    """A JSON-RPC id is a string, a number or null: an array, object or boolean id (which a
    dict could not key, or would take for 1) is a ProtocolError naming it, never a TypeError."""
    body = {"method": "tools/call"} if kind == "method" else {kind: {"code": 1, "message": "m"}}
    with pytest.raises(
        ssemock.ProtocolError, match=r"mcp: event 0: id .* is a (array|object|boolean): a JSON-RPC id"
    ):
        _fold([{"jsonrpc": "2.0", "id": ident, **body}])


@pytest.mark.parametrize("ident", ["a", 0, -3, 2.5, 10**30])
def test_string_and_number_ids_are_correlated(ident: object) -> None:
    result = _fold(
        [
            {"jsonrpc": "2.0", "id": ident, "result": {"content": [{"type": "text", "text": "t"}]}},
            {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}},
        ]
    )
    assert result.results == {ident: {"content": [{"type": "text", "text": "t"}]}} and result.text == "t"
    assert result.errors == {None: {"code": -32700, "message": "Parse error"}}


def test_detection() -> None:
    protocol = mcp.PROTOCOL
    assert protocol.url("http://127.0.0.1:8000/mcp") and protocol.url("https://example.com/api/mcp/")
    assert not protocol.url("https://api.openai.com/v1/chat/completions")
    assert not protocol.content_type("text/event-stream")
    (endpoint, data) = decode(
        [
            b"event: endpoint\ndata: /messages/?session_id=abc\n\n"
            b'event: message\ndata: {"jsonrpc":"2.0","id":1,"result":{}}\n\n'
        ]
    )
    assert protocol.event(endpoint) and protocol.event(data) and protocol.event({"jsonrpc": "2.0", "id": 1})
    assert not protocol.event(decode([b'data: {"choices":[]}\n\n'])[0])
    assert _fold([endpoint]).endpoint == "/messages/?session_id=abc"


# -- the legacy transport: a GET stream that answers the POSTs ------------------------------------

LEGACY_GET = (
    b"event: endpoint\r\ndata: /messages/?session_id=REDACTED\r\n\r\n"
    + mcp.message({"id": 1, "result": {"protocolVersion": "2025-06-18"}}, newline="\r\n")
    + mcp.message({"method": "notifications/tools/list_changed"}, newline="\r\n")
    + mcp.message(
        {"method": "notifications/progress", "params": {"progressToken": 2, "progress": 1}}, newline="\r\n"
    )
    + mcp.message({"id": 2, "result": {"content": []}}, newline="\r\n")
    + mcp.message({"id": 3, "error": {"code": -32602, "message": "no"}}, newline="\r\n")
)


def test_deliverable_holds_each_answer_until_its_request_is_made() -> None:
    ends = ssemock.chunking.event_ends(LEGACY_GET, sse=True)
    assert mcp.deliverable(LEGACY_GET, []) == ends[0]  # the endpoint event only
    assert mcp.deliverable(LEGACY_GET, [1]) == ends[2]  # + the response to 1 and a free notification
    assert mcp.deliverable(LEGACY_GET, [1, 2]) == ends[4]  # + the progress of 2 and its response
    assert mcp.deliverable(LEGACY_GET, [1, 2, 3]) == len(LEGACY_GET)
    assert mcp.deliverable(LEGACY_GET, [3]) == ends[0]  # recorded order is kept: 3 waits behind 1
    assert mcp.request_ids(
        b'[{"jsonrpc":"2.0","id":2,"method":"tools/call"},'
        b'{"jsonrpc":"2.0","method":"notifications/initialized"}]'
    ) == [2]
    assert (
        mcp.request_ids(b'{"jsonrpc":"2.0","id":"a","method":"ping"}') == ["a"] and mcp.request_ids(b"") == []
    )


def test_synthesize_folds_back() -> None:
    (x,) = mcp.synthesize("done", progress=2, request_id=5, session="sess-test").interactions
    result = _fold(decode([x.response.body]))
    assert result.results == {5: {"content": [{"type": "text", "text": "done"}], "isError": False}}
    assert [n["params"]["progress"] for n in result.notifications] == [1, 2]
    assert mcp.session_id(x.response.headers) == "sess-test" == mcp.session_id(x.request.headers)
    (y,) = mcp.synthesize(error="invalid_params", request_id="r").interactions
    assert _fold(decode([y.response.body])).errors == {"r": {"code": -32602, "message": "Invalid params"}}


def _without_times(path: Path) -> Any:
    """A cassette's document without what varies run to run: arrival times, whether the empty
    GET stream (closed by the client at exit) or a POST stream (left once its response is read)
    was seen to its end, and whether a 202's "Accepted" was read (the SDK may leave before the
    body of its last POST's 202 arrives)."""
    doc = json.loads(path.read_bytes())
    for x in doc["interactions"]:
        x["response"]["chunks"] = [[0, end] for _, end in x["response"]["chunks"]]
        x["response"].pop("complete", None)
        x["response"].pop("error", None)
        if x["response"]["status"] == 202:
            x["response"]["body"], x["response"]["chunks"] = [], []
    return doc


@pytest.mark.parametrize("mode", MODES)
def test_the_shipped_cassettes_are_what_the_sdk_records(
    recorded: dict[str, tuple[Path, dict[str, Any]]], mode: str
) -> None:
    """Set SSEMOCK_WRITE_CASSETTES=1 to rewrite them from this run's recordings."""
    path, live = recorded[mode]
    shipped = SHIPPED / f"streamable_http_{'session' if mode == 'legacy' else 'stateless'}.json"
    if os.environ.get("SSEMOCK_WRITE_CASSETTES"):
        shipped.parent.mkdir(parents=True, exist_ok=True)
        shipped.write_bytes(path.read_bytes())
    assert _without_times(shipped) == _without_times(path)
    with ssemock.use_cassette(shipped, chunking="mid_utf8") as player:
        got = asyncio.run(_session(URL, mode))
    assert got["called"] == live["called"] and got["progress"] == live["progress"]
    _check_against_sdk(_reference(_served(player)), got)


# -- the legacy HTTP+SSE transport through the SDK's sse_client: one GET stream answers every POST ---

SSE_ORIGIN = "http://127.0.0.1:8000"  # where the recorded requests are said to go
SSE_URL = f"{SSE_ORIGIN}/sse"
SSE_SOURCE = (
    "recorded from an MCPServer of the mcp SDK through the SDK's legacy SSE client (sse_client) on a "
    "loopback server; not captured from a production server"
)


@pytest.fixture(scope="module")
def sse_base() -> Iterator[str]:
    """The same MCP server on loopback, legacy HTTP+SSE: ``GET /sse`` and ``POST /messages/``."""
    yield from _running(_server().sse_app())


def _sse_request(request: Request) -> Request:
    """The recorded origin fixed (the session id in the POSTs' URL is redacted by default)."""
    url = SSE_ORIGIN + request.url.split("/", 3)[3].join(["/", ""])
    headers = [(k, v) for k, v in request.headers if k not in ("host", "user-agent")]
    return Request(request.method, url, headers, request.body)


def _sse_response(response: Response) -> Response:
    """Per-run headers dropped, and how it was made said (the session id in the GET stream's
    ``endpoint`` event is redacted by default)."""
    response.headers = [(k, v) for k, v in response.headers if k not in ("date", "server")] + [
        (SOURCE_HEADER, SSE_SOURCE)
    ]
    return response


@pytest.fixture(scope="module")
def sse_recorded(sse_base: str, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """One session of the SDK's sse_client recorded once (what it got live, and the cassette)."""
    path = tmp_path_factory.mktemp("mcp_sse") / "sse_session.json"
    with ssemock.use_cassette(
        path, record_mode="all", before_record_request=_sse_request, before_record_response=_sse_response
    ):
        live = asyncio.run(_session(sse_client(f"{sse_base}/sse"), "legacy"))
    return path, live


def _same_as_live(got: dict[str, Any], live: dict[str, Any]) -> None:
    assert {k: v for k, v in got.items() if k != "error"} == {k: v for k, v in live.items() if k != "error"}
    assert (got["error"].error.code, got["error"].error.message) == (
        live["error"].error.code,
        live["error"].error.message,
    )


def test_the_sse_session_is_one_get_stream_answering_every_post(
    sse_recorded: tuple[Path, dict[str, Any]],
) -> None:
    path, live = sse_recorded
    interactions = ssemock.Cassette.load(path).interactions
    (stream,) = [x for x in interactions if x.request.method == "GET"]
    posts = [x for x in interactions if x.request.method == "POST"]
    assert stream.response.header("content-type", "").startswith("text/event-stream")
    assert {x.response.status for x in posts} == {202}  # every answer comes on the GET stream instead
    asked = [i for x in posts for i in mcp.request_ids(x.request.body)]
    answered = [i for i, _ in _reference([(stream.response.body, "text/event-stream")]).results.items()]
    assert sorted(answered) == sorted(i for i in asked if i in answered) and len(answered) >= 4
    held = mcp.holds(stream.response.body)
    assert [sorted(ids) for _, ids in held][:2] == [[1], [2]]  # initialize, then tools/list
    assert stream.response.body.startswith(b"event: endpoint\r\ndata: /messages/?session_id=REDACTED\r\n\r\n")
    _check_against_sdk(_reference(_recorded_bodies(path)), live)


class TestLegacySSE:
    """The recorded session replayed through the pytest marker, as a user's test runs it."""

    @pytest.fixture
    def ssemock_cassette_dir(self, sse_recorded: tuple[Path, dict[str, Any]]) -> Path:
        return sse_recorded[0].parent

    @pytest.mark.ssemock("sse_session", chunking="all", transform="none,crlf,keepalive,no_space")
    def test_the_sdk_sse_client_gets_what_it_got_live(
        self, ssemock: Any, sse_recorded: tuple[Path, dict[str, Any]]
    ) -> None:
        """Each answer on the GET stream waits for its POST: the SDK's client passes every chunking
        and transform at instant timing, and gets exactly what it got live (``cr``: see below)."""
        got = asyncio.run(_session(sse_client(SSE_URL), "legacy"))
        _same_as_live(got, sse_recorded[1])
        _check_against_sdk(_reference(_served(ssemock)), got)
        (stream,) = [play for play in ssemock.plays if play.request.method == "GET"]
        held = [offset for offset, _ in mcp.holds(stream.body)]
        assert set(held) <= {0, *stream.ends}  # a chunk never spans a wait for a request


@pytest.mark.parametrize("sync", [True, False], ids=["sync", "async"])
def test_a_get_stream_whose_request_never_comes_fails_naming_it(
    sse_recorded: tuple[Path, dict[str, Any]], sync: bool
) -> None:
    """The client opens the stream but never POSTs: the endpoint event arrives, then the client's
    own read timeout names the cassette, the interaction and the request id it waited for."""
    path, _ = sse_recorded
    timeout = httpx2.Timeout(5.0, read=0.2)
    pattern = (
        rf"(?s)ssemock: {re.escape(str(path))}, interaction #\d+ \(GET {SSE_URL}\): the recorded stream "
        r"answers the request with id 1 next.*none was made within 0.2 s"
    )

    async def read_async() -> list[bytes]:
        async with httpx2.AsyncClient(timeout=timeout) as client, client.stream("GET", SSE_URL) as response:
            got = []
            async for chunk in response.aiter_bytes():
                got.append(chunk)
            return got

    def read() -> list[bytes]:
        with httpx2.Client(timeout=timeout) as client, client.stream("GET", SSE_URL) as response:
            return list(response.iter_bytes())

    # bounded by the read timeout (a hang would run into pytest-timeout instead of raising)
    with ssemock.use_cassette(path) as player, pytest.raises(httpx2.ReadTimeout, match=pattern):
        read() if sync else asyncio.run(read_async())
    (play,) = player.plays
    assert play.stream is not None and play.stream.failed
    assert play.body[: play.stream.delivered].endswith(
        b"session_id=REDACTED\r\n\r\n"
    )  # the endpoint event only


def test_the_shipped_sse_cassette_is_what_the_sdk_records(sse_recorded: tuple[Path, dict[str, Any]]) -> None:
    """Set SSEMOCK_WRITE_CASSETTES=1 to rewrite it from this run's recording."""
    path, live = sse_recorded
    shipped = SHIPPED / "sse_session.json"
    if os.environ.get("SSEMOCK_WRITE_CASSETTES"):
        shipped.write_bytes(path.read_bytes())
    assert _without_times(shipped) == _without_times(path)
    with ssemock.use_cassette(shipped, chunking="bytewise", transform="crlf"):
        got = asyncio.run(_session(sse_client(SSE_URL), "legacy"))
    _same_as_live(got, live)


@pytest.mark.parametrize("chunking", ["as_recorded", "bytewise"])
def test_under_cr_line_endings_the_sdks_sse_reader_never_sees_the_endpoint_event(
    sse_recorded: tuple[Path, dict[str, Any]], chunking: str
) -> None:
    """A client non-conformance this exposes: httpx2's EventSource (what the SDK's sse_client
    reads the stream with) keeps a chunk's trailing CR back until more text comes (it might start
    a CRLF), but a lone CR ends a line (WHATWG). Under CR line endings the endpoint event's blank
    line is never seen while the server waits for the first POST, so a session stalls (against a
    real server until its next keep-alive ping); replay ends the wait with the read timeout. (The
    SDK's sse_client then hangs itself: its reader hands the error to a stream nobody reads before
    the endpoint event, so this reads with EventSource as the SDK does.)"""
    path, _ = sse_recorded
    got: list[Any] = []

    async def read() -> None:
        async with (
            httpx2.AsyncClient(timeout=httpx2.Timeout(5.0, read=0.3)) as client,
            client.sse(SSE_URL) as source,
        ):
            async for event in source:
                got.append(event)

    with (
        ssemock.use_cassette(path, chunking=chunking, transform="cr") as player,
        pytest.raises(httpx2.ReadTimeout, match="answers the request with id 1 next"),
    ):
        asyncio.run(read())
    assert got == []  # the endpoint event never came out of the client's decoder
    (play,) = player.plays
    assert play.stream is not None
    delivered = play.body[: play.stream.delivered]
    assert delivered.endswith(b"\r\r")  # though the whole endpoint event reached the client
    (endpoint,) = decode([delivered])  # and a conforming decoder dispatches it from these bytes
    assert (endpoint.event, endpoint.data) == ("endpoint", "/messages/?session_id=REDACTED")
