"""httpx-ws (``connect_ws``/``aconnect_ws``, over httpx only): its handshake is an ordinary httpx
request carrying ``Upgrade: websocket``, so the httpcore pool patches dispatch it, tagged as a
WebSocket handshake (`tag`). Replay answers with a 101 whose ``extensions["network_stream"]`` is a
`MemoryNetworkStream` over the recorded conversation (httpx-ws frames on it with wsproto);
recording wraps the real 101's stream in a `TeeNetworkStream`."""

from __future__ import annotations

import functools
import threading
from collections import deque
from typing import Any

from ...plan.conversation import Conversation, Release, UnmatchedMessageError, skipped_stall
from ...plan.websocket.record import WsRecorder
from ...variants import timing as _timing
from ...variants.timing import Timing
from .. import Patch
from .memory import keepalive, schedule, skip_stall
from .websockets_asyncio import TRANSPORT_KEY

__all__ = [
    "MemoryNetworkStream",
    "patches",
    "TeeNetworkStream",
    "answer",
    "answer_async",
    "is_upgrade",
    "recorded",
    "tag",
]

_SCHEMES = {b"http": "ws", b"https": "wss", b"ws": "ws", b"wss": "wss"}


def is_upgrade(request: Any) -> bool:
    """Whether an httpcore request asks for a WebSocket upgrade."""
    return any(k.lower() == b"upgrade" and v.lower() == b"websocket" for k, v in request.headers)


def tag(extensions: dict[str, Any], scheme: bytes) -> tuple[dict[str, Any], str]:
    """The extensions and the ws/wss scheme of a handshake dispatched for httpx-ws."""
    return {**extensions, TRANSPORT_KEY: "websocket"}, _SCHEMES.get(scheme.lower(), scheme.decode())


