"""One scan of a whole cassette, in every form a secret takes there.

Every write of cassette data runs [`scan_cassette`][ssemock.scan.walk.scan_cassette]: each
field of each interaction is read as stored and decoded (JSON and percent escapes,
``Content-Encoding`` layers, JSON, forms, multipart, URLs in headers, base64 values), a stream
is walked event by event, and the text a stream splits into pieces (a key streamed back in
deltas) is read reassembled, per JSON path and through the reference accumulator. The shapes
and credential names it looks for are `ssemock.scan.shapes`'; a finding never holds the value."""

from __future__ import annotations

import dataclasses
import functools
import operator
import re
from collections.abc import Callable
from typing import Any, Protocol
from urllib.parse import unquote

import orjson

from .. import framing
from .body_forms import DECODED_MAX, decode_content, message_encoding, wide_charset
from .credential_shapes import (
    _WHOLE,
    REDACTED,
    b64_findall,
    base64_bytes,
    base64_joined,
    base64_text,
    bytes_text,
    has_b64_run,
    scan,
    scan_binary,
)
from .event_plans import BATCH_FIRST, REASSEMBLE_MAX, Shapes, labels, members, piece_keys, plain_key, worth
from .fields import (
    _FORM_MAX,
    FORM,
    URL,
    BodyHits,
    credential_member,
    credential_name,
    credential_value,
    query_spans,
    scan_body,
    scan_header,
    scan_named,
    scan_url,
    url_parts,
)
from .findings import Finding, first_per_place
from .grpc_calls import scan_call
from .large_streams import cut_after, large_stream, text_scan
from .messages import value_shape
from .model_content import exempt, generated, path_keys, prose_words, raw_exempt
from .prescanned import prescanned, prescanned_messages
from .stdio_sessions import scan_session
from .subprotocols import credential_start, subprotocols
from .word_lists import scan_spoken, words_of

__all__ = [
    "Finding",
    "decode_content",
    "is_stream",
    "plain_key",
    "scan_cassette",
    "scan_interaction",
    "wide_charset",
]


class _InteractionLike(Protocol):
    request: Any
    response: Any


class _CassetteLike(Protocol):
    interactions: list[Any]
    stdio: list[Any]


_BATCH_MAX = 256  # events read together at most, after runs of all those tried
_DATA = operator.attrgetter("data")
_DEEP_MAX = 2 << 20  # a stream up to this size is walked event by event and folded by its accumulator
_DEPTH = 4  # decoded forms nested in each other (base64 in JSON in base64 ...), at most
_NAMED_FIELD = "a credential-named field "  # the rule `model_content.exempt` may clear


def _no_prose() -> frozenset[str]:
    return frozenset()


