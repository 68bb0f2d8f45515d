"""MCP 2026-07-28 beside 2025-11-25 (issue 45 item 1): the mcp 2.3.0 client against an MCPServer
of the SDK on loopback, one session per version (a tool streaming progress and log
notifications, a multi-round-trip tool that asks the user, and at 2026-07-28 a resource
subscription over ``subscriptions/listen``), recorded, then replayed with the server stopped
under every chunking of the registry; the version each recording speaks shown by ``show``,
``validate`` and the timeline page; the resume fault answered from the cassette where the
version resumes (2025-11-25, a server with an event store) and refused naming the version where
it does not; the listen requests' process-wide ids matched whatever they are and answered with
this run's; a listen stream the client closed while it was open stays open in replay (calls made
after its last change, then closed: no SubscriptionLost), one the server ended ends as recorded."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import socket
import threading
from pathlib import Path
from typing import Annotated, Any

import anyio
import httpx
import mcp_types
import pytest
import uvicorn
from mcp import Client
from mcp.client.subscriptions import ResourceUpdated, Subscription
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.resolve import Elicit, Resolve
from mcp.server.streamable_http import EventCallback, EventMessage, EventStore
from pydantic import BaseModel
from waiting import until

import ssemock
from ssemock.commands.cli import main
from ssemock.commands.loopback import running
from ssemock.commands.serve import app
from ssemock.commands.serve.page import render
from ssemock.protocols import mcp
from ssemock.sse import decode

# the SDK's logging is deprecated at 2026-07-28 (still spoken: opted in per request)
pytestmark = pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")

URL = "http://127.0.0.1:8000/mcp"  # where the recorded requests are said to go (the port varies)
VERSIONS = {"2025-11-25": "legacy", "2026-07-28": "2026-07-28"}  # the version -> the Client's mode
SUBSCRIPTION = "io.modelcontextprotocol/subscriptionId"
LIMIT = 20.0  # seconds a session may take before it fails (nothing may hang)


class Units(BaseModel):
    celsius: bool


class _Store(EventStore):
    """An event store: the server gives each event an id and answers a Last-Event-ID (2025-11-25)."""

    def __init__(self) -> None:
        self.events: list[tuple[str, Any]] = []

    async def store_event(self, stream_id: str, message: Any) -> str:
        self.events.append((stream_id, message))
        return str(len(self.events))

    async def replay_events_after(self, last_event_id: str, send_callback: EventCallback) -> str | None:
        stream = self.events[int(last_event_id) - 1][0]
        for k, (other, message) in enumerate(self.events[int(last_event_id) :], int(last_event_id) + 1):
            if other == stream and message is not None:
                await send_callback(EventMessage(message, str(k)))
        return stream


def units() -> Elicit[Units]:
    """What the ``ask`` tool asks the user first."""
    return Elicit("Which units?", Units)


def _server() -> MCPServer:
    server = MCPServer("weather")

    @server.tool()
    async def forecast(city: str, days: int, ctx: Context) -> str:
        """A forecast, with a progress and a log notification per day."""
        for day in range(days):
            await ctx.report_progress(day + 1, days, f"{city}: day {day + 1} 🌤")
            await ctx.info(f"station {day + 1} read")
        return f"{city}: sunny for {days} days — 晴れ"

    @server.tool()
    async def ask(city: str, chosen: Annotated[Units, Resolve(units)]) -> str:
        """Asks the user first: an InputRequiredResult round trip at 2026, an elicitation before."""
        return f"{city}: {'21 °C' if chosen.celsius else '70 °F'}"

    @server.resource("weather://tokyo")
    def tokyo() -> str:
        return "sunny"

    @server.tool()
    async def touch(ctx: Context) -> str:
        """Changes the resource: a listen stream subscribed to it is told."""
        await ctx.notify_resource_updated("weather://tokyo")
        return "touched"

    return server


async def _accept(context: Any, params: Any) -> mcp_types.ElicitResult:
    return mcp_types.ElicitResult(action="accept", content={"celsius": True})


async def _session(url: str, mode: str, player: Any = None) -> dict[str, Any]:
    """What a client does and gets. ``player``: checked while the listen stream is open (the
    change it announces is held until the call that made it)."""
    progress: list[str | None] = []
    logs: list[Any] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append(message)

    async def on_log(params: mcp_types.LoggingMessageNotificationParams) -> None:
        logs.append(params.data)

    got: dict[str, Any] = {}
    with anyio.fail_after(LIMIT):
        await _talk(url, mode, player, got, on_progress, on_log)
    got["progress"], got["logs"] = progress, logs
    return got


async def _talk(url: str, mode: str, player: Any, got: dict[str, Any], on_progress: Any, on_log: Any) -> None:
    async with Client(
        url, mode=mode, log_level="info", logging_callback=on_log, elicitation_callback=_accept
    ) as client:
        got["version"] = client.protocol_version
        called = await client.call_tool(
            "forecast", {"city": "Tokyo", "days": 2}, progress_callback=on_progress
        )
        got["called"] = called.content[0].text  # type: ignore[union-attr]
        got["asked"] = (await client.call_tool("ask", {"city": "Tokyo"})).content[0].text  # type: ignore[union-attr]
        if mode != "legacy":
            async with client.listen(resource_subscriptions=["weather://tokyo"]) as subscription:
                got["listen_id"] = subscription.subscription_id
                if player is not None:
                    got["before_touch"] = _listen_play(player).stream.delivered
                await client.call_tool("touch", {})
                got["event"] = await subscription.__anext__()
                # a call after the last change (the refetch it calls for), then the stream is still open
                read = await client.read_resource("weather://tokyo")
                got["refetched"] = read.contents[0].text  # type: ignore[union-attr]
                got["open"] = await _still_open(subscription)


async def _still_open(subscription: Subscription) -> bool:
    """Whether the listen stream is still open once every task waits: its next event is not
    there (an ended stream raises SubscriptionLost at once, without waiting)."""
    await anyio.wait_all_tasks_blocked()
    with anyio.CancelScope() as scope:
        scope.cancel()
        await subscription.__anext__()
    return scope.cancelled_caught


def _listen_play(player: Any) -> Any:
    return next(p for p in player.plays if b'"subscriptions/listen"' in (p.interaction.request.body or b""))


def _fixed_url(request: ssemock.Request) -> ssemock.Request:
    headers = [(k, v) for k, v in request.headers if k not in ("host", "user-agent")]
    return ssemock.Request(request.method, URL, headers, request.body)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, dict[str, Any]]]:
    """Each version's session recorded once from a loopback server, which is stopped after."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    app = _server().streamable_http_app(event_store=_Store(), retry_interval=5)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    until(lambda: server.started, "the MCP server's start")
    out = {}
    try:
        for version, mode in VERSIONS.items():
            path = tmp_path_factory.mktemp("mcp") / f"{version}.json"
            with ssemock.use_cassette(path, record_mode="all", before_record_request=_fixed_url):
                live = asyncio.run(_session(f"http://127.0.0.1:{sock.getsockname()[1]}/mcp", mode))
            out[version] = (path, live)
    finally:
        server.should_exit = True
        thread.join(timeout=5)
        sock.close()
    return out


