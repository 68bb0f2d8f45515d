"""The decoder a response body is scanned with as it arrives (`ssemock.scan.incremental.BodyScan`),
one per framing: SSE, JSON lines, a JSON array (Gemini's ``streamGenerateContent`` without
``alt=sse``), AWS eventstream (Bedrock).

Each gives, fed the body in any pieces, the events the framing's ``decode`` gives the whole body
(the scan at save reads those: `ssemock.scan.walk._Scan.events`), and raises where ``decode``
raises (the scan as it arrives then breaks off and the save scans the body itself). The framing
the content type names is known at the headers; ``application/json`` says nothing of a stream, so
its decoder waits for the body's first byte (``[``: a JSON array, else what `ssemock.framing.detect`
falls back to). `Framed.name` is the framing decoded, which the save checks against the one it
would detect in the whole body.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from operator import itemgetter
from typing import Any, Protocol

import orjson

from .. import framing
from ..framing.accelerator import array_spans as _c_array_spans
from ..framing.eventstream import Decoder as _FrameDecoder
from ..framing.json_array import JSONArrayError
from ..framing.ndjson import Decoder as _LineDecoder
from ..framing.sse import Decoder as _EventDecoder

__all__ = ["Framed", "JSONArrayDecoder", "Text", "decoder", "wanted"]

_SPECIAL = re.compile(rb'["{}\[\]]')  # as `ssemock.framing.json_array.element_spans` searches
_SPACE = b" \t\n\r\x0b\x0c"  # what bytes.strip() strips
_SNIFFED = ("application/json",)  # a media type that may be a JSON array stream, told by its first byte
_BLANK = b" \t\r"  # a JSON line of these alone is skipped (`ssemock.framing.ndjson`)
_FIRST = itemgetter(0)
_OPENING = {ord("{"), ord("[")}
_Spans = Callable[
    [bytes | bytearray, int, int, int, int, int, int], tuple[list[int], int, int, int, int, int, int]
]


class _Decoder(Protocol):
    def feed(self, data: bytes) -> list[Any]: ...

    def close(self) -> list[Any] | None: ...


def wanted(media: str) -> bool:
    """Whether a body of this media type (lower case, no parameters) is decoded as it arrives."""
    return bool(media) and (media in _SNIFFED or framing.detect(media).name in _DECODERS)


def decoder(content_type: str) -> Framed:
    """The decoder of a body of ``content_type`` (one `wanted` says yes to)."""
    media = content_type.split(";")[0].strip().lower()
    return Framed(None if media in _SNIFFED else framing.detect(media).name)


class Framed:
    """A framing's incremental decoder; ``name``: the framing (None until the body's first byte
    tells it, for a content type that does not)."""

    def __init__(self, name: str | None) -> None:
        self.name = name
        self._inner: _Decoder | None = None if name is None else _DECODERS[name]()
        self._head = b""  # the body's leading whitespace, while the framing waits for a byte

    def feed(self, data: bytes) -> list[Any]:
        """The events completed by ``data``."""
        if self._inner is None:
            head = self._head + data
            if not head.lstrip(_SPACE):
                self._head = head
                return []
            self.name = "json_array" if head.lstrip(_SPACE)[:1] == b"[" else framing.detect("").name
            self._inner, self._head, data = _DECODERS[self.name](), b"", head
        return self._inner.feed(data)

    def close(self) -> list[Any]:
        """The events the end of the body completes."""
        return list(self._inner.close() or ()) if self._inner is not None else []


class Text:
    """An event whose data is the text of a JSON object or array (a JSON line, a JSON array's
    element), as received and not parsed yet: the walk reads it as it reads an SSE event's data,
    the events of a shape seen before by a plan of that shape (`ssemock.scan.event_plans`: C-level
    calls, no parse; what a plan reads is valid JSON), and finds what it finds in the value
    parsed, which the scan at save walks. One that is no JSON after all the walk takes for plain
    data, and the scan breaks off there (`ssemock.scan.incremental.BodyScan`), where the
    framing's decoder raises."""

    __slots__ = ("data",)

    def __init__(self, data: str) -> None:
        self.data = data

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Text) and other.data == self.data

    def __hash__(self) -> int:
        return hash(self.data)

    def __repr__(self) -> str:
        return f"Text({self.data!r})"


def _event(text: bytes | bytearray) -> Any:
    """What the scan reads of a JSON value's text: one that starts as an object or an array as its
    `Text` (UnicodeDecodeError where it is no UTF-8), any other value parsed
    (orjson.JSONDecodeError where it is no JSON)."""
    if text.lstrip(_BLANK)[:1] in (b"{", b"["):
        return Text(text.decode())
    return orjson.loads(text)


class _Lines:
    """The JSON-lines decoder (`ssemock.framing.ndjson.Decoder`), its objects and arrays given as
    their `Text`: what it gives, or raises, fed the same bytes."""

    def __init__(self) -> None:
        self._decoder = _LineDecoder()

    def feed(self, data: bytes) -> list[Any]:
        return self._events(self._decoder.feed_lines(data))

    def close(self) -> list[Any]:
        return self._events(self._decoder.close_lines())

    @staticmethod
    def _events(lines: list[bytes]) -> list[Any]:
        if not lines:
            return []
        if all(lines) and set(map(_FIRST, lines)) <= _OPENING:  # each line an object or an array
            # (as `_event` gives them, by C-level passes; no line holds a newline; no UTF-8 raises)
            return list(map(Text, b"\n".join(lines).decode().split("\n")))
        return [_event(line) for line in lines if line.strip(_BLANK)]


