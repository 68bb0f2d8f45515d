"""Faults: what real networks, proxies and providers do to a stream, made deterministic.

The implementation of [`ssemock.faults`][ssemock.faults], where its public names are documented.

Its parts: what a fault is (`ssemock.variants.fault_model`), the faults on the stream's bytes
and time (`ssemock.variants.stream_faults`), the provider's own errors
(`ssemock.variants.error_faults`) and the aiming (`ssemock.variants.fault_aim`); here, the
registry of faults by name, their parsing, and `sequence` (one fault per attempt, named by the
names of its parts)."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Sequence
from typing import Any

import orjson

from ..core.names import unknown
from .error_faults import error_body as error_body
from .error_faults import error_event, http_error
from .fault_aim import Aim
from .fault_model import MAX_SECONDS as MAX_SECONDS
from .fault_model import Fault, Served, Target, framing_of
from .grpc import faults as grpc_faults
from .stream_faults import disconnect, resume, stall, trailing_data, truncate
from .websocket import faults as ws_faults

__all__ = [
    "VARIANTS",
    "Aim",
    "Fault",
    "Served",
    "Target",
    "disconnect",
    "error_event",
    "factories",
    "framing_of",
    "get",
    "http_error",
    "resolve",
    "resume",
    "sequence",
    "stall",
    "trailing_data",
    "truncate",
]


class _Sequence(Fault):
    per_request = True

    def __init__(self, per_attempt: Sequence[Fault | None]) -> None:
        self.per_attempt = list(per_attempt)
        self.name = "sequence:" + "|".join(
            str(f) if f is not None else "as_recorded" for f in self.per_attempt
        )

    def refuses(self, framing: str) -> str | None:
        return next(
            (
                f"attempt {n}: {f}: {why}"
                for n, f in enumerate(self.per_attempt)
                if f is not None and (why := f.refuses(framing))
            ),
            None,
        )

    def aimed(self, on: Target | str | int | None) -> Fault:
        if on is None:
            return self
        self.on = Target.parse(on)
        self.name += f",on={self.on}"
        return self

    def needs_end(self, attempt: int = 0) -> str | None:
        fault = self.per_attempt[attempt] if attempt < len(self.per_attempt) else None
        return None if fault is None else fault.needs_end(attempt)

    def apply(self, served: Served, attempt: int) -> None:
        fault = self.per_attempt[attempt] if attempt < len(self.per_attempt) else None
        if fault is not None:
            fault.apply(served, attempt)
            served.consumes = False  # a retry must find the same interaction again


def sequence(*per_attempt: Fault | str | None, on: Target | str | int | None = None) -> Fault:
    """One fault per attempt (request), then normal service: e.g. 429, then success. Unaimed,
    the attempts are the requests the first interaction matched answers (a retry matches it
    again); ``on=`` counts the requests its target answers."""
    faults = [None if f is None or f == "as_recorded" else get(f) for f in per_attempt]
    inner = {str(f.on) for f in faults if f is not None and f.on is not None}
    if len(inner) > 1 or (inner and on is not None and {str(Target.parse(on))} != inner):
        raise ValueError(
            f"sequence: its attempts are aimed at different targets ({', '.join(sorted(inner))}); "
            f"aim the whole sequence once with on="
        )
    for f in faults:  # an on= written in a part aims the whole sequence
        if f is not None and f.on is not None:
            on, f.on = f.on if on is None else on, None
            f.name = re.sub(r"[,:]on=.*$", "", f.name)
    return _Sequence(faults).aimed(on)


_FACTORIES: dict[str, Callable[..., Fault]] = {
    "disconnect": disconnect,
    "resume": resume,
    "stall": stall,
    "truncate": truncate,
    "http_error": http_error,
    "error_event": error_event,
    "trailing_data": trailing_data,
}
_KNOWN = [*_FACTORIES, "sequence"]


def factories() -> dict[str, Callable[..., Any]]:
    """Every fault's factory by its name (``sequence`` aside): what the docs' fault tables list."""
    return dict(_FACTORIES)


VARIANTS: tuple[str, ...] = (
    "disconnect:after_event=1",
    "disconnect:after_byte=5",
    "resume:after_event=1",
    "stall:before_event=1,seconds=60",
    "truncate",
    "truncate:at=mid_event",
    "trailing_data",
    "trailing_data:at=same_event",
    "trailing_data:at=garbage",
    "http_error:status=429,retry_after=0",
    "error_event:kind=overloaded_error,after_event=1",
    "sequence:http_error:status=503|as_recorded",
)
"""Every fault in each of its modes, by name: what a fault x framing x stack matrix runs."""
_EXAMPLES = {
    "disconnect": "disconnect:after_event=3",
    "resume": "resume:after_event=3",
    "stall": "stall:before_event=2,seconds=5",
    "truncate": "truncate",
    "http_error": "http_error:status=429,retry_after=1",
    "error_event": "error_event:kind=overloaded_error",
    "trailing_data": "trailing_data:at=garbage",
}


def _parse_kwargs(spec: str, head: str, text: str) -> dict[str, Any]:
    """``key=value,...`` of a fault name: values as JSON (``3``, ``1.5``, ``"x"``) or plain text,
    keys checked against the fault's parameters."""
    params = list(inspect.signature(_FACTORIES[head]).parameters)
    out: dict[str, Any] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        key, sep, value = part.partition("=")
        key = key.strip()
        if not sep:
            raise ValueError(
                f"bad fault {spec!r}: write its parameters as key=value "
                f"(e.g. {head}:{params[0]}=...), got {part!r}; {head} takes {', '.join(params)}"
            )
        if key not in params:
            error = unknown(f"parameter of {head}", key, params)
            raise ValueError(f"bad fault {spec!r}: {error}") from None
        if key in out:
            raise ValueError(f"bad fault {spec!r}: {key} is given twice")
        try:
            out[key] = orjson.loads(value)
        except orjson.JSONDecodeError:
            out[key] = value.strip()
    return out


