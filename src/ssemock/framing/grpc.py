"""gRPC's length-prefixed messages: how a call's messages go in an HTTP/2 body, and its status codes.

Each message on the wire is a 5-byte header, then the message::

    +--------+----------------------------+----------------------------+
    | flag   | length (4 bytes, big end)  | message (length bytes)     |
    +--------+----------------------------+----------------------------+

``flag`` is 0 (the message as it is) or 1 (compressed with the call's ``grpc-encoding``). A body
is the messages one after the other; HTTP/2 DATA frames cut it anywhere (inside a header too), so
the messages are the events of this framing and the DATA frames its chunks. The call's status is
no message: it is the ``grpc-status`` / ``grpc-message`` trailers (`STATUS_CODES` names them).

    >>> from ssemock.framing.grpc import frame, decode
    >>> body = frame(b"hi") + frame(b"there")
    >>> [m.data for m in decode(body)]
    [b'hi', b'there']
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = [
    "HEADER_SIZE",
    "MAX_MESSAGE",
    "STATUS_CODES",
    "Decoder",
    "GrpcFramingError",
    "LengthPrefixed",
    "decode",
    "frame",
    "frame_all",
    "event_ends",
    "header_ends",
    "is_grpc_media",
    "status_name",
]

HEADER_SIZE = 5
MAX_MESSAGE = 64 << 20  # grpcio refuses more than 4 MiB by default; a bound well above it, so no
# length read off the wire makes a decoder wait for (or hold) gigabytes
_HEADER = struct.Struct(">BI")

#: gRPC's status codes by name (``grpc.StatusCode`` names them the same), as ``grpc-status`` carries them.
STATUS_CODES: dict[str, int] = {
    "OK": 0,
    "CANCELLED": 1,
    "UNKNOWN": 2,
    "INVALID_ARGUMENT": 3,
    "DEADLINE_EXCEEDED": 4,
    "NOT_FOUND": 5,
    "ALREADY_EXISTS": 6,
    "PERMISSION_DENIED": 7,
    "RESOURCE_EXHAUSTED": 8,
    "FAILED_PRECONDITION": 9,
    "ABORTED": 10,
    "OUT_OF_RANGE": 11,
    "UNIMPLEMENTED": 12,
    "INTERNAL": 13,
    "UNAVAILABLE": 14,
    "DATA_LOSS": 15,
    "UNAUTHENTICATED": 16,
}


def status_name(code: int | str) -> str:
    """The status code's name (``14`` or ``"unavailable"`` -> ``"UNAVAILABLE"``); ValueError naming
    the known ones for anything else."""
    if isinstance(code, int) and not isinstance(code, bool):
        for name, number in STATUS_CODES.items():
            if number == code:
                return name
    elif isinstance(code, str) and code.upper() in STATUS_CODES:
        return code.upper()
    raise ValueError(f"unknown gRPC status code {code!r}; known: {', '.join(STATUS_CODES)}")


class GrpcFramingError(ValueError):
    """A body is not length-prefixed messages: ``offset`` is where the bad header (or the cut
    message) starts."""

    def __init__(self, offset: int, reason: str) -> None:
        super().__init__(f"byte {offset}: {reason}")
        self.offset = offset
        """Where the message at fault starts in the body."""


@dataclass(frozen=True)
class LengthPrefixed:
    """One message as it went on the wire: its compressed flag and its bytes."""

    data: bytes
    """The message's bytes, as sent (compressed when ``compressed``)."""
    compressed: bool = False
    """The flag byte: whether ``data`` is compressed with the call's ``grpc-encoding``."""


def frame(message: bytes, compressed: bool = False) -> bytes:
    """``message`` with its 5-byte header."""
    return _HEADER.pack(1 if compressed else 0, len(message)) + message


def frame_all(messages: Iterable[bytes]) -> bytes:
    """The body of ``messages``, each with its header, uncompressed."""
    return b"".join(map(frame, messages))


class Decoder:
    """Incremental reading of a body cut anywhere: [`feed`][ssemock.framing.grpc.Decoder.feed]
    each DATA frame's bytes, get every message it completes; [`close`][ssemock.framing.grpc.Decoder.close]
    at the end of the stream. Holds at most one message (``max_message`` bytes) at a time."""

    __slots__ = ("_buffer", "_offset", "max_message")

    def __init__(self, max_message: int = MAX_MESSAGE) -> None:
        self._buffer = bytearray()
        self._offset = 0  # the body offset of the buffer's first byte
        self.max_message = max_message
        """The largest message accepted: a longer length in a header is a GrpcFramingError."""

    def feed(self, data: bytes) -> list[LengthPrefixed]:
        """The messages ``data`` completes, in order; GrpcFramingError for a bad header."""
        buffer = self._buffer
        buffer += data
        out: list[LengthPrefixed] = []
        at = 0
        while len(buffer) - at >= HEADER_SIZE:
            flag, size = _HEADER.unpack_from(buffer, at)
            if flag > 1:
                raise GrpcFramingError(self._offset + at, f"the flag byte is {flag}, not 0 or 1")
            if size > self.max_message:
                raise GrpcFramingError(
                    self._offset + at,
                    f"a message of {size:,} bytes is over the {self.max_message:,} accepted",
                )
            end = at + HEADER_SIZE + size
            if end > len(buffer):
                break
            out.append(LengthPrefixed(bytes(buffer[at + HEADER_SIZE : end]), flag == 1))
            at = end
        del buffer[:at]
        self._offset += at
        return out

    def close(self) -> None:
        """The body ended: GrpcFramingError when it ended inside a message."""
        if self._buffer:
            raise GrpcFramingError(
                self._offset, f"the body ends {len(self._buffer)} bytes into a message (it was cut short)"
            )


def decode(body: bytes) -> list[LengthPrefixed]:
    """Every message of a whole body; GrpcFramingError naming the byte where it goes wrong."""
    decoder = Decoder()
    out = decoder.feed(body)
    decoder.close()
    return out


def event_ends(body: bytes) -> list[int]:
    """Where each whole message ends (a cut last message has no end)."""
    ends: list[int] = []
    at = 0
    while len(body) - at >= HEADER_SIZE:
        _, size = _HEADER.unpack_from(body, at)
        end = at + HEADER_SIZE + size
        if end > len(body):
            break
        ends.append(end)
        at = end
    return ends


def header_ends(body: bytes) -> list[int]:
    """Where each message's 5-byte header ends: the message's first byte (the ``mid_header``
    chunking cuts inside the header just before)."""
    ends = event_ends(body)
    return [start + HEADER_SIZE for start in [0, *ends[:-1]]] if ends else []


def is_grpc_media(media: str) -> bool:
    """Whether a media type (lower case, parameters stripped) is gRPC's (``application/grpc``,
    ``application/grpc+proto``, ...)."""
    return media == "application/grpc" or media.startswith("application/grpc+")
