"""A replayed WebSocket stall longer than a timeout the client library knows ends the way that
timeout ends, at once (issue 34, item 4): websockets' keepalive (asyncio, sync and legacy
clients: close code 1011 "keepalive ping timeout"), aiohttp's ``receive_timeout`` (its
TimeoutError, close code 1006) and ``heartbeat`` (its missing-pong ServerTimeoutError). A shorter
stall is served, waited on the timing clock (scaled). Every test replays on a fake clock: it
asserts what replay slept and what the client saw, never how long it took; the client's own
timers are minutes long, so a replay that waited for them would never finish."""

from __future__ import annotations

import asyncio
import json
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from conftest import FakeClock

import ssemock
from ssemock.store.model import Interaction, Request, Response
from ssemock.store.websocket import Close, Message, WebSocket

URL = "wss://api.example/v1/realtime?model=gpt-realtime"
EVENTS = ["session.created", "response.created", "response.output_text.delta", "response.done"]
KEEPALIVE = {"ping_interval": 600, "ping_timeout": 600}  # first ping at 600 s; given up at 1,200 s


def _cassette(path: Path, stall: float) -> Path:
    """A Realtime session whose delta arrived ``stall`` seconds after ``response.created``."""
    session = WebSocket(
        [
            Message("recv", 0.010, "text", json.dumps({"type": EVENTS[0]})),
            Message("send", 0.020, "text", json.dumps({"type": "response.create"})),
            Message("recv", 0.030, "text", json.dumps({"type": EVENTS[1]})),
            Message("recv", 0.030 + stall, "text", json.dumps({"type": EVENTS[2], "delta": "Hi"})),
            Message("recv", 0.040 + stall, "text", json.dumps({"type": EVENTS[3]})),
        ],
        close=Close(1000, "", "client", True),
    )
    ssemock.Cassette([Interaction(Request("GET", URL), Response(101), session)]).save(path)
    return path


def _closed(exc: Any) -> tuple[Any, ...]:
    return ("closed", exc.sent.code if exc.sent else None, exc.sent.reason if exc.sent else None, exc.rcvd)


async def _asyncio_client(**options: Any) -> list[Any]:
    from websockets.asyncio.client import connect
    from websockets.exceptions import ConnectionClosedError

    seen: list[Any] = []
    async with connect(URL, **options) as ws:
        seen.append(json.loads(await ws.recv())["type"])
        await ws.send(json.dumps({"type": "response.create"}))
        try:
            while seen[-1] != "response.done":
                seen.append(json.loads(await ws.recv())["type"])
        except ConnectionClosedError as exc:
            seen.append(_closed(exc))
    return seen


def _sync_client(**options: Any) -> list[Any]:
    from websockets.exceptions import ConnectionClosedError
    from websockets.sync.client import connect

    seen: list[Any] = []
    with connect(URL, **options) as ws:
        seen.append(json.loads(ws.recv())["type"])
        ws.send(json.dumps({"type": "response.create"}))
        try:
            while seen[-1] != "response.done":
                seen.append(json.loads(ws.recv())["type"])
        except ConnectionClosedError as exc:
            seen.append(_closed(exc))
    return seen


async def _legacy_client(**options: Any) -> list[Any]:
    from websockets.exceptions import ConnectionClosedError

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from websockets.legacy.client import connect

    seen: list[Any] = []
    async with connect(URL, **options) as ws:
        seen.append(json.loads(await ws.recv())["type"])
        await ws.send(json.dumps({"type": "response.create"}))
        try:
            while seen[-1] != "response.done":
                seen.append(json.loads(await ws.recv())["type"])
        except ConnectionClosedError as exc:
            seen.append(_closed(exc))
    return seen


KEEPALIVE_CLIENTS: dict[str, Callable[..., list[Any]]] = {
    "websockets": lambda **o: asyncio.run(_asyncio_client(**o)),
    "websockets.sync": _sync_client,
    "websockets.legacy": lambda **o: asyncio.run(_legacy_client(**o)),
}


@pytest.mark.parametrize("stack", list(KEEPALIVE_CLIENTS))
def test_a_stall_past_the_keepalive_fails_as_the_keepalive_does_at_once(
    tmp_path: Path, fake_clock: FakeClock, stack: str
) -> None:
    path = _cassette(tmp_path / "stall.json", stall=3600)
    with ssemock.use_cassette(path, record_mode="none", timing="recorded"):
        seen = KEEPALIVE_CLIENTS[stack](**KEEPALIVE)
    # what a stalled server does to the client's keepalive: its ping is never answered
    assert seen == [*EVENTS[:2], ("closed", 1011, "keepalive ping timeout", None)]
    assert all(s < 1 for s in fake_clock.slept)  # the hour was not waited for, not even on the fake clock


