"""What a ``stdio=[...]`` child is given: which entry its command line matches, the recorded
session a replay serves it, the session a recording keeps (from the relay's log, secrets
masked), and the error a replayed child's different stdin line raises.

An entry matches a command line when it equals one of its elements (``"mcp-server-git"``,
``"/abs/path/server.py"``), or, written without a folder, when it is the file name of one
(``"server.py"`` matches ``python /abs/path/server.py``).
"""

from __future__ import annotations

import base64
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import orjson

from ..scan.fields import scan_named
from ..scan.messages import mask_text
from ..store.stdio import Line, StdioSession
from ..store.websocket import Message
from .errors import UnmatchedRequestError
from .message_matching import _ANY, MessageMatcher, parse_path, resolve

__all__ = [
    "StdioMismatchError",
    "check_entries",
    "entry_of",
    "env_secrets",
    "ignored_paths",
    "masked",
    "masked_argv",
    "mismatch",
    "session_from_log",
]


class StdioMismatchError(UnmatchedRequestError):
    """A replayed ``stdio`` child was sent a stdin line that differs from the recording's (or
    one more than it has), or a matching child started with no recorded session left: the
    message names the cassette, the session, the line and where they differ."""


def check_entries(entries: Any) -> tuple[str, ...]:
    """The ``stdio`` option as a tuple of entries; ValueError saying what it takes."""
    if entries is None:
        return ()
    if isinstance(entries, str):
        entries = [entries]
    if not isinstance(entries, (list, tuple)) or not all(isinstance(e, str) and e.strip() for e in entries):
        raise ValueError(
            f"stdio takes a list of program names or script paths (['server.py', 'mcp-server-git']), "
            f"got {entries!r}"
        )
    return tuple(entries)


def entry_of(entries: Sequence[str], argv: Sequence[str]) -> str | None:
    """The first entry that matches the command line ``argv``, or None."""
    for entry in entries:
        bare = os.sep not in entry and "/" not in entry
        if any(a == entry or (bare and os.path.basename(a) == entry) for a in argv):
            return entry
    return None


def ignored_paths(option: str | Sequence[str] | None) -> list[list[str | int | None]]:
    """The ``ignore_message_paths`` of the option as the relay reads them: each path's keys,
    indexes and None for a ``[*]``/``.*`` wildcard."""
    return [[None if p is _ANY else p for p in parse_path(path)] for path in resolve(option)[1]]  # type: ignore[misc]


def env_secrets(env: Mapping[str, str] | None) -> list[str]:
    """The values of a child's environment that are credentials (``OPENAI_API_KEY=sk-...``,
    ``GITHUB_TOKEN=...``): masked wherever the child's command line or output repeats them."""
    env = os.environ if env is None else env
    return sorted(
        {v for k, v in env.items() if isinstance(v, str) and len(v) >= 8 and scan_named(k, v)},
        key=len,
        reverse=True,
    )


def masked(text: str, secrets: Iterable[str]) -> str:
    """``text`` with each of ``secrets`` and every secret the scan knows masked."""
    for value in secrets:
        text = text.replace(value, "***")
    return mask_text(text)


def masked_argv(argv: Sequence[str], secrets: Sequence[str]) -> list[str]:
    """A command line as a cassette keeps it: `masked`, and a value after (``--api-key V``) or in
    (``--token=V``) a credential-named flag masked when it looks generated."""
    out: list[str] = []
    for k, arg in enumerate(argv):
        flag, eq, value = arg.partition("=")
        if eq and flag.startswith("-") and scan_named(flag.lstrip("-"), value):
            arg = f"{flag}=***"
        elif k and argv[k - 1].startswith("-") and scan_named(argv[k - 1].lstrip("-"), arg):
            arg = "***"
        out.append(masked(arg, secrets))
    return out


def _masked_line(data: bytes, secrets: Sequence[str]) -> bytes:
    if not secrets:
        return data
    for value in secrets:
        data = data.replace(value.encode(), b"***")
    return data


