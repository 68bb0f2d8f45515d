"""Faults: what real networks, proxies and providers do to a stream, made deterministic.

A fault rewrites what one response will be (:class:`Served`) before it is chunked: it may cut
the body and end it with the client stack's own exception, add a stall, replace the response
with an HTTP error, or insert a provider-format error event. Every fault has a short name
(``"disconnect:after_event=3"``) so parametrized test ids say what happened.
"""

from __future__ import annotations

import bisect
import inspect
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import orjson

from . import framing, protocols
from ._names import suggest, unknown
from .chunking import framed_event_ends

__all__ = ["Fault", "Served", "disconnect", "error_event", "get", "http_error", "resolve", "sequence",
           "stall", "trailing_data", "truncate"]


@dataclass
class Served:
    """One response on its way to the client, before chunking and timing."""

    status: int
    headers: list[tuple[str, str]]
    body: bytes
    ends: list[int]  # chunk ends (as recorded, carried through transforms)
    times: list[float]
    url: str
    core: ModuleType  # httpcore or httpcore2: whose exceptions the client's transport maps
    error: BaseException | None = None
    stalls: dict[int, float] = field(default_factory=dict)  # byte offset -> seconds
    consumes: bool = True  # whether serving this counts as a play of the interaction

    @property
    def is_sse(self) -> bool:
        """The response is an SSE stream (content type text/event-stream)."""
        return any(k == "content-type" and "event-stream" in v for k, v in self.headers)

    @property
    def content_type(self) -> str | None:
        """The response's content type header (None without one)."""
        return next((v for k, v in self.headers if k.lower() == "content-type"), None)

    def event_ends(self) -> list[int]:
        """Byte offsets where each event of the body ends, in the framing its content type names
        (SSE events, JSON lines, a JSON array's elements, eventstream frames)."""
        return framed_event_ends(self.body, self.content_type)

    def offset_after(self, events: int) -> int:
        """Byte offset after the first ``events`` events (the whole body if there are fewer)."""
        ends = self.event_ends()
        if events <= 0:
            return 0
        return ends[events - 1] if events <= len(ends) else len(self.body)

    def cut(self, offset: int) -> None:
        """Keep only the first ``offset`` bytes; the last kept chunk ends there."""
        keep = bisect.bisect_left(self.ends, offset)
        at = self.times[keep] if keep < len(self.times) else (self.times[-1] if self.times else 0.0)
        self.ends = self.ends[:keep] + ([offset] if offset else [])
        self.times = self.times[:keep] + ([at] if offset else [])
        self.body = self.body[:offset]


class Fault:
    """Base class: a named, deterministic change to one served response."""

    name: str = "fault"

    def apply(self, served: Served, attempt: int) -> None:
        """Change ``served`` in place; ``attempt`` counts the requests served before (from 0)."""
        raise NotImplementedError

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"<fault {self.name}>"


MAX_SECONDS = 86_400.0  # a stall or retry-after longer than a day is a typo, not a test


def _count(fault: str, key: str, value: Any, *, optional: bool = False) -> Any:
    """``value`` checked to be a whole number >= 0 (or None when ``optional``)."""
    if value is None and optional:
        return None
    if type(value) is not int or value < 0:
        raise ValueError(f"{fault}: {key} must be a whole number >= 0, got {value!r}")
    return value


def _seconds(fault: str, key: str, value: Any, *, optional: bool = False) -> Any:
    """``value`` checked to be a finite number of seconds in [0, MAX_SECONDS] (or None)."""
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or not 0 <= value <= MAX_SECONDS:
        raise ValueError(f"{fault}: {key} must be a number of seconds from 0 to {MAX_SECONDS:g}, got {value!r}")
    return float(value)


def _args(**kwargs: Any) -> str:
    shown = [f"{k}={v}" for k, v in kwargs.items() if v is not None]
    return (":" + ",".join(shown)) if shown else ""