class _Scan:
    """The findings of one interaction, and the string pieces of its decoded events by path (to
    scan them reassembled: a key streamed back in deltas)."""

    def __init__(self, index: int) -> None:
        self.index = index
        self.found: list[Finding] = []
        self.pieces: dict[str, list[str]] = {}
        # characters collected under every piece key together (at least): while under the cap, no
        # piece list is near it; past it, each key's size (`sizes`, worked out then) is kept
        self.total = 0
        self.sizes: dict[str, int] | None = None
        self.shapes = Shapes()  # the plans of a stream's event shapes
        self.collect = False
        self.prefix = ""  # where the JSON being walked sits ("event 3"), kept out of its paths
        self.done: set[str] = set()  # strings already decoded further (an id repeated in every event)
        self.runs: set[str] = set()  # base64 runs already decoded
        # the pieces a collected string's decoded forms gave (a base64 payload's JSON), by piece key
        # and string: a repeated delta (two 1-character payloads alike) gives them again, undecoded
        self.nested: dict[tuple[str, str], list[tuple[str, str]]] = {}
        self.recording: list[list[tuple[str, str]]] = []
        self.prose: Callable[[], frozenset[str]] = _no_prose  # the words of the request's prose

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
        if (
            rule.startswith(_NAMED_FIELD)
            and isinstance(value, str)
            and exempt(value, lambda: generated(path_keys(path)), self.prose)
        ):
            return  # a word of the prompt, or a model's tool-call argument (`ssemock.scan.model_content`)
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
            whole = text.strip() if key is not None else None  # (a copy of the text: only for a piece key)
            for run in set(b64_findall(text)) - (self.runs if key is None else set()):
                self.runs.add(run)
                found = base64_bytes(run)
                decoded = None if found is None else bytes_text(*found)
                if decoded is not None:
                    nested = f"{key} base64" if key is not None and run == whole else None
                    self.text(field, decoded[0], f"{path} base64".strip(), depth + 1, key=nested)
                elif found is not None:  # binary data (audio, an image): a key's own shape in it
                    self.binary(field, found[0], f"{path} base64".strip())

    def binary(self, field: str, data: bytes, path: str) -> None:
        """Binary data decoded from a field (base64 of audio, an image): the keys found by their
        shape in it (no name says what a byte means there)."""
        for s in scan_binary(data):
            self.add(field, s.what, data[s.start : s.end], s.preview, f"{path} binary")

    def collected(self, key: str, value: str, keys: tuple[str, ...] | None = None) -> None:
        """A string piece of a streamed field, joined with the others under its piece key (with its
        index labels, and without them: ``keys``, when known)."""
        for k in piece_keys(key) if keys is None else keys:
            if self.total < REASSEMBLE_MAX:  # every key's size is at most the total: under the cap
                self.pieces.setdefault(k, []).append(value)
                self.total += len(value)
            else:
                if self.sizes is None:
                    self.sizes = {p: sum(map(len, v)) for p, v in self.pieces.items()}
                size = self.sizes.get(k, 0)
                if size < REASSEMBLE_MAX:
                    self.pieces.setdefault(k, []).append(value)
                    self.sizes[k] = size + len(value)
            for record in self.recording:
                record.append((k, value))

    def named(self, field: str, text: str, path: str) -> None:
        """Credential-named parameters in a form body, a query string or a URL's query or fragment."""
        whole = len(text) <= _FORM_MAX and "=" in text and FORM.match(text.encode("utf-8", "replace"))
        candidates = [text] if whole else []
        # ":" first: one memchr (a 3-character search costs ~10x more on text without a colon)
        if (":" in text and "://" in text) or text.startswith(("/", "?", "#")):
            for m in URL.finditer(text):
                query, fragment, password = url_parts(m.group("url"))
                candidates += [query, fragment]
                if password and password != REDACTED:
                    self.add(field, "a password in the URL", password, "***", path)
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
        `ssemock.scan.event_plans.labels`), under which a collected string joins the same field's other pieces."""
        if isinstance(value, dict):
            keys = tuple(value)
            for k, name, where, piece, pieces, named in members(keys, path, key + labels(value, keys)):
                v = value[k]
                if named and credential_member(name, v):
                    self.add(
                        field,
                        f"a credential-named field {name!r}",
                        str(v),
                        "***",
                        f"{self.prefix} {where}".strip(),
                    )
                if type(v) is str and (depth >= _DEPTH or not worth(v)):  # a plain leaf, inline
                    if self.collect:
                        self.collected(piece, v, pieces)
                elif isinstance(v, (dict, list, str)):
                    self.json(field, v, where, depth, piece)
        elif isinstance(value, list):
            words = words_of(value)
            if words is not None:
                scan_spoken(self, field, words, path, depth, key)
            for i, v in enumerate(value):
                if isinstance(v, (dict, list, str)):
                    self.json(field, v, f"{path}[{i}]", depth, key + "[]")
        elif isinstance(value, str):
            if self.collect:
                self.collected(key, value)
            if depth >= _DEPTH or not worth(value):
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
        if name.lower() == "sec-websocket-protocol":
            self.subprotocols(field, value)
        self.text(field, value, "", 1, shapes=False)

    def subprotocols(self, field: str, value: str) -> None:
        """WebSocket subprotocols (a ``Sec-WebSocket-Protocol`` value, or one the session kept):
        a credential after a credential name, whatever it looks like (`ssemock.scan.subprotocols`)."""
        for a, b in subprotocols(value):
            start = credential_start(value[a:b])
            if start is not None and credential_value(value[a + start : b]):
                name = value[a : a + start - 1]
                self.add(
                    field,
                    f"a credential in the subprotocol {name!r}",
                    value[a + start : b],
                    "***",
                    "",
                    a + start,
                    b,
                )

    def url(self, url: str) -> None:
        for s in scan_url(url):
            self.add("request.url", s.what, url[s.start : s.end], s.preview, "", s.start, s.end)
        self.named("request.url", url, "")
        for run in b64_findall(url):
            decoded = base64_text(run)
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
        charset = wide_charset(content_type, body) if len(body) <= DECODED_MAX else None
        if charset is not None:  # UTF-16/32: every ASCII character of a key has a NUL beside it
            body = body.decode(charset, "replace").encode("utf-8")
            path = f"{path} {charset}".strip()
            for s in scan_body(body):
                self.add(field, s.what, body[s.start : s.end], s.preview, path)
        if "multipart/" in content_type.lower():
            self.multipart(field, body, content_type, path)
            return
        if stream and len(body) > _DEEP_MAX:  # before any copy of the whole body: memory stays bounded
            self.members(field, body, path, content_type)
            return
        if not stream or not body:
            text = body.decode("utf-8", "replace") if len(body) <= DECODED_MAX else ""
            if text:
                self.text(field, text, path, 0, shapes=False)
            return
        self.events(field, body, content_type, url, path)

    def raw(self, field: str, body: bytes, hits: BodyHits | None = None) -> None:
        """A body as stored: shapes, escapes, credential-named members (`scan_body`; a member in
        a model's tool-call arguments is judged by the JSON that encloses it: `raw_generated`)."""
        for s in scan_body(body, hits):
            if s.what.startswith(_NAMED_FIELD) and raw_exempt(body, s.start, s.end, self.prose):
                for shape in scan(body[s.start : s.end]):  # a key the member's find was merged with
                    a, b = s.start + shape.start, s.start + shape.end
                    self.add(field, shape.what, body[a:b], shape.preview, "", a, b)
                continue
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
                # a message's type labels its pieces too: a key spoken in transcript deltas is
                # joined apart from the audio deltas between them at the same path (GPT-Live)
                kind = parsed.get("type") if isinstance(parsed, dict) else None
                self.json(field, parsed, "$", 1, f"${{type={kind!r}}}" if isinstance(kind, str) else "$")
        self.prefix, self.collect = "", False
        for where, pieces in list(self.pieces.items()):
            if len(pieces) > 1:
                self.text(field, "".join(pieces), f"reassembled {where}", 2)
        self.forget()

    def joined_text(self, field: str, texts: list[str]) -> None:
        """A session's plain-text (non-JSON) messages of one direction read together, as one
        stream (a key sent or streamed back across them), up to `REASSEMBLE_MAX` characters."""
        plain, size = [], 0
        for text in texts:
            if size >= REASSEMBLE_MAX:
                break
            if _json_or_none(text) is _NOT_JSON:
                plain.append(text[: REASSEMBLE_MAX - size])
                size += len(plain[-1])
        if len(plain) > 1:
            self.text(field, "".join(plain), "reassembled text", 1)

    def members(self, field: str, body: bytes, path: str, content_type: str) -> None:
        """A stream too large to walk event by event: `ssemock.scan.large_streams.large_stream`."""
        large_stream(body, path, text_scan(self, field), cut_after(content_type))

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

    def events(self, field: str, body: bytes, content_type: str, url: str, path: str) -> None:
        """The decoded events' data, then the text reassembled from their pieces: every string at
        one JSON path across events joined (a key streamed a few characters an event, by any protocol)."""
        try:
            kind = framing.detect(content_type, body)
            events = kind.decode(body)
        except (ValueError, TypeError):
            if body:  # (a stream is walked only up to _DEEP_MAX: no larger than DECODED_MAX)
                self.text(field, body.decode("utf-8", "replace"), path, 0, shapes=False)
            return
        plain: list[str] = []
        self.shapes.whole(len(events))  # (till `forget`: a short stream is walked)
        self.stream(field, 0, list(events), path, plain)
        self.joined(field, path, plain)

    def stream(self, field: str, k: int, events: list[Any], path: str, plain: list[str]) -> None:
        """Events ``k``, ``k + 1``, ... of a stream, each as `event` reads it; runs of them whose
        data are text of the shape the last one had are read together (`Shapes.bulk`)."""
        i, n = 0, len(events)
        skip = wait = 0  # after a run could not be read together: events read one by one first
        size = self.shapes.batch  # events tried together: about twice the last run read (runs may be short)
        while i < n:
            if wait:
                wait -= 1
            elif isinstance(getattr(events[i], "data", None), str):
                try:
                    texts = list(map(_DATA, events[i : i + size]))
                except AttributeError:
                    texts = []
                read = self.shapes.bulk(self, texts) if set(map(type, texts)) == {str} else 0
                if read:
                    i += read
                    skip = 0
                    size = min(_BATCH_MAX, 2 * size if read == len(texts) else max(8, 2 * read))
                    continue
                skip = wait = min(2 * skip or 1, BATCH_FIRST)
            self.event(field, k + i, events[i], path, plain)
            i += 1
        self.shapes.batch = size  # (the next events of this stream: `ssemock.scan.incremental`)

    def event(self, field: str, k: int, event: Any, path: str, plain: list[str]) -> None:
        """Event ``k`` of a stream: its data scanned, its string pieces collected (the data of a
        non-JSON one appended to ``plain``). `events` calls it for each event of a whole body;
        `ssemock.scan.incremental` for each one as a recording decodes it."""
        data = getattr(event, "data", None)
        if isinstance(data, str):
            text_form: str | None = data
        else:
            payload = getattr(event, "payload", None)
            text_form = payload.decode("utf-8", "replace") if isinstance(payload, bytes) else None
        self.collect = True
        where = ""
        if text_form is not None:
            if self.shapes.read(self, field, path, k, text_form):  # an event of a shape seen before
                self.collect = False
                return
            where = f"{path} event {k}".strip()
            parsed = _json_or_none(text_form)
            if parsed is _NOT_JSON:
                plain.append(text_form)
                self.text(field, text_form, where, 1, shapes="\n" in text_form or bool(path))
                self.collect = False
                return
            event = parsed
        self.prefix = where or f"{path} event {k}".strip()
        self.json(field, event, "$", 1)
        self.prefix = ""
        self.collect = False
        if text_form is not None:
            self.shapes.learn(self.pieces, text_form, event)

    def forget(self) -> None:
        """Drop the pieces collected (after their joins were scanned), and the plans that fill them."""
        self.pieces.clear()
        self.total, self.sizes = 0, None
        self.nested.clear()
        self.shapes.clear()

    def joined(self, field: str, path: str, plain: list[str]) -> None:
        """The text reassembled from a stream's events (after the last `event`)."""
        joined = {"data": "".join(plain), **{p: "".join(v) for p, v in self.pieces.items() if len(v) > 1}}
        for p, v in self.pieces.items():  # AWS payload parts ({"bytes": base64}) of raw text, one
            if len(v) > 1 and p.endswith(".bytes"):  # piece each (Bedrock Agents): their bytes joined
                text = base64_joined(v)
                if text is not None:
                    joined[f"{p} base64"] = text
        seen: set[str] = set()  # a text joined under two keys (with and without its index labels)
        for where, whole in joined.items():  # is scanned once: the second finds nothing new
            if whole and whole not in seen:
                seen.add(whole)
                self.text(field, whole, f"{path} reassembled {where}".strip(), 2)
        self.forget()


