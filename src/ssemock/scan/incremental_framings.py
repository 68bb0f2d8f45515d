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
from collections.abc import Callable
from operator import itemgetter
from typing import Any, Protocol

import orjson

from .. import framing
from ..framing.eventstream import Decoder as _FrameDecoder
from ..framing.json_array import Elements, parsed
from ..framing.ndjson import Decoder as _LineDecoder
from ..framing.sse import Decoder as _EventDecoder

__all__ = ["Framed", "JSONArrayDecoder", "Text", "decoder", "wanted"]

_SPACE = b" \t\n\r\x0b\x0c"  # what bytes.strip() strips
_SNIFFED = ("application/json",)  # a media type that may be a JSON array stream, told by its first byte
_BLANK = b" \t\r"  # a JSON line of these alone is skipped (`ssemock.framing.ndjson`)
_FIRST = itemgetter(0)
_OPENING = {ord("{"), ord("[")}


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
    nothing more is read. The bytes held are those of the element being read; the elements are
    found by `ssemock.framing.json_array.Elements`, its state resumed chunk to chunk."""

    def __init__(self, texts: bool = False) -> None:
        self._parse: Callable[[bytes | bytearray], Any] = _event if texts else orjson.loads
        self._buf = bytearray()
        self._elements = Elements()

    def feed(self, data: bytes) -> list[Any]:
        """The elements ``data`` completes, parsed."""
        if self._elements.done or not data:
            return []
        buf = self._buf
        buf += data
        flat = self._elements.spans(buf)
        if self._parse is _event and flat and buf.isascii():  # each element starts with a bracket:
            # its Text, sliced out of one decode of the buffer (ASCII: a byte is a character), C-level
            values = list(map(Text, map(buf.decode().__getitem__, map(slice, flat[::2], flat[1::2]))))
        else:
            values = parsed(buf, flat, self._parse)
        keep = self._elements.held()
        if keep > 0:
            del buf[:keep]
            self._elements.forget(keep)
        return values

    def close(self) -> list[Any]:
        """End of the body: a partial element is left out, as `decode` leaves it."""
        self._buf.clear()
        self._elements.done = True
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
