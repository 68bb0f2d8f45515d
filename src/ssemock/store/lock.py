"""One inter-process lock per cassette file, so that recorders never lose each other's work.

pytest-xdist workers and separate processes may record into one cassette: the plugin holds the
lock for a recording test's whole run (load, record, save), and [`ssemock.Player.save`][ssemock.Player.save]
takes it around its merge-and-write. One lock object per path in a process while anyone holds
it, so the two nest. The lock files live in the user's private folder (`ssemock.core.userdir`),
where no other local user can plant a symlink, and are never opened through one.

A lock file is removed on the last release, while it is still held: the folder holds the files
of the cassettes being recorded, not one per cassette ever saved (a suite's ``tmp_path``
cassettes left tens of thousands, and each new file cost more to make in the grown folder). A
process that opened the removed file and waits gets it after the release, sees it has no name
left, and opens the path again, so no two hold the lock at once.

On POSIX the lock is ``flock`` on the file, taken and given back in a few system calls, as
`ssemock.core.runs` locks its run folders: filelock's took ~640 Python calls a hold (0.2 ms idle,
0.6-0.8 ms in a recording's save, a fifth of a short recording's whole cost). Elsewhere (no
``fcntl``: Windows) it is filelock's.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import threading
import time
from types import TracebackType
from typing import Protocol
from weakref import WeakValueDictionary

from ..core.userdir import entries, private_dir

try:
    import fcntl
except ImportError:  # Windows: filelock's lock (`_FileLockHold`)
    fcntl = None  # type: ignore[assignment]

__all__ = ["STALE_AFTER", "CassetteLock", "lock_for", "sweep"]

_POLL = 0.05  # seconds between tries while another process holds the lock (a wait stays interruptible)
STALE_AFTER = 600.0  # seconds: a lock file this old that no process holds is a killed holder's (`sweep`)


class CassetteLock:
    """The reentrant inter-process lock of one cassette (`lock_for`): held by this process while
    any of its holds is (threads share them), by one process at a time; its file goes on the
    last release (see the module)."""

    def __init__(self, lock_file: str) -> None:
        self.lock_file = lock_file
        self._unheld()

    def _unheld(self) -> None:
        """The state of a lock this process does not hold: when made, and in a forked child
        (`_after_fork`)."""
        self._fd = -1  # the lock file's descriptor, while held (POSIX)
        self._holds = 0
        self._turn = threading.Lock()  # a hold's first take and last release, one at a time
        self._other = None if fcntl is not None else _file_lock(self.lock_file)

    def acquire(self, timeout: float = -1) -> None:
        """Take the lock (again, when this process holds it): waits at most ``timeout``
        seconds when another process holds it (negative: as long as it takes), then raises
        TimeoutError naming the lock file."""
        with self._turn:
            if self._holds == 0:
                self._take(timeout)
            self._holds += 1

    def release(self) -> None:
        """Give one hold back; the last one removes the file first, while it is still held. A
        lock this process does not hold is left as it is (a forked child's, `_after_fork`)."""
        with self._turn:
            if self._holds == 0:
                return
            self._holds -= 1
            if self._holds == 0:
                with contextlib.suppress(FileNotFoundError, PermissionError):  # (Windows: open)
                    os.unlink(self.lock_file)
                self._give()

    def _take(self, timeout: float) -> None:
        if self._other is not None:
            self._other.acquire(timeout=timeout)
            return
        deadline = None if timeout < 0 else time.monotonic() + timeout
        while True:
            fd = os.open(self.lock_file, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
            try:
                _flock(fd, deadline, self.lock_file)
                if os.fstat(fd).st_nlink:  # else its last holder removed it: the path anew
                    self._fd = fd
                    return
            except BaseException:
                os.close(fd)
                raise
            os.close(fd)

    def _give(self) -> None:
        if self._other is not None:
            self._other.release()
            return
        fd, self._fd = self._fd, -1
        try:
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    def __enter__(self) -> CassetteLock:
        self.acquire()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()


def _flock(fd: int, deadline: float | None, lock_file: str) -> None:
    """Lock ``fd`` exclusively, trying again every `_POLL` seconds (a blocked ``flock`` would not
    wake for a signal delivered to another thread) until ``deadline`` (None: no end)."""
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.EACCES):
                raise
        if deadline is not None and time.monotonic() >= deadline:
            raise TimeoutError(f"ssemock: another process holds the cassette lock {lock_file}")
        time.sleep(_POLL)


def _file_lock(lock_file: str) -> _FileLockHold:
    from filelock import FileLock

    return FileLock(lock_file, thread_local=False, mode=0o600)


class _FileLockHold(Protocol):
    """What `CassetteLock` uses of filelock's lock (no fcntl: Windows)."""

    def acquire(self, timeout: float = -1) -> object: ...

    def release(self) -> None: ...


_locks: WeakValueDictionary[str, CassetteLock] = WeakValueDictionary()  # (gone when no one holds it)
_guard = threading.Lock()


def _after_fork() -> None:
    """In a forked child, which holds none of its parent's locks: an unlock of the open file it
    shares would unlock the parent's, and a nested take would share the parent's hold. Its copies
    of the descriptors are closed (the parent's lock stays: it has its own), and a take waits for
    the parent like any other process's."""
    global _guard
    _guard = threading.Lock()
    for lock in list(_locks.values()):
        if lock._fd >= 0:
            os.close(lock._fd)
        lock._unheld()
    _locks.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


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


def sweep(now: float | None = None) -> int:
    """Remove the lock files older than `STALE_AFTER` that no process holds: a holder killed
    outright (SIGKILL, the out-of-memory killer) leaves its file, which no later lock of another
    cassette would remove. Each is taken before it goes, as a last release removes its own (a
    process that opened it meanwhile opens the path again); a held one is left. How many went.
    The plugin sweeps at the end of a run that recorded."""
    if fcntl is None:
        return 0
    now = time.time() if now is None else now
    gone = 0
    for entry in entries("locks"):  # (none, and nothing created, where nothing was ever locked)
        try:
            if (
                not entry.name.endswith(".lock")
                or now - entry.stat(follow_symlinks=False).st_mtime < STALE_AFTER
            ):
                continue
            fd = os.open(entry.path, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            os.unlink(entry.path)
            gone += 1
        except OSError:
            pass  # held, or gone already
        finally:
            os.close(fd)
    return gone
