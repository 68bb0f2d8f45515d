"""Cassettes: lossless, readable, deterministic JSON files of recorded streaming interactions.

A response body is kept as text split into one string per SSE event (or JSON line) so a person
can read and edit it; chunk boundaries are a separate map of ``[t_ms, end_offset]`` pairs (one a
line) over the body's bytes, so a boundary may fall inside a UTF-8 character. Bodies that are not
UTF-8 are base64.
"""

# The Cassette class, and the home of the format's public names. Its parts, by concern: the
# model (model.py), cassette JSON to the model (parsing.py), the file read (reading.py), its
# size guard (size_guard.py), the model to JSON (dumping.py), the atomic save (saving.py).

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson

from ..scan.walk import scan_cassette
from .dumping import write_document
from .layout import body_ends as body_ends  # body_ends: inspect and vcr use it from here
from .model import HOP_HEADERS as HOP_HEADERS
from .model import MAX_DEPTH as MAX_DEPTH
from .model import MAX_T_MS as MAX_T_MS
from .model import VERSION, CassetteError, Interaction, Request, Response, SecretError, _headers
from .model import Headers as Headers
from .parsing import parse_interaction as parse_interaction
from .parsing import read_document as read_document
from .parsing import read_parts
from .reading import LEAN_MIN_SIZE as LEAN_MIN_SIZE
from .reading import _read_bodies_apart
from .reading import open_regular as open_regular
from .reading import read_file as read_file
from .saving import STALE_AFTER as STALE_AFTER
from .saving import save_atomically
from .size_guard import BYTES_PER_VALUE as BYTES_PER_VALUE
from .size_guard import FREE_VALUES as FREE_VALUES
from .size_guard import check_size as check_size
from .stdio import StdioSession

__all__ = ["Cassette", "CassetteError", "Interaction", "Request", "Response", "SecretError", "VERSION"]


def split_body(body: bytes, content_type: str | None) -> list[bytes]:
    """Cut a body into readable pieces: one SSE event each, or one line for other types."""
    ends = body_ends(body, content_type)
    return [body[a:b] for a, b in zip([0, *ends], ends)]


class Cassette:
    """An ordered list of interactions, loadable from and savable to one JSON file."""

    def __init__(
        self,
        interactions: Iterable[Interaction] = (),
        *,
        path: str | os.PathLike[str] | None = None,
        stdio: Iterable[StdioSession] = (),
    ) -> None:
        self.interactions: list[Interaction] = list(interactions)
        """The recorded exchanges, in the order they were recorded (and replayed)."""
        self.stdio: list[StdioSession] = list(stdio)
        """The child processes recorded through their pipes (``stdio=[...]``), in the order they
        started (see [stdio servers](../guide/stdio.md))."""
        self.path = None if path is None else Path(path)
        """The JSON file the cassette was loaded from or is saved to (`None`: in memory only)."""

    def __len__(self) -> int:
        return len(self.interactions)

    def __repr__(self) -> str:
        return f"<Cassette {self.path or '(memory)'}: {len(self.interactions)} interactions>"

    def add(
        self,
        method: str,
        url: str,
        chunks: Sequence[bytes],
        *,
        times: Sequence[float] | None = None,
        status: int = 200,
        headers: Mapping[str, str] | Iterable[tuple[str, str]] | None = None,
        request_headers: Mapping[str, str] | Iterable[tuple[str, str]] | None = None,
        request_body: bytes | str | None = None,
        request_json: Any = None,
        complete: bool = True,
        error: dict[str, Any] | None = None,
    ) -> Interaction:
        """Append an interaction built in code; ``times`` are arrival times in seconds."""
        chunks = [c.encode() if isinstance(c, str) else bytes(c) for c in chunks]
        if times is not None and len(times) != len(chunks):
            raise ValueError(f"times has {len(times)} entries for {len(chunks)} chunks")
        empty = [k for k, c in enumerate(chunks) if not c]
        if empty:
            raise ValueError(f"chunk {empty[0]} is empty: a chunk boundary needs at least one byte")
        if times is not None and any(
            not (0 <= a <= b <= MAX_T_MS / 1000) for a, b in zip([0.0, *times], times)
        ):
            raise ValueError(
                "times must be finite, >= 0, non-decreasing and at most a day (seconds since the "
                f"request), got {list(times)[:10]}{' ...' if len(times) > 10 else ''}"
            )
        if type(status) is not int or not 100 <= status <= 599:
            raise ValueError(f"status must be an HTTP status code (100-599), got {status!r}")
        body = request_body.encode() if isinstance(request_body, str) else request_body
        if request_json is not None:
            body = orjson.dumps(request_json)
        resp_headers = _headers(headers)
        if not any(k == "content-type" for k, _ in resp_headers):
            resp_headers.append(("content-type", "text/event-stream"))
        ends = list(itertools.accumulate(map(len, chunks)))
        interaction = Interaction(
            Request(method.upper(), url, _headers(request_headers), body),
            Response(
                status,
                resp_headers,
                b"".join(chunks),
                ends,
                [float(t) for t in times] if times is not None else [0.0] * len(chunks),
                complete,
                error,
            ),
        )
        self.interactions.append(interaction)
        return interaction

    # -- files -----------------------------------------------------------------------------

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Cassette:
        """Read a cassette file; any problem raises CassetteError naming the file."""
        parts = _read_bodies_apart(path)
        if parts is None:
            parts = read_parts(read_file(path), path=path)  # the file's bytes are freed here
        return cls._parsed(*parts, path)

    @classmethod
    def loads(cls, raw: bytes | str, *, path: str | os.PathLike[str] | None = None) -> Cassette:
        """Parse cassette JSON text; ``path`` is only used in error messages."""
        return cls._parsed(*read_parts(raw, path=path), path)

    @classmethod
    def _parsed(
        cls, items: list[Any], stdio: list[StdioSession], path: str | os.PathLike[str] | None
    ) -> Cassette:
        return cls(
            [parse_interaction(item, path=path, index=i, consume=True) for i, item in enumerate(items)],
            path=path,
            stdio=stdio,
        )

    def dumps(self) -> bytes:
        """Deterministic JSON: fixed key order, 2-space indent, trailing newline, and each
        ``[t_ms, end]`` pair of a chunk map on a line of its own."""
        out: list[bytes | memoryview] = []
        self._write(out.append, out.clear)
        return b"".join(out)

    def _write(self, write: Callable[[bytes | memoryview], object], restart: Callable[[], object]) -> None:
        """The JSON of [`dumps`][ssemock.Cassette.dumps], handed out in parts as it is made
        (`ssemock.store.dumping.write_document`): ``restart()`` drops what was written so far."""
        write_document(self.interactions, self.path, write, restart, self.stdio)

    def save(self, path: str | os.PathLike[str] | None = None, *, scan_secrets: bool = True) -> Path:
        """Write atomically (temp file in the same folder + os.replace), after the secret scan
        (`ssemock.scan.walk.scan_cassette`): a cassette holding a secret raises
        `SecretError` and nothing is written. ``scan_secrets=False`` skips the scan: for
        data you have just scanned yourself, or fake keys you mean to keep (a test of your own
        scanner); never for a recording.

        Temp files an earlier save of the same cassette left behind (its process was killed) are
        removed first (`ssemock.store.saving`)."""
        target = Path(path) if path is not None else self.path
        if target is None:
            raise ValueError("Cassette.save() needs a path for an in-memory cassette")
        if scan_secrets:
            findings = scan_cassette(self)
            if findings:
                raise SecretError(findings, path=target)
        save_atomically(target, self._write)
        self.path = target
        return target
