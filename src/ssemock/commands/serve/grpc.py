"""``ssemock serve``'s gRPC side: the cassettes' recorded calls answered over HTTP/2 cleartext
(h2c with prior knowledge, as gRPC clients speak it), on the HTTP port (`ssemock.commands.preface`
tells the connections apart).

A call is matched by its method path and the messages the client sends (never its metadata: a
replay sends other keys), least played first, as the in-process replay does; a bidirectional call
is a conversation: the server's recorded messages go out as the client's messages that came
before them arrive, and each is checked against the recording. The response is the recorded
initial metadata, the messages as DATA frames cut by the wire chunking
(`ssemock.variants.grpc.chunking`: ``--chunking per_message``, ``mid_header``, ``bytewise``...),
timed by ``--timing``, then the recorded trailers with the status. A call no recording matches
ends with ``NOT_FOUND`` (``UNIMPLEMENTED`` for a method never recorded), its details saying what
differs, and a log line.
"""

from __future__ import annotations

import asyncio
import zlib
from collections.abc import Callable, Sequence
from typing import Protocol
from urllib.parse import quote

import h2.events

from ...framing.grpc import STATUS_CODES, Decoder, GrpcFramingError
from ...plan.grpc.wire import wire_frames
from ...redaction.rules import mask_text
from ...store.grpc import GrpcCall
from ...store.model import Request
from ...variants.grpc import chunking as grpc_chunking
from ...variants.grpc.faults import Outcome, for_call
from ..h2conn import Closed, H2Endpoint, Headers
from .replayer import Exchange, Replayer

__all__ = ["GrpcConnection", "GrpcServing", "ReplayedCall", "Stream", "grpc_calls", "grpc_message", "serving"]

