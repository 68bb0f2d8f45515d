"""One scan of a whole cassette, in every form a secret takes there.

Every write of cassette data runs [`scan_cassette`][ssemock.scan.walk.scan_cassette]: each
field of each interaction is read as stored and decoded (JSON and percent escapes,
``Content-Encoding`` layers, JSON, forms, multipart, URLs in headers, base64 values), a stream
is walked event by event, and the text a stream splits into pieces (a key streamed back in
deltas) is read reassembled, per JSON path and through the reference accumulator. The shapes
and credential names it looks for are `ssemock.scan.shapes`'; a finding never holds the value.
"""

from __future__ import annotations

import dataclasses
import functools
import re
import zlib
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import unquote, urlsplit

import orjson

from .. import framing
from .credential_shapes import _WHOLE, B64_RUN, REDACTED, base64_text, has_b64_run, scan
from .fields import (
    _FORM_MAX,
    FORM,
    BodyHits,
    credential_member,
    credential_member_name,
    credential_name,
    credential_value,
    query_spans,
    scan_body,
    scan_header,
    scan_named,
    scan_url,
)
from .large_streams import large_stream
from .messages import value_shape
from .prescanned import prescanned

__all__ = [
    "Finding",
    "decode_content",
    "is_stream",
    "plain_key",
    "scan_cassette",
    "scan_interaction",
    "wide_charset",
]


@dataclass(frozen=True)
class Finding:
    """One secret in a cassette: where (interaction, field, and the place inside the field's
    decoded form), which rule found it, and what the value looks like -- never the value."""

    interaction: int
    """The index of the interaction it is in."""
    field: str
    """Which field: ``request.url``, ``request.headers['x']``, ``request.body``, ``response.body``, ..."""
    rule: str
    """What was found: ``an Anthropic key (sk-ant-...)``, ``a credential-named field 'password'``."""
    shape: str
    """The value's length and character classes, e.g. ``20 chars: digits - : T Z``."""
    preview: str
    """The shape's public prefix and ``***``, never a character of the secret."""
    path: str = ""
    """Where inside the field: ``$.messages[0].content``, ``event 3 $.delta.text``, ``gzip``, ``base64``."""
    start: int | None = None
    """Where it starts in the field as stored (None: found only in a decoded form)."""
    end: int | None = None
    """Where it ends in the field as stored (None: found only in a decoded form)."""

    @property
    def where(self) -> str:
        """The field and the place inside it."""
        return f"{self.field} {self.path}" if self.path else self.field

    def __str__(self) -> str:
        at = f", at offset {self.start}" if self.start is not None else ""
        return (
            f"interaction {self.interaction} {self.where}: {self.rule} ({self.preview!r}, {self.shape}{at})"
        )


class _InteractionLike(Protocol):
    request: Any
    response: Any


class _CassetteLike(Protocol):
    interactions: list[Any]


_DEEP_MAX = 2 << 20  # a stream up to this size is walked event by event and folded by its accumulator
_REASSEMBLE_MAX = 8 << 20  # reassembled text kept per path, at most (a key is short; a body may not be)
_DEPTH = 4  # decoded forms nested in each other (base64 in JSON in base64 ...), at most
_DECODED_MAX = 256 << 20  # bytes a Content-Encoding layer may decode to (no decompression bomb)


@functools.lru_cache(maxsize=4096)
def _json_key(path: str, key: str) -> str:
    return f"{path}.{key}" if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]*", key) else f"{path}[{key!r}]"


_INDEX_NAME = re.compile(r"index|\w+_index|\w+Index")  # index, output_index, contentBlockIndex
_LABEL = re.compile(r"\{\w+=-?\d+\}")


def _labels(value: dict[Any, Any], keys: tuple[Any, ...]) -> str:
    """The index members of an object (``{index=1}``): what tells apart the pieces of two streamed
    fields at one JSON path (two tool calls, two choices, two content blocks), whatever the
    protocol: ``$.choices[]{index=0}.delta.tool_calls[]{index=1}.function.arguments``."""
    names = _index_names(keys)
    return "".join(f"{{{k}={value[k]}}}" for k in names if type(value[k]) is int) if names else ""


