"""``ssemock proxy``'s gRPC side: an h2c listener on the proxy's port (`ssemock.commands.preface`)
in front of an HTTP/2 upstream, cleartext (``http://``, prior knowledge) or TLS (``https://``,
ALPN ``h2``, verified as the HTTP relay verifies).

Each call (stream) is routed as an HTTP request is (path prefix, ``x-ssemock-cassette``); when
the cassette replays and holds calls of its method it is answered as ``ssemock serve`` answers it
(`ssemock.commands.serve.grpc`); else, when the mode records, it is relayed on one upstream
connection per client connection, every frame passed on the moment it arrives, and recorded:
the client's metadata (redacted), the initial metadata, every message both ways with its time,
the DATA frames the client received (ends and times, the call's ``wire``), the trailers and the
status. It is saved into the cassette when the call ends, under the same secret scan and lock as
every recording; a call the upstream resets or the client cancels is not saved (one log line);
an interrupted proxy keeps one under way as ``<name>.partial.json`` (`Book.keep_in_flight`).
"""

from __future__ import annotations

import asyncio
import itertools
import ssl
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote, urlsplit

import h2.errors
import h2.events

from ...framing.grpc import Decoder, GrpcFramingError, LengthPrefixed, status_name
from ...redaction.rules import mask_url, redact_request, redact_response
from ...store.cassette import Interaction, Request
from ...store.grpc import GrpcCall, GrpcMessage, GrpcStatus, GrpcWire
from ...store.model import Response
from ..h2conn import Closed, H2Endpoint, Headers
from ..serve.grpc import GrpcConnection, ReplayedCall, Stream, grpc_calls
from .book import Book
from .relay import HOP_BY_HOP, Proxy

__all__ = ["GrpcProxying", "relaying"]

_KEYS = itertools.count(1)  # a recording's key among the cassette's in-flight ones
_NOT_FORWARDED = HOP_BY_HOP - {"te"} | {"host", "content-length"}  # gRPC needs "te: trailers"


def relaying(proxy: Proxy) -> Callable[[], asyncio.Protocol]:
    """The h2c protocol factory of ``proxy``'s app (``app.state.h2c_protocol``)."""
    return lambda: GrpcProxying(proxy)


class GrpcProxying(GrpcConnection):
    """One client h2c connection: each call replayed or relayed and recorded."""

    def __init__(self, proxy: Proxy) -> None:
        super().__init__()
        self.proxy = proxy
        self._upstreams: dict[str, asyncio.Future[_Upstream]] = {}

    def open(self, stream_id: int, headers: Headers) -> Stream:
        head = dict(headers)
        path, _, query = head.get(":path", "").partition("?")
        try:
            routed = self.proxy.route(path, query, head)
        except ValueError as exc:
            return _Refused(self, stream_id, headers, f"ssemock proxy: {exc}")
        book = self.proxy.book(routed.cassette)
        method = urlsplit(routed.url).path
        if book.replays and grpc_calls(book.replayer(), method):
            return ReplayedCall(self, stream_id, [*headers, (":path", method)], book.replayer())
        if not book.records:
            return _Refused(
                self,
                stream_id,
                headers,
                f"ssemock proxy: no call of {method} in {routed.cassette} (record mode {book.record_mode})",
            )
        return _Relayed(self, stream_id, headers, routed.url, routed.cassette, book)

    async def upstream(self, url: str) -> _Upstream:
        """The upstream connection for ``url``'s origin (one per client connection), opened at its first call."""
        parts = urlsplit(url)
        origin = f"{parts.scheme}://{parts.netloc}"
        found = self._upstreams.get(origin)
        if found is None:
            found = self._upstreams[origin] = asyncio.ensure_future(
                self._connect(parts.scheme, parts.hostname or "", parts.port)
            )
        return await found

    async def _connect(self, scheme: str, host: str, port: int | None) -> _Upstream:
        context = None
        if scheme == "https":
            context = self.proxy.ssl_context()
            context.set_alpn_protocols(["h2"])
        loop = asyncio.get_running_loop()
        _, upstream = await loop.create_connection(
            _Upstream,
            host,
            port or (443 if context else 80),
            ssl=context,
            server_hostname=host if context else None,
        )
        return upstream

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        for future in self._upstreams.values():
            if future.done() and not future.cancelled() and future.exception() is None:
                future.result().close()
            else:
                future.cancel()


class _Upstream(H2Endpoint):
    """The client side of one upstream connection: each stream's events to its queue."""

    def __init__(self) -> None:
        super().__init__(client_side=True)
        self.streams: dict[int, asyncio.Queue[h2.events.Event | None]] = {}

    def start(self, headers: Headers) -> tuple[int, asyncio.Queue[h2.events.Event | None]]:
        """A new stream with ``headers``: its id and the queue its events go to."""
        stream_id = self.h2.get_next_available_stream_id()
        queue: asyncio.Queue[h2.events.Event | None] = asyncio.Queue()
        self.streams[stream_id] = queue
        self.send_headers(stream_id, headers)
        return stream_id, queue

    def event(self, event: h2.events.Event) -> None:
        queue = self.streams.get(getattr(event, "stream_id", 0) or 0)
        if queue is not None:
            queue.put_nowait(event)
        elif isinstance(event, h2.events.ConnectionTerminated):
            for queue in self.streams.values():
                queue.put_nowait(None)

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        for queue in self.streams.values():
            queue.put_nowait(None)


