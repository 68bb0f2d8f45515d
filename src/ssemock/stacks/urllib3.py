"""The urllib3 stack: requests, urllib3 itself, botocore (and everything built on them).

``HTTPConnectionPool._make_request`` sends one attempt of one request (``urlopen`` calls it once
per attempt, so urllib3's and botocore's retry loops see every attempt; HTTPS and the pools of
botocore are subclasses). A replayed response is what urllib3 itself builds over a socket: an
``http.client.HTTPResponse`` reading HTTP/1.1 wire bytes, with the body in
``Transfer-Encoding: chunked``, one HTTP chunk per planned chunk, each pulled from the plan only
when http.client asks for more bytes, wrapped in ``urllib3.response.HTTPResponse`` as
``HTTPConnection.getresponse`` wraps it. So requests' ``iter_content(None)`` and urllib3's
``stream()`` yield one piece per planned chunk, and faults are socket events the libraries map
themselves: a disconnect is EOF mid-body (urllib3 ``ProtocolError``, requests
``ChunkedEncodingError``), a stall past the read timeout is ``socket.timeout`` at once (urllib3
``ReadTimeoutError``, requests ``ConnectionError``, as requests raises it while streaming).

An HTTPS request through a proxy has its CONNECT tunnel opened by ``urlopen`` before
``_make_request``; it is deferred until the request is sent for real (a replay opens none).

Recording tees at the socket: while ``getresponse`` runs, the connection's ``makefile`` reader
feeds every ``recv`` to an ``h11`` client parser as it arrives, so each recorded chunk is body
bytes one ``recv`` delivered (one per HTTP chunk in it), timed on arrival, not when the client
reads them. A response closed before the message's end has the rest read from the socket
into the recording first, in the close call (``drain_on_close``). Needs urllib3 >= 2.3.
"""

from __future__ import annotations

import contextvars
import functools
import http.client
import inspect
import io
import socket
import weakref
from collections.abc import Callable, Iterator
from types import SimpleNamespace
from typing import Any

import h11
import httpx
from respx.models import PassThrough
from urllib3 import HTTPHeaderDict
from urllib3.connection import HTTPConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import ReadTimeoutError
from urllib3.response import BaseHTTPResponse, HTTPResponse
from urllib3.util import SKIP_HEADER, Timeout
from urllib3.util.request import body_to_chunks

from ..plan.push_recording import LiveSource
from ..plan.record import Recorder
from ..plan.serving import ReplayStream
from . import STACK_KEY, Patch, Record, dispatch, intercepting, passing

__all__ = ["ERRORS", "patches"]

STACK = "urllib3"


class _Disconnect(Exception):
    """Planned: the peer closes the connection here (the reader returns EOF)."""


class _Stalled(Exception):
    """Planned: no data within the read timeout (the reader raises ``socket.timeout``)."""


# Planned faults (and recorded errors, by type name) as the socket events they are; anything
# else a recording stored ends the body early, like RemoteProtocolError.
ERRORS = SimpleNamespace(
    RemoteProtocolError=_Disconnect,
    ReadTimeout=_Stalled,
    ReadTimeoutError=_Stalled,
    TimeoutError=_Stalled,
    timeout=_Stalled,
    ServerTimeoutError=_Stalled,
    SocketTimeoutError=_Stalled,
)

_teeing: contextvars.ContextVar[tuple[Recorder, str, HTTPConnectionPool] | None] = contextvars.ContextVar(
    "ssemock_urllib3_teeing", default=None
)
_MAX_HEAD = 1 << 20  # h11's limit for a response head (http.client allows 100 lines of 64 KB)
# connection -> its CONNECT tunnel through a proxy, opened only if the request is sent for real
_tunnels: weakref.WeakKeyDictionary[Any, Callable[[], None]] = weakref.WeakKeyDictionary()


def patches() -> list[Patch]:
    return [
        Patch(HTTPConnectionPool, "_make_request", _intercepting),
        Patch(HTTPSConnectionPool, "_prepare_proxy", _deferring),
        Patch(HTTPConnection, "getresponse", _teeing_getresponse),
    ]


