"""A WebSocket interaction's session, as a cassette keeps it: the handshake is the interaction's
request and its 101 response; after it, every message in order (`Message`: direction, time,
type, data, reassembled and decompressed: the truth), a frame map of the exceptions to "one
frame per message" (`FrameNote`: fragments, control frames), the received wire chunks (`Wire`:
ends and times over the server frames re-encoded from the messages) and how it ended (`Close`).

On disk (the interaction's ``websocket`` key; cassette ``version`` 2 whenever one is present)::

    "websocket": {
      "subprotocols": {"offered": [...], "agreed": "..." | null},
      "extensions": {"offered": "..." | null, "agreed": "..." | null},
      "messages": [
        ["recv", 12.4, "text", "{\\"type\\":\\"session.created\\"}"],     (one a line)
        ["send", 20.1, "binary", "AAECAw=="],                          (base64)
        ["recv", 30.0, "binary-text", "{\\"setupComplete\\":{}}"]       (a binary frame of UTF-8)
      ],
      "frames": [["recv", 4, "fragments", [100, 200]], ["recv", 5, "ping", 40.0, ""]],
      "wire": {"head": 0, "sha256": "9f86...", "chunks": [[12.4, 40], [30.0, 72]]},
      "close": {"code": 1000, "reason": "", "by": "client", "clean": true, "t": 50.2}
    }

Times are milliseconds since the handshake request was written (0.1 ms) on disk, seconds in the
model. Every malformed part raises `CassetteError` naming the file, the interaction and the
message or frame (through `parse_websocket`, which raises ``ValueError`` with the place; the
cassette parser adds the file and the interaction).
"""

from __future__ import annotations

import base64
import binascii
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson

from ..framing.websocket import close_payload
from .header_text import header_text_problem

__all__ = [
    "DIRECTIONS",
    "Close",
    "Frame",
    "FrameNote",
    "Message",
    "WebSocket",
    "Wire",
    "dump_websocket",
    "lines_laid_out",
    "parse_websocket",
    "valid_close_code",
]

Direction = Literal["send", "recv"]
DIRECTIONS = ("send", "recv")
_MAX_T_MS = 86_400_000


@dataclass
class Message:
    """One WebSocket message as a side sent it: reassembled from its frames, decompressed."""

    direction: str
    """``"send"`` (the client sent it) or ``"recv"`` (the server sent it)."""
    t: float
    """Seconds since the handshake request was written: when it was sent, or when the chunk that
    completed it arrived."""
    type: str
    """``"text"`` or ``"binary"``."""
    data: str | bytes
    """The message: `str` for text, `bytes` for binary."""

    @property
    def payload(self) -> bytes:
        """The message's bytes (text encoded as UTF-8)."""
        return self.data.encode("utf-8") if isinstance(self.data, str) else self.data

    def json(self) -> Any:
        """The message parsed as JSON (text, or a binary message of UTF-8 JSON), or None."""
        try:
            return orjson.loads(self.payload)
        except orjson.JSONDecodeError:
            return None


@dataclass
class Frame:
    """One frame as it went over the wire (derived from the messages and the frame map)."""

    direction: str
    """``"send"`` or ``"recv"``."""
    t: float
    """Seconds since the handshake request was written."""
    type: str
    """``"text"``, ``"binary"``, ``"continuation"``, ``"ping"``, ``"pong"`` or ``"close"``."""
    fin: bool
    """Whether it is the last frame of its message (always True for control frames)."""
    data: bytes
    """The frame's (uncompressed) payload."""


@dataclass
class FrameNote:
    """One entry of the frame map: an exception to "one frame per message".

    ``kind`` is ``"fragments"`` (message ``index`` split at ``offsets`` of its payload) or
    ``"ping"``/``"pong"`` (a control frame of ``data`` at ``t`` before message ``index``)."""

    direction: str
    """``"send"`` or ``"recv"``: whose frames these are."""
    index: int
    """The message it is about (fragments), or that the control frame came before (pings)."""
    kind: str
    """``"fragments"``, ``"ping"`` or ``"pong"``."""
    offsets: list[int] = field(default_factory=list)
    """Where the message's payload was split into frames (fragments only)."""
    t: float = 0.0
    """When the control frame was sent or arrived (seconds since the handshake request)."""
    data: bytes = b""
    """The control frame's payload."""


