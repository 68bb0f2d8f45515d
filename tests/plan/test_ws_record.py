"""What `ssemock.plan.websocket.record.WsRecorder` records is true to the wire, on every stack of
`ssemock.stacks.WS_STACKS` and httpx-ws, with the real client libraries against a loopback
server that sends its first message in the same TCP write as the 101 (`ws_servers.eager`):
each message recorded once (aiohttp 3.14 hands itself the bytes after the 101 again), the
frames that came with the 101 kept as that read (``wire.head``), and a close recorded clean
exactly when both close frames went over the wire (the client's or the server's first), the
answer in the wire, even when the stack read the answer after it called the session over
(httpx-ws's reader thread)."""

from __future__ import annotations

import asyncio
import hashlib
import json
import warnings
from pathlib import Path
from typing import Any

import pytest
from ws_servers import eager

import ssemock
from ssemock.framing.websocket import Opcode, close_payload, encode_frame
from ssemock.plan.conversation import Conversation
from ssemock.plan.websocket.record import WsRecorder
from ssemock.stacks import WS_STACKS
from ssemock.store.cassette import Cassette, Request

GREETING = json.dumps({"type": "session.created", "session": {"id": "sess_1"}})
ASK = json.dumps({"type": "response.create"})
STACKS = [*sorted(WS_STACKS), "httpx-ws"]


async def _asyncio(url: str, ask: str, connect: Any = None) -> list[str]:
    """The exchange through the asyncio client, or through ``connect`` (the legacy one: the same API)."""
    from websockets.asyncio.client import connect as asyncio_connect
    from websockets.exceptions import ConnectionClosedOK

    async with (connect or asyncio_connect)(url, compression=None) as ws:
        seen = [str(await ws.recv())]
        await ws.send(ask)
        try:
            seen.append(str(await ws.recv()))
        except ConnectionClosedOK as closed:
            seen.append(f"closed {closed.rcvd and closed.rcvd.code}")
        return seen


def _sync(url: str, ask: str) -> list[str]:
    from websockets.exceptions import ConnectionClosedOK
    from websockets.sync.client import connect

    with connect(url, compression=None) as ws:
        seen = [str(ws.recv())]
        ws.send(ask)
        try:
            seen.append(str(ws.recv()))
        except ConnectionClosedOK as closed:
            seen.append(f"closed {closed.rcvd and closed.rcvd.code}")
        return seen


async def _legacy(url: str, ask: str) -> list[str]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from websockets.legacy.client import connect

    return await _asyncio(url, ask, connect)


async def _aiohttp(url: str, ask: str) -> list[str]:
    import aiohttp

    async with aiohttp.ClientSession() as http, http.ws_connect(url, compress=0) as ws:
        seen = [await ws.receive_str()]
        await ws.send_str(ask)
        got = await ws.receive()
        seen.append(str(got.data) if got.type == aiohttp.WSMsgType.TEXT else f"closed {ws.close_code}")
        return seen


def _httpx_ws(url: str, ask: str) -> list[str]:
    import httpx
    from httpx_ws import WebSocketDisconnect, connect_ws

    with httpx.Client() as client, connect_ws(url, client) as ws:
        seen = [ws.receive_text()]
        ws.send_text(ask)
        try:
            seen.append(ws.receive_text())
        except WebSocketDisconnect as closed:
            seen.append(f"closed {closed.code}")
        return seen


def converse(stack: str, url: str, ask: str = ASK) -> list[str]:
    """One session through ``stack``: the greeting, then ``ask`` and its echo, then the client's
    close (``ask="bye"``: the server closes instead, and the client answers)."""
    runs = {
        "websockets": lambda: asyncio.run(_asyncio(url, ask)),
        "websockets.sync": lambda: _sync(url, ask),
        "websockets.legacy": lambda: asyncio.run(_legacy(url, ask)),
        "aiohttp.ws": lambda: asyncio.run(_aiohttp(url, ask)),
        "httpx-ws": lambda: _httpx_ws(url, ask),
    }
    assert set(WS_STACKS) <= set(runs), "a WebSocket stack this test does not know"
    return runs[stack]()


def _frame(text: str) -> bytes:
    return encode_frame(Opcode.TEXT, text.encode())


CLOSE_ANSWER = encode_frame(Opcode.CLOSE, close_payload(1000))


