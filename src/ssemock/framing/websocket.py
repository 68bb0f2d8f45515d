"""The WebSocket frame codec (RFC 6455 §5, and the permessage-deflate payloads of RFC 7692):
pure functions over bytes, no I/O.

A replay writes the server's frames itself (unmasked, byte-exact, with the fragmentation,
control frames and compression a variant asks for) and reads the client's (masked); a recorder
parses both directions. `FrameParser` is incremental: it takes bytes as they arrive, cut
anywhere, and gives each frame once it is whole, with its byte offsets in the stream.
"""

from __future__ import annotations

import base64
import hashlib
import struct
import zlib
from dataclasses import dataclass
from enum import IntEnum

__all__ = [
    "CONTROL",
    "GUID",
    "Deflater",
    "FrameError",
    "FrameParser",
    "Inflater",
    "Opcode",
    "RawFrame",
    "accept_key",
    "close_payload",
    "encode_frame",
    "header_size",
    "parse_close",
    "parse_frames",
]

GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
"""The RFC 6455 GUID a server appends to the client's key for ``Sec-WebSocket-Accept``."""
_TAIL = b"\x00\x00\xff\xff"  # RFC 7692 §7.2.1: the end of every compressed message, removed on the wire


class Opcode(IntEnum):
    """A frame's opcode (RFC 6455 §5.2)."""

    CONTINUATION = 0x0
    TEXT = 0x1
    BINARY = 0x2
    CLOSE = 0x8
    PING = 0x9
    PONG = 0xA


CONTROL = frozenset({Opcode.CLOSE, Opcode.PING, Opcode.PONG})
"""The control opcodes: never fragmented, at most 125 bytes of payload."""


class FrameError(ValueError):
    """Bytes that are no valid frame: the message names the byte offset in the stream."""

    def __init__(self, message: str, *, offset: int):
        super().__init__(f"WebSocket frame at byte {offset}: {message}")
        self.offset = offset
        """Where the bad frame starts in the stream parsed."""


@dataclass(frozen=True)
class RawFrame:
    """One frame as it was on the wire: its payload unmasked (still compressed when ``rsv1``),
    and its byte offsets ``[start, end)`` in the stream parsed."""

    opcode: Opcode
    fin: bool
    rsv1: bool
    payload: bytes
    start: int
    end: int

    @property
    def header(self) -> int:
        """The size of its header (2 to 14 bytes)."""
        return self.end - self.start - len(self.payload)


def header_size(length: int, masked: bool) -> int:
    """The size of the header of a frame with ``length`` bytes of payload."""
    return 2 + (0 if length < 126 else 2 if length < 1 << 16 else 8) + (4 if masked else 0)


