"""One inter-process lock per cassette file, so that recorders never lose each other's work.

pytest-xdist workers and separate processes may record into one cassette: the plugin holds the
lock for a recording test's whole run (load, record, save), and [`ssemock.Player.save`][ssemock.Player.save]
takes it around its merge-and-write. One lock object per path in a process, so the two nest.
The lock files live in the user's private folder (`ssemock.core.userdir`), where no other local
user can plant a symlink, and filelock opens them without following one.
"""

from __future__ import annotations

import hashlib
import os
import threading

from filelock import FileLock

from ..core.userdir import private_dir

__all__ = ["lock_for"]

_locks: dict[str, FileLock] = {}
_guard = threading.Lock()


def lock_for(path: str | os.PathLike[str]) -> FileLock:
    """The reentrant lock of the cassette at ``path``: a file in the user's private folder named
    for the cassette's absolute path (nothing is left beside the cassettes)."""
    key = os.path.abspath(path)
    with _guard:
        found = _locks.get(key)
        if found is None:
            name = hashlib.sha1(key.encode("utf-8", "surrogateescape")).hexdigest()
            found = _locks[key] = FileLock(
                str(private_dir("locks") / f"{name}.lock"), thread_local=False, mode=0o600
            )
        return found
