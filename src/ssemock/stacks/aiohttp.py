"""The aiohttp stack: ``ClientSession._request``, which every aiohttp request goes through.

That covers plain aiohttp and every client built on it: the OpenAI and Anthropic SDKs'
``DefaultAioHttpClient`` (an httpx2 client whose transport is aiohttp, so httpcore2 never sees
its requests and they are caught here once), google-genai's async client, litellm's async path.

Replay answers with a real ``aiohttp.ClientResponse`` whose ``content`` is a ``StreamReader``
that pulls the next planned chunk only when a read waits for data, one chunk per wait: every
read method of aiohttp (``iter_any``, ``iter_chunked``, ``iter_chunks``, ``readline``,
``read``, ``text``, ``json``) then sees the planned boundaries as it would see a socket's. A
fault becomes the exception aiohttp itself raises for that socket event: a drop mid-body the
``ClientPayloadError`` of an unfinished chunked body, a stall past ``ClientTimeout.sock_read``
its ``SocketTimeoutError`` (at once, without sleeping).

Recording calls the original and tees the response's ``StreamReader`` where aiohttp's HTTP
parser feeds it, so the recorded chunks are the body pieces as they arrived from the network;
a response the client releases or closes before its end keeps its connection until a task has
drained the rest into the recording (``drain_on_close``), which ``wait_for_close`` awaits.
A redirect aiohttp follows is recorded as the request sent and the final response (replay serves
that, with no ``history``). WebSocket handshakes are left to aiohttp (and to the network lock).
"""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import Awaitable, Callable, Iterator, Mapping
from types import SimpleNamespace
from typing import Any

import aiohttp
import httpx
from aiohttp import hdrs
from aiohttp.base_protocol import BaseProtocol
from aiohttp.client_exceptions import ClientConnectionError, ClientPayloadError, ServerTimeoutError
from aiohttp.helpers import BasicAuth, TimerNoop, noop, sentinel, strip_auth_from_url
from aiohttp.http import HttpVersion11
from aiohttp.http_exceptions import TransferEncodingError
from aiohttp.streams import EmptyStreamReader, StreamReader
from multidict import CIMultiDict, CIMultiDictProxy
from respx.models import PassThrough
from yarl import URL

from ..plan.push_recording import LiveSource
from ..plan.record import Recorder
from ..plan.serving import ReplayStream
from . import STACK_KEY, Patch, Record, adispatch, intercepting, passing

__all__ = ["ERRORS", "patches"]

# aiohttp >= 3.10 raises SocketTimeoutError for ClientTimeout(sock_read=...); before, its base.
_SOCKET_TIMEOUT: type[ServerTimeoutError] = getattr(aiohttp, "SocketTimeoutError", ServerTimeoutError)
# The encodings aiohttp's parser decodes itself when auto_decompress is on.
_DECODED = frozenset({"gzip", "deflate", "br", "zstd"})
# aiohttp 3.14 made stream_writer a required ClientResponse argument.
_TAKES_STREAM_WRITER = "stream_writer" in inspect.signature(aiohttp.ClientResponse.__init__).parameters


class _Dropped(Exception):
    """Marker: the peer closed the connection mid-body (served as aiohttp's ClientPayloadError)."""


class _Silent(Exception):
    """Marker: no data within the read timeout (served as aiohttp's SocketTimeoutError)."""


#: The exceptions a plan raises for this stack, by the names [`ssemock.plan.serving.plan_response`][ssemock.plan_response]
#: asks for and the names a recording through any stack may have stored. The two markers become
#: exactly what aiohttp raises for the socket event (see `_as_raised`).
ERRORS = SimpleNamespace(
    RemoteProtocolError=_Dropped,
    ReadTimeout=_Silent,
    ProtocolError=_Dropped,
    ReadError=_Dropped,
    ChunkedEncodingError=_Dropped,
    ReadTimeoutError=_Silent,
    ClientPayloadError=ClientPayloadError,
    ServerDisconnectedError=aiohttp.ServerDisconnectedError,
    ClientOSError=aiohttp.ClientOSError,
    ServerTimeoutError=ServerTimeoutError,
    SocketTimeoutError=_SOCKET_TIMEOUT,
)


