"""Waiting for something another thread or process does, without a timing assertion: poll until
it holds, bounded far above what a loaded machine needs (pytest-timeout ends a true hang at
120 s, this names what never happened first)."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

BOUND = 90.0
"""Seconds before giving up: a hang guard, never a measure of speed."""


def until(ready: Callable[[], T], what: str, *, every: float = 0.01) -> T:
    """``ready()``'s first truthy answer; fails naming ``what`` if none comes within `BOUND`."""
    deadline = time.monotonic() + BOUND
    while not (answer := ready()):
        assert time.monotonic() < deadline, f"{what}: not after {BOUND:.0f} s"
        time.sleep(every)
    return answer


def accepts(port: int) -> bool:
    """Whether something listens on 127.0.0.1:``port`` yet."""
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return False
    return True
