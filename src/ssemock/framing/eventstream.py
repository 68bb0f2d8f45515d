"""AWS eventstream (``application/vnd.amazon.eventstream``): the binary framing of Bedrock's
``ConverseStream`` / ``InvokeModelWithResponseStream`` and other AWS streaming APIs.

A message (frame) is::

    total length (u32) | headers length (u32) | prelude CRC32 (u32, of the 8 bytes before it)
    headers: name length (u8) | name (UTF-8) | value type (u8) | value
    payload
    message CRC32 (u32, of every byte before it)

all big-endian. Header values are typed: 0/1 true/false (no bytes), 2 byte (i8), 3 short (i16),
4 integer (i32), 5 long (i64), 6 byte array (u16 length + bytes), 7 string (u16 length + UTF-8),
8 timestamp (i64 milliseconds since the epoch), 9 UUID (16 bytes).

[`Decoder`][ssemock.framing.eventstream.Decoder] is incremental (``feed`` any chunking, one frame out as soon as its last byte is
in; linear work however the stream is cut) and checks everything botocore checks: both CRCs,
lengths (at most 128 KiB of headers and 24 MiB of payload, botocore's limits, so a corrupt
length cannot make it buffer without bound), header types, UTF-8, duplicate header names. A
problem is one [`FrameError`][ssemock.framing.eventstream.FrameError] naming the frame's index and byte offset. A frame cut off by
the end of the stream is dropped, as an unterminated SSE event is ([`Decoder.pending`][ssemock.framing.eventstream.Decoder.pending]
says how many bytes were left). [`frame_ends`][ssemock.framing.eventstream.frame_ends] finds frame boundaries from the lengths
alone, for chunking and faults; [`encode`][ssemock.framing.eventstream.encode] writes a frame (the synthesizer's helper).
"""

from __future__ import annotations

import struct
import uuid
from binascii import crc32
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple, TypeAlias, TypeGuard

import orjson

from . import Framing

__all__ = [
    "CONTENT_TYPE",
    "FRAMING",
    "Decoder",
    "Frame",
    "FrameError",
    "HeaderValue",
    "Typed",
    "decode",
    "encode",
    "frame_ends",
    "is_eventstream",
    "is_frame",
    "iter_decode",
]

CONTENT_TYPE = "application/vnd.amazon.eventstream"
"""The content type of an AWS eventstream response."""
PRELUDE = 12
"""Total length, headers length, prelude CRC."""
MINIMUM = PRELUDE + 4
"""A frame with no headers and no payload."""
MAX_HEADERS = 128 * 1024  # botocore's limits
"""The largest headers section a frame may have, in bytes (botocore's limit)."""
MAX_PAYLOAD = 24 * 1024 * 1024
"""The largest payload a frame may have, in bytes (botocore's limit)."""

HeaderValue: TypeAlias = bool | int | bytes | str | datetime | uuid.UUID
"""The Python types a header value can have."""

_TYPE_NAMES = {
    0: "true",
    1: "false",
    2: "byte",
    3: "short",
    4: "integer",
    5: "long",
    6: "byte array",
    7: "string",
    8: "timestamp",
    9: "uuid",
}
_INTS = {
    2: struct.Struct(">b"),
    3: struct.Struct(">h"),
    4: struct.Struct(">i"),
    5: struct.Struct(">q"),
    8: struct.Struct(">q"),
}
_U16 = struct.Struct(">H")
_U32 = struct.Struct(">I")
_PRELUDE = struct.Struct(">II")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class FrameError(ValueError):
    """A frame no AWS service sends: bad CRC, impossible length, undecodable header.

    ``index`` is the frame's position in the stream (from 0), ``offset`` its first byte."""

    def __init__(self, index: int, offset: int, problem: str) -> None:
        super().__init__(f"eventstream frame {index} (at byte {offset}): {problem}")
        self.index = index
        """The position of the bad frame in the stream."""
        self.offset = offset
        """The byte offset of the bad frame in the body."""


