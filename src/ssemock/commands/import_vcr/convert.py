"""Import vcrpy / pytest-recording cassettes (YAML, or vcrpy's JSON serializer) as ssemock cassettes.

vcrpy joins a streamed body into one blob and keeps no timing, so the imported responses get one
chunk per event of their framing (SSE event, JSON line, JSON array element) and every chunk at
t=0 -- [`NO_BOUNDARIES`][ssemock.commands.import_vcr.NO_BOUNDARIES] says so. Bodies stored compressed (vcrpy's httpx stub keeps the bytes
as they came off the wire) are decoded and their Content-Encoding dropped, as ssemock's recorder
does. A body a custom serializer kept parsed (``parsed_body``) becomes the bytes it gave vcrpy
back. Nothing is dropped silently: a field that cannot be carried over is a
[`CassetteError`][ssemock.CassetteError] naming the file, the interaction and the field (``force`` drops
it and lists it). The default redaction rules are applied; what they leave is for the caller to
check with `ssemock.redaction.rules.find_secrets` ([`import_paths`][ssemock.commands.import_vcr.import_paths] refuses such a file).

[`import_paths`][ssemock.commands.import_vcr.import_paths] imports files, folders and globs in one go and reports file by file.
"""

# Long on purpose: one concern read top to bottom, every vcrpy layout, serializer and content
# coding it carries over, then the tree walk and its summary.

from __future__ import annotations

import base64
import binascii
import glob
import http
import json
import os
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from ..plan.record import HOP_HEADERS
from ..redaction.rules import find_secrets, mask_url, redact_request, redact_response
from ..store.cassette import (
    FREE_VALUES,
    MAX_DEPTH,
    VERSION,
    Cassette,
    CassetteError,
    Headers,
    Interaction,
    Request,
    Response,
    check_size,
    read_file,
)
from ..store.naming import file_name
from ..variants.chunking import framed_event_ends

__all__ = [
    "NO_BOUNDARIES",
    "Converted",
    "ImportSummary",
    "Refused",
    "Skipped",
    "from_vcr",
    "import_file",
    "import_paths",
    "import_vcr",
    "is_ssemock_cassette",
    "is_vcr_cassette",
    "load_vcr",
]

NO_BOUNDARIES = "vcrpy kept no chunk boundaries or timing: using one chunk per event, all at t=0"
"""The note on a converted cassette: vcrpy keeps no chunk boundaries or timing."""
YAML_BYTES_PER_VALUE = 8
"""A YAML file may hold FREE_VALUES values and one more per 8 bytes."""
BODY_EXPANSION = 16
"""Bodies may decode (gzip, YAML aliases) to 16x the file, plus BODY_FREE bytes."""
BODY_FREE = 64 << 20
"""The bytes a body may decode to beyond 16 times the file's size."""


class _Invalid(Exception):
    """A problem inside one interaction (turned into CassetteError with the file and index)."""


def _yaml_loader() -> Any:
    """A safe YAML loader that also reads the benign Python tags old vcrpy cassettes contain."""
    try:
        import yaml
    except ImportError as exc:  # pragma: no cover - PyYAML comes with vcrpy
        raise ImportError("reading a YAML vcrpy cassette needs PyYAML: pip install pyyaml") from exc
    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    c_module = getattr(yaml, "_yaml", None)
    if (
        base is not yaml.SafeLoader
        and getattr(c_module, "SequenceStartEvent", None) is not yaml.SequenceStartEvent
    ):
        # yaml was imported again (pytester restores sys.modules) but its C extension cannot be:
        # it would build events of the first import's classes, which this code would not know
        base = yaml.SafeLoader
    loader: Any = type("_VcrLoader", (base,), {})
    loader.add_constructor("tag:yaml.org,2002:python/str", lambda ld, node: ld.construct_scalar(node))
    loader.add_constructor("tag:yaml.org,2002:python/unicode", lambda ld, node: ld.construct_scalar(node))
    loader.add_constructor(
        "tag:yaml.org,2002:python/tuple", lambda ld, node: tuple(ld.construct_sequence(node))
    )
    return loader


