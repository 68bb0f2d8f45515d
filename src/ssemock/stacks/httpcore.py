"""The httpx stack: ``httpcore`` connection pools, sync and async.

Every httpx transport sends through a ``ConnectionPool`` (proxies are pools too), so patching the
pools' ``handle_request`` / ``handle_async_request`` intercepts every httpx client once. A
replayed response is an ``httpcore.Response`` over the lazy replay stream; faults raise
``httpcore`` exceptions, which the httpx transport maps to its own (``httpx.RemoteProtocolError``,
``httpx.ReadTimeout``), as it does for a real socket. `httpcore2` reuses this module for
httpx2.
"""

from __future__ import annotations

import importlib
from collections.abc import AsyncIterator, Iterator
from types import ModuleType
from typing import Any

import httpx
from respx.models import PassThrough
from respx.patterns import parse_url

from ..plan.push_recording import LiveSource
from ..plan.record import Recorder
from . import STACK_KEY, Patch, Record, RecordSession, adispatch, dispatch, intercepting, passing
from .websocket import httpx_ws

__all__ = ["ERRORS", "patches", "pool_patches"]

ERRORS: ModuleType = importlib.import_module("httpcore")


def _to_httpx(request: Any, stack: str) -> httpx.Request:
    url = request.url
    extensions, scheme = {**request.extensions, STACK_KEY: stack}, url.scheme
    if httpx_ws.is_upgrade(request):  # an httpx-ws handshake: a WebSocket session's (issue 34)
        extensions, ws_scheme = httpx_ws.tag(extensions, url.scheme)
        scheme = ws_scheme.encode()
    return httpx.Request(
        request.method.decode("ascii"),
        parse_url((scheme, url.host, url.port, url.target)),
        headers=request.headers,
        stream=request.stream,
        extensions=extensions,
    )


def _to_core(core: ModuleType, response: httpx.Response) -> Any:
    return core.Response(
        status=response.status_code,
        headers=response.headers.raw,
        content=response.stream,
        extensions=response.extensions,
    )


def _teed(passed: PassThrough, real: Any, tee: type[_Tee]) -> Any:
    """The real response, its stream teed into the recorder when the request is being recorded."""
    if isinstance(passed, Record):
        passed.recorder.begin(
            real.status, [(k.decode("latin-1"), v.decode("latin-1")) for k, v in real.headers]
        )
        real.stream = tee(real.stream, passed.recorder)
    return real


def pool_patches(core_name: str, stack: str) -> list[Patch]:
    """The two pool patches of an httpcore-like library (``httpcore`` or ``httpcore2``)."""
    core = importlib.import_module(core_name)

    def sync(original: Any) -> Any:
        def handle_request(self: Any, request: Any) -> Any:
            __tracebackhide__ = True
            if not intercepting():
                return original(self, request)
            sent = _to_httpx(request, stack)
            sent.read()
            request.stream = sent.stream
            try:
                response = dispatch(sent)
            except PassThrough as passed:
                with passing(passed.request.url.host):
                    real = original(self, request)
                if isinstance(passed, RecordSession):
                    return httpx_ws.recorded(request, real, passed.recorder)
                real = _teed(passed, real, _SyncTee)
                if not (isinstance(passed, Record) and passed.recorder.replays()):
                    return real
                if passed.recorder.pushes():  # it may never end: served as it arrives
                    live = LiveSource(iter(real.stream), close=real.close)
                    try:
                        return _to_core(core, passed.recorder.served(live))
                    finally:
                        if not live.taken:
                            real.close()
                try:  # the whole live stream into the recording, then its replay to the client
                    for _ in real.stream:
                        pass
                except Exception:  # recorded: the replay raises it at the same byte
                    pass
                finally:
                    real.close()
                response = passed.recorder.served()
            if "ssemock.conversation" in response.extensions:  # a replayed httpx-ws session
                ext = response.extensions
                return httpx_ws.answer(core, request, ext["ssemock.conversation"], ext["ssemock.timing"])
            return _to_core(core, response)

        return handle_request

    def asynchronous(original: Any) -> Any:
        async def handle_async_request(self: Any, request: Any) -> Any:
            __tracebackhide__ = True
            if not intercepting():
                return await original(self, request)
            sent = _to_httpx(request, stack)
            await sent.aread()
            request.stream = sent.stream
            try:
                response = await adispatch(sent)
            except PassThrough as passed:
                with passing(passed.request.url.host):
                    real = await original(self, request)
                if isinstance(passed, RecordSession):
                    return httpx_ws.recorded(request, real, passed.recorder)
                real = _teed(passed, real, _AsyncTee)
                if not (isinstance(passed, Record) and passed.recorder.replays()):
                    return real
                if passed.recorder.pushes():  # it may never end: served as it arrives
                    live = LiveSource(real.stream.__aiter__(), aclose=real.aclose)
                    try:
                        return _to_core(core, passed.recorder.served(live))
                    finally:
                        if not live.taken:
                            await real.aclose()
                try:  # the whole live stream into the recording, then its replay to the client
                    async for _ in real.stream:
                        pass
                except Exception:  # recorded: the replay raises it at the same byte
                    pass
                finally:
                    await real.aclose()
                response = passed.recorder.served()
            if "ssemock.conversation" in response.extensions:  # a replayed httpx-ws session
                ext = response.extensions
                return httpx_ws.answer_async(
                    core, request, ext["ssemock.conversation"], ext["ssemock.timing"]
                )
            return _to_core(core, response)

        return handle_async_request

    return [
        Patch(core.ConnectionPool, "handle_request", sync),
        Patch(core.AsyncConnectionPool, "handle_async_request", asynchronous),
    ]


