"""Faults of a gRPC call, as servers and networks produce them. Pure: each takes what a call
serves (`Served`: the server's messages, the status, the waits) and gives what it serves instead.

``status:code=NAME,after_message=N[,details=TEXT]``
    the server ends the call with status NAME (``UNAVAILABLE``, ``RESOURCE_EXHAUSTED``, any of
    ``grpc.StatusCode``'s names) after its message N (0: before any): the client's ``RpcError``
    with that code.
``drop:after_message=N``
    the connection breaks after message N: the client sees ``UNAVAILABLE`` (the WebSocket fault of
    the same name, served on a call).
``stall:before_message=N,seconds=S``
    nothing arrives for S seconds before message N (1-based); a deadline (``timeout=``) that ends
    first raises ``DEADLINE_EXCEEDED`` at once, without waiting.
``sequence:F1|F2|...``
    one fault per attempt at a call (``as_recorded`` serves it as recorded), for a client's retry
    path: ``sequence:status:code=UNAVAILABLE,after_message=0|as_recorded``. A faulted attempt does
    not use up the recorded call, so the retry gets it. Unaimed, the attempts are the calls the
    first call matched answers; aimed, the calls its target matches.

Aimed with ``on=`` like the other faults (``status:code=UNAVAILABLE,after_message=1,on=/chat.Chat/*``);
unaimed, a fault applies to every call.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import orjson

from ...core.names import unknown
from ...framing.grpc import status_name
from ..fault_model import Fault, Served
from ..websocket.faults import OnWebSocket, WsFault

if TYPE_CHECKING:
    from ...store.model import Request

__all__ = [
    "NAMES",
    "VARIANTS",
    "CallFault",
    "CallSequence",
    "OnGrpc",
    "Outcome",
    "call_fault",
    "for_call",
    "get",
    "is_grpc_fault",
    "status",
    "takes",
]


@dataclass(frozen=True)
class Outcome:
    """What one call serves: the server's messages (``(recorded time, bytes)``), how it ends (the
    status code's name and details; ``trailers`` as recorded unless a fault replaced the end), and
    the waits before messages (``(index, seconds)``, 0-based; index = len(messages): before the end)."""

    messages: tuple[tuple[float, bytes], ...]
    """The server's messages, in order, each with its recorded time (seconds since the call started)."""
    code: str = "OK"
    """The status code's name."""
    details: str = ""
    """The status details."""
    trailers: tuple[tuple[str, str], ...] = ()
    """The trailing metadata (header form)."""
    end_t: float = 0.0
    """When the status arrived, recorded (seconds since the call started)."""
    stalls: tuple[tuple[int, float], ...] = ()
    """Waits before messages: ``(message index, seconds)``."""


class CallFault:
    """A gRPC fault: a name and what it does to an `Outcome`."""

    name: str = ""

    def apply(self, outcome: Outcome) -> Outcome:
        raise NotImplementedError

    def __str__(self) -> str:
        return self.name


def _count(value: Any, what: str) -> int:
    if type(value) is not int or value < 0:
        raise ValueError(f"{what} is a whole number >= 0, got {value!r}")
    return value


class _Status(CallFault):
    def __init__(self, code: Any, after_message: int, details: str) -> None:
        self.code = status_name(code if not isinstance(code, str) else code.strip())
        self.after, self.details = _count(after_message, "after_message"), str(details)
        self.name = f"status:code={self.code},after_message={self.after}" + (
            f",details={details}" if details else ""
        )

    def apply(self, outcome: Outcome) -> Outcome:
        kept = outcome.messages[: self.after]
        end_t = kept[-1][0] if kept else 0.0
        details = self.details or f"ssemock fault {self.name}"
        return replace(outcome, messages=kept, code=self.code, details=details, trailers=(), end_t=end_t)


class CallSequence(CallFault):
    """One fault per attempt at a call (None: as recorded), then the call as recorded."""

    def __init__(self, per_attempt: list[CallFault | None]) -> None:
        self.per_attempt = per_attempt
        self.name = "sequence:" + "|".join(str(f) if f else "as_recorded" for f in per_attempt)

    def at(self, attempt: int) -> CallFault | None:
        """The fault of attempt ``attempt`` (from 0), None when it is served as recorded."""
        return self.per_attempt[attempt] if attempt < len(self.per_attempt) else None

    def apply(self, outcome: Outcome) -> Outcome:
        first = self.at(0)
        return outcome if first is None else first.apply(outcome)


def status(code: str | int = "UNAVAILABLE", after_message: int = 0, details: str = "") -> CallFault:
    """The server ends the call with status ``code`` after its message ``after_message``."""
    return _Status(code, after_message, details)


class _FromWebSocket(CallFault):
    """A WebSocket fault that has a meaning on a call: a drop after message N (UNAVAILABLE), a stall."""

    def __init__(self, ws: WsFault) -> None:
        self.ws, self.name = ws, ws.name

    def apply(self, outcome: Outcome) -> Outcome:
        after = getattr(self.ws, "after", None)
        if hasattr(self.ws, "seconds"):  # stall: before message N (1-based)
            before: int = getattr(self.ws, "before")  # noqa: B009
            return replace(outcome, stalls=(*outcome.stalls, (before - 1, getattr(self.ws, "seconds"))))  # noqa: B009
        kept = outcome.messages[:after]
        end_t = kept[-1][0] if kept else 0.0
        details = f"ssemock fault {self.name}: the connection broke after message {after}"
        return replace(outcome, messages=kept, code="UNAVAILABLE", details=details, trailers=(), end_t=end_t)