class JSONArrayDecoder:
    """`ssemock.framing.json_array.decode` a piece at a time: each element parsed once its
    closing bracket arrives (given as its `Text` with ``texts``); an error where the whole body
    would raise one (a byte that is neither an element nor a separator, a stray bracket, an
    element that is not JSON: its offset is into the bytes held); after the array's ``]``,
    nothing more is read. The bytes held are those of the element being read. The elements are
    found by the accelerator's ``array_spans`` where it is built, its state resumed chunk to
    chunk; the pure loop reads what it stops at (the array's end, an error) and is the fallback."""

    def __init__(self, texts: bool = False) -> None:
        self._parse: Callable[[bytes | bytearray], Any] = _event if texts else orjson.loads
        self._buf = bytearray()
        self._started = False  # the '[' was read
        self._done = False  # the ']' was read
        self._pos = 0  # where the search goes on in the buffer
        self._in_string = False
        self._depth = 0
        self._element = -1  # where the element being read starts in the buffer
        self._after = 0  # where the bytes after the last element (or the '[') start
        self._count = 0  # elements read

    def feed(self, data: bytes) -> list[Any]:
        """The elements ``data`` completes, parsed."""
        if self._done or not data:
            return []
        buf = self._buf
        buf += data
        if not self._started:
            start = buf.find(b"[")
            if start < 0 or buf[:start].strip(_SPACE):
                if buf.strip(_SPACE):
                    raise JSONArrayError(0, "does not start with '['", bytes(buf))
                return []
            self._started, self._pos, self._after = True, start + 1, start + 1
        values = self._read(buf)
        keep = self._element if self._depth else self._after
        if keep > 0:
            del buf[:keep]
            self._pos -= keep
            self._after -= keep
            self._element -= keep
        return values

    def _read(self, buf: bytearray) -> list[Any]:
        values = [] if _c_array_spans is None else self._read_c(buf, _c_array_spans)
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
                    between = bytes(buf[self._after : m.start()].strip(_SPACE))
                    if between != (b"," if self._count else b""):
                        raise JSONArrayError(m.start(), "elements must be separated by one ','", bytes(buf))
                    self._element = m.start()
                self._depth += 1
            else:
                if self._depth == 0:
                    if char == 0x5D:
                        if buf[self._after : m.start()].strip(_SPACE):
                            raise JSONArrayError(
                                self._after,
                                "bytes that are no element before the array's ']'",
                                bytes(buf),
                            )
                        self._done = True
                        break
                    raise JSONArrayError(m.start(), "unbalanced '}'", bytes(buf))
                self._depth -= 1
                if self._depth == 0:
                    try:
                        values.append(self._parse(buf[self._element : pos]))
                    except orjson.JSONDecodeError as exc:
                        raise JSONArrayError(
                            self._element, f"element is not valid JSON ({exc})", bytes(buf)
                        ) from None
                    self._after, self._count = pos, self._count + 1
        self._pos = pos
        return values

    def _read_c(self, buf: bytearray, spans: _Spans) -> list[Any]:
        """What the pure loop reads of ``buf`` up to the array's end or an error, by the
        accelerator's ``spans`` (the state in and out); the elements parsed as the loop parses them."""
        flat, self._pos, in_string, self._depth, self._element, after, count = spans(
            buf, self._pos, self._in_string, self._depth, self._element, self._after, self._count
        )
        self._in_string = bool(in_string)
        self._after, self._count, parse, values = after, count, self._parse, []
        if parse is _event and flat and buf.isascii():  # each element starts with a bracket: its
            # Text, sliced out of one decode of the buffer (ASCII: a byte is a character), C-level
            return list(map(Text, map(buf.decode().__getitem__, map(slice, flat[::2], flat[1::2]))))
        for i in range(0, len(flat), 2):
            start = flat[i]
            try:
                values.append(parse(buf[start : flat[i + 1]]))
            except orjson.JSONDecodeError as exc:
                raise JSONArrayError(start, f"element is not valid JSON ({exc})", bytes(buf)) from None
        return values

    def close(self) -> list[Any]:
        """End of the body: a partial element is left out, as `decode` leaves it."""
        self._buf.clear()
        self._done = True
        return []


class _Frames:
    """The eventstream decoder, whose ``close`` returns nothing (an unfinished frame is dropped)."""

    def __init__(self) -> None:
        self._decoder = _FrameDecoder()

    def feed(self, data: bytes) -> list[Any]:
        return list(self._decoder.feed(data))

    def close(self) -> list[Any]:
        self._decoder.close()
        return []


_DECODERS: dict[str, Callable[[], _Decoder]] = {
    "sse": _EventDecoder,
    "ndjson": _Lines,
    "json_array": functools.partial(JSONArrayDecoder, texts=True),
    "eventstream": _Frames,
}