def _as_raised(exc: Exception) -> Exception:
    """The exception aiohttp raises for the event a plan's exception stands for."""
    if isinstance(exc, _Dropped):  # as aiohttp's connection_lost words an unfinished chunked body
        cause = TransferEncodingError("Not enough data to satisfy transfer length header.")
        error: Exception = ClientPayloadError(f"Response payload is not completed: {cause!r}")
        error.__cause__ = cause
    elif isinstance(exc, _Silent):  # as aiohttp's sock_read timer words it
        error = _SOCKET_TIMEOUT("Timeout on reading data from socket")
    else:
        return exc
    error.add_note(str(exc))
    return error


def _released(exc: BaseException) -> bool:
    """Whether ``set_exception`` came from the client releasing or closing the response early
    (aiohttp marks the body with exactly this error then)."""
    return type(exc) is ClientConnectionError and str(exc) == "Connection closed"


# -- the request ------------------------------------------------------------------------------


class _Collector:
    """A stream writer that keeps what an aiohttp payload writes (its body as bytes)."""

    def __init__(self) -> None:
        self.parts: list[bytes] = []

    async def write(self, chunk: bytes | bytearray | memoryview) -> None:
        self.parts.append(bytes(chunk))


async def _body(session: aiohttp.ClientSession, data: Any, json: Any) -> tuple[bytes, str | None, bool]:
    """The request body as bytes, its content type, and whether ``data`` could be sent only once
    (a stream, a file, a FormData): then the real send gets these bytes instead."""
    if data is not None and json is not None:
        raise ValueError("data and json parameters can not be used at the same time")
    if json is not None:
        dumps_bytes = getattr(session, "_json_serialize_bytes", None)
        if dumps_bytes is not None:
            return dumps_bytes(json), "application/json", False
        return session._json_serialize(json).encode("utf-8"), "application/json", False
    if data is None:
        return b"", None, False
    if isinstance(data, (bytes, bytearray, memoryview)):
        return bytes(data), None, False
    if isinstance(data, str):
        return data.encode("utf-8"), "text/plain; charset=utf-8", False
    once = not isinstance(data, (Mapping, list, tuple))
    if not isinstance(data, aiohttp.FormData) and not isinstance(data, aiohttp.payload.Payload) and not once:
        data = aiohttp.FormData(data)
    payload = data() if isinstance(data, aiohttp.FormData) else aiohttp.payload.PAYLOAD_REGISTRY.get(data)
    collector = _Collector()
    await payload.write(collector)  # type: ignore[arg-type]
    return b"".join(collector.parts), payload.content_type, once


def _read_timeout(session: aiohttp.ClientSession, timeout: Any) -> float | None:
    """The read timeout aiohttp applies: ``sock_read``, else ``total``, of the request's
    ``timeout=`` or the session's."""
    if timeout is sentinel:
        timeout = session.timeout
    if not isinstance(timeout, aiohttp.ClientTimeout):
        return None if timeout is None else float(timeout)
    read = timeout.sock_read if timeout.sock_read is not None else timeout.total
    return None if read is None else float(read)


async def _to_httpx(
    session: aiohttp.ClientSession, method: str, str_or_url: Any, kwargs: dict[str, Any]
) -> tuple[httpx.Request, URL, CIMultiDict[str], bytes | None]:
    """The request as aiohttp would send it (base_url, params, default headers, auth, cookies,
    body), as a tagged httpx.Request; also its URL, headers, and the body bytes when ``data``
    was one-shot."""
    url, url_auth = strip_auth_from_url(session._build_url(str_or_url))
    if kwargs.get("params"):
        url = url.extend_query(kwargs["params"])
    headers = session._prepare_headers(kwargs.get("headers"))
    auth: BasicAuth | None = kwargs.get("auth") or url_auth or getattr(session, "_default_auth", None)
    if auth is not None and hdrs.AUTHORIZATION not in headers:
        headers[hdrs.AUTHORIZATION] = auth.encode()
    cookies = session.cookie_jar.filter_cookies(url)
    if kwargs.get("cookies"):
        extra = aiohttp.CookieJar(unsafe=True)
        extra.update_cookies(kwargs["cookies"])
        cookies.load(extra.filter_cookies(url))
    if cookies and hdrs.COOKIE not in headers:
        headers[hdrs.COOKIE] = "; ".join(f"{m.key}={m.coded_value}" for m in cookies.values())
    body, content_type, once = await _body(session, kwargs.get("data"), kwargs.get("json"))
    if content_type and hdrs.CONTENT_TYPE not in headers:
        headers[hdrs.CONTENT_TYPE] = content_type
    extensions = {
        STACK_KEY: "aiohttp",
        "timeout": {"read": _read_timeout(session, kwargs.get("timeout", sentinel))},
    }
    sent = httpx.Request(
        method.upper(),
        str(url),
        headers=[(str(k), v) for k, v in headers.items()],
        content=body,
        extensions=extensions,
    )
    return sent, url, headers, body if once else None


