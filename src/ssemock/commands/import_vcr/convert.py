"""A parsed vcrpy cassette as an ssemock cassette: each interaction's request, status, headers
and body carried over (or the field that cannot be, named), redacted, one chunk per event at t=0."""

from __future__ import annotations

import http
import os
import urllib.parse
from typing import Any

from ...redaction.rules import mask_url, redact_request, redact_response
from ...store.cassette import (
    HOP_HEADERS,
    VERSION,
    Cassette,
    CassetteError,
    Headers,
    Interaction,
    Request,
    Response,
)
from ...store.header_text import header_text_problem
from ...variants.chunking import framed_event_ends
from .bodies import _body, _decode_body
from .checks import (
    _INTERACTION,
    _REQUEST,
    _RESPONSE,
    BODY_EXPANSION,
    BODY_FREE,
    _Budget,
    _Fields,
    _Invalid,
    _text,
)
from .reading import load_vcr

NO_BOUNDARIES = "vcrpy kept no chunk boundaries or timing: using one chunk per event, all at t=0"
"""The note on a converted cassette: vcrpy keeps no chunk boundaries or timing."""


_SCALARS = (str, bytes, int, float)


def _one_line(text: str) -> str:
    """``text`` for a one-line message: a control character in it (a newline of a hostile
    method or URI) as its escape."""
    return text if text.isprintable() else text.encode("unicode_escape").decode("ascii")


def _headers(value: Any, where: str) -> Headers:
    """vcrpy headers: a dict of name -> list of values (or a plain value)."""
    if value is None:
        return []
    if not isinstance(value, dict):
        raise _Invalid(f"{where} must be a mapping of name -> values")
    out: Headers = []
    for name, values in value.items():
        if not isinstance(name, (str, bytes)):
            raise _Invalid(f"{where} has a name that is a {type(name).__name__}, not text")
        name = name.decode("latin-1") if isinstance(name, bytes) else name
        for v in values if isinstance(values, (list, tuple)) else [values]:
            if not isinstance(v, _SCALARS) or isinstance(v, bool):
                raise _Invalid(f"{where}[{name!r}] must be text (or a list of texts), got {type(v).__name__}")
            v = v.decode("latin-1") if isinstance(v, bytes) else v
            out.append((_text(name.lower(), where), _text(str(v), f"{where}[{name!r}]")))
            problem = header_text_problem(out[-1][0]) or header_text_problem(out[-1][1])
            if problem is not None:  # a cassette refuses it at load: never written
                raise _Invalid(
                    f"{where}[{name[:40]!r}] {problem}, which no HTTP message may carry; fix or remove it"
                )
    return out


def _uri(req: dict[str, Any]) -> Any:
    """The request URL; vcrpy < 1.0 kept it in parts (protocol, host, port, path)."""
    uri = req.get("uri", req.get("url"))
    if uri is None and isinstance(req.get("host"), str) and isinstance(req.get("path"), str):
        scheme = str(req.get("protocol") or "http")
        port = req.get("port")
        default = {"http": 80, "https": 443}.get(scheme)
        netloc = req["host"] if port in (None, default, str(default)) else f"{req['host']}:{port}"
        uri = f"{scheme}://{netloc}{req['path']}"
    return uri


def _status(resp: dict[str, Any], fields: _Fields) -> int:
    if "status_code" in resp:  # the httpx cassette format of old vcrpy versions
        status: Any = resp["status_code"]
    else:
        status = resp.get("status")
        if isinstance(status, dict):
            fields.unknown(status, frozenset({"code", "message"}), "response.status")
            message, status = status.get("message"), status.get("code")
            if isinstance(status, int) and message not in (None, "", _reason(status)):
                fields.cannot_carry(
                    "response.status.message",
                    f"a reason phrase other than the standard {_reason(status)!r}: {str(message)!r:.60}",
                )
    if isinstance(status, str) and status.isdigit() and len(status) == 3:
        status = int(status)
    if not isinstance(status, int) or isinstance(status, bool) or not 100 <= status <= 599:
        raise _Invalid(f"response.status has no HTTP status code: {status!r:.80}")
    return status


def _reason(status: int) -> str:
    try:
        return http.HTTPStatus(status).phrase
    except ValueError:
        return ""


