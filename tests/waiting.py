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


def half_head(port: int, path: str, timeout: float) -> socket.socket:
    """A connection to 127.0.0.1:``port`` whose request (a POST to ``path``) has headers that
    never finish, unless the caller sends the rest (a server's header timeout and connection cap
    are what end it)."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    sock.sendall(f"POST {path} HTTP/1.1\r\nHost: x\r\n".encode())
    return sock


def closed_by_server(sock: socket.socket) -> bool:
    """The server closed the connection (EOF or reset) before the socket's timeout."""
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False