class Typed(NamedTuple):
    """A header value with an explicit wire type, for [`encode`][ssemock.framing.eventstream.encode]: ``Typed("long", 5)``.

    Plain values pick their type: bool -> true/false, int -> integer (i32), bytes -> byte
    array, str -> string, datetime -> timestamp, UUID -> uuid."""

    type: str
    """The wire type (`"long"`, `"short"`, `"byte"`, `"timestamp"`, ...)."""
    value: HeaderValue
    """The value."""


@dataclass(frozen=True, slots=True)
class Frame:
    """One decoded message: its headers, payload, position and exact bytes."""

    headers: dict[str, HeaderValue]
    """The frame's headers, by name."""
    payload: bytes
    """The payload bytes."""
    index: int
    """The frame's position in the stream (0 for the first)."""
    offset: int
    """The byte offset of the frame in the body."""
    raw: bytes
    """The frame's exact bytes, prelude and CRCs included."""

    @property
    def message_type(self) -> str:
        """``:message-type``: ``event``, ``exception`` or ``error`` ("" when absent)."""
        return _text(self.headers.get(":message-type"))

    @property
    def event_type(self) -> str:
        """``:event-type`` (an event's name, e.g. ``contentBlockDelta``; "" when absent)."""
        return _text(self.headers.get(":event-type"))

    @property
    def exception_type(self) -> str:
        """``:exception-type`` of an exception frame, or ``:error-code`` of an error frame."""
        return _text(self.headers.get(":exception-type")) or _text(self.headers.get(":error-code"))

    def json(self) -> Any:
        """The payload parsed as JSON (``None`` for an empty payload)."""
        if not self.payload:
            return None
        try:
            return orjson.loads(self.payload)
        except orjson.JSONDecodeError as exc:
            raise FrameError(self.index, self.offset, f"payload is not JSON ({exc})") from None


def is_frame(value: object) -> TypeGuard[Frame]:
    """Whether ``value`` is a decoded eventstream message, told by its fields (``headers`` and a
    bytes ``payload``), not by its class: one made by another import of ssemock (pytester's
    in-process runs re-import it) is one too."""
    return isinstance(getattr(value, "payload", None), bytes) and isinstance(
        getattr(value, "headers", None), dict
    )


def _text(value: HeaderValue | None) -> str:
    return value if isinstance(value, str) else ""


def _headers(data: bytes, index: int, offset: int) -> dict[str, HeaderValue]:
    """Parse a frame's header block (``offset``: the frame's, for errors)."""
    out: dict[str, HeaderValue] = {}
    pos, end = 0, len(data)

    def fail(problem: str) -> FrameError:
        return FrameError(index, offset, f"header block byte {pos}: {problem}")

    def take(n: int, what: str) -> bytes:
        nonlocal pos
        if pos + n > end:
            raise fail(f"{what} needs {n} bytes, {end - pos} left in the header block")
        piece = data[pos : pos + n]
        pos += n
        return piece

    while pos < end:
        length = take(1, "a header name's length")[0]
        if not length:
            raise fail("a header with an empty name")
        name_bytes = take(length, "the header name")
        try:
            name = name_bytes.decode()
        except UnicodeDecodeError:
            raise fail(f"header name {name_bytes!r} is not UTF-8") from None
        kind = take(1, f"the type of header {name!r}")[0]
        value: HeaderValue
        if kind in (0, 1):
            value = kind == 0
        elif kind in _INTS:
            number = _INTS[kind].unpack(take(_INTS[kind].size, f"header {name!r}"))[0]
            value = _timestamp(number, fail, name) if kind == 8 else number
        elif kind in (6, 7):
            size = _U16.unpack(take(2, f"the length of header {name!r}"))[0]
            raw = take(size, f"header {name!r}")
            if kind == 6:
                value = raw
            else:
                try:
                    value = raw.decode()
                except UnicodeDecodeError:
                    raise fail(f"string header {name!r} is not UTF-8") from None
        elif kind == 9:
            value = uuid.UUID(bytes=take(16, f"uuid header {name!r}"))
        else:
            raise fail(f"header {name!r} has value type {kind}, which is none of 0-9")
        if name in out:
            raise fail(f"header {name!r} appears twice")
        out[name] = value
    return out


