"""Faults of a WebSocket session, in the shapes realtime services and networks produce them.
Pure: each takes what a socket would serve (`Session`) and gives what it serves instead.

``close:code=C,after_message=N[,reason=R]``
    the server closes with code C after its message N (1-based; 0: at once): 1000, 1001, 1011,
    1012, 1013, 4000-4999 ...; 1005 sends an empty close frame (the client reports 1005).
``drop:after_message=N`` / ``drop:after_byte=K``
    the TCP connection ends with no close frame after message N, or at wire byte K (inside a
    frame): the client reports 1006.
``stall:before_message=N,seconds=S``
    nothing arrives for S seconds before message N.
``handshake:status=401|403|429|503[,retry_after=S]``
    the upgrade is refused with an HTTP error in the provider's shape (and ``retry-after``).
``error_event:after_message=N[,kind=K]``
    the provider's own error message after message N (OpenAI Realtime's ``error`` event, Gemini
    Live's ``goAway``); the session then goes on as recorded.
``...,lane=STREAM_ID`` (``drop:after_message=``, ``stall:``, ``error_event:``)
    the fault acts on one lane of a session that multiplexes responses (the Responses API's
    WebSocket mode, ``response.create(stream_id=...)``): N counts that lane's messages, a drop
    cuts that lane's remaining messages (the socket and the other lanes go on), a stall holds
    that lane, an error event is the lane's own (it echoes the ``stream_id``).
``sequence:F1|F2|...``
    one fault per connection attempt (each reconnect is a new handshake): ``sequence:
    close:code=1012,after_message=2|as_recorded`` tests a client's reconnect path.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import orjson

from ... import protocols
from ...core.names import unknown
from ...framing.websocket import Opcode, close_payload
from ...protocols.base import StreamError
from ..fault_model import MAX_SECONDS, Fault, Served
from .frames import ServerMessage

if TYPE_CHECKING:
    from ...store.model import Request

__all__ = [
    "NAMES",
    "VARIANTS",
    "OnWebSocket",
    "aimed",
    "is_websocket_fault",
    "Refusal",
    "Session",
    "WsFault",
    "close",
    "drop",
    "error_event",
    "factories",
    "get",
    "handshake",
    "sequence",
    "stall",
]


@dataclass(frozen=True)
class Refusal:
    """The HTTP answer to a refused upgrade."""

    status: int
    """The status code (401, 403, 429, 503...)."""
    headers: tuple[tuple[str, str], ...]
    """Its headers, in order."""
    body: bytes
    """Its body."""


@dataclass(frozen=True)
class Session:
    """What one socket serves: the server's messages, how it ends, its stalls, or a refusal."""

    messages: tuple[ServerMessage, ...]
    """The server's messages, in order."""
    protocol: str | None = None
    """The session's protocol (``openai.realtime``...): the shape of its error event."""
    close: tuple[int | None, str] | None = None
    """The server's close frame at the end, ``(code, reason)`` (code None: an empty one); None
    ends as the recording did."""
    drop: bool = False
    """The connection ends after the messages with no close frame."""
    drop_after_byte: int | None = None
    """The connection ends at this byte of the wire with no close frame."""
    stalls: tuple[tuple[int, float], ...] = ()
    """``(message index, seconds)``: waits before a message (0-based)."""
    refused: Refusal | None = None
    """The handshake is refused with this answer."""


class WsFault:
    """A WebSocket fault: a name and what it does to a `Session` on connection ``attempt``."""

    name: str = ""

    def apply(self, session: Session, attempt: int = 0) -> Session:
        raise NotImplementedError

    def __str__(self) -> str:
        return self.name


def _count(value: Any, what: str) -> int:
    if type(value) is not int or value < 0:
        raise ValueError(f"{what} is a whole number >= 0, got {value!r}")
    return value


def _cut(session: Session, after: int) -> tuple[ServerMessage, ...]:
    return session.messages[:after]


def _lane(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, str | int) or str(value) == "":
        raise ValueError(f"lane is a stream_id (1-256 letters, digits, '_', '-', '.'), got {value!r}")
    return str(value)


