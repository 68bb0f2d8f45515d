"""Cassettes: lossless, readable, deterministic JSON files of recorded streaming interactions.

A response body is kept as text split into one string per SSE event (or JSON line) so a person
can read and edit it; chunk boundaries are a separate map of ``[t_ms, end_offset]`` pairs (one a
line) over the body's bytes, so a boundary may fall inside a UTF-8 character. Bodies that are not
UTF-8 are base64.
"""

# Long on purpose: the cassette file's data model, load (with its size guard), dumps (body windows
# and compact chunk maps) and atomic save share the layout's markers and must change together.

from __future__ import annotations

import base64
import binascii
import codecs
import hashlib
import itertools
import math
import mmap
import operator
import os
import re
import secrets
import stat
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import orjson

from ..framing.accelerator import values as _c_values
from ..scan.shapes import safe_message
from ..scan.walk import Finding, scan_cassette
from .layout import body_ends as body_ends  # body_ends: inspect and vcr use it from here
from .layout import laid_out, pieces

__all__ = ["Cassette", "CassetteError", "Interaction", "Request", "Response", "SecretError", "VERSION"]

VERSION = 1
MAX_T_MS = 86_400_000  # a chunk time is at most a day after the request (ms), so timing can sleep it
MAX_DEPTH = 250  # request.json and response.error nest at most this deep (orjson writes 254 levels)
FREE_VALUES = 1_000_000  # a cassette may hold this many JSON values at any size ...
BYTES_PER_VALUE = 16  # ... and one more per 16 bytes (ssemock's indented layout takes more)
_PAIR_BREAK = b"],\n          ["  # between two chunk map pairs (10 spaces in): see check_size


class CassetteError(ValueError):
    """A cassette file is malformed, of an unknown version, or disagrees with itself."""

    def __init__(
        self, reason: str, *, path: str | os.PathLike[str] | None = None, interaction: int | None = None
    ) -> None:
        self.path = None if path is None else str(path)
        """The cassette file, when the cassette has one."""
        self.interaction = interaction
        """The index of the interaction at fault, when one is."""
        self.reason = reason = safe_message(
            reason
        )  # a message may quote a value: never a key, never an escape
        """What is wrong, and what to do about it (secrets masked, control characters escaped)."""
        where = [
            safe_message(p)
            for p in (self.path, None if interaction is None else f"interaction {interaction}")
            if p
        ]
        super().__init__(": ".join([*where, reason]))


class SecretError(CassetteError):
    """A write of cassette data was refused: a secret is left in it. ``findings`` says where,
    which rule found each one and what its value looks like (never the value)."""

    def __init__(
        self,
        findings: list[Finding],
        *,
        path: str | os.PathLike[str] | None = None,
        advice: str = "redact it with before_record_request/before_record_response, or `ssemock redact`",
        message: str | None = None,
    ) -> None:
        self.findings = findings
        """Each secret found: where, which rule, the value's shape (never the value)."""
        super().__init__(
            message
            if message is not None
            else (
                "refusing to save: a secret is left in the cassette: "
                + "; ".join(map(str, findings))
                + f" ({advice})"
            ),
            path=path,
        )


Headers = list[tuple[str, str]]


def _headers(value: Mapping[str, str] | Iterable[tuple[str, str]] | None) -> Headers:
    items = value.items() if isinstance(value, Mapping) else (value or [])
    return [(str(k).lower(), str(v)) for k, v in items]


@dataclass
class Request:
    """The request of an interaction, as stored (already redacted)."""

    method: str
    """The HTTP method (`"POST"`)."""
    url: str
    """The full URL, query included."""
    headers: Headers = field(default_factory=list)
    """The request headers as `(name, value)` pairs, names lower-cased."""
    body: bytes | None = None
    """The body sent; `None` matches any body."""

    def json(self) -> Any:
        """The body parsed as JSON, or None when it is absent or not JSON."""
        return _try_json(self.body)


