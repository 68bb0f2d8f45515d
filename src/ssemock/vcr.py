"""Import vcrpy / pytest-recording cassettes (YAML, or vcrpy's JSON serializer) as ssemock cassettes.

vcrpy joins a streamed body into one blob and keeps no timing, so the imported responses get one
chunk per SSE event (or per line) and every chunk at t=0 -- :data:`NO_BOUNDARIES` says so. Bodies
stored compressed (vcrpy's httpx stub keeps the bytes as they came off the wire) are decoded and
their Content-Encoding dropped, as ssemock's recorder does. The default redaction rules are
applied; what they leave is for the caller to check with :func:`ssemock.redact.find_secrets`.
"""

from __future__ import annotations

import base64
import binascii
import os
import zlib
from collections.abc import Callable
from typing import Any

import orjson

from .cassette import (
    Cassette,
    CassetteError,
    Headers,
    Interaction,
    Request,
    Response,
    body_ends,
    read_file,
)
from .record import HOP_HEADERS
from .redact import redact_request, redact_response

__all__ = ["NO_BOUNDARIES", "from_vcr", "import_vcr", "load_vcr"]

NO_BOUNDARIES = "vcrpy kept no chunk boundaries or timing: using one chunk per event, all at t=0"



class _Invalid(Exception):
    """A problem inside one interaction (turned into CassetteError with the file and index)."""


def _yaml_loader() -> Any:
    """A safe YAML loader that also reads the benign Python tags old vcrpy cassettes contain."""
    try:
        import yaml
    except ImportError as exc:  # pragma: no cover - PyYAML comes with vcrpy
        raise ImportError("reading a YAML vcrpy cassette needs PyYAML: pip install pyyaml") from exc
    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    loader: Any = type("_VcrLoader", (base,), {})
    loader.add_constructor("tag:yaml.org,2002:python/str", lambda ld, node: ld.construct_scalar(node))
    loader.add_constructor("tag:yaml.org,2002:python/unicode", lambda ld, node: ld.construct_scalar(node))
    loader.add_constructor("tag:yaml.org,2002:python/tuple", lambda ld, node: tuple(ld.construct_sequence(node)))
    return loader


def load_vcr(path: str | os.PathLike[str]) -> Any:
    """The parsed vcrpy cassette (JSON when it looks like JSON, else YAML)."""
    raw = read_file(path)
    if raw.lstrip().startswith(b"{"):
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            pass  # YAML flow mappings start with "{" too
    try:
        loader = _yaml_loader()
    except ImportError as exc:
        raise CassetteError(str(exc), path=path) from None
    import yaml
    try:
        return yaml.load(raw, Loader=loader)
    except yaml.YAMLError as exc:
        raise CassetteError(f"not a vcrpy cassette: YAML does not parse ({exc})".replace("\n", " "),
                            path=path) from None


def _bytes(value: Any, where: str) -> bytes | None:
    """A vcrpy body: None, str, bytes (YAML !!binary), ``{'string': ...}``, base64, or a list."""
    if value is None:
        return None
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, dict):
        if "string" in value:
            return _bytes(value["string"], where)
        if "base64_string" in value:
            try:
                return base64.b64decode(str(value["base64_string"]), validate=True)
            except (binascii.Error, ValueError) as exc:
                raise _Invalid(f"{where}.base64_string is not valid base64 ({exc})") from None
        if not value:
            return None
    if isinstance(value, (list, tuple)) and all(isinstance(v, (bytes, str)) for v in value):
        return b"".join(v if isinstance(v, bytes) else v.encode("utf-8") for v in value)
    raise _Invalid(f"{where} is neither a string, bytes nor {{'string': ...}}: {type(value).__name__}")


def _headers(value: Any, where: str) -> Headers:
    """vcrpy headers: a dict of name -> list of values (or a plain value)."""
    if value is None:
        return []
    if not isinstance(value, dict):
        raise _Invalid(f"{where} must be a mapping of name -> values")
    out: Headers = []
    for name, values in value.items():
        for v in values if isinstance(values, (list, tuple)) else [values]:
            v = v.decode("latin-1") if isinstance(v, bytes) else v
            out.append((str(name).lower(), str(v)))
    return out


