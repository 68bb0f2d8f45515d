"""Incremental JSON-lines (NDJSON) decoder, for streams such as Ollama's.

Lines end at LF, CRLF (even split across chunks) or a lone CR -- never at U+0085, U+2028 or
U+2029, which may appear raw inside JSON strings -- so splitting happens on ``bytes``, never with
``str.splitlines``. A raw CR cannot be inside a JSON string, so a lone CR ends a line, as it does
for httpx's ``iter_lines`` and requests' ``iter_lines`` (the ``cr`` transform writes such a
stream; a CR written as whitespace inside a line would split it). Blank lines are skipped.

    >>> from ssemock.ndjson import decode
    >>> decode([b'{"message": {"content": "hel', b'lo"}}\\n{"done": true}\\n'])
    [{'message': {'content': 'hello'}}, {'done': True}]
"""

# How it works (for contributors): each chunk is scanned once (twice more when it holds a CR), a
# partial line is kept as pieces and joined once, so the work is linear however the stream is
# chunked. Values are parsed with orjson.loads.

from __future__ import annotations

import re
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator

import orjson

from . import Framing

__all__ = [
    "Decoder",
    "NDJSONError",
    "adecode",
    "decode",
    "iter_decode",
]  # FRAMING, event_ends: the registry's

_BLANK = b" \t\r"  # JSON whitespace other than LF
_EXCERPT = 60


class NDJSONError(ValueError):
    """A line of the stream is not one valid JSON value.

    ``lineno`` is the 1-based line number in the stream (blank lines count), ``line`` the
    raw line.
    """

    def __init__(self, lineno: int, line: bytes, reason: str) -> None:
        text = line.decode("utf-8", "replace").strip(" \t\r")
        excerpt = text if len(text) <= _EXCERPT else text[:_EXCERPT] + "..."
        super().__init__(f"line {lineno}: not valid JSON ({reason}): {excerpt!r}")
        self.lineno = lineno
        """Its line number (1 for the first)."""
        self.line = line
        """The offending line."""


def _parse(lines: list[bytes], first_lineno: int) -> list[object]:
    """Parse ``lines`` (numbered from ``first_lineno``), skipping blank ones."""
    loads = orjson.loads
    try:
        return [loads(line) for line in lines]  # the common case: no blank line, no error
    except orjson.JSONDecodeError:
        pass
    values: list[object] = []
    for i, line in enumerate(lines):
        try:
            values.append(loads(line))
        except orjson.JSONDecodeError as exc:
            if line.strip(_BLANK):
                raise NDJSONError(first_lineno + i, line, str(exc)) from exc
    return values


class Decoder:
    """Incremental JSON-lines decoder: [`feed`][ssemock.ndjson.Decoder.feed] bytes, then [`close`][ssemock.ndjson.Decoder.close]."""

    __slots__ = ("_parts", "_lineno", "_cr")

    def __init__(self) -> None:
        self._parts: list[bytes] = []  # pieces of the current, unterminated line
        self._lineno = 0  # lines completed so far
        self._cr = False  # the last chunk ended with a CR: an LF first in the next is its CRLF's

    def feed(self, chunk: bytes | bytearray | memoryview) -> list[object]:
        """Take the next bytes of the stream; return the values of the lines it completes.

        Raises [`NDJSONError`][ssemock.ndjson.NDJSONError] for a completed line that is not blank and not valid JSON.
        """
        lines = self.feed_lines(chunk)
        return _parse(lines, self._lineno - len(lines) + 1) if lines else []

    def feed_lines(self, chunk: bytes | bytearray | memoryview) -> list[bytes]:
        """`feed`, giving the lines completed as they are (blank ones too), not parsed (the
        secret scan reads a line's text: `ssemock.scan.incremental_framings`)."""
        if type(chunk) is not bytes:
            chunk = bytes(chunk)
        if self._cr:
            self._cr = False
            if chunk[:1] == b"\n":
                chunk = chunk[1:]
        if 13 in chunk:  # CRLF and a lone CR end a line as LF does
            self._cr = chunk.endswith(b"\r")
            chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        if 10 not in chunk:
            if chunk:
                self._parts.append(chunk)
            return []
        lines = chunk.split(b"\n")
        tail = lines.pop()
        parts = self._parts
        if parts:
            parts.append(lines[0])
            lines[0] = b"".join(parts)
            self._parts = parts = []
        if tail:
            parts.append(tail)
        self._lineno += len(lines)
        return lines

    def close(self) -> list[object]:
        """End the stream: parse a final line that has no LF, unless it is blank."""
        lines = self.close_lines()
        return _parse(lines, self._lineno) if lines else []

    def close_lines(self) -> list[bytes]:
        """`close`, giving the final line (if any) as it is, not parsed."""
        parts = self._parts
        self._parts = []
        if not parts:
            return []
        self._lineno += 1
        return [b"".join(parts)]


def iter_decode(chunks: Iterable[bytes]) -> Iterator[object]:
    """Yield the values of a whole JSON-lines stream given as byte chunks, line by line."""
    decoder = Decoder()
    for chunk in chunks:
        yield from decoder.feed(chunk)
    yield from decoder.close()


def decode(chunks: Iterable[bytes]) -> list[object]:
    """The values of a whole JSON-lines stream given as byte chunks."""
    decoder = Decoder()
    values: list[object] = []
    for chunk in chunks:
        values += decoder.feed(chunk)
    values += decoder.close()
    return values


async def adecode(chunks: AsyncIterable[bytes]) -> AsyncIterator[object]:
    """Yield the values of an asynchronous JSON-lines byte stream, line by line."""
    decoder = Decoder()
    async for chunk in chunks:
        for value in decoder.feed(chunk):
            yield value
    for value in decoder.close():
        yield value


def event_ends(body: bytes) -> list[int]:
    """The byte offset after each line's ending: LF, CRLF or a lone CR (a final line without one
    is a partial event)."""
    if b"\r" in body:
        return [m.end() for m in re.finditer(rb"\r\n?|\n", body)]
    ends, find, pos = [], body.find, body.find(b"\n")
    while pos >= 0:
        ends.append(pos + 1)
        pos = find(b"\n", pos + 1)
    return ends


_MEDIA_TYPES = frozenset(
    {
        "application/x-ndjson",
        "application/ndjson",
        "application/jsonl",
        "application/json-lines",
        "application/x-jsonlines",
        "application/jsonlines",
        "application/stream+json",  # Cohere v1 chat, Spring WebFlux's JSON streams
    }
)


def _decode_body(body: bytes) -> list[object]:
    return decode([body])


def _sniff(body: bytes) -> bool:
    return body.lstrip().startswith(b"{")


FRAMING = Framing(
    name="ndjson",
    decode=_decode_body,
    event_ends=event_ends,
    content_type=_MEDIA_TYPES.__contains__,
    sniff=_sniff,
    example=("application/x-ndjson", b'{"n": 1}\n{"n": 2}\n{"n": 3}\n{"n": 4, "done": true}\n'),
)
