"""A session spanning connections replayed through every WebSocket stack (issue 44 item 2): the
message another connection's progress frees reaches the client through the stack's own queue
(asyncio transports, the sync clients' socket, httpx-ws's network stream), never earlier. The
recorded group: a primary (start, started, close, closed) and its sideband, whose first event
came after the primary's close; the client reads the sideband in another task or thread and logs
what it got against what it sent (an order log, never time). Driven by the stack registry: a new
stack fails here until it has a client."""

from __future__ import annotations

import asyncio
import importlib
import json
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import ssemock
from ssemock.stacks import WS_STACKS
from ssemock.store.group import Group
from ssemock.store.model import Interaction, Request, Response
from ssemock.store.websocket import Close, Message, WebSocket

PRIMARY = "ws://127.0.0.1:9/v1/live/sessions"
SIDEBAND = "ws://127.0.0.1:9/v1/live/sessions/sess_1/attach"
START, CLOSE = json.dumps({"type": "session.start"}), json.dumps({"type": "session.close"})
Log = list[tuple[str, str]]


def _cassette(path: Path) -> Path:
    def session(url: str, messages: list[tuple[str, str]], order: list[int]) -> Interaction:
        ws = WebSocket(
            [Message(d, 0.01 * k, "text", json.dumps({"type": w})) for k, (d, w) in enumerate(messages)],
            close=Close(1000, "", "client", True, 1.0),
        )
        head = [("upgrade", "websocket"), ("connection", "Upgrade")]
        return Interaction(Request("GET", url), Response(101, head), ws, Group("sess_1", order))

    primary = [("send", "session.start"), ("recv", "session.started"), ("send", "session.close"), ("recv", "session.closed")]  # fmt: skip
    return ssemock.Cassette(
        [
            session(PRIMARY, primary, [1, 2, 3, 4, 6]),
            session(SIDEBAND, [("recv", "session.updated")], [0, 5]),
        ]
    ).save(path)


def _type(raw: Any) -> str:
    return str(json.loads(raw)["type"])


async def _converse(
    log: Log, side: Callable[[], Any], send: Callable[[str], Any], recv: Callable[[], Any]
) -> None:
    """The scenario through an async client: the sideband read (``side()``) in another task, the
    primary's start and close sent (``send``) and their answers read (``recv()``)."""

    async def watch() -> None:
        log.append(("sideband", _type(await side())))

    watching = asyncio.create_task(watch())
    await send(START)
    log.append(("primary", _type(await recv())))
    log.append(("sent", "session.close"))
    await send(CLOSE)
    await asyncio.wait_for(watching, 10)  # a guard: never a hang if nothing frees it
    log.append(("primary", _type(await recv())))


def _converse_sync(
    log: Log, side: Callable[[], Any], send: Callable[[str], Any], recv: Callable[[], Any]
) -> None:
    """The scenario through a sync client, the sideband read (``side()``, with a timeout) in another thread."""
    watching = threading.Thread(target=lambda: log.append(("sideband", _type(side()))))
    watching.start()
    send(START)
    log.append(("primary", _type(recv())))
    log.append(("sent", "session.close"))
    send(CLOSE)
    watching.join(10)
    log.append(("primary", _type(recv())))


async def _websockets(log: Log, legacy: bool = False) -> None:
    if legacy:
        from websockets.legacy.client import connect
    else:
        from websockets.asyncio.client import connect  # type: ignore[assignment]
    async with connect(SIDEBAND) as side, connect(PRIMARY) as primary:
        await _converse(log, side.recv, primary.send, primary.recv)


async def _aiohttp(log: Log) -> None:
    import aiohttp

    async with aiohttp.ClientSession() as session, session.ws_connect(SIDEBAND) as side:
        async with session.ws_connect(PRIMARY) as primary:
            await _converse(log, side.receive_str, primary.send_str, primary.receive_str)


def _sync(log: Log) -> None:
    from websockets.sync.client import connect

    with connect(SIDEBAND) as side, connect(PRIMARY) as primary:
        _converse_sync(log, lambda: side.recv(timeout=10), primary.send, primary.recv)


def _httpx_ws(log: Log) -> None:
    import httpx
    from httpx_ws import connect_ws

    with (
        httpx.Client() as client,
        connect_ws(SIDEBAND, client) as side,
        connect_ws(PRIMARY, client) as primary,
    ):
        _converse_sync(log, lambda: side.receive_text(timeout=10), primary.send_text, primary.receive_text)


CLIENTS: dict[str, Callable[[Log], None]] = {
    "websockets": lambda log: asyncio.run(_websockets(log)),
    "websockets.legacy": lambda log: asyncio.run(_websockets(log, legacy=True)),
    "aiohttp.ws": lambda log: asyncio.run(_aiohttp(log)),
    "websockets.sync": _sync,
    "httpx-ws": _httpx_ws,  # through the httpcore stacks, no entry of its own
}


def test_every_stack_of_the_registry_has_a_client_here() -> None:
    assert set(WS_STACKS) <= set(CLIENTS)


@pytest.mark.parametrize("stack", list(CLIENTS))
def test_a_message_another_connection_frees_reaches_the_client_after_it(tmp_path: Path, stack: str) -> None:
    path = _cassette(tmp_path / "group.json")
    log: Log = []
    with ssemock.use_cassette(path, record_mode="none", allowed_hosts=[]):
        CLIENTS[stack](log)
    assert log == [
        ("primary", "session.started"),
        ("sent", "session.close"),
        ("sideband", "session.updated"),  # recorded after the primary's close: released after it
        ("primary", "session.closed"),
    ]


@pytest.mark.parametrize(
    "stack", [s for s, (_, libs) in WS_STACKS.items() if libs[0].startswith("websockets.")]
)
def test_a_client_module_imported_again_is_the_one_patched(
    tmp_path: Path, stack: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An in-process pytest run (pytester) drops the modules it imported from sys.modules, not from
    their package's attributes: the client module imported again is the one patched (it was the
    dropped one, and the replay's connection went to the network)."""
    for library in WS_STACKS[stack][1]:
        dropped = importlib.import_module(library)
        package, _, name = library.rpartition(".")
        monkeypatch.setattr(sys.modules[package], name, dropped)  # as pytester leaves it
        monkeypatch.delitem(sys.modules, library)
    test_a_message_another_connection_frees_reaches_the_client_after_it(tmp_path, stack)
