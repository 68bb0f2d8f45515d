"""What a fault is: the response it changes on its way to the client (`Served`), the interactions
it is aimed at (`Target`), the `Fault` base class, and the checks of a fault's arguments."""

from __future__ import annotations

import bisect
import fnmatch
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING, Any

from .. import framing
from .chunking import framed_event_ends

if TYPE_CHECKING:
    from ..store.cassette import Interaction, Request

__all__ = ["MAX_SECONDS", "Fault", "Served", "Target", "framing_of"]


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
    websocket = False
    """True: a WebSocket fault, served by WebSocket sessions (aimed, at the sessions it matches)"""

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

    def refuses_interaction(self, interaction: Interaction) -> str | None:
        """Why this fault has no meaning for this recorded exchange as a whole, beyond its
        framing (None: it has one): a `resume` fault on a stream whose protocol version has no
        resumption. Aimed at it, the player refuses to start, saying this."""
        return None

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


def _newline(body: bytes) -> str:
    """The body's line ending (its first one; LF when it has none)."""
    at = next((i for i, byte in enumerate(body) if byte in b"\r\n"), -1)
    if at < 0 or body[at] == 0x0A:
        return "\n"
    return "\r\n" if body[at + 1 : at + 2] == b"\n" else "\r"
