"""A plain JSON body: one JSON document, not a stream (an error body, a non-streaming answer).

It is one event: [`event_ends`][ssemock.framing.document.event_ends] is the end of the document. Detected by shape only (the
content type ``application/json`` is shared with JSON array streams and some JSON-lines
servers): a body that is one whole JSON object, compact or pretty-printed (a single line ending
in LF is left to JSON lines: it decodes the same). A stream cut short
or followed by other bytes is no document: [`decode`][ssemock.framing.document.decode] raises [`JSONBodyError`][ssemock.framing.document.JSONBodyError].
"""

from __future__ import annotations

import orjson

from . import Framing

__all__ = ["FRAMING", "JSONBodyError", "decode", "event_ends"]


class JSONBodyError(ValueError):
    """The body is not one whole JSON document."""


def decode(body: bytes) -> list[object]:
    """``[the document]``, or ``[]`` for a body of whitespace only."""
    if not body.strip():
        return []
    try:
        return [orjson.loads(body)]
    except orjson.JSONDecodeError as exc:
        raise JSONBodyError(f"JSON body of {len(body)} bytes: not one whole JSON document ({exc})") from None


def event_ends(body: bytes) -> list[int]:
    """The document is the one event: ``[len(body)]`` when it is whole, else ``[]``."""
    try:
        return [len(body)] if decode(body) else []
    except JSONBodyError:
        return []


def _sniff(body: bytes) -> bool:
    """One whole JSON object; a single line ending in LF stays one JSON line (ndjson)."""
    stripped = body.strip()
    if not stripped.startswith(b"{") or (b"\n" not in stripped and body.endswith(b"\n")):
        return False
    try:
        orjson.loads(body)
    except orjson.JSONDecodeError:
        return False
    return True


FRAMING = Framing(
    name="json",
    decode=decode,
    event_ends=event_ends,
    content_type=lambda media: False,
    sniff=_sniff,
    stream=False,
    example=("application/json", b'{\n  "id": "x-1",\n  "text": "hello"\n}\n'),
)
"""The plain JSON framing (one JSON body, not a stream), as registered in `ssemock.framing`."""
