"""Hand-written WebSocket clients: `close_after`, a raw socket that sends any bytes after its
handshake, and `server_log`, what the loopback server logged meanwhile (issue 41); and for the replay tests of issue 35: the handshake through httpx
(its ``Upgrade: websocket`` request goes through the httpcore pool ssemock patches), then frames
read from the 101's network stream by a frame reader of the catalogue
(``tests/variants/test_ws_readers.py``) and written masked by hand (a pong for each ping the reader
answers: the catalogue's ``IgnoresPings`` answers none). It talks the recorded OpenAI
Realtime session of ``realtime/openai_realtime_text_tool_call`` (shipped) and returns what a user
of it would: the text and the tool calls of the response."""

from __future__ import annotations

import base64
import importlib.util
import json
import logging
import os
import socket
import struct
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

from ssemock import cassettes
from ssemock.framing.websocket import Opcode, close_payload, encode_frame, parse_close, parse_frames

_spec = importlib.util.spec_from_file_location(
    "ws_reader_catalogue", Path(__file__).parent / "variants" / "test_ws_readers.py"
)
assert _spec is not None and _spec.loader is not None
catalogue = sys.modules.get(_spec.name) or importlib.util.module_from_spec(_spec)
if _spec.name not in sys.modules:
    sys.modules[_spec.name] = catalogue
    _spec.loader.exec_module(catalogue)

Correct = catalogue.Correct
IgnoresContinuation = catalogue.IgnoresContinuation


class HeaderInOneRead(Correct):  # type: ignore[misc, valid-type]
    """Buffers a payload across reads, but takes a read that starts a frame to hold its whole
    header (the bug of a reader that parses the header straight from ``recv()``)."""

    def feed(self, data: bytes) -> None:
        if not self.buffer:
            if data[1] & 0x7F == 126:
                struct.unpack("!H", data[2:4])
        super().feed(data)


NAME = "realtime/openai_realtime_text_tool_call"
URL = "https://api.openai.com/v1/realtime?model=gpt-realtime"
CASSETTE = cassettes.path(NAME)
SENT = [str(m.data) for m in cassettes.load(NAME).interactions[0].websocket.messages if m.direction == "send"]


def session(reader_type: Any = Correct) -> tuple[str, list[dict[str, str]], list[Any]]:
    """One Realtime session through ``reader_type``: (the response's text, its tool calls, every
    message received, parsed)."""
    reader = reader_type()
    key = base64.b64encode(os.urandom(16)).decode()
    headers = {
        "Upgrade": "websocket",
        "Connection": "Upgrade",
        "Sec-WebSocket-Key": key,
        "Sec-WebSocket-Version": "13",
    }
    with httpx.Client() as client, client.stream("GET", URL, headers=headers) as response:
        assert response.status_code == 101, response.status_code
        stream = response.extensions["network_stream"]
        answered: list[bytes] = []

        def until(kind: str) -> None:
            def seen() -> bool:
                return any(json.loads(m)["type"] == kind for m in reader.out.messages)

            while not seen():
                if reader.out.clean:  # the server closed (a real client would echo it and stop)
                    raise ConnectionError(f"the server closed ({reader.out.code}) before {kind}")
                data = stream.read(65536, timeout=60)  # a hang guard: fails, never hangs
                if not data:
                    raise ConnectionError(f"the connection ended before {kind} (1006)")
                reader.feed(data)
                for ping in reader.out.pongs[len(answered) :]:  # a reader that answers pings: pong each
                    stream.write(encode_frame(Opcode.PONG, ping, mask=os.urandom(4)))
                    answered.append(ping)

        def send(text: str) -> None:
            stream.write(encode_frame(Opcode.TEXT, text.encode(), mask=os.urandom(4)))

        until("session.created")
        send(SENT[0])
        until("session.updated")
        send(SENT[1])
        send(SENT[2])
        until("response.done")
        stream.write(encode_frame(Opcode.CLOSE, close_payload(1000), mask=os.urandom(4)))
        while stream.read(65536):
            pass
    events = [json.loads(m) for m in reader.out.messages]
    text = "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta")
    calls = [
        {"name": e["name"], "arguments": e["arguments"]}
        for e in events
        if e["type"] == "response.function_call_arguments.done"
    ]
    return text, calls, events


def close_after(url: str, data: bytes, *, deflate: bool = False) -> tuple[int | None, str]:
    """Open a WebSocket session at ``url`` (``ws://host:port/path``) on a raw socket, offering
    permessage-deflate or not, send ``data`` (any bytes, frames valid or not) and read until the
    server ends the connection: the code and reason of the close frame it ends with."""
    where = urlsplit(url)
    assert where.hostname is not None and where.port is not None
    offer = "Sec-WebSocket-Extensions: permessage-deflate\r\n" if deflate else ""
    with socket.create_connection((where.hostname, where.port), timeout=30) as sock:
        sock.sendall(
            f"GET {where.path}?{where.query} HTTP/1.1\r\nHost: {where.netloc}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
            f"{offer}\r\n".encode()
        )
        got = b""
        while b"\r\n\r\n" not in got:
            got += sock.recv(65536)
        head, _, got = got.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 101 "), head
        assert (b"permessage-deflate" in head.lower()) == deflate, head
        sock.sendall(data)
        while chunk := sock.recv(65536):
            got += chunk
    last = parse_frames(got)[-1]
    assert last.opcode == Opcode.CLOSE, last
    return parse_close(last.payload)


@contextmanager
def server_log() -> Iterator[list[str]]:
    """What the loopback server (uvicorn) logs meanwhile, which does not reach pytest's log:
    enter it once the server is running (uvicorn sets its logging up as it starts)."""
    found: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: found.append(record.getMessage())  # type: ignore[method-assign]
    logger = logging.getLogger("uvicorn.error")
    logger.addHandler(handler)
    try:
        yield found
    finally:
        logger.removeHandler(handler)