def _same(got: dict[str, Any], live: dict[str, Any]) -> None:
    skip = {"listen_id", "before_touch"}
    assert {k: v for k, v in got.items() if k not in skip} == {k: v for k, v in live.items() if k not in skip}


@pytest.mark.parametrize("version", VERSIONS)
def test_each_version_records_what_it_speaks(
    recorded: dict[str, tuple[Path, dict[str, Any]]], version: str
) -> None:
    path, live = recorded[version]
    assert live["version"] == version and live["progress"] == ["Tokyo: day 1 🌤", "Tokyo: day 2 🌤"]
    assert live["logs"] == ["station 1 read", "station 2 read"] and live["asked"] == "Tokyo: 21 °C"
    interactions = ssemock.Cassette.load(path).interactions
    assert mcp.versions(interactions) == [version]
    methods = [json.loads(x.request.body).get("method") for x in interactions if x.request.body]
    calls = [x for x in interactions if x.request.body and b'"ask"' in x.request.body]
    if version == "2026-07-28":  # stateless: no initialize, no session; two round trips of one call
        assert "initialize" not in methods and not any(
            mcp.session_id(x.request.headers) for x in interactions
        )
        assert all(x.request.headers and dict(x.request.headers)["mcp-method"] for x in interactions)
        assert len(calls) == 2 and b'"requestState"' in (calls[1].request.body or b"")
        (listen,) = [
            x for x in interactions if x.request.body and b'"subscriptions/listen"' in x.request.body
        ]
        frames = [json.loads(e.data) for e in decode([listen.response.body])]
        assert {f["params"]["_meta"][SUBSCRIPTION] for f in frames} == {live["listen_id"]}
        assert live["event"] == ResourceUpdated(uri="weather://tokyo")
        assert live["refetched"] == "sunny" and live["open"]
        assert mcp.stays_open(listen)  # the client closed it while it was open: no graceful close
    else:  # a session; the elicitation asked mid-call on the call's own stream, answered by a POST
        assert methods[0] == "initialize" and "response" not in methods
        assert len(calls) == 1 and b'"elicitation/create"' in calls[0].response.body
        assert all(e.id for e in decode([calls[0].response.body]))  # resumable: every event has an id