@functools.lru_cache(maxsize=4096)  # a stream's events repeat a few objects' keys at a few paths
def _members(keys: tuple[Any, ...], path: str, labelled: str) -> tuple[Any, ...]:
    """Per key of an object at ``path`` whose piece key is ``labelled``: (key, name, its path, its
    piece key, the keys its strings join under, whether its name may say credential)."""
    out = [(k, str(k), _json_key(path, str(k)), _json_key(labelled, str(k))) for k in keys]
    return tuple((k, n, w, p, _piece_keys(p), credential_member_name(n)) for k, n, w, p in out)


@functools.lru_cache(maxsize=4096)
def _piece_keys(key: str) -> tuple[str, ...]:
    plain = plain_key(key)
    return (key,) if plain == key else (key, plain)


@functools.lru_cache(maxsize=4096)
def _index_names(keys: tuple[Any, ...]) -> tuple[Any, ...]:
    """Which of an object's keys are named like an index (the events of a stream share a few key sets)."""
    return tuple(k for k in keys if _INDEX_NAME.fullmatch(str(k)))


@functools.lru_cache(maxsize=4096)
def plain_key(key: str) -> str:
    """A piece key without its index labels: the pieces of one path whatever their index (an
    ``index`` member that counts events rather than naming a field)."""
    return _LABEL.sub("", key)


_UTF16_BOMS = {
    b"\xff\xfe\x00\x00": "utf-32",
    b"\x00\x00\xfe\xff": "utf-32",
    b"\xff\xfe": "utf-16",
    b"\xfe\xff": "utf-16",
}


def wide_charset(content_type: str, body: bytes) -> str | None:
    """The UTF-16 or UTF-32 codec a body is written in (its ``charset=``, else a byte order mark,
    else every other byte NUL), or None (UTF-8, ASCII or another byte charset: read as stored)."""
    m = re.search(r"charset=\"?([\w-]+)", content_type, re.I)
    if m is not None:
        name = m.group(1).lower().replace("_", "-")
        return name if name.startswith(("utf-16", "utf-32", "ucs-2")) and name != "ucs-2" else None
    for bom, codec in _UTF16_BOMS.items():
        if body.startswith(bom):
            return codec
    head = body[:4096]
    if len(head) >= 8:
        even, odd = head[0::2].count(0), head[1::2].count(0)
        if odd >= 0.3 * len(head) / 2 and even == 0:
            return "utf-16-le"
        if even >= 0.3 * len(head) / 2 and odd == 0:
            return "utf-16-be"
    return None


# a string worth decoding further: JSON in it, a URL or a form, a base64 run
_WORTH = re.compile(r"[{\[]|://|=|[A-Za-z0-9+/_\-]{16}")


