"""The ``pings`` re-framing's report (issue 35 item 2, `ssemock.player.websocket.teardown`): a
replay under ``transform="pings"`` sends a ping between frames and fragments, and a client that
never answers one with a pong is reported when the player stops (a warning naming the cassette,
the interaction, how many and the first's payload), under the pytest marker too. A conforming
client (every stack of `ssemock.stacks.WS_STACKS`, and httpx-ws) answers each: no report. The
shipped OpenAI Realtime session is replayed offline over ``ws://`` (no TLS on the client)."""

from __future__ import annotations

import asyncio
import re
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import ws_frame_client as client

import ssemock
from ssemock import cassettes
from ssemock.plan.errors import SsemockWarning
from ssemock.plan.websocket.variants import VariedConversation
from ssemock.stacks import WS_STACKS

NAME = "realtime/openai_realtime_text_tool_call"
URL = "ws://api.openai.com/v1/realtime?model=gpt-realtime"
WSS = (
    "wss://api.openai.com/v1/realtime?model=gpt-realtime"  # as recorded: the frame reader goes through httpx
)
REPORT = re.compile(
    r"ssemock: .*, interaction #0 \(wss?://api\.openai\.com/v1/realtime\?model=gpt-realtime\): "
    r"(\d+) ping\(s\) served under the re-framing (\S+) were never answered with a pong, "
    r"the first: b'ssemock-ping-0'"
)


def _cassette(url: str = URL) -> ssemock.Cassette:
    cassette = cassettes.load(NAME)
    cassette.interactions[0].request.url = url
    return cassette


def _script() -> list[tuple[str, str]]:
    ws = cassettes.load(NAME).interactions[0].websocket
    assert ws is not None
    return [(m.direction, str(m.data)) for m in ws.messages]


# -- the recorded client's part, spoken by each stack's client library: what it received ---------


async def _websockets(url: str, connect: Any = None) -> list[str]:
    """Through the asyncio client, or through ``connect`` (the legacy one: the same API)."""
    from websockets.asyncio.client import connect as asyncio_connect

    got = []
    async with (connect or asyncio_connect)(url) as ws:
        for direction, data in _script():
            if direction == "send":
                await ws.send(data)
            else:
                got.append(str(await ws.recv()))
    return got


def _websockets_sync(url: str) -> list[str]:
    from websockets.sync.client import connect

    got = []
    with connect(url) as ws:
        for direction, data in _script():
            if direction == "send":
                ws.send(data)
            else:
                got.append(str(ws.recv(timeout=30)))
    return got


async def _websockets_legacy(url: str) -> list[str]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from websockets.legacy.client import connect

    return await _websockets(url, connect)


async def _aiohttp(url: str, autoping: bool = True) -> list[str]:
    """``autoping=False`` hands pings to the application, which here skips them: the bug of a
    client that turned aiohttp's own answering off and never answers itself."""
    import aiohttp

    got: list[str] = []
    async with aiohttp.ClientSession() as http, http.ws_connect(url, autoping=autoping) as ws:
        for direction, data in _script():
            if direction == "send":
                await ws.send_str(data)
                continue
            message = await ws.receive()
            while message.type == aiohttp.WSMsgType.PING:  # only with autoping=False
                message = await ws.receive()
            assert message.type == aiohttp.WSMsgType.TEXT, message
            got.append(message.data)
    return got


def _httpx_ws(url: str) -> list[str]:
    import httpx
    from httpx_ws import connect_ws

    got = []
    with httpx.Client() as http, connect_ws(url.replace("ws://", "http://"), http) as ws:
        for direction, data in _script():
            if direction == "send":
                ws.send_text(data)
            else:
                got.append(ws.receive_text(timeout=30))
    return got


#: each WebSocket stack's client (a new member of the registry needs its line here)
CLIENTS: dict[str, Callable[[str], list[str]]] = {
    "websockets": lambda url: asyncio.run(_websockets(url)),
    "websockets.sync": _websockets_sync,
    "websockets.legacy": lambda url: asyncio.run(_websockets_legacy(url)),
    "aiohttp.ws": lambda url: asyncio.run(_aiohttp(url)),
}