def _decompressor(encoding: str) -> Callable[[bytes], bytes] | None:
    """A decoder for one content coding, lenient like a streaming client (a stream cut short,
    without its gzip trailer, decodes as far as it goes)."""
    if encoding in ("gzip", "x-gzip"):
        return lambda b: _inflate(b, 16 + zlib.MAX_WBITS)
    if encoding == "deflate":
        def deflate(b: bytes) -> bytes:
            try:
                return _inflate(b, zlib.MAX_WBITS)
            except zlib.error:
                return _inflate(b, -zlib.MAX_WBITS)  # raw deflate, as some servers send
        return deflate
    if encoding == "br":
        try:
            import brotli
        except ImportError:
            return None
        return lambda b: bytes(brotli.decompress(b))
    if encoding == "zstd":
        try:
            import zstandard
        except ImportError:
            return None
        return lambda b: bytes(zstandard.ZstdDecompressor().decompressobj().decompress(b))
    return None


def _inflate(data: bytes, wbits: int) -> bytes:
    d = zlib.decompressobj(wbits)
    return d.decompress(data) + d.flush()


def _decode_body(body: bytes, headers: Headers) -> tuple[bytes, Headers]:
    """Remove the Content-Encoding (gzip/deflate, br/zstd when their modules are installed)."""
    codings = [c.strip().lower() for k, v in headers if k == "content-encoding" for c in v.split(",")]
    codings = [c for c in codings if c and c != "identity"]
    if not codings:
        return body, headers
    for coding in reversed(codings):
        decompress = _decompressor(coding)
        if decompress is None:
            raise _Invalid(f"the response body is {coding}-encoded and this Python cannot decode it "
                           f"(install {'brotli' if coding == 'br' else 'zstandard' if coding == 'zstd' else coding})")
        try:
            body = decompress(body)
        except (zlib.error, OSError, ValueError) as exc:
            raise _Invalid(f"the response body does not decode as {coding} ({exc})") from None
    return body, [(k, v) for k, v in headers if k != "content-encoding"]


def _interaction(item: Any) -> Interaction:
    if not isinstance(item, dict) or not isinstance(item.get("request"), dict) \
            or not isinstance(item.get("response"), dict):
        raise _Invalid("must be a mapping with 'request' and 'response'")
    req, resp = item["request"], item["response"]
    method, uri = req.get("method"), req.get("uri", req.get("url"))
    if not isinstance(method, str) or not method:
        raise _Invalid("request.method is missing")
    if not isinstance(uri, str) or not uri:
        raise _Invalid("request.uri is missing")
    method = method.upper()
    body = _bytes(req.get("body"), "request.body")
    if not body and method in ("GET", "HEAD"):
        body = None  # as ssemock records: a GET without a body matches any body
    request = Request(method, uri, _headers(req.get("headers"), "request.headers"), body)

    if "status_code" in resp:  # the httpx cassette format of old vcrpy versions
        status: Any = resp["status_code"]
        content: Any = resp.get("content")
    else:
        status = resp.get("status")
        status = status.get("code") if isinstance(status, dict) else status
        content = resp.get("body")
    if isinstance(status, str) and status.isdigit():
        status = int(status)
    if not isinstance(status, int) or isinstance(status, bool) or not 100 <= status <= 599:
        raise _Invalid(f"response.status has no HTTP status code: {status!r}")
    headers = _headers(resp.get("headers"), "response.headers")
    rbody, headers = _decode_body(_bytes(content, "response.body") or b"", headers)
    headers = [(k, v) for k, v in headers if k not in HOP_HEADERS]
    content_type = next((v for k, v in headers if k == "content-type"), None)
    ends = body_ends(rbody, content_type)
    response = Response(status, headers, rbody, ends, [0.0] * len(ends), True, None)
    return Interaction(redact_request(request), redact_response(response))


def from_vcr(data: Any, path: str | os.PathLike[str] | None = None) -> Cassette:
    """An ssemock cassette from a parsed vcrpy cassette (redacted, one chunk per event, t=0)."""
    if isinstance(data, list) and data and isinstance(data[0], dict) and "request" in data[0]:
        items: Any = data  # vcrpy < 1.0 kept a bare list of interactions
    elif isinstance(data, dict) and isinstance(data.get("interactions"), list):
        items = data["interactions"]
    else:
        raise CassetteError("not a vcrpy cassette: no 'interactions' list", path=path)
    interactions = []
    for i, item in enumerate(items):
        try:
            interactions.append(_interaction(item))
        except _Invalid as exc:
            raise CassetteError(str(exc), path=path, interaction=i) from None
    return Cassette(interactions)


def import_vcr(path: str | os.PathLike[str]) -> Cassette:
    """Read a vcrpy cassette file into an (unsaved) ssemock cassette."""
    return from_vcr(load_vcr(path), path)
