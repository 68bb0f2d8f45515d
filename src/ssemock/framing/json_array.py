"""The JSON array framing: a stream that is one JSON array written element by element.

Gemini's ``streamGenerateContent`` without ``alt=sse`` answers ``[{...}\\n,\\r\\n{...}\\n]``:
each element is one event, complete when its closing brace arrives. Elements are found by one
linear scan of the bytes (strings and escapes skipped, brackets counted), then parsed with
`orjson.loads`. The scan is the accelerator's ``array_spans`` where it is built, up to the
array's end or an error, which the pure loop (the reference, and the fallback) then reads.
"""

from __future__ import annotations

import re

import orjson

from . import Framing
from .accelerator import array_spans as _c_array_spans

__all__ = ["FRAMING", "JSONArrayError", "decode", "event_ends"]

_SPECIAL = re.compile(rb'["{}\[\]]')
_IN_STRING = re.compile(rb'["\\]')
_EXCERPT = 60


class JSONArrayError(ValueError):
    """The body is not a JSON array of objects/arrays; ``offset`` is the byte where it breaks."""

    def __init__(self, offset: int, reason: str, body: bytes) -> None:
        near = body[offset : offset + _EXCERPT].decode("utf-8", "replace")
        super().__init__(f"JSON array stream, byte {offset}: {reason}: {near!r}")
        self.offset = offset


def element_spans(body: bytes) -> list[tuple[int, int]]:
    """(start, end) of every complete top-level element; a trailing partial one is left out."""
    start = body.find(b"[")
    if start < 0 or body[:start].strip():
        if body.strip():
            raise JSONArrayError(0, "does not start with '['", body)
        return []
    spans: list[tuple[int, int]] = []
    depth, element, pos = 0, -1, start + 1
    if _c_array_spans is not None:  # the elements in C, to the ']' or an error (the loop's then)
        flat, pos, in_string, depth, element, _, _ = _c_array_spans(body, pos, 0, 0, -1, pos, 0)
        spans = list(zip(flat[::2], flat[1::2]))
        if in_string:
            return spans
    while True:
        m = _SPECIAL.search(body, pos)
        if m is None:
            return spans
        char, pos = body[m.start()], m.end()
        if char == 0x22:  # a string: skip to its closing quote
            while True:
                s = _IN_STRING.search(body, pos)
                if s is None:
                    return spans
                pos = s.end() + (1 if body[s.start()] == 0x5C else 0)
                if body[s.start()] == 0x22:
                    break
        elif char in b"{[":
            if depth == 0:
                between = body[spans[-1][1] if spans else start + 1 : m.start()].strip()
                if between not in ((b",",) if spans else (b"",)):
                    raise JSONArrayError(m.start(), "elements must be separated by one ','", body)
                element = m.start()
            depth += 1
        else:
            if depth == 0:
                if char == 0x5D:  # the array's own ']': only whitespace may come before it
                    if body[spans[-1][1] if spans else start + 1 : m.start()].strip():
                        raise JSONArrayError(
                            spans[-1][1] if spans else start + 1,
                            "bytes that are no element before the array's ']'",
                            body,
                        )
                    return spans
                raise JSONArrayError(m.start(), "unbalanced '}'", body)
            depth -= 1
            if depth == 0:
                spans.append((element, pos))


def decode(body: bytes) -> list[object]:
    """The complete elements of a (possibly unfinished) JSON array stream, parsed."""
    values = []
    for start, end in element_spans(body):
        try:
            values.append(orjson.loads(body[start:end]))
        except orjson.JSONDecodeError as exc:
            raise JSONArrayError(start, f"element is not valid JSON ({exc})", body) from None
    return values


def event_ends(body: bytes) -> list[int]:
    """The byte offset after each element's closing bracket (the array's ']' is trailing)."""
    try:
        return [end for _, end in element_spans(body)]
    except JSONArrayError:
        return []


def _sniff(body: bytes) -> bool:
    return body.lstrip().startswith(b"[")


FRAMING = Framing(
    name="json_array",
    decode=decode,
    event_ends=event_ends,
    content_type=lambda media: False,
    sniff=_sniff,
    example=("application/json", b'[{"n": 1}\n,\r\n{"n": 2}\n,\r\n{"n": 3}\n,\r\n{"n": 4}\n]'),
)