class _Disconnect(Fault):
    def __init__(self, after_event: int | None, after_byte: int | None) -> None:
        if (after_event is None) == (after_byte is None):
            raise ValueError("disconnect() needs exactly one of after_event= or after_byte=")
        after_event = _count("disconnect", "after_event", after_event, optional=True)
        after_byte = _count("disconnect", "after_byte", after_byte, optional=True)
        self.after_event, self.after_byte = after_event, after_byte
        self.name = "disconnect" + _args(after_event=after_event, after_byte=after_byte)

    def apply(self, served: Served, attempt: int) -> None:
        offset = (served.offset_after(self.after_event) if self.after_event is not None
                  else min(self.after_byte or 0, len(served.body)))
        served.cut(offset)
        served.error = served.core.RemoteProtocolError(
            f"peer closed connection without sending complete message body (ssemock {self.name}, "
            f"after byte {offset})")


def disconnect(after_event: int | None = None, after_byte: int | None = None) -> Fault:
    """Drop the connection after N whole events (or N bytes): the client's RemoteProtocolError."""
    return _Disconnect(after_event, after_byte)


class _Stall(Fault):
    def __init__(self, before_event: int, seconds: float) -> None:
        self.before_event = _count("stall", "before_event", before_event)
        self.seconds = _seconds("stall", "seconds", seconds)
        self.name = f"stall:before_event={before_event},seconds={seconds:g}"

    def apply(self, served: Served, attempt: int) -> None:
        served.stalls[served.offset_after(self.before_event)] = self.seconds


def stall(before_event: int, seconds: float) -> Fault:
    """Send nothing for ``seconds`` before event N (0-based: after N events).

    Longer than the client's read timeout: its ReadTimeout at once, without sleeping.
    """
    return _Stall(before_event, seconds)