class _Scan:
    """The findings of one interaction, and the string pieces of its decoded events by path (to
    scan them reassembled: a key streamed back in deltas)."""

    def __init__(self, index: int) -> None:
        self.index = index
        self.found: list[Finding] = []
        self.pieces: dict[str, list[str]] = {}
        self.sizes: dict[str, int] = {}
        self.collect = False
        self.prefix = ""  # where the JSON being walked sits ("event 3"), kept out of its paths
        self.done: set[str] = set()  # strings already decoded further (an id repeated in every event)
        self.runs: set[str] = set()  # base64 runs already decoded
        # the pieces a collected string's decoded forms gave (a base64 payload's JSON), by piece key
        # and string: a repeated delta (two 1-character payloads alike) gives them again, undecoded
        self.nested: dict[tuple[str, str], list[tuple[str, str]]] = {}
        self.recording: list[list[tuple[str, str]]] = []

    def add(
        self,
        field: str,
        rule: str,
        value: str | bytes,
        preview: str,
        path: str = "",
        start: int | None = None,
        end: int | None = None,
    ) -> None:
        self.found.append(Finding(self.index, field, rule, value_shape(value), preview, path, start, end))

    # -- text in any form -----------------------------------------------------------------------

    def text(
        self, field: str, text: str, path: str, depth: int, shapes: bool = True, key: str | None = None
    ) -> None:
        """Scan ``text``, a decoded form of (part of) a field: shapes, then what it decodes to --
        JSON (credential-named keys, nested JSON), form and URL parameters, base64 text. ``key``:
        the piece key of a collected string (a streamed delta): the strings of JSON it decodes to
        (a base64 payload's event) are collected too, under keys that extend it."""
        if shapes:
            for s in scan(text):
                self.add(field, s.what, text[s.start : s.end], s.preview, path)
        parsed = _json_or_none(text) if depth < _DEPTH else _NOT_JSON
        if parsed is not _NOT_JSON:
            state, (self.prefix, self.collect) = (self.prefix, self.collect), (path, key is not None)
            self.json(field, parsed, "$", depth + 1, "$" if key is None else f"{key} json $")
            self.prefix, self.collect = state
            return
        self.named(field, text, path)
        if depth < _DEPTH and len(text) <= _WHOLE * 16 and has_b64_run(text):
            whole = text.strip()
            for run in set(B64_RUN.findall(text)) - (self.runs if key is None else set()):
                self.runs.add(run)
                decoded = base64_text(run)
                if decoded is not None:
                    nested = f"{key} base64" if key is not None and run == whole else None
                    self.text(field, decoded, f"{path} base64".strip(), depth + 1, key=nested)

    def collected(self, key: str, value: str, keys: tuple[str, ...] | None = None) -> None:
        """A string piece of a streamed field, joined with the others under its piece key (with its
        index labels, and without them: ``keys``, when known)."""
        for k in _piece_keys(key) if keys is None else keys:
            size = self.sizes.get(k, 0)
            if size < _REASSEMBLE_MAX:
                self.pieces.setdefault(k, []).append(value)
                self.sizes[k] = size + len(value)
            for record in self.recording:
                record.append((k, value))

    def named(self, field: str, text: str, path: str) -> None:
        """Credential-named parameters in a form body, a query string or a URL's query or fragment."""
        candidates = (
            [text]
            if len(text) <= _FORM_MAX and "=" in text and FORM.match(text.encode("utf-8", "replace"))
            else []
        )
        if "://" in text or text.startswith(("/", "?", "#")):
            for m in re.finditer(r"""(?:[a-z][a-z0-9+.-]*://|^[/?#])[^\s"'<>]*""", text, re.I):
                parts = urlsplit(m.group())
                candidates += [parts.query, parts.fragment]
                if parts.password and parts.password != REDACTED:
                    self.add(field, "a password in the URL", parts.password, "***", path)
        for form in candidates:
            for name, a, b in query_spans(form):
                value = form[a:b]
                if credential_name(name) and credential_value(unquote(value.replace("+", " "))):
                    self.add(field, f"a credential-named parameter {name!r}", value, "***", path)
                else:
                    named = scan_named(name, value)
                    if named is not None:
                        self.add(field, named.what, value, "***", path)

    def json(self, field: str, value: Any, path: str, depth: int, key: str = "$") -> None:
        """Credential-named keys whatever their value; string leaves decoded further. ``key``: the
        piece key of ``value`` (its path without list positions, with its objects' index members:
        `_labels`), under which a collected string joins the same field's other pieces."""
        if isinstance(value, dict):
            keys = tuple(value)
            for k, name, where, piece, pieces, named in _members(keys, path, key + _labels(value, keys)):
                v = value[k]
                if named and credential_member(name, v):
                    self.add(
                        field,
                        f"a credential-named field {name!r}",
                        str(v),
                        "***",
                        f"{self.prefix} {where}".strip(),
                    )
                if type(v) is str and (depth >= _DEPTH or not _WORTH.search(v)):  # a plain leaf, inline
                    if self.collect:
                        self.collected(piece, v, pieces)
                elif isinstance(v, (dict, list, str)):
                    self.json(field, v, where, depth, piece)
        elif isinstance(value, list):
            for i, v in enumerate(value):
                if isinstance(v, (dict, list, str)):
                    self.json(field, v, f"{path}[{i}]", depth, key + "[]")
        elif isinstance(value, str):
            if self.collect:
                self.collected(key, value)
            if depth >= _DEPTH or not _WORTH.search(value):
                return
            if value in self.done:
                if self.collect:  # a repeated delta: the pieces its decoded forms gave, again
                    for k, piece in self.nested.get((key, value), ()):
                        self.collected(k, piece)
                return
            self.done.add(value)
            prefix, self.prefix = self.prefix, ""
            if self.collect:
                record: list[tuple[str, str]] = []
                self.recording.append(record)
                self.text(field, value, f"{prefix} {path}".strip(), depth, shapes=False, key=key)
                self.recording.pop()
                if record:
                    self.nested[(key, value)] = record
            else:
                self.text(field, value, f"{prefix} {path}".strip(), depth, shapes=False)
            self.prefix = prefix

    # -- the fields of an interaction ----------------------------------------------------------------

    def header(self, side: str, name: str, value: str) -> None:
        field = f"{side}.headers[{name!r}]"
        for s in scan_header(name, value):
            self.add(field, s.what, value[s.start : s.end], s.preview, "", s.start, s.end)
        self.text(field, value, "", 1, shapes=False)

    def url(self, url: str) -> None:
        for s in scan_url(url):
            self.add("request.url", s.what, url[s.start : s.end], s.preview, "", s.start, s.end)
        self.named("request.url", url, "")
        for m in B64_RUN.finditer(url):
            decoded = base64_text(m.group())
            if decoded is not None:
                self.text("request.url", decoded, "base64", 1)

    def body(self, field: str, body: bytes, headers: list[tuple[str, str]], url: str, stream: bool) -> None:
        """A body: raw, each Content-Encoding layer decoded, its events, their data reassembled."""
        self.raw(field, body)
        content_type = next((v for k, v in headers if k.lower() == "content-type"), "") or ""
        path = ""
        encoding = next((v for k, v in headers if k.lower() == "content-encoding"), "")
        if encoding:
            decoded, layers = decode_content(body, encoding)
            if layers:
                body, path = decoded, " ".join(layers)
                for s in scan(body):
                    self.add(field, s.what, body[s.start : s.end], s.preview, path)
        charset = wide_charset(content_type, body) if len(body) <= _DECODED_MAX else None
        if charset is not None:  # UTF-16/32: every ASCII character of a key has a NUL beside it
            body = body.decode(charset, "replace").encode("utf-8")
            path = f"{path} {charset}".strip()
            for s in scan_body(body):
                self.add(field, s.what, body[s.start : s.end], s.preview, path)
        if "multipart/" in content_type.lower():
            self.multipart(field, body, content_type, path)
            return
        if stream and len(body) > _DEEP_MAX:  # before any copy of the whole body: memory stays bounded
            self.members(field, body, path)
            return
        text = body.decode("utf-8", "replace") if len(body) <= _DECODED_MAX else ""
        if not stream or not body:
            if text:
                self.text(field, text, path, 0, shapes=False)
            return
        self.events(field, body, text, content_type, url, path)

    def raw(self, field: str, body: bytes, hits: BodyHits | None = None) -> None:
        """A body as stored: shapes, escapes, credential-named members (`scan_body`)."""
        for s in scan_body(body, hits):
            self.add(field, s.what, body[s.start : s.end], s.preview, "", s.start, s.end)

    def joined_messages(self, field: str, payloads: list[tuple[int, bytes]]) -> None:
        """The strings of a WebSocket session's JSON messages (one direction) joined per piece key
        across the messages, as a stream's events are (each message was scanned alone before)."""
        if len(payloads) < 2:
            return
        self.collect = True
        for k, payload in payloads:
            parsed = (
                _json_or_none(payload.decode("utf-8", "replace")) if len(payload) <= _DEEP_MAX else _NOT_JSON
            )
            if parsed is not _NOT_JSON:
                self.prefix = f"message {k}"
                self.json(field, parsed, "$", 1)
        self.prefix, self.collect = "", False
        for where, pieces in list(self.pieces.items()):
            if len(pieces) > 1:
                self.text(field, "".join(pieces), f"reassembled {where}", 2)
        self.pieces.clear()
        self.sizes.clear()
        self.nested.clear()

    def members(self, field: str, body: bytes, path: str) -> None:
        """A stream too large to walk event by event: `ssemock.scan.large_streams.large_stream`."""
        large_stream(body, path, functools.partial(self.text, field))

    def multipart(self, field: str, body: bytes, content_type: str, path: str) -> None:
        m = re.search(r'boundary="?([^";]+)"?', content_type, re.I)
        if m is None:
            return
        for part in body.split(b"--" + m.group(1).encode("latin-1")):
            head, sep, value = part.partition(b"\r\n\r\n")
            if not sep:
                head, sep, value = part.partition(b"\n\n")
            name = re.search(rb'name="([^"]*)"', head)
            text = value.rstrip(b"\r\n").decode("utf-8", "replace")
            where = f"{path} part {name.group(1).decode('utf-8', 'replace')!r}".strip() if name else path
            if name and credential_name(name.group(1).decode("utf-8", "replace")) and credential_value(text):
                self.add(
                    field,
                    f"a credential-named form field {name.group(1).decode('utf-8', 'replace')!r}",
                    text,
                    "***",
                    where,
                )
            self.text(field, text, where, 1, shapes=bool(path))

    def events(self, field: str, body: bytes, text: str, content_type: str, url: str, path: str) -> None:
        """The decoded events' data, then the text reassembled from their pieces: every string at
        one JSON path across events joined (a key streamed a few characters an event, by any protocol)."""
        try:
            kind = framing.detect(content_type, body)
            events = kind.decode(body)
        except (ValueError, TypeError):
            if text:
                self.text(field, text, path, 0, shapes=False)
            return
        plain: list[str] = []
        for k, event in enumerate(events):
            self.event(field, k, event, path, plain)
        self.joined(field, path, plain)

    def event(self, field: str, k: int, event: Any, path: str, plain: list[str]) -> None:
        """Event ``k`` of a stream: its data scanned, its string pieces collected (the data of a
        non-JSON one appended to ``plain``). `events` calls it for each event of a whole body;
        `ssemock.scan.incremental` for each one as a recording decodes it."""
        self.collect = True
        where = f"{path} event {k}".strip()
        data = getattr(event, "data", None)
        payload = getattr(event, "payload", None)
        text_form = (
            data
            if isinstance(data, str)
            else (payload.decode("utf-8", "replace") if isinstance(payload, bytes) else None)
        )
        if text_form is not None:
            parsed = _json_or_none(text_form)
            if parsed is _NOT_JSON:
                plain.append(text_form)
                self.text(field, text_form, where, 1, shapes="\n" in text_form or bool(path))
                self.collect = False
                return
            event = parsed
        self.prefix = where
        self.json(field, event, "$", 1)
        self.prefix = ""
        self.collect = False

    def joined(self, field: str, path: str, plain: list[str]) -> None:
        """The text reassembled from a stream's events (after the last `event`)."""
        joined = {"data": "".join(plain), **{p: "".join(v) for p, v in self.pieces.items() if len(v) > 1}}
        seen: set[str] = set()  # a text joined under two keys (with and without its index labels)
        for where, whole in joined.items():  # is scanned once: the second finds nothing new
            if whole and whole not in seen:
                seen.add(whole)
                self.text(field, whole, f"{path} reassembled {where}".strip(), 2)
        self.pieces.clear()
        self.sizes.clear()
        self.nested.clear()


