"""``ssemock serve`` answers WebSocket upgrades from WebSocket cassettes on a real socket
(`ssemock.commands.serve.websocket`), driven here by the ``websockets`` sync client: the shipped
OpenAI Realtime session (recorded by the Python SDK's messages) under wire chunkings,
re-framings and faults; an unmatched message, an unmatched handshake, a plain GET of a session,
a refused handshake as recorded, a subprotocol the recording never agreed. Every server runs on
127.0.0.1 and stops at the end of its block."""

from __future__ import annotations

import json
import logging
import socket
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import connect
from ws_frame_client import close_after
from ws_servers import eager

import ssemock
from ssemock.commands import serve
from ssemock.commands.loopback import running
from ssemock.commands.serve import Replayer
from ssemock.framing.websocket import (
    Deflater,
    Opcode,
    accept_key,
    close_payload,
    encode_frame,
    parse_frames,
)
from ssemock.store.cassette import Cassette, Interaction, Request, Response
from ssemock.store.group import Group
from ssemock.store.websocket import Close, Message, WebSocket

CASSETTE = Path(ssemock.__file__).parent / "cassettes" / "realtime" / "openai_realtime_text_tool_call.json"
PATH = "/v1/realtime?model=gpt-realtime"


def session() -> Any:
    found = Cassette.load(CASSETTE).interactions[0].websocket
    assert found is not None
    return found


@contextmanager
def served(cassettes: Any = CASSETTE, **options: Any) -> Iterator[tuple[str, Replayer, list[str]]]:
    log: list[str] = []
    asgi = serve.app(cassettes, log=log.append, **options)
    with running(asgi) as url:
        yield url.replace("http://", "ws://"), asgi.state.ssemock, log


def converse(url: str, **options: Any) -> tuple[list[str], int | None, str]:
    """Speak the recorded client's part: each recorded client message once what preceded it came;
    what the server sent, and how it closed."""
    got: list[str] = []
    with connect(url, **options) as conn:
        try:
            for m in session().messages:
                if m.direction == "send":
                    conn.send(m.data)
                else:
                    got.append(str(conn.recv(timeout=30)))
        except ConnectionClosed:
            pass
    return got, conn.close_code, conn.close_reason or ""


@pytest.mark.parametrize(
    ("chunking", "transform"),
    [("as_recorded", None), ("bytewise", None), ("mid_header", None), ("random:5", "fragments:3+pings")],
)
def test_the_session_is_replayed_under_each_variant(chunking: str, transform: str | None) -> None:
    want = [str(m.data) for m in session().received()]
    with served(chunking=chunking, transform=transform) as (url, replayer, log):
        got, code, _ = converse(url + PATH)
    assert (got, code) == (want, 1000)
    (conversation,) = replayer.sessions
    assert not conversation.mismatches and not conversation.unsent() and not conversation.unanswered_pings()
    wire = sum(len(u.data) for u in conversation.units)
    assert conversation.reads[-1] == wire  # every byte served, the reads as the chunking cut them
    if chunking == "bytewise":
        assert conversation.reads == list(range(1, wire + 1))
    assert log[0].startswith(f"WebSocket {PATH} -> 101 #0, 20 server message(s), chunking={chunking}")
    (exchange,) = replayer.exchanges
    assert (exchange.status, exchange.index, exchange.chunks) == (101, 0, len(conversation.reads) + 1)


def test_an_unmatched_message_is_closed_with_1008_and_the_diff_is_logged() -> None:
    with served() as (url, replayer, log):
        with connect(url + PATH) as conn:
            first = json.loads(conn.recv(timeout=30))
            conn.send(json.dumps({"type": "session.update", "session": {"type": "transcription"}}))
            with pytest.raises(ConnectionClosed):
                conn.recv(timeout=30)
    assert first["type"] == "session.created"
    assert conn.close_code == 1008
    assert conn.close_reason == (
        "ssemock: unmatched message, differs at $.session.output_modalities: only recorded; see the server log"
    )
    assert any(line.startswith("  closest recorded: client message #0") for line in log), log
    assert replayer.sessions[0].mismatches