class _Truncate(Fault):
    def __init__(self, at: str) -> None:
        if at not in ("terminator", "mid_event"):
            close = suggest(at, ("terminator", "mid_event"))
            hint = f" (did you mean {close!r}?)" if close else ""
            raise ValueError(f"truncate: at takes 'terminator' or 'mid_event', got {at!r}{hint}")
        self.at = at
        self.name = "truncate" if at == "terminator" else f"truncate:at={at}"

    def apply(self, served: Served, attempt: int) -> None:
        starts = [0, *served.event_ends()]
        if len(starts) < 2:
            return
        if self.at == "terminator":  # drop the last event
            served.cut(starts[-2])
        else:  # drop the last event and end halfway through the one before it
            k = max(len(starts) - 3, 0)
            served.cut((starts[k] + starts[k + 1]) // 2)


def truncate(at: str = "terminator") -> Fault:
    """End the stream normally but early: without its last (terminator) event, or also cut
    halfway through the event before it (``at="mid_event"``)."""
    return _Truncate(at)


def _protocol(url: str, headers: Sequence[tuple[str, str]], body: bytes) -> protocols.Protocol:
    """The served response's protocol (URL, content type, events); OpenAI Chat when none says."""
    return protocols.for_response(url, headers, body) or protocols.get("openai.chat")


_TRAILING = ("event", "same_event", "garbage")


class _TrailingData(Fault):
    def __init__(self, at: str) -> None:
        if at not in _TRAILING:
            close = suggest(at, _TRAILING)
            hint = f" (did you mean {close!r}?)" if close else ""
            raise ValueError(f"trailing_data: at takes {', '.join(map(repr, _TRAILING))}, got {at!r}{hint}")
        self.at = at
        self.name = "trailing_data" if at == "event" else f"trailing_data:at={at}"

    def apply(self, served: Served, attempt: int) -> None:
        starts = [0, *served.event_ends()]
        body = served.body
        if len(starts) < 2 or starts[-1] != len(body):
            return  # no whole last event to follow
        a, b = starts[-2], starts[-1]
        last = body[a:b]
        stripped = last.rstrip(b"\r\n")
        tail = last[len(stripped):]
        nl = b"\r\n" if tail.startswith(b"\r\n") else tail[:1] or b"\n"
        extra = b'{"ssemock": "data after the terminator"}'
        if self.at == "event":  # a whole event (or JSON line) after the last one
            added = (b"data: " + extra + nl + nl) if served.is_sse else extra + nl
            new = body + added
        elif self.at == "same_event":  # one more data line in the terminator's own event
            if not served.is_sse:
                return
            new = body[:a] + stripped + nl + b"data: " + extra + nl + nl
        else:  # the terminator's value followed by garbage: ``data: [DONE]garbage``
            new = body[:a] + stripped + b"garbage" + last[len(stripped):]
        keep = b if self.at == "event" else a
        served.ends = [e for e in served.ends if e < keep] + ([b] if keep == b else []) + [len(new)]
        served.times = served.times[:len(served.ends) - 1] + [served.times[-1] if served.times else 0.0]
        served.body = new


def trailing_data(at: str = "event") -> Fault:
    """Data a terminated stream must not have: an event after the last (terminator) event
    (``at="event"``: a conforming client ignores it), a data line in the terminator's own event
    (``"same_event"``: ``data: [DONE]`` then ``data: {...}``) or garbage glued to its value
    (``"garbage"``: ``data: [DONE]garbage``); the last two a conforming client must reject
    (:meth:`ssemock.Player.assert_rejected`)."""
    return _TrailingData(at)


def error_body(url: str, status: int, message: str | None = None) -> bytes:
    """The JSON error body the provider of ``url`` sends with ``status``."""
    found = protocols.detect(url=url) or protocols.get("openai.chat")
    return found.http_error(status, message).body


class _HttpError(Fault):
    def __init__(self, status: int, retry_after: float | None, body: bytes | str | None,
                 headers: dict[str, str] | None) -> None:
        if type(status) is not int or not 400 <= status <= 599:
            raise ValueError(f"http_error: status must be a 4xx/5xx status code, got {status!r}")
        retry_after = _seconds("http_error", "retry_after", retry_after, optional=True)
        if body is not None and not isinstance(body, (bytes, str)):
            raise ValueError(f"http_error: body must be text or bytes, got {type(body).__name__} {body!r}")
        if headers is not None and not (isinstance(headers, Mapping) and all(
                isinstance(k, str) and isinstance(v, str) and not {"\r", "\n"} & set(k + v)
                for k, v in headers.items())):
            raise ValueError(f"http_error: headers must map names to one-line string values, got {headers!r}")
        self.status, self.retry_after, self.headers = status, retry_after, dict(headers or {})
        self.body = body.encode() if isinstance(body, str) else body
        self.name = f"http_error:status={status}" + (f",retry_after={retry_after:g}" if retry_after is not None else "")

    def apply(self, served: Served, attempt: int) -> None:
        content_type = "application/json"
        body = self.body
        if body is None:
            shape = _protocol(served.url, served.headers, served.body).http_error(self.status, None)
            body, content_type = shape.body, shape.content_type
        headers = [("content-type", content_type)]
        if self.retry_after is not None:
            headers.append(("retry-after", f"{self.retry_after:g}"))
        headers += [(k.lower(), v) for k, v in self.headers.items()]
        served.status, served.headers, served.body = self.status, headers, body
        served.ends, served.times, served.error, served.stalls = [len(body)], [0.0], None, {}
        served.consumes = False


def http_error(status: int, retry_after: float | None = None, body: bytes | str | None = None,
               headers: dict[str, str] | None = None) -> Fault:
    """Answer with an HTTP error before any stream, in the provider's error body shape (and
    content type), from the response's protocol module; ``body`` replaces it."""
    return _HttpError(status, retry_after, body, headers)


_EVENT_MESSAGES = {"overloaded_error": "Overloaded", "api_error": "Internal server error",
                   "rate_limit_error": "Rate limited", "server_error": "The server had an error while processing"
                   " your request. Sorry about that!"}


class _ErrorEvent(Fault):
    def __init__(self, kind: str, after_event: int | None) -> None:
        if not isinstance(kind, str) or not kind.strip() or any(c in kind for c in ",;|:\r\n"):
            raise ValueError(f"error_event: kind must be an error type name such as 'overloaded_error', got {kind!r}")
        self.kind = kind
        self.after_event = _count("error_event", "after_event", after_event, optional=True)
        self.name = f"error_event:kind={kind}" + (f",after_event={after_event}" if after_event is not None else "")

    def apply(self, served: Served, attempt: int) -> None:
        kind = framing.detect(served.content_type, served.body)
        ends = served.event_ends()
        n = self.after_event if self.after_event is not None else len(ends) // 2
        offset = 0 if n <= 0 else ends[n - 1] if n <= len(ends) else len(served.body)
        message = _EVENT_MESSAGES.get(self.kind, self.kind.replace("_", " "))
        protocol = _protocol(served.url, served.headers, served.body)
        error = protocols.StreamError(self.kind, message, framing=kind.name, newline=_newline(served.body),
                                      after_first=offset > 0,
                                      request_id=protocol.owed(served.body, offset) if protocol.owed else None)
        event = protocol.error_event(error)
        served.cut(offset)
        served.body += event
        served.ends.append(len(served.body))
        served.times.append(served.times[-1] if served.times else 0.0)


def _newline(body: bytes) -> str:
    """The body's line ending (its first one; LF when it has none)."""
    at = next((i for i, byte in enumerate(body) if byte in b"\r\n"), -1)
    if at < 0 or body[at] == 0x0A:
        return "\n"
    return "\r\n" if body[at + 1:at + 2] == b"\n" else "\r"


def error_event(kind: str = "overloaded_error", after_event: int | None = None) -> Fault:
    """The stream's own error event after event N (default: mid-stream); the stream ends there.

    Written by the response's protocol module in the body's framing and line endings: an SSE
    ``error`` event (OpenAI, Anthropic), ``error`` + ``response.failed`` (Responses), an NDJSON
    ``{"error": ...}`` line (Ollama), a Gemini error object, Cohere's ``message-end`` with
    ``finish_reason: ERROR``."""
    return _ErrorEvent(kind, after_event)


class _Sequence(Fault):
    def __init__(self, per_attempt: Sequence[Fault | None]) -> None:
        self.per_attempt = list(per_attempt)
        self.name = "sequence:" + "|".join(str(f) if f is not None else "as_recorded" for f in self.per_attempt)

    def apply(self, served: Served, attempt: int) -> None:
        fault = self.per_attempt[attempt] if attempt < len(self.per_attempt) else None
        if fault is not None:
            fault.apply(served, attempt)
            served.consumes = False  # a retry must find the same interaction again


def sequence(*per_attempt: Fault | str | None) -> Fault:
    """One fault per attempt (request), then normal service: e.g. 429, then success."""
    return _Sequence([None if f is None or f == "as_recorded" else get(f) for f in per_attempt])


_FACTORIES: dict[str, Callable[..., Fault]] = {"disconnect": disconnect, "stall": stall, "truncate": truncate,
                                               "http_error": http_error, "error_event": error_event,
                                               "trailing_data": trailing_data}
_KNOWN = [*_FACTORIES, "sequence"]
_EXAMPLES = {"disconnect": "disconnect:after_event=3", "stall": "stall:before_event=2,seconds=5",
             "truncate": "truncate", "http_error": "http_error:status=429,retry_after=1",
             "error_event": "error_event:kind=overloaded_error", "trailing_data": "trailing_data:at=garbage"}


def _parse_kwargs(spec: str, head: str, text: str) -> dict[str, Any]:
    """``key=value,...`` of a fault name: values as JSON (``3``, ``1.5``, ``"x"``) or plain text,
    keys checked against the fault's parameters."""
    params = list(inspect.signature(_FACTORIES[head]).parameters)
    out: dict[str, Any] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        key, sep, value = part.partition("=")
        key = key.strip()
        if not sep:
            raise ValueError(f"bad fault {spec!r}: write its parameters as key=value "
                             f"(e.g. {head}:{params[0]}=...), got {part!r}; {head} takes {', '.join(params)}")
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
        raise ValueError(f"a fault is a name such as 'disconnect:after_event=3' or a Fault, "
                         f"got {type(spec).__name__} {spec!r}")
    head, _, rest = spec.strip().partition(":")
    if head == "sequence":
        return sequence(*[None if p.strip() in ("", "as_recorded", "none") else p for p in rest.split("|")])
    if head not in _FACTORIES:
        raise unknown("fault", spec, _KNOWN, head=head)
    kwargs = _parse_kwargs(spec, head, rest)
    params = inspect.signature(_FACTORIES[head]).parameters
    missing = [k for k, p in params.items() if p.default is p.empty and k not in kwargs]
    if missing:
        raise ValueError(f"bad fault {spec!r}: {head} needs {', '.join(f'{k}=' for k in missing)} "
                         f"(e.g. {_EXAMPLES[head]})")
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