_NOT_JSON = object()


def _json_or_none(text: str) -> Any:
    """``text`` parsed as a JSON object or array, else `_NOT_JSON`."""
    if text.lstrip()[:1] not in ("{", "["):
        return _NOT_JSON
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return _NOT_JSON


def decode_content(body: bytes, encoding: str) -> tuple[bytes, list[str]]:
    """``body`` with each ``Content-Encoding`` layer removed (``gzip, gzip``: two; the last listed
    is undone first), and the layers removed; stops at a layer it cannot decode."""
    layers: list[str] = []
    for name in reversed([e.strip().lower() for e in encoding.split(",") if e.strip()]):
        if name == "identity":
            continue
        try:
            if name in ("gzip", "x-gzip"):
                z = zlib.decompressobj(16 + zlib.MAX_WBITS)
                body = z.decompress(body, _DECODED_MAX)
            elif name == "deflate":
                try:
                    body = zlib.decompressobj().decompress(body, _DECODED_MAX)
                except zlib.error:
                    body = zlib.decompressobj(-zlib.MAX_WBITS).decompress(body, _DECODED_MAX)
            elif name == "br":
                import brotli

                body = brotli.decompress(body)
            elif name == "zstd":
                import zstandard

                body = zstandard.ZstdDecompressor().decompressobj().decompress(body)
            else:
                break
        except (zlib.error, ImportError, ValueError, OSError, Exception):
            break
        layers.append(name)
    return body, layers