def _interaction(item: Any, budget: _Budget, fields: _Fields) -> Interaction:
    if (
        not isinstance(item, dict)
        or not isinstance(item.get("request"), dict)
        or not isinstance(item.get("response"), dict)
    ):
        raise _Invalid("must be a mapping with 'request' and 'response'")
    req, resp = item["request"], item["response"]
    method, uri = req.get("method"), _uri(req)
    if not isinstance(method, str) or not method:
        raise _Invalid("request.method is missing")
    if not isinstance(uri, str) or not uri:
        raise _Invalid("request.uri is missing")
    method, uri = _text(method.upper(), "request.method"), _text(uri, "request.uri")
    try:  # e.g. http://[::1 (an unclosed IPv6 address): refused here, never a traceback later
        parts = urllib.parse.urlsplit(uri)
        parts.port  # noqa: B018  (a port out of range or not a number raises here)
    except ValueError as exc:
        raise _Invalid(f"request.uri is not a URL ({exc}): {uri!r:.80}; fix or remove it") from None
    fields.label = f" ({_one_line(method)} {_one_line(mask_url(uri))})"
    fields.unknown(item, _INTERACTION, "")
    fields.unknown(req, _REQUEST, "request")
    fields.unknown(resp, _RESPONSE, "response")
    body, _ = _body(req, "body", "request", fields)
    budget.take(len(body or b""), "request.body")
    if not body and method in ("GET", "HEAD"):
        body = None  # as ssemock records: a GET without a body matches any body
    request = Request(method, uri, _headers(req.get("headers"), "request.headers"), body)

    status = _status(resp, fields)
    if isinstance(resp.get("url"), str) and resp["url"] not in (uri, ""):
        fields.cannot_carry(
            "response.url",
            "the response came from another URL than the request's "
            "(a redirect vcrpy folded into one interaction)",
        )
    headers = _headers(resp.get("headers"), "response.headers")
    raw, parsed = _body(resp, "content" if "status_code" in resp else "body", "response", fields)
    raw = raw or b""
    budget.take(len(raw), "response.body")
    if parsed:  # a parsed JSON body is the decoded body whatever Content-Encoding says
        rbody, headers = raw, [(k, v) for k, v in headers if k != "content-encoding"]
    else:
        rbody, headers = _decode_body(raw, headers, budget)
    if rbody is not raw:
        budget.take(len(rbody), "response.body")
    headers = [(k, v) for k, v in headers if k not in HOP_HEADERS]
    content_type = next((v for k, v in headers if k == "content-type"), None)
    ends = _event_ends(rbody, content_type)
    response = Response(status, headers, rbody, ends, [0.0] * len(ends), True, None)
    return Interaction(redact_request(request), redact_response(response))


def _event_ends(body: bytes, content_type: str | None) -> list[int]:
    """One chunk per event of the body's framing: SSE events, JSON lines, a JSON array's
    elements (Gemini's streamGenerateContent without ``alt=sse``), eventstream frames."""
    ends = framed_event_ends(body, content_type)
    if (ends[-1] if ends else 0) < len(body):
        ends.append(len(body))
    return ends


def from_vcr(
    data: Any,
    path: str | os.PathLike[str] | None = None,
    *,
    max_body_bytes: int | None = None,
    force: bool = False,
    dropped: list[str] | None = None,
) -> Cassette:
    """An ssemock cassette from a parsed vcrpy cassette (redacted, one chunk per event, t=0).

    ``max_body_bytes``: how many bytes all bodies may decode to (None: no limit). A field
    ssemock cannot carry over (an unknown body key, a custom reason phrase, vcrpy's metadata) is
    a [`CassetteError`][ssemock.CassetteError] naming the interaction and the field; with ``force`` it is dropped
    and described in ``dropped`` instead."""
    if is_ssemock_cassette(data):
        raise CassetteError("already an ssemock cassette, not a vcrpy one", path=path)
    if not is_vcr_cassette(data):
        raise CassetteError("not a vcrpy cassette: no 'interactions' list", path=path)
    fields = _Fields(force)
    if isinstance(data, list):
        items: Any = data  # vcrpy < 1.0 kept a bare list of interactions
    else:
        items = data["interactions"]
        try:  # other top-level keys (a YAML anchor's holder): vcrpy reads none of them
            if data.get("metadata"):
                fields.cannot_carry("metadata", "values stored with vcrpy's cassette metadata")
        except _Invalid as exc:
            raise CassetteError(str(exc), path=path) from None
    budget = _Budget(max_body_bytes)
    interactions = []
    for i, item in enumerate(items):
        fields.interaction, fields.label = i, ""
        try:
            interactions.append(_interaction(item, budget, fields))
        except _Invalid as exc:
            raise CassetteError(
                f"{fields.label.strip(' ()')}{': ' if fields.label else ''}{exc}", path=path, interaction=i
            ) from None
    if dropped is not None:
        dropped += fields.dropped
    return Cassette(interactions)


def is_vcr_cassette(data: Any) -> bool:
    """Whether parsed YAML/JSON is shaped like a vcrpy cassette (an interactions list)."""
    if isinstance(data, list):
        return bool(data) and isinstance(data[0], dict) and "request" in data[0]
    return isinstance(data, dict) and isinstance(data.get("interactions"), list)


def is_ssemock_cassette(data: Any) -> bool:
    """Whether parsed JSON is an ssemock cassette (responses with a chunk map, requests with a
    ``url``), not a vcrpy one (``uri``, no chunk map)."""
    if (
        not isinstance(data, dict)
        or data.get("version") != VERSION
        or not isinstance(data.get("interactions"), list)
    ):
        return False
    items = data["interactions"]
    return bool(items) and all(
        isinstance(x, dict) and isinstance(x.get("response"), dict) and "chunks" in x["response"]
        for x in items
    )


def import_vcr(
    path: str | os.PathLike[str], *, force: bool = False, dropped: list[str] | None = None
) -> Cassette:
    """Read a vcrpy cassette file into an (unsaved) ssemock cassette; its bodies may decode to
    at most ``BODY_EXPANSION`` times the file's size plus ``BODY_FREE`` bytes. ``force`` and
    ``dropped``: as [`from_vcr`][ssemock.commands.import_vcr.from_vcr]."""
    data = load_vcr(path)
    size = os.stat(path).st_size
    return from_vcr(
        data, path, max_body_bytes=BODY_FREE + BODY_EXPANSION * size, force=force, dropped=dropped
    )