def load_vcr(path: str | os.PathLike[str]) -> Any:
    """The parsed vcrpy cassette (JSON when it looks like JSON, else YAML).

    Hostile files are refused with CassetteError before they cost much: more values than the
    file's size allows, nesting deeper than `MAX_DEPTH`, unknown tags."""
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
                raise CassetteError(
                    f"a YAML mapping key is a {type(value).__name__} (line {line})", path=path
                ) from None
            key.append(value)
        else:
            container[key.pop()] = value

    try:
        while not done and loader.check_event():
            event = loader.get_event()
            count += 1
            if count > limit:
                raise CassetteError(
                    f"holds more than {limit:,} YAML values in {len(raw):,} bytes, more than a "
                    f"vcrpy cassette of this size may ({FREE_VALUES:,} and one per "
                    f"{YAML_BYTES_PER_VALUE} bytes)",
                    path=path,
                )
            if isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
                if len(containers) >= MAX_DEPTH:
                    raise CassetteError(
                        f"YAML nested deeper than {MAX_DEPTH} levels (line "
                        f"{event.start_mark.line + 1}): not a vcrpy cassette",
                        path=path,
                    )
                tag = event.tag if event.tag not in (None, "!") else None
                if tag not in _COLLECTION_TAGS:
                    raise CassetteError(
                        f"unsupported YAML tag {tag} (line {event.start_mark.line + 1})", path=path
                    )
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
                    raise CassetteError(
                        f"YAML alias *{event.anchor} refers to no complete anchor (line "
                        f"{event.start_mark.line + 1})",
                        path=path,
                    )
                add(anchors[event.anchor], event.start_mark.line + 1)
    except yaml.YAMLError as exc:
        raise CassetteError(
            f"not a vcrpy cassette: YAML does not parse ({exc})".replace("\n", " "), path=path
        ) from None
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
        return _Invalid(
            f"{where}: the bodies decode to more than an import allows ({BODY_EXPANSION}x the "
            f"file and {BODY_FREE >> 20} MB): a compression bomb?"
        )


class _Fields:
    """Fields of a vcrpy cassette that ssemock cannot carry over: an error naming the file, the
    interaction and the field, or -- with ``force`` -- dropped and listed in `dropped`."""

    def __init__(self, force: bool) -> None:
        self.force = force
        self.dropped: list[str] = []
        self.interaction: int | None = None
        self.label = ""  # the interaction's request, for messages: "POST https://..."

    def cannot_carry(self, where: str, why: str) -> None:
        at = "" if self.interaction is None else f"interaction {self.interaction}{self.label}: "
        if not self.force:
            raise _Invalid(
                f"{where}: {why}; ssemock cannot carry it over, so nothing is written "
                "(import with --force to drop it)"
            )
        self.dropped.append(f"{at}{where}: {why}")

    def unknown(self, mapping: dict[Any, Any], known: frozenset[str], where: str) -> None:
        for key in mapping:
            if key not in known:
                self.cannot_carry(
                    f"{where}.{key}" if where else str(key),
                    "a field vcrpy does not write (a custom serializer's?)",
                )


_INTERACTION = frozenset({"request", "response"})
_REQUEST = frozenset(
    {"method", "uri", "url", "body", "headers", "parsed_body", "protocol", "host", "port", "path"}
)  # the last four: vcrpy < 1.0's layout
_RESPONSE = frozenset(
    {"status", "headers", "body", "parsed_body", "url", "status_code", "content", "http_version"}
)  # the last three: old httpx layout
_BODY = frozenset({"string", "base64_string"})


