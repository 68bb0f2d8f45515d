"""Faults: what real networks, proxies and providers do to a stream, made deterministic.

The implementation of [`ssemock.faults`][ssemock.faults], where its public names are documented."""

# Long on purpose: each fault is a small class, and all of them share Served, the framing-aware
# cut points, Aim and the registry (_FACTORIES, VARIANTS) that the fault matrix iterates; a module
# per fault would import the same helpers each and split the registry.

from __future__ import annotations

import bisect
import fnmatch
import inspect
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING, Any

import orjson

from .. import framing, protocols
from ..core.names import suggest, unknown
from .chunking import framed_event_ends

if TYPE_CHECKING:
    from ..store.cassette import Interaction, Request

__all__ = [
    "VARIANTS",
    "Aim",
    "Fault",
    "Served",
    "Target",
    "disconnect",
    "error_event",
    "framing_of",
    "get",
    "http_error",
    "resolve",
    "sequence",
    "stall",
    "trailing_data",
    "truncate",
]


@dataclass
class Served:
    """One response on its way to the client, before chunking and timing."""

    status: int
    """The status code to serve."""
    headers: list[tuple[str, str]]
    """The response headers to serve."""
    body: bytes
    """The body to serve."""
    ends: list[int]
    """Chunk ends (as recorded, carried through transforms)"""
    times: list[float]
    """The arrival time of each chunk, in seconds."""
    url: str
    """The request URL."""
    core: ModuleType  # httpcore or httpcore2: whose exceptions the client's transport maps
    """The httpcore module (httpcore or httpcore2) whose exceptions the client's transport maps."""
    error: BaseException | None = None
    """An exception to raise instead of (or after) the body, if any."""
    stalls: dict[int, float] = field(default_factory=dict)
    """Stalls to serve: byte offset -> seconds to wait there."""
    consumes: bool = True
    """Whether serving this counts as a play of the interaction."""
    kind: str | None = None
    """The framing of the body as planned (before any fault cut it); None: detect."""
    cut_at: int | None = None
    """Where a fault cut the body (what the client gets ends there)"""
    more: bool = False
    """The body is an open prefix of a live stream (more may come, whole events so far): a
    positioned fault does nothing until its position has arrived. A fault that decides the
    stream's end (a cut, an error event, an HTTP error) sets it False."""

    @property
    def framing(self) -> str:
        """The body's framing name (``sse``, ``ndjson``, ``json_array``, ``eventstream``, ``json``)."""
        return self.kind or framing_of(self.content_type, self.body)

    @property
    def is_sse(self) -> bool:
        """The response is an SSE stream."""
        return self.framing == "sse"

    @property
    def content_type(self) -> str | None:
        """The response's content type header (None without one)."""
        return next((v for k, v in self.headers if k.lower() == "content-type"), None)

    def event_ends(self) -> list[int]:
        """Byte offsets where each event of the body ends, in the framing its content type names
        (SSE events, JSON lines, a JSON array's elements, eventstream frames)."""
        if self.framing in ("json", "eventstream", "json_array", "ndjson"):
            return framing.get(self.framing).event_ends(self.body)
        return framed_event_ends(self.body, self.content_type)

    def offset_after(self, events: int) -> int:
        """Byte offset after the first ``events`` events (the whole body if there are fewer)."""
        ends = self.event_ends()
        if events <= 0:
            return 0
        return ends[events - 1] if events <= len(ends) else len(self.body)

    def reached(self, *, events: int | None = None, size: int | None = None) -> bool:
        """Whether a fault positioned after ``events`` events (or at byte ``size``) can be placed:
        always on a whole body; on an open prefix (`more`) only once that many have arrived."""
        if not self.more:
            return True
        if size is not None:
            return len(self.body) >= size
        return events is None or events <= 0 or events <= len(self.event_ends())

    def cut(self, offset: int) -> None:
        """Keep only the first ``offset`` bytes; the last kept chunk ends there."""
        keep = bisect.bisect_left(self.ends, offset)
        at = self.times[keep] if keep < len(self.times) else (self.times[-1] if self.times else 0.0)
        self.ends = self.ends[:keep] + ([offset] if offset else [])
        self.times = self.times[:keep] + ([at] if offset else [])
        self.body = self.body[:offset]
        self.cut_at = offset if self.cut_at is None else min(self.cut_at, offset)
        self.more = False  # the end is decided here, whatever more arrives


