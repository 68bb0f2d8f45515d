"""Redaction: secrets never reach a cassette, a log or a terminal.

* The default rules (`redact_request`, `redact_response`) replace credential headers
  and query parameters with ``REDACTED`` when recording; matching compares the redacted forms,
  so a redacted request still replays.
* `find_secrets` runs the scanner (`ssemock.scan.shapes`) over every field of every
  interaction before a save, and by ``ssemock validate`` and ``ssemock redact``.
* `mask_text` / `mask_url` hide what the scanner finds in any message, and
  `escape_control` keeps a cassette's text from driving the terminal.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator

import orjson

from ..core.edits import rewrite
from ..scan.fields import url_parts
from ..scan.shapes import SECRET_NAME, Secret, query_spans, scan, scan_body, scan_header, scan_url
from ..scan.shapes import escape_control as escape_control  # their home is ssemock.scan.shapes
from ..scan.shapes import mask_text as mask_text
from ..scan.subprotocols import credential_start, subprotocols
from ..scan.walk import scan_cassette
from ..store.cassette import Cassette, Interaction, Request, Response

__all__ = [
    "QUERY_PARAMS",
    "REDACTED",
    "REQUEST_HEADERS",
    "RESPONSE_HEADERS",
    "escape_control",
    "find_secrets",
    "interaction_secrets",
    "mask_text",
    "mask_url",
    "redact_request",
    "redact_response",
    "redact_subprotocol",
    "redact_subprotocols",
    "redact_url",
    "replace_spans",
]

REDACTED = "REDACTED"
#: Request headers always redacted; so is any request header whose name says token, secret, key,
#: auth, password, signature, session, cookie or credential (``ssemock.scan.shapes.SECRET_NAME``).
REQUEST_HEADERS = frozenset(
    {
        "authorization",
        "x-api-key",
        "api-key",
        "cookie",
        "proxy-authorization",
        "x-goog-api-key",
        "openai-organization",
        "openai-project",
        "anthropic-api-key",
        "x-amz-security-token",
        "ocp-apim-subscription-key",
        "x-auth-token",
        "private-token",
    }
)
#: Response headers always redacted, and any ``x-amz-...token...``.
RESPONSE_HEADERS = frozenset(
    {"set-cookie", "openai-organization", "openai-project", "anthropic-organization-id", "mcp-session-id"}
)
_AMZ_TOKEN = re.compile(r"^x-amz-.*token", re.I)
QUERY_PARAMS = re.compile(
    r"^(key|api[-_]?key|access[-_]?token|refresh[-_]?token|id[-_]?token|token|secret|client[-_]?secret|password"
    r"|sig|signature|x-amz-signature|x-amz-credential|x-amz-security-token|auth|code|session[-_]?id)$",
    re.I,
)
#: An SSE ``data:`` line that is a URL alone (not JSON): how the legacy MCP transport's ``endpoint``
#: event tells the client where to POST, with the session id in its query.
_URL_LINE = re.compile(rb"^data: ?((?:/|https?://)[^\r\n\s]*\?[^\r\n\s]*)\r?$", re.M)


@functools.lru_cache(maxsize=1024)  # a client sends the same dozen or so names every request
def _request_header_secret(name: str) -> bool:
    return name in REQUEST_HEADERS or SECRET_NAME.search(name) is not None


def _response_header_secret(name: str) -> bool:
    return name in RESPONSE_HEADERS or _AMZ_TOKEN.search(name) is not None


def replace_spans(text: str, spans: list[tuple[int, int]], by: str | list[str]) -> str:
    """``text`` with each (start, end) span, sorted and apart, replaced by ``by`` (one each)."""
    out, pos = [], 0
    for k, (a, b) in enumerate(spans):
        out += [text[pos:a], by if isinstance(by, str) else by[k]]
        pos = b
    out.append(text[pos:])
    return "".join(out)


def redact_url(url: str) -> str:
    """Replace a userinfo password and the values of query parameters named like credentials;
    everything else stays byte for byte."""
    password = url_parts(url)[2]
    if password and password != REDACTED:
        at = url.find("@")
        colon = url.rfind(":", 0, at)
        url = url[: colon + 1] + REDACTED + url[at:]
    q = url.find("?")
    if q < 0:
        return url
    end = url.find("#", q)
    end = len(url) if end < 0 else end
    query = url[q + 1 : end]
    spans = [
        (a, b) for name, a, b in query_spans(query) if QUERY_PARAMS.match(name) and query[a:b] != REDACTED
    ]
    if not spans:
        return url
    return url[: q + 1] + replace_spans(query, spans, REDACTED) + url[end:]


def redact_subprotocol(subprotocol: str) -> str:
    """A WebSocket subprotocol as stored: the credential after a credential name replaced
    (``openai-insecure-api-key.REDACTED``: `ssemock.scan.subprotocols`), and any key the scanner
    finds by its shape in it; everything else byte for byte."""
    start = credential_start(subprotocol)
    if start is not None:
        return subprotocol[:start] + REDACTED
    found = scan(subprotocol)
    return replace_spans(subprotocol, [(s.start, s.end) for s in found], REDACTED) if found else subprotocol


def redact_subprotocols(header: str) -> str:
    """A ``Sec-WebSocket-Protocol`` value with each subprotocol redacted (`redact_subprotocol`)."""
    spans = subprotocols(header)
    return replace_spans(header, spans, [redact_subprotocol(header[a:b]) for a, b in spans])


def redact_request(request: Request) -> Request:
    """The request as stored: credential headers and query values replaced, and the credentials
    a client offers as WebSocket subprotocols (a new Request)."""
    headers = [
        (
            k,
            REDACTED
            if _request_header_secret(k)
            else redact_subprotocols(v)
            if k.lower() == "sec-websocket-protocol"
            else v,
        )
        for k, v in request.headers
    ]
    return Request(request.method, redact_url(request.url), headers, request.body)


def redact_response(response: Response) -> Response:
    """Replace credential response headers in place (``set-cookie``, organization ids, AWS tokens,
    ``Mcp-Session-Id``), and the credential query values of a URL an event stream hands the client
    (the legacy MCP ``endpoint`` event's ``session_id``: redacted as the requests' URLs are, so the
    client's POSTs still match; chunk ends move with the shorter body)."""
    response.headers = [(k, REDACTED if _response_header_secret(k) else v) for k, v in response.headers]
    if b"?" in response.body and "event-stream" in (response.header("content-type") or ""):
        edits = []
        for m in _URL_LINE.finditer(response.body):
            url = m.group(1).decode("utf-8", "replace")
            redacted = redact_url(url)
            if redacted != url:
                edits.append((m.start(1), m.end(1), redacted.encode()))
        if edits:
            response.body, response.ends = rewrite(response.body, edits, list(response.ends))
    return response


# -- scanning ----------------------------------------------------------------------------------


def interaction_secrets(x: Interaction) -> Iterator[tuple[str, Secret]]:
    """(field, secret) for every secret in every field of an interaction; offsets into the field."""
    req, resp = x.request, x.response
    for where, found in (("request.method", scan(req.method)), ("request.url", scan_url(req.url))):
        for s in found:
            yield where, s
    for k, v in req.headers:
        for s in scan_header(k, v):
            yield f"request.headers[{k!r}]", s
    if req.body:
        for s in scan_body(req.body):
            yield "request.body", s
    for k, v in resp.headers:
        for s in scan_header(k, v):
            yield f"response.headers[{k!r}]", s
    for s in scan(resp.body):  # scanned as bytes: no decoded copy of a large body
        yield "response.body", s
    if resp.error:
        for s in scan(orjson.dumps(resp.error)):
            yield "response.error", s


def find_secrets(cassette: Cassette) -> list[str]:
    """Where a secret is left, one line each, never the secret itself (`ssemock.scan.walk.scan_cassette`):
    ``interaction 0 request.body: an Anthropic key (sk-ant-...) ('sk-ant-***', 108 chars: digits a-z A-Z -, at offset 12)``."""
    return [str(f) for f in scan_cassette(cassette)]


# -- messages ----------------------------------------------------------------------------------


def mask_url(url: str) -> str:
    """A URL fit for a message: the default redaction rules, then `mask_text`."""
    return mask_text(redact_url(url))