def _deferring(original: Any) -> Any:
    """``urlopen`` opens an HTTPS proxy tunnel before ``_make_request``: a replay must not."""

    def _prepare_proxy(self: HTTPSConnectionPool, conn: Any) -> None:
        if not intercepting():
            return original(self, conn)  # type: ignore[no-any-return]
        _tunnels[conn] = lambda: original(self, conn)

    return _prepare_proxy


def _intercepting(original: Any) -> Any:
    signature = inspect.signature(original)

    def _make_request(self: HTTPConnectionPool, *args: Any, **kwargs: Any) -> BaseHTTPResponse:
        if not intercepting():
            return original(self, *args, **kwargs)  # type: ignore[no-any-return]
        bound = signature.bind(self, *args, **kwargs)
        bound.apply_defaults()
        call = bound.arguments
        body, call["body"] = _body(call["body"], call["method"])
        request = _request(self, call, body)
        tunnel = _tunnels.pop(call["conn"], None)
        try:
            response = dispatch(request)
        except PassThrough as passed:
            token = _teeing.set(
                (passed.recorder, call["method"], self) if isinstance(passed, Record) else None
            )
            try:
                with passing(passed.request.url.host):
                    if tunnel is not None:
                        tunnel()
                    real: BaseHTTPResponse = original(*bound.args, **bound.kwargs)
            finally:
                _teeing.reset(token)
            if not (isinstance(passed, Record) and passed.recorder.replays()):
                return real
            if passed.recorder.pushes():  # it may never end: served as it arrives
                live = LiveSource(
                    real.stream(1 << 16, decode_content=False), close=functools.partial(_close, real)
                )
                try:
                    response = passed.recorder.served(live)
                finally:
                    if not live.taken:
                        _close(real)
                # the live response keeps its connection: the served one has none to give back
                return _serve(self, {**call, "response_conn": None}, response)
            try:  # the whole live body into the recording, then its replay to the client
                real.read(decode_content=False)
            except Exception:  # recorded: the replay raises it at the same byte
                pass
            finally:
                real.release_conn()
            response = passed.recorder.served()
            call = {**call, "response_conn": None}  # the live response gave its connection back
        return _serve(self, call, response)

    return _make_request


def _close(real: BaseHTTPResponse) -> None:
    """Close a live response as requests closes one (the rest drained into the recording first)."""
    real.close()
    real.release_conn()


def _body(body: Any, method: str) -> tuple[bytes, Any]:
    """The request body as bytes (for matching), and what to send in its place: the body itself,
    or for a file or iterable (read now) its bytes as one piece, framed as urllib3 frames it."""
    if body is None or isinstance(body, (bytes, str)):
        return (body.encode() if isinstance(body, str) else body or b""), body
    try:
        return bytes(memoryview(body)), body
    except TypeError:
        pass
    chunks = body_to_chunks(body, method=method, blocksize=1 << 16).chunks or ()
    data = b"".join(c.encode() if isinstance(c, str) else bytes(c) for c in chunks)
    return data, [data]


def _request(pool: HTTPConnectionPool, call: dict[str, Any], body: bytes) -> httpx.Request:
    url: str = call["url"]
    if not url.startswith(("http://", "https://")):  # origin form; absolute through an HTTP proxy
        host = pool.host if ":" not in pool.host else f"[{pool.host}]"
        url = f"{pool.scheme}://{host}{'' if pool.port is None else f':{pool.port}'}{url}"
    headers = [(k, v) for k, v in (call["headers"] or {}).items() if v != SKIP_HEADER]
    timeout = pool._get_timeout(call["timeout"])
    timeout.start_connect()
    read = Timeout.resolve_default_timeout(timeout.read_timeout)
    return httpx.Request(
        call["method"],
        url,
        headers=headers,
        content=body,
        extensions={STACK_KEY: STACK, "timeout": {"read": read}},
    )


# -- replay ------------------------------------------------------------------------------------