@dataclass
class Response:
    """A recorded response: the exact bytes, the chunk ends as received, and their times."""

    status: int = 200
    """The HTTP status code."""
    headers: Headers = field(default_factory=list)
    """The response headers as `(name, value)` pairs, names lower-cased."""
    body: bytes = b""
    """The body, exactly as received."""
    ends: list[int] = field(default_factory=list)
    """The end offset of each chunk in `body`, as received."""
    times: list[float] = field(default_factory=list)
    """When each chunk arrived, in seconds after the request."""
    complete: bool = True
    """Whether the stream ended normally (`False`: the recording saw it break off)."""
    error: dict[str, Any] | None = None
    """The failure seen mid-stream while recording."""
    _cut: tuple[tuple[int, int, int], list[bytes]] | None = field(default=None, repr=False, compare=False)

    @property
    def chunks(self) -> list[bytes]:
        """The body cut at its recorded boundaries: one `bytes` per chunk, as received."""
        # cut once, then cached (keyed by the body and ends objects)
        key = (id(self.body), id(self.ends), len(self.ends))
        if self._cut is None or self._cut[0] != key:
            body, starts = self.body, [0, *self.ends]
            self._cut = (key, [body[a:b] for a, b in zip(starts, self.ends)])
        return self._cut[1]

    def header(self, name: str, default: str | None = None) -> str | None:
        """The first value of header ``name`` (any case), or ``default``."""
        name = name.lower()
        return next((v for k, v in self.headers if k == name), default)


@dataclass
class Interaction:
    """One recorded exchange: the request sent and the response streamed back."""

    request: Request
    """The request sent (already redacted)."""
    response: Response
    """The response streamed back."""


def _try_json(body: bytes | None) -> Any:
    if not body:
        return None
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError:
        return None


def split_body(body: bytes, content_type: str | None) -> list[bytes]:
    """Cut a body into readable pieces: one SSE event each, or one line for other types."""
    ends = body_ends(body, content_type)
    return [body[a:b] for a, b in zip([0, *ends], ends)]


