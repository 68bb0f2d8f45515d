"""grpcio's aio calls, replayed and recorded: the aio multi-callables' ``__call__`` patched. A
replayed call is an `AioCall` in ``grpc.aio``'s shape (awaited for a unary response, ``async for``
or ``read()`` for a stream, ``write()`` / ``done_writing()`` for a request stream given no
iterator); a failure raises ``grpc.aio.AioRpcError``. A recorded call is the real one, watched
(`Watched`) so its end is recorded before the client sees it.

Interceptors given to ``grpc.aio.*_channel(interceptors=...)`` run first, live and in replay: the
players are asked at the chain's last continuation (`_chain_end`), so a call is recorded and
matched as it goes out, with the request and metadata the interceptors made (as a sync
``intercept_channel``'s calls are), and the replayed or watched call is what the chain gets."""

from __future__ import annotations

import asyncio
import contextvars
import time
from collections.abc import AsyncIterator, Callable, Generator
from typing import Any

import grpc
import grpc.aio
import grpc.aio._channel as _aio_channel
import grpc.aio._interceptor as _aio_interceptor

from ...plan.grpc.serving import ServedCall
from .. import Patch, intercepting
from .channels import is_secure, target_of
from .dispatch import UNARY_REQUEST, ask, decoder, recording, status_code, tee
from .replayed import Replayed

__all__ = ["AioCall", "Watched", "patches"]


def _metadata(pairs: Any) -> grpc.aio.Metadata:
    return grpc.aio.Metadata.from_tuple(tuple(pairs))


class AioCall(Replayed):
    """A replayed call in ``grpc.aio``'s shape (every kind: the methods a kind lacks are unused)."""

    def __init__(
        self,
        served: ServedCall,
        requests: Any,
        serialize: Callable[[Any], bytes] | None,
        deserialize: Callable[[bytes], Any] | None,
    ) -> None:
        super().__init__(served, requests, serialize, deserialize)
        self._iterator: Any = None
        self._written = asyncio.Event()
        self._steps = asyncio.Lock()

    async def _next_request(self) -> Any:
        """The next message of the request iterator (sync or async); StopAsyncIteration at its end."""
        if self._iterator is None:
            requests = self._requests
            self._iterator = aiter(requests) if hasattr(requests, "__aiter__") else iter(requests)
        if hasattr(self._iterator, "__anext__"):
            return await anext(self._iterator)
        try:
            return next(self._iterator)
        except StopIteration:
            raise StopAsyncIteration from None

    async def _pump(self, needs: int) -> None:
        """Send the client's request messages up to ``needs``: from its iterator, or wait for
        its ``write()`` calls."""
        served = self._served
        while len(served.sent) < needs and not served.ended:
            if self._requests is None:
                self._written.clear()
                await self._written.wait()
                continue
            try:
                message = await self._next_request()
            except StopAsyncIteration:
                served.end_stream()
                break
            served.send(self._bytes(message), decoder(message))

    async def _step(self) -> bytes | None:
        async with self._steps:
            if self._end is not None:
                return None
            serving = self._serving()
            while True:
                try:
                    what, amount = next(serving)
                except StopIteration as stop:
                    data: bytes | None = stop.value
                    return data
                if what == "send":
                    await self._pump(int(amount))
                else:
                    await self._clock.asleep(amount)

    def _error(self) -> BaseException:
        end = self._end
        assert end is not None
        if end.code == "CANCELLED" and self._cancelled:
            return asyncio.CancelledError()
        error: BaseException = grpc.aio.AioRpcError(
            status_code(end.code),
            _metadata(self._served.initial_metadata),
            _metadata(end.trailers),
            end.details,
            f"ssemock replay: {end.details}",
        )
        return error

    _cancelled = False

    # -- responses ---------------------------------------------------------------------------

    def __await__(self) -> Generator[Any, None, Any]:
        return self._result().__await__()

    async def _result(self) -> Any:
        while (data := await self._step()) is not None:
            self._response = self._message(data)
        if self._end is not None and self._end.code != "OK":
            raise self._error()
        return self._response

    def __aiter__(self) -> AsyncIterator[Any]:
        return self._responses()

    async def _responses(self) -> AsyncIterator[Any]:
        while (data := await self._step()) is not None:
            yield self._message(data)
        if self._end is not None and self._end.code != "OK":
            raise self._error()

    async def read(self) -> Any:
        data = await self._step()
        if data is not None:
            return self._message(data)
        if self._end is not None and self._end.code != "OK":
            raise self._error()
        return grpc.aio.EOF

    # -- requests ----------------------------------------------------------------------------

    async def write(self, request: Any) -> None:
        if self._requests is not None:
            raise grpc.aio.UsageError("write() is not allowed when the call was given a request iterator")
        if self._served.ended:
            raise grpc.aio.UsageError("write() after done_writing()")
        try:
            self._served.send(self._bytes(request), decoder(request))
        finally:
            self._written.set()

    async def done_writing(self) -> None:
        if self._requests is not None:
            raise grpc.aio.UsageError(
                "done_writing() is not allowed when the call was given a request iterator"
            )
        try:
            self._served.end_stream()
        finally:
            self._written.set()

    # -- grpc.aio.Call -------------------------------------------------------------------------

    async def initial_metadata(self) -> grpc.aio.Metadata:
        return _metadata(self._served.initial_metadata)

    async def trailing_metadata(self) -> grpc.aio.Metadata:
        return _metadata(self._final().trailers)

    async def code(self) -> grpc.StatusCode:
        return status_code(self._final().code)

    async def details(self) -> str:
        return self._final().details

    async def wait_for_connection(self) -> None:
        return None

    def cancelled(self) -> bool:
        return self._cancelled

    def cancel(self) -> bool:
        if self._end is None:
            self._cancelled = True  # before the done callbacks run
        return self._cancel()

    def add_done_callback(self, callback: Callable[[Any], None]) -> None:
        if self._end is None:
            self._done_callbacks.append(callback)
        else:
            callback(self)

    def __repr__(self) -> str:
        return self._describe("gRPC aio call")