def framing_of(content_type: str | None, body: bytes) -> str:
    """The framing name of a response body, as faults and the reference see it."""
    return framing.detect(content_type, body).name


_METHOD = re.compile(r"^(\*|[A-Z]+)\s+(\S.*)$")


@dataclass(frozen=True)
class Target:
    """What an aimed fault applies to: interactions whose recorded request has this method (None:
    any) and whose URL matches ``pattern`` (shell-style: ``*/v1/messages``; a pattern starting
    with ``/`` matches the path and query), or the interaction at ``index`` in the cassette."""

    method: str | None = None
    """The request method to match (`None`: any)."""
    pattern: str | None = None
    """A shell-style pattern for the URL (`None`: any); starting with `/`, it matches the path and query."""
    index: int | None = None
    """The index of the interaction in the cassette (`None`: any)."""

    @classmethod
    def parse(cls, value: Target | str | int) -> Target:
        """``"POST */v1/messages"``, ``"*/v1/models"``, ``"GET /health"``, ``2`` or ``"#2"``."""
        if isinstance(value, Target):
            return value
        if type(value) is int:
            if value < 0:
                raise ValueError(f"on= takes an interaction index >= 0, got {value}")
            return cls(index=value)
        if not isinstance(value, str) or not value.strip():
            raise ValueError(
                f"on= takes 'METHOD URL-PATTERN' (e.g. 'POST */v1/messages') or an interaction "
                f"index, got {value!r}"
            )
        text = value.strip()
        if text.lstrip("#").isdigit():
            return cls(index=int(text.lstrip("#")))
        found = _METHOD.match(text)
        if found:
            method = None if found.group(1) == "*" else found.group(1)
            return cls(method=method, pattern=found.group(2).strip())
        return cls(pattern=text)

    def matches(self, index: int, request: Request) -> bool:
        """Whether the interaction at ``index`` with this recorded ``request`` is aimed at."""
        if self.index is not None:
            return index == self.index
        if self.method is not None and request.method.upper() != self.method:
            return False
        if self.pattern is None:
            return True
        url = request.url
        if self.pattern.startswith("/"):
            rest = url.split("://", 1)[-1]
            url = "/" + rest.split("/", 1)[1] if "/" in rest else "/"
        return fnmatch.fnmatchcase(url, self.pattern)

    def __str__(self) -> str:
        if self.index is not None:
            return str(self.index)
        return f"{self.method} {self.pattern}" if self.method else str(self.pattern)


class Fault:
    """Base class: a named, deterministic change to one served response."""

    name: str = "fault"
    """The fault's name, as `faults=` spells it."""
    on: Target | None = None
    """Aimed at these interactions; None: the default (see [`Aim`][ssemock.faults.Aim])"""
    per_request = False
    """True: unaimed, it applies to the first interaction matched (http_error, sequence)"""

    def apply(self, served: Served, attempt: int) -> None:
        """Change ``served`` in place; ``attempt`` counts the requests served before (from 0)."""
        raise NotImplementedError

    def refuses(self, framing: str) -> str | None:
        """Why this fault has no meaning for a body of ``framing`` (None: it has one)."""
        return None

    def needs_end(self, attempt: int = 0) -> str | None:
        """Why this fault (at ``attempt``) can only be placed once the whole stream is known
        (None: it is decided on a prefix of whole events, as a live stream arrives). A
        recording run serves a server-push stream, which may never end, as it arrives: a fault
        that needs the end is refused there. A subclass that cannot tell says it needs it."""
        return "it does not say whether it can be placed on a stream still arriving"

    def takes_document(self, url: str, headers: Sequence[tuple[str, str]], body: bytes) -> bool:
        """Whether, unaimed, it applies to this plain JSON body (no stream): only where the
        response's protocol gives it a meaning (an MCP JSON answer takes an error_event)."""
        return False

    def aimed(self, on: Target | str | int | None) -> Fault:
        """This fault aimed at ``on`` (its name says so: ``disconnect:after_event=2,on=POST */x``)."""
        if on is None:
            return self
        self.on = Target.parse(on)
        self.name += ("," if ":" in self.name else ":") + f"on={self.on}"
        return self

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"<fault {self.name}>"