def get(spec: str | Fault) -> Fault:
    """A fault from its name: ``disconnect:after_event=3``, ``stall:before_event=2,seconds=5``,
    ``truncate``, ``http_error:status=429,retry_after=0``, ``error_event:kind=overloaded_error``,
    ``sequence:http_error:status=429|as_recorded``.

    Every problem -- an unknown fault or parameter, a value of the wrong type or out of range --
    is one ValueError naming the spec, raised here rather than when a request is served."""
    if isinstance(spec, Fault):
        return spec
    if not isinstance(spec, str):
        raise ValueError(
            f"a fault is a name such as 'disconnect:after_event=3' or a Fault, "
            f"got {type(spec).__name__} {spec!r}"
        )
    if grpc_faults.is_grpc_fault(spec):  # served by the gRPC calls (ssemock.variants.grpc.faults)
        return grpc_faults.get(spec)
    if ws_faults.is_websocket_fault(spec):  # served by the WebSocket sessions (variants.websocket.faults)
        # ",on=TARGET": aimed at the sessions it matches (one connection of a group, issue 44 item 2;
        # a gRPC call too, for a drop or stall: ssemock.variants.grpc.faults)
        base, sep, target = spec.rpartition(",on=") if ",on=" in spec else (spec, "", "")
        try:
            return ws_faults.OnWebSocket(ws_faults.get(base)).aimed(target.strip() if sep else None)
        except ValueError as exc:
            raise ValueError(str(exc).replace(repr(base), repr(spec), 1)) from None
    head, _, rest = spec.strip().partition(":")
    if head == "sequence":
        parts = rest.split("|")
        on = None
        plain = re.match(r"^\s*(as_recorded|none)?\s*,\s*on=(.+)$", parts[-1])
        if plain:  # "...|as_recorded,on=POST */x": the target of the whole sequence
            parts[-1], on = plain.group(1) or "", plain.group(2).strip()
        try:
            return sequence(*[None if p.strip() in ("", "as_recorded", "none") else p for p in parts], on=on)
        except ValueError as exc:
            raise ValueError(f"bad fault {spec!r}: {exc}") from None
    if head not in _FACTORIES:  # the WebSocket and gRPC faults' names offered too (a "statu" typo)
        raise unknown(
            "fault", spec, dict.fromkeys([*_KNOWN, *ws_faults.NAMES, *grpc_faults.NAMES]), head=head
        )
    kwargs = _parse_kwargs(spec, head, rest)
    params = inspect.signature(_FACTORIES[head]).parameters
    missing = [k for k, p in params.items() if p.default is p.empty and k not in kwargs]
    if missing:
        raise ValueError(
            f"bad fault {spec!r}: {head} needs {', '.join(f'{k}=' for k in missing)} (e.g. {_EXAMPLES[head]})"
        )
    try:
        return _FACTORIES[head](**kwargs)
    except ValueError as exc:
        raise ValueError(f"bad fault {spec!r}: {exc}") from None


def resolve(spec: str | Fault | Sequence[str | Fault] | None) -> list[Fault]:
    """Faults from a name, a ``;``-separated list of names, or a list."""
    if spec is None:
        return []
    if isinstance(spec, Fault):
        return [spec]
    if isinstance(spec, str):
        return [get(p) for p in spec.split(";") if p.strip()]
    if not isinstance(spec, Sequence):
        return [get(spec)]  # the ValueError for a value that is no fault
    return [f for item in spec for f in resolve(item)]
