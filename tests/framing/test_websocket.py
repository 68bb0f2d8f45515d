"""The WebSocket frame codec against the RFC 6455 §5.7 and RFC 7692 §7.2.3 examples, and against
the websockets library's sans-IO protocols as an oracle, both ways, with and without deflate."""

from __future__ import annotations

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from websockets.client import ClientProtocol
from websockets.extensions.permessage_deflate import PerMessageDeflate
from websockets.frames import Opcode as WsOpcode
from websockets.protocol import State
from websockets.server import ServerProtocol
from websockets.uri import parse_uri

from ssemock.framing.websocket import (
    Deflater,
    FrameError,
    FrameParser,
    Inflater,
    Opcode,
    accept_key,
    close_payload,
    encode_frame,
    header_size,
    parse_close,
    parse_frames,
)


def test_rfc_6455_examples() -> None:
    assert encode_frame(Opcode.TEXT, b"Hello") == bytes.fromhex("810548656c6c6f")
    masked = bytes.fromhex("818537fa213d7f9f4d5158")
    assert encode_frame(Opcode.TEXT, b"Hello", mask=bytes.fromhex("37fa213d")) == masked
    assert [(f.opcode, f.payload) for f in parse_frames(masked, masked=True)] == [(Opcode.TEXT, b"Hello")]
    fragmented = bytes.fromhex("010348656c80026c6f")
    assert (
        encode_frame(Opcode.TEXT, b"Hel", fin=False) + encode_frame(Opcode.CONTINUATION, b"lo") == fragmented
    )
    assert encode_frame(Opcode.PING, b"Hello") == bytes.fromhex("890548656c6c6f")
    assert encode_frame(Opcode.BINARY, bytes(256))[:4] == bytes.fromhex("827e0100")
    assert encode_frame(Opcode.BINARY, bytes(65536))[:10] == bytes.fromhex("827f0000000000010000")
    # RFC 6455 §1.3: the handshake's example key
    assert accept_key("dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="


def test_rfc_7692_examples() -> None:
    first = Deflater().compress(b"Hello")
    assert encode_frame(Opcode.TEXT, first, rsv1=True) == bytes.fromhex("c107f248cdc9c90700")
    inflate = Inflater()
    assert inflate.decompress(bytes.fromhex("f248cdc9c90700")) == b"Hello"
    assert inflate.decompress(bytes.fromhex("f200110000")) == b"Hello"  # the context taken over


def test_offsets_headers_and_incremental_feeding() -> None:
    wire = b"".join(encode_frame(Opcode.TEXT, b"x" * n) for n in (0, 125, 126, 65535, 65536))
    frames = parse_frames(wire)
    assert [len(f.payload) for f in frames] == [0, 125, 126, 65535, 65536]
    assert [f.header for f in frames] == [header_size(n, False) for n in (0, 125, 126, 65535, 65536)]
    assert frames[0].start == 0 and all(a.end == b.start for a, b in zip(frames, frames[1:]))
    assert frames[-1].end == len(wire)
    parser = FrameParser(masked=False)
    one_by_one = [f for i in range(len(wire[:400])) for f in parser.feed(wire[i : i + 1])]
    assert one_by_one == frames[:3] and parser.pending == 400 - frames[2].end


@pytest.mark.parametrize(
    "wire, masked, problem",
    [
        (bytes.fromhex("8100"), True, "at byte 0: a client frame is not masked"),
        (bytes.fromhex("81800000000000"), False, "a server frame is masked"),
        (bytes.fromhex("8300"), False, "unknown opcode 0x3"),
        (bytes.fromhex("a100"), False, "RSV2 or RSV3"),
        (bytes.fromhex("0900"), False, "PING frame fragmented"),
        (bytes.fromhex("8100817e"), False, "at byte 2: 2 bytes of an unfinished frame"),
    ],
)
def test_bad_frames_name_the_byte(wire: bytes, masked: bool, problem: str) -> None:
    with pytest.raises(FrameError, match=problem):
        parse_frames(wire, masked=masked)


def test_close_payloads() -> None:
    assert parse_close(close_payload(1000)) == (1000, "")
    assert parse_close(close_payload(4001, "bye ☀")) == (4001, "bye ☀")
    assert close_payload(None) == b"" and parse_close(b"") == (None, "")
    for code in (1005, 1006, 1015, 999, 5000):
        with pytest.raises(ValueError, match=f"close code {code} cannot be sent"):
            close_payload(code)
    with pytest.raises(ValueError, match="at most 123 bytes"):
        close_payload(1000, "x" * 124)


def _client(deflate: bool) -> ClientProtocol:
    extensions = [PerMessageDeflate(False, False, 15, 15)] if deflate else None
    client = ClientProtocol(parse_uri("ws://127.0.0.1/"), state=State.OPEN)
    if extensions:
        client.extensions = extensions  # what an agreed handshake leaves
    return client


def _server(deflate: bool) -> ServerProtocol:
    server = ServerProtocol(state=State.OPEN)
    if deflate:
        server.extensions = [PerMessageDeflate(False, False, 15, 15)]
    return server


messages = st.lists(
    st.one_of(st.text(max_size=300).map(lambda t: (Opcode.TEXT, t.encode())), st.binary(max_size=300).map(lambda b: (Opcode.BINARY, b))),
    min_size=1,
    max_size=6,
)  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(messages, st.booleans(), st.integers(1, 7))
def test_websockets_reads_what_ssemock_writes(
    sent: list[tuple[Opcode, bytes]], deflate: bool, pieces: int
) -> None:
    client, deflater = _client(deflate), Deflater()
    wire = b""
    for op, data in sent:  # every message in `pieces` fragments, a ping between the first two
        payload = deflater.compress(data) if deflate else data
        cut = [len(payload) * k // pieces for k in range(pieces + 1)]
        for k in range(pieces):
            wire += encode_frame(
                Opcode.CONTINUATION if k else op,
                payload[cut[k] : cut[k + 1]],
                fin=k == pieces - 1,
                rsv1=deflate and k == 0,
            )
            if k == 0:
                wire += encode_frame(Opcode.PING, b"p")
    client.receive_data(wire)
    frames = client.events_received()
    data = [bytes(f.data) for f in frames if f.opcode not in (WsOpcode.PING, WsOpcode.PONG)]
    # websockets gives frames, already inflated; join each message's
    joined, current = [], b""
    for f in (f for f in frames if f.opcode != WsOpcode.PING):
        current += bytes(f.data)
        if f.fin:
            joined.append(current)
            current = b""
    assert joined == [d for _, d in sent] and len(data) >= len(sent)  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(messages, st.booleans())
def test_ssemock_reads_what_websockets_clients_write(sent: list[tuple[Opcode, bytes]], deflate: bool) -> None:
    client = _client(deflate)
    for op, data in sent:
        if op == Opcode.TEXT:
            client.send_text(data)
        else:
            client.send_binary(data)
    wire = b"".join(client.data_to_send())
    frames = parse_frames(wire, masked=True)
    inflater = Inflater()
    got = [(f.opcode, inflater.decompress(f.payload) if f.rsv1 else f.payload) for f in frames]
    assert got == sent
    # and the other way round: websockets' server reads ssemock's masked client frames
    server = _server(False)
    server.receive_data(b"".join(encode_frame(op, d, mask=os.urandom(4)) for op, d in sent))
    assert [(int(f.opcode), bytes(f.data)) for f in server.events_received()] == [
        (int(op), d) for op, d in sent
    ]
