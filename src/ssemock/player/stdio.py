"""A player's ``stdio=[...]`` children: each one whose command line matches an entry is started
as ssemock's relay (`ssemock.stacks.stdio`), which records it (a recording run: the session is
saved with the cassette) or replays the next recorded session of its entry without starting it
(its stdout from the cassette, its stdin checked against the recording's).

What the relays saw is read when the player stops: the recorded sessions, and any stdin line a
replayed child was sent that differs from the recording's, raised then as
[`StdioMismatchError`][ssemock.plan.stdio.StdioMismatchError] (the child itself wrote nothing more
and exited, so the client saw its pipe close).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import orjson

from ..plan.message_matching import resolve
from ..plan.stdio import (
    StdioMismatchError,
    check_entries,
    entry_of,
    env_secrets,
    ignored_paths,
    mismatch,
    session_from_log,
)
from ..stacks import stdio as _stdio
from ..store.cassette import Cassette
from ..store.stdio import StdioSession
from ..variants.chunking import Chunking
from ..variants.faults import Fault
from ..variants.stdio import steps
from ..variants.timing import Timing

__all__ = ["StdioRun"]


class Player(Protocol):
    """What the children need of the `ssemock.Player` (not imported: no cycle)."""

    cassette: Cassette
    options: Any
    lock: threading.Lock
    chunking: Chunking
    timing: Timing
    faults: list[Fault]
    _replays: bool
    _records: bool

    @property
    def where(self) -> str: ...


@dataclass
class _Child:
    entry: str
    argv: list[str]
    log: Path
    replays: int | None  # the recorded session it replays; None: it is recorded
    secrets: list[str]


def _runnable(program: str, env: Mapping[str, str] | None) -> bool:
    """Whether ``program`` names a file that can be run (found on the child's ``PATH``)."""
    path = (os.environ if env is None else env).get("PATH", os.defpath)
    return shutil.which(program, path=path) is not None


class StdioRun:
    """The children of one player's run (``player.stdio``)."""

    def __init__(self, player: Player) -> None:
        self._player = weakref.ref(player)  # no cycle: a finished player is freed at once
        self.entries = check_entries(player.options.stdio)
        """The ``stdio=`` entries: program names, script paths or file names."""
        self.recorded: list[StdioSession] = []
        """The sessions recorded in this run, read when the player stopped."""
        self.replayed: list[int] = []
        """The recorded sessions served (their index in ``cassette.stdio``), in order."""
        self._children: list[_Child] = []
        self._dir: Path | None = None
        self._engaged = False

    @property
    def player(self) -> Player:
        player = self._player()
        if player is None:
            raise RuntimeError("ssemock: the Player these children belonged to is gone")
        return player

    def unplayed(self) -> list[int]:
        """The cassette's sessions of this run's entries that no child replayed (their index)."""
        served = set(self.replayed)
        stdio = self.player.cassette.stdio
        return [k for k, s in enumerate(stdio) if s.match in self.entries and k not in served]

    def start(self) -> None:
        """Watch the children started from now on: those of the entries, and in a replay that
        records nothing those of the cassette's sessions too (`_unnamed` refuses them)."""
        p = self.player
        if self.entries or (p.cassette.stdio and not p._records):
            _stdio.engage(self)
            self._engaged = True

    def stop(self) -> None:
        """Stop matching children, and read what their relays saw: the recordings kept in
        ``recorded``; the first stdin line that differed raised (after the caller saved)."""
        if not self._engaged:
            return
        self._engaged = False
        _stdio.release(self)
        children, self._children = self._children, []
        problems: list[str] = []
        for child in children:
            log = child.log.read_bytes() if child.log.exists() else b""
            if child.replays is None:
                self.recorded.append(session_from_log(log, child.entry, child.argv, child.secrets))
                continue
            for raw in log.splitlines():
                try:
                    note = orjson.loads(raw)
                except orjson.JSONDecodeError:  # a line cut short by a kill
                    continue
                if note[0] in ("mismatch", "extra"):
                    session = self.player.cassette.stdio[child.replays]
                    ignore = resolve(self.player.options.ignore_message_paths)[1]
                    problems.append(mismatch(self.player.where, child.replays, session, note, ignore))
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None
        if problems:
            raise StdioMismatchError("\n".join(problems))

    def _unnamed(self, argv: list[str]) -> None:
        """Refuse a child no entry names that the cassette recorded under another entry: in a
        replay it would be started for real (its script long gone, or the server reached)."""
        p = self.player
        for k, session in enumerate(p.cassette.stdio):
            if entry_of([session.match], argv) is not None:
                raise StdioMismatchError(
                    f"{p.where}: stdio session {k} was recorded for the child {' '.join(argv)[:200]!r} "
                    f"under the entry {session.match!r}, which stdio={list(self.entries)!r} does not "
                    f"name, so it would be started for real; add {session.match!r} to stdio= (the "
                    "marker's or use_cassette's)"
                )

    def __call__(self, argv: list[str], executable: str | None, env: Mapping[str, str] | None) -> str | None:
        """The relay spec a child started with ``argv`` runs instead (`ssemock.stacks.stdio.Launcher`),
        or None when no entry matches it."""
        entry = entry_of(self.entries, argv)
        p = self.player
        if entry is None:
            if not p._records:
                self._unnamed(argv)
            return None
        with p.lock:
            index = None
            if p._replays:
                served = set(self.replayed)
                index = next(
                    (k for k, s in enumerate(p.cassette.stdio) if s.match == entry and k not in served), None
                )
            if index is None and not p._records:
                recorded = sum(s.match == entry for s in p.cassette.stdio)
                raise StdioMismatchError(
                    f"{p.where}: the child {' '.join(argv)[:200]!r} matches stdio entry {entry!r}, and "
                    f"no recorded session of it is left to replay (the cassette has {recorded}); record "
                    "it with record_mode='once' (no cassette yet) or 'new_episodes'"
                )
            if index is None and not _runnable(executable or argv[0], env):
                return None  # started as it is: Popen raises as it would without ssemock
            if self._dir is None:
                self._dir = Path(tempfile.mkdtemp(prefix="ssemock-stdio-"))  # 0700: the spec holds argv
            n = len(self._children)
            log = self._dir / f"{n}.log"
            spec: dict[str, Any] = {"log": str(log)}
            if index is None:
                spec.update(mode="record", argv=argv, executable=executable)
            else:
                self.replayed.append(index)
                session = p.cassette.stdio[index]
                spec.update(
                    mode="replay",
                    steps=steps(session, p.chunking, p.timing, p.faults),
                    exit=session.exit,
                    ignore=ignored_paths(p.options.ignore_message_paths),
                )
            self._children.append(_Child(entry, argv, log, index, env_secrets(env)))
        path = self._dir / f"{n}.json"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(orjson.dumps(spec))
        return str(path)