def _mask(data: bytes, key: bytes) -> bytes:
    if not data:
        return data
    repeated = (key * (len(data) // 4 + 1))[: len(data)]
    return (int.from_bytes(data, "big") ^ int.from_bytes(repeated, "big")).to_bytes(len(data), "big")


def encode_frame(
    opcode: Opcode | int, payload: bytes, *, fin: bool = True, rsv1: bool = False, mask: bytes | None = None
) -> bytes:
    """One frame's bytes: a server's frame with ``mask=None``, a client's with a 4-byte key.

    Checks what RFC 6455 forbids (a fragmented or oversized control frame, an unknown opcode,
    a key that is not 4 bytes): a ValueError saying which."""
    op = Opcode(opcode)
    if op in CONTROL and (not fin or len(payload) > 125):
        raise ValueError(f"a {op.name} frame is never fragmented and carries at most 125 bytes")
    if mask is not None and len(mask) != 4:
        raise ValueError("a masking key is 4 bytes")
    first = (0x80 if fin else 0) | (0x40 if rsv1 else 0) | op
    bit = 0x80 if mask is not None else 0
    length = len(payload)
    if length < 126:
        head = struct.pack("!BB", first, bit | length)
    elif length < 1 << 16:
        head = struct.pack("!BBH", first, bit | 126, length)
    else:
        head = struct.pack("!BBQ", first, bit | 127, length)
    if mask is None:
        return head + payload
    return head + mask + _mask(payload, mask)


class FrameParser:
    """Incremental frame parser for one direction: ``masked=True`` for what a client sends
    (every frame must be masked), False for what a server sends (none may be)."""

    def __init__(self, masked: bool, *, max_size: int = 1 << 26):
        self.masked = masked
        self.max_size = max_size
        self._buffer = bytearray()
        self._offset = 0  # stream offset of the buffer's first byte

    @property
    def pending(self) -> int:
        """Bytes received that do not yet make a whole frame."""
        return len(self._buffer)

    def feed(self, data: bytes) -> list[RawFrame]:
        """Take more bytes; the frames they complete, in order."""
        self._buffer += data
        frames: list[RawFrame] = []
        while True:
            frame = self._next()
            if frame is None:
                return frames
            frames.append(frame)

    def _next(self) -> RawFrame | None:
        buf, start = self._buffer, self._offset
        if len(buf) < 2:
            return None
        first, second = buf[0], buf[1]
        if first & 0x30:
            raise FrameError("RSV2 or RSV3 set (no extension negotiated them)", offset=start)
        try:
            op = Opcode(first & 0x0F)
        except ValueError:
            raise FrameError(f"unknown opcode {first & 0x0F:#x}", offset=start) from None
        fin, rsv1, masked = bool(first & 0x80), bool(first & 0x40), bool(second & 0x80)
        if masked != self.masked:
            side = "client frame is not masked" if self.masked else "server frame is masked"
            raise FrameError(f"a {side}", offset=start)
        length, at = second & 0x7F, 2
        if length >= 126:
            size = 2 if length == 126 else 8
            if len(buf) < 2 + size:
                return None
            length = int.from_bytes(buf[2 : 2 + size], "big")
            at += size
        if op in CONTROL and (not fin or length > 125):
            raise FrameError(f"a {op.name} frame fragmented or over 125 bytes", offset=start)
        if length > self.max_size:
            raise FrameError(f"a payload of {length} bytes (over {self.max_size})", offset=start)
        key = b""
        if masked:
            if len(buf) < at + 4:
                return None
            key, at = bytes(buf[at : at + 4]), at + 4
        if len(buf) < at + length:
            return None
        payload = bytes(buf[at : at + length])
        if masked:
            payload = _mask(payload, key)
        del buf[: at + length]
        self._offset += at + length
        return RawFrame(op, fin, rsv1, payload, start, start + at + length)


def parse_frames(data: bytes, masked: bool = False) -> list[RawFrame]:
    """Every frame of ``data``, which must end at a frame boundary (FrameError otherwise)."""
    parser = FrameParser(masked)
    frames = parser.feed(data)
    if parser.pending:
        raise FrameError(
            f"{parser.pending} bytes of an unfinished frame at the end", offset=len(data) - parser.pending
        )
    return frames


def close_payload(code: int | None, reason: str = "") -> bytes:
    """A close frame's payload: the code (big-endian) and the UTF-8 reason; empty for no code
    (what the receiver reports as 1005). 1005, 1006 and 1015 never go on the wire."""
    if code is None:
        if reason:
            raise ValueError("a close reason needs a code")
        return b""
    if code in (1005, 1006, 1015) or not (1000 <= code <= 4999):
        raise ValueError(f"close code {code} cannot be sent in a close frame")
    data = struct.pack("!H", code) + reason.encode()
    if len(data) > 125:
        raise ValueError("a close reason is at most 123 bytes of UTF-8")
    return data


def parse_close(payload: bytes) -> tuple[int | None, str]:
    """``(code, reason)`` of a close frame's payload; ``(None, "")`` when it has none."""
    if not payload:
        return None, ""
    if len(payload) == 1:
        raise ValueError("a close payload of 1 byte (the code is 2)")
    return struct.unpack("!H", payload[:2])[0], payload[2:].decode()


def accept_key(key: str) -> str:
    """``Sec-WebSocket-Accept`` for the client's ``Sec-WebSocket-Key``."""
    return base64.b64encode(hashlib.sha1(key.encode() + GUID).digest()).decode()


def _bits(bits: int) -> int:
    return max(9, min(15, bits))  # zlib refuses a raw window of 8 bits; 9 reads what 8 wrote


class Deflater:
    """permessage-deflate for one direction: each message's payload, compressed and without the
    RFC 7692 tail; ``no_context_takeover`` starts each message afresh."""

    def __init__(self, *, no_context_takeover: bool = False, max_window_bits: int = 15):
        self.no_context_takeover = no_context_takeover
        self.bits = _bits(max_window_bits)
        self._z = self._new()

    def _new(self) -> zlib._Compress:
        return zlib.compressobj(zlib.Z_DEFAULT_COMPRESSION, zlib.DEFLATED, -self.bits)

    def compress(self, message: bytes) -> bytes:
        if self.no_context_takeover:
            self._z = self._new()
        data = self._z.compress(message) + self._z.flush(zlib.Z_SYNC_FLUSH)
        return data[: -len(_TAIL)] if data.endswith(_TAIL) else data


class Inflater:
    """The reader's side of `Deflater`: a compressed message's payload back to the message."""

    def __init__(self, *, no_context_takeover: bool = False, max_window_bits: int = 15):
        self.no_context_takeover = no_context_takeover
        self.bits = 15  # a window as large as any sender's reads every sender's
        self._z = zlib.decompressobj(-self.bits)

    def decompress(self, payload: bytes) -> bytes:
        if self.no_context_takeover:
            self._z = zlib.decompressobj(-self.bits)
        try:
            return self._z.decompress(payload + _TAIL)
        except zlib.error as exc:
            raise ValueError(f"a compressed message that does not inflate: {exc}") from None