def _replay(
    run: Callable[[], Any], url: str = URL, **options: Any
) -> tuple[Any, VariedConversation, list[str]]:
    """``run()`` against the session (its handshake at ``url``) replayed under ``options``: what it
    returned, the conversation, and what ssemock warned at the player's teardown."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with ssemock.replay(_cassette(url), allowed_hosts=[], **options) as player:
            out = run()
    [conversation] = player.conversations
    assert isinstance(conversation, VariedConversation)
    return out, conversation, [str(w.message) for w in caught if issubclass(w.category, SsemockWarning)]


@pytest.mark.parametrize("transform", ["pings", "fragments:3+pings"])
@pytest.mark.parametrize("stack", [*WS_STACKS, "httpx-ws"])
def test_a_client_that_answers_every_ping_gets_no_report(stack: str, transform: str) -> None:
    run = _httpx_ws if stack == "httpx-ws" else CLIENTS[stack]  # KeyError: a stack with no client here
    got, conversation, said = _replay(lambda: run(URL), transform=transform, chunking="mid_header")
    assert got == [data for direction, data in _script() if direction == "recv"]
    assert conversation.pongs and conversation.unanswered_pings() == []
    assert sorted(conversation.pongs) == sorted(conversation._wire.pings)  # each ping, once
    assert not [s for s in said if "ping" in s], said


@pytest.mark.parametrize("stack", [*WS_STACKS, "httpx-ws"])
def test_pings_served_with_a_drop_are_not_owed(stack: str) -> None:
    """A ``drop`` ends the connection right after the pings of its last read: no client can
    answer those (websockets.legacy and aiohttp answer after the read, on a dead transport)."""
    run = _httpx_ws if stack == "httpx-ws" else CLIENTS[stack]

    def dropped() -> str:
        with pytest.raises(Exception) as ended:  # each library's own error for a lost connection
            run(URL)
        return type(ended.value).__name__

    _, conversation, said = _replay(
        dropped, transform="pings", chunking="coalesced", faults="drop:after_message=5"
    )
    assert conversation._wire.pings and conversation.unanswered_pings() == []
    assert not [s for s in said if "ping" in s], said


def test_every_websocket_stack_has_a_client_here() -> None:
    assert set(WS_STACKS) <= set(CLIENTS)


def test_a_frame_reader_that_ignores_pings_is_reported() -> None:
    """The catalogue's reader that never answers a ping (``tests/variants/test_ws_readers.py``)
    reads every message right, so only the report says what is wrong."""
    (text, calls, _), conversation, said = _replay(
        lambda: client.session(client.catalogue.IgnoresPings), WSS, transform="pings"
    )
    assert text and calls  # its messages are right: only the report tells
    found = [m for s in said if (m := REPORT.search(s))]
    assert len(found) == 1, said
    count, reframing = found[0].groups()
    assert (int(count), reframing) == (len(conversation._wire.pings), "pings")
    assert int(count) == len(conversation.unanswered_pings()) > 1
    assert conversation.pongs == []


def test_the_correct_twin_of_that_reader_is_not_reported() -> None:
    (_, _, _), conversation, said = _replay(lambda: client.session(client.Correct), WSS, transform="pings")
    assert not [s for s in said if "ping" in s], said
    assert conversation.unanswered_pings() == [] and conversation.pongs


def test_aiohttp_with_autoping_off_and_no_answer_of_its_own_is_reported() -> None:
    got, conversation, said = _replay(lambda: asyncio.run(_aiohttp(URL, autoping=False)), transform="pings")
    assert got == [data for direction, data in _script() if direction == "recv"]
    assert [int(m.group(1)) for s in said if (m := REPORT.search(s))] == [len(conversation._wire.pings)]


def test_without_pings_nothing_is_owed() -> None:
    _, conversation, said = _replay(lambda: client.session(client.catalogue.IgnoresPings), WSS)
    assert conversation.unanswered_pings() == [] and not [s for s in said if "ping" in s], said


INNER = """
import pytest, ws_frame_client as client