def _bytes(value: Any, where: str, fields: _Fields) -> bytes | None:
    """A vcrpy body: None, str, bytes (YAML !!binary), ``{'string': ...}``, base64, or a list."""
    if isinstance(value, dict):
        fields.unknown(value, _BODY, where)
        if "string" in value:
            value, where = value["string"], f"{where}.string"
            if isinstance(value, dict):
                raise _Invalid(f"{where} must be text or bytes, got a mapping")
        elif "base64_string" in value:
            try:
                return base64.b64decode(str(value["base64_string"]), validate=True)
            except (binascii.Error, ValueError) as exc:
                raise _Invalid(f"{where}.base64_string is not valid base64 ({exc})") from None
        else:
            return None
    if value is None:
        return None
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8", "surrogatepass")
    if isinstance(value, (list, tuple)) and all(isinstance(v, (bytes, str)) for v in value):
        return b"".join(v if isinstance(v, bytes) else v.encode("utf-8", "surrogatepass") for v in value)
    raise _Invalid(f"{where} is neither a string, bytes nor {{'string': ...}}: {type(value).__name__}")


def _body(item: dict[str, Any], body_key: str, where: str, fields: _Fields) -> tuple[bytes | None, bool]:
    """The body of a vcrpy request or response, and whether it came from a parsed JSON body.

    Custom serializers (pydantic-ai's, for one) store a JSON body parsed, under ``parsed_body``,
    and give vcrpy ``json.dumps(parsed_body)`` back: the same bytes are made here."""
    if "parsed_body" not in item:
        return _bytes(item.get(body_key), f"{where}.{body_key}", fields), False
    if item.get(body_key) not in (None, "", {}):
        raise _Invalid(
            f"{where} has both {body_key} and parsed_body: which one the serializer "
            "served is unknown; remove one"
        )
    try:
        return json.dumps(item["parsed_body"]).encode("utf-8", "surrogatepass"), True
    except (TypeError, ValueError) as exc:
        raise _Invalid(f"{where}.parsed_body is not JSON data ({exc})") from None


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
                out += d.decompress(b[i : i + _SLICE])
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
    """Remove the Content-Encoding (gzip/deflate, br/zstd when their modules are installed):
    every layer, or as many as the stored body still has."""
    codings = [c.strip().lower() for k, v in headers if k == "content-encoding" for c in v.split(",")]
    codings = [c for c in codings if c and c != "identity"]
    if not codings:
        return body, headers
    for coding in reversed(codings):
        if _is_utf8(body):  # no compressed stream is valid UTF-8: vcrpy's requests and aiohttp stubs
            break  # store what the client decoded (aiohttp: one layer of "gzip, gzip") under the header
        decompress = _decompressor(coding, _UNLIMITED if budget.left is None else max(budget.left, 0))
        if decompress is None:
            module = {"br": "brotli", "zstd": "zstandard"}.get(coding)
            raise _Invalid(
                f"response.body is {coding}-encoded and "
                + (
                    f"this Python cannot decode it (install {module})"
                    if module
                    else "ssemock decodes gzip, deflate, br and zstd only"
                )
            )
        try:
            body = decompress(body)
        except OverflowError:
            raise budget.exceeded(f"response.body ({coding})") from None
        except Exception as exc:  # zlib.error, brotli.error, zstandard.ZstdError: all say "does not decode"
            raise _Invalid(f"the response body does not decode as {coding} ({exc})") from None
    return body, [(k, v) for k, v in headers if k != "content-encoding"]


