"""The JSON array framing: a stream that is one JSON array written element by element.

Gemini's ``streamGenerateContent`` without ``alt=sse`` answers ``[{...}\\n,\\r\\n{...}\\n]``:
each element is one event, complete when its closing brace arrives. Elements are found by one
linear scan of the bytes (strings and escapes skipped, brackets counted), then parsed with
`orjson.loads`. The scan is the accelerator's ``array_spans`` where it is built, up to the
array's end or an error, which the pure loop (the reference, and the fallback) then reads.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import orjson

from . import Framing
from .accelerator import array_spans as _c_array_spans

__all__ = ["FRAMING", "Elements", "JSONArrayError", "decode", "element_spans", "event_ends", "parsed"]

_SPECIAL = re.compile(rb'["{}\[\]]')
_EXCERPT = 60


class JSONArrayError(ValueError):
    """The body is not a JSON array of objects/arrays; ``offset`` is the byte where it breaks."""

    def __init__(self, offset: int, reason: str, body: bytes) -> None:
        near = body[offset : offset + _EXCERPT].decode("utf-8", "replace")
        super().__init__(f"JSON array stream, byte {offset}: {reason}: {near!r}")
        self.offset = offset


class Elements:
    """The top-level elements of a JSON array stream found as its bytes arrive: `spans` reads
    what was added to the buffer since the last call, its state (in a string, the depth, the
    element being read) resumed; `forget` follows the buffer when its head is dropped. The
    accelerator's ``array_spans`` reads up to the array's end or an error where it is built; the
    pure loop (the reference, and the fallback) reads from where it stops."""

    def __init__(self) -> None:
        self.done = False  # the array's ']' was read: nothing more is
        self._started = False  # the '[' was read
        self._pos = 0  # where the search goes on in the buffer
        self._in_string = False
        self._depth = 0
        self._element = -1  # where the element being read starts in the buffer
        self._after = 0  # where the bytes after the last element (or the '[') start
        self._count = 0  # elements read

    def spans(self, buf: bytes | bytearray) -> list[int]:
        """Where each element completed in ``buf`` since the last call starts and ends, flat
        (``[start, end, start, end, ...]``, offsets into ``buf``); `JSONArrayError` where the
        array breaks (a byte that is neither an element nor a separator, a stray bracket)."""
        if self.done:
            return []
        if not self._started:
            start = buf.find(b"[")
            if start < 0 or buf[:start].strip():
                if buf.strip():
                    raise JSONArrayError(0, "does not start with '['", bytes(buf))
                return []
            self._started, self._pos, self._after = True, start + 1, start + 1
        flat: list[int] = []
        if _c_array_spans is not None:  # the elements in C, to the ']' or an error (the loop's then)
            flat, self._pos, in_string, self._depth, self._element, self._after, self._count = _c_array_spans(
                buf, self._pos, self._in_string, self._depth, self._element, self._after, self._count
            )
            self._in_string = bool(in_string)
        pos = self._pos
        while True:
            if self._in_string:  # to the closing quote: two memchr, not a regex over every byte
                quote = buf.find(b'"', pos)
                escape = buf.find(b"\\", pos, len(buf) if quote < 0 else quote)
                if escape >= 0:
                    pos = escape + 2  # the escaped byte skipped
                elif quote >= 0:
                    pos, self._in_string = quote + 1, False
                else:
                    pos = max(pos, len(buf))  # (past it: an escape's byte still to come)
                    break
                continue
            m = _SPECIAL.search(buf, pos)
            if m is None:
                break
            char, pos = buf[m.start()], m.end()
            if char == 0x22:
                self._in_string = True
            elif char in b"{[":
                if self._depth == 0:
                    if buf[self._after : m.start()].strip() != (b"," if self._count else b""):
                        raise JSONArrayError(m.start(), "elements must be separated by one ','", bytes(buf))
                    self._element = m.start()
                self._depth += 1
            elif self._depth == 0:
                if char == 0x5D:  # the array's own ']': only whitespace may come before it
                    if buf[self._after : m.start()].strip():
                        raise JSONArrayError(
                            self._after, "bytes that are no element before the array's ']'", bytes(buf)
                        )
                    self.done = True
                    break
                raise JSONArrayError(m.start(), "unbalanced '}'", bytes(buf))
            else:
                self._depth -= 1
                if self._depth == 0:
                    flat += (self._element, pos)
                    self._after, self._count = pos, self._count + 1
        self._pos = pos
        return flat

    def held(self) -> int:
        """Where the bytes still needed start in the buffer: the element being read, else the
        bytes after the last one."""
        return self._element if self._depth else self._after

    def forget(self, dropped: int) -> None:
        """The buffer's first ``dropped`` bytes are gone (at most `held`)."""
        self._pos -= dropped
        self._after -= dropped
        self._element -= dropped


def element_spans(body: bytes) -> list[tuple[int, int]]:
    """(start, end) of every complete top-level element; a trailing partial one is left out."""
    flat = Elements().spans(body)
    return list(zip(flat[::2], flat[1::2], strict=True))


def parsed(
    body: bytes | bytearray, flat: list[int], parse: Callable[[bytes | bytearray], Any] = orjson.loads
) -> list[Any]:
    """The elements at ``flat`` (`Elements.spans`) in ``body``, each parsed by ``parse``;
    `JSONArrayError` at the first that is no JSON."""
    values = []
    for i in range(0, len(flat), 2):
        start = flat[i]
        try:
            values.append(parse(body[start : flat[i + 1]]))
        except orjson.JSONDecodeError as exc:
            raise JSONArrayError(start, f"element is not valid JSON ({exc})", bytes(body)) from None
    return values


def decode(body: bytes) -> list[object]:
    """The complete elements of a (possibly unfinished) JSON array stream, parsed."""
    return parsed(body, Elements().spans(body))


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