@pytest.mark.parametrize("chunking", ssemock.chunking.ALL, ids=str)
@pytest.mark.parametrize("version", VERSIONS)
def test_replayed_with_the_server_stopped_under_every_chunking(
    recorded: dict[str, tuple[Path, dict[str, Any]]], version: str, chunking: Any
) -> None:
    path, live = recorded[version]
    with ssemock.use_cassette(path, chunking=chunking) as player:
        got = asyncio.run(_session(URL, VERSIONS[version], player))
    _same(got, live)
    if version == "2026-07-28":
        # the listen id is this process's next one, not the recorded one, and every frame served carries it
        assert got["listen_id"] != live["listen_id"]
        served = [json.loads(e.data) for e in decode([_listen_play(player).body])]
        assert {f["params"]["_meta"][SUBSCRIPTION] for f in served} == {got["listen_id"]}
        # the change was held until the call that made it: only the acknowledgement came before
        body = _listen_play(player).body
        assert got["before_touch"] == mcp.follows(body)[0] == body.index(b"event: message", 1)
        # kept open after its last frame, as live, and closed by the client: no SubscriptionLost
        assert got["open"] and _listen_play(player).stream.consumed


@pytest.mark.parametrize("version", VERSIONS)
def test_ssemock_serve_replays_each_version_to_the_client(
    recorded: dict[str, tuple[Path, dict[str, Any]]], version: str
) -> None:
    """Over a real loopback connection: the listen stream held, its frames carrying this run's id."""
    path, live = recorded[version]
    with running(app(path, chunking="mid_utf8")) as base:
        got = asyncio.run(_session(f"{base}/mcp", VERSIONS[version]))
    _same(got, live)


def test_the_resume_fault_is_answered_from_the_cassette_each_notification_once(
    recorded: dict[str, tuple[Path, dict[str, Any]]],
) -> None:
    path, live = recorded["2025-11-25"]
    with ssemock.use_cassette(
        path, faults="resume:after_event=2,on=POST */mcp", chunking="mid_utf8"
    ) as player:
        got = asyncio.run(_session(URL, "legacy"))
    _same(got, live)  # the progress and log notifications once each, in order
    resumed = [p for p in player.plays if p.request.headers.get("last-event-id")]
    assert resumed and all(p.request.method == "GET" for p in resumed)
    forecast, *rest = [p for p in player.plays if b'"forecast"' in (p.interaction.request.body or b"")]
    assert [p.request.method for p in rest] == ["GET"] * len(rest)
    assert forecast.stream is not None and forecast.stream.failed  # cut after two events ...
    assert forecast.index in {p.index for p in resumed}  # ... and the rest served to its reconnection