def _timestamp(millis: int, fail: Callable[[str], FrameError], name: str) -> datetime:
    """A timestamp header's milliseconds as a UTC datetime; one Python cannot hold (before year
    1 or after 9999) is a [`FrameError`][ssemock.framing.eventstream.FrameError], as AWS never sends one."""
    try:
        return _EPOCH + timedelta(milliseconds=millis)
    except OverflowError:
        raise fail(f"timestamp header {name!r} is {millis} ms from 1970, outside years 1-9999") from None


def _check_prelude(data: bytes | bytearray, start: int, index: int) -> int:
    """The total length of the frame at ``start`` (its 12-byte prelude checked)."""
    total, headers = _PRELUDE.unpack_from(data, start)
    (crc,) = _U32.unpack_from(data, start + 8)
    if crc32(data[start : start + 8]) != crc:
        raise FrameError(
            index,
            start,
            f"prelude CRC32 is {crc:#010x}, the prelude's bytes give "
            f"{crc32(data[start : start + 8]):#010x} (corrupt or not an eventstream)",
        )
    if total < MINIMUM or headers > total - MINIMUM:
        raise FrameError(
            index,
            start,
            f"total length {total} with headers length {headers} is impossible "
            f"(a frame is at least {MINIMUM} bytes plus its headers)",
        )
    if headers > MAX_HEADERS:
        raise FrameError(index, start, f"headers length {headers} exceeds {MAX_HEADERS} bytes")
    if total - MINIMUM - headers > MAX_PAYLOAD:
        raise FrameError(
            index, start, f"payload length {total - MINIMUM - headers} exceeds {MAX_PAYLOAD} bytes"
        )
    return int(total)


def _frame(raw: bytes, index: int, offset: int) -> Frame:
    """A whole frame's bytes (prelude already checked) -> Frame."""
    (crc,) = _U32.unpack_from(raw, len(raw) - 4)
    actual = crc32(memoryview(raw)[:-4])
    if actual != crc:
        raise FrameError(
            index, offset, f"message CRC32 is {crc:#010x}, the frame's bytes give {actual:#010x}"
        )
    (headers_length,) = _U32.unpack_from(raw, 4)
    headers = _headers(raw[PRELUDE : PRELUDE + headers_length], index, offset)
    return Frame(headers, raw[PRELUDE + headers_length : -4], index, offset, raw)


class Decoder:
    """Incremental eventstream decoder: [`feed`][ssemock.framing.eventstream.Decoder.feed] bytes, get whole frames; then [`close`][ssemock.framing.eventstream.Decoder.close]."""

    __slots__ = ("_buffer", "_need", "_index", "_offset")

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._need = PRELUDE  # bytes the buffer must hold before the next step
        self._index = 0  # frames decoded so far
        self._offset = 0  # stream offset of the buffer's first byte

    @property
    def pending(self) -> int:
        """Bytes of an unfinished frame held (dropped by [`close`][ssemock.framing.eventstream.Decoder.close])."""
        return len(self._buffer)

    def feed(self, data: bytes) -> list[Frame]:
        """The frames completed by ``data``; a corrupt frame raises [`FrameError`][ssemock.framing.eventstream.FrameError]."""
        buffer = self._buffer
        buffer += data
        if len(buffer) < self._need:
            return []
        frames, start, size = [], 0, len(buffer)
        while size - start >= PRELUDE:
            total = _check_prelude(buffer, start, self._index)
            if size - start < total:
                self._need = total
                break
            frames.append(_frame(bytes(buffer[start : start + total]), self._index, self._offset + start))
            self._index += 1
            start += total
        else:
            self._need = PRELUDE
        if start:
            del buffer[:start]
            self._offset += start
        if self._need > PRELUDE and len(buffer) < PRELUDE:
            self._need = PRELUDE
        return frames

    def close(self) -> None:
        """End of stream: an unfinished frame is dropped (the client never sees it either)."""
        self._buffer.clear()
        self._need = PRELUDE


def iter_decode(chunks: Iterable[bytes]) -> Iterator[Frame]:
    """Frames of a chunked stream, each as soon as its last byte is in."""
    decoder = Decoder()
    for chunk in chunks:
        yield from decoder.feed(chunk)
    decoder.close()