class Cassette:
    """An ordered list of interactions, loadable from and savable to one JSON file."""

    def __init__(
        self, interactions: Iterable[Interaction] = (), *, path: str | os.PathLike[str] | None = None
    ) -> None:
        self.interactions: list[Interaction] = list(interactions)
        """The recorded exchanges, in the order they were recorded (and replayed)."""
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
        items = _read_bodies_apart(path)
        if items is None:
            items = read_document(read_file(path), path=path)  # the file's bytes are freed here
        return cls._parsed(items, path)

    @classmethod
    def loads(cls, raw: bytes | str, *, path: str | os.PathLike[str] | None = None) -> Cassette:
        """Parse cassette JSON text; ``path`` is only used in error messages."""
        return cls._parsed(read_document(raw, path=path), path)

    @classmethod
    def _parsed(cls, items: list[Any], path: str | os.PathLike[str] | None) -> Cassette:
        return cls(
            [parse_interaction(item, path=path, index=i, consume=True) for i, item in enumerate(items)],
            path=path,
        )

    def dumps(self) -> bytes:
        """Deterministic JSON: fixed key order, 2-space indent, trailing newline, and each
        ``[t_ms, end]`` pair of a chunk map on a line of its own."""
        out: list[bytes | memoryview] = []
        self._write(out.append, out.clear)
        return b"".join(out)

    def _write(self, write: Callable[[bytes | memoryview], object], restart: Callable[[], object]) -> None:
        """The JSON of [`dumps`][ssemock.Cassette.dumps], handed out in parts: orjson lays out everything but the
        response bodies, which are laid out a window at a time (saving a large recording needs
        no second copy of its body), and the chunk maps, a pair a line (orjson's indent would
        give each number a line: four lines a chunk).

        A body is taken for text when its first bytes are UTF-8, and the rest is checked as it is
        laid out (no pass of its own); if it is not, ``restart()`` drops what was written and the
        document is written again with that body in base64, and every body checked first."""
        binary: set[int] = set()
        while True:
            try:
                return self._write_once(write, binary)
            except _NotText as exc:
                binary.add(exc.index)
                restart()

    def _write_once(self, write: Callable[[bytes | memoryview], object], binary: set[int]) -> None:
        bodies, items, maps = [], [], []
        for i, x in enumerate(self.interactions):
            # after a restart, every body is checked whole first: a second restart is never needed
            text = i not in binary and _utf8_prefix(x.response.body, None if binary else _TEXT_PREFIX)
            try:
                item = _interaction_to_json(x, lazy=True, text=text)
            except _Invalid as exc:  # never write a file that would not load
                raise CassetteError(f"refusing to save: {exc}", path=self.path, interaction=i) from None
            if text:
                bodies.append((i, x.response))
            maps.append(item["response"]["chunks"])
            item["response"]["chunks"] = _MAP
            items.append(item)
        laid = orjson.dumps(
            {"version": VERSION, "interactions": items},
            option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE,
        )
        parts = laid.split(_BODY_JSON)
        if len(parts) != len(bodies) + 1 or laid.count(_MAP_JSON) != len(maps):
            raise CassetteError(
                "a header, URL or body holds one of ssemock's internal placeholders", path=self.path
            )
        pairs = iter(maps)
        _write_maps(parts[0], pairs, write)
        for before, (i, resp), after in zip(parts, bodies, parts[1:]):
            line = before[before.rfind(b"\n") + 1 :]
            nested = b"\n" + b" " * (len(line) - len(line.lstrip(b" ")))
            try:
                for part in laid_out(resp.body, resp.header("content-type"), nested):
                    write(part)
            except UnicodeDecodeError:
                raise _NotText(i) from None
            _write_maps(after, pairs, write)

    def save(self, path: str | os.PathLike[str] | None = None, *, scan_secrets: bool = True) -> Path:
        """Write atomically (temp file in the same folder + os.replace), after the secret scan
        (`ssemock.scan.walk.scan_cassette`): a cassette holding a secret raises
        `SecretError` and nothing is written. ``scan_secrets=False`` skips the scan: for
        data you have just scanned yourself, or fake keys you mean to keep (a test of your own
        scanner); never for a recording.

        Temp files an earlier save of the same cassette left behind (its process was killed) are
        removed first; see `_stale_temp_files`."""
        target = Path(path) if path is not None else self.path
        if target is None:
            raise ValueError("Cassette.save() needs a path for an in-memory cassette")
        if scan_secrets:
            findings = scan_cassette(self)
            if findings:
                raise SecretError(findings, path=target)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            for stale in _stale_temp_files(target):
                try:
                    stale.unlink()
                except OSError:
                    pass  # gone already, or not ours to remove
            tmp = _temp_name(target)
            # created with 0666 & ~umask like any new file (mkstemp would make it 0600); an
            # existing cassette keeps its mode
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
            try:
                with os.fdopen(fd, "wb") as fh:
                    self._write(fh.write, lambda: (fh.seek(0), fh.truncate()))
                    fh.flush()
                    os.fsync(fh.fileno())
                if target.exists():
                    os.chmod(tmp, target.stat().st_mode & 0o7777)
                os.replace(tmp, target)
            except BaseException:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
                raise
        except OSError as exc:
            exc.add_note(
                f"ssemock: while saving the cassette {target} (the previous file, if any, is unchanged)"
            )
            raise
        self.path = target
        return target


# -- temp files of a save ----------------------------------------------------------------------

STALE_AFTER = 3600.0  # seconds: a temp file this old is stale whoever wrote it
_TEMP = re.compile(r"\.(?P<name>.*)\.(?P<key>[0-9a-f]{12})\.(?P<pid>[0-9]+)\.[0-9a-f]{8}\.tmp")
_OLD_TEMP = re.compile(r"\.(?P<name>.*)\.(?P<pid>[0-9]+)\.[0-9a-f]{8}\.tmp")  # before the key was added


def _name_key(name: str) -> str:
    return hashlib.sha1(os.fsencode(name)).hexdigest()[:12]


