"""A ``stall`` fault is never silently skipped (issue 43 item 7), through every client stack the
registries name (`ssemock.stacks.STACKS`, `ssemock.stacks.WS_STACKS` and httpx-ws), so a new
stack is a new row here (the guard below fails until it has a client):

* a read with a timeout the stack can see that is shorter than the stall ends at once with the
  client's own timeout exception (nothing slept: the fake clock says so);
* under ``instant``, a stall no timeout of the client's can be seen to end is skipped, and a
  `ssemock.SsemockWarning` names the fault and says so;
* under a scaling timing the stall is waited, scaled (what the fake clock slept).

``ssemock serve`` waiting a stall for real under every timing is in tests/test_serve.py."""

from __future__ import annotations

import asyncio
import json
import queue
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp
import httpx
import httpx2
import pytest
import urllib3
from conftest import FakeClock

import ssemock
from ssemock import stacks
from ssemock.store.model import Interaction, Request, Response
from ssemock.store.websocket import Close, Message, WebSocket

URL = "https://api.example.test/v1/stream"
BODY = [b"data: one\n\n", b"data: two\n\n", b"data: three\n\n"]
STALL = "stall:before_event=1,seconds=60"
TIMED_OUT = "timed out"

# -- HTTP: one client per stack; ``timeout`` None sets no read timeout -------------------------


def _httpx_like(module: Any) -> Callable[[float | None], Any]:
    def read(timeout: float | None) -> Any:
        with module.Client(timeout=timeout) as client, client.stream("GET", URL) as response:
            try:
                return b"".join(response.iter_bytes())
            except module.ReadTimeout:
                return TIMED_OUT

    return read


def _aiohttp(timeout: float | None) -> Any:
    async def read() -> Any:
        limits = aiohttp.ClientTimeout(total=None, sock_read=timeout)
        async with aiohttp.ClientSession(timeout=limits) as session, session.get(URL) as response:
            try:
                return b"".join([chunk async for chunk in response.content.iter_any()])
            except aiohttp.ServerTimeoutError:
                return TIMED_OUT

    return asyncio.run(read())


def _urllib3(timeout: float | None) -> Any:
    response = urllib3.PoolManager().request(
        "GET", URL, preload_content=False, retries=False, timeout=urllib3.Timeout(connect=5, read=timeout)
    )
    try:
        return b"".join(response.stream(1024))
    except urllib3.exceptions.ReadTimeoutError:
        return TIMED_OUT
    finally:
        response.release_conn()


HTTP_CLIENTS: dict[str, Callable[[float | None], Any]] = {
    "httpx": _httpx_like(httpx),
    "httpx2": _httpx_like(httpx2),
    "aiohttp": _aiohttp,
    "urllib3": _urllib3,
}


def _http_cassette() -> ssemock.Cassette:
    cassette = ssemock.Cassette()
    cassette.add("GET", URL, BODY, headers={"content-type": "text/event-stream"})
    return cassette