def test_handshakes_that_match_no_session() -> None:
    with served() as (url, replayer, log):
        with pytest.raises(InvalidStatus) as refused:
            connect(url + "/v1/realtime?model=other")
        plain = httpx.get(url.replace("ws://", "http://") + PATH)
        with pytest.raises(InvalidStatus) as protocol:
            connect(url + PATH, subprotocols=["chat.v9"])  # type: ignore[list-item]
    assert refused.value.response.status_code == 404
    assert b"no recorded interaction matches GET" in (refused.value.response.body or b"")
    assert "query: [('model', 'gpt-realtime')] recorded, [('model', 'other')] sent" in "\n".join(log)
    assert plain.status_code == 426 and "WebSocket session" in plain.json()["error"]
    assert protocol.value.response.status_code == 400
    assert "agreed to none" in (protocol.value.response.body or b"").decode()
    assert [x.status for x in replayer.exchanges] == [404, 426, 400]
    assert replayer.routes() == [  # what ssemock serve prints at start
        "#0 GET /v1/realtime?model=gpt-realtime -> 101 WebSocket, 20 message(s) received, 3 sent "
        "(openai_realtime_text_tool_call.json #0)"
    ]


def test_faults_close_refuse_and_the_reconnect_is_served() -> None:
    want = [str(m.data) for m in session().received()]
    with served(faults="close:code=1012,after_message=3") as (url, _, _):
        got, code, _ = converse(url + PATH)
    assert (got, code) == (want[:3], 1012)
    with served(faults="drop:after_byte=300", chunking="bytewise") as (url, _, _):
        got, code, _ = converse(url + PATH)  # the TCP connection ends inside a frame: no close frame
    assert (got, code) == (want[:1], 1006)
    with served(faults="sequence:handshake:status=429,retry_after=1|as_recorded") as (url, replayer, _):
        with pytest.raises(InvalidStatus) as refused:
            connect(url + PATH)
        again, code, _ = converse(url + PATH)
    assert refused.value.response.status_code == 429
    assert refused.value.response.headers["retry-after"] == "1"
    assert (again, code) == (want, 1000)
    assert [x.faults for x in replayer.exchanges] == [[replayer.faults[0].name]] * 2


def test_a_handshake_the_server_refused_is_answered_as_recorded() -> None:
    refusal = Interaction(
        Request("GET", "wss://api.openai.com" + PATH, [("authorization", "Bearer <redacted>")], None),
        Response(401, [("content-type", "application/json")], b'{"error": {"code": "invalid_api_key"}}'),
    )
    with served(Cassette([refusal])) as (url, _, log):
        with pytest.raises(InvalidStatus) as refused:
            connect(url + PATH)
    assert refused.value.response.status_code == 401
    assert refused.value.response.body == b'{"error": {"code": "invalid_api_key"}}'
    assert log == [f"WebSocket {PATH} -> 401 #0, the handshake refused as recorded"]


def test_stopping_the_server_closes_an_open_session_with_1001() -> None:
    with ExitStack() as client:
        with served() as (url, _, _):
            conn = client.enter_context(connect(url + PATH))
            first = json.loads(conn.recv(timeout=30))  # session.created; the session waits for the client
        # the block ended: the server stopped, and said so to the client still connected
        with pytest.raises(ConnectionClosed):
            conn.recv(timeout=30)
    assert first["type"] == "session.created"
    assert (conn.close_code, conn.close_reason) == (1001, "ssemock: server stopped")


@pytest.mark.parametrize("timing", ["instant", "recorded"])
def test_frames_recorded_in_the_101s_read_come_in_it_again(tmp_path: Path, timing: str) -> None:
    """A server that answered the handshake and its first message in one write (after 0.2 s):
    served under the default chunking, a raw socket's first read is that recorded read, the
    101 and the message, under serve's default timing and under ``timing='recorded'``, where
    the recorded time puts the message 0.2 s after the request (a 101 apart would come at
    once, the message 0.2 s later)."""
    greeting, ask = '{"type": "session.created"}', '{"type": "response.create"}'
    path = tmp_path / "eager.json"
    with eager(greeting, delay=0.2) as port:
        with (
            ssemock.use_cassette(path, record_mode="once"),
            connect(f"ws://127.0.0.1:{port}/v1/realtime", compression=None) as conn,
        ):
            assert conn.recv(timeout=10) == greeting
            conn.send(ask)
            assert conn.recv(timeout=10) == ask
    ws = Cassette.load(path).interactions[0].websocket
    assert ws is not None and ws.wire.head == len(encode_frame(Opcode.TEXT, greeting.encode()))
    assert ws.messages[0].t >= 0.2  # (so a message apart from the 101 would come 0.2 s later)
    key = "dGhlIHNhbXBsZSBub25jZQ=="
    with served(path, timing=timing) as (url, replayer, _):
        where = urlsplit(url)
        with socket.create_connection((where.hostname, where.port), timeout=10) as sock:
            sock.sendall(
                f"GET /v1/realtime HTTP/1.1\r\nHost: {where.netloc}\r\nUpgrade: websocket\r\n"
                f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n".encode()
            )
            head, _, rest = sock.recv(65536).partition(b"\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 101 ")
            assert f"sec-websocket-accept: {accept_key(key)}".encode() in head
            assert rest == encode_frame(Opcode.TEXT, greeting.encode())  # in the 101's read, whole
            sock.sendall(encode_frame(Opcode.TEXT, ask.encode(), mask=b"\x01\x02\x03\x04"))
            sock.sendall(encode_frame(Opcode.CLOSE, close_payload(1000), mask=b"\x05\x06\x07\x08"))
            got = b""
            while chunk := sock.recv(65536):
                got += chunk
    frames = parse_frames(got)
    assert [(f.opcode, f.payload) for f in frames] == [
        (Opcode.TEXT, ask.encode()),
        (Opcode.CLOSE, close_payload(1000)),
    ]
    (exchange,) = replayer.exchanges
    assert (exchange.status, exchange.chunks) == (101, 3)  # the 101 with the greeting, the echo, the close