class OnGrpc(Fault):
    """A gRPC fault among a player's ``faults=``: its gRPC calls serve it (``call``); HTTP
    responses and WebSocket sessions are left alone."""

    per_request = True  # never a stream fault to place on an HTTP body
    replay_only = "a gRPC call is recorded as it goes, unfaulted; its faults are served when it is replayed"

    def __init__(self, call: CallFault) -> None:
        self.call = call
        self.name = call.name

    def apply(self, served: Served, attempt: int) -> None:
        return None

    def refuses(self, framing: str) -> str | None:
        return (
            None if framing == "grpc" else f"a gRPC fault: it applies to gRPC calls, not to a {framing} body"
        )

    def needs_end(self, attempt: int = 0) -> str | None:
        return None


def call_fault(fault: Fault) -> CallFault | None:
    """What ``fault`` (one of a player's faults) does to a gRPC call, or None when it does nothing
    there (an HTTP stream's fault, a WebSocket close)."""
    inner = getattr(fault, "fault", fault)  # an aimed fault at its attempt (ssemock.variants.fault_aim)
    if isinstance(inner, OnGrpc):
        return inner.call
    if isinstance(inner, OnWebSocket) and inner.refuses("grpc") is None:
        return _FromWebSocket(inner.ws)
    return None


def for_call(
    faults: Sequence[Fault], attempts: dict[tuple[int, int], int], index: int, request: Request
) -> tuple[list[CallFault], bool]:
    """The faults that apply to the call answered by interaction ``index`` (its recorded
    ``request``): aimed ones where their target matches it, the others on every call; a sequence
    at its attempt (unaimed: on the first call matched and its retries), counted in ``attempts``
    (the player's or the server's, kept between calls). And whether the call uses up its
    interaction (a sequence's faulted attempt does not: the retry gets the recorded call). The
    in-process player and ``ssemock serve`` both choose so."""
    out, consumes = [], True
    for n, fault in enumerate(faults):
        found = call_fault(fault)
        if found is None:
            continue
        if fault.on is not None:
            if not fault.on.matches(index, request):
                continue
        elif isinstance(found, CallSequence) and attempts.setdefault((n, -1), index) != index:
            continue
        if isinstance(found, CallSequence):
            attempt = attempts.get((n, index), 0)
            attempts[n, index] = attempt + 1
            found = found.at(attempt)
            if found is None:
                continue
            consumes = False
        out.append(found)
    return out, consumes


def takes(fault: Fault) -> bool:
    """Whether a player's fault has a meaning on a gRPC call."""
    return call_fault(fault) is not None


_FACTORIES: dict[str, Callable[..., CallFault]] = {"status": status}
VARIANTS: tuple[str, ...] = (
    "status:code=UNAVAILABLE,after_message=1",
    "status:code=RESOURCE_EXHAUSTED,after_message=0",
    "status:code=INTERNAL,after_message=2,details=upstream reset",
    "drop:after_message=1",
    "stall:before_message=2,seconds=60",
    "sequence:status:code=UNAVAILABLE,after_message=0|as_recorded",
)
"""Every gRPC fault in each of its modes: what the fault x call-shape tests run."""
NAMES: tuple[str, ...] = tuple(_FACTORIES)
"""The faults' names (an unknown name's error lists them)."""


def is_grpc_fault(spec: str) -> bool:
    """Whether a fault name is a gRPC-only fault (``status:...``, or a sequence holding one)."""
    head, _, rest = spec.strip().partition(":")
    if head == "sequence":
        return any(is_grpc_fault(part) for part in rest.split("|"))
    return head in _FACTORIES


def _part(spec: str) -> CallFault | None:
    """One attempt of a sequence: a gRPC fault, a drop or stall, or None (``as_recorded``)."""
    spec = spec.strip()
    if spec in ("", "as_recorded", "none"):
        return None
    if is_grpc_fault(spec):
        return get(spec).call
    from ..websocket.faults import get as websocket_fault

    found = call_fault(OnWebSocket(websocket_fault(spec)))
    if found is None:
        raise ValueError(f"{spec!r} does nothing to a gRPC call (status, drop:after_message=N or stall do)")
    return found


def get(spec: str) -> OnGrpc:
    """A gRPC fault from its name (see the module); one ValueError naming the spec for any problem."""
    head, _, rest = spec.strip().partition(":")
    if head == "sequence":
        parts = rest.split("|")
        last, _, target = parts[-1].partition(",on=")
        try:
            sequenced = OnGrpc(CallSequence([_part(p) for p in [*parts[:-1], last]]))
        except ValueError as exc:
            raise ValueError(f"bad fault {spec!r}: {exc}") from None
        sequenced.aimed(target.strip() or None)
        return sequenced
    if head not in _FACTORIES:
        raise unknown("gRPC fault", spec, list(_FACTORIES), head=head)
    params = list(inspect.signature(_FACTORIES[head]).parameters)
    kwargs: dict[str, Any] = {}
    on: str | None = None
    for part in filter(None, (p.strip() for p in rest.split(","))):
        key, sep, value = part.partition("=")
        key = key.strip()
        if sep and key == "on":
            on = value.strip()
            continue
        if not sep or key not in params:
            raise ValueError(
                f"bad fault {spec!r}: {head} takes {', '.join(f'{p}=' for p in params)}, got {part!r}"
            )
        if key == "details":
            kwargs[key] = value.strip()
            continue
        try:
            kwargs[key] = orjson.loads(value)
        except orjson.JSONDecodeError:
            kwargs[key] = value.strip()
    try:
        fault = OnGrpc(_FACTORIES[head](**kwargs))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"bad fault {spec!r}: {exc}") from None
    fault.aimed(on)
    return fault