def session_from_log(
    log: bytes, entry: str, argv: Sequence[str], secrets: Sequence[str] = ()
) -> StdioSession:
    """The session the relay's log (`ssemock.stacks.stdio_relay`) recorded: each stream's reads
    cut into lines (a line's time is the read that completed it), the environment's secrets
    masked in the command line and the lines."""
    session = StdioSession(entry, masked_argv(argv, secrets))
    partial: dict[str, tuple[bytes, float]] = {}
    cuts: list[int] = []  # where stdout's reads ended in its unfinished line
    for raw in log.splitlines():
        try:
            item = orjson.loads(raw)
        except orjson.JSONDecodeError:
            continue  # a line cut short by a kill: what came before it is kept
        if item[0] == "exit":
            session.exit = int(item[1])
            continue
        stream, t = item[0], item[1] / 1000
        if item[2] is None:
            session.lines.append(Line(stream, t, None))
            continue
        held = partial.pop(stream, (b"", t))[0] + base64.b64decode(item[2])
        *whole, rest = held.split(b"\n")
        ends = [*cuts, len(held)] if stream == "stdout" else []
        start = 0
        for line in whole:
            kept = _masked_line(line + b"\n", secrets)
            reads = _reads(ends, start, len(line) + 1, len(kept)) if stream == "stdout" else None
            session.lines.append(Line(stream, t, kept, reads))
            start += len(line) + 1
        if rest:
            partial[stream] = (rest, t)
        if stream == "stdout":
            cuts = [c - start for c in ends if c > start]
    end = next((k for k, x in enumerate(session.lines) if x.stream == "stdin" and x.data is None), None)
    for stream, (rest, t) in partial.items():  # a last line with no newline
        at = end if stream == "stdin" and end is not None else len(session.lines)
        kept = _masked_line(rest, secrets)
        reads = _reads(cuts, 0, len(rest), len(kept)) if stream == "stdout" else None
        session.lines.insert(at, Line(stream, t, kept, reads))
    return session


def _reads(ends: Sequence[int], start: int, size: int, kept: int) -> tuple[int, ...] | None:
    """The read ends (``ends``, offsets in what was held) inside the line at ``start`` of
    ``size`` bytes, as offsets in the line kept (``kept`` bytes once masked: an end inside a
    masked secret moves to the line's end); None when the one read end is the line's end."""
    out: list[int] = []
    for c in ends:
        if start < c <= start + size:
            at = kept if c == start + size else min(c - start, kept)
            if not out or at > out[-1]:
                out.append(at)
    return None if out == [kept] else tuple(out)


def mismatch(
    where: str, index: int, session: StdioSession, note: list[Any], ignore: Sequence[str] = ()
) -> str:
    """The message of a replayed child's stdin that differs (``note``: the relay's ``mismatch``
    or ``extra`` entry; ``ignore``: the JSON paths matching skipped)."""
    head = f"{where}: stdio session {index} ({' '.join(session.argv)[:120]})"
    if note[0] == "extra":
        sent = base64.b64decode(note[1])
        return (
            f"{head}: the client sent a stdin line after the recording's last: "
            f"{sent[:200].decode('utf-8', 'replace')!r}; record it again (record_mode='all')"
        )
    k, sent = int(note[1]), base64.b64decode(note[2])
    recorded = session.of("stdin")[k]
    diff = MessageMatcher(tuple(ignore)).difference(
        ("text", sent), Message("send", 0.0, "text", recorded.decode("utf-8", "replace"))
    )
    return (
        f"{head}: stdin line {k} differs from the recording's at {diff}\n"
        f"    recorded: {recorded[:200].decode('utf-8', 'replace').rstrip()}\n"
        f"    sent:     {sent[:200].decode('utf-8', 'replace').rstrip()}\n"
        "the child was not started: record it again (record_mode='all') if the client now sends this"
    )