def is_stream(x: _InteractionLike) -> bool:
    """Whether an interaction's response is a stream (its events are read one by one)."""
    ct = (x.response.header("content-type") or "").lower()
    return (
        len(x.response.ends) > 1
        or "event-stream" in ct
        or "ndjson" in ct
        or "eventstream" in ct
        or "jsonl" in ct
        or "json-seq" in ct
        or ("json" in ct and x.response.body.lstrip()[:1] == b"[")
    )


def scan_interaction(x: _InteractionLike, index: int = 0) -> list[Finding]:
    """Every secret in one interaction, in every form (see `scan_cassette`)."""
    s = _Scan(index)
    req, resp = x.request, x.response
    for found in scan(req.method):
        s.add("request.method", found.what, req.method[found.start : found.end], found.preview)
    s.url(req.url)
    for k, v in req.headers:
        s.header("request", k, v)
    if req.body:
        s.body("request.body", req.body, req.headers, req.url, stream=False)
    for k, v in resp.headers:
        s.header("response", k, v)
    if resp.body:
        known = prescanned(resp) if is_stream(x) else None
        if known is None:
            s.body("response.body", resp.body, resp.headers, req.url, stream=is_stream(x))
        else:  # scanned as it was recorded (`ssemock.scan.incremental`): the same findings
            s.found += [dataclasses.replace(f, interaction=index) for f in known]
    if resp.error:
        s.text("response.error", orjson.dumps(resp.error).decode(), "", 0)
    session = getattr(x, "websocket", None)
    if session is not None:  # a WebSocket session: every message, and every control frame's payload
        for k, m in enumerate(session.messages):
            s.body(f"websocket.messages[{k}]", m.payload, [], req.url, stream=False)
        for direction in ("send", "recv"):  # a key streamed across messages: their pieces joined
            s.joined_messages(
                f"websocket.messages ({direction})",
                [(k, m.payload) for k, m in enumerate(session.messages) if m.direction == direction],
            )
        for k, note in enumerate(session.frame_map):
            if note.data:
                s.body(f"websocket.frames[{k}]", note.data, [], req.url, stream=False)
        if session.close.reason:
            s.text("websocket.close.reason", session.close.reason, "", 0)
    return _first_per_place(s.found)


