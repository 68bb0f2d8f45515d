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
    FREE_VALUES,
    MAX_DEPTH,
    Cassette,
    CassetteError,
    Headers,
    Interaction,
    Request,
    Response,
    body_ends,
    check_size,
    read_file,
)
from .record import HOP_HEADERS
from .redact import redact_request, redact_response

__all__ = ["NO_BOUNDARIES", "from_vcr", "import_vcr", "load_vcr"]

NO_BOUNDARIES = "vcrpy kept no chunk boundaries or timing: using one chunk per event, all at t=0"
YAML_BYTES_PER_VALUE = 8  # a YAML file may hold FREE_VALUES values and one more per 8 bytes
BODY_EXPANSION = 16  # bodies may decode (gzip, YAML aliases) to 16x the file, plus BODY_FREE bytes
BODY_FREE = 64 << 20


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
    """The parsed vcrpy cassette (JSON when it looks like JSON, else YAML).

    Hostile files are refused with CassetteError before they cost much: more values than the
    file's size allows, nesting deeper than :data:`~ssemock.cassette.MAX_DEPTH`, unknown tags."""
    raw = read_file(path)
    if raw.lstrip().startswith(b"{"):
        check_size(raw, path=path)
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            pass  # YAML flow mappings start with "{" too
    try:
        loader = _yaml_loader()
    except ImportError as exc:
        raise CassetteError(str(exc), path=path) from None
    return _load_yaml(raw, loader, path)


def _load_yaml(raw: bytes, loader_class: Any, path: str | os.PathLike[str]) -> Any:
    """The first YAML document of ``raw``, built from the parser's events with an explicit stack:
    no recursion (a 30,000-deep file crashed PyYAML's composer), no node graph (which costs
    ~400 bytes a value), and a cap on depth and on the number of values."""
    import yaml

    limit = FREE_VALUES + len(raw) // YAML_BYTES_PER_VALUE
    loader = loader_class(raw)
    containers: list[tuple[Any, str | None, str | None, list[Any]]] = []  # (container, anchor, tag, key)
    anchors: dict[str, Any] = {}
    count = 0
    done, document = False, None

    def add(value: Any, line: int) -> None:
        nonlocal done, document
        if not containers:
            done, document = True, value
            return
        container, _, _, key = containers[-1]
        if isinstance(container, list):
            container.append(value)
        elif not key:
            try:
                hash(value)
            except TypeError:
                raise CassetteError(f"a YAML mapping key is a {type(value).__name__} (line {line})",
                                    path=path) from None
            key.append(value)
        else:
            container[key.pop()] = value

    try:
        while not done and loader.check_event():
            event = loader.get_event()
            count += 1
            if count > limit:
                raise CassetteError(f"holds more than {limit:,} YAML values in {len(raw):,} bytes, more than a "
                                    f"vcrpy cassette of this size may ({FREE_VALUES:,} and one per "
                                    f"{YAML_BYTES_PER_VALUE} bytes)", path=path)
            if isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
                if len(containers) >= MAX_DEPTH:
                    raise CassetteError(f"YAML nested deeper than {MAX_DEPTH} levels (line "
                                        f"{event.start_mark.line + 1}): not a vcrpy cassette", path=path)
                tag = event.tag if event.tag not in (None, "!") else None
                if tag not in _COLLECTION_TAGS:
                    raise CassetteError(f"unsupported YAML tag {tag} (line {event.start_mark.line + 1})", path=path)
                new: list[Any] | dict[Any, Any] = [] if isinstance(event, yaml.SequenceStartEvent) else {}
                containers.append((new, event.anchor, tag, []))
            elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
                container, anchor, tag, _ = containers.pop()
                value = tuple(container) if tag == _TUPLE else container
                if anchor is not None:
                    anchors[anchor] = value  # only once complete: an alias inside it is an error
                add(value, event.start_mark.line + 1)
            elif isinstance(event, yaml.ScalarEvent):
                tag = event.tag
                if tag is None or tag == "!":
                    tag = loader.resolve(yaml.ScalarNode, event.value, event.implicit)
                node = yaml.ScalarNode(tag, event.value, event.start_mark, event.end_mark, style=event.style)
                value = loader.construct_object(node)
                loader.constructed_objects.clear()
                if event.anchor is not None:
                    anchors[event.anchor] = value
                add(value, event.start_mark.line + 1)
            elif isinstance(event, yaml.AliasEvent):
                if event.anchor not in anchors:
                    raise CassetteError(f"YAML alias *{event.anchor} refers to no complete anchor (line "
                                        f"{event.start_mark.line + 1})", path=path)
                add(anchors[event.anchor], event.start_mark.line + 1)
    except yaml.YAMLError as exc:
        raise CassetteError(f"not a vcrpy cassette: YAML does not parse ({exc})".replace("\n", " "),
                            path=path) from None
    finally:
        loader.dispose()
    return document


