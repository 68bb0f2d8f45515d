"""Reading a HAR file one entry at a time: ``log.entries`` parsed entry by entry from a window of
the file's text, so that ``import-har`` never holds the whole document parsed (a HAR of bodies is
several times its size once parsed into Python strings and dicts). The JSON rules are the
cassette's (no NaN or Infinity, a number a float can hold; a lone surrogate in a string the
import keeps is refused where it is read): a HAR a cassette could not hold is refused, never
written."""

from __future__ import annotations

import codecs
import json
import math
import os
import re
from collections.abc import Iterator
from typing import IO, Any

from ..store.model import CassetteError
from ..store.reading import open_regular

__all__ = ["HarError", "har_entries"]

_WINDOW = 1 << 18  # bytes of the file read at a time
_SPACE = re.compile(r"[ \t\n\r]*")


class HarError(CassetteError):
    """A HAR file ssemock cannot read: the message names the file, the entry and the field
    (``entry``: the index in ``log.entries``, when one is at fault)."""

    def __init__(
        self, reason: str, *, path: str | os.PathLike[str] | None = None, entry: int | None = None
    ) -> None:
        super().__init__(reason, path=path)
        self.entry = entry
        """The index of the entry at fault in ``log.entries``, when one is."""


class _Refused(ValueError):
    """JSON the cassette's parser refuses, though Python's reads it."""


def _refuse_constant(name: str) -> Any:
    raise _Refused(f"{name} is not a JSON value")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _Refused(f"the number {text[:40]} is out of a float's range")
    return value


def _int(text: str) -> int | float:
    """An integer; one beyond 64 bits as a float, as the cassette's JSON reads it (orjson)."""
    if len(text) > 20:
        return _finite(text)
    value = int(text)
    return value if -(2**63) <= value < 2**64 else float(value)


_DECODER = json.JSONDecoder(parse_constant=_refuse_constant, parse_float=_finite, parse_int=_int)


class _Text:
    """The file's text, read a window at a time; ``pos`` is where reading is in ``buf``."""

    def __init__(self, fh: IO[bytes], path: str | os.PathLike[str]) -> None:
        self.fh, self.path = fh, path
        self.utf8 = codecs.getincrementaldecoder("utf-8-sig")()
        self.buf, self.pos, self.eof, self.done = "", 0, False, 0

    def _more(self, at_least: int = _WINDOW) -> None:
        """Read on (at least ``at_least`` bytes), dropping what was read already."""
        raw = self.fh.read(max(_WINDOW, at_least))
        self.eof = not raw
        try:
            text = self.utf8.decode(raw, final=self.eof)
        except UnicodeDecodeError as exc:
            raise HarError(f"not UTF-8 (at byte {self.done + exc.start:,})", path=self.path) from None
        self.done += len(raw)
        self.buf, self.pos = self.buf[self.pos :] + text, 0

    def peek(self) -> str:
        """The next character that is not white space ("" at the end of the file)."""
        while True:
            self.pos = _SPACE.match(self.buf, self.pos).end()  # type: ignore[union-attr]
            if self.pos < len(self.buf) or self.eof:
                return self.buf[self.pos : self.pos + 1]
            self._more()

    def take(self, char: str, what: str) -> None:
        if self.peek() != char:
            raise HarError(f"not JSON: expected {char!r} {what}, found {self.peek()[:1]!r}", path=self.path)
        self.pos += 1

    def value(self) -> Any:
        """The next JSON value, read on until the window holds all of it."""
        self.peek()
        while True:
            try:
                value, end = _DECODER.raw_decode(self.buf, self.pos)
            except (_Refused, RecursionError) as exc:
                raise HarError(
                    f"not JSON as a cassette reads it ({str(exc)[:200] or 'nested too deep'})", path=self.path
                ) from None
            except ValueError as exc:
                if not self.eof:
                    self._more(len(self.buf))  # a value cut by the window's end: twice the window
                    continue
                raise HarError(f"not JSON ({str(exc)[:200]})", path=self.path) from None
            if end == len(self.buf) and not self.eof:  # a number may go on past the window
                self._more(len(self.buf))
                continue
            self.pos = end
            if len(self.buf) > 2 * _WINDOW and self.pos > len(self.buf) // 2:
                self.buf, self.pos = self.buf[self.pos :], 0  # let a large entry's text go
            return value

    def keys(self, where: str) -> Iterator[str]:
        """The keys of the object that starts here, each left for the caller to read its value."""
        self.take("{", f"to open {where}")
        if self.peek() == "}":
            self.pos += 1
            return
        while True:
            if self.peek() != '"':
                raise HarError(f"not JSON: a key of {where} is not a string", path=self.path)
            key = self.value()
            self.take(":", f"after the key {str(key)[:40]!r} of {where}")
            yield key
            if self.peek() == ",":
                self.pos += 1
                continue
            self.take("}", f"to close {where}")
            return


def _kind(value: Any) -> str:
    return {dict: "dict", list: "list", str: "str", bool: "bool", int: "int", float: "float"}.get(
        type(value), "null"
    )


def har_entries(path: str | os.PathLike[str]) -> Iterator[tuple[int, Any]]:
    """``(index, entry)`` for each entry of ``log.entries`` of the HAR at ``path``, parsed one at
    a time (HarError for a file that is not a HAR: not UTF-8, not JSON, no ``log.entries``)."""
    try:
        fh = open_regular(path)
    except CassetteError as exc:
        raise HarError(exc.reason, path=path) from None
    with fh:
        text = _Text(fh, path)
        try:
            yield from _document(text, path)
        except OSError as exc:
            raise HarError(f"cannot read: {exc.strerror or exc}", path=path) from exc
        if text.peek():
            raise HarError("not JSON: something follows the document", path=path)


def _document(text: _Text, path: str | os.PathLike[str]) -> Iterator[tuple[int, Any]]:
    if text.peek() != "{":
        found = _kind(text.value()) if text.peek() else "nothing"
        raise HarError(f"expected an object with a log, got {found}", path=path)
    seen = False
    for key in text.keys("the document"):
        if key != "log":
            text.value()
            continue
        if seen:
            raise HarError("log appears twice", path=path)
        seen = True
        if text.peek() != "{":
            raise HarError(f"log: expected dict, got {_kind(text.value())}", path=path)
        yield from _log(text, path)
    if not seen:
        raise HarError("log is missing", path=path)


def _log(text: _Text, path: str | os.PathLike[str]) -> Iterator[tuple[int, Any]]:
    seen = False
    for key in text.keys("log"):
        if key != "entries":
            text.value()
            continue
        if seen:
            raise HarError("log.entries appears twice", path=path)
        seen = True
        if text.peek() != "[":
            raise HarError(f"log.entries: expected list, got {_kind(text.value())}", path=path)
        text.pos += 1
        index = 0
        if text.peek() == "]":
            text.pos += 1
            continue
        while True:
            yield index, text.value()
            index += 1
            if text.peek() == ",":
                text.pos += 1
                continue
            text.take("]", "to close log.entries")
            break
    if not seen:
        raise HarError("log: entries is missing", path=path)