def _replayed(read: Callable[[], Any], **options: Any) -> tuple[Any, list[str]]:
    """What the client read, and the SsemockWarnings the replay gave."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = read()
    return got, [str(w.message) for w in caught if issubclass(w.category, ssemock.SsemockWarning)]


def test_every_registered_stack_has_a_stall_client() -> None:
    assert set(stacks.STACKS) == set(HTTP_CLIENTS)
    assert {*stacks.WS_STACKS, "httpx-ws"} == set(WS_CLIENTS)


@pytest.mark.parametrize("stack", list(stacks.STACKS))
def test_an_http_stall_past_a_visible_read_timeout_is_the_clients_timeout_at_once(
    stack: str, fake_clock: FakeClock
) -> None:
    with ssemock.replay(_http_cassette(), faults=STALL, allow_playback_repeats=True):
        got, said = _replayed(lambda: HTTP_CLIENTS[stack](5.0))
    assert got == TIMED_OUT and fake_clock.slept == [] and said == []


@pytest.mark.parametrize("stack", list(stacks.STACKS))
def test_an_http_stall_no_visible_timeout_ends_is_skipped_with_a_warning_under_instant(
    stack: str, fake_clock: FakeClock
) -> None:
    with ssemock.replay(_http_cassette(), faults=STALL, allow_playback_repeats=True):
        got, said = _replayed(lambda: HTTP_CLIENTS[stack](None))
        quiet, shorter = _replayed(lambda: HTTP_CLIENTS[stack](120.0))  # longer than the stall
    assert got == quiet == b"".join(BODY) and fake_clock.slept == []
    assert len(said) == 1 and STALL in said[0] and "skipped" in said[0] and "'instant'" in said[0]
    assert shorter == []  # read on after it, as live: nothing was hidden


@pytest.mark.parametrize("stack", list(stacks.STACKS))
def test_an_http_stall_is_waited_scaled_under_a_scaling_timing(stack: str, fake_clock: FakeClock) -> None:
    with ssemock.replay(_http_cassette(), faults=STALL, timing="scaled:0.001", allow_playback_repeats=True):
        got, said = _replayed(lambda: HTTP_CLIENTS[stack](None))
    assert got == b"".join(BODY) and said == []
    assert fake_clock.slept and fake_clock.slept[0] == pytest.approx(0.06)


# -- WebSocket: one client per stack; ``timeout`` None reads with no timeout ----------------------

WS_URL = "wss://api.example/v1/realtime?model=gpt-realtime"
EVENTS = ["session.created", "response.created", "response.output_text.delta", "response.done"]
WS_STALL = "stall:before_message=3,seconds=60"  # before the delta


def _ws_cassette(path: Path) -> Path:
    session = WebSocket(
        [
            Message("recv", 0.010, "text", json.dumps({"type": EVENTS[0]})),
            Message("send", 0.020, "text", json.dumps({"type": "response.create"})),
            Message("recv", 0.030, "text", json.dumps({"type": EVENTS[1]})),
            Message("recv", 0.040, "text", json.dumps({"type": EVENTS[2], "delta": "Hi"})),
            Message("recv", 0.050, "text", json.dumps({"type": EVENTS[3]})),
        ],
        close=Close(1000, "", "client", True),
    )
    ssemock.Cassette([Interaction(Request("GET", WS_URL), Response(101), session)]).save(path)
    return path


async def _websockets(timeout: float | None, legacy: bool = False) -> list[Any]:
    if legacy:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            from websockets.legacy.client import connect
    else:
        from websockets.asyncio.client import connect  # type: ignore[assignment]

    seen: list[Any] = []
    async with connect(WS_URL, ping_interval=None) as ws:
        seen.append(json.loads(await ws.recv())["type"])
        await ws.send(json.dumps({"type": "response.create"}))
        seen.append(json.loads(await ws.recv())["type"])
        try:
            while seen[-1] != EVENTS[-1]:
                seen.append(json.loads(await asyncio.wait_for(ws.recv(), timeout))["type"])
        except TimeoutError:
            seen.append(TIMED_OUT)
    return seen


def _websockets_sync(timeout: float | None) -> list[Any]:
    from websockets.sync.client import connect

    seen: list[Any] = []
    with connect(WS_URL, ping_interval=None) as ws:
        seen.append(json.loads(ws.recv())["type"])
        ws.send(json.dumps({"type": "response.create"}))
        seen.append(json.loads(ws.recv())["type"])
        try:
            while seen[-1] != EVENTS[-1]:
                seen.append(json.loads(ws.recv(timeout=timeout))["type"])
        except TimeoutError:
            seen.append(TIMED_OUT)
    return seen


async def _aiohttp_ws(timeout: float | None) -> list[Any]:
    seen: list[Any] = []
    async with aiohttp.ClientSession() as session, session.ws_connect(WS_URL) as ws:
        seen.append((await ws.receive_json())["type"])
        await ws.send_json({"type": "response.create"})
        seen.append((await ws.receive_json())["type"])
        try:
            while seen[-1] != EVENTS[-1]:
                seen.append((await ws.receive_json(timeout=timeout))["type"])
        except TimeoutError:
            seen.append(TIMED_OUT)
    return seen


def _httpx_ws(timeout: float | None) -> list[Any]:
    from httpx_ws import connect_ws

    seen: list[Any] = []
    no_keepalive = {"keepalive_ping_interval_seconds": None}  # (its default, 40 s, ends a 60 s stall)
    with (
        httpx.Client() as client,
        connect_ws(WS_URL.replace("wss", "https"), client, **no_keepalive) as ws,
    ):
        seen.append(ws.receive_json()["type"])
        ws.send_json({"type": "response.create"})
        seen.append(ws.receive_json()["type"])
        try:
            while seen[-1] != EVENTS[-1]:
                seen.append(ws.receive_json(timeout=timeout)["type"])
        except queue.Empty:
            seen.append(TIMED_OUT)
    return seen


WS_CLIENTS: dict[str, Callable[[float | None], list[Any]]] = {
    "websockets": lambda t: asyncio.run(_websockets(t)),
    "websockets.sync": _websockets_sync,
    "websockets.legacy": lambda t: asyncio.run(_websockets(t, legacy=True)),
    "aiohttp.ws": lambda t: asyncio.run(_aiohttp_ws(t)),
    "httpx-ws": _httpx_ws,
}
#: a timeout shorter than the stall (60 s): a stack that sees it in the read ends at once; a
#: deadline of asyncio's (wait_for's) is on the loop's clock, so it is short: it ends when it ends
SHORT: dict[str, float] = {"websockets": 0.05, "websockets.legacy": 0.05}


@pytest.mark.parametrize("stack", list(WS_CLIENTS))
def test_a_ws_stall_past_the_clients_timeout_is_its_own_timeout_under_instant(
    stack: str, tmp_path: Path, fake_clock: FakeClock
) -> None:
    path = _ws_cassette(tmp_path / "session.json")
    with ssemock.use_cassette(path, record_mode="none", faults=WS_STALL):
        seen, said = _replayed(lambda: WS_CLIENTS[stack](SHORT.get(stack, 30.0)))
    assert seen == [*EVENTS[:2], TIMED_OUT]
    assert fake_clock.slept == [] and said == []


@pytest.mark.parametrize("stack", list(WS_CLIENTS))
def test_a_ws_stall_nothing_ends_is_skipped_with_a_warning_naming_it_under_instant(
    stack: str, tmp_path: Path, fake_clock: FakeClock
) -> None:
    path = _ws_cassette(tmp_path / "session.json")
    with ssemock.use_cassette(path, record_mode="none", faults=WS_STALL):
        seen, said = _replayed(lambda: WS_CLIENTS[stack](None))
    assert seen == EVENTS and fake_clock.slept == []
    skipped = [s for s in said if "skipped" in s]
    assert len(skipped) == 1 and WS_STALL in skipped[0] and "'instant'" in skipped[0]


@pytest.mark.parametrize("stack", list(WS_CLIENTS))
def test_a_ws_stall_shorter_than_the_clients_timeout_is_read_on_after(
    stack: str, tmp_path: Path, fake_clock: FakeClock
) -> None:
    path = _ws_cassette(tmp_path / "session.json")
    with ssemock.use_cassette(path, record_mode="none", faults=WS_STALL):
        seen, said = _replayed(lambda: WS_CLIENTS[stack](600.0))
    assert seen == EVENTS and fake_clock.slept == []
    assert not [s for s in said if "skipped" in s]  # the outcome is live's: nothing hidden
