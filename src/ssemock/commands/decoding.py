"""How ``show`` and ``validate`` decode a response: its framing, its events, what they accumulate to."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson

from .. import framing
from ..protocols.accumulate import Accumulated, ProtocolError, accumulate, detect_protocol
from ..store.cassette import (
    Interaction,
    Response,
)

_BOM = b"\xef\xbb\xbf"


StreamKind = Literal["sse", "ndjson", "json_array", "eventstream", "other"]
_KINDS: dict[str, StreamKind] = {
    "sse": "sse",
    "ndjson": "ndjson",
    "json_array": "json_array",
    "eventstream": "eventstream",
}
_WHAT = {
    "sse": "SSE events",
    "ndjson": "JSON lines",
    "json_array": "JSON array elements",
    "eventstream": "eventstream frames",
    "other": "not a stream",
}


def stream_kind(content_type: str | None, body: bytes = b"") -> StreamKind:
    """The framing a recorded body decodes in (`ssemock.framing.detect`'s name: ``sse``,
    ``ndjson``, ``json_array``, ``eventstream``), or ``other`` for a body that is no stream.

    A content type a framing claims decides (text/event-stream, the JSON-lines types, AWS
    eventstream). Else the body: an eventstream prelude whose CRC checks, or a JSON array under a
    JSON content type or none (Gemini's stream without ``alt=sse``); and without a content type, a
    body that looks like JSON lines (``{`` first, several lines) is NDJSON, one with a ``data:``
    field SSE.
    """
    media = (content_type or "").split(";")[0].strip().lower()
    found = framing.detect(content_type, body)
    if media and found.content_type(media):
        return _KINDS[found.name]
    if found.name == "eventstream" or (found.name == "json_array" and media in ("", "application/json")):
        return _KINDS[found.name]  # found by its shape (no framing claims the content type)
    if not media and body:
        head = body.lstrip()
        if head.startswith(b"{") and body.rstrip().count(b"\n") >= 1:
            return "ndjson"
        if re.search(rb"(?:^|[\r\n])data:", body):
            return "sse"
    return "other"


@dataclass
class Decoded:
    """The reference decoding of one response body."""

    kind: StreamKind
    events: list[Any] = field(
        default_factory=list
    )  # ServerSentEvents, parsed JSON values or eventstream Frames
    error: str | None = None  # where the body stops decoding (a bad JSON line, array element or frame)
    note: str | None = None  # why a body served as a stream is read as no stream (a JSON error body)


def decode_response(response: Response) -> Decoded:
    """Decode a recorded body with the reference decoder of its framing (see `stream_kind`)."""
    kind = stream_kind(response.header("content-type"), response.body)
    if kind == "other":
        return Decoded(kind)
    try:
        events = list(framing.get(kind).decode(response.body))
    except ValueError as exc:
        return Decoded(kind, [], str(exc))
    if kind == "sse" and not events and _json_document(response.body):
        return Decoded(
            "other",
            note=f"status {response.status}: a JSON document served as text/event-stream "
            "(an error sent before any event): not decoded as SSE",
        )
    return Decoded(kind, events)


def _json_document(body: bytes) -> bool:
    """Whether ``body`` is one JSON object (what a server sends for an error, whatever the type)."""
    if body.lstrip().removeprefix(_BOM)[:1] != b"{":
        return False
    try:
        return isinstance(orjson.loads(body.strip().removeprefix(_BOM)), dict)
    except orjson.JSONDecodeError:
        return False


def _accumulate(
    x: Interaction, decoded: Decoded, protocol: str | None = None
) -> tuple[str | None, Accumulated | None, str | None]:
    """(protocol, result, problem): the detected (or given) protocol and the accumulated message."""
    if decoded.kind == "other" or decoded.error is not None:
        return None, None, None
    content_type = x.response.header("content-type")
    if protocol is None:
        try:
            protocol = detect_protocol(decoded.events, url=x.request.url, content_type=content_type)
        except ProtocolError:
            return None, None, None
    try:
        return protocol, accumulate(decoded.events, protocol), None
    except ProtocolError as exc:
        return protocol, None, str(exc)
