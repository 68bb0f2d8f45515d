"""``ssemock redact``: the default redaction rules plus secrets scrubbed out of bodies, with the
boundary map shifted to match (also what a refused recording is masked with)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import orjson

from ..framing.eventstream import is_eventstream
from ..scan.body_forms import inflated_message
from ..scan.shapes import Secret, scan, scan_body, scan_header, scan_url
from ..scan.walk import decode_content, is_stream, scan_interaction
from ..store.cassette import (
    Cassette,
    Interaction,
    Response,
)
from ..store.websocket import Message
from .masking import compressed, mask_body, mask_pieces
from .rules import REDACTED, redact_request, redact_response, redact_subprotocol, replace_spans

Edit = tuple[int, int, int]  # old start, old end, new length


_TOKEN_TAIL = re.compile(rb"[A-Za-z0-9]+")
_TOKEN_TAIL_TEXT = re.compile(r"[A-Za-z0-9]+")


def _spans(data: bytes | str, found: list[Secret]) -> list[tuple[int, int, str]]:
    """The spans to replace, sorted and apart (overlapping finds become one); each swallows the
    letters and digits right after it (what is left of a token that a percent-escape cut short),
    so no ``REDACTEDA`` remains for the next scan to take for a token again."""
    merged: list[tuple[int, int, str]] = []
    for s in sorted(found, key=lambda s: s.start):
        tail = (
            _TOKEN_TAIL.match(data, s.end) if isinstance(data, bytes) else _TOKEN_TAIL_TEXT.match(data, s.end)
        )
        end = tail.end() if tail else s.end
        if merged and s.start < merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]), merged[-1][2])
        else:
            merged.append((s.start, end, s.what))
    return merged


def _scrub(data: bytes, found: list[Secret]) -> tuple[bytes, list[Edit], list[str]]:
    """Replace every secret ``found`` in ``data`` with REDACTED: the new bytes, the edits, what
    was found (overlapping finds become one edit)."""
    if not found:
        return data, [], []
    merged = _spans(data, found)
    pieces, edits, what, pos = [], [], [], 0
    for a, b, kind in merged:
        pieces += [data[pos:a], REDACTED.encode()]
        edits.append((a, b, len(REDACTED)))
        what.append(f"{kind} at byte {a}")
        pos = b
    pieces.append(data[pos:])
    return b"".join(pieces), edits, what


def _remap_offset(offset: int, edits: Sequence[Edit]) -> int:
    """Where ``offset`` (in the original) lands after ``edits`` (sorted, not overlapping)."""
    shift = 0
    for a, b, n in edits:
        if offset >= b:
            shift += n - (b - a)
        elif offset > a:
            return a + shift + min(offset - a, n)
        else:
            break
    return offset + shift


def remap_ends(
    ends: Sequence[int], times: Sequence[float], edits: Sequence[Edit], size: int
) -> tuple[list[int], list[float]]:
    """Carry a boundary map over ``edits``: later ends shift by the length difference.

    Two chunks whose ends fall together (a boundary inside a secret that got shorter) merge; the
    merged chunk keeps the later time (the time its last byte arrived).
    """
    new_ends: list[int] = []
    new_times: list[float] = []
    for e, t in zip(ends, times):
        ne = min(size, _remap_offset(e, edits))
        if new_ends and ne <= new_ends[-1]:
            new_times[-1] = max(new_times[-1], t)
            continue
        if ne <= 0:
            continue
        new_ends.append(ne)
        new_times.append(t)
    if size and (not new_ends or new_ends[-1] != size):
        new_ends.append(size)
        new_times.append(new_times[-1] if new_times else 0.0)
    return new_ends, new_times


def _scrub_text(text: str, found: list[Secret]) -> tuple[str, list[str]]:
    spans = [(a, b) for a, b, _ in _spans(text, found)]
    return replace_spans(text, spans, REDACTED), [f"{f.what} at character {f.start}" for f in found]


def _scrub_json(value: Any) -> tuple[Any, list[str]]:
    if isinstance(value, str):
        return _scrub_text(value, scan(value))
    if isinstance(value, dict):
        found: list[str] = []
        out = {}
        for k, v in value.items():
            out[k], f = _scrub_json(v)
            found += f
        return out, found
    if isinstance(value, list):
        items = [_scrub_json(v) for v in value]
        return [v for v, _ in items], [f for _, fs in items for f in fs]
    return value, []


def redact(cassette: Cassette) -> list[str]:
    """Apply the default redaction rules and scrub secrets out of bodies, in place.

    Returns what changed, one line each (``interaction 0 response.body: ...``). A response body
    that changes length gets its boundary map shifted to match.
    """
    changes: list[str] = []
    for i, x in enumerate(cassette.interactions):
        req = x.request
        red = redact_request(req)
        if red.url != req.url:
            changes.append(f"interaction {i} request.url: query parameters named like keys")
        for (k, v), (_, rv) in zip(req.headers, red.headers):
            if v != rv:
                changes.append(f"interaction {i} request.headers[{k!r}]")
        url, found = _scrub_text(red.url, scan_url(red.url))
        changes += [f"interaction {i} request.url: {f}" for f in found]
        headers = []
        for k, v in red.headers:
            v, found = _scrub_text(v, scan_header(k, v))
            changes += [f"interaction {i} request.headers[{k!r}]: {f}" for f in found]
            headers.append((k, v))
        red.url, red.headers = url, headers
        x.request = red

        resp = x.response
        before = list(resp.headers)
        resp = redact_response(resp)
        for (k, v), (_, rv) in zip(before, resp.headers):
            if v != rv:
                changes.append(f"interaction {i} response.headers[{k!r}]")
        rheaders = []
        for k, v in resp.headers:
            v, found = _scrub_text(v, scan_header(k, v))
            changes += [f"interaction {i} response.headers[{k!r}]: {f}" for f in found]
            rheaders.append((k, v))
        resp.headers = rheaders
        if resp.error is not None:
            error, found = _scrub_json(resp.error)
            changes += [f"interaction {i} response.error: {f}" for f in found]
            resp.error = error
        x.response = resp
        # a key split across a stream's deltas first, while it is whole in their join (its first
        # piece scrubbed alone, the rest would no longer read as a key), then the bytes as stored
        # (in place), then what only their decoded forms still show; binary frames (AWS
        # eventstream) all in their decoded forms first: a byte scrubbed in place breaks a CRC
        changes += _mask_decoded(i, x, across=not is_eventstream(x.response.body))
        changes += _scrub_bodies(i, x)
        changes += _mask_decoded(i, x)
        changes += _mask_session(i, x)
        changes += _mask_call(i, x)
    return changes


def _scrub_bodies(i: int, x: Interaction) -> list[str]:
    """Scrub, in place, the secrets the scanner finds in the bodies' bytes as stored: the
    response's boundary map (and an error's byte offset) shifted to match."""
    changes = []
    if x.request.body:
        body, _, found = _scrub(x.request.body, scan_body(x.request.body))
        changes += [f"interaction {i} request.body: {f}" for f in found]
        x.request.body = body
    resp = x.response
    body, edits, found = _scrub(resp.body, scan_body(resp.body))
    if found:
        changes += [f"interaction {i} response.body: {f}" for f in found]
        ends, times = remap_ends(resp.ends, resp.times, edits, len(body))
        error = resp.error
        if error is not None and isinstance(error.get("at_byte"), int):
            error = {**error, "at_byte": _remap_offset(error["at_byte"], edits)}
        x.response = Response(resp.status, resp.headers, body, ends, times, resp.complete, error)
    return changes


def _mask_call(i: int, x: Interaction) -> list[str]:
    """Mask, in place, the secrets in a gRPC call: each message's, each the length it was (a
    protobuf string keeps its length prefix right), then the trailers' and the status details'."""
    call = getattr(x, "grpc", None)
    if call is None:
        return []
    changes: list[str] = []
    for k, m in enumerate(call.messages):
        found = scan_body(m.data)
        if not found:
            continue
        data = bytearray(m.data)
        for a, b, kind in _spans(m.data, found):
            data[a:b] = (REDACTED.encode() * (1 + (b - a) // len(REDACTED)))[: b - a]
            changes.append(f"interaction {i} grpc.messages[{k}]: {kind} at byte {a}")
        m.data = bytes(data)
    trailers = []
    for k, v in call.trailers:
        v, said = _scrub_text(v, scan_header(k, v))
        changes += [f"interaction {i} grpc.trailers[{k!r}]: {f}" for f in said]
        trailers.append((k, v))
    call.trailers = trailers
    details, said = _scrub_text(call.status.details, scan(call.status.details))
    changes += [f"interaction {i} grpc.status.details: {f}" for f in said]
    call.status.details = details
    return changes


def _mask_session(i: int, x: Interaction) -> list[str]:
    """Mask, in place, the secrets in a WebSocket session: its subprotocols, the messages of one
    direction together (a key streamed back across them, whole only in their join: its first
    piece masked alone, the rest would no longer read as a key), then each message (raw,
    inflated when it is compressed binary data, then decoded forms)."""
    session = getattr(x, "websocket", None)
    if session is None:
        return []
    changes: list[str] = []
    offered = [redact_subprotocol(p) for p in session.subprotocols]  # as Sec-WebSocket-Protocol is
    agreed = None if session.subprotocol is None else redact_subprotocol(session.subprotocol)
    if offered != session.subprotocols or agreed != session.subprotocol:
        changes.append(f"interaction {i} websocket.subprotocols: a credential")
        session.subprotocols, session.subprotocol = offered, agreed
    for direction in ("send", "recv"):  # plain-text messages of one direction: one stream
        changes += _mask_plain(
            i, [(k, m) for k, m in enumerate(session.messages) if m.direction == direction]
        )
    groups: dict[tuple[str, Any], list[tuple[int, Any]]] = {}
    for k, m in enumerate(session.messages):  # JSON ones together (issue 35)
        payload = m.payload
        if b"\n" in payload or payload.lstrip()[:1] != b"{":
            continue
        try:
            kind = orjson.loads(payload).get("type")
        except orjson.JSONDecodeError:
            continue
        groups.setdefault((m.direction, kind if isinstance(kind, str) else None), []).append((k, m))
    for picked in groups.values():
        changes += _mask_across(i, picked)
    for k, m in enumerate(session.messages):
        payload, layer = inflated_message(m.data) if isinstance(m.data, bytes) else (m.payload, "")
        payload, _, found = _scrub(payload, scan_body(payload))
        masked = mask_body(payload, content_type="application/json", stream=False)
        found = [*found, *masked.masked]
        if found:
            where = f"interaction {i} websocket.messages[{k}]" + (f" {layer}" if layer else "")
            changes += [f"{where}: {f}" for f in found]
            m.data = (
                masked.body.decode("utf-8", "replace") if m.type == "text" else compressed(masked.body, layer)
            )
    if changes:
        session.wire.sha256 = None  # a digest of the unmasked bytes is not kept beside the masked ones
    return changes


def _mask_plain(i: int, mine: list[tuple[int, Message]]) -> list[str]:
    """Mask, in place, what the plain-text (non-JSON) ``mine`` messages hold read together as one
    stream, as the scan reads them (`ssemock.scan.walk`): a key sent or streamed back across them."""
    plain = [(k, m) for k, m in mine if isinstance(m.data, str) and m.data.lstrip()[:1] not in ("{", "[")]
    if len(plain) < 2:
        return []
    touched = []
    for (k, m), piece in zip(plain, mask_pieces([str(m.data) for _, m in plain])):
        if piece != m.data:
            touched.append(k)
            m.data = piece
    return (
        [f"interaction {i} websocket.messages[{touched[0]}] and after: a secret across text messages"]
        if touched
        else []
    )


def _mask_across(i: int, picked: list[tuple[int, Any]]) -> list[str]:
    """Mask, in place, what only the ``picked`` messages together hold: a key streamed back split
    across a session's deltas, a credential-named value in tool-call arguments sent in pieces.
    One-line JSON messages of one direction and one ``type`` (text deltas apart from the audio
    deltas whose ``delta`` interleaves with theirs) are masked as the lines of one JSON-lines
    stream, the way a stream's events are (`ssemock.redaction.masking.mask_body`), then put back
    one a message."""
    if len(picked) < 2:
        return []
    joined = b"".join(m.payload + b"\n" for _, m in picked)
    masked = mask_body(joined, content_type="application/x-ndjson", stream=True, across=True)
    lines = masked.body.split(b"\n")[:-1]
    if not masked.masked or len(lines) != len(picked):
        return []  # nothing, or no longer one a message: what is left, the scan after says
    first = None
    for (k, m), line in zip(picked, lines):
        if line != m.payload:
            first = k if first is None else first
            m.data = line.decode("utf-8", "replace") if m.type == "text" else line
    return [f"interaction {i} websocket.messages[{first}] and after: {what}" for what in masked.masked]


def _mask_decoded(i: int, x: Interaction, *, across: bool = False) -> list[str]:
    """Mask, in place, what the scan still finds in a body's decoded forms only (a key split
    across a stream's deltas, a credential-named value, base64, a compressed layer; ``across``:
    only what spans several events): see `ssemock.redaction.masking`. A compressed body is
    stored decoded (its header dropped)."""
    fields = {f.field for f in scan_interaction(x, i)}
    changes = []
    for side in ("request", "response"):
        if f"{side}.body" not in fields:
            continue
        part = x.request if side == "request" else x.response
        headers = list(part.headers)
        body = part.body or b""
        encoding = next((v for k, v in headers if k.lower() == "content-encoding"), "")
        decoded = False
        if encoding:
            plain, layers = decode_content(body, encoding)
            if layers:
                body, decoded = plain, True
                headers = [
                    (k, v) for k, v in headers if k.lower() not in ("content-encoding", "content-length")
                ]
                changes.append(f"interaction {i} {side}.body: stored decoded ({', '.join(layers)})")
        content_type = next((v for k, v in headers if k.lower() == "content-type"), "") or ""
        stream = side == "response" and is_stream(x)
        masked = mask_body(body, content_type=content_type, stream=stream, across=across)
        changes += [f"interaction {i} {side}.body: {what}" for what in masked.masked]
        if side == "request":
            x.request.headers, x.request.body = headers, masked.body
            continue
        resp = x.response
        if decoded:  # the boundaries were the compressed bytes': one chunk, at the last time
            ends, times = [len(masked.body)], [resp.times[-1] if resp.times else 0.0]
        else:
            ends, times = remap_ends(resp.ends, resp.times, masked.edits, len(masked.body))
        x.response = Response(resp.status, headers, masked.body, ends, times, resp.complete, resp.error)
    return changes
