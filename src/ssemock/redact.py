"""Redaction: secrets never reach a cassette. Applied when recording and when matching."""

from __future__ import annotations

import re
from typing import Any
from collections.abc import Iterator
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import orjson

from .cassette import Cassette, Headers, Interaction, Request, Response

__all__ = ["QUERY_PARAMS", "REDACTED", "REQUEST_HEADERS", "RESPONSE_HEADERS", "SECRET_PATTERNS", "find_secrets", "iter_secrets",
           "redact_request", "redact_response", "redact_url"]

REDACTED = "REDACTED"
REQUEST_HEADERS = frozenset({
    "authorization", "x-api-key", "api-key", "cookie", "proxy-authorization", "x-goog-api-key",
    "openai-organization", "openai-project",
})
RESPONSE_HEADERS = frozenset({"set-cookie"})
QUERY_PARAMS = re.compile(r"^(key|api[-_]?key|access[-_]?token|token|secret|password)$", re.I)

# Each starts with a literal, so the regex engine scans for it fast; that a key does not start in
# the middle of a word ("risk-assessment") is checked by iter_secrets, not by a slow lookbehind.
SECRET_PATTERNS = [
    ("an Anthropic key (sk-ant-...)", re.compile(r"sk-ant-[A-Za-z0-9_\-]{8,}")),
    ("an OpenAI-style key (sk-...)", re.compile(r"sk-(?!ant-)[A-Za-z0-9_\-]{8,}")),
    ("a Google API key (AIza...)", re.compile(r"AIza[0-9A-Za-z_\-]{20,}")),
    ("a Bearer token", re.compile(r"Bearer\s+(?!REDACTED)[A-Za-z0-9._~+/\-]{8,}=*")),
]
_BYTE_PATTERNS = [(what, re.compile(p.pattern.encode("ascii"))) for what, p in SECRET_PATTERNS]
_WORDISH = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


def iter_secrets(text: str | bytes) -> Iterator[tuple[str, re.Match[Any]]]:
    """Every match of a secret pattern in ``text`` (str or bytes) that does not start mid-word."""
    patterns: list[tuple[str, re.Pattern[Any]]] = _BYTE_PATTERNS if isinstance(text, bytes) else SECRET_PATTERNS
    for what, pattern in patterns:
        for m in pattern.finditer(text):
            start = m.start()
            before = text[start - 1] if start else None
            if isinstance(before, str):
                before = ord(before)
            if before is None or before not in _WORDISH or what == "a Bearer token":
                yield what, m


def _headers(headers: Headers, names: frozenset[str]) -> Headers:
    return [(k, REDACTED if k in names else v) for k, v in headers]


def redact_url(url: str) -> str:
    """Replace the values of query parameters named like keys and tokens."""
    parts = urlsplit(url)
    if not parts.query:
        return url
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    if not any(QUERY_PARAMS.match(k) for k, _ in pairs):
        return url
    query = urlencode([(k, REDACTED if QUERY_PARAMS.match(k) else v) for k, v in pairs])
    return urlunsplit(parts._replace(query=query))


def redact_request(request: Request) -> Request:
    return Request(request.method, redact_url(request.url), _headers(request.headers, REQUEST_HEADERS),
                   request.body)


def redact_response(response: Response) -> Response:
    response.headers = _headers(response.headers, RESPONSE_HEADERS)
    return response


def _fields(x: Interaction) -> Iterator[tuple[str, str | bytes]]:
    yield "request.url", x.request.url
    for k, v in x.request.headers:
        yield f"request.headers[{k!r}]", v
    if x.request.body:
        yield "request.body", x.request.body
    for k, v in x.response.headers:
        yield f"response.headers[{k!r}]", v
    yield "response.body", x.response.body  # scanned as bytes: no decoded copy of a large body
    if x.response.error:
        yield "response.error", orjson.dumps(x.response.error).decode()


def find_secrets(cassette: Cassette) -> list[str]:
    """Where something shaped like a provider secret is left, e.g. ``interaction 0 request.body: ...``."""
    found = []
    for i, x in enumerate(cassette.interactions):
        for where, text in _fields(x):
            first: dict[str, re.Match[Any]] = {}
            for what, m in iter_secrets(text):
                first.setdefault(what, m)
            for what, m in first.items():
                shown = m.group()[:7]
                shown = (shown.decode("ascii", "replace") if isinstance(shown, bytes) else shown) + "..."
                found.append(f"interaction {i} {where}: {what} ({shown!r} at offset {m.start()})")
    return found