def patches() -> list[Patch]:
    return pool_patches("httpcore", "httpx")


class _Tee:
    """The teeing stream around a real response stream; it lets go of the recorder once the
    stream has ended, so an httpx Response kept by the client does not keep the recording.
    Closed by the client before the end, it drains the rest of the real stream into the
    recording first (`Recorder.closed_early`), in the close call, before closing it."""

    def __init__(self, stream: Any, recorder: Recorder) -> None:
        self._stream = stream
        self._rec: Recorder | None = recorder
        self._it: Any = None  # the real stream's iterator, once the client iterates

    def _end(self, exc: BaseException | None) -> None:
        if self._rec is not None:
            self._rec.finish(exc)
            self._rec = None

    def _closing(self) -> Recorder | None:
        """The recorder to drain the rest into, when the client closes before the end."""
        rec, self._rec = self._rec, None
        return rec if rec is not None and rec.closed_early() else None


class _SyncTee(_Tee):
    def __iter__(self) -> Iterator[bytes]:
        rec = self._rec
        assert rec is not None, "httpx iterates a response stream once"
        self._it = it = iter(self._stream)
        keep = rec.chunk
        try:
            for chunk in it:
                keep(chunk)
                yield chunk
        except GeneratorExit:  # the client dropped its iterator: its close says what ends the recording
            raise
        except BaseException as exc:
            self._end(exc)
            raise
        self._end(None)

    def close(self) -> None:
        rec = self._closing()
        if rec is None:
            self._close()
            return
        it = self._it if self._it is not None else iter(self._stream)

        def rest() -> None:
            for chunk in it:
                rec.chunk(chunk)
                if rec.ended:
                    return

        rec.drain(rest, then=self._close)

    def _close(self) -> None:
        if hasattr(self._stream, "close"):
            self._stream.close()


class _AsyncTee(_Tee):
    async def __aiter__(self) -> AsyncIterator[bytes]:
        rec = self._rec
        assert rec is not None, "httpx iterates a response stream once"
        self._it = it = self._stream.__aiter__()
        keep = rec.chunk
        try:
            async for chunk in it:
                keep(chunk)
                yield chunk
        except GeneratorExit:  # the client dropped its iterator: its close says what ends the recording
            raise
        except BaseException as exc:
            self._end(exc)
            raise
        self._end(None)

    async def aclose(self) -> None:
        rec = self._closing()
        try:
            if rec is not None:
                it = self._it if self._it is not None else self._stream.__aiter__()

                async def rest() -> None:
                    async for chunk in it:
                        rec.chunk(chunk)
                        if rec.ended:
                            return

                await rec.adrain(rest)
        finally:
            if hasattr(self._stream, "aclose"):
                await self._stream.aclose()