# -- replay -----------------------------------------------------------------------------------


class _ReplayReader(StreamReader):
    """aiohttp's StreamReader over a replay stream: each wait for data pulls one planned chunk
    (so a read returns at most the rest of one chunk); the stream's end is EOF, its exception the
    socket error aiohttp would raise. ``iter_chunks`` yields each planned chunk, flagged False as
    for a body that is not chunk-encoded (marking HTTP chunk ends costs a third more per chunk)."""

    __slots__ = ("_replay", "_next", "_now")

    def __init__(self, replay: ReplayStream, *, limit: int, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(BaseProtocol(loop), limit, loop=loop)
        self._replay = replay
        self._next: Callable[[], Awaitable[bytes]] = replay.__aiter__().__anext__
        # nothing to wait for or raise: pulled without a coroutine per chunk
        self._now: Iterator[bytes] | None = iter(replay) if replay.instant else None

    async def _wait(self, func_name: str) -> None:
        if self._now is not None:
            chunk = next(self._now, None)
            if chunk is None:
                self.feed_eof()
            else:
                self.feed_data(chunk)
            return
        # Two reads waiting at once fail as with a socket: the stream's generator refuses a
        # second pull while the first is running.
        try:
            chunk = await self._next()
        except StopAsyncIteration:
            self.feed_eof()
            return
        except asyncio.CancelledError:  # it ended the stream's generator while it slept: the
            StreamReader.set_exception(self, _cut())  # next read must fail, not see a clean EOF
            raise
        except Exception as exc:
            failure = _as_raised(exc)
            StreamReader.set_exception(self, failure)
            raise failure  # noqa: B904  (the client's own error, as the live stream would raise it)
        self.feed_data(chunk)

    def set_exception(self, exc: BaseException, *args: Any, **kwargs: Any) -> None:
        if _released(exc):
            self._replay.close()
        super().set_exception(exc, *args, **kwargs)


def _cut() -> ClientPayloadError:
    return ClientPayloadError(
        "ssemock: a read was cancelled while the replay waited for a chunk's recorded time, and a "
        "replayed stream cannot resume after that (a socket could): close the response after a "
        "cancelled read, or replay with timing='instant'"
    )


def _ready_reader(body: bytes, *, limit: int, loop: asyncio.AbstractEventLoop) -> StreamReader:
    """A finished StreamReader holding ``body`` (a user's own respx route answered)."""
    reader = StreamReader(BaseProtocol(loop), limit, loop=loop)
    if body:
        reader.feed_data(body)
    reader.feed_eof()
    return reader


async def _to_aiohttp(
    session: aiohttp.ClientSession, method: str, url: URL, headers: CIMultiDict[str], response: httpx.Response
) -> aiohttp.ClientResponse:
    """A started ClientResponse serving ``response`` (its replay stream lazily)."""
    loop = asyncio.get_running_loop()
    limit = getattr(session, "_read_bufsize", 2**16)
    reader: StreamReader
    if isinstance(response.stream, ReplayStream):
        reader = _ReplayReader(response.stream, limit=limit, loop=loop)
    else:
        reader = _ready_reader(await response.aread(), limit=limit, loop=loop)
    info = aiohttp.RequestInfo(url, method.upper(), CIMultiDictProxy(headers), url)
    extra: dict[str, Any] = {"stream_writer": SimpleNamespace(output_size=0)} if _TAKES_STREAM_WRITER else {}
    resp: aiohttp.ClientResponse = session._response_class(
        method.upper(),
        url,
        writer=None,
        continue100=None,
        timer=TimerNoop(),
        request_info=info,
        traces=[],
        loop=loop,
        session=session,
        **extra,
    )
    items = response.headers.multi_items()
    resp.version = HttpVersion11
    resp.status = response.status_code
    resp.reason = response.reason_phrase
    resp._headers = CIMultiDictProxy(CIMultiDict(items))
    resp._raw_headers = tuple((k.encode("latin-1"), v.encode("latin-1")) for k, v in items)
    for value in resp._headers.getall(hdrs.SET_COOKIE, ()):
        resp.cookies.load(value)
    if resp.cookies:
        session.cookie_jar.update_cookies(resp.cookies, url)
    resp.content = reader
    resp._closed = False  # as ClientResponse.start leaves it: released at EOF or by the client
    reader.on_eof(resp._response_eof)
    return resp


async def _raise_for_status(
    session: aiohttp.ClientSession, resp: aiohttp.ClientResponse, setting: Any
) -> None:
    """What ``_request`` does with ``raise_for_status`` (the request's, else the session's)."""
    if setting is None:
        setting = getattr(session, "_raise_for_status", False)
    if callable(setting):
        await setting(resp)
    elif setting:
        resp.raise_for_status()


# -- recording --------------------------------------------------------------------------------


def _tee(resp: aiohttp.ClientResponse, recorder: Recorder, *, decoded: bool) -> None:
    """Tee the live body into ``recorder`` where aiohttp's parser feeds it: what was buffered
    when the response returned first, then each ``feed_data`` as it arrives; EOF or an error
    finish it. The client releasing or closing the response before the end drains the rest into
    the recording (`_closing`), or ends it there as abandoned (``GeneratorExit``)."""
    headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in resp.raw_headers]
    if decoded:  # aiohttp decoded the body already; the recorder must not decode it again
        headers = [(k, v) for k, v in headers if k.lower() != "content-encoding"]
    recorder.begin(resp.status, headers)
    reader = resp.content
    if isinstance(reader, EmptyStreamReader):
        recorder.finish(None)
        return
    for i, data in enumerate(reader._buffer):
        recorder.chunk(data[reader._buffer_offset :] if i == 0 else data)
    if reader.exception() is not None:
        recorder.finish(_finish_exc(reader.exception()))  # type: ignore[arg-type]
        return
    if reader.is_eof():
        recorder.finish(None)
        return
    live = _Live(recorder, type(reader))
    base = live.base

    class _Teeing(base):  # type: ignore[valid-type,misc]
        __slots__ = ()

        def feed_data(self, data: bytes, *args: Any) -> Any:
            rec = live.recorder
            if rec is not None and data:
                rec.chunk(bytes(data))
                if rec.ended:  # cut at max_body_bytes
                    live.end(None, self)
            if live.draining:  # the client is gone: nothing to keep for it
                return None
            return base.feed_data(self, data, *args)

        def feed_eof(self) -> None:
            live.end(None, self)
            base.feed_eof(self)

        def set_exception(self, exc: BaseException, *args: Any, **kwargs: Any) -> None:
            if not (live.draining and _released(exc)):  # while draining, the client's release is no end
                live.end(_finish_exc(exc), self)
            base.set_exception(self, exc, *args, **kwargs)

    reader.__class__ = _Teeing
    _closing(resp, live)


