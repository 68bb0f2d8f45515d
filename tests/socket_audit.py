"""Whether a replay connected anywhere: the addresses the test process connects its sockets to
while `connections` is open (Python's audit hook ``socket.connect``, one hook for the whole run,
however many test modules ask), and a plain listener holding a stopped server's port
(`holding`), which hears what Python's audit cannot see (grpcio's C core opens its sockets
outside Python)."""

from __future__ import annotations

import socket
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

_connects: list[Any] = []
_watching: list[bool] = []


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if _watching and event == "socket.connect":
        _connects.append(args[1])


sys.addaudithook(_audit)


@contextmanager
def connections() -> Iterator[list[Any]]:
    """The addresses connected to while it is open (emptied as it opens)."""
    _connects.clear()
    _watching.append(True)
    try:
        yield _connects
    finally:
        _watching.clear()


@contextmanager
def holding(port: int) -> Iterator[socket.socket]:
    """A non-blocking listener on 127.0.0.1:``port``: its ``accept()`` raises BlockingIOError
    while nothing connected."""
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind(("127.0.0.1", port))
        listener.listen()
        listener.setblocking(False)
        yield listener
    finally:
        listener.close()
