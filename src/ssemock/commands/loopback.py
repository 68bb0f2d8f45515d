"""A real HTTP server on 127.0.0.1 in a background thread (uvicorn), for demos, tests and ``serve``."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .preface import sniffing

__all__ = ["running"]


@contextmanager
def running(
    app: Any,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    startup_timeout: float = 10.0,
    header_timeout: float | None = None,
    max_connections: int | None = None,
    shutdown_timeout: float | None = None,
) -> Iterator[str]:
    """Serve an ASGI app on loopback for the duration of the block; yields its base URL.

    ``header_timeout``: seconds a connection has to send each request's headers (else it is
    closed); ``max_connections``: connections open at once (one past it is closed at once).
    None: no limit. ``shutdown_timeout``: seconds the responses under way get to end when the
    block exits, then they are cancelled (None: they are waited for, up to 5 s).

    An app made by ``ssemock.commands.serve.app`` or ``ssemock.commands.proxy.app`` carries
    ``app.state.ws_protocol``: uvicorn hands WebSocket upgrades to it (its ``ws=`` option), so
    sessions are replayed on the raw connection (`ssemock.commands.serve.websocket`). One of
    ``proxy.app`` also carries ``app.state.ws_max_size``, its ``max_body``: the largest message a
    client may send over uvicorn's own WebSocket protocol (the proxy's relay; else uvicorn's
    16 MiB), as the replays cap it. An app carrying ``app.state.h2c_protocol`` (a gRPC server or
    proxy) also answers HTTP/2 cleartext on the same port (`ssemock.commands.preface`). One
    carrying ``app.state.on_stop`` has it called as the block exits, before the server stops
    (``serve`` ends the streams it keeps open, which would otherwise hold the shutdown)."""
    import uvicorn

    if header_timeout is not None and not header_timeout > 0:
        raise ValueError(f"header_timeout must be a positive number of seconds, got {header_timeout!r}")
    if max_connections is not None and not (isinstance(max_connections, int) and max_connections > 0):
        raise ValueError(f"max_connections must be a positive number, got {max_connections!r}")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    http: Any = (
        "auto"
        if header_timeout is None and max_connections is None
        else _guarded(header_timeout, max_connections)
    )
    state = getattr(app, "state", None)
    h2c = getattr(state, "h2c_protocol", None)
    if h2c is not None:  # gRPC on the same port: h2c with prior knowledge, told by its preface
        http = sniffing(_http_class(http), h2c, header_timeout, max_connections)
    ws_max_size = getattr(state, "ws_max_size", None)
    config = uvicorn.Config(
        app,
        log_level="warning",
        lifespan="auto",  # (an app's shutdown closes what it opened: the proxy's upstream connections)
        access_log=False,
        http=http,
        # an app of ssemock serve or proxy answers WebSocket upgrades on the raw connection itself
        ws=getattr(state, "ws_protocol", None) or "auto",
        ws_max_size=16 * 1024 * 1024 if ws_max_size is None else ws_max_size,
        timeout_graceful_shutdown=None if shutdown_timeout is None else max(1, round(shutdown_timeout)),
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + startup_timeout
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            sock.close()
            raise RuntimeError(f"the loopback server did not start within {startup_timeout} s")
        time.sleep(0.005)
    try:
        yield f"http://{host}:{sock.getsockname()[1]}"
    finally:
        on_stop = getattr(state, "on_stop", None)
        if on_stop is not None:
            on_stop()
        server.should_exit = True
        thread.join(timeout=5)
        sock.close()


def _http_class(http: str | type[Any]) -> type[Any]:
    """The class of uvicorn's HTTP/1.1 protocol ``http`` names (``"auto"``) or is."""
    if isinstance(http, str):
        from uvicorn.protocols.http.auto import AutoHTTPProtocol

        return AutoHTTPProtocol
    return http


def _guarded(header_timeout: float | None, max_connections: int | None) -> type[Any]:
    """uvicorn's h11 protocol with a deadline for each request's headers and a cap on the
    connections open at once: a client that opens connections and never finishes their headers
    can hold neither the server's file descriptors nor its memory for long."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class Guarded(H11Protocol):
        _deadline: Any = None

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            if max_connections is not None and len(self.connections) > max_connections:
                transport.close()  # over the cap: refused at once (connection_lost forgets it)
                return
            self._arm()

        def handle_websocket_upgrade(self, event: Any) -> None:
            if self._deadline is not None:  # the handshake's head came whole: the session is no slow head
                self._deadline.cancel()
            super().handle_websocket_upgrade(event)

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._arm()  # the next request on this connection gets its own deadline

        def connection_lost(self, exc: Exception | None) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
            super().connection_lost(exc)

        def _arm(self) -> None:
            if header_timeout is not None and not self.transport.is_closing():
                if self._deadline is not None:
                    self._deadline.cancel()
                self._deadline = self.loop.call_later(header_timeout, self._expire, self.cycle)

        def _expire(self, cycle: Any) -> None:
            if self.cycle is cycle and not self.transport.is_closing():  # no request's headers came since
                self.transport.close()

    return Guarded
