"""Reading a cassette file: a regular file only (a FIFO, a device or a socket is refused
without blocking on it), and a large one with its bodies read apart from the rest of the
document, so that the file, the parsed document and the bodies are never in memory at once."""

from __future__ import annotations

import mmap
import os
import secrets
import stat
from typing import IO, Any

import orjson

from .model import CassetteError
from .parsing import _interactions, stdio_of
from .size_guard import check_size
from .stdio import StdioSession

__all__ = ["LEAN_MIN_SIZE", "open_regular", "read_file"]


def open_regular(path: str | os.PathLike[str]) -> IO[bytes]:
    """``path`` opened for reading, if it is a regular file: a FIFO, a device (``/dev/zero``), a
    socket or a directory is refused at once (CassetteError), without blocking or reading it."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        try:
            _check_regular(os.stat(path).st_mode, path)  # a socket cannot be opened at all
        except OSError:
            pass
        raise CassetteError(f"cannot read: {exc.strerror or exc}", path=path) from exc
    try:
        _check_regular(os.fstat(fd).st_mode, path)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _check_regular(mode: int, path: str | os.PathLike[str]) -> None:
    if not stat.S_ISREG(mode):
        kind = (
            "a directory"
            if stat.S_ISDIR(mode)
            else "a FIFO (named pipe)"
            if stat.S_ISFIFO(mode)
            else "a device"
            if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
            else "a socket"
            if stat.S_ISSOCK(mode)
            else "something else"
        )
        raise CassetteError(f"cannot read: it is {kind}, not a regular file", path=path)


def read_file(path: str | os.PathLike[str]) -> bytes:
    """A cassette file's bytes (CassetteError naming the file when it cannot be read, or is not
    a regular file)."""
    with open_regular(path) as fh:
        try:
            return fh.read()
        except OSError as exc:
            raise CassetteError(f"cannot read: {exc.strerror or exc}", path=path) from exc


LEAN_MIN_SIZE = 1 << 20  # files from this size on are read by _read_bodies_apart
_BODY_START = b'\n        "body": [\n'  # a body's key and list in the layout write_document makes
_BODY_END = b"\n        ]"
_BATCH = 1 << 20


def _read_bodies_apart(path: str | os.PathLike[str]) -> tuple[list[Any], list[StdioSession]] | None:
    """The interaction list (and the child processes) of a large cassette in the layout ``write_document`` makes, read
    without the file, the parsed document and the bodies in memory at once (about 2x the body at
    the peak instead of 3x): the lines of each body list are parsed ~1 MB at a time and encoded
    at once, the rest of the file is parsed as one small document with a placeholder for each
    body.

    The result is exactly what parsing the whole file gives (a split only falls on a comma that
    ends a line, which no JSON string can hold). None for a small file or any other layout or
    problem: the caller then parses the whole file, which also gives the authoritative error."""
    try:
        with open_regular(path) as fh:
            size = os.fstat(fh.fileno()).st_size
            if size < LEAN_MIN_SIZE:
                return None
            with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
                token = f"\x00ssemock:{secrets.token_hex(8)}:"
                rest: list[bytes] = []
                bodies: list[bytes] = []
                pos = 0
                while (start := mm.find(_BODY_START, pos)) >= 0:
                    end = mm.find(_BODY_END, start + len(_BODY_START) - 1)
                    if end < 0:
                        return None
                    rest += [mm[pos : start + len(_BODY_START) - 1], orjson.dumps(f"{token}{len(bodies)}")]
                    body = _read_body_lines(mm, start + len(_BODY_START), end)
                    if body is None:
                        return None
                    bodies.append(body)
                    pos = end
                rest.append(mm[pos:])
        document = b"".join(rest)
        del rest
    except (OSError, ValueError, CassetteError):
        return None
    check_size(document, path=path, size=size)  # the file's own error: raised, not retried whole
    try:
        data = orjson.loads(document)
        items, stdio = _interactions(data, path), stdio_of(data, path)
    except (ValueError, CassetteError):  # orjson.JSONDecodeError is a ValueError
        return None
    found = 0
    for item in items:
        for side in (item.get("request"), item.get("response")) if isinstance(item, dict) else ():
            if isinstance(side, dict) and side.get("body") == [f"{token}{found}"]:
                side["body"] = bodies[found]  # bytes: _body_from_json takes them as they are
                found += 1
    return (items, stdio) if found == len(bodies) else None


def _read_body_lines(mm: mmap.mmap, start: int, end: int) -> bytes | None:
    """The UTF-8 of the JSON string list between ``start`` and ``end`` of ``mm`` (its brackets
    left out), parsed in batches of whole lines; None unless it is a list of strings."""
    parts, view = [], memoryview(mm)
    try:
        while start < end:
            cut = end if end - start <= _BATCH else mm.rfind(b",\n", start, start + _BATCH)
            if cut < 0:  # one line longer than a batch
                cut = mm.find(b",\n", start, end)
                cut = end if cut < 0 else cut
            if cut == start:  # a comma with no value before it: not JSON
                return None
            batch = bytearray(b"[")
            batch += view[start:cut]
            batch += b"]"
            _release(mm, start, cut)
            pieces = orjson.loads(batch)
            del batch
            if type(pieces) is not list or not set(map(type, pieces)) <= {str}:
                return None
            parts.append("".join(pieces).encode("utf-8"))
            start = cut + 2
    except orjson.JSONDecodeError:
        return None
    finally:
        view.release()
    return b"".join(parts)


def _release(mm: mmap.mmap, start: int, end: int) -> None:
    """Let the kernel drop the file's pages between ``start`` and ``end`` from this process's
    memory (they stay in the page cache; touching them again reads them back)."""
    if hasattr(mm, "madvise") and hasattr(mmap, "MADV_DONTNEED"):
        start -= start % mmap.PAGESIZE
        mm.madvise(mmap.MADV_DONTNEED, start, end - start)