class _Live:
    """One aiohttp body being recorded: its recorder until the end, whether the client has gone
    (the rest is being drained), and an event set at the end."""

    def __init__(self, recorder: Recorder, base: type[StreamReader]) -> None:
        self.recorder: Recorder | None = recorder
        self.base = base
        self.draining = False
        self.ended = asyncio.Event()
        self.drained: asyncio.Task[None] | None = None

    def end(self, exc: BaseException | None, reader: StreamReader) -> None:
        if self.recorder is not None:
            rec, self.recorder = self.recorder, None
            rec.finish(exc)
            reader.__class__ = self.base  # aiohttp's own reader again (so the overrides call base's)
            self.ended.set()


def _closing(resp: aiohttp.ClientResponse, live: _Live) -> None:
    """The client's ``release()`` / ``close()`` before the body's end (``async with`` calls
    ``release``, then awaits ``wait_for_close``): the client sees its release at once (reads
    fail with aiohttp's "Connection closed"), and a task drains the rest into the recording
    (`Recorder.closed_early`) before releasing or closing the connection for real;
    ``wait_for_close`` awaits that task."""
    base = type(resp)

    def drains(self: aiohttp.ClientResponse, then: Callable[[aiohttp.ClientResponse], Any]) -> bool:
        rec = live.recorder
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # closed outside its loop: nothing can read the rest
            return False
        if live.draining or rec is None or not rec.closed_early():
            return False
        live.draining = True
        self._notify_content()  # the client's view of its release
        self._closed = True  # no release at EOF: the drain releases after it
        protocol = self.content._protocol
        if getattr(protocol, "_reading_paused", False):  # a full buffer the client left unread
            protocol.resume_reading()

        async def drain() -> None:
            try:
                await rec.adrain(live.ended.wait)
            finally:
                then(self)

        live.drained = loop.create_task(drain())
        return True

    class _Closing(base):  # type: ignore[valid-type,misc]
        __slots__ = ()

        def release(self) -> Any:
            return noop() if drains(self, base.release) else base.release(self)

        def close(self) -> None:
            if not drains(self, base.close):
                base.close(self)

        async def wait_for_close(self) -> None:
            if live.drained is not None:
                await live.drained
            await base.wait_for_close(self)

    resp.__class__ = _Closing


