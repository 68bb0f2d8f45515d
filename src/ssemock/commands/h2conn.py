"""One HTTP/2 connection on an asyncio transport, driven by the sans-IO ``h2`` library: what
``ssemock serve``'s and ``ssemock proxy``'s gRPC sides share (both ends of a connection).

Events go to [`event`][ssemock.commands.h2conn.H2Endpoint.event]; received DATA is acknowledged
at once (gRPC messages are capped by the caller, so the window never holds back memory);
[`send_data`][ssemock.commands.h2conn.H2Endpoint.send_data] sends one chunk as DATA frames of its
own, waiting for the peer's flow-control window, and never more than the largest frame the peer
takes. A protocol error from the peer closes the connection (h2 has queued its GOAWAY)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import h2.config
import h2.connection
import h2.events
import h2.exceptions

__all__ = ["Closed", "H2Endpoint", "Headers"]

Headers = list[tuple[str, str]]


class Closed(Exception):
    """The connection or the stream ended while something waited to send on it."""


class H2Endpoint(asyncio.Protocol):
    """An h2 connection (``client_side``: this end opens the streams) on an asyncio transport."""

    def __init__(self, *, client_side: bool) -> None:
        config = h2.config.H2Configuration(client_side=client_side, header_encoding="latin-1")
        self.h2 = h2.connection.H2Connection(config)
        """The h2 state machine."""
        self.transport: asyncio.Transport | None = None
        self.closed = False
        """The transport is gone (or closing)."""
        self._window: asyncio.Future[None] | None = None
        self._pong: asyncio.Future[None] | None = None

    # -- asyncio.Protocol ---------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self.h2.initiate_connection()
        self.flush()

    def data_received(self, data: bytes) -> None:
        if self.closed:
            return
        try:
            events = self.h2.receive_data(data)
        except h2.exceptions.ProtocolError:
            self.flush()
            self.close()
            return
        for event in events:
            if isinstance(event, h2.events.DataReceived):
                self.h2.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            elif isinstance(event, (h2.events.WindowUpdated, h2.events.RemoteSettingsChanged)):
                self._wake()
            elif isinstance(event, h2.events.ConnectionTerminated):
                self.flush()
                self.close()
            elif (
                isinstance(event, h2.events.PingAckReceived)
                and self._pong is not None
                and not self._pong.done()
            ):
                self._pong.set_result(None)
            self.event(event)
        self.flush()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._wake()
        if self._pong is not None and not self._pong.done():
            self._pong.set_result(None)

    # -- for subclasses ---------------------------------------------------------------------------

    def event(self, event: h2.events.Event) -> None:
        """One event h2 read from the peer (after its flow-control bookkeeping)."""

    def flush(self) -> None:
        """Write what h2 has queued."""
        data = self.h2.data_to_send()
        if data and self.transport is not None and not self.transport.is_closing():
            self.transport.write(data)

    def close(self) -> None:
        """Close the transport now (the peer sees the connection drop)."""
        self.closed = True
        if self.transport is not None:
            self.transport.close()
        self._wake()

    def send_headers(
        self, stream_id: int, headers: Sequence[tuple[str, str]], *, end_stream: bool = False
    ) -> None:
        """A HEADERS frame (the response's head, or trailers with ``end_stream``), written now."""
        if not self.closed:
            self.h2.send_headers(stream_id, list(headers), end_stream=end_stream)
            self.flush()

    async def send_data(self, stream_id: int, data: bytes, *, end_stream: bool = False) -> None:
        """``data`` as DATA frames of its own (one unless the peer's window or largest frame is
        smaller), written as the window allows; `Closed` when the stream or connection ends first."""
        view = memoryview(data)
        while view or end_stream:
            if self.closed:
                raise Closed("the connection closed")
            try:
                room = min(
                    len(view), self.h2.local_flow_control_window(stream_id), self.h2.max_outbound_frame_size
                )
            except h2.exceptions.StreamClosedError:
                raise Closed(f"stream {stream_id} was closed") from None
            if room <= 0 and view:
                await self._window_opens()
                continue
            last = end_stream and room == len(view)
            try:
                self.h2.send_data(stream_id, bytes(view[:room]), end_stream=last)
            except h2.exceptions.StreamClosedError:
                raise Closed(f"stream {stream_id} was closed") from None
            self.flush()
            view = view[room:]
            if last or (not view and not end_stream):
                return

    async def drain(self, timeout: float = 5.0) -> None:
        """Wait until the peer has read everything sent so far (a PING's answer comes after it),
        up to ``timeout`` seconds: a drop then cuts the connection where the plan says."""
        if self.closed:
            return
        self._pong = asyncio.get_running_loop().create_future()
        self.h2.ping(b"ssemock!")
        self.flush()
        try:
            await asyncio.wait_for(asyncio.shield(self._pong), timeout)
        except TimeoutError:
            pass

    async def _window_opens(self) -> None:
        if self._window is None or self._window.done():
            self._window = asyncio.get_running_loop().create_future()
        await self._window

    def _wake(self) -> None:
        if self._window is not None and not self._window.done():
            self._window.set_result(None)