def test_ssemock_serve_answers_the_reconnection_of_a_resume_fault(
    recorded: dict[str, tuple[Path, dict[str, Any]]],
) -> None:
    """Over a real connection: the dropped stream resumed by the client's GET with Last-Event-ID."""
    path, live = recorded["2025-11-25"]
    lines: list[str] = []
    with running(app(path, faults="resume:after_event=2,on=POST */mcp", log=lines.append)) as base:
        got = asyncio.run(_session(f"{base}/mcp", "legacy"))
    _same(got, live)
    assert any("resumed after id" in line for line in lines)


def test_the_resume_fault_is_refused_naming_a_version_without_resumption(
    recorded: dict[str, tuple[Path, dict[str, Any]]],
) -> None:
    path, _ = recorded["2026-07-28"]
    for faults in ("resume:after_event=1", "resume:after_event=1,on=POST */mcp"):
        with pytest.raises(
            ValueError, match=r"resume:after_event=1.*MCP 2026-07-28 has no stream resumption"
        ) as e:
            ssemock.use_cassette(path, faults=faults).__enter__()
        assert str(path) in str(e.value) and "interaction #0" in str(e.value)
    with ssemock.use_cassette(
        path, faults="disconnect:after_event=1,on=POST */mcp"
    ) as player:  # a loss is fine
        with pytest.raises(BaseException):  # noqa: B017 (the SDK's task group wraps its MCPError)
            asyncio.run(_session(URL, "2026-07-28"))
    assert not [p for p in player.plays if p.request.method == "GET"]  # nothing tried to resume