def _is_utf8(body: bytes) -> bool:
    try:
        body.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _text(value: str, where: str) -> str:
    """``value``, if it can be written as UTF-8 (YAML's ``"\\ud800"`` makes a lone surrogate)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise _Invalid(f"{where} holds a lone surrogate (\\ud800-\\udfff), which is not text") from None
    return value


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
    fields.label = f" ({method} {mask_url(uri)})"
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


# -- a tree of cassettes -----------------------------------------------------------------------

VCR_SUFFIXES = (".yaml", ".yml", ".json")  # what a folder is searched for (vcrpy's serializers)
"""The file suffixes a folder is searched for (vcrpy's serializers)."""
SSEMOCK_SUFFIX = ".ssemock.json"
"""The suffix of the ssemock cassette written beside a vcrpy ``.json`` cassette (whose own name is taken)."""


@dataclass(frozen=True)
class Converted:
    """A vcrpy cassette written as an ssemock cassette."""

    source: Path
    """The vcrpy cassette read."""
    target: Path
    """The ssemock cassette written."""
    interactions: int
    """How many interactions were converted."""
    dropped: tuple[str, ...] = ()  # fields --force dropped: "interaction 2 (POST ...): response.x: why"
    """The fields `--force` dropped, one line each."""
    scrubbed: tuple[str, ...] = ()
    """Secrets --scrub-bodies replaced."""
    note: str | None = None
    """A note on the conversion (such as [`NO_BOUNDARIES`][ssemock.commands.import_vcr.NO_BOUNDARIES]), if any."""


@dataclass(frozen=True)
class Skipped:
    """A file left alone: already an ssemock cassette, converted and unchanged since, or (found
    in a folder) not a vcrpy cassette."""

    source: Path
    """The file skipped."""
    reason: str
    """Why it was skipped."""


@dataclass(frozen=True)
class Refused:
    """A file not converted, and why (the interaction and the field where there is one)."""

    source: Path
    """The vcrpy cassette."""
    reason: str
    """Why it could not be converted."""


@dataclass
class ImportSummary:
    """What [`import_paths`][ssemock.commands.import_vcr.import_paths] did, file by file."""

    converted: list[Converted] = field(default_factory=list)
    """The cassettes converted."""
    skipped: list[Skipped] = field(default_factory=list)
    """The files skipped, and why."""
    refused: list[Refused] = field(default_factory=list)
    """The cassettes that could not be converted, and why."""

    @property
    def written(self) -> list[Path]:
        """The ssemock cassettes written."""
        return [c.target for c in self.converted]

    @property
    def ok(self) -> bool:
        """Nothing refused (the command's exit code is 1 otherwise)."""
        return not self.refused

    def add(self, result: Converted | Skipped | Refused) -> None:
        """File ``result`` under its list."""
        if isinstance(result, Converted):
            self.converted.append(result)
        elif isinstance(result, Skipped):
            self.skipped.append(result)
        else:
            self.refused.append(result)

    def counts(self) -> str:
        """``3 converted, 1 skipped, 0 refused``."""
        return f"{len(self.converted)} converted, {len(self.skipped)} skipped, {len(self.refused)} refused"


def _vcr_files(folder: Path) -> list[Path]:
    """The candidate cassettes under ``folder``, recursively, in a stable order (hidden folders
    and files -- .git, a save's temp files -- left out)."""
    found = []
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        found += [
            Path(dirpath, f)
            for f in sorted(filenames)
            if not f.startswith(".") and f.lower().endswith(VCR_SUFFIXES)
        ]
    return found


def _sources(arg: str | os.PathLike[str]) -> tuple[Path, list[tuple[Path, bool]]] | Refused:
    """(the root the output tree mirrors, [(file, named explicitly)]) for one argument: a file,
    a folder (searched recursively) or a glob pattern (``**`` recursive)."""
    path = Path(arg)
    if path.is_dir():
        return path, [(f, False) for f in _vcr_files(path)]
    if os.path.lexists(path):  # a file, or something that is not one (reading it says so)
        return path.parent, [(path, True)]
    text = os.fspath(arg)
    if not glob.has_magic(text):
        return Refused(path, "no such file or folder")
    matches = sorted(glob.glob(text, recursive=True))
    if not matches:
        return Refused(path, "the pattern matches no file")
    parts = Path(text).parts
    fixed = next(i for i, part in enumerate(parts) if glob.has_magic(part))
    root = Path(*parts[:fixed]) if fixed else Path(".")
    files: list[tuple[Path, bool]] = []
    for match in map(Path, matches):
        if match.is_dir():
            files += [(f, False) for f in _vcr_files(match)]
        elif match.is_file():
            files.append((match, False))
    return root, files


def _target(source: Path, root: Path, out: Path | None, replace_json: bool) -> tuple[Path, str | None]:
    """Where the conversion of ``source`` goes, and a note when the plugin will not find it
    there. pytest-recording's ``cassettes/<module>/<test>.yaml`` becomes
    ``cassettes/<module>/<test>.json``: the path the ssemock plugin looks at by default."""
    stem = source.name[: -len(source.suffix)] if source.suffix.lower() in VCR_SUFFIXES else source.name
    name = file_name(stem)
    folder = source.parent if out is None else out / source.parent.relative_to(root)
    target = folder / name
    if _same_file(target, source) and not replace_json:
        target = folder / (name[: -len(".json")] + SSEMOCK_SUFFIX)
        return target, (
            f"{name} is vcrpy's cassette, so this went to {target.name}; the ssemock plugin "
            f"looks for {name}: import with --replace-json (or --out) to write it there"
        )
    return target, None


def _same_file(a: Path, b: Path) -> bool:
    return os.path.abspath(a) == os.path.abspath(b)


def _existing(target: Path, source: Path) -> Skipped | Refused | None:
    """What to do when ``target`` exists (None: write it). An ssemock cassette newer than its
    source is up to date; a real recording and a file that is not an ssemock cassette are never
    overwritten."""
    try:
        raw = read_file(target)
        data = orjson.loads(raw) if raw.lstrip().startswith(b"{") else None
    except (CassetteError, orjson.JSONDecodeError):
        data = None
    if not (is_ssemock_cassette(data) or _empty(data)):
        return Refused(
            source, f"{target} exists and is not an ssemock cassette: not overwritten (move it away)"
        )
    if _recorded(data):
        return Skipped(source, f"{target} was recorded by ssemock (it has chunk times): kept")
    if target.stat().st_mtime >= source.stat().st_mtime:
        return Skipped(source, f"up to date: {target} is newer than the vcrpy cassette")
    return None


def _recorded(data: Any) -> bool:
    """Whether an ssemock cassette holds a real recording (an import has every chunk at t=0):
    never replaced by an import, whatever the files' times say (a git checkout sets them)."""
    return any(
        isinstance(pair, list) and pair and pair[0] != 0
        for x in data["interactions"]
        for pair in x["response"].get("chunks") or []
    )


def _empty(data: Any) -> bool:
    """An empty cassette: the same text in vcrpy's JSON and in ssemock's format."""
    return isinstance(data, dict) and data.get("version") == VERSION and data.get("interactions") == []


def _refusal(source: Path, exc: CassetteError) -> Refused:
    where = "" if exc.interaction is None else f"interaction {exc.interaction}: "
    return Refused(source, where + exc.reason)


def _import_one(
    source: Path,
    target: Path,
    *,
    explicit: bool,
    force: bool,
    scrub_bodies: bool,
    note: str | None = None,
    claimed: dict[str, Path] | None = None,
) -> Converted | Skipped | Refused:
    """Convert one file; ``claimed``: the targets of the files converted so far in this run."""
    try:
        data = load_vcr(source)
    except CassetteError as exc:
        return _refusal(source, exc)
    if is_ssemock_cassette(data):
        return Skipped(source, "already an ssemock cassette")
    if source.suffix.lower() == ".json" and _empty(data):
        return Skipped(source, "an empty cassette (no interactions)")
    if not is_vcr_cassette(data):
        if explicit:
            return Refused(source, "not a vcrpy cassette: no 'interactions' list")
        return Skipped(source, "not a vcrpy cassette")
    if claimed is not None:
        other = claimed.setdefault(os.path.abspath(target), source)
        if other is not source:
            return Refused(source, f"its target {target} is also the target of {other}: rename one")
    if target.exists() and not _same_file(target, source):
        existing = _existing(target, source)
        if existing is not None:
            return existing
    dropped: list[str] = []
    try:
        size = os.stat(source).st_size
        cassette = from_vcr(
            data, source, max_body_bytes=BODY_FREE + BODY_EXPANSION * size, force=force, dropped=dropped
        )
    except CassetteError as exc:
        return _refusal(source, exc)
    scrubbed: list[str] = []
    if scrub_bodies:
        from . import redact

        scrubbed = redact(cassette)
    leaks = find_secrets(cassette)
    if leaks:
        return Refused(
            source,
            f"a secret is left after redaction: {'; '.join(leaks)}: refusing to write "
            f"{target}: remove the secrets from the vcrpy cassette (or filter them when "
            "recording), or import with --scrub-bodies",
        )
    try:
        cassette.save(target, scan_secrets=False)  # scanned just above
    except CassetteError as exc:  # a check at save time refused it
        return _refusal(source, exc)
    except OSError as exc:
        return Refused(source, f"cannot write {target}: {exc.strerror or exc}")
    return Converted(source, target, len(cassette.interactions), tuple(dropped), tuple(scrubbed), note)


def import_paths(
    paths: Iterable[str | os.PathLike[str]],
    *,
    out: str | os.PathLike[str] | None = None,
    force: bool = False,
    scrub_bodies: bool = False,
    replace_json: bool = False,
) -> ImportSummary:
    """Import every vcrpy cassette that ``paths`` name -- files, folders (searched recursively
    for .yaml, .yml and .json) and glob patterns (``**`` recursive) -- and say what happened to
    each file.

    ``out=None`` writes each cassette beside its source, ``<name>.yaml`` -> ``<name>.json``, so
    pytest-recording's ``cassettes/<module>/<test>.yaml`` lands where the ssemock plugin looks
    by default; ``out=FOLDER`` mirrors the tree under each argument into ``FOLDER``. A vcrpy
    ``.json`` cassette cannot be replaced beside itself: its conversion goes to
    ``<name>.ssemock.json``, unless ``replace_json`` replaces the vcrpy file by it.

    Per file: *skipped* when it is already an ssemock cassette or its conversion is newer than
    it (or, found in a folder, when it is no vcrpy cassette); *refused*, with the file, the
    interaction and the field, when something cannot be carried over (``force`` drops such a
    field and lists it), when a secret is left (``scrub_bodies`` replaces those), or when the
    target exists and is not an ssemock cassette. Nothing is half-written (saves are atomic)."""
    summary = ImportSummary()
    out_dir = None if out is None else Path(out)
    seen: set[str] = set()
    work: list[tuple[Path, bool, Path, str | None]] = []  # (source, named explicitly, target, note)
    for arg in paths:
        found = _sources(arg)
        if isinstance(found, Refused):
            summary.add(found)
            continue
        root, files = found
        for source, explicit in files:
            key = os.path.abspath(source)
            if key not in seen:
                seen.add(key)
                work.append((source, explicit, *_target(source, root, out_dir, replace_json)))
    # a cassette an earlier run wrote, found again in the folder: its source's line tells about it
    targets = {os.path.abspath(t) for s, _, t, _ in work if not _same_file(s, t)}
    claimed: dict[str, Path] = {}
    for source, explicit, target, note in work:
        if not explicit and os.path.abspath(source) in targets:
            continue
        summary.add(
            _import_one(
                source,
                target,
                explicit=explicit,
                force=force,
                scrub_bodies=scrub_bodies,
                note=note,
                claimed=claimed,
            )
        )
    return summary


def import_file(
    source: str | os.PathLike[str],
    target: str | os.PathLike[str],
    *,
    force: bool = False,
    scrub_bodies: bool = False,
) -> ImportSummary:
    """Import one vcrpy cassette file to the ssemock cassette ``target`` (as [`import_paths`][ssemock.commands.import_vcr.import_paths])."""
    summary = ImportSummary()
    source_path, target_path = Path(source), Path(target)
    if _same_file(source_path, target_path):
        summary.add(Refused(source_path, "the output is the vcrpy cassette itself: use --replace-json"))
    else:
        summary.add(
            _import_one(source_path, target_path, explicit=True, force=force, scrub_bodies=scrub_bodies)
        )
    return summary
