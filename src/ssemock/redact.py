"""Redaction: secrets never reach a cassette. Applied when recording and when matching."""

from __future__ import annotations

import re
from collections.abc import Iterator
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import orjson

from .cassette import Cassette, Headers, Interaction, Request, Response

__all__ = ["QUERY_PARAMS", "REDACTED", "REQUEST_HEADERS", "RESPONSE_HEADERS", "SECRET_PATTERNS", "find_secrets",
           "redact_request", "redact_response", "redact_url"]

REDACTED = "REDACTED"
REQUEST_HEADERS = frozenset({
    "authorization", "x-api-key", "api-key", "cookie", "proxy-authorization", "x-goog-api-key",
    "openai-organization", "openai-project",
})
RESPONSE_HEADERS = frozenset({"set-cookie"})
QUERY_PARAMS = re.compile(r"^(key|api[-_]?key|access[-_]?token|token|secret|password)$", re.I)

SECRET_PATTERNS = [
    ("an Anthropic key (sk-ant-...)", re.compile(r"(?<![A-Za-z0-9_\-])sk-ant-[A-Za-z0-9_\-]{8,}")),
    ("an OpenAI-style key (sk-...)", re.compile(r"(?<![A-Za-z0-9_\-])sk-(?!ant-)[A-Za-z0-9_\-]{8,}")),
    ("a Google API key (AIza...)", re.compile(r"(?<![A-Za-z0-9_\-])AIza[0-9A-Za-z_\-]{20,}")),
    ("a Bearer token", re.compile(r"Bearer\s+(?!REDACTED)[A-Za-z0-9._~+/\-]{8,}=*")),
]


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


def _fields(x: Interaction) -> Iterator[tuple[str, str]]:
    yield "request.url", x.request.url
    for k, v in x.request.headers:
        yield f"request.headers[{k!r}]", v
    if x.request.body:
        yield "request.body", x.request.body.decode("utf-8", "replace")
    for k, v in x.response.headers:
        yield f"response.headers[{k!r}]", v
    yield "response.body", x.response.body.decode("utf-8", "replace")
    if x.response.error:
        yield "response.error", orjson.dumps(x.response.error).decode()


def find_secrets(cassette: Cassette) -> list[str]:
    """Where something shaped like a provider secret is left, e.g. ``interaction 0 request.body: ...``."""
    found = []
    for i, x in enumerate(cassette.interactions):
        for where, text in _fields(x):
            for what, pattern in SECRET_PATTERNS:
                m = pattern.search(text)
                if m:
                    shown = m.group()[:7] + "..."
                    found.append(f"interaction {i} {where}: {what} ({shown!r} at offset {m.start()})")
    return found