MAX_SECONDS = 86_400.0
"""A stall or retry-after longer than a day is a typo, not a test."""


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
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or not 0 <= value <= MAX_SECONDS
    ):
        raise ValueError(
            f"{fault}: {key} must be a number of seconds from 0 to {MAX_SECONDS:g}, got {value!r}"
        )
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

    def needs_end(self, attempt: int = 0) -> str | None:
        return None

    def apply(self, served: Served, attempt: int) -> None:
        if not served.reached(events=self.after_event, size=self.after_byte):
            return
        offset = (
            served.offset_after(self.after_event)
            if self.after_event is not None
            else min(self.after_byte or 0, len(served.body))
        )
        served.cut(offset)
        served.error = served.core.RemoteProtocolError(
            f"peer closed connection without sending complete message body (ssemock {self.name}, "
            f"after byte {offset})"
        )


def disconnect(
    after_event: int | None = None, after_byte: int | None = None, on: Target | str | int | None = None
) -> Fault:
    """Drop the connection after N whole events (or N bytes): the client's RemoteProtocolError.

    An event is an SSE event, a JSON line, a JSON array's element (the cut falls after its closing
    brace, before the separator), an eventstream frame; a plain JSON body is one event."""
    return _Disconnect(after_event, after_byte).aimed(on)


class _Stall(Fault):
    def __init__(self, before_event: int, seconds: float) -> None:
        self.before_event = _count("stall", "before_event", before_event)
        self.seconds = _seconds("stall", "seconds", seconds)
        self.name = f"stall:before_event={before_event},seconds={seconds:g}"

    def needs_end(self, attempt: int = 0) -> str | None:
        return None

    def apply(self, served: Served, attempt: int) -> None:
        if served.reached(events=self.before_event):
            served.stalls[served.offset_after(self.before_event)] = self.seconds


def stall(before_event: int, seconds: float, on: Target | str | int | None = None) -> Fault:
    """Send nothing for ``seconds`` before event N (0-based: after N events).

    Longer than the client's read timeout: its ReadTimeout at once, without sleeping.
    """
    return _Stall(before_event, seconds).aimed(on)


