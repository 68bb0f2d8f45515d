"""The WebSocket frame codec against the RFC 6455 §5.7 and RFC 7692 §7.2.3 examples, and against
the websockets library's sans-IO protocols as an oracle, both ways, with and without deflate."""

from __future__ import annotations

import os

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from websockets.client import ClientProtocol
from websockets.extensions.permessage_deflate import PerMessageDeflate
from websockets.frames import CloseCode
from websockets.frames import Opcode as WsOpcode
from websockets.protocol import State
from websockets.server import ServerProtocol
from websockets.uri import parse_uri

from ssemock.framing.websocket import (
    Deflater,
    FrameError,
    FrameParser,
    Inflater,
    MessageReader,
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


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.sampled_from([0, 1, 125, 126, 300, 65536]), min_size=1, max_size=6),
    st.booleans(),
    st.lists(st.integers(1, 70_000), max_size=8),
    st.booleans(),
)
def test_frames_fed_in_any_pieces_are_the_whole_wire_s(
    sizes: list[int], masked: bool, cuts: list[int], bad_end: bool
) -> None:
    """The frames, their offsets and what is pending after each piece are those of the wire parsed
    whole, wherever it is cut; a bad frame after them is named at its byte, and again at the next
    feed (the parser is spent)."""
    mask = b"\x01\x02\x03\x04" if masked else None
    wire = b"".join(encode_frame(Opcode.BINARY, bytes([n % 251]) * n, mask=mask) for n in sizes)
    whole = parse_frames(wire, masked=masked)
    bad = bytes.fromhex("8300") if bad_end else b""
    data, parser, got = wire + bad, FrameParser(masked), []
    bounds = sorted({c % (len(data) + 1) for c in cuts} | {0, len(data)})
    for a, b in zip(bounds, bounds[1:]):
        if bad_end and b == len(data):
            with pytest.raises(FrameError, match=f"at byte {len(wire)}: unknown opcode"):
                got.extend(parser.frames(data[a:b]))  # (the frames before the bad one, given)
            with pytest.raises(FrameError, match=f"at byte {len(wire)}: unknown opcode"):
                parser.feed(b"")
            break
        got += parser.feed(data[a:b])
        assert parser.pending == b - (got[-1].end if got else 0)
    assert got == whole


@pytest.mark.parametrize("begun", [0, 1, 3, 9, 300])
@pytest.mark.parametrize("taken", [1, 2])
def test_an_iteration_stopped_keeps_the_rest_and_not_the_callers_buffer(begun: int, taken: int) -> None:
    """A reader that stops after a frame (`MessageReader` after a close) leaves the parser the
    rest of the feed: its own copy, not a view of the caller's buffer, which the caller may
    reuse; the next feeds go on from there, whether the bytes kept before were given or not."""
    wire = b"".join(encode_frame(Opcode.TEXT, bytes([65 + n % 26]) * n) for n in (3, 200, 70_000, 5, 4, 1))
    whole = parse_frames(wire)
    parser = FrameParser(masked=False)
    got = parser.feed(wire[:begun])
    for cut in (begun, len(wire) - 3):  # stopped twice: the second time with frames kept from the first
        buffer = bytearray(wire[cut : len(wire) - 3] if cut == begun else wire[cut:])
        frames = parser.frames(buffer)
        got += [next(frames) for _ in range(taken if cut == begun else 1)]
        frames.close()
        buffer[:] = b"\xff" * len(buffer)  # the caller reuses its buffer
        assert parser.pending == (len(wire) - 3 if cut == begun else len(wire)) - got[-1].end
    got += parser.feed(b"")
    assert got == whole


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
    assert close_payload(1005) == b""  # what a receiver reports for a frame with no code
    with pytest.raises(ValueError, match="needs a code"):
        close_payload(1005, "bye")
    for code in (1006, 1015, 999, 5000):
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


# -- a server's reader of its client (issue 41 item 3): websockets' sans-IO server as the oracle ----


def _frame(first: int, payload: bytes, masked: bool = True) -> bytes:
    """A frame with the first byte (FIN, RSV bits, opcode) as given, masked or not."""
    return bytes([first]) + encode_frame(Opcode.BINARY, payload, mask=os.urandom(4) if masked else None)[1:]


def _oracle(wire: bytes, max_size: int, deflate: bool) -> tuple[list[tuple[str, bytes]], int | None]:
    """What websockets' server reads in ``wire`` up to the first close: the messages (text
    decoded as its connections decode it) and control frames, and the close code it fails with."""
    server = ServerProtocol(state=State.OPEN, max_size=max_size)
    if deflate:
        server.extensions = [PerMessageDeflate(False, False, 15, 15)]
    server.receive_data(wire)
    got: list[tuple[str, bytes]] = []
    kind, parts = "", b""
    for f in server.events_received():
        if f.opcode in (WsOpcode.PING, WsOpcode.PONG, WsOpcode.CLOSE):
            got.append((f.opcode.name.lower(), bytes(f.data)))
            continue
        kind = {WsOpcode.TEXT: "text", WsOpcode.BINARY: "binary"}.get(f.opcode, kind)
        parts += bytes(f.data)
        if f.fin:
            if kind == "text":
                try:
                    parts.decode("utf-8")
                except UnicodeDecodeError:
                    return got, CloseCode.INVALID_DATA
            got.append((kind, parts))
            parts = b""
    failed = server.close_sent.code if server.parser_exc is not None and server.close_sent else None
    return got, failed