@dataclass
class Wire:
    """The received bytes after the 101 head, as chunks: ``ends`` over the server frames
    re-encoded from the messages and frame map, ``times`` (seconds) when each arrived; ``head``
    counts the bytes that came in the same read as the 101 head."""

    head: int = 0
    """How many bytes of server frames came in the same read as the 101 head."""
    ends: list[int] = field(default_factory=list)
    """Where each read ended, counted in the server's bytes after the 101 head."""
    times: list[float] = field(default_factory=list)
    """When each read arrived (seconds since the handshake request), one per end."""
    sha256: str | None = None
    """The SHA-256 (hex) of the received bytes the ends count: a replay compares it with the
    frames it re-encodes, and keeps the recorded reads only when they are the same bytes
    (None: not recorded, or dropped because a secret was masked in a message)."""


@dataclass
class Close:
    """How the session ended: the first close frame's ``code`` and ``reason``, who sent it
    (``by``: ``"client"``, ``"server"``, or None when no close frame was seen: then ``code`` is
    1006), whether both close frames were exchanged (``clean``) and when (``t``, seconds)."""

    code: int | None = 1006
    """The close code (1005: a close frame without one; 1006: no close frame was seen)."""
    reason: str = ""
    """The close frame's reason text."""
    by: str | None = None
    """``"client"`` or ``"server"``: who sent the first close frame (None: nobody did)."""
    clean: bool = False
    """Whether both close frames were exchanged."""
    t: float | None = None
    """When the first close frame was sent or arrived (seconds since the handshake request)."""


@dataclass
class WebSocket:
    """A recorded WebSocket session (`ssemock.store.model.Interaction.websocket`)."""

    messages: list[Message] = field(default_factory=list)
    """Every message, in wire order, both directions."""
    frame_map: list[FrameNote] = field(default_factory=list)
    """Fragments and control frames (everything else is one frame per message)."""
    wire: Wire = field(default_factory=Wire)
    """The received chunks' ends and times."""
    close: Close = field(default_factory=Close)
    """How it ended."""
    subprotocols: list[str] = field(default_factory=list)
    """The subprotocols the client offered."""
    subprotocol: str | None = None
    """The subprotocol the server agreed to."""
    extensions: str | None = None
    """The ``Sec-WebSocket-Extensions`` the server agreed to (None: none)."""

    def sent(self) -> list[Message]:
        """The client's messages, in order."""
        return [m for m in self.messages if m.direction == "send"]

    def received(self) -> list[Message]:
        """The server's messages, in order."""
        return [m for m in self.messages if m.direction == "recv"]

    @property
    def frames(self) -> list[Frame]:
        """Every frame, both directions, in wire order: the messages cut by the frame map, with
        its control frames, and the close frame(s)."""
        return list(self._frames())

    def _frames(self) -> Iterator[Frame]:
        notes: dict[tuple[str, int], list[FrameNote]] = {}
        for note in self.frame_map:
            notes.setdefault((note.direction, note.index), []).append(note)
        count = {"send": 0, "recv": 0}
        for m in self.messages:
            i = count[m.direction]
            count[m.direction] += 1
            mine = notes.get((m.direction, i), [])
            for c in mine:
                if c.kind in ("ping", "pong"):
                    yield Frame(m.direction, c.t, c.kind, True, c.data)
            cuts = next((c.offsets for c in mine if c.kind == "fragments"), [])
            payload, bounds = m.payload, [0, *cuts, len(m.payload)]
            for k, (a, b) in enumerate(zip(bounds, bounds[1:])):
                kind = m.type if k == 0 else "continuation"
                yield Frame(m.direction, m.t, kind, k == len(bounds) - 2, payload[a:b])
        for (direction, i), mine in notes.items():  # control frames after the last message
            if i >= count.get(direction, 0):
                for c in mine:
                    yield Frame(direction, c.t, c.kind, True, c.data)
        close = self.close
        if close.by is not None and close.code is not None:
            t = close.t if close.t is not None else (self.messages[-1].t if self.messages else 0.0)
            first = "send" if close.by == "client" else "recv"
            yield Frame(first, t, "close", True, close_payload(close.code, close.reason))
            if close.clean:
                echo = "recv" if first == "send" else "send"
                yield Frame(echo, t, "close", True, close_payload(close.code, close.reason))


def valid_close_code(code: int) -> bool:
    """Whether ``code`` may appear in a close frame on the wire (RFC 6455 §7.4)."""
    return code in (1000, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011, 1012, 1013, 1014) or (
        3000 <= code <= 4999
    )


# -- JSON -----------------------------------------------------------------------------------


def _ms(t: float) -> float:
    return round(t * 1000, 1)