def _temp_name(target: Path) -> Path:
    """``.NAME.KEY.PID.TOKEN.tmp`` beside ``target``: hidden, named ``*.tmp`` so it is never taken
    for a cassette, carrying the writer's pid and a hash of the cassette's name (so a later save
    finds it), with NAME shortened as needed to stay within the file system's NAME_MAX."""
    try:
        limit = os.pathconf(target.parent, "PC_NAME_MAX")
    except (OSError, ValueError, AttributeError):
        limit = 255
    tail = f".{_name_key(target.name)}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
    name = target.name[: max(limit - len(tail) - 1, 0)]
    while name and len(os.fsencode(f".{name}{tail}")) > limit:  # multi-byte characters: cut by whole ones
        name = name[:-1]
    return target.with_name(f".{name}{tail}")


def _stale_temp_files(target: Path, now: float | None = None) -> list[Path]:
    """Temp files of earlier saves of ``target`` that nobody will finish: their writer's process
    is gone (another pid on this machine), or they are older than `STALE_AFTER`. A temp
    file of a live process -- another test worker saving the same cassette -- is left alone."""
    key, found = _name_key(target.name), []
    now = time.time() if now is None else now
    try:
        entries = list(os.scandir(target.parent))
    except OSError:
        return []
    for entry in entries:
        if not (entry.name.startswith(".") and entry.name.endswith(".tmp")):
            continue
        m = _TEMP.fullmatch(entry.name)
        if m is None or m["key"] != key:
            m = _OLD_TEMP.fullmatch(entry.name)
            if m is None or m["name"] != target.name:
                continue
        try:
            age = now - entry.stat(follow_symlinks=False).st_mtime
        except OSError:
            continue
        pid = int(m["pid"])
        if age > STALE_AFTER or (pid != os.getpid() and not _alive(pid)):
            found.append(Path(entry.path))
    return found


def _alive(pid: int) -> bool:
    """Whether a process ``pid`` exists on this machine (one we may not signal counts too)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError, OverflowError):
        return True
    return True


# -- JSON mapping ------------------------------------------------------------------------------


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


_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')


def _py_values(data: bytes) -> int:
    """About how many JSON values ``data`` holds: every one after the first in a list or object
    follows a comma, every list or object opens with a bracket."""
    return data.count(b",") + data.count(b"[") + data.count(b"{")


_values = _c_values or _py_values  # the optional C accelerator: the same count in one pass


def check_size(
    raw: bytes | str, *, path: str | os.PathLike[str] | None = None, size: int | None = None
) -> None:
    """Refuse JSON text with more values than a cassette of its size can hold (CassetteError),
    before a parser builds them: 100 MB of ``{},{},...`` would take GBs as Python objects. Parsed
    memory then stays within a small multiple of the file (one value per 16 bytes at most, past
    the first million). In ssemock's own layout every value takes a line of its own but for the
    chunk maps' ``[t_ms, end]`` pairs, three values to a line of 20 bytes or more; so the break
    between two pairs (``],``, newline, indent, ``[``: 14 bytes) is not counted and a pair counts
    as one value (a file of nothing but such breaks holds an empty list per 14 bytes: as bounded).

    ``size``: the whole file's, when ``raw`` is the file without its bodies."""
    data = raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else raw
    size = len(data) if size is None else size
    limit = FREE_VALUES + size // BYTES_PER_VALUE
    if len(data) // 2 + 1024 <= limit:  # a value takes 2 bytes, or 1 in a chain of brackets (at
        return  # most 1024 deep): a small document needs no count
    count = _values(data)
    if count <= limit or (count := count - 2 * data.count(_PAIR_BREAK)) <= limit:
        return  # what strings hold only lowers the count (a break in one is two values of its own)
    for m in _STRING.finditer(data):  # strings' own don't count
        text = m.group()
        count -= _values(text) - 2 * text.count(_PAIR_BREAK)
    if count > limit:
        raise CassetteError(
            f"holds about {count:,} JSON values in {size:,} bytes, more than a cassette "
            f"of this size may ({limit:,}: {FREE_VALUES:,} and one per {BYTES_PER_VALUE} bytes); "
            "is it a cassette? (a hand-made compact one: indent it, e.g. python -m json.tool)",
            path=path,
        )


