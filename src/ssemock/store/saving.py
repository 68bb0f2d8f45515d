"""The atomic save of a cassette file: a temp file in the same folder, then ``os.replace``; the
temp files an earlier save of the same cassette left behind (its process was killed) are removed
first.

A run that is interrupted (killed, Ctrl-C, an error while writing) leaves the previous file or the
new one, never half of one: that is what the temp file and the replace are for. The file is not
synced to the disk (``fsync``) before the replace, as vcrpy's and pytest's own files are not: a
sync costs 1-6 ms a save, more than the whole secret scan of a 1 MB stream, and guards only
against the machine losing power within seconds of a recording, which re-recording mends (and
where ext4 and XFS already flush a file renamed over another before the rename)."""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import time
from collections.abc import Callable
from pathlib import Path

__all__ = ["STALE_AFTER", "save_atomically"]


def save_atomically(
    target: Path,
    dump: Callable[[Callable[[bytes | memoryview], object], Callable[[], object]], object],
) -> None:
    """Write ``target`` with ``dump(write, restart)`` (``restart()`` drops what was written so
    far) into a temp file beside it, then put it in place at once: on any error the previous
    file, if any, is unchanged (an OSError says so in a note) and the temp file is removed.

    Temp files an earlier save of the same cassette left behind (its process was killed) are
    removed first; see `_stale_temp_files`."""
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
                dump(fh.write, lambda: (fh.seek(0), fh.truncate()))
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
        exc.add_note(f"ssemock: while saving the cassette {target} (the previous file, if any, is unchanged)")
        raise


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