@pytest.mark.parametrize("version", VERSIONS)
def test_show_validate_and_the_page_name_the_version(
    recorded: dict[str, tuple[Path, dict[str, Any]]], version: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path, _ = recorded[version]
    assert main(["show", str(path)]) == 0
    shown = capsys.readouterr().out
    assert shown.splitlines()[0].endswith(f"interactions (mcp {version})")
    assert f"SSE events; protocol mcp {version}" in shown  # each stream's own
    assert main(["show", str(path), "--json"]) == 0
    as_json = json.loads(capsys.readouterr().out)
    assert as_json["versions"] == {"mcp": [version]}
    assert {s["protocol_version"] for s in as_json["shown"]} == {f"mcp {version}"}
    assert main(["validate", str(path)]) == 0
    assert f"speaks mcp {version}" in capsys.readouterr().out
    page = render([ssemock.Cassette.load(path)])
    assert f'data-protocol="mcp {version}"' in page


def _listen(path: Path) -> ssemock.Interaction:
    return next(
        x
        for x in ssemock.Cassette.load(path).interactions
        if x.request.body and b'"subscriptions/listen"' in x.request.body
    )


def test_a_listen_stream_the_server_ended_ends_as_recorded(
    recorded: dict[str, tuple[Path, dict[str, Any]]], tmp_path: Path
) -> None:
    """The server's graceful close (the listen request answered) recorded: the replayed stream
    ends there, and the SDK's subscription loop ends (no SubscriptionLost, nothing kept open)."""
    path, _ = recorded["2026-07-28"]
    cassette = ssemock.Cassette.load(path)
    k, listen = next(
        (k, x) for k, x in enumerate(cassette.interactions) if x.request.body and b"listen" in x.request.body
    )
    listen_id = json.loads(listen.request.body or b"")["id"]
    close = f'event: message\r\ndata: {{"jsonrpc":"2.0","id":"{listen_id}","result":{{}}}}\r\n\r\n'.encode()
    body = listen.response.body + close
    ended = dataclasses.replace(
        listen.response,
        body=body,
        ends=[*listen.response.ends, len(body)],
        times=[*listen.response.times, 0.1],
        complete=True,
    )
    cassette.interactions[k] = dataclasses.replace(listen, response=ended)
    assert mcp.stays_open(listen) and not mcp.stays_open(cassette.interactions[k])
    cassette.save(tmp_path / "ended.json")

    async def listen_to_the_end() -> list[Any]:
        with anyio.fail_after(LIMIT):
            async with Client(
                URL, mode="2026-07-28", log_level="info", elicitation_callback=_accept
            ) as client:
                async with client.listen(resource_subscriptions=["weather://tokyo"]) as subscription:
                    await client.call_tool("touch", {})
                    return [event async for event in subscription]  # ends at the graceful close

    with ssemock.use_cassette(tmp_path / "ended.json", allow_playback_repeats=True) as player:
        events = asyncio.run(listen_to_the_end())
    assert events == [ResourceUpdated(uri="weather://tokyo")]
    assert _listen_play(player).stream.consumed


def _acknowledged_only(path: Path, to: Path) -> tuple[ssemock.Interaction, bytes]:
    """The recorded listen interaction alone, its stream cut to the acknowledgement (no change to
    hold), saved at ``to``; and that acknowledgement."""
    listen = _listen(path)
    ack = listen.response.body[: listen.response.ends[0]]
    assert b"notifications/subscriptions/acknowledged" in ack and not mcp.follows(ack)
    only = dataclasses.replace(listen.response, body=ack, ends=[len(ack)], times=[0.0])
    ssemock.Cassette([dataclasses.replace(listen, response=only)]).save(to)
    return listen, ack


def _read_listen(url: str, listen: ssemock.Interaction, timeout: float | None, into: list[bytes]) -> None:
    """The listen request sent as recorded, its stream read into ``into`` to the end
    (``timeout``: the read timeout)."""
    with httpx.Client(timeout=httpx.Timeout(LIMIT, read=timeout)) as client:
        with client.stream("POST", url, headers=listen.request.headers, content=listen.request.body) as r:
            for chunk in r.iter_bytes():
                into.append(chunk)


def test_a_listen_stream_kept_open_is_released_when_the_player_stops(
    recorded: dict[str, tuple[Path, dict[str, Any]]], tmp_path: Path
) -> None:
    """A client that reads on past the last frame (its acknowledgement, here) with no read timeout
    waits, and the player's stop ends its stream; with a read timeout it gets its own ReadTimeout."""
    listen, ack = _acknowledged_only(recorded["2026-07-28"][0], tmp_path / "ack.json")
    got: list[bytes] = []

    def read(timeout: float | None) -> None:
        _read_listen(URL, listen, timeout, got)

    with ssemock.use_cassette(tmp_path / "ack.json", allow_playback_repeats=True) as player:
        reader = threading.Thread(target=read, args=(None,), daemon=True)
        reader.start()
        until(lambda: player.plays and player.plays[0].stream.consumed, "the listen stream's last frame")
        assert reader.is_alive()  # kept open after it
        with pytest.raises(httpx.ReadTimeout):
            read(0.05)
    reader.join(timeout=LIMIT)
    assert not reader.is_alive() and got == [ack, ack]


def test_ssemock_serve_releases_a_listen_stream_kept_open_when_it_stops(
    recorded: dict[str, tuple[Path, dict[str, Any]]], tmp_path: Path
) -> None:
    """Over the wire: the stream stays open after its acknowledgement, and ends when serve stops."""
    listen, ack = _acknowledged_only(recorded["2026-07-28"][0], tmp_path / "ack.json")
    got: list[bytes] = []
    lines: list[str] = []
    served = app(tmp_path / "ack.json", log=lines.append)
    with running(served) as base:
        reader = threading.Thread(target=_read_listen, args=(f"{base}/mcp", listen, None, got), daemon=True)
        reader.start()
        until(lambda: served.state.ssemock.exchanges, "the listen request's answer")
        assert reader.is_alive()
    reader.join(timeout=LIMIT)
    assert not reader.is_alive() and b"".join(got) == ack