UNMATCHED = "NOT_FOUND"
"""The status of a call no recording matches (its details say what differs)."""
_DROP_HEADERS = frozenset(
    {"content-length", "content-type", "grpc-encoding", "transfer-encoding", "connection", "keep-alive", "te"}
)
_WBITS = {"gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}  # grpc-encoding -> zlib's format


def _inflater(encoding: str, limit: int) -> Callable[[bytes], bytes] | None:
    """What reads a compressed message of ``encoding`` (None: not one gRPC defines); past
    ``limit`` bytes inflated, a ValueError (no message inflates without bound)."""
    wbits = _WBITS.get(encoding)
    if wbits is None:
        return (lambda data: data) if encoding == "identity" else None

    def inflate(data: bytes) -> bytes:
        out = zlib.decompressobj(wbits).decompress(data, limit + 1)
        if len(out) > limit:
            raise ValueError(f"a message inflates to over the {limit:,} bytes accepted")
        return out

    return inflate


def serving(replayer: Replayer) -> Callable[[], asyncio.Protocol]:
    """The h2c protocol factory of ``replayer``'s app (``app.state.h2c_protocol``)."""
    return lambda: GrpcServing(replayer)


def grpc_calls(replayer: Replayer, path: str) -> list[int]:
    """The interactions recording a call of the method ``path``."""
    return [i for i, x in enumerate(replayer.interactions) if x.grpc is not None and x.grpc.method == path]


def grpc_message(details: str) -> str:
    """``details`` as the ``grpc-message`` trailer carries it (percent-encoded past printable ASCII)."""
    return quote(details, safe=" !\"#$&'()*+,-./:;<=>?@[\\]^_`{|}~")


class GrpcConnection(H2Endpoint):
    """One h2c connection whose streams are gRPC calls, each answered by what `open` gives."""

    def __init__(self) -> None:
        super().__init__(client_side=False)
        self.calls: dict[int, Stream] = {}
        """The calls under way, by stream."""

    def open(self, stream_id: int, headers: Headers) -> Stream:
        """What answers a new stream (``headers``: its request head)."""
        raise NotImplementedError

    def event(self, event: h2.events.Event) -> None:
        if isinstance(event, h2.events.RequestReceived):
            headers = [(str(k), str(v)) for k, v in event.headers or []]
            self.calls[event.stream_id] = self.open(event.stream_id, headers)
            return
        call = self.calls.get(getattr(event, "stream_id", 0) or 0)
        if call is None:
            return
        if isinstance(event, h2.events.DataReceived):
            call.feed(event.data or b"")
        elif isinstance(event, h2.events.StreamEnded):
            call.end_of_request()
        elif isinstance(event, h2.events.StreamReset):
            call.task.cancel()

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        for call in list(self.calls.values()):
            call.task.cancel()

    def shutdown(self) -> None:
        """uvicorn stops: GOAWAY, then the connection closes."""
        if not self.closed:
            self.h2.close_connection()
            self.flush()
        self.close()


class GrpcServing(GrpcConnection):
    """``ssemock serve``'s h2c connection: each call a replay of the replayer's recordings."""

    def __init__(self, replayer: Replayer) -> None:
        super().__init__()
        self.replayer = replayer

    def open(self, stream_id: int, headers: Headers) -> Stream:
        return ReplayedCall(self, stream_id, headers, self.replayer)


class Stream(Protocol):
    """What a connection feeds one stream's request to; its task answers it."""

    task: asyncio.Task[None]

    def feed(self, data: bytes) -> None:
        """A DATA frame's bytes from the client."""

    def end_of_request(self) -> None:
        """The client closed its side."""


class ReplayedCall:
    """One stream answered from ``replayer``'s recorded calls: the client's messages as they
    come, and the task answering them."""

    def __init__(self, conn: GrpcConnection, stream_id: int, headers: Headers, replayer: Replayer) -> None:
        self.conn, self.stream_id = conn, stream_id
        self.replayer = replayer
        self.head = dict(headers)
        self.path = self.head.get(":path", "")
        self.got: list[bytes] = []
        self.half_closed = False
        self.refused: tuple[str, str] | None = None  # a request the server cannot read: its status
        self.headed = False  # the response's head went
        self._decoder = Decoder(max_message=self.replayer.max_body)
        self._decompress = _inflater(self.head.get("grpc-encoding", "identity"), self.replayer.max_body)
        # the most messages a recorded call of this method took, and one more: past it, none matches
        self._most = 1 + max(
            (
                len(x.grpc.sent())
                for i in grpc_calls(replayer, self.path)
                if (x := replayer.interactions[i]).grpc
            ),
            default=0,
        )
        self._changed = asyncio.Event()
        self.task = asyncio.get_running_loop().create_task(self.run())

    # -- the request --------------------------------------------------------------------------------

    def feed(self, data: bytes) -> None:
        if self.refused is not None:
            return
        try:
            for message in self._decoder.feed(data):
                if message.compressed and self._decompress is None:
                    self._refuse(
                        "UNIMPLEMENTED",
                        f"ssemock: grpc-encoding {self.head.get('grpc-encoding')!r} is not read",
                    )
                    return
                if len(self.got) < self._most:  # (what the client sends past it is read, not kept)
                    self.got.append(
                        self._decompress(message.data)
                        if message.compressed and self._decompress
                        else message.data
                    )
        except (GrpcFramingError, ValueError, zlib.error) as exc:
            code = "RESOURCE_EXHAUSTED" if "over the" in str(exc) else "INTERNAL"
            self._refuse(code, f"ssemock: the request's messages cannot be read: {exc}")
            return
        self._changed.set()

    def end_of_request(self) -> None:
        self.half_closed = True
        try:
            if self.refused is None:  # (a refusal says why already)
                self._decoder.close()
        except GrpcFramingError as exc:
            self._refuse("INTERNAL", f"ssemock: the request's messages cannot be read: {exc}")
        self._changed.set()

    def _refuse(self, code: str, details: str) -> None:
        self.refused = (code, details)
        self._changed.set()

    async def _more(self) -> None:
        await self._changed.wait()
        self._changed.clear()

    # -- the answer ---------------------------------------------------------------------------------

    async def run(self) -> None:
        try:
            await self._answer()
        except Closed:
            pass  # the client went: nothing more to send
        except asyncio.CancelledError:
            if not self.conn.closed:  # the client reset the stream
                self.replayer.log(f"gRPC {self.path}: the client cancelled the call")
        finally:
            self.conn.calls.pop(self.stream_id, None)

    async def _answer(self) -> None:
        replayer = self.replayer
        if self.head.get(":method") != "POST" or not self.head.get("content-type", "").startswith(
            "application/grpc"
        ):
            self._end("UNIMPLEMENTED", "ssemock: not a gRPC call (a POST of application/grpc)")
            return
        candidates = grpc_calls(replayer, self.path)
        if not candidates:
            self._unmatched("UNIMPLEMENTED", f"ssemock: no call of {self.path} was recorded")
            return
        index = await self._choose(candidates)
        if index is None:
            if self.refused is None:
                self._unmatched(UNMATCHED, self._why(candidates))
            return
        interaction = replayer.interactions[index]
        call = interaction.grpc
        assert call is not None
        faults, consumes = for_call(replayer.faults, replayer.call_attempts, index, interaction.request)
        if not consumes:  # a sequence's faulted attempt: the client's retry gets the recorded call
            replayer.selection.release(index)
        outcome = Outcome(
            tuple((m.t, m.data) for m in call.received()),
            call.status.code,
            call.status.details,
            tuple(call.trailers),
            call.status.t or 0.0,
        )
        for fault in faults:
            outcome = fault.apply(outcome)
        dropped = any(f.name.startswith("drop:") for f in faults)
        chunking = grpc_chunking.for_http(replayer.chunking)
        timed = replayer.timing.factor is not None
        frames = wire_frames(call, chunking, timed=timed, upto=len(outcome.messages))
        exchange = Exchange(
            "POST", self.path, 200, index, faults=[f.name for f in faults], chunks=len(frames)
        )
        replayer.exchanges.append(exchange)
        replayer.log(
            f"gRPC {self.path} -> {outcome.code} #{index}, {len(outcome.messages)} message(s), chunking={chunking}"
            + "".join(f", fault {f.name}" for f in faults)
        )
        recorded_sends = [m.data for m in call.sent()]
        send_times = [m.t for m in call.sent()]
        if frames or outcome.code == "OK" or dropped:
            self.conn.send_headers(self.stream_id, self._head(interaction.response.headers))
            self.headed = True
        stalls = dict(outcome.stalls)
        last_t, held = 0.0, 0
        for wire_frame in frames:
            if not await self._sent(wire_frame.after_sends, recorded_sends, index):
                return
            if wire_frame.after_sends:
                last_t = max(last_t, send_times[wire_frame.after_sends - 1])
            await self._stall(stalls.pop(held, 0.0))
            await self._wait(wire_frame.t - last_t)
            last_t = max(last_t, wire_frame.t)
            await self.conn.send_data(self.stream_id, wire_frame.data)
            held = wire_frame.messages
        if not await self._sent(len(recorded_sends), recorded_sends, index):
            return
        await self._stall(stalls.pop(held, 0.0))
        if dropped:  # the connection breaks: the client sees UNAVAILABLE, as on a real drop
            replayer.log(f"gRPC {self.path}: {outcome.details}")
            await self.conn.drain()  # the client has read the messages before the drop
            self.conn.close()
            return
        await self._wait(outcome.end_t - last_t)
        self._finish(outcome.code, outcome.details, interaction.response.headers, outcome.trailers)

    async def _choose(self, candidates: list[int]) -> int | None:
        """The recorded call answering this one, once the client has sent enough to tell (least
        played first); None when none can."""
        while True:
            if self.refused is not None:
                self._end(*self.refused)
                return None
            calls = self.replayer.interactions
            consistent = [i for i in candidates if self._consistent(calls[i].grpc)]
            if not consistent:
                return None
            ready = [i for i in consistent if self._ready(calls[i].grpc)]
            if ready:
                sent = Request("POST", self.path, [], None)
                return self.replayer.selection.take(sent, repeats="least_played", among=ready)
            await self._more()

    def _consistent(self, call: GrpcCall | None) -> bool:
        assert call is not None
        sends = [m.data for m in call.sent()]
        return sends[: len(self.got)] == self.got and (not self.half_closed or len(sends) == len(self.got))

    def _ready(self, call: GrpcCall | None) -> bool:
        """Whether ``call`` would answer now: the client closed its side; a unary request came;
        or, in a bidirectional call, the recording's server spoke after as many client messages."""
        assert call is not None
        if self.half_closed:
            return True
        if call.kind.startswith("unary_"):
            return len(self.got) >= 1
        if call.kind == "stream_unary":
            return False
        seen = 0
        for message in call.messages:
            if message.direction == "send":
                seen += 1
                if seen > len(self.got):
                    return False
            elif seen == len(self.got):
                return True
        return False

    async def _sent(self, count: int, recorded: Sequence[bytes], index: int) -> bool:
        """Wait for the client's first ``count`` messages and check them against the recording
        (False: the call was ended with what differs)."""
        while len(self.got) < count and not self.half_closed and self.refused is None:
            await self._more()
        if self.refused is not None:
            self._end(*self.refused)
            return False
        got = self.got[:count]
        if got != list(recorded[:count]):
            self._end(
                UNMATCHED,
                f"ssemock: the call of {self.path} left recording #{index}: {_differs(got, recorded[:count])}",
            )
            return False
        return True

    async def _stall(self, seconds: float) -> None:
        """A stall fault's wait (scaled by ``scaled:F`` timing, as the HTTP stalls are)."""
        if seconds:
            factor = self.replayer.timing.factor
            await asyncio.sleep(seconds * (1.0 if factor is None else factor))

    async def _wait(self, recorded_gap: float) -> None:
        delay = self.replayer.timing.at(max(0.0, recorded_gap))
        if delay:
            await asyncio.sleep(delay)

    # -- what goes out ------------------------------------------------------------------------------

    def _head(self, recorded: Sequence[tuple[str, str]]) -> Headers:
        kind = next((v for k, v in recorded if k == "content-type"), "application/grpc")
        return [
            (":status", "200"),
            ("content-type", kind),
            *((k, v) for k, v in recorded if k not in _DROP_HEADERS and not k.startswith(":")),
        ]

    @staticmethod
    def _status(code: str, details: str) -> Headers:
        out = [("grpc-status", str(STATUS_CODES[code]))]
        return [*out, ("grpc-message", grpc_message(details))] if details else out

    def _finish(
        self,
        code: str,
        details: str,
        head: Sequence[tuple[str, str]] = (),
        trailers: Sequence[tuple[str, str]] = (),
    ) -> None:
        """The trailers (status ``code``, ``details`` and ``trailers``); trailers-only, with the
        response's ``head``, when no head went yet (a call answered with no message, as gRPC
        servers answer it)."""
        status = self._status(code, details) + list(trailers)
        if not self.headed:
            status = self._head(head) + status
        self.headed = True
        self.conn.send_headers(self.stream_id, status, end_stream=True)

    def _end(self, code: str, details: str) -> None:
        """End the call early with ``code`` (a logged, masked ``details``)."""
        self.replayer.log(f"gRPC {self.path} -> {code}: {details}")
        self._finish(code, mask_text(details))

    def _unmatched(self, code: str, details: str) -> None:
        self.replayer.exchanges.append(Exchange("POST", self.path, 200, None))
        self._end(code, details)

    def _why(self, candidates: list[int]) -> str:
        """What differs between the client's messages and each recorded call of its method."""
        parts = []
        for i in candidates[:5]:
            call = self.replayer.interactions[i].grpc
            assert call is not None
            parts.append(f"#{i}: {_differs(self.got, [m.data for m in call.sent()])}")
        more = f"; {len(candidates) - 5} more" if len(candidates) > 5 else ""
        return (
            f"ssemock: no recorded call of {self.path} matches the messages sent ({'; '.join(parts)}{more})"
        )


def _differs(got: Sequence[bytes], recorded: Sequence[bytes]) -> str:
    """The first difference between the messages sent and those recorded, in words."""
    for k, (a, b) in enumerate(zip(got, recorded)):
        if a != b:
            at = next((j for j, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
            return f"message {k + 1} differs at byte {at} ({len(a)} bytes sent, {len(b)} recorded)"
    if len(got) < len(recorded):
        return f"{len(got)} message(s) sent, {len(recorded)} recorded"
    return f"{len(got)} message(s) sent, only {len(recorded)} recorded"