def _serve(pool: HTTPConnectionPool, call: dict[str, Any], response: httpx.Response) -> BaseHTTPResponse:
    """The response urllib3 would build from a socket that sends this one."""
    method: str = call["method"]
    status = response.status_code
    bodiless = method == "HEAD" or status in (204, 304) or 100 <= status < 200
    stream = response.stream
    if bodiless:
        pieces: Iterator[bytes] | None = None
    elif isinstance(stream, ReplayStream):
        pieces = iter(stream)
    else:  # a user's own respx route: its (decoded) body in one piece
        pieces = iter([response.read()])
    reader = _ReplayReader(_head(response, chunked=not bodiless), pieces, stream)
    raw = http.client.HTTPResponse(_ReplaySocket(reader), method=method)  # type: ignore[arg-type]
    raw.begin()
    served = HTTPResponse(
        body=raw,
        headers=HTTPHeaderDict(raw.msg.items()),
        status=raw.status,
        version=raw.version,
        version_string="HTTP/1.1",
        reason=raw.reason,
        preload_content=call["preload_content"],
        decode_content=call["decode_content"],
        original_response=raw,
        enforce_content_length=call["enforce_content_length"],
        request_method=method,
        request_url=call["url"],
        sock_shutdown=reader.shutdown,
    )
    served.retries = call["retries"]
    served._connection = call["response_conn"]
    served._pool = pool
    return served


_FRAMING = (b"content-length", b"transfer-encoding", b"content-encoding")


def _head(response: httpx.Response, *, chunked: bool) -> bytes:
    lines = [b"HTTP/1.1 %d %s" % (response.status_code, response.reason_phrase.encode("latin-1"))]
    for name, value in response.headers.raw:
        if name.lower() in _FRAMING:  # bodies are stored decoded, and served chunked
            continue
        if b"\r" in value or b"\n" in value:
            raise ValueError(
                f"ssemock: the response header {name.decode('latin-1')!r} holds a line break; "
                f"a header value must be one line (fix it in the cassette)"
            )
        lines.append(name + b": " + value)
    if chunked:
        lines.append(b"transfer-encoding: chunked")
    return b"\r\n".join(lines) + b"\r\n\r\n"


class _ReplaySocket:
    """What ``http.client.HTTPResponse`` needs of a socket: ``makefile``."""

    def __init__(self, reader: _ReplayReader) -> None:
        self._reader = reader

    def makefile(self, mode: str = "rb", *args: Any, **kwargs: Any) -> io.BufferedReader:
        return io.BufferedReader(self._reader)


class _ReplayReader(io.RawIOBase):
    """The socket's bytes: the head, then one HTTP chunk per planned chunk, each taken from the
    plan only when the reader runs dry (a read never crosses a planned boundary)."""

    def __init__(self, head: bytes, pieces: Iterator[bytes] | None, stream: Any) -> None:
        self._pending: bytes | memoryview = head
        self._pieces = pieces
        self._stream = stream

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if not self._pending:
            self._pending = self._next()
        n = min(len(buffer), len(self._pending))
        buffer[:n] = self._pending[:n]
        self._pending = memoryview(self._pending)[n:] if n < len(self._pending) else b""
        return n

    def _next(self) -> bytes:
        pieces = self._pieces
        if pieces is None:
            return b""  # EOF: after the last chunk, a disconnect, a timeout, or no body at all
        try:
            for piece in pieces:
                if piece:
                    return b"%x\r\n%b\r\n" % (len(piece), piece)
        except _Disconnect:
            self._pieces = None
            return b""
        except _Stalled as stalled:
            self._pieces = None
            timeout = TimeoutError("timed out")
            timeout.add_note(str(stalled))  # why: ssemock's words (a stall, a request never made)
            raise timeout from None
        self._pieces = None
        return b"0\r\n\r\n"

    def shutdown(self, how: int = socket.SHUT_RD) -> None:
        self._pieces, self._pending = None, b""

    def close(self) -> None:
        if not self.closed and hasattr(self._stream, "close"):
            self._stream.close()
        super().close()


# -- recording ---------------------------------------------------------------------------------