_TUPLE = "tag:yaml.org,2002:python/tuple"
_COLLECTION_TAGS = {None, "tag:yaml.org,2002:seq", "tag:yaml.org,2002:map", _TUPLE}


class _Budget:
    """Bytes the bodies of one import may decode to (gzip and YAML aliases can multiply them)."""

    def __init__(self, limit: int | None) -> None:
        self.left = limit

    def take(self, size: int, where: str) -> None:
        if self.left is None:
            return
        self.left -= size
        if self.left < 0:
            raise self.exceeded(where)

    @staticmethod
    def exceeded(where: str) -> _Invalid:
        return _Invalid(f"{where}: the bodies decode to more than an import allows ({BODY_EXPANSION}x the "
                        f"file and {BODY_FREE >> 20} MB): a compression bomb?")


def _bytes(value: Any, where: str) -> bytes | None:
    """A vcrpy body: None, str, bytes (YAML !!binary), ``{'string': ...}``, base64, or a list."""
    if isinstance(value, dict) and "string" in value:
        value, where = value["string"], f"{where}.string"
        if isinstance(value, dict):
            raise _Invalid(f"{where} must be text or bytes, got a mapping")
    if value is None:
        return None
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8", "surrogatepass")
    if isinstance(value, dict):
        if "base64_string" in value:
            try:
                return base64.b64decode(str(value["base64_string"]), validate=True)
            except (binascii.Error, ValueError) as exc:
                raise _Invalid(f"{where}.base64_string is not valid base64 ({exc})") from None
        if not value:
            return None
    if isinstance(value, (list, tuple)) and all(isinstance(v, (bytes, str)) for v in value):
        return b"".join(v if isinstance(v, bytes) else v.encode("utf-8", "surrogatepass") for v in value)
    raise _Invalid(f"{where} is neither a string, bytes nor {{'string': ...}}: {type(value).__name__}")


_SCALARS = (str, bytes, int, float)


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
    return out


_SLICE = 1 << 14  # compressed input fed at a time, so a bomb is caught after a bounded output


def _decompressor(encoding: str, limit: int) -> Callable[[bytes], bytes] | None:
    """A decoder for one content coding, lenient like a streaming client (a stream cut short,
    without its gzip trailer, decodes as far as it goes); past ``limit`` bytes of output it
    raises OverflowError."""
    if encoding in ("gzip", "x-gzip"):
        return lambda b: _inflate(b, 16 + zlib.MAX_WBITS, limit)
    if encoding == "deflate":
        def deflate(b: bytes) -> bytes:
            try:
                return _inflate(b, zlib.MAX_WBITS, limit)
            except zlib.error:
                return _inflate(b, -zlib.MAX_WBITS, limit)  # raw deflate, as some servers send
        return deflate
    if encoding == "br":
        try:
            import brotli
        except ImportError:
            return None

        def unbrotli(b: bytes) -> bytes:
            out = brotli.Decompressor().process(b, output_buffer_limit=limit + 1)
            if len(out) > limit:
                raise OverflowError
            return bytes(out)
        return unbrotli
    if encoding == "zstd":
        try:
            import zstandard
        except ImportError:
            return None

        def unzstd(b: bytes) -> bytes:
            d, out = zstandard.ZstdDecompressor().decompressobj(), bytearray()
            for i in range(0, len(b), _SLICE):
                out += d.decompress(b[i:i + _SLICE])
                if len(out) > limit:
                    raise OverflowError
                if d.eof:
                    break
            return bytes(out)
        return unzstd
    return None


def _inflate(data: bytes, wbits: int, limit: int) -> bytes:
    """zlib output 1 MB at a time, so a bomb stops at ``limit`` without a larger buffer."""
    d, pieces, size = zlib.decompressobj(wbits), [], 0
    while data and not d.eof:
        piece = d.decompress(data, _PIECE)
        data = d.unconsumed_tail
        size += len(piece)
        if size > limit:
            raise OverflowError
        pieces.append(piece)
    pieces.append(d.flush())
    return b"".join(pieces)


_PIECE = 1 << 20
_UNLIMITED = 1 << 62