_NOT_JSON = object()


def _json_or_none(text: str) -> Any:
    """``text`` parsed as a JSON object or array, else `_NOT_JSON`."""
    if text.lstrip()[:1] not in ("{", "["):
        return _NOT_JSON
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return _NOT_JSON


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
    if req.body and len(req.body) <= DECODED_MAX:
        s.prose = functools.cache(functools.partial(prose_words, req.body))
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
        if known is not None and any(f.rule.startswith(_NAMED_FIELD) for f in known):
            known = None  # scanned again, with the request's prose (`model_content.exempt`)
        if known is None:
            s.body("response.body", resp.body, resp.headers, req.url, stream=is_stream(x))
        else:  # scanned as it was recorded (`ssemock.scan.incremental`): the same findings
            s.found += [dataclasses.replace(f, interaction=index) for f in known]
    if resp.error:
        s.text("response.error", orjson.dumps(resp.error).decode(), "", 0)
    session = getattr(x, "websocket", None)
    if session is not None:  # a WebSocket session: every message, and every control frame's payload
        offered = [(f"websocket.subprotocols.offered[{k}]", p) for k, p in enumerate(session.subprotocols)]
        agreed = [("websocket.subprotocols.agreed", session.subprotocol)] if session.subprotocol else []
        for where, p in offered + agreed:  # as the Sec-WebSocket-Protocol header is
            for found in scan_header("sec-websocket-protocol", p):
                s.add(
                    where, found.what, p[found.start : found.end], found.preview, "", found.start, found.end
                )
            s.subprotocols(where, p)
        scanned = prescanned_messages(session)  # as they arrived: `ssemock.scan.incremental_messages`
        if scanned is None or not scanned.adopt(s):
            for k, m in enumerate(session.messages):
                s.body(f"websocket.messages[{k}]", m.payload, message_encoding(m.data), req.url, stream=False)
        for direction in ("send", "recv"):  # a key streamed across messages: their pieces joined
            mine = [(k, m) for k, m in enumerate(session.messages) if m.direction == direction]
            s.joined_messages(f"websocket.messages ({direction})", [(k, m.payload) for k, m in mine])
            s.joined_text(
                f"websocket.messages ({direction})", [m.data for _, m in mine if isinstance(m.data, str)]
            )
        for k, note in enumerate(session.frame_map):
            if note.data:
                s.body(f"websocket.frames[{k}]", note.data, [], req.url, stream=False)
        if session.close.reason:
            s.text("websocket.close.reason", session.close.reason, "", 0)
    call = getattr(x, "grpc", None)
    if call is not None:  # a gRPC call: its messages, trailers and status details
        scan_call(call, req.url, s.body, s.joined_text, s.header)
    return first_per_place(s.found)


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
    found = [f for i, x in enumerate(cassette.interactions) for f in scan_interaction(x, i)]
    for k, session in enumerate(cassette.stdio):  # a child process's recording
        s = _Scan(k)
        scan_session(session, k, s.text, s.body)
        found += first_per_place(s.found)
    return found