def _waits_for(resp: aiohttp.ClientResponse, after: Callable[[], Awaitable[None]]) -> None:
    """``resp.wait_for_close`` (awaited by ``async with``) also awaits ``after``: the live response
    a recording run serves a server-push stream from, whose close drains it into the recording."""
    base = type(resp)

    class _Waiting(base):  # type: ignore[valid-type,misc]
        __slots__ = ()

        async def wait_for_close(self) -> None:
            await base.wait_for_close(self)
            await after()

    resp.__class__ = _Waiting


def _finish_exc(exc: BaseException) -> BaseException:
    return GeneratorExit() if _released(exc) else exc


async def _send(
    original: Any,
    session: aiohttp.ClientSession,
    method: str,
    str_or_url: Any,
    kwargs: dict[str, Any],
    passed: PassThrough,
    body: bytes | None,
    headers: CIMultiDict[str],
    url: URL,
) -> aiohttp.ClientResponse:
    """Send for real (a user's pass-through route, or a recording tee'd into its recorder)."""
    if body is not None:  # one-shot data was consumed building the request: send its bytes
        kwargs = {
            **kwargs,
            "data": body,
            "headers": {**dict(kwargs.get("headers") or {}), hdrs.CONTENT_TYPE: headers[hdrs.CONTENT_TYPE]},
        }
    if not isinstance(passed, Record):
        with passing(passed.request.url.host):
            return await original(session, method, str_or_url, **kwargs)  # type: ignore[no-any-return]
    setting = kwargs.get("raise_for_status")
    with passing(
        passed.request.url.host
    ):  # the error status is recorded too: raise_for_status is applied after the tee
        resp: aiohttp.ClientResponse = await original(
            session, method, str_or_url, **{**kwargs, "raise_for_status": False}
        )
    auto = kwargs.get("auto_decompress")
    auto = getattr(session, "_auto_decompress", True) if auto is None else auto
    encoding = resp.headers.get(hdrs.CONTENT_ENCODING, "").strip().lower()
    _tee(resp, passed.recorder, decoded=bool(auto) and encoding in _DECODED)
    if passed.recorder.replays() and passed.recorder.pushes():  # it may never end: served as it arrives
        live = LiveSource(resp.content.iter_any().__aiter__(), close=resp.release)
        try:
            served = await _to_aiohttp(session, method, url, headers, passed.recorder.served(live))
        finally:
            if not live.taken:
                resp.release()
                await resp.wait_for_close()
        _waits_for(served, resp.wait_for_close)
        resp = served
    elif passed.recorder.replays():  # the whole live body into the recording, then its replay to the client
        try:
            await resp.read()
        except Exception:  # recorded: the replay raises it at the same byte
            pass
        finally:
            resp.release()
        resp = await _to_aiohttp(session, method, url, headers, passed.recorder.served())
    await _raise_for_status(session, resp, setting)
    return resp


# -- the patch --------------------------------------------------------------------------------


def _upgrade(kwargs: dict[str, Any]) -> bool:
    """A WebSocket handshake (``ws_connect``): not a response body ssemock serves or records."""
    headers = kwargs.get("headers") or {}
    return any(str(k).lower() == "upgrade" for k in getattr(headers, "keys", lambda: ())())


def _patched(original: Any) -> Any:
    @functools.wraps(original)  # keeps the signature: google-genai inspects _request's parameters
    async def _request(
        self: aiohttp.ClientSession, method: str, str_or_url: Any, **kwargs: Any
    ) -> aiohttp.ClientResponse:
        if not intercepting() or self.closed or _upgrade(kwargs):
            return await original(self, method, str_or_url, **kwargs)  # type: ignore[no-any-return]
        sent, url, headers, body = await _to_httpx(self, method, str_or_url, kwargs)
        try:
            response = await adispatch(sent)
        except PassThrough as passed:
            return await _send(original, self, method, str_or_url, kwargs, passed, body, headers, url)
        resp = await _to_aiohttp(self, method, url, headers, response)
        await _raise_for_status(self, resp, kwargs.get("raise_for_status"))
        return resp

    return _request


def patches() -> list[Patch]:
    return [Patch(aiohttp.ClientSession, "_request", _patched)]