class Watched:
    """A real aio call being recorded: every use delegated to it, and its end (metadata, code,
    details) recorded before the client gets the last response or the error."""

    def __init__(self, real: Any, recorder: Any) -> None:
        self._real, self._recorder = real, recorder

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    # grpc.aio's call ABCs (an interceptor chain checks them, `_WATCHED`) want these defined
    def cancelled(self) -> bool:
        return bool(self._real.cancelled())

    def done(self) -> bool:
        return bool(self._real.done())

    def time_remaining(self) -> float | None:
        return self._real.time_remaining()  # type: ignore[no-any-return]

    def cancel(self) -> bool:
        return bool(self._real.cancel())

    def add_done_callback(self, callback: Callable[[Any], None]) -> None:
        self._real.add_done_callback(callback)

    async def initial_metadata(self) -> Any:
        return await self._real.initial_metadata()

    async def trailing_metadata(self) -> Any:
        return await self._real.trailing_metadata()

    async def code(self) -> grpc.StatusCode:
        return await self._real.code()

    async def details(self) -> str:
        return await self._real.details()  # type: ignore[no-any-return]

    async def wait_for_connection(self) -> None:
        await self._real.wait_for_connection()

    async def write(self, request: Any) -> None:
        await self._real.write(request)

    async def done_writing(self) -> None:
        await self._real.done_writing()

    async def _finish(self) -> None:
        real = self._real
        code = await real.code()
        self._recorder.finish(
            await real.initial_metadata(), await real.trailing_metadata(), code.name, await real.details()
        )

    def _failed(self, error: grpc.aio.AioRpcError) -> None:
        self._recorder.finish(
            error.initial_metadata(), error.trailing_metadata(), error.code().name, error.details()
        )

    def __await__(self) -> Generator[Any, None, Any]:
        return self._result().__await__()

    async def _result(self) -> Any:
        try:
            response = await self._real
        except grpc.aio.AioRpcError as error:
            self._failed(error)
            raise
        await self._finish()
        return response

    def __aiter__(self) -> AsyncIterator[Any]:
        return self._responses()

    async def _responses(self) -> AsyncIterator[Any]:
        try:
            async for response in self._real:
                yield response
        except grpc.aio.AioRpcError as error:
            self._failed(error)
            raise
        await self._finish()

    async def read(self) -> Any:
        try:
            response = await self._real.read()
        except grpc.aio.AioRpcError as error:
            self._failed(error)
            raise
        if response is grpc.aio.EOF:
            await self._finish()
        return response


def _call(kind: str) -> Callable[[Any], Any]:
    """The ``__call__`` of an aio multi-callable of ``kind``."""

    def make(original: Any) -> Any:
        def call(self: Any, request: Any = None, *args: Any, **kw: Any) -> Any:
            __tracebackhide__ = True
            if not intercepting():
                return original(self, request, *args, **kw)
            channel = self._python_channel
            where = (target_of(channel), is_secure(channel))
            if self._interceptors:  # they run first; their chain's end asks the players (`_chain_end`)
                token = _deferred.set(where)
                try:
                    return original(self, request, *args, **kw)
                finally:
                    _deferred.reset(token)
            timeout = kw.get("timeout", args[0] if args else None)
            metadata = kw.get("metadata", args[1] if len(args) > 1 else None)
            serializer = self._request_serializer
            started = ask(kind, where, self._method, request, serializer, metadata, timeout)
            if started.served is not None:
                return _replay(kind, started.served, request, serializer, self._response_deserializer)
            if started.recorder is None:
                return original(self, request, *args, **kw)
            real = recording(self, started.recorder)
            return Watched(original(real, request, *args, **kw), started.recorder)

        return call

    return make


