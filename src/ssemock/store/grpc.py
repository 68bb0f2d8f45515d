"""A gRPC call, as a cassette keeps it: the interaction's request is the call's HTTP/2 request
(``POST``, the URL ``http(s)://<target>/<package.Service>/<Method>``, the client's metadata as
headers) and its response the server's initial metadata (status 200, an empty body); after them,
the call (`GrpcCall`): every message both ways in order, each the serialized message's bytes (no
5-byte prefix: `ssemock.framing.grpc` adds it) with its time, then the trailing metadata and the
status. A bidirectional call is a conversation: its messages are ordered both ways, as a WebSocket
session's are.

On disk (the interaction's ``grpc`` key; cassette ``version`` 3 whenever one is present)::

    "grpc": {
      "method": "/helloworld.Greeter/SayHello",          (the URL's path, said again)
      "kind": "unary_stream",                            (unary_unary, unary_stream, stream_unary, stream_stream)
      "messages": [
        ["send", 0.0, "base64", "CgVob2xsbw=="],         (one a line; "utf8" when the bytes are UTF-8)
        ["recv", 12.4, "utf8", "\\n\\u0005hello"]
      ],
      "trailers": {"x-trace-bin": "AAEC", "x-served-by": "b"},
      "status": {"code": "OK", "details": "", "t": 30.1},
      "wire": {"chunks": [[12.4, 12], [30.0, 40]]}      (optional: the DATA frames received)
    }

Metadata (request and response headers, trailers) is stored as it goes in HTTP/2 headers: names
lower case, a ``-bin`` key's bytes in base64 (`metadata_headers` and `header_metadata` convert).
``wire`` is what an HTTP/2 recording (``ssemock proxy``) saw: where each DATA frame the client
received ended, over the received messages framed (`ssemock.framing.grpc.frame_all`), and when; a
call recorded in-process has none. Times are milliseconds since the call started (0.1 ms) on disk,
seconds in the model. Every malformed part raises ``ValueError`` naming the place (the cassette
parser adds the file and the interaction).
"""

from __future__ import annotations

import base64
import binascii
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import orjson

from ..framing.grpc import STATUS_CODES
from .header_text import header_text_problem

__all__ = [
    "KINDS",
    "GrpcCall",
    "GrpcMessage",
    "GrpcStatus",
    "GrpcWire",
    "dump_grpc",
    "header_metadata",
    "metadata_headers",
    "parse_grpc",
]

#: The four call shapes, as grpcio names its multi-callables (request side, then response side).
KINDS = ("unary_unary", "unary_stream", "stream_unary", "stream_stream")
_MAX_T_MS = 86_400_000


@dataclass
class GrpcMessage:
    """One message of a call, as a side sent it (serialized, uncompressed, no length prefix)."""

    direction: str
    """``"send"`` (the client sent it) or ``"recv"`` (the server sent it)."""
    t: float
    """Seconds since the call started: when it was sent, or when it arrived."""
    data: bytes
    """The serialized message (what the request serializer made, or the response deserializer read)."""


@dataclass
class GrpcStatus:
    """How the call ended: the status code's name (``"OK"``, ``"UNAVAILABLE"``: `grpc.StatusCode`'s
    names), the details text (``grpc-message``), and when it arrived (seconds since the call started)."""

    code: str = "OK"
    """The status code's name."""
    details: str = ""
    """The status details."""
    t: float | None = None
    """When the status arrived (None: not recorded)."""


@dataclass
class GrpcWire:
    """The DATA frames the client received: where each ended over the received messages framed,
    and when (seconds since the call started). Empty for a call recorded in-process."""

    ends: list[int] = field(default_factory=list)
    """The end offset of each frame's bytes."""
    times: list[float] = field(default_factory=list)
    """When each arrived, one per end."""