def test_a_shorter_timeout_of_the_users_comes_first_then_the_keepalive(
    tmp_path: Path, fake_clock: FakeClock
) -> None:
    from websockets.exceptions import ConnectionClosedError
    from websockets.sync.client import connect

    path = _cassette(tmp_path / "stall.json", stall=3600)
    with ssemock.use_cassette(path, record_mode="none", timing="recorded"), connect(URL, **KEEPALIVE) as ws:
        ws.recv()
        ws.send(json.dumps({"type": "response.create"}))
        assert json.loads(ws.recv())["type"] == "response.created"
        with pytest.raises(TimeoutError, match=r"timed out in 2\.0s"):  # 2 s: before the keepalive's 1,200
            ws.recv(timeout=2)
        with pytest.raises(ConnectionClosedError) as closed:  # waiting on: the keepalive ends it
            ws.recv()
    assert _closed(closed.value) == ("closed", 1011, "keepalive ping timeout", None)
    assert all(s < 1 for s in fake_clock.slept)


def test_a_wait_for_of_the_users_comes_first_then_the_keepalive(tmp_path: Path) -> None:
    from websockets.asyncio.client import connect
    from websockets.exceptions import ConnectionClosedError

    path = _cassette(tmp_path / "stall.json", stall=3600)

    async def run() -> list[Any]:
        async with connect(URL, **KEEPALIVE) as ws:
            seen = [json.loads(await ws.recv())["type"]]
            await ws.send(json.dumps({"type": "response.create"}))
            seen.append(json.loads(await ws.recv())["type"])
            try:
                await asyncio.wait_for(ws.recv(), 0.05)  # live: 50 ms, long before the keepalive's 1,200 s
            except TimeoutError:
                seen.append("timed out")
            try:
                await ws.recv()
            except ConnectionClosedError as exc:
                seen.append(_closed(exc))
            return seen

    with ssemock.use_cassette(path, record_mode="none", timing="recorded"):
        assert asyncio.run(run()) == [
            *EVENTS[:2],
            "timed out",
            ("closed", 1011, "keepalive ping timeout", None),
        ]


@pytest.mark.parametrize(("stall", "ends"), [(900, False), (1300, True)])
@pytest.mark.parametrize("stack", list(KEEPALIVE_CLIENTS))
def test_the_keepalive_ends_a_stall_only_when_its_ping_would_go_unanswered(
    tmp_path: Path, fake_clock: FakeClock, stack: str, stall: float, ends: bool
) -> None:
    # scaled by 1/5000: pings every 0.12 s, given up 0.12 s later; silent from 0 to 0.18 s (900)
    # or 0.26 s (1300): the first ping (0.12 s) is answered in time (0.18 < 0.24), or never is
    path = _cassette(tmp_path / "stall.json", stall=stall)
    with ssemock.use_cassette(path, record_mode="none", timing="scaled:0.0002"):
        seen = KEEPALIVE_CLIENTS[stack](ping_interval=0.12, ping_timeout=0.12)
    assert seen == ([*EVENTS[:2], ("closed", 1011, "keepalive ping timeout", None)] if ends else EVENTS)


def test_the_stall_fault_past_the_keepalive_fails_as_the_keepalive_does(tmp_path: Path) -> None:
    path = _cassette(tmp_path / "plain.json", stall=0.01)
    fault = "stall:before_message=3,seconds=3600"
    with ssemock.use_cassette(path, record_mode="none", timing="recorded", faults=fault):
        seen = asyncio.run(_asyncio_client(**KEEPALIVE))
    assert seen == [*EVENTS[:2], ("closed", 1011, "keepalive ping timeout", None)]
    # scaled, the same stall (0.36 s) is shorter than the keepalive: served after its time
    with ssemock.use_cassette(path, record_mode="none", timing="scaled:0.0001", faults=fault):
        assert asyncio.run(_asyncio_client(**KEEPALIVE)) == EVENTS