def _first_per_place(found: list[Finding]) -> list[Finding]:
    """One finding per (field, rule): the one found where it is stored if any (it has offsets),
    else the first one found decoded."""
    out: dict[tuple[str, str], Finding] = {}
    for f in sorted(found, key=lambda f: f.start is None):
        out.setdefault((f.field, f.rule), f)
    return sorted(out.values(), key=found.index)


def scan_cassette(cassette: _CassetteLike) -> list[Finding]:
    """Every secret in a cassette, in every form a secret takes there, in every field of every
    interaction (request method, URL with its query and fragment, headers, body; response headers,
    body, recorded error):

    * the field as stored, and with JSON escapes and percent-encoding undone;
    * every ``Content-Encoding`` layer decoded (stacked ones too);
    * JSON parsed: keys named like credentials (``password``, ``api_key``, ``client_secret``,
      ``access_token``, ...) whatever their value, and JSON nested in strings (tool arguments);
    * form, multipart, query and fragment parameters named like credentials, URLs in headers
      (``location``, ``link``) and bodies;
    * base64 and base64url values that decode to text (Bedrock's ``{"bytes": ...}`` payloads);
    * each decoded event's data (SSE, JSON lines, JSON arrays, AWS eventstream frames);
    * the text reassembled from the events: every string at one JSON path joined across events,
      and the reference accumulator's text, refusal, thinking and tool-call arguments (a key the
      model streams back in 1-character deltas is found).

    Every write of cassette data runs it (``Cassette.save`` refuses unless told
    ``scan_secrets=False``); a finding never holds the value, only its shape."""
    return [f for i, x in enumerate(cassette.interactions) for f in scan_interaction(x, i)]