@dataclass
class GrpcCall:
    """A recorded gRPC call (`ssemock.store.model.Interaction.grpc`)."""

    method: str
    """The method's path, ``/package.Service/Method``."""
    kind: str = "unary_unary"
    """The call shape: one of `KINDS`."""
    messages: list[GrpcMessage] = field(default_factory=list)
    """Every message, both directions, in the order they went."""
    trailers: list[tuple[str, str]] = field(default_factory=list)
    """The trailing metadata, as headers (names lower case, ``-bin`` values in base64)."""
    status: GrpcStatus = field(default_factory=GrpcStatus)
    """How the call ended."""
    wire: GrpcWire = field(default_factory=GrpcWire)
    """The received DATA frames (an HTTP/2 recording only)."""

    def sent(self) -> list[GrpcMessage]:
        """The client's messages, in order."""
        return [m for m in self.messages if m.direction == "send"]

    def received(self) -> list[GrpcMessage]:
        """The server's messages, in order."""
        return [m for m in self.messages if m.direction == "recv"]


# -- metadata <-> headers ---------------------------------------------------------------------


def metadata_headers(metadata: Iterable[tuple[str, str | bytes]] | None) -> list[tuple[str, str]]:
    """gRPC metadata as header pairs: names lower case, a ``-bin`` key's bytes in unpadded base64
    (as HTTP/2 carries them)."""
    out: list[tuple[str, str]] = []
    for key, value in metadata or ():
        name = key.lower()
        if name.endswith("-bin"):
            raw = value if isinstance(value, bytes) else value.encode("utf-8")
            out.append((name, base64.b64encode(raw).decode("ascii").rstrip("=")))
        else:
            out.append((name, value.decode("latin-1") if isinstance(value, bytes) else value))
    return out


def header_metadata(headers: Iterable[tuple[str, str]]) -> tuple[tuple[str, str | bytes], ...]:
    """Header pairs back to gRPC metadata (`metadata_headers`' inverse): a ``-bin`` value's base64
    decoded to bytes; ValueError naming the key when it is not base64."""
    out: list[tuple[str, str | bytes]] = []
    for name, value in headers:
        if name.endswith("-bin"):
            out.append((name, _unpadded_b64(value, f"metadata {name!r}")))
        else:
            out.append((name, value))
    return tuple(out)


def _unpadded_b64(text: str, where: str) -> bytes:
    try:
        return base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ValueError(f"{where}: a -bin value must be base64 ({exc})") from None


# -- JSON ---------------------------------------------------------------------------------------


def _ms(t: float) -> float:
    return round(t * 1000, 1)


def _message_to_json(m: GrpcMessage) -> list[Any]:
    try:
        return [m.direction, _ms(m.t), "utf8", m.data.decode("utf-8")]
    except UnicodeDecodeError:
        return [m.direction, _ms(m.t), "base64", base64.b64encode(m.data).decode("ascii")]


def _pairs_to_json(pairs: list[tuple[str, str]]) -> dict[str, str | list[str]]:
    out: dict[str, str | list[str]] = {}
    for k, v in sorted(pairs, key=lambda kv: kv[0]):
        prev = out.get(k)
        out[k] = v if prev is None else [*([prev] if isinstance(prev, str) else prev), v]
    return out


def dump_grpc(call: GrpcCall, placeholder: str) -> tuple[dict[str, Any], dict[bytes, list[Any]]]:
    """The ``grpc`` object of a cassette interaction, with its messages and wire chunks each
    replaced by a string starting with ``placeholder``; and those lists by the JSON of their
    placeholder (the dumper lays each out one item a line:
    `ssemock.store.websocket.lines_laid_out`). ValueError for a call that would not load."""
    _check_call(call)
    status: dict[str, Any] = {"code": call.status.code, "details": call.status.details}
    if call.status.t is not None:
        status["t"] = _ms(call.status.t)
    lists = {
        "messages": [_message_to_json(m) for m in call.messages],
        "chunks": [[_ms(t), e] for t, e in zip(call.wire.times, call.wire.ends)],
    }
    keys = {name: f"{placeholder}{name}\x00" for name in lists}
    out: dict[str, Any] = {
        "method": call.method,
        "kind": call.kind,
        "messages": keys["messages"],
        "trailers": _pairs_to_json(call.trailers),
        "status": status,
    }
    if call.wire.ends:
        out["wire"] = {"chunks": keys["chunks"]}
    else:
        del lists["chunks"]
    return out, {orjson.dumps(keys[name]): items for name, items in lists.items()}


