"""The WebSocket frame codec (RFC 6455 §5, and the permessage-deflate payloads of RFC 7692):
pure functions over bytes, no I/O.

A replay writes the server's frames itself (unmasked, byte-exact, with the fragmentation,
control frames and compression a variant asks for) and reads the client's (masked); a recorder
parses both directions. `FrameParser` is incremental: it takes bytes as they arrive, cut
anywhere, and gives each frame once it is whole, with its byte offsets in the stream.
`MessageReader` reads a client's messages as a server must (RFC 6455 §5 to §8, RFC 7692): every
rule a frame, a fragmented message or a compressed one can break, and a cap on a message's size
once reassembled and inflated, each broken one a `FrameError` with the close code that answers it.
"""

from __future__ import annotations

import base64
import hashlib
import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from enum import IntEnum

__all__ = [
    "CONTROL",
    "GUID",
    "DeflateAgreement",
    "Deflater",
    "FrameError",
    "FrameParser",
    "Inflater",
    "MessageReader",
    "Opcode",
    "RawFrame",
    "Received",
    "accept_key",
    "agree_deflate",
    "close_payload",
    "encode_frame",
    "extension_offers",
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
    """A later frame of a fragmented message."""
    TEXT = 0x1
    """A text message (UTF-8), or its first fragment."""
    BINARY = 0x2
    """A binary message, or its first fragment."""
    CLOSE = 0x8
    """The close handshake: a code and a reason."""
    PING = 0x9
    """A keepalive the other side answers with a pong."""
    PONG = 0xA
    """The answer to a ping."""


CONTROL = frozenset({Opcode.CLOSE, Opcode.PING, Opcode.PONG})
"""The control opcodes: never fragmented, at most 125 bytes of payload."""
_OPCODES = {int(op): op for op in Opcode}  # (a look-up, not ``Opcode(n)``'s call: one a frame)


class FrameError(ValueError):
    """Bytes that are no valid frame: the message names the byte offset in the stream."""

    def __init__(self, message: str, *, offset: int, code: int = 1002):
        super().__init__(f"WebSocket frame at byte {offset}: {message}")
        self.offset = offset
        """Where the bad frame starts in the stream parsed."""
        self.code = code
        """The close code a reader answers it with (RFC 6455 §7.4.1): 1002, a protocol error;
        1007, text that is not UTF-8; 1009, a message over the reader's size cap."""


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
        # where the frames not yet given start in the buffer (the bytes before it go at the next feed)
        self._at = 0
        self._offset = 0  # stream offset of the buffer's byte at ``_at``

    @property
    def pending(self) -> int:
        """Bytes received that do not yet make a whole frame."""
        return len(self._buffer) - self._at

    def feed(self, data: bytes) -> list[RawFrame]:
        """Take more bytes; the frames they complete, in order."""
        return list(self.frames(data))

    def frames(self, data: bytes) -> Iterator[RawFrame]:
        """`feed`, one frame at a time: each frame's header is checked against ``max_size`` as
        it is then (a reader lowers it while a fragmented message grows)."""
        buf = self._buffer
        if self._at:  # the frames given before let go at once, not one by one (each a move of the rest)
            del buf[: self._at]
            self._at = 0
        buf += data
        while (frame := self._next()) is not None:
            yield frame

    def _next(self) -> RawFrame | None:
        buf, start, base = self._buffer, self._offset, self._at
        if len(buf) - base < 2:
            return None
        first, second = buf[base], buf[base + 1]
        if first & 0x30:
            raise FrameError("RSV2 or RSV3 set (no extension negotiated them)", offset=start)
        op = _OPCODES.get(first & 0x0F)
        if op is None:
            raise FrameError(f"unknown opcode {first & 0x0F:#x}", offset=start)
        fin, rsv1, masked = bool(first & 0x80), bool(first & 0x40), bool(second & 0x80)
        if masked != self.masked:
            side = "client frame is not masked" if self.masked else "server frame is masked"
            raise FrameError(f"a {side}", offset=start)
        length, at = second & 0x7F, base + 2
        if length >= 126:
            size = 2 if length == 126 else 8
            if len(buf) < at + size:
                return None
            length = int.from_bytes(buf[at : at + size], "big")
            at += size
        if length >> 63:
            raise FrameError("a 64-bit length with its most significant bit set", offset=start)
        if first & 0x08 and (not fin or length > 125):  # a control frame (`CONTROL`: the opcodes from 0x8)
            raise FrameError(f"a {op.name} frame fragmented or over 125 bytes", offset=start)
        if length > self.max_size:
            raise FrameError(f"a payload of {length} bytes (over {self.max_size})", offset=start, code=1009)
        key = b""
        if masked:
            if len(buf) < at + 4:
                return None
            key, at = bytes(buf[at : at + 4]), at + 4
        if len(buf) < at + length:
            return None
        with memoryview(buf) as view:  # one copy (a bytearray slice, then bytes of it, made two)
            payload = bytes(view[at : at + length])
        if masked:
            payload = _mask(payload, key)
        self._at = at + length
        self._offset += at + length - base
        return RawFrame(op, fin, rsv1, payload, start, self._offset)


_CLOSE_CODES = frozenset({1000, 1001, 1002, 1003, *range(1007, 1015), *range(3000, 5000)})
"""The close codes an endpoint may send (RFC 6455 §7.4, and IANA's registry to 1014)."""


@dataclass(frozen=True)
class Received:
    """What `MessageReader` gives: a whole message (``"text"``, ``"binary"``: reassembled and
    inflated) or a control frame (``"ping"``, ``"pong"``, ``"close"``: its payload, checked)."""

    kind: str
    payload: bytes


class MessageReader:
    """A server's reader of its client's bytes: the messages and control frames they hold, in
    order, each checked as RFC 6455 and RFC 7692 ask. ``max_size``: the largest message, once
    reassembled and inflated (bytes; its frames are refused from their headers on, nothing past
    it is read or inflated); ``deflate``: whether the handshake agreed to permessage-deflate
    (RSV1 is a protocol error otherwise).

    A rule broken raises `FrameError` with the close code that answers it (``code``): 1009 for a
    message over ``max_size``; 1007 for a text message or a close reason that is not UTF-8; 1002
    for the rest (an unmasked frame, a reserved bit or opcode, a control frame fragmented, over
    125 bytes or compressed, a close payload of 1 byte or a code no endpoint sends, a
    continuation with no message to continue or a message before the last one's end, RSV1
    without permessage-deflate or on a continuation, compressed data that does not inflate).
    The reader is then spent: every later `feed` raises the same error. After the client's close
    frame, nothing more is read."""

    def __init__(self, *, max_size: int = 1 << 26, deflate: bool = False) -> None:
        self.max_size = max_size
        self.deflate = deflate
        self._parser = FrameParser(masked=True, max_size=max_size)
        self._inflater = Inflater()
        self._parts: list[bytes] = []
        self._size = 0
        self._kind: str | None = None  # the message under way (its first frame read)
        self._rsv1 = False
        self._start = 0
        self._error: FrameError | None = None
        self.closed = False
        """Whether the client's close frame came: nothing after it is read (RFC 6455 §5.5.1)."""

    def feed(self, data: bytes) -> list[Received]:
        """Take more bytes; what they complete, in order."""
        if self._error is not None:
            raise self._error
        out: list[Received] = []
        try:
            for frame in self._parser.frames(data) if not self.closed else ():
                out += self._frame(frame)
                self.closed = frame.opcode == Opcode.CLOSE
                if self.closed:
                    break
        except FrameError as exc:
            if (
                exc.code == 1009 and self._kind is not None and exc.offset != self._start
            ):  # a later fragment's
                exc = FrameError(f"a message over {self.max_size} bytes", offset=self._start, code=1009)
            self._error = exc
            raise exc from None
        return out

    def _frame(self, frame: RawFrame) -> list[Received]:
        op, at = frame.opcode, frame.start
        if op in CONTROL:
            if frame.rsv1:
                raise FrameError(f"RSV1 set on a {op.name} frame", offset=at)
            if op == Opcode.CLOSE:
                _check_close(frame)
            return [Received(op.name.lower(), frame.payload)]
        if frame.rsv1 and op == Opcode.CONTINUATION:
            raise FrameError("RSV1 set on a continuation frame", offset=at)
        if frame.rsv1 and not self.deflate:
            raise FrameError("RSV1 set, and no permessage-deflate was agreed", offset=at)
        if op == Opcode.CONTINUATION:
            if self._kind is None:
                raise FrameError("a continuation frame with no message to continue", offset=at)
        elif self._kind is not None:
            raise FrameError(f"a {op.name} frame before the last message's final frame", offset=at)
        else:
            self._kind, self._rsv1, self._start = ("text" if op == Opcode.TEXT else "binary"), frame.rsv1, at
        payload = frame.payload
        if self._rsv1:  # inflated as it comes, never past the cap
            try:
                payload = self._inflater.decompress(payload, self.max_size - self._size, final=frame.fin)
            except ValueError as exc:
                raise FrameError(str(exc), offset=at) from None
            if self._size + len(payload) > self.max_size:
                raise FrameError(
                    f"a message over {self.max_size} bytes once inflated", offset=self._start, code=1009
                )
        self._parts.append(payload)
        self._size += len(payload)
        if not frame.fin:
            self._parser.max_size = self.max_size - self._size
            return []
        kind, whole = self._kind, b"".join(self._parts)
        self._kind, self._parts, self._size = None, [], 0
        self._parser.max_size = self.max_size
        if kind == "text":
            try:
                whole.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise FrameError(
                    f"a text message that is not UTF-8 ({exc.reason} at byte {exc.start})",
                    offset=self._start,
                    code=1007,
                ) from None
        return [Received(kind, whole)]


def _check_close(frame: RawFrame) -> None:
    payload = frame.payload
    if len(payload) == 1:
        raise FrameError("a close payload of 1 byte (the code is 2)", offset=frame.start)
    if payload:
        try:
            payload[2:].decode("utf-8")
        except UnicodeDecodeError:
            raise FrameError("a close reason that is not UTF-8", offset=frame.start, code=1007) from None
        code = struct.unpack("!H", payload[:2])[0]
        if code not in _CLOSE_CODES:
            raise FrameError(f"close code {code}, which no endpoint sends", offset=frame.start)


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
    or 1005 (what the receiver reports for a frame with no code, as a recording keeps it).
    1005, 1006 and 1015 never go on the wire."""
    if code is None or code == 1005:
        if reason:
            raise ValueError("a close reason needs a code")
        return b""
    if code in (1006, 1015) or not (1000 <= code <= 4999):
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
    RFC 7692 tail; ``no_context_takeover`` starts each message afresh. ``mem_level`` is zlib's
    (8, its default; the ``websockets`` server uses 5): it changes the bytes, not their meaning."""

    def __init__(self, *, no_context_takeover: bool = False, max_window_bits: int = 15, mem_level: int = 8):
        self.no_context_takeover = no_context_takeover
        self.bits = _bits(max_window_bits)
        self.mem_level = mem_level
        self._z = self._new()

    def _new(self) -> zlib._Compress:
        return zlib.compressobj(zlib.Z_DEFAULT_COMPRESSION, zlib.DEFLATED, -self.bits, self.mem_level)

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
        self._starts = True  # the next payload starts a message

    def decompress(self, payload: bytes, limit: int | None = None, *, final: bool = True) -> bytes:
        """The message; with a ``limit``, at most ``limit + 1`` bytes of it (inflating no further:
        more than ``limit`` says the message is larger; the inflater is then spent). A fragmented
        message's frames are inflated as they come, ``final=False`` for all but the last."""
        if self.no_context_takeover and self._starts:
            self._z = zlib.decompressobj(-self.bits)
        self._starts = final
        try:
            return self._z.decompress(
                payload + _TAIL if final else payload, 0 if limit is None else limit + 1
            )
        except zlib.error as exc:
            raise ValueError(f"a compressed message that does not inflate: {exc}") from None


# -- permessage-deflate negotiation (RFC 7692 §7.1) ---------------------------------------------

_DEFLATE_PARAMS = (
    "server_no_context_takeover",
    "client_no_context_takeover",
    "server_max_window_bits",
    "client_max_window_bits",
)


def extension_offers(header: str) -> list[tuple[str, dict[str, str | None]]]:
    """The extensions of a ``Sec-WebSocket-Extensions`` value, in order: each name with its
    parameters (a value unquoted; None for a parameter without one). A parameter named twice
    keeps its first value and adds the name under ``"\x00duplicate"``, which no extension knows."""
    out: list[tuple[str, dict[str, str | None]]] = []
    for offer in header.split(","):
        name, *params = (p.strip() for p in offer.split(";"))
        if not name:
            continue
        found: dict[str, str | None] = {}
        for param in params:
            key, sep, value = param.partition("=")
            key = key.strip().lower()
            if not key:
                continue
            if key in found:
                found["\x00duplicate"] = key
            else:
                found[key] = value.strip().strip('"') if sep else None
        out.append((name.lower(), found))
    return out


def _window(value: str | None) -> int | None:
    return int(value) if value is not None and value.isdigit() and 8 <= int(value) <= 15 else None


@dataclass(frozen=True)
class DeflateAgreement:
    """A permessage-deflate agreement as a server's handshake answer states it (RFC 7692 §7.1):
    whether each side resets its compression per message, and the windows (None: 15, unstated)."""

    server_no_context_takeover: bool = False
    client_no_context_takeover: bool = False
    server_max_window_bits: int | None = None
    client_max_window_bits: int | None = None

    @classmethod
    def parse(cls, header: str | None) -> DeflateAgreement | None:
        """The agreement a server's ``Sec-WebSocket-Extensions`` answer states (None: no
        permessage-deflate in it)."""
        for name, params in extension_offers(header or ""):
            if name == "permessage-deflate":
                return cls(
                    "server_no_context_takeover" in params,
                    "client_no_context_takeover" in params,
                    _window(params.get("server_max_window_bits")),
                    _window(params.get("client_max_window_bits")),
                )
        return None

    def header(self) -> str:
        """The answer's ``Sec-WebSocket-Extensions`` value."""
        parts = ["permessage-deflate"]
        if self.server_no_context_takeover:
            parts.append("server_no_context_takeover")
        if self.client_no_context_takeover:
            parts.append("client_no_context_takeover")
        if self.server_max_window_bits is not None:
            parts.append(f"server_max_window_bits={self.server_max_window_bits}")
        if self.client_max_window_bits is not None:
            parts.append(f"client_max_window_bits={self.client_max_window_bits}")
        return "; ".join(parts)

    def deflater(self, *, mem_level: int = 8) -> Deflater:
        """The server's compressor under this agreement."""
        return Deflater(
            no_context_takeover=self.server_no_context_takeover,
            max_window_bits=self.server_max_window_bits or 15,
            mem_level=mem_level,
        )


def agree_deflate(offered: str, like: DeflateAgreement | None = None) -> DeflateAgreement | None:
    """What a server answers to the client's ``Sec-WebSocket-Extensions`` ``offered``: the first
    permessage-deflate offer it can accept, with the parameters of ``like`` (a recorded agreement)
    where the offer allows them; None when the client offered none it can accept (an unknown or
    repeated parameter, a bad value, or a server window of 8 bits, which zlib cannot write).

    RFC 7692 §7.1: a server accepts the client's ``server_no_context_takeover`` and
    ``server_max_window_bits`` by answering them (the window no larger than offered), states
    ``client_max_window_bits`` only when the client offered it, and may always ask for
    ``client_no_context_takeover``."""
    like = like or DeflateAgreement()
    for name, params in extension_offers(offered):
        if name != "permessage-deflate" or any(p not in _DEFLATE_PARAMS for p in params):
            continue
        if any(
            params.get(p) is not None for p in ("server_no_context_takeover", "client_no_context_takeover")
        ):
            continue
        server_bits = like.server_max_window_bits
        if "server_max_window_bits" in params:
            limit = _window(params["server_max_window_bits"])
            if limit is None or limit < 9:
                continue
            server_bits = min(server_bits or 15, limit)
        if server_bits is not None:
            server_bits = max(9, server_bits)  # what `Deflater` writes with
        client_bits = None
        if "client_max_window_bits" in params:
            value = params["client_max_window_bits"]
            limit = 15 if value is None else _window(value)
            if limit is None:
                continue
            if like.client_max_window_bits is not None:
                client_bits = min(like.client_max_window_bits, limit)
        return DeflateAgreement(
            like.server_no_context_takeover or "server_no_context_takeover" in params,
            like.client_no_context_takeover,
            server_bits,
            client_bits,
        )
    return None