class _Truncate(Fault):
    def __init__(self, at: str) -> None:
        if at not in ("terminator", "mid_event"):
            close = suggest(at, ("terminator", "mid_event"))
            hint = f" (did you mean {close!r}?)" if close else ""
            raise ValueError(f"truncate: at takes 'terminator' or 'mid_event', got {at!r}{hint}")
        self.at = at
        self.name = "truncate" if at == "terminator" else f"truncate:at={at}"

    def refuses(self, framing: str) -> str | None:
        if framing == "json" and self.at == "terminator":
            return (
                "a plain JSON body has no terminator event to drop "
                "(use truncate:at=mid_event or disconnect:after_byte=N to cut it)"
            )
        return None

    def needs_end(self, attempt: int = 0) -> str | None:
        return "it drops the stream's last event, and only the end says which event is last"

    def apply(self, served: Served, attempt: int) -> None:
        starts = [0, *served.event_ends()]
        if len(starts) < 2:
            return
        if self.at == "terminator":  # drop the last event
            served.cut(starts[-2])
        else:  # drop the last event and end halfway through the one before it
            k = max(len(starts) - 3, 0)
            served.cut((starts[k] + starts[k + 1]) // 2)


def truncate(at: str = "terminator", on: Target | str | int | None = None) -> Fault:
    """End the stream normally but early: without its last (terminator) event (a JSON array: its
    last element and the closing ``]``), or also cut halfway through the event before it
    (``at="mid_event"``: inside that SSE event, JSON line, array element or eventstream frame;
    inside a plain JSON body)."""
    return _Truncate(at).aimed(on)


def _protocol(url: str, headers: Sequence[tuple[str, str]], body: bytes) -> protocols.Protocol:
    """The served response's protocol (URL, content type, events); OpenAI Chat when none says."""
    return protocols.for_response(url, headers, body) or protocols.get("openai.chat")


_TRAILING = ("event", "same_event", "garbage")


_REFUSED_TRAILING = {
    ("event", "eventstream"): "an eventstream has no terminator frame after which data is trailing "
    "(every frame is an event)",
    (
        "event",
        "json",
    ): "a plain JSON body has no last event to follow (use at=garbage: bytes after the document)",
    ("garbage", "eventstream"): "bytes glued to a binary frame corrupt its CRC, which is no trailing data",
}


class _TrailingData(Fault):
    def __init__(self, at: str) -> None:
        if at not in _TRAILING:
            close = suggest(at, _TRAILING)
            hint = f" (did you mean {close!r}?)" if close else ""
            raise ValueError(f"trailing_data: at takes {', '.join(map(repr, _TRAILING))}, got {at!r}{hint}")
        self.at = at
        self.name = "trailing_data" if at == "event" else f"trailing_data:at={at}"

    def refuses(self, framing: str) -> str | None:
        if self.at == "same_event" and framing != "sse":
            return "only an SSE event has lines a data line can join (use at=event or at=garbage)"
        return _REFUSED_TRAILING.get((self.at, framing))

    def needs_end(self, attempt: int = 0) -> str | None:
        return "it writes after the stream's last event, and only the end says which event is last"

    def apply(self, served: Served, attempt: int) -> None:
        kind = served.framing
        if self.refuses(kind):
            return
        body = served.body
        ends = served.event_ends()
        if kind == "json":
            stripped = body.rstrip()
            self._replace(served, stripped + b"garbage" + body[len(stripped) :], len(stripped))
            return
        if kind == "json_array":
            if not ends:
                return
            last = ends[-1]  # the last element's closing brace; the array's "]" follows
            if self.at == "event":  # another element after the array's end
                nl = _newline(body).encode()
                tail = b"" if body.endswith((b"\n", b"\r")) else nl
                self._replace(
                    served, body + tail + b'{"ssemock": "data after the terminator"}' + nl, len(body)
                )
            else:  # garbage glued to the last element, before the "]"
                self._replace(served, body[:last] + b"garbage" + body[last:], last)
            return
        starts = [0, *ends]
        if len(starts) < 2 or body[starts[-1] :].strip():
            return  # no whole last event to follow
        a, b = starts[-2], starts[-1]
        last_event = body[a:b]
        stripped = last_event.rstrip(b"\r\n")
        tail = last_event[len(stripped) :]
        nl = b"\r\n" if tail.startswith(b"\r\n") else tail[:1] or b"\n"
        extra = b'{"ssemock": "data after the terminator"}'
        if self.at == "event":  # a whole event (or JSON line) after the last one
            added = (b"data: " + extra + nl + nl) if kind == "sse" else extra + nl
            self._replace(served, body + added, len(body))
        elif self.at == "same_event":  # one more data line in the terminator's own event
            self._replace(served, body[:a] + stripped + nl + b"data: " + extra + nl + nl, a)
        else:  # the terminator's value followed by garbage: ``data: [DONE]garbage``
            self._replace(served, body[:a] + stripped + b"garbage" + tail, a)

    @staticmethod
    def _replace(served: Served, new: bytes, keep: int) -> None:
        """The body becomes ``new``, identical to the old one up to ``keep``: chunk ends up to
        there stay, the rest is one chunk, at the last recorded time."""
        kept = [e for e in served.ends if e <= keep]
        served.ends = kept + ([len(new)] if not kept or kept[-1] != len(new) else [])
        served.times = served.times[: len(kept)] + (
            [served.times[-1] if served.times else 0.0] * (len(served.ends) - len(kept))
        )
        served.body = new


def trailing_data(at: str = "event", on: Target | str | int | None = None) -> Fault:
    """Data a terminated stream must not have: an event after the last (terminator) event
    (``at="event"``: a conforming client ignores it), a data line in the terminator's own event
    (``"same_event"``: ``data: [DONE]`` then ``data: {...}``) or garbage glued to its value
    (``"garbage"``: ``data: [DONE]garbage``); the last two a conforming client must reject
    ([`ssemock.Player.assert_rejected`][ssemock.Player.assert_rejected]).

    In a JSON array stream, ``at="event"`` writes an element after the closing ``]`` (a client
    that reads elements stops at the ``]``) and ``"garbage"`` glues bytes to the last element,
    before the ``]``; in JSON lines, a line after the last and garbage glued to the last line; in
    a plain JSON body, ``"garbage"`` after the document. Refused where it has no meaning:
    ``same_event`` outside SSE, ``event`` on a plain JSON body, both ``event`` and ``garbage``
    on an eventstream."""
    return _TrailingData(at).aimed(on)


def error_body(url: str, status: int, message: str | None = None) -> bytes:
    """The JSON error body the provider of ``url`` sends with ``status``."""
    found = protocols.detect(url=url) or protocols.get("openai.chat")
    return found.http_error(status, message).body


class _HttpError(Fault):
    per_request = True

    def __init__(
        self, status: int, retry_after: float | None, body: bytes | str | None, headers: dict[str, str] | None
    ) -> None:
        if type(status) is not int or not 400 <= status <= 599:
            raise ValueError(f"http_error: status must be a 4xx/5xx status code, got {status!r}")
        retry_after = _seconds("http_error", "retry_after", retry_after, optional=True)
        if body is not None and not isinstance(body, (bytes, str)):
            raise ValueError(f"http_error: body must be text or bytes, got {type(body).__name__} {body!r}")
        if headers is not None and not (
            isinstance(headers, Mapping)
            and all(
                isinstance(k, str) and isinstance(v, str) and not {"\r", "\n"} & set(k + v)
                for k, v in headers.items()
            )
        ):
            raise ValueError(f"http_error: headers must map names to one-line string values, got {headers!r}")
        self.status, self.retry_after, self.headers = status, retry_after, dict(headers or {})
        self.body = body.encode() if isinstance(body, str) else body
        self.name = f"http_error:status={status}" + (
            f",retry_after={retry_after:g}" if retry_after is not None else ""
        )

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
        served.consumes, served.more = False, False

    def needs_end(self, attempt: int = 0) -> str | None:
        return None  # it replaces the response before any stream


def http_error(
    status: int,
    retry_after: float | None = None,
    body: bytes | str | None = None,
    headers: dict[str, str] | None = None,
    on: Target | str | int | None = None,
) -> Fault:
    """Answer with an HTTP error before any stream, in the provider's error body shape (and
    content type), from the response's protocol module; ``body`` replaces it. Unaimed, it
    answers the first interaction matched (and every retry of it)."""
    return _HttpError(status, retry_after, body, headers).aimed(on)


_EVENT_MESSAGES = {
    "overloaded_error": "Overloaded",
    "api_error": "Internal server error",
    "rate_limit_error": "Rate limited",
    "server_error": "The server had an error while processing your request. Sorry about that!",
}


class _ErrorEvent(Fault):
    def __init__(self, kind: str, after_event: int | None) -> None:
        if not isinstance(kind, str) or not kind.strip() or any(c in kind for c in ",;|:\r\n"):
            raise ValueError(
                f"error_event: kind must be an error type name such as 'overloaded_error', got {kind!r}"
            )
        self.kind = kind
        self.after_event = _count("error_event", "after_event", after_event, optional=True)
        self.name = f"error_event:kind={kind}" + (
            f",after_event={after_event}" if after_event is not None else ""
        )

    def refuses(self, framing: str) -> str | None:
        if _speaker(framing) is None:
            return f"no protocol writes an error event in a {framing} body" + (
                " (a plain JSON body is no stream: use http_error)" if framing == "json" else ""
            )
        return None

    def takes_document(self, url: str, headers: Sequence[tuple[str, str]], body: bytes) -> bool:
        found = protocols.for_response(url, headers, body)
        return found is not None and protocols.speaks(found, "json")

    def needs_end(self, attempt: int = 0) -> str | None:
        if self.after_event is None:
            return "without after_event= it goes mid-stream, at half the events, and only the end says how many there are"
        return None

    def apply(self, served: Served, attempt: int) -> None:
        kind = served.framing
        if self.refuses(kind) or not served.reached(events=self.after_event):
            return
        ends = served.event_ends()
        n = self.after_event if self.after_event is not None else len(ends) // 2
        if not framing.get(kind).stream:  # a document: the error is the whole answer
            n = 0
        offset = 0 if n <= 0 else ends[n - 1] if n <= len(ends) else len(served.body)
        message = _EVENT_MESSAGES.get(self.kind, self.kind.replace("_", " "))
        protocol = _protocol(served.url, served.headers, served.body)
        if not protocols.speaks(protocol, kind):  # e.g. an unknown JSON-lines API: the framing's usual shape
            protocol = _speaker(kind) or protocol
        owes = protocol.owed(served.body, offset, served.more) if protocol.owed else None
        if served.more and protocol.owed is not None and owes is None:
            # the request it fails is the next one answered, still to come: serve up to the cut, wait
            served.cut(offset)
            served.cut_at, served.more = None, True
            return
        error = protocols.StreamError(
            self.kind,
            message,
            framing=kind,
            newline=_newline(served.body),
            after_first=offset > 0,
            request_id=owes,
        )
        event = protocol.error_event(error)
        served.cut(offset)
        served.cut_at = None  # the stream goes on with the error event: not cut
        served.body += event
        served.ends.append(len(served.body))
        served.times.append(served.times[-1] if served.times else 0.0)


def _speaker(framing: str) -> protocols.Protocol | None:
    """The first registered protocol that writes its events in ``framing``."""
    return next((p for p in protocols.all_protocols() if protocols.speaks(p, framing)), None)


def _newline(body: bytes) -> str:
    """The body's line ending (its first one; LF when it has none)."""
    at = next((i for i, byte in enumerate(body) if byte in b"\r\n"), -1)
    if at < 0 or body[at] == 0x0A:
        return "\n"
    return "\r\n" if body[at + 1 : at + 2] == b"\n" else "\r"


def error_event(
    kind: str = "overloaded_error", after_event: int | None = None, on: Target | str | int | None = None
) -> Fault:
    """The stream's own error event after event N (default: mid-stream); the stream ends there.

    Written by the response's protocol module in the body's framing and line endings: an SSE
    ``error`` event (OpenAI, Anthropic), ``error`` + ``response.failed`` (Responses), an NDJSON
    ``{"error": ...}`` line (Ollama), a Gemini error object (an array element and the ``]`` in
    a JSON array stream), an eventstream exception frame (Bedrock), Cohere's ``message-end`` with
    ``finish_reason: ERROR``. A body in a framing the detected protocol does not write gets the
    shape of the first protocol that writes it (an unknown JSON-lines API: Ollama's line). A
    plain JSON body is replaced by the error where a protocol answers with one (MCP's JSON-RPC
    error answer); unaimed, only such a body takes it."""
    return _ErrorEvent(kind, after_event).aimed(on)


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


class _AtAttempt(Fault):
    """A fault bound to the attempt it is at for the interaction it is aimed at."""

    def __init__(self, fault: Fault, attempt: int) -> None:
        self.fault, self.attempt, self.name, self.on = fault, attempt, fault.name, fault.on
        self.per_request = fault.per_request

    def apply(self, served: Served, attempt: int) -> None:
        self.fault.apply(served, self.attempt)

    def refuses(self, framing: str) -> str | None:
        return self.fault.refuses(framing)

    def needs_end(self, attempt: int = 0) -> str | None:
        return self.fault.needs_end(self.attempt)


def _listed(interactions: Sequence[Interaction], most: int = 12) -> str:
    shown = [f"#{i} {x.request.method} {x.request.url}" for i, x in enumerate(interactions[:most])]
    more = len(interactions) - most
    return "; ".join(shown) + (f"; and {more} more" if more > 0 else "") if shown else "none"


class Aim:
    """Which faults apply to each interaction served, and at which attempt.

    An aimed fault (``on=``) applies to the interactions its [`Target`][ssemock.faults.Target] matches. Unaimed,
    ``http_error`` and ``sequence`` apply to the first interaction matched (their attempts count
    the requests it answers), every other fault to each interaction whose response is a stream it
    has a meaning for (a plain JSON body, an empty body or a framing it refuses are left alone)."""

    def __init__(self, faults: Sequence[Fault]) -> None:
        self.faults = faults
        """The faults, in the order given."""
        self._pins: dict[int, int] = {}  # fault position -> the interaction it was first applied to
        self._attempts: dict[tuple[int, int], int] = {}  # (fault position, interaction) -> times applied

    def check(self, interactions: Sequence[Interaction], where: str, *, complete: bool = True) -> None:
        """Raise ValueError, naming the fault, the target and the cassette's requests, for a target
        that matches no interaction, an aimed fault that has no meaning for a response it matches,
        and (``complete``: nothing will be recorded) a stream fault no interaction can take."""
        if not interactions:
            return
        for fault in self.faults:
            if fault.on is not None:
                matched = [i for i, x in enumerate(interactions) if fault.on.matches(i, x.request)]
                if not matched:
                    raise ValueError(
                        f"ssemock: fault {fault}: its target {str(fault.on)!r} matches no interaction "
                        f"of {where}; its requests: {_listed(interactions)}"
                    )
                for i in matched:
                    response = interactions[i].response
                    kind = framing_of(response.header("content-type"), response.body)
                    why = fault.refuses(kind)
                    if why:
                        raise ValueError(
                            f"ssemock: fault {fault} cannot apply to interaction #{i} "
                            f"({interactions[i].request.method} {interactions[i].request.url}) of "
                            f"{where}, a {kind} body: {why}"
                        )
            elif complete and not fault.per_request and not any(self.takes(fault, x) for x in interactions):
                kinds = sorted(
                    {framing_of(x.response.header("content-type"), x.response.body) for x in interactions}
                )
                raise ValueError(
                    f"ssemock: fault {fault} has a meaning for no response of {where} (framings: "
                    f"{', '.join(kinds)}; a plain JSON or empty body is no stream); its requests: "
                    f"{_listed(interactions)}; aim it with on= at a response it can change"
                )

    @staticmethod
    def takes(fault: Fault, interaction: Interaction, *, arriving: bool = False) -> bool:
        """Whether an unaimed stream fault applies to ``interaction``'s response (``arriving``:
        a live stream whose body is still to come, so an empty body so far is no reason not to)."""
        response = interaction.response
        if not response.body and not arriving:
            return False
        kind = framing.detect(response.header("content-type"), response.body)
        if fault.refuses(kind.name) is not None:
            return False
        return kind.stream or fault.takes_document(interaction.request.url, response.headers, response.body)

    def pick(self, index: int, interaction: Interaction, *, arriving: bool = False) -> list[Fault]:
        """The faults serving ``interaction`` (at ``index``) now goes through, each at its attempt
        (``arriving``: its body is a live stream still to come; see [`takes`][ssemock.faults.Aim.takes])."""
        out: list[Fault] = []
        for n, fault in enumerate(self.faults):
            if fault.on is not None:
                hit = fault.on.matches(index, interaction.request)
            elif fault.per_request:
                hit = self._pins.setdefault(n, index) == index
            else:
                hit = self.takes(fault, interaction, arriving=arriving)
            if hit:
                attempt = self._attempts.get((n, index), 0)
                self._attempts[n, index] = attempt + 1
                out.append(_AtAttempt(fault, attempt))
        return out


_FACTORIES: dict[str, Callable[..., Fault]] = {
    "disconnect": disconnect,
    "stall": stall,
    "truncate": truncate,
    "http_error": http_error,
    "error_event": error_event,
    "trailing_data": trailing_data,
}
_KNOWN = [*_FACTORIES, "sequence"]
VARIANTS: tuple[str, ...] = (
    "disconnect:after_event=1",
    "disconnect:after_byte=5",
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
    if head not in _FACTORIES:
        raise unknown("fault", spec, _KNOWN, head=head)
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