def _ours(wire: list[bytes], max_size: int, deflate: bool) -> tuple[list[tuple[str, bytes]], int | None]:
    """What the reader reads in ``wire``'s frames, fed one by one, up to the first close."""
    reader, got = MessageReader(max_size=max_size, deflate=deflate), []
    try:
        for frame in wire:
            got += [(r.kind, r.payload) for r in reader.feed(frame)]
    except FrameError as exc:
        return got[: _closed(got)], exc.code
    return got[: _closed(got)], None


def _closed(got: list[tuple[str, bytes]]) -> int:
    return next((i + 1 for i, (kind, _) in enumerate(got) if kind == "close"), len(got))


def _close_mid_message(firsts: list[int]) -> bool:
    """Whether a close frame comes inside a fragmented message: RFC 6455 lets control frames
    come between fragments; websockets fails the connection on a close there, the reader reads
    the close (either way the session ends)."""
    open_ = False
    for first in firsts:
        op = first & 0x0F
        if op == 0x8 and open_:
            return True
        if op in (0x0, 0x1, 0x2):
            open_ = not first & 0x80
    return False


_first_bytes = st.sampled_from(
    [0x81, 0x82, 0x01, 0x02, 0x00, 0x80, 0x89, 0x8A, 0x88, 0xC1, 0xC2, 0x41, 0xC0, 0x40]  # ordinary, RSV1
    + [0x83, 0x8B, 0xA1, 0x91, 0x09, 0xC9]  # reserved opcodes and bits, a fragmented or compressed ping
)
_payloads = st.one_of(
    st.binary(max_size=40),
    st.text(max_size=20).map(str.encode),
    st.binary(max_size=130),
    st.builds(
        lambda code, reason: code.to_bytes(2, "big") + reason, st.integers(0, 5100), st.binary(max_size=6)
    ),
    st.binary(max_size=400).map(lambda b: Deflater().compress(b)),
    st.just(Deflater().compress(bytes(5000))),  # a small bomb
)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(_first_bytes, _payloads), max_size=6),
    st.sampled_from([64, 1000]),
    st.booleans(),
)
def test_the_reader_reads_and_fails_as_websockets_server_does(
    frames: list[tuple[int, bytes]], max_size: int, deflate: bool
) -> None:
    """Frames a client might send, good and bad (reserved opcodes and bits, RSV1 with or without
    deflate agreed, control frames fragmented, compressed or over 125 bytes, close codes and
    reasons of every kind, text not UTF-8, messages over ``max_size`` whole, fragmented or once
    inflated): the reader gives what websockets' server gives, and fails where it fails, with
    the same close code."""
    assume(not _close_mid_message([first for first, _ in frames]))
    wire = [_frame(first, payload) for first, payload in frames]
    (ours, code), (theirs, want) = _ours(wire, max_size, deflate), _oracle(b"".join(wire), max_size, deflate)
    assert ours == theirs
    # a frame that is too big and breaks another rule too (a new message before the last one
    # ended, say) is answered 1002 or 1009 by the order of the checks, which the RFC leaves open
    assert code == want or {code, want} == {1002, 1009}


def test_the_reader_fails_where_websockets_is_silent_and_stays_failed() -> None:
    """An unmasked client frame, and a 64-bit length with its top bit set (RFC 6455 §5.2: it
    MUST be 0): 1002 at once; a spent reader raises the same error on every later feed."""
    for wire in (encode_frame(Opcode.TEXT, b"{}"), bytes([0x82, 0xFF]) + (1 << 63).to_bytes(8, "big")):
        reader = MessageReader()
        with pytest.raises(FrameError) as first:
            reader.feed(wire)
        assert first.value.code == 1002
        with pytest.raises(FrameError) as again:
            reader.feed(encode_frame(Opcode.TEXT, b"{}", mask=b"abcd"))
        assert again.value is first.value


def test_a_bomb_is_inflated_no_further_than_the_cap() -> None:
    bomb = Deflater().compress(bytes(8 << 20))  # 8 MiB of zeros in 8 KiB
    assert len(Inflater().decompress(bomb, 1 << 20)) == (1 << 20) + 1
    reader = MessageReader(max_size=1 << 20, deflate=True)
    with pytest.raises(FrameError, match="over 1048576 bytes once inflated") as exc:
        reader.feed(encode_frame(Opcode.BINARY, bomb, rsv1=True, mask=b"abcd"))
    assert exc.value.code == 1009