def _is_json_text(data: bytes) -> str | None:
    try:
        text = data.decode("utf-8")
        orjson.loads(data)
    except (UnicodeDecodeError, orjson.JSONDecodeError):
        return None
    return text


def _message_to_json(m: Message) -> list[Any]:
    if m.type == "text":
        data = m.data if isinstance(m.data, str) else m.data.decode("utf-8")
        return [m.direction, _ms(m.t), "text", data]
    raw = m.payload
    text = _is_json_text(raw)
    if text is not None:
        return [m.direction, _ms(m.t), "binary-text", text]
    return [m.direction, _ms(m.t), "binary", base64.b64encode(raw).decode("ascii")]


def _control_data(data: bytes) -> Any:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(data).decode("ascii")}


def dump_websocket(ws: WebSocket, placeholder: str) -> tuple[dict[str, Any], dict[bytes, list[Any]]]:
    """The ``websocket`` object of a cassette interaction, with its messages, frame map and wire
    chunks each replaced by a string starting with ``placeholder``; and those lists by the JSON
    of their placeholder (the dumper lays each out one item a line: `lines_laid_out`)."""
    frames: list[list[Any]] = []
    for n in ws.frame_map:
        if n.kind == "fragments":
            frames.append([n.direction, n.index, "fragments", list(n.offsets)])
        else:
            frames.append([n.direction, n.index, n.kind, _ms(n.t), _control_data(n.data)])
    close: dict[str, Any] = {"code": ws.close.code, "reason": ws.close.reason, "by": ws.close.by}
    close["clean"] = ws.close.clean
    if ws.close.t is not None:
        close["t"] = _ms(ws.close.t)
    lists = {
        "messages": [_message_to_json(m) for m in ws.messages],
        "frames": frames,
        "chunks": [[_ms(t), e] for t, e in zip(ws.wire.times, ws.wire.ends)],
    }
    keys = {name: f"{placeholder}{name}\x00" for name in lists}
    out = {
        "subprotocols": {"offered": list(ws.subprotocols), "agreed": ws.subprotocol},
        "extensions": {"agreed": ws.extensions},
        "messages": keys["messages"],
        "frames": keys["frames"],
        "wire": {
            "head": ws.wire.head,
            **({"sha256": ws.wire.sha256} if ws.wire.sha256 else {}),
            "chunks": keys["chunks"],
        },
        "close": close,
    }
    return out, {orjson.dumps(keys[name]): items for name, items in lists.items()}


