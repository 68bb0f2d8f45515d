"""One inter-process lock per cassette file, so that recorders never lose each other's work.

pytest-xdist workers and separate processes may record into one cassette: the plugin holds the
lock for a recording test's whole run (load, record, save), and [`ssemock.Player.save`][ssemock.Player.save]
takes it around its merge-and-write. One lock object per path in a process while anyone holds
it, so the two nest. The lock files live in the user's private folder (`ssemock.core.userdir`),
where no other local user can plant a symlink, and filelock opens them without following one.

A lock file is removed on the last release, while it is still held: the folder holds the files
of the cassettes being recorded, not one per cassette ever saved (a suite's ``tmp_path``
cassettes left tens of thousands, and each new file cost more to make in the grown folder). A
process that opened the removed file and waits gets it after the release, sees it has no name
left, and opens the path again (filelock's check), so no two hold the lock at once.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
from types import TracebackType
from weakref import WeakValueDictionary

from filelock import FileLock

from ..core.userdir import private_dir

__all__ = ["CassetteLock", "lock_for"]


class CassetteLock:
    """The reentrant inter-process lock of one cassette (`lock_for`): filelock's, whose file
    goes on its last release (see the module)."""

    def __init__(self, lock_file: str) -> None:
        self._lock = FileLock(lock_file, thread_local=False, mode=0o600)
        self._turn = threading.Lock()  # a hold's first take and last release, one at a time

    @property
    def lock_file(self) -> str:
        """Where the lock file is (while held)."""
        return str(self._lock.lock_file)

    def acquire(self, timeout: float = -1) -> None:
        """Take the lock (again, when this process holds it): waits at most ``timeout``
        seconds when another process holds it (negative: as long as it takes)."""
        with self._turn:
            self._lock.acquire(timeout=timeout)

    def release(self) -> None:
        """Give one hold back; the last one removes the file first, while it is still held."""
        with self._turn:
            if self._lock.lock_counter == 1:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(self._lock.lock_file)
            self._lock.release()

    def __enter__(self) -> CassetteLock:
        self.acquire()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()


_locks: WeakValueDictionary[str, CassetteLock] = WeakValueDictionary()  # (gone when no one holds it)
_guard = threading.Lock()


def lock_for(path: str | os.PathLike[str]) -> CassetteLock:
    """The reentrant lock of the cassette at ``path``: a file in the user's private folder named
    for the cassette's absolute path (nothing is left beside the cassettes)."""
    key = os.path.abspath(path)
    with _guard:
        found = _locks.get(key)
        if found is None:
            name = hashlib.sha1(key.encode("utf-8", "surrogateescape")).hexdigest()
            found = _locks[key] = CassetteLock(str(private_dir("locks") / f"{name}.lock"))
        return found