# -- what a client sends, bounded and checked (issue 41 item 3) -------------------------------------

_KEY = b"\x01\x02\x03\x04"


def _raw(first: int, payload: bytes = b"") -> bytes:
    """A masked client frame whose first byte (FIN, RSV bits, opcode) is ``first``, as given."""
    return bytes([first]) + encode_frame(Opcode.BINARY, payload, mask=_KEY)[1:]


def _length(first: int, length: int) -> bytes:
    """A masked client frame header declaring a 64-bit payload ``length`` (no payload follows)."""
    return bytes([first, 0x80 | 127]) + length.to_bytes(8, "big") + _KEY


_MIB = 1 << 20
_VIOLATIONS: dict[
    str, tuple[bytes, bool, int]
] = {  # what the client sends, whether it offers deflate, the close
    "unmasked": (encode_frame(Opcode.TEXT, b"{}"), False, 1002),
    "reserved opcode": (_raw(0x83), False, 1002),
    "RSV2": (_raw(0xA1, b"{}"), False, 1002),
    "RSV1 with no deflate agreed": (_raw(0xC1, b"{}"), False, 1002),
    "RSV1 on a continuation": (_raw(0x01, b"{") + _raw(0xC0, b"}"), True, 1002),
    "a 2^63 length": (_length(0x82, 1 << 63), False, 1002),
    "a 2^62 length": (_length(0x82, 1 << 62), False, 1009),
    "a fragmented ping": (_raw(0x09), False, 1002),
    "a ping of 126 bytes": (_raw(0x89, b"p" * 126), False, 1002),
    "a close payload of 1 byte": (_raw(0x88, b"\x03"), False, 1002),
    "close code 1005": (_raw(0x88, b"\x03\xed"), False, 1002),
    "a close reason not UTF-8": (_raw(0x88, b"\x03\xe8\xff"), False, 1007),
    "a text message not UTF-8": (_raw(0x81, b'"\xc3"'), False, 1007),
    "a continuation with no message": (_raw(0x80, b"{}"), False, 1002),
    "a message before the last one ended": (_raw(0x01, b"{") + _raw(0x81, b"{}"), False, 1002),
    "fragments past the cap": (
        _raw(0x02, bytes(_MIB // 2)) + _raw(0x00, bytes(_MIB // 2)) + _raw(0x80, b"a"),
        False,
        1009,
    ),
    "bad deflate data": (_raw(0xC1, b"\xff\xff\xff\xff"), True, 1002),
    "a deflate bomb": (_raw(0xC2, Deflater().compress(bytes(4 * _MIB))), True, 1009),
}


def test_a_client_that_breaks_the_protocol_gets_the_close_code_and_one_log_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Each violation closes its session with the RFC's code (a reason saying what broke) and
    logs one line, never a traceback; the 4 MiB bomb is inflated no further than the cap (1
    MiB); the server then serves a whole session to the next client."""
    want = [str(m.data) for m in session().received()]
    deflating = Cassette.load(CASSETTE)  # as if recorded with permessage-deflate: agreed when offered
    assert deflating.interactions[0].websocket is not None
    deflating.interactions[0].websocket.extensions = "permessage-deflate"
    with served(deflating, max_body=_MIB) as (url, _, log):
        for name, (data, deflate, code) in _VIOLATIONS.items():
            before = len(log)
            closed = close_after(url + PATH, data, deflate=deflate)
            assert closed[0] == code, (name, closed)
            assert closed[1].startswith("ssemock: WebSocket frame at byte"), (name, closed)
            said = [line for line in log[before:] if f": closed {code}: WebSocket frame at byte" in line]
            assert len(said) == 1, (name, log[before:])
        got, code, _ = converse(url + PATH)
    assert (got, code) == (want, 1000)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]  # (asyncio's traceback, before)


@pytest.mark.parametrize("timing", ["instant", "scaled:1"])
def test_a_stall_is_waited_for_real_under_every_timing(timing: str) -> None:
    """As HTTP ``serve`` waits it (issue 43 item 7): the server is silent for the stall, so the
    client's own shorter timeout ends its read, and a longer one gets the message after it."""
    want = [str(m.data) for m in session().received()]
    with served(faults="stall:before_message=1,seconds=0.5", timing=timing) as (url, _, _):
        with connect(url + PATH) as conn:
            with pytest.raises(TimeoutError):
                conn.recv(timeout=0.05)  # the server sends nothing for 0.5 s
            assert str(conn.recv(timeout=30)) == want[0]


def test_the_log_lines_mask_a_secret_in_the_handshake_url() -> None:
    """``?sig=`` (by its name, whatever its shape) in a handshake's URL is masked in every line
    serve logs of the session, served or unmatched, as its HTTP lines mask it (it printed the
    WebSocket target as sent)."""
    secret = "s3cr3tSigNoKnownShape42"
    with served(match_on=["method", "path"]) as (url, _, log):
        got, code, _ = converse(url + PATH + f"&sig={secret}")
        with pytest.raises(InvalidStatus):
            connect(url + f"/v1/other?sig={secret}")
    assert code == 1000 and got
    assert log[0].startswith(f"WebSocket {PATH}&sig=REDACTED -> 101 #0"), log
    assert any(line.startswith("WebSocket /v1/other?sig=REDACTED -> 404") for line in log), log
    assert not any(secret in line for line in log), log


# -- a session spanning connections (issue 44 item 2) -----------------------------------------------


def _grouped(url: str, messages: list[tuple[str, str]], order: list[int]) -> Interaction:
    ws = WebSocket(
        [Message(d, 0.01 * k, "text", json.dumps({"type": what})) for k, (d, what) in enumerate(messages)],
        close=Close(1000, "", "client", True, 1.0),
    )
    return Interaction(Request("GET", url), Response(101), ws, Group("sess_1", order))


LIVE = "ws://127.0.0.1/v1/live/sessions"
GROUPED = Cassette(
    [
        # the primary: started, then (after the client's close) closed
        _grouped(
            LIVE,
            [
                ("send", "session.start"),
                ("recv", "session.started"),
                ("send", "session.close"),
                ("recv", "session.closed"),
            ],
            [0, 1, 2, 4, 6],
        ),
        # the sideband: its first event came after the primary's close was sent
        _grouped(
            LIVE + "/sess_1/attach",
            [("recv", "session.updated"), ("recv", "session.instructions.appended")],
            [3, 5, 7],
        ),
    ]
)


def test_a_session_spanning_connections_is_served_in_its_recorded_order() -> None:
    """The sideband's first event was recorded after the primary's close was sent: served,
    it is released only once that close came, though the sideband connected first (the order
    log of the clients, and the group's own log of what was released and what happened)."""
    log: list[str] = []
    with served(GROUPED) as (url, replayer, _):
        with connect(url + "/v1/live/sessions/sess_1/attach") as sideband:
            with connect(url + "/v1/live/sessions") as primary:
                primary.send(json.dumps({"type": "session.start"}))
                log.append(json.loads(primary.recv(timeout=30))["type"])
                log.append("close sent")
                primary.send(json.dumps({"type": "session.close"}))
                log.append(json.loads(sideband.recv(timeout=30))["type"])
                log.append(json.loads(primary.recv(timeout=30))["type"])
                log.append(json.loads(sideband.recv(timeout=30))["type"])
        group = replayer.session_group(0)
    assert log == [
        "session.started",
        "close sent",
        "session.updated",
        "session.closed",
        "session.instructions.appended",
    ]
    assert group is not None and group is replayer.session_group(1)
    seqs = [group.orders[i][part] for i, part in group.log]
    assert sorted(seqs) == list(range(8))  # every part released or seen
    for at, (i, part) in enumerate(group.log):  # a server message after all recorded before it elsewhere
        if part and GROUPED.interactions[i].websocket.messages[part - 1].direction == "recv":  # type: ignore[union-attr]
            earlier = {group.orders[j][q] for j, q in group.log[:at] if j != i}
            assert earlier >= {n for j, o in group.orders.items() if j != i for n in o if n < seqs[at]}
