"""The file name of a test's cassette: one rule for the pytest plugin and for ``import-vcr``,
so a vcrpy cassette imported beside its tests lands where the plugin looks for it."""

from __future__ import annotations

import hashlib
import re

__all__ = ["file_name", "recording_name"]

_UNSAFE = re.compile(r"[^A-Za-z0-9._\[\]-]+")  # brackets kept: test_x[param].json, as vcrpy names them
MAX_STEM = 120


def file_name(name: str) -> str:
    """``name`` (``test_x``, ``Class.test_x[param]``) made safe as a file name, plus ``.json``.

    Characters other than letters, digits, ``._[]-`` become ``_``; a name that had to change (or
    is longer than `MAX_STEM`) gets a digest of the original, so distinct names never
    share a file once made safe."""
    safe = _UNSAFE.sub("_", name).strip("._") or "cassette"
    if safe != name or len(safe) > MAX_STEM:
        digest = hashlib.sha1(name.encode("utf-8")).hexdigest()[:10]
        safe = f"{safe[:MAX_STEM]}-{digest}"
    return f"{safe}.json"


_RECORDING_FORBIDDEN = str.maketrans(dict.fromkeys("<>?%*:|\"'/\\", "-"))


def recording_name(name: str, cls: str | None = None) -> str:
    """The cassette name pytest-recording gives a test: ``Class.test`` for a test in a class
    (the innermost one), with ``<>?%*:|"'/\\`` replaced by ``-``. That replacement cannot be
    undone, so ``import-vcr`` writes `file_name` of this name, and the plugin looks there
    when the test's own cassette does not exist."""
    return (f"{cls}.{name}" if cls else name).translate(_RECORDING_FORBIDDEN)