def _teeing_getresponse(original: Any) -> Any:
    def getresponse(self: HTTPConnection) -> Any:
        teeing = _teeing.get()
        if teeing is None:
            return original(self)
        _teeing.set(None)  # one response per recorded attempt
        sock = self.sock
        tee = self.sock = _TeeSocket(sock, _Tee(*teeing))
        try:
            return original(self)
        finally:
            if self.sock is tee:  # http.client sets None when the response closes the connection
                self.sock = sock

    return getresponse


class _TeeSocket:
    """The connection's socket, whose reader tees every ``recv`` into the recording."""

    def __init__(self, sock: Any, tee: _Tee) -> None:
        self._sock, self._tee = sock, tee

    def makefile(self, mode: str = "rb", *args: Any, **kwargs: Any) -> io.BufferedReader:
        return io.BufferedReader(_TeeReader(self._sock.makefile("rb", buffering=0), self._tee))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sock, name)


class _TeeReader(io.RawIOBase):
    def __init__(self, raw: Any, tee: _Tee) -> None:
        self._raw, self._tee = raw, tee

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int | None:
        try:
            n: int | None = self._raw.readinto(buffer)
        except Exception as exc:
            self._tee.fail(exc)
            raise
        if n is not None:
            self._tee.feed(bytes(buffer[:n]))
        return n

    def close(self) -> None:
        """Closed before the message's end: the rest is drained into the recording first, in this
        call (`Recorder.closed_early`); else the recording ends here (no-op after its end)."""
        if not self.closed:
            rec = self._tee.closed_early()
            if rec is None:
                self._raw.close()
            else:
                buffer = bytearray(1 << 16)

                def rest() -> None:
                    while not rec.ended and self.readinto(buffer):
                        pass

                rec.drain(rest, then=self._raw.close)
        super().close()


class _Tee:
    """Parses the received bytes with h11: ``begin`` at the head, then a chunk per piece of body
    h11 finds in each ``recv`` (one per HTTP chunk: a server's writes stay apart even when TCP
    delivers several in one segment), ``finish`` at the end of the message, at a failure, or when
    abandoned."""

    def __init__(self, recorder: Recorder, method: str, pool: HTTPConnectionPool) -> None:
        self._rec: Recorder | None = recorder
        self._pool = pool
        self._parser = h11.Connection(h11.CLIENT, max_incomplete_event_size=_MAX_HEAD)
        self._parser.send(h11.Request(method=method, target="/", headers=[("host", "ssemock")]))
        self._parser.send(h11.EndOfMessage())

    def feed(self, data: bytes) -> None:
        rec = self._rec
        if rec is None:
            return
        self._parser.receive_data(data)  # b"": the peer closed the connection
        ended, error = False, None
        try:
            while not ended:
                event = self._parser.next_event()
                if event is h11.NEED_DATA or event is h11.PAUSED:
                    break
                if isinstance(event, h11.Data):
                    rec.chunk(event.data)
                elif isinstance(event, h11.Response):
                    rec.begin(
                        event.status_code,
                        [(k.decode("latin-1"), v.decode("latin-1")) for k, v in event.headers.raw_items()],
                    )
                elif isinstance(event, (h11.EndOfMessage, h11.ConnectionClosed)):
                    ended = True
        except h11.RemoteProtocolError as exc:  # e.g. closed before the body's end
            error = exc
        if ended or error is not None:
            self.end(error)

    def closed_early(self) -> Recorder | None:
        """The client closed the response before the message's end: the recorder to drain the
        rest into, or None (the recording ends here, as abandoned; or it had ended)."""
        rec = self._rec
        if rec is not None and rec.closed_early():
            return rec
        self.end(GeneratorExit())
        return None

    def fail(self, exc: Exception) -> None:
        """A ``recv`` failed. A timeout is stored as the error urllib3 raises for it (the urllib3
        and aiohttp stacks replay that name as their read timeout)."""
        self.end(
            ReadTimeoutError(self._pool, None, "Read timed out.") if isinstance(exc, TimeoutError) else exc
        )

    def end(self, exc: BaseException | None) -> None:
        if self._rec is not None:
            self._rec.finish(exc)
            self._rec = None