class _Refused:
    """A call the proxy cannot route or record: ``UNIMPLEMENTED`` with why (one log line)."""

    def __init__(self, conn: GrpcProxying, stream_id: int, headers: Headers, why: str) -> None:
        conn.proxy.log(f"gRPC {mask_url(dict(headers).get(':path', ''))} -> UNIMPLEMENTED: {why}")
        conn.send_headers(
            stream_id,
            [
                (":status", "200"),
                ("content-type", "application/grpc"),
                ("grpc-status", "12"),
                ("grpc-message", why),
            ],
            end_stream=True,
        )
        self.task = asyncio.get_running_loop().create_task(asyncio.sleep(0))

    def feed(self, data: bytes) -> None:
        pass

    def end_of_request(self) -> None:
        pass


class _Relayed:
    """One call relayed to the upstream and recorded."""

    def __init__(
        self, conn: GrpcProxying, stream_id: int, headers: Headers, url: str, name: str, book: Book
    ) -> None:
        self.conn, self.stream_id, self.url, self.name, self.book = conn, stream_id, url, name, book
        self.headers = headers
        self.t0 = time.monotonic()
        self.messages: list[GrpcMessage] = []
        self.recorded: dict[str, Any] = {"head": [], "trailers": [], "ends": [], "times": [], "status": None}
        """The response so far: its head, trailers, DATA frames' ends and times, when the status came."""
        self._requests: asyncio.Queue[bytes | None] = asyncio.Queue()
        self._pending = 0  # bytes of the client's not yet passed to the upstream
        self._sent = Decoder(max_message=conn.proxy.max_body)
        self._received = Decoder(max_message=conn.proxy.max_body)
        self.task = asyncio.get_running_loop().create_task(self.run())

    def feed(self, data: bytes) -> None:
        self._pending += len(data)
        if self._pending > self.conn.proxy.max_body:  # the upstream reads slower than the client sends
            self.conn.proxy.log(f"gRPC {mask_url(self.url)}: over --max-body waiting for the upstream: reset")
            self.conn.h2.reset_stream(self.stream_id, h2.errors.ErrorCodes.ENHANCE_YOUR_CALM)
            self.conn.flush()
            self.task.cancel()
            return
        self._requests.put_nowait(data)
        self._record("send", self._sent, data)

    def end_of_request(self) -> None:
        self._requests.put_nowait(None)

    def _record(self, direction: str, decoder: Decoder, data: bytes) -> None:
        now = time.monotonic() - self.t0
        try:
            found: list[LengthPrefixed] = decoder.feed(data)
        except GrpcFramingError:
            found = []  # relayed as it is; the call is not saved (its messages cannot be read)
            self.unreadable = True
        self.messages.extend(GrpcMessage(direction, now, m.data) for m in found if not m.compressed)
        if any(m.compressed for m in found):
            self.unreadable = True

    unreadable = False

    async def run(self) -> None:
        target = f"gRPC {mask_url(self.url)}"
        parts = urlsplit(self.url)
        forwarded = [
            (":method", "POST"),
            (":scheme", parts.scheme),
            (":authority", parts.netloc),
            (":path", parts.path + (f"?{parts.query}" if parts.query else "")),
            *(
                (k, v)
                for k, v in self.headers
                if not k.startswith(":") and k not in _NOT_FORWARDED and not k.startswith("x-ssemock-")
            ),
        ]
        try:
            upstream = await self.conn.upstream(self.url)
        except (OSError, ssl.SSLError) as exc:
            self.conn.proxy.log(f"{target} -> UNAVAILABLE the upstream failed: {type(exc).__name__}: {exc}")
            self.conn.send_headers(
                self.stream_id,
                [
                    (":status", "200"),
                    ("content-type", "application/grpc"),
                    ("grpc-status", "14"),
                    ("grpc-message", f"ssemock proxy: the upstream failed: {type(exc).__name__}"),
                ],
                end_stream=True,
            )
            return
        up_id, events = upstream.start(forwarded)
        pump = asyncio.get_running_loop().create_task(self._forward(upstream, up_id))
        recorded = self.recorded
        size = 0
        key = -next(_KEYS)  # (the HTTP relay's keys count up from 1)
        self.book.begin(key, self.interaction)  # an interrupted proxy keeps it as recorded so far
        whole = True  # (False: not to be saved)
        try:
            while True:
                event = await events.get()
                if event is None:
                    self.conn.close()  # the upstream connection dropped: so does the client's (UNAVAILABLE)
                    break
                if isinstance(event, h2.events.ResponseReceived):
                    head = [(str(k), str(v)) for k, v in event.headers or []]
                    recorded["head"] = head
                    if event.stream_ended is not None:  # trailers-only
                        recorded["trailers"] = head
                        recorded["status"] = time.monotonic() - self.t0
                    self.conn.send_headers(self.stream_id, head, end_stream=event.stream_ended is not None)
                elif isinstance(event, h2.events.DataReceived):
                    data = event.data or b""
                    self._record("recv", self._received, data)
                    size += len(data)
                    recorded["ends"].append(size)
                    recorded["times"].append(time.monotonic() - self.t0)
                    await self.conn.send_data(self.stream_id, data)
                elif isinstance(event, h2.events.TrailersReceived):
                    recorded["trailers"] = [(str(k), str(v)) for k, v in event.headers or []]
                    recorded["status"] = time.monotonic() - self.t0
                    self.conn.send_headers(self.stream_id, recorded["trailers"], end_stream=True)
                elif isinstance(event, h2.events.StreamEnded):
                    break
                elif isinstance(event, h2.events.StreamReset):
                    self.conn.h2.reset_stream(self.stream_id, event.error_code or h2.errors.ErrorCodes.CANCEL)
                    self.conn.flush()
                    self.conn.proxy.log(f"{target}: the upstream reset the call: not saved")
                    whole = False
                    break
        except Closed:
            self.conn.proxy.log(f"{target}: the client left: not saved")
            whole = False
        except asyncio.CancelledError:
            upstream.h2.reset_stream(up_id, h2.errors.ErrorCodes.CANCEL)
            upstream.flush()
            self.conn.proxy.log(f"{target}: the client cancelled the call: not saved")
            self.book.end(key)
            raise
        finally:
            pump.cancel()
            self.conn.calls.pop(self.stream_id, None)
        with self.book.ending(key) as ours:  # (not ours: an interruption kept it as a partial already)
            if not (ours and whole):
                return
            if recorded["status"] is None or self.unreadable:
                self.conn.proxy.log(f"{target}: no status or unreadable messages: not saved")
                return
            await self._save()

    async def _forward(self, upstream: _Upstream, up_id: int) -> None:
        """The client's DATA to the upstream, as it comes."""
        try:
            while (data := await self._requests.get()) is not None:
                await upstream.send_data(up_id, data)
                self._pending -= len(data)
            await upstream.send_data(up_id, b"", end_stream=True)
        except Closed:
            pass

    def interaction(self) -> Interaction:
        """The call as recorded so far (complete once its status came; before it, its status is
        ``UNKNOWN``, saying it was cut, and the DATA frames are left out when a message was)."""
        recorded = self.recorded
        trailers = recorded["trailers"]
        code = next((v for k, v in trailers if k == "grpc-status"), "2")
        details = unquote(next((v for k, v in trailers if k == "grpc-message"), ""))
        try:
            name = status_name(int(code))
        except ValueError:
            name = "UNKNOWN"
        if recorded["status"] is None:
            details = "ssemock proxy: the recording was cut before the call's status"
        head = [(k, v) for k, v in recorded["head"] if not k.startswith(":")]
        if recorded["head"] is trailers:  # trailers-only: the metadata is all trailers
            head = [(k, v) for k, v in head if k == "content-type"]
        rest = [
            (k, v)
            for k, v in trailers
            if not k.startswith(":") and k not in ("grpc-status", "grpc-message") and (k, v) not in head
        ]
        messages = list(self.messages)
        sends = sum(m.direction == "send" for m in messages)
        recvs = len(messages) - sends
        kind = f"{'stream' if sends != 1 else 'unary'}_{'stream' if recvs != 1 else 'unary'}"
        whole = sum(5 + len(m.data) for m in messages if m.direction == "recv")
        ends, times = list(recorded["ends"]), list(recorded["times"])
        wire = GrpcWire(ends, times) if ends and ends[-1] == whole else GrpcWire()
        request = redact_request(
            Request("POST", self.url, [(k, v) for k, v in self.headers if not k.startswith(":")], None)
        )
        response = redact_response(
            Response(
                int(dict(recorded["head"]).get(":status", "200")),
                head,
                b"",
                [],
                [],
                recorded["status"] is not None,
                None,
            )
        )
        call = GrpcCall(
            urlsplit(self.url).path, kind, messages, rest, GrpcStatus(name, details, recorded["status"]), wire
        )
        return Interaction(request, response, grpc=call)

    async def _save(self) -> None:
        target = f"gRPC {mask_url(self.url)}"
        interaction = self.interaction()
        call = interaction.grpc
        assert call is not None
        name, recvs, sends = call.status.code, len(call.received()), len(call.sent())
        refused = await asyncio.to_thread(self.book.save, interaction)
        if refused:
            self.conn.proxy.log(f"{target}: NOT saved into {self.name}: {refused}")
        else:
            self.conn.proxy.log(
                f"{target}: saved into {self.name}: {name}, {recvs} message(s) received, {sends} sent"
            )