def _time(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{where}: the time must be a number of milliseconds, got {value!r}")
    if not (math.isfinite(value) and 0 <= value <= _MAX_T_MS):
        raise ValueError(f"{where}: time {value!r} ms is out of range (0 to {_MAX_T_MS:,} ms)")
    return value / 1000


def _b64(text: Any, where: str) -> bytes:
    if not isinstance(text, str):
        raise ValueError(f"{where}: binary data must be a base64 string")
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ValueError(f"{where}: not valid base64 ({exc})") from None


def _message_from_json(item: Any, k: int, last: dict[str, float]) -> Message:
    where = f"websocket.messages[{k}]"
    if not isinstance(item, list) or len(item) != 4:
        raise ValueError(f"{where} must be [direction, t_ms, kind, data], got {str(item)[:80]}")
    direction, t_ms, kind, data = item
    if direction not in DIRECTIONS:
        raise ValueError(f"{where}: direction must be 'send' or 'recv', got {direction!r}")
    t = _time(t_ms, where)
    if t < last[direction]:
        raise ValueError(f"{where}: time {t_ms} ms goes back (the previous {direction} message was later)")
    last[direction] = t
    if kind == "text":
        if not isinstance(data, str):
            raise ValueError(f"{where}: a text message's data must be a string")
        return Message(direction, t, "text", data)
    if kind == "binary-text":
        if not isinstance(data, str):
            raise ValueError(f"{where}: a binary-text message's data must be a string")
        return Message(direction, t, "binary", data.encode("utf-8"))
    if kind == "binary":
        return Message(direction, t, "binary", _b64(data, where))
    raise ValueError(f"{where}: kind must be 'text', 'binary' or 'binary-text', got {kind!r}")


def _note_from_json(
    item: Any, k: int, counts: dict[str, int], sizes: dict[tuple[str, int], int]
) -> FrameNote:
    where = f"websocket.frames[{k}]"
    if not isinstance(item, list) or len(item) < 3:
        raise ValueError(f"{where} must be [direction, message_index, kind, ...], got {str(item)[:80]}")
    direction, index, kind = item[:3]
    if direction not in DIRECTIONS:
        raise ValueError(f"{where}: direction must be 'send' or 'recv', got {direction!r}")
    if type(index) is not int or not 0 <= index <= counts[direction]:
        raise ValueError(
            f"{where}: message index {index!r} is out of range ({counts[direction]} {direction} messages)"
        )
    if kind == "fragments":
        offsets = item[3] if len(item) == 4 else None
        size = sizes.get((direction, index))
        if size is None or not isinstance(offsets, list) or not all(type(o) is int for o in offsets):
            raise ValueError(f"{where}: fragments need a message and a list of integer offsets")
        if any(not a < b for a, b in zip([0, *offsets], [*offsets, size])) or not offsets:
            raise ValueError(f"{where}: fragment offsets must increase inside the message's {size} bytes")
        return FrameNote(direction, index, "fragments", list(offsets))
    if kind in ("ping", "pong"):
        if len(item) != 5:
            raise ValueError(f"{where}: a {kind} is [direction, index, {kind!r}, t_ms, payload]")
        payload = item[4]
        if isinstance(payload, dict) and set(payload) == {"base64"}:
            data = _b64(payload["base64"], where)
        elif isinstance(payload, str):
            data = payload.encode("utf-8")
        else:
            raise ValueError(f"{where}: a control frame's payload must be text or {{'base64': ...}}")
        if len(data) > 125:
            raise ValueError(f"{where}: a control frame's payload is at most 125 bytes, got {len(data)}")
        return FrameNote(direction, index, kind, t=_time(item[3], where), data=data)
    raise ValueError(f"{where}: kind must be 'fragments', 'ping' or 'pong', got {kind!r}")


def parse_websocket(value: Any) -> WebSocket:
    """The model of an interaction's ``websocket`` object; ``ValueError`` naming the message or
    frame at fault."""
    if not isinstance(value, dict):
        raise ValueError("websocket must be an object")
    raw = value.get("messages", [])
    if not isinstance(raw, list):
        raise ValueError("websocket.messages must be a list of [direction, t_ms, kind, data]")
    last = {"send": 0.0, "recv": 0.0}
    messages = [_message_from_json(item, k, last) for k, item in enumerate(raw)]
    counts = {"send": 0, "recv": 0}
    sizes: dict[tuple[str, int], int] = {}
    for m in messages:
        sizes[(m.direction, counts[m.direction])] = len(m.payload)
        counts[m.direction] += 1
    rawf = value.get("frames", [])
    if not isinstance(rawf, list):
        raise ValueError("websocket.frames must be a list")
    notes = [_note_from_json(item, k, counts, sizes) for k, item in enumerate(rawf)]
    offered, agreed = _subprotocols(value.get("subprotocols"))
    return WebSocket(
        messages,
        notes,
        _wire(value.get("wire")),
        _close(value.get("close")),
        offered,
        agreed,
        _extensions(value.get("extensions")),
    )


def _handshake_text(value: Any, where: str) -> str | None:
    """A handshake header's text (a subprotocol, the extensions): a string that may go in a
    header line, or None."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError(f"{where} must be a string or null, got {str(value)[:80]!r}")
    problem = header_text_problem(value)
    if problem is not None:
        raise ValueError(f"{where} {problem}, which no handshake header may carry: remove it")
    return value


def _subprotocols(value: Any) -> tuple[list[str], str | None]:
    """The offered subprotocols and the agreed one, of ``{"offered": [...], "agreed": ...}``."""
    if value is None:
        return [], None
    if not isinstance(value, dict):
        raise ValueError(
            f"websocket.subprotocols must be an object {{'offered': [...], 'agreed': ...}}, got {str(value)[:80]!r}"
        )
    offered = value.get("offered")
    if offered is None:
        offered = []
    if not isinstance(offered, list):
        raise ValueError(
            f"websocket.subprotocols.offered must be a list of strings, got {str(offered)[:80]!r}"
        )
    names = [_handshake_text(s, f"websocket.subprotocols.offered[{k}]") for k, s in enumerate(offered)]
    if None in names:
        raise ValueError("websocket.subprotocols.offered must be a list of strings, not null")
    return [s for s in names if s is not None], _handshake_text(
        value.get("agreed"), "websocket.subprotocols.agreed"
    )


def _extensions(value: Any) -> str | None:
    """The agreed ``Sec-WebSocket-Extensions`` of ``{"agreed": ...}`` (an ``offered`` is checked too)."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ValueError(f"websocket.extensions must be an object {{'agreed': ...}}, got {str(value)[:80]!r}")
    _handshake_text(value.get("offered"), "websocket.extensions.offered")
    return _handshake_text(value.get("agreed"), "websocket.extensions.agreed")


def _wire(value: Any) -> Wire:
    if value is None:
        return Wire()
    if not isinstance(value, dict):
        raise ValueError("websocket.wire must be an object with 'head' and 'chunks'")
    head = value.get("head", 0)
    if type(head) is not int or head < 0:
        raise ValueError(f"websocket.wire.head must be a byte count, got {head!r}")
    ends: list[int] = []
    times: list[float] = []
    chunks = value.get("chunks")
    if chunks is None:
        chunks = []
    if not isinstance(chunks, list):
        raise ValueError(
            f"websocket.wire.chunks must be a list of [t_ms, end_offset], got {str(chunks)[:80]!r}"
        )
    for k, pair in enumerate(chunks):
        where = f"websocket.wire.chunks[{k}]"
        if not (isinstance(pair, list) and len(pair) == 2 and type(pair[1]) is int):
            raise ValueError(f"{where} must be [t_ms, end_offset], got {pair!r}")
        t = _time(pair[0], where)
        if ends and (pair[1] <= ends[-1] or t < times[-1]):
            raise ValueError(f"{where}: ends and times must increase (end {pair[1]}, previous {ends[-1]})")
        if pair[1] <= 0:
            raise ValueError(f"{where}: end {pair[1]} must be positive")
        ends.append(pair[1])
        times.append(t)
    digest = value.get("sha256")
    if digest is not None and not (
        isinstance(digest, str) and len(digest) == 64 and all(c in "0123456789abcdef" for c in digest)
    ):
        raise ValueError(
            f"websocket.wire.sha256 must be 64 lowercase hex digits, got {str(digest)[:80]!r} "
            "(delete it: a replay then compares the wire's length only)"
        )
    return Wire(head, ends, times, digest)


def _close(value: Any) -> Close:
    if value is None:
        return Close()
    if not isinstance(value, dict):
        raise ValueError("websocket.close must be an object with 'code', 'reason', 'by', 'clean'")
    code, reason, by, clean = (
        value.get("code"),
        value.get("reason", ""),
        value.get("by"),
        value.get("clean", False),
    )
    if by not in (None, "client", "server"):
        raise ValueError(f"websocket.close.by must be 'client', 'server' or null, got {by!r}")
    if not isinstance(reason, str) or not isinstance(clean, bool):
        raise ValueError("websocket.close.reason must be a string and clean true or false")
    _check_close(code, reason, by)
    t = value.get("t")
    return Close(code, reason, by, clean, None if t is None else _time(t, "websocket.close"))


def _check_close(code: Any, reason: str, by: str | None) -> None:
    """A close a replay can send: a code a frame may carry (1005: a frame with none, and then no
    reason) and a reason of at most 123 bytes, when a side sent it; 1000-4999 or null when none did."""
    if code is not None and type(code) is not int:
        raise ValueError(f"websocket.close.code must be an integer or null, got {str(code)[:80]!r}")
    if by is None:
        if code is not None and not 1000 <= code <= 4999:
            raise ValueError(f"websocket.close.code {code!r} is out of range (1000-4999, or null)")
    elif code is not None and not (valid_close_code(code) or (code == 1005 and not reason)):
        raise ValueError(
            f"websocket.close.code {code!r} is not a close code a frame may carry (1000-1014 but 1004-1006, "
            "3000-4999; 1005 for a frame with no code and no reason)"
        )
    size = len(reason.encode("utf-8"))
    if size > 123:
        raise ValueError(
            f"websocket.close.reason is {size} bytes of UTF-8: a close frame carries at most 123: shorten it"
        )


def lines_laid_out(laid: bytes, lines: dict[bytes, list[Any]]) -> bytes:
    """``laid`` (orjson's indented layout) with each placeholder of ``lines`` (its JSON string)
    replaced by its list, one item a line at the placeholder's indent."""
    for key, items in lines.items():
        at = laid.index(key)
        line = laid[laid.rfind(b"\n", 0, at) + 1 : at]
        nested = b"\n" + b" " * (len(line) - len(line.lstrip(b" ")))
        body = (b"," + nested + b"  ").join(map(orjson.dumps, items))
        laid = (
            laid[:at]
            + (b"[" + nested + b"  " + body + nested + b"]" if items else b"[]")
            + laid[at + len(key) :]
        )
    return laid