def _check_call(call: GrpcCall) -> None:
    """What a save must not write: a call whose JSON would not load (checked as loading does)."""
    _method(call.method)
    _kind(call.kind)
    _shape(call.kind, [m.direction for m in call.messages])
    _status_code(call.status.code, "grpc.status.code")
    for name, value in call.trailers:
        _header_text(name, value, "grpc.trailers")
    if len(call.wire.ends) != len(call.wire.times):
        raise ValueError(f"grpc.wire has {len(call.wire.ends)} ends but {len(call.wire.times)} times")


def _time(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{where}: the time must be a number of milliseconds, got {str(value)[:80]!r}")
    if not (math.isfinite(value) and 0 <= value <= _MAX_T_MS):
        raise ValueError(f"{where}: time {value!r} ms is out of range (0 to {_MAX_T_MS:,} ms)")
    return float(value) / 1000


def _method(value: Any) -> str:
    if not (
        isinstance(value, str)
        and value.startswith("/")
        and value.count("/") == 2
        and all(value.split("/")[1:])
        and header_text_problem(value) is None
        and " " not in value
    ):
        raise ValueError(
            f"grpc.method must be a method path '/package.Service/Method', got {str(value)[:80]!r}"
        )
    return value


def _kind(value: Any) -> str:
    if value not in KINDS:
        raise ValueError(f"grpc.kind must be one of {', '.join(KINDS)}, got {str(value)[:80]!r}")
    return str(value)


def _shape(kind: str, directions: list[str]) -> None:
    """A unary side holds at most one message."""
    for side, direction, streams in (
        ("request", "send", kind.startswith("stream_")),
        ("response", "recv", kind.endswith("_stream")),
    ):
        count = directions.count(direction)
        if not streams and count > 1:
            raise ValueError(
                f"grpc.messages: a {kind} call has one {side} message, this one has {count} "
                f"({direction!r} messages): make the kind a streaming one or remove the extra messages"
            )


def _status_code(value: Any, where: str) -> str:
    if not (isinstance(value, str) and value in STATUS_CODES):
        raise ValueError(
            f"{where} must be a status code's name ({', '.join(STATUS_CODES)}), got {str(value)[:80]!r}"
        )
    return value


def _header_text(name: Any, value: Any, where: str) -> None:
    if not isinstance(name, str) or not isinstance(value, str):
        raise ValueError(f"{where}[{str(name)[:40]!r}] must be a string or a list of strings")
    for part, text in (("name", name), ("value", value)):
        problem = header_text_problem(text)
        if problem is not None:
            raise ValueError(
                f"{where}[{name[:40]!r}]: the {part} {problem}, which no metadata may carry: remove it"
            )
    if name.endswith("-bin"):
        _unpadded_b64(value, f"{where}[{name[:40]!r}]")


def _message_from_json(item: Any, k: int, last: dict[str, float]) -> GrpcMessage:
    where = f"grpc.messages[{k}]"
    if not isinstance(item, list) or len(item) != 4:
        raise ValueError(f"{where} must be [direction, t_ms, encoding, data], got {str(item)[:80]}")
    direction, t_ms, encoding, data = item
    if direction not in ("send", "recv"):
        raise ValueError(f"{where}: direction must be 'send' or 'recv', got {str(direction)[:40]!r}")
    t = _time(t_ms, where)
    if t < last[direction]:
        raise ValueError(f"{where}: time {t_ms} ms goes back (the previous {direction} message was later)")
    last[direction] = t
    if not isinstance(data, str):
        raise ValueError(f"{where}: the data must be a string")
    if encoding == "utf8":
        return GrpcMessage(direction, t, data.encode("utf-8"))
    if encoding == "base64":
        try:
            return GrpcMessage(direction, t, base64.b64decode(data, validate=True))
        except (binascii.Error, ValueError) as exc:
            raise ValueError(f"{where}: not valid base64 ({exc})") from None
    raise ValueError(f"{where}: the encoding must be 'utf8' or 'base64', got {str(encoding)[:40]!r}")


def _trailers(value: Any) -> list[tuple[str, str]]:
    if value is None:
        return []
    if not isinstance(value, dict):
        raise ValueError("grpc.trailers must be an object of name -> value")
    out: list[tuple[str, str]] = []
    for name, v in value.items():
        for one in v if isinstance(v, list) else [v]:
            _header_text(name, one, "grpc.trailers")
            out.append((name.lower(), one))
    return out


def _status(value: Any) -> GrpcStatus:
    if not isinstance(value, dict):
        raise ValueError("grpc.status must be an object with 'code' (a status code's name) and 'details'")
    code = _status_code(value.get("code"), "grpc.status.code")
    details = value.get("details", "")
    if not isinstance(details, str):
        raise ValueError("grpc.status.details must be a string")
    t = value.get("t")
    return GrpcStatus(code, details, None if t is None else _time(t, "grpc.status"))


def _wire(value: Any) -> GrpcWire:
    if value is None:
        return GrpcWire()
    chunks = value.get("chunks") if isinstance(value, dict) else None
    if not isinstance(chunks, list):
        raise ValueError("grpc.wire must be an object {'chunks': [[t_ms, end_offset], ...]}")
    wire = GrpcWire()
    for k, pair in enumerate(chunks):
        where = f"grpc.wire.chunks[{k}]"
        if not (isinstance(pair, list) and len(pair) == 2 and type(pair[1]) is int):
            raise ValueError(f"{where} must be [t_ms, end_offset], got {str(pair)[:80]}")
        t = _time(pair[0], where)
        if pair[1] <= (wire.ends[-1] if wire.ends else 0) or (wire.times and t < wire.times[-1]):
            raise ValueError(f"{where}: ends must increase and times not go back")
        wire.ends.append(pair[1])
        wire.times.append(t)
    return wire


def parse_grpc(value: Any, path: str | None = None) -> GrpcCall:
    """The model of an interaction's ``grpc`` object; ``ValueError`` naming the part at fault.
    ``path`` is the request URL's path, which must be the method's."""
    if not isinstance(value, dict):
        raise ValueError("grpc must be an object with 'method', 'kind', 'messages' and 'status'")
    method = _method(value.get("method"))
    if path is not None and path != method:
        raise ValueError(
            f"grpc.method {method!r} is not the request URL's path {path[:80]!r}: make them the same"
        )
    kind = _kind(value.get("kind", "unary_unary"))
    raw = value.get("messages", [])
    if not isinstance(raw, list):
        raise ValueError("grpc.messages must be a list of [direction, t_ms, encoding, data]")
    last = {"send": 0.0, "recv": 0.0}
    messages = [_message_from_json(item, k, last) for k, item in enumerate(raw)]
    _shape(kind, [m.direction for m in messages])
    wire = _wire(value.get("wire"))
    size = sum(5 + len(m.data) for m in messages if m.direction == "recv")
    if wire.ends and wire.ends[-1] != size:
        raise ValueError(
            f"grpc.wire: the last end is {wire.ends[-1]} but the received messages framed are {size} bytes "
            "(a message was edited): delete 'wire'"
        )
    return GrpcCall(
        method, kind, messages, _trailers(value.get("trailers")), _status(value.get("status")), wire
    )
