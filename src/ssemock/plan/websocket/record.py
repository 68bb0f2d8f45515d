"""Recording a WebSocket session: `WsRecorder` takes the bytes each side wrote, as they went over
the wire (the client's handshake head and masked frames; the server's 101 head and frames), with
their times, and builds the cassette's `ssemock.store.websocket.WebSocket` from them: messages
reassembled (and inflated when permessage-deflate was agreed), fragments and control frames in
the frame map, the received chunks as the wire map, and how the session ended."""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable
from typing import Any

from ...framing.websocket import FrameError, FrameParser, Inflater, Opcode, RawFrame, parse_close
from ...redaction.rules import redact_response, redact_subprotocol
from ...scan.incremental_messages import MessageScan, messages_scanned
from ...store.model import Headers, Interaction, Request, Response
from ...store.websocket import Close, FrameNote, Message, WebSocket, Wire

__all__ = ["WsRecorder"]

_HEAD_END = b"\r\n\r\n"
_UNHASHED_MAX = 32 << 20  # bytes of the server's wire kept to hash at the save, at most


def _head(raw: bytes) -> tuple[int, str, Headers]:
    lines = raw.decode("latin-1").split("\r\n")
    first = lines[0].split(" ", 2)
    status = int(first[1]) if len(first) > 1 and first[1].isdigit() else 0
    headers: Headers = []
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if sep:
            headers.append((name.strip().lower(), value.strip()))
    return status, (first[2] if len(first) > 2 else ""), headers


def _refused(status: int, headers: Headers, raw: bytes, t: float) -> Response:
    """The HTTP answer to a refused upgrade: its body de-chunked and cut at its length (the bytes
    after it, if any, are not the answer's), as one chunk."""
    names = {k for k, _ in headers}
    body = raw
    if any(k == "transfer-encoding" and "chunked" in v.lower() for k, v in headers):
        body, rest = b"", raw
        while True:
            size_line, sep, rest = rest.partition(b"\r\n")
            try:
                size = int(size_line.split(b";")[0].strip(), 16) if sep else 0
            except ValueError:  # not chunked after all: kept as received
                body = raw
                break
            if size <= 0:
                break
            body, rest = body + rest[:size], rest[size + 2 :]
        headers = [(k, v) for k, v in headers if k != "transfer-encoding"]
        names.discard("transfer-encoding")
    length = next((v for k, v in headers if k == "content-length"), None)
    if length is not None and length.strip().isdigit():
        body = body[: int(length)]
    if "content-length" not in names:
        headers = [*headers, ("content-length", str(len(body)))]
    return Response(status, headers, body, [len(body)] if body else [], [t] if body else [], True, None)


class _Side:
    """One direction's bytes: the head until its blank line, then frames."""

    def __init__(self, direction: str, masked: bool) -> None:
        self.direction = direction
        self.parser = FrameParser(masked=masked)
        self.head = b""
        self.head_done = False
        self.partial: list[bytes] = []
        self.partial_op = Opcode.TEXT
        self.partial_rsv1 = False
        self.cuts: list[int] = []
        self.count = 0
        self.inflater: Inflater | None = None
        self.bytes = 0  # frame bytes seen after the head
        self._digest = hashlib.sha256()  # of those bytes, up to the ones in ``_unhashed``
        self._unhashed: list[bytes] = []  # hashed when the recording is asked for, not while read
        self._unhashed_size = 0

    def wire(self, data: bytes) -> None:
        """``data`` came over the wire after the head: counted, and kept for its digest (past
        `_UNHASHED_MAX` bytes kept, those are hashed at once)."""
        self.bytes += len(data)
        self._unhashed.append(data)
        self._unhashed_size += len(data)
        if self._unhashed_size > _UNHASHED_MAX:
            self.hexdigest()

    def hexdigest(self) -> str:
        """The SHA-256 of the bytes after the head so far."""
        for data in self._unhashed:
            self._digest.update(data)
        self._unhashed, self._unhashed_size = [], 0
        return self._digest.hexdigest()


