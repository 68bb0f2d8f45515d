"""One inter-process lock per cassette file, so that recorders never lose each other's work.

pytest-xdist workers and separate processes may record into one cassette: the plugin holds the
lock for a recording test's whole run (load, record, save), and :meth:`ssemock.Player.save`
takes it around its merge-and-write. One lock object per path in a process, so the two nest.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading
from pathlib import Path

from filelock import FileLock

__all__ = ["lock_for"]

_locks: dict[str, FileLock] = {}
_guard = threading.Lock()


def lock_for(path: str | os.PathLike[str]) -> FileLock:
    """The reentrant lock of the cassette at ``path``: a file in the temp folder named for the
    cassette's absolute path (nothing is left beside the cassettes)."""
    key = os.path.abspath(path)
    with _guard:
        found = _locks.get(key)
        if found is None:
            folder = Path(tempfile.gettempdir()) / "ssemock-locks"
            folder.mkdir(exist_ok=True)
            name = hashlib.sha1(key.encode("utf-8", "surrogateescape")).hexdigest()
            found = _locks[key] = FileLock(str(folder / f"{name}.lock"), thread_local=False)
        return found