def _head(request: Any) -> bytes:
    lines = [f"GET {request.url.target.decode('latin-1')} HTTP/1.1"]
    lines += [f"{k.decode('latin-1')}: {v.decode('latin-1')}" for k, v in request.headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def _parse_head(head: bytes) -> list[tuple[bytes, bytes]]:
    out = []
    for line in head.split(b"\r\n")[1:]:
        name, sep, value = line.partition(b":")
        if sep:
            out.append((name.strip(), value.strip()))
    return out


def answer(core: Any, request: Any, conversation: Conversation, timing: Timing) -> Any:
    """The 101 ``httpcore.Response`` httpx-ws gets on replay (or the refusal recorded: an HTTP
    response of its status, headers and body, which httpx-ws raises as its upgrade error)."""
    head = conversation.handshake(_head(request))
    status_line = head.split(b"\r\n", 1)[0].split(b" ", 2)
    if status_line[1:2] != [b"101"]:
        at = head.find(b"\r\n\r\n") + 4
        return core.Response(
            status=int(status_line[1]),
            headers=_parse_head(head[:at]),
            content=head[at:],
            extensions={
                "http_version": b"HTTP/1.1",
                "reason_phrase": status_line[2] if len(status_line) > 2 else b"",
            },
        )
    stream = MemoryNetworkStream(conversation, timing)
    conversation.on_release = stream.queue  # what another connection of its group lets go
    stream.queue(conversation.opening())
    return core.Response(
        status=101,
        headers=_parse_head(head),
        content=b"",
        extensions={
            "network_stream": stream,
            "http_version": b"HTTP/1.1",
            "reason_phrase": b"Switching Protocols",
        },
    )


def recorded(request: Any, real: Any, recorder: WsRecorder) -> Any:
    """The real 101, its network stream teed into ``recorder`` (a refused handshake: recorded as is)."""
    recorder.sent(_head(request))
    reason = real.extensions.get("reason_phrase", b"") or b""
    lines = [b"HTTP/1.1 %d %s" % (real.status, reason)] + [k + b": " + v for k, v in real.headers]
    stream = real.extensions.get("network_stream")
    upgraded = real.status == 101 and stream is not None
    # httpcore's upgrade stream hands the bytes that came in the 101's read as its first read:
    # they are recorded with the 101, as they arrived (the wire map's ``head``), and not again
    leading = bytes(getattr(stream, "_leading_data", b"") or b"") if upgraded else b""
    recorder.received(b"\r\n".join(lines) + b"\r\n\r\n" + leading)
    if upgraded:
        real.extensions["network_stream"] = TeeNetworkStream(stream, recorder, skip=len(leading))
    else:  # refused: its body is recorded as the client reads it
        real.stream = _TeeBody(real.stream, recorder)
    return real


class _TeeBody:
    """The body of a refused upgrade (an httpcore response stream, sync or async), recorded."""

    def __init__(self, stream: Any, recorder: WsRecorder) -> None:
        self._stream, self._recorder = stream, recorder

    def __iter__(self) -> Any:
        for chunk in self._stream:
            self._recorder.received(chunk)
            yield chunk
        self._recorder.finish(None)

    async def __aiter__(self) -> Any:
        async for chunk in self._stream:
            self._recorder.received(chunk)
            yield chunk
        self._recorder.finish(None)

    def close(self) -> None:
        self._recorder.finish(None)
        if hasattr(self._stream, "close"):
            self._stream.close()

    async def aclose(self) -> None:
        self._recorder.finish(None)
        if hasattr(self._stream, "aclose"):
            await self._stream.aclose()


class MemoryNetworkStream:
    """An httpcore network stream, sync and async, served by a conversation: each read returns
    (part of) one release at its due time, never two joined; ``b""`` at the end."""

    def __init__(self, conversation: Conversation, timing: Timing) -> None:
        self._conversation, self._timing = conversation, timing
        self._inbox: deque[tuple[float, bytes | None]] = deque()
        self._cond = threading.Condition()
        self._closed = False
        self.opened = self.quiet_since = _timing.clock.now()
        """When the session opened; when the reader last got data (on the timing clock)."""
        self._reading: tuple[float, bytes | None] | None = None  # the chunk a read waits for

    def stalled(self) -> float | None:
        """When the chunk the reader waits for is due, if it waits for one due later (a stall;
        everything before it read), else None."""
        with self._cond:
            if self._closed or not self._inbox or self._reading is not self._inbox[0]:
                return None
            due = self._inbox[0][0]
        return due if due > _timing.clock.now() else None

    def _moved(self, head: tuple[float, bytes | None]) -> bool:
        return self._closed or not self._inbox or self._inbox[0] is not head

    def stall_ahead(self) -> bool:
        """Whether the next chunk is due later (the reader may not have got to it yet)."""
        with self._cond:
            return not self._closed and bool(self._inbox) and self._inbox[0][0] > _timing.clock.now()

    def wait_stalled(self, seconds: float = 5.0) -> float | None:
        """`stalled`, once the reading thread got to the stall (at most ``seconds`` later)."""
        if not self.stall_ahead():
            return None
        with self._cond:
            head = self._inbox[0] if self._inbox else None
            self._cond.wait_for(lambda: head is None or self._moved(head) or self._reading is head, seconds)
        return self.stalled()

    def _faked(self) -> bool:
        """Whether a wait is slept on a fake clock (a test's); never a stall under ``instant``
        timing, which the client's read ends or skips (`skip_stall`)."""
        return type(_timing.clock) is not _timing.Clock and self._timing.factor is not None

    def skip_stall(self, *, warn: bool) -> None:
        """Under ``instant`` timing, the stall the reader waits at served now, a warning saying so
        when ``warn`` (no timeout of the client's was seen: one longer than the stall reads on)."""
        if self._timing.factor is not None or self.stalled() is None:
            return
        with self._cond:
            gap = skip_stall(self._inbox, _timing.clock.now())
            self._cond.notify_all()
        self._notify()
        if gap and warn:
            skipped_stall(self._conversation, gap)

    def queue(self, releases: list[Release]) -> None:
        now = _timing.clock.now()
        with self._cond:
            schedule(self._inbox, releases, self._timing, now)
            self._cond.notify_all()
        self._notify()

    def _notify(self) -> None:
        """Wake an async read waiting for data (the sync reads wait on the condition)."""

    def _feed(self, data: bytes) -> None:
        try:
            self.queue(self._conversation.feed(bytes(data)))
        except UnmatchedMessageError:
            self.queue(self._conversation.close_for_mismatch())
            raise

    def _take(self, max_bytes: int) -> bytes:
        with self._cond:
            due, chunk = self._inbox[0]
            if chunk is None:
                return b""
            if len(chunk) > max_bytes:
                self._inbox[0] = (due, chunk[max_bytes:])
                return chunk[:max_bytes]
            self._inbox.popleft()
            self.quiet_since = _timing.clock.now()
            return chunk

    # sync
    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        while True:
            with self._cond:
                if not self._cond.wait_for(lambda: bool(self._inbox) or self._closed, timeout):
                    raise _nothing_within(timeout)
                if not self._inbox:
                    return b""
                head = self._inbox[0]
            wait = head[0] - _timing.clock.now()
            if wait <= 0:
                break
            if self._faked():  # a fake clock: what was slept is the test's
                _timing.clock.sleep(wait)
                break
            with self._cond:  # a close, or what ends the pending, ends the wait
                self._reading = head
                self._cond.notify_all()
                self._cond.wait_for(functools.partial(self._moved, head), wait)
                self._reading = None
                if self._closed:
                    return b""
                if self._inbox and self._inbox[0] is head:
                    break
        return self._take(max_bytes)

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._feed(buffer)

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self._notify()

    def get_extra_info(self, info: str) -> Any:
        return None

    def start_tls(self, *args: Any, **kwargs: Any) -> Any:
        return self


def _nothing_within(timeout: float | None) -> Exception:
    """httpcore's own read timeout, as a real stream raises it: the recorded session has nothing
    more to send until the client sends what preceded it (a read with no timeout waits, as on a
    real socket)."""
    import httpcore

    return httpcore.ReadTimeout(
        f"nothing to read within {timeout} s: the recorded session sends nothing more until the "
        "client sends the message it answered"
    )


class _AsyncMemoryNetworkStream(MemoryNetworkStream):
    _waiter: Any = None  # the anyio.Event a read waits on until something is queued or closed

    def _notify(self) -> None:
        waiter, self._waiter = self._waiter, None
        if waiter is not None:
            waiter.set()

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:  # type: ignore[override]
        import anyio

        while True:
            with self._cond:
                ready = bool(self._inbox) or self._closed
                due = self._inbox[0][0] if self._inbox else 0.0
                if not ready:
                    self._waiter = waiter = anyio.Event()
            if ready:
                break
            with anyio.move_on_after(timeout) as waited:
                await waiter.wait()  # the client's own write (or its close) releases what comes next
            if waited.cancelled_caught:
                raise _nothing_within(timeout)
        if not self._inbox:
            return b""
        wait = due - _timing.clock.now()
        if wait > 0 and self._faked():  # a fake clock: the test's
            await _timing.clock.asleep(wait)
        elif wait > 0:  # a close, or what ends the pending (the answer to a close), ends the wait
            head = self._inbox[0]
            self._reading = head
            while not self._moved(head) and (left := head[0] - _timing.clock.now()) > 0:
                with self._cond:
                    self._waiter = waiter = anyio.Event()
                with anyio.move_on_after(left):
                    await waiter.wait()
            self._reading = None
            if not self._inbox or self._closed:
                return b""
        return self._take(max_bytes)

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:  # type: ignore[override]
        self._feed(buffer)

    async def aclose(self) -> None:
        self.close()


def answer_async(core: Any, request: Any, conversation: Conversation, timing: Timing) -> Any:
    """`answer` for httpx's async client."""
    response = answer(core, request, conversation, timing)
    stream = response.extensions.get("network_stream")
    if stream is not None:  # (a refusal has none)
        stream.__class__ = _AsyncMemoryNetworkStream
    return response


class TeeNetworkStream:
    """A real network stream (sync or async) whose reads and writes are recorded."""

    def __init__(self, stream: Any, recorder: WsRecorder, skip: int = 0) -> None:
        self._stream, self._recorder = stream, recorder
        self._skip = skip  # bytes read already recorded (with the 101)

    def read(self, max_bytes: int, timeout: float | None = None) -> Any:
        result = self._stream.read(max_bytes, timeout)
        if hasattr(result, "__await__"):
            return self._aread(result)
        self._got(result)
        return result

    async def _aread(self, pending: Any) -> bytes:
        data: bytes = await pending
        self._got(data)
        return data

    def _got(self, data: bytes) -> None:
        if self._skip and data:
            data, self._skip = data[self._skip :], max(0, self._skip - len(data))
            if not data:
                return
        if data:
            self._recorder.received(data)
        else:
            self._recorder.finish(None)

    def write(self, buffer: bytes, timeout: float | None = None) -> Any:
        self._recorder.sent(bytes(buffer))
        return self._stream.write(buffer, timeout)

    def close(self) -> Any:
        self._recorder.finish(None)
        return self._stream.close()

    async def aclose(self) -> None:
        self._recorder.finish(None)
        await self._stream.aclose()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


_KEEPALIVE_FAILED = "Keepalive ping timeout"  # httpx-ws's own close reason


def _first(session: Any, stream: MemoryNetworkStream, due: float, timeout: float | None) -> str | None:
    """Which of the session's timers ends a stall until ``due`` first: ``"keepalive"`` (its
    ``keepalive_ping_*_seconds``), ``"timeout"`` (the receive's), or None (neither: served)."""
    now = _timing.clock.now()
    ends = keepalive(
        getattr(session, "_keepalive_ping_interval_seconds", None),
        getattr(session, "_keepalive_ping_timeout_seconds", None),
        stream.opened,
    )(stream.quiet_since, due)
    if ends is not None and (timeout is None or ends - now < timeout):
        return "keepalive"
    return "timeout" if timeout is not None and due - now > timeout else None


def _receive(original: Any) -> Any:
    """``WebSocketSession.receive(timeout=)`` on a replayed session: a stall past its timeout
    raises its ``queue.Empty`` at once; one its keepalive ends first ends as the keepalive ends
    it (close 1011 "Keepalive ping timeout", ``WebSocketNetworkError``), at once."""

    def receive(self: Any, timeout: float | None = None) -> Any:
        stream = getattr(self, "stream", None)
        if type(stream) is not MemoryNetworkStream or not self._events.empty():
            return original(self, timeout)
        due = stream.wait_stalled()
        first = None if due is None or not self._events.empty() else _first(self, stream, due, timeout)
        if first == "keepalive":
            from httpx_ws import WebSocketNetworkError
            from wsproto.frame_protocol import CloseReason

            # (the error first: the answer to the close, which a stalled server never sends, is
            # not what this receive returns)
            self._events.put(WebSocketNetworkError())
            self.close(CloseReason.INTERNAL_ERROR, _KEEPALIVE_FAILED)
        elif first == "timeout":
            import queue

            raise queue.Empty
        elif due is not None and self._events.empty():
            stream.skip_stall(warn=timeout is None)  # (instant timing: nothing ends it, it is not waited)
        return original(self, timeout)

    return receive


def _areceive(original: Any) -> Any:
    """`_receive` for ``AsyncWebSocketSession`` (its timeout raises ``TimeoutError``)."""

    async def receive(self: Any, timeout: float | None = None) -> Any:
        import anyio

        stream = getattr(self, "stream", None)
        if (
            not isinstance(stream, _AsyncMemoryNetworkStream)
            or self._receive_event.statistics().current_buffer_used
        ):
            return await original(self, timeout)
        for _ in range(100):  # the reading task's turns, until it waits for the stalled chunk
            if not stream.stall_ahead() or stream.stalled() is not None:
                break
            await anyio.sleep(0)
        due = stream.stalled()
        busy = self._receive_event.statistics().current_buffer_used
        first = None if due is None or busy else _first(self, stream, due, timeout)
        if first == "keepalive":
            from httpx_ws import WebSocketNetworkError
            from wsproto.frame_protocol import CloseReason

            await self.close(CloseReason.INTERNAL_ERROR, _KEEPALIVE_FAILED)
            # from a task, as httpx-ws's keepalive task sends it (the channel holds nothing)
            self._background_task_group.start_soon(self._send_event.send, WebSocketNetworkError())
        elif first == "timeout":
            raise TimeoutError
        elif due is not None and not busy:
            stream.skip_stall(warn=timeout is None)  # (instant timing: nothing ends it, it is not waited)
        return await original(self, timeout)

    return receive


def patches() -> list[Patch]:
    """``receive`` of httpx-ws's sessions (their timers on a replayed session's stalls); the
    handshake itself goes through the httpx stack's pool patches."""
    import httpx_ws

    return [
        Patch(httpx_ws.WebSocketSession, "receive", _receive),
        Patch(httpx_ws.AsyncWebSocketSession, "receive", _areceive),
    ]