class WsRecorder:
    """Records one WebSocket session. A stack calls ``sent(data)`` with each write of the client
    (the handshake head first), ``received(data)`` with each read from the server (the 101 head
    first), then ``finish(error)`` once; ``interaction()`` is the recording so far (redacted, as
    it will be saved), or None before the 101 or when the hook dropped it.

    ``on_done(recorder)`` is called once when the handshake was answered (the recording then
    belongs to the player's session, finished or not)."""

    def __init__(
        self,
        request: Request,
        *,
        on_start: Callable[[WsRecorder], object] | None = None,
        before_record_response: Callable[[Response], Response | None] | None = None,
    ) -> None:
        self.request = request
        """The handshake request, redacted (as matched and saved)."""
        self.t0 = time.perf_counter()
        self._on_start = on_start
        self._hook = before_record_response
        self._lock = threading.Lock()
        self._client = _Side("send", masked=True)
        self._server = _Side("recv", masked=False)
        self.status = 0
        """The handshake's status (101 once upgraded; 0 before the answer)."""
        self.reason = ""
        self.headers: Headers = []
        self.response_t = 0.0
        self.messages: list[Message] = []
        self.notes: list[FrameNote] = []
        self.wire = Wire()
        self.close = Close()
        self._closes: list[tuple[str, int | None, str, float]] = []
        self.ended = False
        self.error: str | None = None
        self.refusal = b""
        """What came after the head of a refused handshake (not a 101): its body, as received."""
        self._scan = MessageScan(request.url)  # the messages' secret scan, done as they arrive

    def _now(self) -> float:
        return time.perf_counter() - self.t0

    # -- what the stack calls -------------------------------------------------------------------

    def sent(self, data: bytes, t: float | None = None) -> None:
        """The client wrote ``data``."""
        with self._lock:
            self._feed(self._client, bytes(data), self._now() if t is None else t)

    def received(self, data: bytes, t: float | None = None) -> None:
        """The server's ``data`` arrived."""
        with self._lock:
            self._feed(self._server, bytes(data), self._now() if t is None else t)

    def finish(self, error: BaseException | None = None) -> None:
        """The connection is over (``error``: how the read failed, if it did)."""
        with self._lock:
            if self.ended:
                return
            self.ended = True
            if error is not None:
                self.error = f"{type(error).__name__}: {error}"
            self._finish_close()

    # -- parsing --------------------------------------------------------------------------------

    def _feed(self, side: _Side, data: bytes, t: float) -> None:
        if not side.head_done:
            side.head += data
            at = side.head.find(_HEAD_END)
            if at < 0:
                return
            head, data = side.head[: at + 4], side.head[at + 4 :]
            side.head, side.head_done = head, True
            if side is self._server:
                self.status, self.reason, self.headers = _head(head)
                self.response_t = t
                self._negotiated()
                if data and self.status == 101:
                    self.wire.head = len(data)
                if self._on_start is not None:  # a refusal belongs to the recording too
                    self._on_start(self)
            if not data:
                return
        if side is self._server and self.status != 101:
            self.refusal += data
            return
        if side is self._server:
            side.wire(data)
            self.wire.ends.append(side.bytes)
            self.wire.times.append(t)
        try:
            frames = side.parser.feed(data)
        except FrameError as exc:
            self.error = f"{side.direction}: {exc}"
            return
        for frame in frames:
            self._frame(side, frame, t)

    def _negotiated(self) -> None:
        agreed = next((v for k, v in self.headers if k == "sec-websocket-extensions"), "")
        if "permessage-deflate" not in agreed:
            return
        params = {p.strip().split("=")[0]: p.strip() for p in agreed.split(";")}

        def bits(name: str) -> int:
            value = params.get(name, "").partition("=")[2].strip('"')
            return int(value) if value.isdigit() else 15

        self._server.inflater = Inflater(
            no_context_takeover="server_no_context_takeover" in params,
            max_window_bits=bits("server_max_window_bits"),
        )
        self._client.inflater = Inflater(
            no_context_takeover="client_no_context_takeover" in params,
            max_window_bits=bits("client_max_window_bits"),
        )

    def _frame(self, side: _Side, frame: RawFrame, t: float) -> None:
        op = frame.opcode
        if op in (Opcode.PING, Opcode.PONG):
            kind = "ping" if op == Opcode.PING else "pong"
            self.notes.append(FrameNote(side.direction, side.count, kind, t=t, data=frame.payload))
            return
        if op == Opcode.CLOSE:
            code, reason = parse_close(frame.payload)
            self._closes.append((side.direction, code, reason, t))
            if self.ended:  # read after the stack called the session over (httpx-ws's reader
                self._finish_close()  # thread): the close says what the wire holds
            return
        if op != Opcode.CONTINUATION:
            side.partial, side.partial_op, side.partial_rsv1, side.cuts = [], op, frame.rsv1, []
        elif side.partial:
            side.cuts.append(sum(map(len, side.partial)))
        side.partial.append(frame.payload)
        if not frame.fin:
            return
        payload = b"".join(side.partial)
        if side.partial_rsv1 and side.inflater is not None:
            payload = side.inflater.decompress(payload)
        if side.cuts:
            self.notes.append(FrameNote(side.direction, side.count, "fragments", list(side.cuts)))
        if side.partial_op == Opcode.TEXT:
            self.messages.append(Message(side.direction, t, "text", payload.decode("utf-8", "replace")))
        else:
            self.messages.append(Message(side.direction, t, "binary", payload))
        self._scan.message(self.messages[-1], payload)
        side.count += 1
        side.partial = []

    def _finish_close(self) -> None:
        if not self._closes:
            self.close = Close(1006, "", None, False, None)
            return
        by, code, reason, t = self._closes[0]
        clean = len({d for d, *_ in self._closes}) == 2
        self.close = Close(
            code if code is not None else 1005, reason, "client" if by == "send" else "server", clean, t
        )

    # -- the recording --------------------------------------------------------------------------

    def interaction(self) -> Interaction | None:
        """The recording so far, redacted as it will be saved (None before the 101 arrived, or
        when ``before_record_response`` dropped it)."""
        with self._lock:
            if self.status == 0:
                return None
            headers = [
                (k, v)
                for k, v in self.headers
                if k not in ("sec-websocket-accept", "sec-websocket-protocol", "sec-websocket-extensions")
            ]
            if self.status != 101:
                response = redact_response(_refused(self.status, headers, self.refusal, self.response_t))
                hooked = response if self._hook is None else self._hook(response)
                return None if hooked is None else Interaction(self.request, hooked)
            response = redact_response(Response(self.status, headers, b"", [], [], True, None))
            if not self.ended:
                self._finish_close()
            asked = self.request.headers
            if not any(k == "sec-websocket-protocol" for k, _ in asked) and self._client.head_done:
                asked = _head(self._client.head)[2]  # a stack that sets it in the head it writes
            offered = [
                redact_subprotocol(p.strip())
                for k, v in asked
                if k == "sec-websocket-protocol"
                for p in v.split(",")
                if p.strip()
            ]
            agreed = next((v for k, v in self.headers if k == "sec-websocket-protocol"), None)
            agreed = None if agreed is None else redact_subprotocol(agreed)
            ext = next((v for k, v in self.headers if k == "sec-websocket-extensions"), None)
            messages = [Message(m.direction, max(0.0, m.t), m.type, m.data) for m in self.messages]
            ws = WebSocket(
                messages,
                list(self.notes),
                Wire(
                    self.wire.head,
                    list(self.wire.ends),
                    list(self.wire.times),
                    self._server.hexdigest() if self.wire.ends else None,
                ),
                self.close,
                offered,
                agreed,
                ext,
            )
            messages_scanned(ws, self._scan)  # the save need not scan the messages again
        if self._hook is not None:
            hooked = self._hook(response)
            if hooked is None:
                return None
            response = hooked
        return Interaction(self.request, response, ws)

    def summary(self) -> dict[str, Any]:
        """Counts for reports: messages each way, bytes received, how it ended."""
        return {
            "sent": sum(m.direction == "send" for m in self.messages),
            "received": sum(m.direction == "recv" for m in self.messages),
            "close": self.close.code,
        }