def _on_lane(session: Session, lane: str, what: str) -> list[int]:
    """The positions of ``lane``'s messages in the session; a ValueError naming the lanes it has
    when it has not this one (or none: its protocol multiplexes no responses)."""
    found = protocols.get(session.protocol) if session.protocol else None
    if found is None or found.lanes is None:
        raise ValueError(
            f"{what}: lane= aims at one lane of a session that multiplexes responses (openai.responses' "
            f"stream_id); this session's protocol is {session.protocol or 'unknown'}"
        )
    positions = [k for k, m in enumerate(session.messages) if m.lane == lane]
    if not positions:
        named = sorted({m.lane for m in session.messages if m.lane is not None})
        raise ValueError(
            f"{what}: the session has no lane {lane!r}; its lanes: {', '.join(named) or 'none (no stream_id)'}"
        )
    return positions


def _after_lane(session: Session, lane: str, n: int, what: str) -> tuple[int, ServerMessage]:
    """Where "after ``lane``'s message n" falls in the session (0: before its first; past its
    last: after it), and the lane's message that gates what goes there."""
    positions = _on_lane(session, lane, what)
    k = positions[min(n, len(positions)) - 1] if n else positions[0]
    return (k + 1 if n else k), session.messages[k]


class _Close(WsFault):
    def __init__(self, code: int, after_message: int, reason: str) -> None:
        if code != 1005:
            close_payload(code, reason)  # the ValueError for a code no frame carries
        elif reason:
            raise ValueError("close code 1005 is an empty close frame: it has no reason")
        self.code, self.after, self.reason = code, _count(after_message, "after_message"), reason
        self.name = f"close:code={code},after_message={self.after}" + (f",reason={reason}" if reason else "")

    def apply(self, session: Session, attempt: int = 0) -> Session:
        code = None if self.code == 1005 else self.code
        return replace(session, messages=_cut(session, self.after), close=(code, self.reason), drop=False)


def close(code: int = 1011, after_message: int = 1, reason: str = "") -> WsFault:
    """The server closes with ``code`` after its message ``after_message``."""
    return _Close(code, after_message, reason)


class _Drop(WsFault):
    def __init__(self, after_message: int | None, after_byte: int | None, lane: str | None) -> None:
        if (after_message is None) == (after_byte is None):
            raise ValueError("drop takes one of after_message=N or after_byte=K")
        if lane is not None and after_message is None:
            raise ValueError("drop's lane= takes after_message=N (the lane's messages), not after_byte=")
        self.after = None if after_message is None else _count(after_message, "after_message")
        self.byte = None if after_byte is None else _count(after_byte, "after_byte")
        self.lane = lane
        self.name = (
            f"drop:after_message={self.after}" if self.byte is None else f"drop:after_byte={self.byte}"
        ) + (f",lane={lane}" if lane is not None else "")

    def apply(self, session: Session, attempt: int = 0) -> Session:
        if self.byte is not None:
            return replace(session, drop_after_byte=self.byte, drop=True, close=None)
        assert self.after is not None
        if self.lane is not None:  # that lane's remaining messages: the socket goes on
            dropped = set(_on_lane(session, self.lane, self.name)[self.after :])
            return replace(
                session, messages=tuple(m for k, m in enumerate(session.messages) if k not in dropped)
            )
        return replace(session, messages=_cut(session, self.after), drop=True, close=None)


def drop(after_message: int | None = None, after_byte: int | None = None, lane: str | None = None) -> WsFault:
    """The connection ends with no close frame (the client sees 1006); with ``lane``, that lane's
    messages after its ``after_message``-th are never sent (the socket and other lanes go on)."""
    return _Drop(after_message, after_byte, _lane(lane))


class _Stall(WsFault):
    def __init__(self, before_message: int, seconds: float, lane: str | None = None) -> None:
        if (
            not isinstance(seconds, int | float)
            or isinstance(seconds, bool)
            or not 0 < seconds <= MAX_SECONDS
        ):
            raise ValueError(f"seconds is a number in (0, {MAX_SECONDS}], got {seconds!r}")
        if type(before_message) is not int or before_message < 1:
            raise ValueError(f"before_message is a whole number >= 1, got {before_message!r}")
        self.before, self.seconds, self.lane = before_message, float(seconds), lane
        self.name = f"stall:before_message={before_message},seconds={seconds}" + (
            f",lane={lane}" if lane is not None else ""
        )

    def apply(self, session: Session, attempt: int = 0) -> Session:
        at = self.before - 1
        if self.lane is not None:
            positions = _on_lane(session, self.lane, self.name)
            if at >= len(positions):
                return session  # the lane has fewer messages: nothing to hold
            at = positions[at]
        return replace(session, stalls=(*session.stalls, (at, self.seconds)))