@pytest.mark.parametrize(("timeout", "served"), [(30, True), (0.05, False)])
def test_a_timeout_of_your_own_sees_the_stall_on_the_timing_clock(
    tmp_path: Path, timeout: float, served: bool
) -> None:
    from websockets.asyncio.client import connect

    path = _cassette(tmp_path / "stall.json", stall=3600)

    async def run() -> list[Any]:
        async with connect(URL, ping_interval=None) as ws:  # no keepalive: only the user's timeout
            seen = [json.loads(await ws.recv())["type"]]
            await ws.send(json.dumps({"type": "response.create"}))
            try:
                for _ in range(3):
                    seen.append(json.loads(await asyncio.wait_for(ws.recv(), timeout))["type"])
            except TimeoutError:
                seen.append("timed out")
            return seen

    # the hour, scaled to 0.36 s: a 30 s timeout of the user's sees the message, a 50 ms one times out
    with ssemock.use_cassette(path, record_mode="none", timing="scaled:0.0001"):
        assert asyncio.run(run()) == (EVENTS if served else [*EVENTS[:2], "timed out"])


async def _aiohttp_client(**options: Any) -> list[Any]:
    seen: list[Any] = []
    async with aiohttp.ClientSession() as session, session.ws_connect(URL, **options) as ws:
        seen.append((await ws.receive_json())["type"])
        await ws.send_json({"type": "response.create"})
        try:
            while seen[-1] != "response.done":
                message = await ws.receive()
                if message.type != aiohttp.WSMsgType.TEXT:
                    seen.append((message.type.name, repr(message.data), ws.close_code))
                    break
                seen.append(json.loads(message.data)["type"])
        except TimeoutError as exc:
            seen.append((type(exc).__name__, ws.close_code))
    return seen


@pytest.mark.parametrize(
    ("options", "ending"),
    [
        ({"timeout": aiohttp.ClientWSTimeout(ws_receive=600)}, ("TimeoutError", 1006)),
        ({"heartbeat": 600}, ("ERROR", "ServerTimeoutError('No PONG received after 300.0 seconds')", 1006)),
    ],
    ids=["receive_timeout", "heartbeat"],
)
def test_aiohttp_ends_a_stall_past_its_timeout_as_it_does_at_once(
    tmp_path: Path, options: dict[str, Any], ending: tuple[Any, ...]
) -> None:
    path = _cassette(tmp_path / "stall.json", stall=3600)
    with ssemock.use_cassette(path, record_mode="none", timing="recorded"):
        seen = asyncio.run(_aiohttp_client(**options))
    assert seen == [*EVENTS[:2], ending]
    with ssemock.use_cassette(path, record_mode="none", timing="scaled:0.00005"):  # 0.18 s: served
        assert asyncio.run(_aiohttp_client(**options)) == EVENTS


@pytest.mark.parametrize(
    ("receive", "ending"),
    [
        (600, ("TimeoutError", 1006)),
        (1000, ("ERROR", "ServerTimeoutError('No PONG received after 300.0 seconds')", 1006)),
    ],
)
def test_aiohttp_the_first_of_receive_timeout_and_heartbeat_ends_the_stall(
    tmp_path: Path, receive: float, ending: tuple[Any, ...]
) -> None:
    path = _cassette(tmp_path / "stall.json", stall=3600)
    options = {"timeout": aiohttp.ClientWSTimeout(ws_receive=receive), "heartbeat": 600}  # heartbeat: 900 s
    with ssemock.use_cassette(path, record_mode="none", timing="recorded"):
        assert asyncio.run(_aiohttp_client(**options)) == [*EVENTS[:2], ending]


def test_aiohttp_receive_with_its_own_timeout(tmp_path: Path) -> None:
    path = _cassette(tmp_path / "stall.json", stall=3600)

    async def run() -> list[Any]:
        async with aiohttp.ClientSession() as session, session.ws_connect(URL) as ws:
            seen = [(await ws.receive_json())["type"]]
            await ws.send_json({"type": "response.create"})
            seen.append((await ws.receive_json(timeout=5))["type"])  # received already: returned
            with pytest.raises(TimeoutError):
                await ws.receive(timeout=5)
            return [*seen, ws.close_code]

    with ssemock.use_cassette(path, record_mode="none", timing="recorded"):
        assert asyncio.run(run()) == [*EVENTS[:2], 1006]


def test_httpx_ws_async_replay_waits_for_the_clients_message_without_polling(
    tmp_path: Path, fake_clock: FakeClock
) -> None:
    import httpx
    from httpx_ws import aconnect_ws

    path = _cassette(tmp_path / "session.json", stall=0.5)

    async def run() -> list[Any]:
        async with httpx.AsyncClient() as client, aconnect_ws(URL.replace("wss", "https"), client) as ws:
            seen = [(await ws.receive_json())["type"]]
            await asyncio.sleep(0)  # the reader waits for the client's message meanwhile
            await ws.send_json({"type": "response.create"})
            while seen[-1] != "response.done":
                seen.append((await ws.receive_json())["type"])
            return seen

    with ssemock.use_cassette(path, record_mode="none", timing="instant"):
        assert asyncio.run(run()) == EVENTS
    # before: a 1 ms sleep on the timing clock per turn while the client had not sent yet
    assert fake_clock.slept == []