def _decode_body(body: bytes, headers: Headers, budget: _Budget) -> tuple[bytes, Headers]:
    """Remove the Content-Encoding (gzip/deflate, br/zstd when their modules are installed)."""
    codings = [c.strip().lower() for k, v in headers if k == "content-encoding" for c in v.split(",")]
    codings = [c for c in codings if c and c != "identity"]
    if not codings:
        return body, headers
    for coding in reversed(codings):
        decompress = _decompressor(coding, _UNLIMITED if budget.left is None else max(budget.left, 0))
        if decompress is None:
            raise _Invalid(f"the response body is {coding}-encoded and this Python cannot decode it "
                           f"(install {'brotli' if coding == 'br' else 'zstandard' if coding == 'zstd' else coding})")
        try:
            body = decompress(body)
        except OverflowError:
            raise budget.exceeded(f"response.body ({coding})") from None
        except Exception as exc:  # zlib.error, brotli.error, zstandard.ZstdError: all say "does not decode"
            raise _Invalid(f"the response body does not decode as {coding} ({exc})") from None
    return body, [(k, v) for k, v in headers if k != "content-encoding"]


def _text(value: str, where: str) -> str:
    """``value``, if it can be written as UTF-8 (YAML's ``"\\ud800"`` makes a lone surrogate)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise _Invalid(f"{where} holds a lone surrogate (\\ud800-\\udfff), which is not text") from None
    return value


def _interaction(item: Any, budget: _Budget) -> Interaction:
    if not isinstance(item, dict) or not isinstance(item.get("request"), dict) \
            or not isinstance(item.get("response"), dict):
        raise _Invalid("must be a mapping with 'request' and 'response'")
    req, resp = item["request"], item["response"]
    method, uri = req.get("method"), req.get("uri", req.get("url"))
    if not isinstance(method, str) or not method:
        raise _Invalid("request.method is missing")
    if not isinstance(uri, str) or not uri:
        raise _Invalid("request.uri is missing")
    method, uri = _text(method.upper(), "request.method"), _text(uri, "request.uri")
    body = _bytes(req.get("body"), "request.body")
    budget.take(len(body or b""), "request.body")
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
    if isinstance(status, str) and status.isdigit() and len(status) == 3:
        status = int(status)
    if not isinstance(status, int) or isinstance(status, bool) or not 100 <= status <= 599:
        raise _Invalid(f"response.status has no HTTP status code: {status!r:.80}")
    headers = _headers(resp.get("headers"), "response.headers")
    raw = _bytes(content, "response.body") or b""
    budget.take(len(raw), "response.body")
    rbody, headers = _decode_body(raw, headers, budget)
    if rbody is not raw:
        budget.take(len(rbody), "response.body")
    headers = [(k, v) for k, v in headers if k not in HOP_HEADERS]
    content_type = next((v for k, v in headers if k == "content-type"), None)
    ends = body_ends(rbody, content_type)
    response = Response(status, headers, rbody, ends, [0.0] * len(ends), True, None)
    return Interaction(redact_request(request), redact_response(response))


def from_vcr(data: Any, path: str | os.PathLike[str] | None = None, *,
             max_body_bytes: int | None = None) -> Cassette:
    """An ssemock cassette from a parsed vcrpy cassette (redacted, one chunk per event, t=0).

    ``max_body_bytes``: how many bytes all bodies may decode to (None: no limit)."""
    if isinstance(data, list) and data and isinstance(data[0], dict) and "request" in data[0]:
        items: Any = data  # vcrpy < 1.0 kept a bare list of interactions
    elif isinstance(data, dict) and isinstance(data.get("interactions"), list):
        items = data["interactions"]
    else:
        raise CassetteError("not a vcrpy cassette: no 'interactions' list", path=path)
    budget = _Budget(max_body_bytes)
    interactions = []
    for i, item in enumerate(items):
        try:
            interactions.append(_interaction(item, budget))
        except _Invalid as exc:
            raise CassetteError(str(exc), path=path, interaction=i) from None
    return Cassette(interactions)


def import_vcr(path: str | os.PathLike[str]) -> Cassette:
    """Read a vcrpy cassette file into an (unsaved) ssemock cassette; its bodies may decode to
    at most ``BODY_EXPANSION`` times the file's size plus ``BODY_FREE`` bytes."""
    data = load_vcr(path)
    size = os.stat(path).st_size
    return from_vcr(data, path, max_body_bytes=BODY_FREE + BODY_EXPANSION * size)
