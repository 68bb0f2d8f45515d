"""The cassette's data model: the request and the response of each recorded interaction, as
stored; the format's version and limits; and the errors a cassette file raises."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from ..scan.shapes import safe_message
from ..scan.walk import Finding
from .group import Group
from .grpc import GrpcCall
from .header_text import header_text_problem
from .websocket import WebSocket

__all__ = [
    "MAX_DEPTH",
    "MAX_T_MS",
    "GRPC_VERSION",
    "VERSION",
    "WEBSOCKET_VERSION",
    "CassetteError",
    "Headers",
    "Interaction",
    "Request",
    "Response",
    "SecretError",
]

VERSION = 1
WEBSOCKET_VERSION = 2  # a cassette holding a WebSocket interaction (HTTP-only ones stay 1, byte for byte)
GRPC_VERSION = 3  # a cassette holding a gRPC call: an older ssemock refuses it rather than read it as HTTP
MAX_T_MS = 86_400_000  # a chunk time is at most a day after the request (ms), so timing can sleep it
MAX_DEPTH = 250  # request.json and response.error nest at most this deep (orjson writes 254 levels)


class CassetteError(ValueError):
    """A cassette file is malformed, of an unknown version, or disagrees with itself."""

    def __init__(
        self, reason: str, *, path: str | os.PathLike[str] | None = None, interaction: int | None = None
    ) -> None:
        self.path = None if path is None else str(path)
        """The cassette file, when the cassette has one."""
        self.interaction = interaction
        """The index of the interaction at fault, when one is."""
        self.reason = reason = safe_message(
            reason
        )  # a message may quote a value: never a key, never an escape
        """What is wrong, and what to do about it (secrets masked, control characters escaped)."""
        where = [
            safe_message(p)
            for p in (self.path, None if interaction is None else f"interaction {interaction}")
            if p
        ]
        super().__init__(": ".join([*where, reason]))


class SecretError(CassetteError):
    """A write of cassette data was refused: a secret is left in it. ``findings`` says where,
    which rule found each one and what its value looks like (never the value)."""

    def __init__(
        self,
        findings: list[Finding],
        *,
        path: str | os.PathLike[str] | None = None,
        advice: str = "redact it with before_record_request/before_record_response, or `ssemock redact`",
        message: str | None = None,
    ) -> None:
        self.findings = findings
        """Each secret found: where, which rule, the value's shape (never the value)."""
        super().__init__(
            message
            if message is not None
            else (
                "refusing to save: a secret is left in the cassette: "
                + "; ".join(map(str, findings))
                + f" ({advice})"
            ),
            path=path,
        )


Headers = list[tuple[str, str]]
# headers of one HTTP connection, not of the stored response: a recording and an import drop them
HOP_HEADERS = frozenset({"content-length", "transfer-encoding", "connection", "keep-alive"})


def _headers(value: Mapping[str, str] | Iterable[tuple[str, str]] | None) -> Headers:
    """Headers given in code as pairs; ValueError for one a cassette cannot hold (a CR, LF or NUL)."""
    items = value.items() if isinstance(value, Mapping) else (value or [])
    out = [(str(k).lower(), str(v)) for k, v in items]
    for k, v in out:
        problem = header_text_problem(k) or header_text_problem(v)
        if problem is not None:
            raise ValueError(f"header {k[:40]!r}: {problem}, which no HTTP message may carry")
    return out


@dataclass
class Request:
    """The request of an interaction, as stored (already redacted)."""

    method: str
    """The HTTP method (`"POST"`)."""
    url: str
    """The full URL, query included."""
    headers: Headers = field(default_factory=list)
    """The request headers as `(name, value)` pairs, names lower-cased."""
    body: bytes | None = None
    """The body sent; `None` matches any body."""

    def json(self) -> Any:
        """The body parsed as JSON, or None when it is absent or not JSON."""
        return _try_json(self.body)


@dataclass
class Response:
    """A recorded response: the exact bytes, the chunk ends as received, and their times."""

    status: int = 200
    """The HTTP status code."""
    headers: Headers = field(default_factory=list)
    """The response headers as `(name, value)` pairs, names lower-cased."""
    body: bytes = b""
    """The body, exactly as received."""
    ends: list[int] = field(default_factory=list)
    """The end offset of each chunk in `body`, as received."""
    times: list[float] = field(default_factory=list)
    """When each chunk arrived, in seconds after the request."""
    complete: bool = True
    """Whether the stream ended normally (`False`: the recording saw it break off)."""
    error: dict[str, Any] | None = None
    """The failure seen mid-stream while recording."""
    _cut: tuple[tuple[int, int, int], list[bytes]] | None = field(default=None, repr=False, compare=False)
    _tenths: list[int] | None = field(default=None, repr=False, compare=False)
    """The recorder's integer tenths of a millisecond behind `times` (``times[i] == _tenths[i] / 10_000``):
    the save writes them without rounding each time again, when they still give `times`."""

    @property
    def chunks(self) -> list[bytes]:
        """The body cut at its recorded boundaries: one `bytes` per chunk, as received."""
        # cut once, then cached (keyed by the body and ends objects)
        key = (id(self.body), id(self.ends), len(self.ends))
        if self._cut is None or self._cut[0] != key:
            body, starts = self.body, [0, *self.ends]
            self._cut = (key, [body[a:b] for a, b in zip(starts, self.ends)])
        return self._cut[1]

    def header(self, name: str, default: str | None = None) -> str | None:
        """The first value of header ``name`` (any case), or ``default``."""
        name = name.lower()
        return next((v for k, v in self.headers if k == name), default)


@dataclass
class Interaction:
    """One recorded exchange: the request sent and the response streamed back."""

    request: Request
    """The request sent (already redacted)."""
    response: Response
    """The response streamed back (for a WebSocket session: the handshake's 101)."""
    websocket: WebSocket | None = None
    """The WebSocket session after the handshake (`ssemock.store.websocket.WebSocket`), or None
    for an HTTP interaction."""
    group: Group | None = None
    """The session spanning connections it belongs to, and where its parts are on that session's
    timeline (`ssemock.store.group.Group`), or None: an interaction on its own."""
    grpc: GrpcCall | None = None
    """The gRPC call after its request and initial metadata (`ssemock.store.grpc.GrpcCall`), or
    None for an HTTP interaction."""


def _try_json(body: bytes | None) -> Any:
    if not body:
        return None
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