def read_document(raw: bytes | str, *, path: str | os.PathLike[str] | None = None) -> list[Any]:
    """The raw interaction list of cassette JSON, after checking the JSON and its version."""
    check_size(raw, path=path)
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise CassetteError(f"not valid JSON ({exc})", path=path) from exc
    return _interactions(data, path)


def _interactions(data: Any, path: str | os.PathLike[str] | None) -> list[Any]:
    if not isinstance(data, dict):
        raise CassetteError("top level must be an object", path=path)
    version = data.get("version")
    if type(version) is not int or version != VERSION:  # true and 1.0 are not version 1
        raise CassetteError(f"unknown cassette version {version!r} (this ssemock reads {VERSION})", path=path)
    items = data.get("interactions")
    if not isinstance(items, list):
        raise CassetteError("'interactions' must be a list", path=path)
    return items


LEAN_MIN_SIZE = 1 << 20  # files from this size on are read by _read_bodies_apart
_BODY_START = b'\n        "body": [\n'  # a body's key and list in the layout _write makes
_BODY_END = b"\n        ]"
_BATCH = 1 << 20


def _read_bodies_apart(path: str | os.PathLike[str]) -> list[Any] | None:
    """The interaction list of a large cassette in the layout ``_write`` makes, read without the
    file, the parsed document and the bodies in memory at once (about 2x the body at the peak
    instead of 3x): the lines of each body list are parsed ~1 MB at a time and encoded at once,
    the rest of the file is parsed as one small document with a placeholder for each body.

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
        items = _interactions(orjson.loads(document), path)
    except (ValueError, CassetteError):  # orjson.JSONDecodeError is a ValueError
        return None
    found = 0
    for item in items:
        for side in (item.get("request"), item.get("response")) if isinstance(item, dict) else ():
            if isinstance(side, dict) and side.get("body") == [f"{token}{found}"]:
                side["body"] = bodies[found]  # bytes: _body_from_json takes them as they are
                found += 1
    return items if found == len(bodies) else None


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


def parse_interaction(
    item: Any, *, path: str | os.PathLike[str] | None = None, index: int | None = None, consume: bool = False
) -> Interaction:
    """One interaction from its JSON form; CassetteError naming the file and interaction.

    ``consume=True`` empties the body pieces of ``item`` as it goes (less memory for a loader
    that owns the parsed document)."""
    try:
        return _interaction_from_json(item, consume)
    except _Invalid as exc:
        raise CassetteError(str(exc), path=path, interaction=index) from None


class _Invalid(Exception):
    """A problem inside one interaction; turned into CassetteError with file and index."""


class _NotText(Exception):
    """The body of interaction ``index``, taken for UTF-8 text, is not: it is saved in base64."""

    def __init__(self, index: int) -> None:
        super().__init__(index)
        self.index = index


def _headers_to_json(headers: Headers) -> dict[str, str | list[str]]:
    out: dict[str, str | list[str]] = {}
    for k, v in sorted(headers, key=lambda kv: kv[0]):
        prev = out.get(k)
        out[k] = v if prev is None else [*([prev] if isinstance(prev, str) else prev), v]
    return out


def _headers_from_json(value: Any, where: str) -> Headers:
    if value is None:
        return []
    if not isinstance(value, dict):
        raise _Invalid(f"{where} must be an object of name -> value")
    out: Headers = []
    for k, v in value.items():
        for one in v if isinstance(v, list) else [v]:
            if not isinstance(one, str):
                raise _Invalid(f"{where}[{k!r}] must be a string or a list of strings")
            out.append((k.lower(), one))
    return out


# stands for a text body while the rest is laid out: random per process, so no header, URL or
# body a cassette holds can be taken for it
_BODY = f"\x00ssemock:body:{secrets.token_hex(16)}\x00"
_BODY_JSON = orjson.dumps(_BODY)
_MAP = f"\x00ssemock:chunks:{secrets.token_hex(16)}\x00"  # stands for a chunk map, the same way
_MAP_JSON = orjson.dumps(_MAP)


def _write_maps(
    text: bytes, maps: Iterator[list[tuple[Any, int]]], write: Callable[[bytes | memoryview], object]
) -> None:
    """Write ``text`` (orjson's layout) with each chunk map placeholder in it replaced by the next
    map of ``maps``, laid out by `_chunk_map_laid_out` at the placeholder's indent."""
    segments = text.split(_MAP_JSON)
    write(segments[0])
    for before, after in zip(segments, segments[1:]):
        line = before[before.rfind(b"\n") + 1 :]
        write(_chunk_map_laid_out(next(maps), b"\n" + b" " * (len(line) - len(line.lstrip(b" ")))))
        write(after)


def _chunk_map_laid_out(pairs: list[tuple[Any, int]], nested: bytes) -> bytes:
    """``pairs`` as orjson's OPT_INDENT_2 would lay out the list at the depth where a line starts
    with ``nested``, but each pair on one line: ``[262.2, 304],``. Made in bulk: orjson writes the
    numbers (compact, so exactly as its indented layout writes them) and two ``bytes.replace`` calls
    lay them out; a number's JSON holds no comma."""
    if not pairs:
        return b"[]"
    inner = orjson.dumps(pairs)[1:-1].replace(b",", b", ").replace(b"], [", b"]," + nested + b"  [")
    return b"[" + nested + b"  " + inner + nested + b"]"


_TEXT_PREFIX = 4096  # bytes of a body checked for UTF-8 before it is taken for text


def _utf8_prefix(body: bytes, size: int | None) -> bool:
    """Whether the first ``size`` bytes of ``body`` (all of it: None) are UTF-8, checked 1 MB at
    a time (no copy of the body); a multi-byte character cut at ``size`` counts as UTF-8."""
    decode = codecs.getincrementaldecoder("utf-8")().decode
    view = memoryview(body)[:size]
    try:
        for i in range(0, len(view), _BATCH):
            decode(view[i : i + _BATCH])
        decode(b"", len(view) == len(body))
    except UnicodeDecodeError:
        return False
    return True


def _body_to_json(
    body: bytes, content_type: str | None, lazy: bool = False, text: bool = True
) -> dict[str, Any]:
    """``{"body": [pieces]}``, or ``{"body_base64": ...}`` for a body that is not UTF-8. With
    ``lazy``, ``{"body": _BODY}`` (laid out later) when ``text``, else base64.

    Pieces end at line breaks, so the body decodes exactly when every piece does."""
    if lazy and text:
        return {"body": _BODY}
    if not lazy:
        try:
            return {"body": list(pieces(body, content_type))}
        except UnicodeDecodeError:
            pass
    return {"body_base64": base64.b64encode(body).decode("ascii")}


def _body_from_json(obj: dict[str, Any], where: str, consume: bool = False) -> bytes:
    if "body_base64" in obj:
        text = obj["body_base64"]
        if not isinstance(text, str):
            raise _Invalid(f"{where}.body_base64 must be a string")
        try:
            return base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise _Invalid(f"{where}.body_base64 is not valid base64 ({exc})") from None
    pieces = obj.get("body", [])
    if isinstance(pieces, bytes):  # already read by _read_bodies_apart
        return pieces
    if isinstance(pieces, str):
        pieces = [pieces]
    if not isinstance(pieces, list) or not set(map(type, pieces)) <= {str}:
        raise _Invalid(f"{where}.body must be a list of strings")
    if not consume:
        return "".join(pieces).encode("utf-8")
    parts = []
    for i in range(0, len(pieces), 256):  # drop parsed pieces once encoded: peak ~2x the body, not 3x
        batch = pieces[i : i + 256]
        parts.append("".join(batch).encode("utf-8"))
        pieces[i : i + 256] = [""] * len(batch)
        del batch
    return b"".join(parts)


def _interaction_to_json(x: Interaction, lazy: bool = False, text: bool = True) -> dict[str, Any]:
    req, resp = x.request, x.response
    request: dict[str, Any] = {"method": req.method, "url": req.url, "headers": _headers_to_json(req.headers)}
    parsed = req.json()
    if parsed is not None and _json_in_layout(parsed) is not None:
        request["json"] = parsed
    elif req.body is not None:  # not JSON, or JSON too deep to lay out: kept as text, never lost
        try:
            request["body"] = req.body.decode("utf-8")
        except UnicodeDecodeError:
            request["body_base64"] = base64.b64encode(req.body).decode("ascii")
    response: dict[str, Any] = {"status": resp.status, "headers": _headers_to_json(resp.headers)}
    response.update(_body_to_json(resp.body, resp.header("content-type"), lazy, text))
    t_ms = _times_ms(resp.times)
    response["chunks"] = list(zip(t_ms, resp.ends))  # orjson writes a tuple as a list
    if len(resp.times) != len(resp.ends):
        raise _Invalid(f"response has {len(resp.ends)} chunk ends but {len(resp.times)} times")
    if not (
        t_ms and _chunk_map_loads(t_ms, resp.ends, len(resp.body))
    ):  # what loads: checked as loading does
        _chunk_map_from_json(list(map(list, response["chunks"])), len(resp.body))
    response["complete"] = resp.complete
    if resp.error is not None:
        response["error"] = resp.error
    return {"request": request, "response": response}


def _json_in_layout(value: Any) -> bytes | None:
    """``value`` as compact JSON, or None when it cannot sit where a cassette keeps JSON: four
    levels down (document, interactions, item, request/response), and orjson writes 254 levels
    at most, which leaves `MAX_DEPTH`."""
    try:
        return orjson.dumps([[[[value]]]])[4:-4]
    except TypeError:  # orjson: "Recursion limit reached"
        return None


def _interaction_from_json(item: Any, consume: bool = False) -> Interaction:
    if not isinstance(item, dict):
        raise _Invalid("must be an object with 'request' and 'response'")
    req, resp = item.get("request"), item.get("response")
    if not isinstance(req, dict):
        raise _Invalid("missing or malformed 'request'")
    if not isinstance(resp, dict):
        raise _Invalid("missing or malformed 'response'")
    method, url = req.get("method"), req.get("url")
    if not isinstance(method, str) or not method:
        raise _Invalid("request.method is missing or not a string")
    if not isinstance(url, str) or not url:
        raise _Invalid("request.url is missing or not a string")
    body: bytes | None = None
    if "json" in req:
        body = _json_in_layout(req["json"])
        if body is None:
            raise _Invalid(
                f"request.json is nested deeper than a cassette keeps JSON ({MAX_DEPTH} levels): "
                "store the body as text in request.body instead"
            )
    elif "body" in req or "body_base64" in req:
        body = _body_from_json(req, "request")
    request = Request(method.upper(), url, _headers_from_json(req.get("headers"), "request.headers"), body)

    status = resp.get("status")
    if not isinstance(status, int) or isinstance(status, bool) or not 100 <= status <= 599:
        raise _Invalid(f"response.status must be an HTTP status code, got {status!r}")
    if "body" not in resp and "body_base64" not in resp:
        raise _Invalid("response has no 'body' (or 'body_base64')")
    rbody = _body_from_json(resp, "response", consume)
    ends, times = _chunk_map_from_json(resp.get("chunks"), len(rbody))
    complete = resp.get("complete", True)
    if not isinstance(complete, bool):
        raise _Invalid("response.complete must be true or false")
    error = resp.get("error")
    if error is not None and not (isinstance(error, dict) and isinstance(error.get("type"), str)):
        raise _Invalid("response.error must be an object with a 'type' string")
    if error is not None and _json_in_layout(error) is None:
        raise _Invalid(f"response.error is nested deeper than a cassette keeps JSON ({MAX_DEPTH} levels)")
    headers = _headers_from_json(resp.get("headers"), "response.headers")
    return Interaction(request, Response(status, headers, rbody, ends, times, complete, error))


def _chunk_map_loads(t_ms: Sequence[Any], offsets: Sequence[Any], size: int) -> bool:
    """Whether a non-empty chunk map is valid as it stands, checked in bulk (no Python loop):
    integer offsets rising to ``size``, numeric times non-decreasing from 0 to MAX_T_MS."""
    return (
        set(map(type, offsets)) == {int}
        and set(map(type, t_ms)) <= {int, float}
        and all(map(operator.lt, [0, *offsets], offsets))
        and all(map(operator.le, [0, *t_ms], t_ms))
        and t_ms[-1] <= MAX_T_MS
        and offsets[-1] == size
    )


_EXACT = 2.0**50  # below this, a float's ulp is far under 0.5, so y.5 is exact and rounding y cannot skip it


def _times_ms(times: Sequence[float]) -> list[Any]:
    """Arrival times (seconds) in milliseconds rounded to 0.1: ``round(t * 1000, 1)`` each, in bulk.

    ``round(x, 1)`` is the double nearest the decimal ``d / 10``, ``d`` the integer nearest
    ``10 x`` exactly (never a tie: a binary fraction times 10 is never an odd multiple of 0.5).
    ``round(y)`` for the float ``y = x * 10`` is that ``d`` unless ``y`` landed exactly on a half,
    and ``d / 10`` (int true division) is correctly rounded; so anything but floats from 0 to
    `_EXACT` with no ``y`` on a half is left to ``round(x, 1)`` itself."""
    repeat = itertools.repeat
    if not times or set(map(type, times)) != {float}:
        return [round(t * 1000, 1) for t in times]
    y = list(map(operator.mul, map(operator.mul, times, repeat(1000)), repeat(10)))
    low = min(y)
    if not (0 <= low and sum(y) < _EXACT):  # NaN and inf make the sum NaN or inf
        return [round(t * 1000, 1) for t in times]
    d = list(map(round, y))
    off = list(map(operator.sub, y, d))
    if 0.5 in off or -0.5 in off:
        return [round(t * 1000, 1) for t in times]
    out = list(map(operator.truediv, d, repeat(10)))
    return out if low else list(map(math.copysign, out, y))  # round(-0.0, 1) is -0.0


_FIRST, _SECOND = operator.itemgetter(0), operator.itemgetter(1)


def _chunk_map_from_json(value: Any, size: int) -> tuple[list[int], list[float]]:
    if value is None:
        return ([size], [0.0]) if size else ([], [])
    if not isinstance(value, list):
        raise _Invalid("response.chunks must be a list of [t_ms, end_offset] pairs")
    if value and set(map(type, value)) == {list} and set(map(len, value)) == {2}:  # the common case, in bulk
        t_ms, offsets = list(map(_FIRST, value)), list(map(_SECOND, value))
        if _chunk_map_loads(t_ms, offsets, size):
            return offsets, [t / 1000 for t in t_ms]
    ends: list[int] = []
    times: list[float] = []
    prev_end, prev_t = 0, 0.0
    for k, pair in enumerate(value):
        if (
            not isinstance(pair, list)
            or len(pair) != 2
            or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in pair)
            or not isinstance(pair[1], int)
        ):
            raise _Invalid(
                f"response.chunks[{k}] must be [t_ms, end_offset] with an integer offset, got {pair!r}"
            )
        t_ms, end = pair
        if end <= prev_end:
            raise _Invalid(
                f"response.chunks[{k}]: end offset {end} does not increase (previous {prev_end})"
                " — run `ssemock fix` to rebuild the boundary map"
            )
        if end > size:
            raise _Invalid(
                f"response.chunks[{k}]: end offset {end} is past the body's {size} bytes"
                " — the body was edited; run `ssemock fix` to rebuild the boundary map"
            )
        if not (math.isfinite(t_ms) and 0 <= t_ms <= MAX_T_MS):
            raise _Invalid(
                f"response.chunks[{k}]: time {t_ms!r} ms is out of range: a chunk arrives 0 to "
                f"{MAX_T_MS:,} ms (a day) after the request"
            )
        if t_ms < prev_t:
            raise _Invalid(f"response.chunks[{k}]: time {t_ms} ms goes back (previous {prev_t} ms)")
        ends.append(end)
        times.append(t_ms / 1000)
        prev_end, prev_t = end, t_ms
    if prev_end != size:
        raise _Invalid(
            f"response.chunks: the last end offset is {prev_end} but the body has {size} bytes"
            " — the body was edited; run `ssemock fix` to rebuild the boundary map"
        )
    return ends, times
