"""A folder only this user can write: where ssemock keeps its lock files and run folders.

The shared temp folder is writable by every local user, so a predictable name there
(``/tmp/ssemock-locks/<hash>.lock``) lets another user plant a symlink that the victim's recording
then opens. ssemock's files live instead in ``<tempdir>/ssemock-<uid>``, else (when another
user made that one first) ``$XDG_RUNTIME_DIR/ssemock``, else ``~/.cache/ssemock``: the first that
is a real directory (not a symlink), owned by this user, that no one else can write. ssemock
creates it with mode 0700. The temp folder comes first so that every process of the user (xdist
workers, a second pytest, the CLI) finds the same lock files.
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

__all__ = ["candidates", "entries", "private_dir"]


def candidates() -> list[Path]:
    """Where the private folder may be, in the order tried."""
    uid = os.getuid() if hasattr(os, "getuid") else os.getlogin()
    found = [Path(tempfile.gettempdir()) / f"ssemock-{uid}"]
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime:
        found.append(Path(runtime) / "ssemock")
    found.append(Path.home() / ".cache" / "ssemock")
    return found


def _private(path: Path) -> str | None:
    """Why ``path`` is no folder of this user's alone (None when it is), creating it if missing."""
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        return str(exc)
    return _unsafe(path)


def _unsafe(path: Path | str) -> str | None:
    """Why the folder at ``path`` is not this user's alone (None when it is)."""
    try:
        found = os.lstat(path)
    except OSError as exc:
        return str(exc)
    if not stat.S_ISDIR(found.st_mode):
        return "it is not a directory (a symlink?)"
    if hasattr(os, "getuid") and found.st_uid != os.getuid():
        return f"it belongs to user id {found.st_uid}"
    if found.st_mode & 0o022:
        return f"others can write to it (mode {stat.S_IMODE(found.st_mode):o})"
    return None


def private_dir(*parts: str) -> Path:
    """``parts`` under the user's private folder, created (mode 0700) when missing; raises
    OSError naming every place tried when none is safe. A folder found safe is found again by an
    ``lstat`` of each step, while each is still this user's alone (a save takes a lock in it: the
    whole search cost ~35 us a save)."""
    key = (tempfile.gettempdir(), os.environ.get("XDG_RUNTIME_DIR"), os.environ.get("HOME"), parts)
    known = _found.get(key)
    if known is not None and not any(map(_unsafe, known[1])):
        return known[0]
    folder = _checked(parts)
    _found[key] = (folder, [str(step) for step in (folder, *folder.parents[: len(parts)])])
    return folder


_found: dict[tuple[object, ...], tuple[Path, list[str]]] = {}  # places, parts -> folder, its steps


def entries(*parts: str) -> list[os.DirEntry[str]]:
    """What the private folder's ``parts`` holds, for a sweep: nothing, and nothing created, where
    no run ever made it (or it is unsafe or unreadable)."""
    if not any(base.joinpath(*parts).is_dir() for base in candidates()):
        return []
    try:
        return list(os.scandir(private_dir(*parts)))
    except OSError:
        return []


def _checked(parts: tuple[str, ...]) -> Path:
    """`private_dir`, each step checked."""
    problems = []
    for base in candidates():
        problem = _private(base)
        if problem is None:
            folder = base.joinpath(*parts)
            for step in [base.joinpath(*parts[: i + 1]) for i in range(len(parts))]:
                problem = _private(step)
                if problem is not None:
                    raise OSError(f"ssemock: {step} is unsafe for its lock files: {problem}; remove it")
            return folder
        problems.append(f"{base}: {problem}")
    raise OSError(
        "ssemock: found no folder only this user can write, for its lock files: " + "; ".join(problems)
    )