@pytest.mark.ssemock(transform="pings")
def test_session(ssemock):
    text, calls, events = client.session(client.catalogue.IgnoresPings)
    assert text and calls
"""


def test_the_marker_reports_it_in_the_warnings_summary(pytester: pytest.Pytester) -> None:
    folder = pytester.mkdir("cassettes") / "test_pings"
    folder.mkdir()
    cassettes.load(NAME).save(folder / "test_session.json")
    pytester.makepyfile(test_pings=INNER)
    result = pytester.runpytest_inprocess(
        "-p",
        "no:randomly",
        "-W",
        "default",
        "-rs",
        "-o",
        "asyncio_default_fixture_loop_scope=function",
    )
    result.assert_outcomes(passed=1)
    out = result.stdout.str()
    assert "SsemockWarning" in out and "test_session.json, interaction #0" in out
    assert re.search(r"\d+ ping\(s\) served under the re-framing pings were never answered", out), out


# -- ssemock serve over WebSocket: the same report, in the server's log -----------------------------


def _raw_session(url: str, reader_type: Any) -> list[str]:
    """The recorded client's part over a raw socket, frames read by ``reader_type`` of the
    catalogue (a pong written for each ping it answers): the messages it received."""
    import base64
    import os
    import socket
    from urllib.parse import urlsplit

    from ssemock.framing.websocket import Opcode, close_payload, encode_frame

    parts = urlsplit(url)
    reader, answered = reader_type(), 0
    with socket.create_connection((parts.hostname, parts.port), timeout=30) as sock:
        key = base64.b64encode(os.urandom(16)).decode()
        sock.sendall(
            f"GET {parts.path}?{parts.query} HTTP/1.1\r\nHost: {parts.netloc}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n".encode()
        )
        head = b""
        while b"\r\n\r\n" not in head:
            head += sock.recv(65536)
        head, _, rest = head.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 101"), head
        reader.feed(rest)
        wanted = 0
        for direction, data in _script():
            if direction == "send":
                sock.sendall(encode_frame(Opcode.TEXT, data.encode(), mask=os.urandom(4)))
                continue
            wanted += 1
            while len(reader.out.messages) < wanted:
                reader.feed(sock.recv(65536))
                for ping in reader.out.pongs[answered:]:
                    sock.sendall(encode_frame(Opcode.PONG, ping, mask=os.urandom(4)))
                    answered += 1
        sock.sendall(encode_frame(Opcode.CLOSE, close_payload(1000), mask=os.urandom(4)))
        while sock.recv(65536):
            pass
    return [str(m) for m in reader.out.messages]


@pytest.mark.parametrize("reader", ["Correct", "IgnoresPings"])
def test_serve_logs_the_pings_a_client_never_answered(tmp_path: Path, reader: str) -> None:
    from ssemock.commands import serve
    from ssemock.commands.loopback import running

    path = tmp_path / "session.json"
    _cassette().save(path)
    log: list[str] = []
    asgi = serve.app(path, log=log.append, transform="pings", chunking="mid_header")
    with running(asgi) as url:
        got = _raw_session(url + "/v1/realtime?model=gpt-realtime", getattr(client.catalogue, reader))
        (conversation,) = asgi.state.ssemock.sessions
    assert got == [data for direction, data in _script() if direction == "recv"]
    pings = len(conversation.unanswered_pings())
    ended = [line for line in log if line.startswith("WebSocket /v1/realtime") and " after " in line]
    assert len(ended) == 1, log
    if reader == "Correct":
        assert pings == 0 and "ping" not in ended[0]
    else:
        assert pings > 1
        assert ended[0].endswith(
            f"; {pings} ping(s) of pings never answered with a pong, the first: b'ssemock-ping-0'"
        )