@pytest.mark.parametrize("stack", STACKS)
def test_a_session_is_recorded_as_the_wire_carried_it(tmp_path: Path, stack: str) -> None:
    path = tmp_path / "eager.json"
    with eager(GREETING) as port:
        url = f"ws://127.0.0.1:{port}/v1/realtime"
        with ssemock.use_cassette(path, record_mode="once"):
            live = converse(stack, url)
    assert live == [GREETING, ASK]
    (interaction,) = Cassette.load(path).interactions
    ws = interaction.websocket
    assert ws is not None
    # each message once, though aiohttp reads the greeting with the 101 and feeds it itself again
    assert [(m.direction, m.data) for m in ws.messages] == [("recv", GREETING), ("send", ASK), ("recv", ASK)]
    assert ws.wire.head == len(_frame(GREETING))  # the greeting came in the 101's read
    frames = len(_frame(GREETING) + _frame(ASK))
    assert (ws.close.by, ws.close.code) == ("client", 1000)
    # the close is what the wire holds: clean exactly when the server's answer was read
    # (httpx-ws may close its stream before its reader thread gets the answer: then neither)
    assert (ws.close.clean, ws.wire.ends[-1]) in ([(True, frames + len(CLOSE_ANSWER)), (False, frames)])
    if stack != "httpx-ws":  # these wait for the server's answer to their close
        assert ws.close.clean
    assert Conversation(interaction).wire_fits()  # so the replay keeps the recorded reads
    with ssemock.use_cassette(path, record_mode="none", allowed_hosts=[]):
        assert converse(stack, url) == live  # the server is gone


@pytest.mark.parametrize("stack", STACKS)
def test_a_close_the_server_began_and_the_client_answered_is_clean(tmp_path: Path, stack: str) -> None:
    path = tmp_path / "bye.json"
    with eager(GREETING) as port:
        url = f"ws://127.0.0.1:{port}/v1/realtime"
        with ssemock.use_cassette(path, record_mode="once"):
            live = converse(stack, url, "bye")
    assert live == [GREETING, "closed 1000"]
    (interaction,) = Cassette.load(path).interactions
    ws = interaction.websocket
    assert ws is not None
    assert (ws.close.by, ws.close.code, ws.close.reason, ws.close.clean) == ("server", 1000, "done", True)
    server_close = encode_frame(Opcode.CLOSE, close_payload(1000, "done"))
    assert ws.wire.ends[-1] == len(_frame(GREETING) + server_close)
    assert Conversation(interaction).wire_fits()
    with ssemock.use_cassette(path, record_mode="none", allowed_hosts=[]):
        assert converse(stack, url, "bye") == live  # the server is gone


def test_a_close_answer_read_after_the_session_was_called_over_makes_it_clean() -> None:
    """The order httpx-ws's reader thread can take: the stream closed (``finish``) while the
    server's answer to the client's close is still being read."""
    key = "dGhlIHNhbXBsZSBub25jZQ=="
    recorder = WsRecorder(Request("GET", "ws://127.0.0.1:9/v1/realtime", [], None))
    recorder.sent(
        f"GET /v1/realtime HTTP/1.1\r\nHost: 127.0.0.1:9\r\nSec-WebSocket-Key: {key}\r\n\r\n".encode()
    )
    recorder.received(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n" + _frame(GREETING))
    recorder.sent(encode_frame(Opcode.CLOSE, close_payload(1000), mask=b"abcd"))
    recorder.finish(None)
    assert not recorder.close.clean  # nothing answered yet
    recorder.received(CLOSE_ANSWER)
    interaction = recorder.interaction()
    assert interaction is not None and interaction.websocket is not None
    ws = interaction.websocket
    assert (ws.close.by, ws.close.code, ws.close.clean) == ("client", 1000, True)
    assert ws.wire.ends == [len(_frame(GREETING)), len(_frame(GREETING) + CLOSE_ANSWER)]
    assert Conversation(interaction).wire_fits()


@pytest.mark.parametrize("held", [1 << 30, 100])
def test_the_wire_digest_is_of_every_byte_after_the_head(monkeypatch: pytest.MonkeyPatch, held: int) -> None:
    """The server's bytes are hashed when the recording is asked for, not as they are read
    (past ``held`` bytes kept, at once): either way the digest is of every byte after the 101's
    head, in order, asked for mid-session or at the end."""
    from ssemock.plan.websocket import record

    monkeypatch.setattr(record, "_UNHASHED_MAX", held)
    recorder = WsRecorder(Request("GET", "ws://127.0.0.1:9/v1/realtime", [], None))
    recorder.sent(b"GET /v1/realtime HTTP/1.1\r\nHost: 127.0.0.1:9\r\n\r\n")
    wire = b"".join(_frame(f"{k}:" + "x" * (k * 7)) for k in range(40)) + CLOSE_ANSWER
    recorder.received(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n" + wire[:5])
    for k, cut in enumerate(range(5, len(wire), 37)):
        recorder.received(wire[cut : cut + 37])
        seen = min(len(wire), cut + 37)
        assert recorder._server._unhashed_size <= max(held, 37)
        if k == 20:
            ws = recorder.interaction().websocket  # type: ignore[union-attr]
            assert ws is not None and ws.wire.sha256 == hashlib.sha256(wire[:seen]).hexdigest()
    recorder.finish(None)
    interaction = recorder.interaction()
    assert interaction is not None and interaction.websocket is not None
    assert interaction.websocket.wire.sha256 == hashlib.sha256(wire).hexdigest()
    assert len(interaction.websocket.messages) == 40
    assert Conversation(interaction).wire_fits()
