"""A pytest run's scratch folder (which tests recorded their cassette in this run, shared by
xdist workers), kept in the user's private folder and removed when the run ends.

Every process that uses a run's folder holds a shared lock on its ``.alive`` file until it ends;
the last one out removes the folder. A folder whose ``.alive`` no process holds belongs to a run
that crashed (killed, out of memory): the next run that ends removes it.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from .userdir import entries, private_dir

__all__ = ["finish", "folder", "sweep"]

try:
    import fcntl
except ImportError:  # Windows: no advisory locks; each run removes its own folder only
    fcntl = None  # type: ignore[assignment]

_held: dict[str, int] = {}  # run id -> the descriptor of its .alive file this process holds


def folder(run: str) -> Path:
    """The folder of run ``run``, created and marked as in use by this process."""
    path = private_dir("runs", run)
    while run not in _held:
        try:
            fd = os.open(path / ".alive", os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
        except FileNotFoundError:  # a sweep removed the new folder before it was marked: again
            path = private_dir("runs", run)
            continue
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_SH)
        if _same(fd, path / ".alive"):
            _held[run] = fd
        else:  # swept between the open and the lock
            os.close(fd)
            path = private_dir("runs", run)
    return path


def _same(fd: int, path: Path) -> bool:
    try:
        return os.fstat(fd).st_ino == os.stat(path, follow_symlinks=False).st_ino
    except OSError:
        return False


def _remove_if_unused(path: Path) -> None:
    """Remove the run folder at ``path`` when no process holds it. The exclusive lock is kept
    until the folder is gone: a process that opened its ``.alive`` meanwhile waits for its shared
    lock, then finds the file gone (``_same``) and makes the folder anew, instead of using a
    folder being removed under it."""
    if fcntl is None:
        return
    try:
        fd = os.open(path / ".alive", os.O_RDWR | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        shutil.rmtree(path, ignore_errors=True)
        return
    except OSError:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return
    try:
        shutil.rmtree(path, ignore_errors=True)
    finally:
        os.close(fd)


def finish(run: str) -> None:
    """This process is done with run ``run``: the last process out removes its folder; then
    folders of crashed runs are removed too."""
    fd = _held.pop(run, None)
    if fd is not None:
        os.close(fd)
        path = private_dir("runs", run)
        if fcntl is None:
            shutil.rmtree(path, ignore_errors=True)
        else:
            _remove_if_unused(path)
    sweep()


def sweep() -> None:
    """Remove the run folders no running process holds (left by a crashed run)."""
    for entry in entries("runs"):  # (none, and nothing created, where nothing was ever recorded)
        if entry.name not in _held and entry.is_dir(follow_symlinks=False):
            _remove_if_unused(Path(entry.path))
