"""A child process's pipes, as a cassette keeps them: the ``stdio=[...]`` entry that matched its
command line, the command line (secrets masked; its environment is never kept), every line each
way in order with its time, and its exit status.

On disk (the cassette's top-level ``stdio`` list; cassette ``version`` 2 whenever one is present)::

    "stdio": [
      {
        "match": "server.py",
        "argv": ["python", "/tmp/x/server.py"],
        "lines": [
          ["stdin", 0.4, "{\\"jsonrpc\\":\\"2.0\\",\\"id\\":0,...}\\n"],   (one a line)
          ["stdout", 80.2, "{\\"jsonrpc\\":\\"2.0\\",\\"id\\":0,...}\\n"],
          ["stderr", 12.0, "INFO starting\\n"],
          ["stdout", 90.0, {"base64": "/w=="}],                       (bytes that are not UTF-8)
          ["stdout", 91.0, "{\"id\":1,...}\n", [9, 40]],              (read in two: see below)
          ["stdin", 95.1, null]                                       (the client closed stdin)
        ],
        "exit": 0
      }
    ]

Times are milliseconds since the child started (0.1 ms) on disk, seconds in the model. ``exit`` is
the status (negative: the signal that ended it), or null when the child was still running when the
recording ended. A stdout line's optional fourth element says where the child's reads ended in
it, when not just with it (the default): offsets into the line, its length last when a read ended
with it (``[9, 40]``: a read ended 9 bytes in, the next with the line; ``[]``: the read went on into
the next line), so ``as_recorded`` replays the recorded reads. Every malformed part raises ``ValueError`` naming the session's line and field
(`parse_stdio`; the cassette parser adds the file).
"""

from __future__ import annotations

import base64
import binascii
import math
from dataclasses import dataclass, field
from typing import Any

__all__ = ["STREAMS", "Line", "StdioSession", "dump_stdio", "parse_stdio"]

STREAMS = ("stdin", "stdout", "stderr")
_MAX_T_MS = 86_400_000


@dataclass
class Line:
    """One line a pipe carried (its newline kept; the last one may have none), or the client
    closing stdin (``data`` None)."""

    stream: str
    """``"stdin"`` (the client wrote it), ``"stdout"`` or ``"stderr"`` (the child wrote it)."""
    t: float
    """Seconds since the child started: when it was written (stdin) or read (stdout, stderr)."""
    data: bytes | None
    """The line's bytes; None for stdin's end."""
    reads: tuple[int, ...] | None = None
    """stdout: where the child's reads ended inside the line (offsets; its length when one ended
    with it); None: one read ended with it, as most servers write."""


@dataclass
class StdioSession:
    """One child process recorded through its pipes."""

    match: str
    """The ``stdio=`` entry its command line matched: a replay serves the session to a child
    matching the same entry."""
    argv: list[str]
    """Its command line as started (secrets masked)."""
    lines: list[Line] = field(default_factory=list)
    """Every line of stdin, stdout and stderr, in the order they passed."""
    exit: int | None = None
    """Its exit status (negative: the signal that ended it); None: running when recording ended."""

    def of(self, stream: str) -> list[bytes]:
        """The lines of one stream, in order (stdin's end left out)."""
        return [x.data for x in self.lines if x.stream == stream and x.data is not None]


def _data_to_json(data: bytes | None) -> Any:
    if data is None:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(data).decode("ascii")}


def dump_stdio(session: StdioSession, placeholder: str) -> tuple[dict[str, Any], list[Any]]:
    """The session's JSON object with its ``lines`` as ``placeholder``, and those lines (the
    dumper lays them out one a line)."""
    lines = [
        [
            x.stream,
            round(x.t * 1000, 1),
            _data_to_json(x.data),
            *([list(x.reads)] if x.reads is not None else []),
        ]
        for x in session.lines
    ]
    return {
        "match": session.match,
        "argv": list(session.argv),
        "lines": placeholder,
        "exit": session.exit,
    }, lines


def _line(item: Any, k: int) -> Line:
    where = f"line {k}"
    if not (isinstance(item, list) and len(item) in (3, 4)):
        raise ValueError(f"{where} must be [stream, t_ms, data] (a stdout line: and its reads)")
    stream, t_ms, data = item[:3]
    if stream not in STREAMS:
        raise ValueError(f"{where}: stream must be one of {', '.join(STREAMS)}, got {stream!r}")
    if not (type(t_ms) in (int, float) and math.isfinite(t_ms) and 0 <= t_ms <= _MAX_T_MS):  # true is no time
        raise ValueError(f"{where}: t_ms must be a number of milliseconds from 0 to a day, got {t_ms!r}")
    if data is None:
        if stream != "stdin":
            raise ValueError(f"{where}: data null (the end of the pipe) is stdin's only")
        return Line(stream, t_ms / 1000, None)
    if isinstance(data, str):
        raw = data.encode("utf-8", "surrogatepass")
    elif isinstance(data, dict) and set(data) == {"base64"} and isinstance(data["base64"], str):
        try:
            raw = base64.b64decode(data["base64"], validate=True)
        except (binascii.Error, ValueError):
            raise ValueError(f"{where}: data.base64 is not base64") from None
    else:
        raise ValueError(f'{where}: data must be a string, {{"base64": "..."}} or null')
    if not raw:
        raise ValueError(f"{where}: data is empty (a line has at least one byte)")
    return Line(
        stream, t_ms / 1000, raw, _reads(item[3], stream, len(raw), where) if len(item) == 4 else None
    )


def _reads(reads: Any, stream: str, size: int, where: str) -> tuple[int, ...]:
    """A stdout line's read ends (see the module); ``ValueError`` saying what they must be."""
    if stream != "stdout":
        raise ValueError(f"{where}: only a stdout line has reads (a fourth element)")
    if not (
        isinstance(reads, list)
        and all(type(r) is int and 0 < r <= size for r in reads)
        and all(a < b for a, b in zip(reads, reads[1:], strict=False))
    ):
        raise ValueError(
            f"{where}: reads must be increasing offsets from 1 to the line's {size} bytes, got {reads!r}"
        )
    return tuple(reads)


def parse_stdio(value: Any, k: int) -> StdioSession:
    """Session ``k`` of a cassette's ``stdio`` list; ``ValueError`` naming the field at fault."""
    where = f"stdio session {k}"
    if not isinstance(value, dict):
        raise ValueError(f"{where} must be an object")
    match, argv, lines, status = (value.get(key) for key in ("match", "argv", "lines", "exit"))
    if not (isinstance(match, str) and match):
        raise ValueError(f"{where}: match must be the stdio= entry that matched (a non-empty string)")
    if not (isinstance(argv, list) and argv and all(isinstance(a, str) for a in argv)):
        raise ValueError(f"{where}: argv must be a non-empty list of strings")
    if not isinstance(lines, list):
        raise ValueError(f"{where}: lines must be a list of [stream, t_ms, data]")
    if status is not None and type(status) is not int:
        raise ValueError(f"{where}: exit must be an integer status or null, got {status!r}")
    try:
        parsed = [_line(item, n) for n, item in enumerate(lines)]
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from None
    return StdioSession(match, argv, parsed, status)
