"""One port for HTTP/1.1 and HTTP/2 cleartext: a connection is told apart by its first bytes.

gRPC clients speak HTTP/2 over cleartext with prior knowledge (h2c): the connection opens with
HTTP/2's preface, ``PRI * HTTP/2.0\\r\\n\\r\\nSM\\r\\n\\r\\n``, which no HTTP/1.1 request line
starts with. [`sniffing`][ssemock.commands.preface.sniffing] makes the asyncio protocol uvicorn
runs for every connection (its ``http=`` option): it reads until the first bytes either are the
preface (the connection goes to the h2c protocol ``ssemock serve`` and ``ssemock proxy`` give
for gRPC) or cannot be (it goes to uvicorn's HTTP/1.1 protocol, which reads them again), so no
flag says which a port speaks. A connection that says neither within ``header_timeout`` is
closed, as a slow request head is.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

__all__ = ["PREFACE", "sniffing"]

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
"""HTTP/2's connection preface: what a client speaking HTTP/2 with prior knowledge sends first."""

H2c = Callable[[], asyncio.Protocol]
"""Makes the protocol of one HTTP/2 cleartext connection."""


def sniffing(
    http: type[asyncio.Protocol],
    h2c: H2c,
    header_timeout: float | None = None,
    max_connections: int | None = None,
) -> type[asyncio.Protocol]:
    """The protocol class for uvicorn's ``http=`` option: each connection goes to ``h2c()`` when
    it opens with HTTP/2's preface, else to ``http`` (made as uvicorn makes it). One past
    ``max_connections`` open at once is closed at once, before it says anything."""

    class Sniffing(_Sniffer):
        def __init__(self, **uvicorn: Any) -> None:
            super().__init__(http, h2c, header_timeout, max_connections, uvicorn)

    return Sniffing


class _Sniffer(asyncio.Protocol):
    """One connection until its first bytes tell which protocol it speaks, then that protocol's
    (every later call is handed on)."""

    def __init__(
        self,
        http: type[asyncio.Protocol],
        h2c: H2c,
        header_timeout: float | None,
        max_connections: int | None,
        uvicorn: dict[str, Any],
    ) -> None:
        self._http, self._h2c, self._uvicorn = http, h2c, uvicorn
        self._max_connections = max_connections
        state = uvicorn.get("server_state")
        self._connections: set[Any] = state.connections if state is not None else set()
        self._header_timeout = header_timeout
        self._head = b""
        self._transport: asyncio.Transport | None = None
        self._delegate: asyncio.Protocol | None = None
        self._deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport
        self._connections.add(self)  # uvicorn's shutdown reaches it (and, once h2c, its delegate)
        if self._max_connections is not None and len(self._connections) > self._max_connections:
            self._connections.discard(self)  # (at once: those within the cap never count it)
            transport.close()
            return
        if self._header_timeout is not None:
            self._deadline = asyncio.get_running_loop().call_later(self._header_timeout, transport.close)

    def data_received(self, data: bytes) -> None:
        if self._delegate is not None:
            self._delegate.data_received(data)
            return
        self._head += data
        if len(self._head) < len(PREFACE) and PREFACE.startswith(self._head):
            return  # could still be the preface
        if self._deadline is not None:
            self._deadline.cancel()
        assert self._transport is not None
        if self._head.startswith(PREFACE):
            self._delegate = self._h2c()
        else:
            self._connections.discard(self)  # uvicorn's protocol keeps its own place among them
            self._delegate = self._http(**self._uvicorn)
        head, self._head = self._head, b""
        self._delegate.connection_made(self._transport)
        self._delegate.data_received(head)

    def eof_received(self) -> bool | None:
        return self._delegate.eof_received() if self._delegate is not None else None

    def connection_lost(self, exc: Exception | None) -> None:
        self._connections.discard(self)
        if self._deadline is not None:
            self._deadline.cancel()
        if self._delegate is not None:
            self._delegate.connection_lost(exc)

    def pause_writing(self) -> None:
        if self._delegate is not None:
            self._delegate.pause_writing()

    def resume_writing(self) -> None:
        if self._delegate is not None:
            self._delegate.resume_writing()

    def shutdown(self) -> None:
        """uvicorn stops: an h2c connection is told (its protocol's ``shutdown``), an undecided one closed."""
        shutdown = getattr(self._delegate, "shutdown", None)
        if shutdown is not None:
            shutdown()
        elif self._transport is not None:
            self._transport.close()