def _httpx_ws_sync(**options: Any) -> list[Any]:
    import queue

    import httpx
    from httpx_ws import WebSocketNetworkError, connect_ws

    seen: list[Any] = []
    with httpx.Client() as client, connect_ws(URL.replace("wss", "https"), client, **options) as ws:
        seen.append(ws.receive_json()["type"])
        ws.send_json({"type": "response.create"})
        seen.append(ws.receive_json()["type"])
        try:
            seen.append(ws.receive_json(timeout=2)["type"])
        except queue.Empty:  # httpx-ws's own sync timeout
            seen.append("timed out")
        try:
            while seen[-1] != "response.done":
                seen.append(ws.receive_json()["type"])
        except WebSocketNetworkError:
            seen.append("keepalive ping timeout")
    return seen


async def _httpx_ws_async(**options: Any) -> list[Any]:
    import httpx
    from httpx_ws import WebSocketNetworkError, aconnect_ws

    seen: list[Any] = []
    async with (
        httpx.AsyncClient() as client,
        aconnect_ws(URL.replace("wss", "https"), client, **options) as ws,
    ):
        seen.append((await ws.receive_json())["type"])
        await ws.send_json({"type": "response.create"})
        seen.append((await ws.receive_json())["type"])
        try:
            seen.append((await ws.receive_json(timeout=2))["type"])
        except TimeoutError:
            seen.append("timed out")
        try:
            while seen[-1] != "response.done":
                seen.append((await ws.receive_json())["type"])
        except WebSocketNetworkError:
            seen.append("keepalive ping timeout")
    return seen


HTTPX_WS: dict[str, Callable[..., list[Any]]] = {
    "sync": _httpx_ws_sync,
    "async": lambda **o: asyncio.run(_httpx_ws_async(**o)),
}


@pytest.mark.parametrize("flavour", list(HTTPX_WS))
def test_httpx_ws_ends_a_stall_as_its_receive_timeout_then_its_keepalive_do(
    tmp_path: Path, flavour: str
) -> None:
    keepalive = {"keepalive_ping_interval_seconds": 600, "keepalive_ping_timeout_seconds": 600}
    path = _cassette(tmp_path / "stall.json", stall=3600)
    with ssemock.use_cassette(path, record_mode="none", timing="recorded"):
        seen = HTTPX_WS[flavour](**keepalive)
    # receive(timeout=2) ends first (2 s), then the keepalive (1,200 s): neither waited for
    assert seen == [*EVENTS[:2], "timed out", "keepalive ping timeout"]
    with ssemock.use_cassette(path, record_mode="none", timing="scaled:0.00005"):  # 0.18 s: served
        assert HTTPX_WS[flavour](**keepalive) == [*EVENTS[:2], *EVENTS[2:]]


@pytest.mark.parametrize("sync", [True, False], ids=["sync", "async"])
def test_a_read_of_the_101s_stream_with_a_timeout_ends_when_the_session_waits_for_the_client(
    tmp_path: Path, sync: bool
) -> None:
    """The session sends nothing until the client's ``response.create``: a read of the replayed
    101's network stream given a timeout raises httpcore's ReadTimeout, as a real socket's does
    (it waited forever, so a client that lost its place hung instead of failing)."""
    import httpcore
    import httpx

    path = _cassette(tmp_path / "session.json", stall=0.0)
    headers = {
        "Upgrade": "websocket",
        "Connection": "Upgrade",
        "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
        "Sec-WebSocket-Version": "13",
    }
    url = URL.replace("wss", "https")

    async def read_twice() -> tuple[bytes, type[BaseException] | None]:
        async with httpx.AsyncClient() as client, client.stream("GET", url, headers=headers) as response:
            stream = response.extensions["network_stream"]
            first = await stream.read(65536, timeout=5)
            try:
                await stream.read(65536, timeout=0.01)
            except httpcore.ReadTimeout as e:
                return first, type(e)
            return first, None

    with ssemock.use_cassette(path, record_mode="none"):
        if sync:
            with httpx.Client() as client, client.stream("GET", url, headers=headers) as response:
                stream = response.extensions["network_stream"]
                first = stream.read(65536, timeout=5)
                with pytest.raises(httpcore.ReadTimeout, match="sends nothing more until the client"):
                    stream.read(65536, timeout=0.01)
        else:
            first, raised = asyncio.run(read_twice())
            assert raised is httpcore.ReadTimeout
    assert b"session.created" in first
