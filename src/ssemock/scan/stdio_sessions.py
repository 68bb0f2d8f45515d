"""The secret scan of a child process's recording (a cassette's ``stdio``, `ssemock.store.stdio`):
its command line as text and each line of its pipes as a JSON line. The walk's scanning methods are
handed in (`ssemock.scan.walk` holds them)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["scan_session"]

_LINES = [("content-type", "application/x-ndjson")]


def scan_session(session: Any, index: int, text: Callable[..., None], body: Callable[..., None]) -> None:
    """Scan the ``index``-th child's recording ``session`` with the walk's methods."""
    for k, arg in enumerate(session.argv):
        text(f"stdio[{index}].argv[{k}]", arg, "", 0)
    for n, line in enumerate(session.lines):
        if line.data:
            body(f"stdio[{index}].lines[{n}]", line.data, _LINES, "", stream=False)
