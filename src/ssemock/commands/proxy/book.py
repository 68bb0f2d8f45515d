"""One cassette the proxy records into and replays from: what the record mode lets it do with a
request, the interactions as saved, each recording merged and saved under the cassette's lock
the moment it ends (a concurrent writer's interactions kept, refused when a secret is left, kept
masked beside it then), and the Replayer that serves it, rebuilt after each save."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ...core.modes import RecordMode
from ...plan import matching
from ...player.session import keep_partial, save, stat
from ...redaction import keep as _keep
from ...store.cassette import Cassette, Interaction, Request, SecretError
from ..serve import Replayer

__all__ = ["Book", "cassette_name"]

_NAME = re.compile(r"[^/\\\x00-\x1f\x7f]{1,200}")
_SETTLE = 60.0  # seconds an interruption waits, at most, for the saves under way to end


def cassette_name(name: str, *, where: str) -> str:
    """A cassette name a client chose (``x-ssemock-cassette``, a path prefix), checked: a file
    name, never a path (no ``/`` or ``\\``, not starting with ``.``, no control character)."""
    if not _NAME.fullmatch(name) or name.startswith("."):
        raise ValueError(
            f"the cassette name {name[:60]!r} from {where} is not allowed: a file name without "
            "'/', '\\' or control characters, not starting with '.', at most 200 characters"
        )
    return name


class Book:
    """The state of one cassette file under the proxy (``<dir>/<name>.json``)."""

    def __init__(
        self,
        path: Path,
        *,
        record_mode: RecordMode,
        match_on: matching.MatchOn,
        replayer: Callable[[Cassette], Replayer],
    ) -> None:
        self.path = path
        """The cassette file."""
        self.record_mode: RecordMode = record_mode
        self.existed = path.exists()
        """Whether the file was there when the proxy first used it (``once`` records only when not)."""
        self._match_on = match_on
        self._make = replayer
        self._lock = threading.Lock()
        self._settled = threading.Condition(self._lock)
        self._saving = 0  # recordings that ended and whose save (and log line) is under way
        self.kept: list[_keep.Kept] = []
        """Refused or partial recordings kept beside the cassette, masked."""
        self.interactions: list[Interaction] = (
            [] if not self.existed or record_mode == "rewrite" else Cassette.load(path).interactions
        )
        self._disk = stat(path) if self.existed else None
        self._replayer: Replayer | None = None
        self.in_flight: dict[int, Callable[[], Interaction]] = {}
        """The recordings under way (what an interrupted proxy keeps as a partial)."""
        self.saved = 0
        """How many recordings were saved into the cassette."""

    @property
    def replays(self) -> bool:
        """Whether a request is answered from the cassette when one matches."""
        mode = self.record_mode
        return mode in ("none", "new_episodes") or (mode == "once" and self.existed)

    @property
    def records(self) -> bool:
        """Whether a request no recorded interaction answers goes to the upstream and is recorded."""
        mode = self.record_mode
        return mode in ("new_episodes", "all", "rewrite") or (mode == "once" and not self.existed)

    def replayer(self) -> Replayer:
        """The Replayer serving the interactions as saved (rebuilt after a save)."""
        with self._lock:
            if self._replayer is None:
                self._replayer = self._make(Cassette(list(self.interactions), path=self.path))
            return self._replayer

    def matches(self, sent: Request) -> bool:
        """Whether a recorded interaction answers ``sent`` (when the mode replays)."""
        return self.replays and bool(self.replayer().candidates(sent))

    def save(self, new: Interaction) -> str | None:
        """Merge one recording into the cassette and write it (under the file's lock); a message
        when the secret scan refused it (it is then kept masked beside the cassette)."""
        with self._lock:
            try:
                self.interactions, self._disk = save(
                    self.path,
                    self.interactions,
                    [new],
                    disk=self._disk,
                    record_mode=self.record_mode,
                    match_on=self._match_on,
                    existed=self.existed,
                    kept=self.kept,
                )
            except SecretError as exc:
                return str(exc)
            finally:
                self._replayer = None
            self.saved += 1
            return None

    def begin(self, key: int, snapshot: Callable[[], Interaction]) -> None:
        """A recording started (``snapshot`` gives it as recorded so far)."""
        with self._lock:
            self.in_flight[key] = snapshot

    def end(self, key: int) -> bool:
        """A recording ended: False when an interruption has kept it as a partial already (then
        it is not saved into the cassette)."""
        with self._lock:
            return self.in_flight.pop(key, None) is not None

    @contextmanager
    def ending(self, key: int) -> Iterator[bool]:
        """`end`, for a recording its handler saves within the block: an interruption waits for
        the block (the save and its log line) before the proxy stops."""
        with self._lock:
            ours = self.in_flight.pop(key, None) is not None
            self._saving += ours
        try:
            yield ours
        finally:
            if ours:
                with self._lock:
                    self._saving -= 1
                    self._settled.notify_all()

    def keep_in_flight(self) -> tuple[int, Path | None]:
        """The recordings still under way, as recorded so far: one whose end had arrived (EOF,
        or the protocol's terminator such as ``[DONE]``) is saved into the cassette as any
        other; the rest are kept beside it as ``<name>.partial.json`` (masked), the cassette
        not touched by them. Then the saves their handlers had begun are waited for (up to a
        minute). How many were saved here, and the partials' file (None: none)."""
        with self._lock:
            taken = [snapshot() for snapshot in self.in_flight.values()]
            self.in_flight.clear()
        whole = [x for x in taken if x.response.complete]
        saved = sum(self.save(x) is None for x in whole)  # (refused: kept masked beside it, as any save)
        cut = [x for x in taken if not x.response.complete]
        partial = keep_partial(self.path, cut, kept=self.kept) if cut else None
        deadline = time.monotonic() + _SETTLE
        with self._lock:  # (timed waits: the main thread's signal handlers still run)
            while self._saving and (left := deadline - time.monotonic()) > 0:
                self._settled.wait(min(left, 0.1))
        return saved, partial

    def describe(self) -> dict[str, Any]:
        return {"path": str(self.path), "interactions": len(self.interactions), "mode": self.record_mode}