def stall(before_message: int = 1, seconds: float = 60, lane: str | None = None) -> WsFault:
    """Nothing arrives for ``seconds`` before message ``before_message`` (1-based; of ``lane``'s
    messages when given)."""
    return _Stall(before_message, seconds, _lane(lane))


_REFUSED = (401, 403, 429, 503)


class _Handshake(WsFault):
    def __init__(self, status: int, retry_after: float | None) -> None:
        if status not in _REFUSED:
            raise ValueError(f"status is one of {', '.join(map(str, _REFUSED))}, got {status!r}")
        self.status, self.retry_after = status, retry_after
        self.name = f"handshake:status={status}" + (
            f",retry_after={retry_after}" if retry_after is not None else ""
        )

    def apply(self, session: Session, attempt: int = 0) -> Session:
        found = protocols.get(session.protocol) if session.protocol else None
        if found is not None:
            error = found.http_error(self.status, None)
            body, kind = error.body, error.content_type
        else:
            body, kind = (
                orjson.dumps({"error": {"message": f"ssemock handshake refused {self.status}"}}),
                "application/json",
            )
        headers = [("content-type", kind), ("content-length", str(len(body)))]
        if self.retry_after is not None:
            headers.append(("retry-after", f"{self.retry_after:g}"))
        return replace(session, messages=(), refused=Refusal(self.status, tuple(headers), body))


def handshake(status: int = 503, retry_after: float | None = None) -> WsFault:
    """The upgrade is refused with ``status`` (and ``retry-after`` when given)."""
    return _Handshake(status, retry_after)


class _ErrorEvent(WsFault):
    def __init__(self, after_message: int, kind: str, lane: str | None = None) -> None:
        self.after, self.kind, self.lane = _count(after_message, "after_message"), kind, lane
        self.name = (
            f"error_event:after_message={self.after}"
            + (f",kind={kind}" if kind != "server_error" else "")
            + (f",lane={lane}" if lane is not None else "")
        )

    def apply(self, session: Session, attempt: int = 0) -> Session:
        if session.protocol is None:
            raise ValueError(f"{self.name}: the session's protocol is not known, so its error message is not")
        found = protocols.get(session.protocol)
        data = found.error_event(StreamError(self.kind, "ssemock error_event", framing="ndjson", newline=""))
        if self.lane is not None:  # the lane's own error: it echoes the stream_id
            at, gating = _after_lane(session, self.lane, self.after, self.name)
            data = orjson.dumps({**orjson.loads(data), "stream_id": self.lane})
            added = ServerMessage(
                gating.opcode, data, gating.group, lane=self.lane, lane_group=gating.lane_group
            )
            return replace(session, messages=(*session.messages[:at], added, *session.messages[at:]))
        before = session.messages[: self.after]
        last = before[-1] if before else (session.messages[0] if session.messages else None)
        opcode = last.opcode if last is not None else Opcode.TEXT  # Gemini Live: binary frames of JSON
        group = last.group if last is not None else 0
        added = ServerMessage(opcode, data, group)
        return replace(session, messages=(*before, added, *session.messages[self.after :]))


def error_event(after_message: int = 1, kind: str = "server_error", lane: str | None = None) -> WsFault:
    """The provider's own error message after message ``after_message`` (of ``lane``'s messages,
    and on that lane, when given)."""
    return _ErrorEvent(after_message, kind, _lane(lane))


class _Sequence(WsFault):
    def __init__(self, per_attempt: Sequence[WsFault | None]) -> None:
        self.per_attempt = list(per_attempt)
        self.name = "sequence:" + "|".join(str(f) if f else "as_recorded" for f in self.per_attempt)

    def apply(self, session: Session, attempt: int = 0) -> Session:
        fault = self.per_attempt[attempt] if attempt < len(self.per_attempt) else None
        return session if fault is None else fault.apply(session, attempt)


def sequence(*per_attempt: WsFault | str | None) -> WsFault:
    """One fault per connection attempt, then the sessions as recorded."""
    return _Sequence([None if f in (None, "", "as_recorded", "none") else get(f) for f in per_attempt])


_FACTORIES: dict[str, Callable[..., WsFault]] = {
    "close": close,
    "drop": drop,
    "stall": stall,
    "handshake": handshake,
    "error_event": error_event,
}