class _UnaryUnary(AioCall, grpc.aio.UnaryUnaryCall):  # type: ignore[misc]
    """A replayed unary call, an instance of ``grpc.aio.UnaryUnaryCall`` (interceptors check)."""


class _UnaryStream(AioCall, grpc.aio.UnaryStreamCall):  # type: ignore[misc]
    """A replayed server stream, an instance of ``grpc.aio.UnaryStreamCall``."""


class _StreamUnary(AioCall, grpc.aio.StreamUnaryCall):  # type: ignore[misc]
    """A replayed client stream, an instance of ``grpc.aio.StreamUnaryCall``."""


class _StreamStream(AioCall, grpc.aio.StreamStreamCall):  # type: ignore[misc]
    """A replayed bidirectional call, an instance of ``grpc.aio.StreamStreamCall``."""


_CALLS: dict[str, type[AioCall]] = {
    "unary_unary": _UnaryUnary,
    "unary_stream": _UnaryStream,
    "stream_unary": _StreamUnary,
    "stream_stream": _StreamStream,
}


def _replay(kind: str, served: ServedCall, request: Any, serializer: Any, deserializer: Any) -> AioCall:
    """The replayed call of shape ``kind`` (a request stream's ``request``: its iterator, or None
    for ``write()``)."""
    return _CALLS[kind](served, None if kind in UNARY_REQUEST else request, serializer, deserializer)


_WATCHED: dict[str, type[Watched]] = {
    kind: type(
        f"_Watched{base.__name__}", (Watched, base), {"__doc__": f"A recorded call, a {base.__name__}."}
    )
    for kind, base in (
        ("unary_unary", grpc.aio.UnaryUnaryCall),
        ("unary_stream", grpc.aio.UnaryStreamCall),
        ("stream_unary", grpc.aio.StreamUnaryCall),
        ("stream_stream", grpc.aio.StreamStreamCall),
    )
}
_deferred: contextvars.ContextVar[tuple[str, bool] | None] = contextvars.ContextVar(
    "ssemock_grpc_deferred", default=None
)
"""The channel (target, has credentials) of a call a multi-callable with interceptors is making:
its interceptors run in a task that copies this context, and their last continuation asks the
players (`_chain_end`)."""


def _chain_end(kind: str) -> Callable[[Any], Any]:
    """What grpcio's interceptor chain calls last to make the call (``UnaryUnaryCall(...)`` in
    ``grpc.aio._interceptor``), with the request, metadata and method the interceptors made: the
    players are asked there, and the replayed call, or the real one watched (recording) or as it
    is (passed through), is what the chain gets."""

    def make(original: Any) -> Any:
        def call(*args: Any) -> Any:
            """``args``: request, deadline, metadata, credentials, wait_for_ready, channel,
            method, serializer, deserializer, then grpcio's rest."""
            __tracebackhide__ = True
            where = _deferred.get()
            if where is None or not intercepting():
                return original(*args)
            request, deadline, metadata, *_, method, serializer, deserializer = args[:9]
            timeout = None if deadline is None else max(0.0, deadline - time.time())  # grpcio's: time.time()
            started = ask(kind, where, method, request, serializer, metadata, timeout)
            if started.served is not None:
                return _replay(kind, started.served, request, serializer, deserializer)
            if started.recorder is None:
                return original(*args)
            teeing = tee(serializer, deserializer, started.recorder)
            return _WATCHED[kind](original(*args[:7], *teeing, *args[9:]), started.recorder)

        return call

    return make


def patches() -> list[Patch]:
    return [
        Patch(_aio_channel.UnaryUnaryMultiCallable, "__call__", _call("unary_unary")),
        Patch(_aio_channel.UnaryStreamMultiCallable, "__call__", _call("unary_stream")),
        Patch(_aio_channel.StreamUnaryMultiCallable, "__call__", _call("stream_unary")),
        Patch(_aio_channel.StreamStreamMultiCallable, "__call__", _call("stream_stream")),
        *(
            Patch(_aio_interceptor, name, _chain_end(kind))
            for kind, name in (
                ("unary_unary", "UnaryUnaryCall"),
                ("unary_stream", "UnaryStreamCall"),
                ("stream_unary", "StreamUnaryCall"),
                ("stream_stream", "StreamStreamCall"),
            )
        ),
    ]