def decode(chunks: Iterable[bytes] | bytes) -> list[Frame]:
    """Every whole frame of a body (``bytes``) or of its chunks."""
    return list(iter_decode([chunks] if isinstance(chunks, (bytes, bytearray)) else chunks))


def is_eventstream(body: bytes) -> bool:
    """Whether ``body`` starts with a valid eventstream prelude (its CRC32 matches: a text body
    does so by chance once in 2**32)."""
    if len(body) < PRELUDE:
        return False
    try:
        _check_prelude(body, 0, 0)
    except FrameError:
        return False
    return True


def frame_ends(body: bytes) -> list[int]:
    """End offset of every whole frame, found from the total lengths alone (no CRC check): the
    event boundaries of an eventstream body. A frame cut off at the end, or a length no frame
    can have, ends the list there (what follows is not a frame)."""
    ends, pos, size = [], 0, len(body)
    while size - pos >= PRELUDE:
        (total,) = _U32.unpack_from(body, pos)
        if total < MINIMUM or pos + total > size:
            break
        pos += total
        ends.append(pos)
    return ends


def _header(name: str, value: HeaderValue | Typed) -> bytes:
    kind_name, raw = (value.type, value.value) if isinstance(value, Typed) else ("", value)
    kinds = {v: k for k, v in _TYPE_NAMES.items()}
    if kind_name and kind_name not in kinds and kind_name != "bool":
        raise ValueError(f"header {name!r}: unknown type {kind_name!r}; types: bool, {', '.join(kinds)}")
    if isinstance(raw, bool):
        kind = 0 if raw else 1
        data = b""
    elif isinstance(raw, datetime):
        kind, data = 8, _INTS[8].pack(round(raw.timestamp() * 1000))
    elif isinstance(raw, uuid.UUID):
        kind, data = 9, raw.bytes
    elif isinstance(raw, int):
        kind = kinds[kind_name] if kind_name else 4
        if kind not in _INTS:
            raise ValueError(f"header {name!r}: an int cannot be a {kind_name!r}")
        try:
            data = _INTS[kind].pack(raw)
        except struct.error:
            raise ValueError(f"header {name!r}: {raw} does not fit a {_TYPE_NAMES[kind]}") from None
    elif isinstance(raw, (bytes, str)):
        kind = 6 if isinstance(raw, bytes) else 7
        blob = raw if isinstance(raw, bytes) else raw.encode()
        if len(blob) > 0xFFFF:
            raise ValueError(f"header {name!r}: a value of {len(blob)} bytes exceeds 65535")
        data = _U16.pack(len(blob)) + blob
    else:
        raise ValueError(f"header {name!r}: cannot encode a {type(raw).__name__}")
    encoded = name.encode()
    if not 0 < len(encoded) < 256:
        raise ValueError(f"header name {name!r} must be 1-255 bytes of UTF-8")
    return bytes([len(encoded)]) + encoded + bytes([kind]) + data


def encode(headers: Mapping[str, HeaderValue | Typed], payload: bytes = b"") -> bytes:
    """One frame: ``headers`` in order (see [`Typed`][ssemock.framing.eventstream.Typed]), ``payload``, both CRC32s."""
    block = b"".join(_header(name, value) for name, value in headers.items())
    if len(block) > MAX_HEADERS or len(payload) > MAX_PAYLOAD:
        raise ValueError(f"a frame holds at most {MAX_HEADERS} bytes of headers and {MAX_PAYLOAD} of payload")
    prelude = _PRELUDE.pack(MINIMUM + len(block) + len(payload), len(block))
    message = prelude + _U32.pack(crc32(prelude)) + block + payload
    return message + _U32.pack(crc32(message))


def _example() -> bytes:
    return b"".join(
        encode(
            {":event-type": "chunk", ":content-type": "application/json", ":message-type": "event"},
            b'{"n": %d}' % n,
        )
        for n in range(1, 5)
    )


FRAMING = Framing(
    name="eventstream",
    decode=decode,
    event_ends=frame_ends,
    content_type=lambda media: media == CONTENT_TYPE,
    sniff=is_eventstream,
    example=(CONTENT_TYPE, _example()),
)
"""The eventstream framing, as registered in `ssemock.framing`."""