def factories() -> dict[str, Callable[..., Any]]:
    """Every fault's factory by its name (``sequence`` aside): what the docs' fault tables list."""
    return dict(_FACTORIES)


VARIANTS: tuple[str, ...] = (
    "close:code=1000,after_message=1",
    "close:code=1001,after_message=1",
    "close:code=1005,after_message=1",
    "close:code=1011,after_message=1",
    "close:code=1012,after_message=1",
    "close:code=1013,after_message=1",
    "close:code=4000,after_message=1",
    "drop:after_message=1",
    "drop:after_byte=5",
    "stall:before_message=2,seconds=60",
    "handshake:status=401",
    "handshake:status=403",
    "handshake:status=429,retry_after=1",
    "handshake:status=503",
    "error_event:after_message=1",
    "sequence:close:code=1012,after_message=1|as_recorded",
)
"""Every WebSocket fault in each of its modes: what the fault x stack table runs."""
NAMES: tuple[str, ...] = tuple(_FACTORIES)
"""The faults' names (an unknown name's error lists them)."""


def get(spec: str | WsFault) -> WsFault:
    """A WebSocket fault from its name (see the module); one ValueError naming the spec for any
    problem."""
    if isinstance(spec, WsFault):
        return spec
    head, _, rest = spec.strip().partition(":")
    if head == "sequence":
        try:
            return sequence(*rest.split("|"))
        except ValueError as exc:
            raise ValueError(f"bad fault {spec!r}: {exc}") from None
    if head not in _FACTORIES:
        raise unknown("WebSocket fault", spec, [*_FACTORIES, "sequence"], head=head)
    params = list(inspect.signature(_FACTORIES[head]).parameters)
    kwargs: dict[str, Any] = {}
    for part in filter(None, (p.strip() for p in rest.split(","))):
        key, sep, value = part.partition("=")
        if not sep or key.strip() not in params:
            raise ValueError(
                f"bad fault {spec!r}: {head} takes {', '.join(f'{p}=' for p in params)}, got {part!r}"
            )
        try:
            kwargs[key.strip()] = orjson.loads(value)
        except orjson.JSONDecodeError:
            kwargs[key.strip()] = value.strip()
    try:
        return _FACTORIES[head](**kwargs)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"bad fault {spec!r}: {exc}") from None


_WEBSOCKET_ONLY = ("close", "drop", "handshake")


def is_websocket_fault(spec: str) -> bool:
    """Whether a fault name is a WebSocket fault: ``close``, ``drop``, ``handshake``, a fault
    counted in messages (``stall:before_message=``, ``error_event:after_message=``), or a
    sequence of them."""
    head, _, rest = spec.strip().partition(":")
    if head == "sequence":
        parts = [p.strip() for p in rest.split("|")]
        named = [p for p in parts if p not in ("", "as_recorded", "none")]
        return bool(named) and all(is_websocket_fault(p) for p in named)
    return head in _WEBSOCKET_ONLY or "before_message=" in rest or "after_message=" in rest


class OnWebSocket(Fault):
    """A WebSocket fault among a player's ``faults=``: its WebSocket sessions serve it
    (``ws``); HTTP responses are left alone."""

    per_request = True  # never a stream fault to place on an HTTP body
    websocket = True

    def __init__(self, ws: WsFault) -> None:
        self.ws = ws
        self.name = ws.name

    def apply(self, served: Served, attempt: int) -> None:
        return None

    def refuses(self, framing: str) -> str | None:
        if framing == "grpc" and (
            isinstance(self.ws, _Stall) or (isinstance(self.ws, _Drop) and self.ws.byte is None)
        ):
            return None  # a gRPC call serves it too (ssemock.variants.grpc.faults)
        return f"a WebSocket fault: it applies to WebSocket sessions, not to a {framing} body"

    def needs_end(self, attempt: int = 0) -> str | None:
        return None


def aimed(faults: Sequence[Fault], index: int, request: Request) -> WsFault | None:
    """The WebSocket fault the session at ``index`` (its recorded handshake ``request``) serves:
    the first of ``faults`` that is a WebSocket fault not aimed (``on=``) at other interactions
    (one connection of a session spanning several, issue 44 item 2)."""
    return next(
        (
            f.ws
            for f in faults
            if isinstance(f, OnWebSocket) and (f.on is None or f.on.matches(index, request))
        ),
        None,
    )
