"""grpcio's sync calls, replayed and recorded: the multi-callables' ``__call__``, ``with_call`` and
``future`` patched. A replayed call is a `Rendezvous` (what grpcio's own calls are: an iterator of
responses, a ``grpc.Call``, a ``grpc.Future`` and, when it fails, the ``grpc.RpcError`` raised);
a unary response's failure raises grpcio's own ``_InactiveRpcError``."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import grpc
import grpc._channel as _channel

from ...plan.grpc.serving import End, ServedCall
from .. import Patch, intercepting
from .channels import sync_target
from .dispatch import UNARY_REQUEST, Started, ask, decoder, recording, status_code
from .replayed import Replayed

__all__ = ["Rendezvous", "patches"]


class Rendezvous(Replayed, grpc.RpcError, grpc.Call, grpc.Future):  # type: ignore[misc]
    """A replayed call in grpcio's sync shape: iterate it for the responses (a streaming
    response), ``result()`` for the one response; ``code()``, ``details()``, metadata and the
    future's methods as grpcio's; raised as the ``grpc.RpcError`` of a failed streaming call."""

    def __init__(
        self,
        served: ServedCall,
        requests: Iterator[Any] | None,
        serialize: Callable[[Any], bytes] | None,
        deserialize: Callable[[bytes], Any] | None,
    ) -> None:
        Replayed.__init__(self, served, requests, serialize, deserialize)
        grpc.RpcError.__init__(self)
        self._lock = threading.RLock()

    # -- serving -----------------------------------------------------------------------

    def _pump(self, needs: int) -> None:
        """Send the client's request messages up to ``needs`` (read from its iterator)."""
        served = self._served
        while len(served.sent) < needs and not served.ended and self._requests is not None:
            try:
                message = next(self._requests)
            except StopIteration:
                served.end_stream()
                break
            served.send(self._bytes(message), decoder(message))

    def _step(self) -> bytes | None:
        """Serve the next step: a response message's bytes, or None once the call ended."""
        with self._lock:
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
                    self._pump(int(amount))
                else:
                    self._clock.sleep(amount)

    def _run(self) -> None:
        """Serve the whole call (a unary response): keeps the one response."""
        while True:
            data = self._step()
            if data is None:
                return
            self._response = self._message(data)

    def _ended(self) -> End:
        with self._lock:
            if self._end is None:
                self._run()
            assert self._end is not None
            return self._end

    def __iter__(self) -> Rendezvous:
        return self

    def __next__(self) -> Any:
        data = self._step()
        if data is None:
            if self._ended().code == "OK":
                raise StopIteration
            raise self
        return self._message(data)

    next = __next__

    def unary_result(self) -> Any:
        """The one response, or grpcio's own ``_InactiveRpcError`` when the call failed."""
        end = self._ended()
        if end.code != "OK":
            raise inactive_error(self._served, end) from None
        return self._response

    # -- grpc.Call ---------------------------------------------------------------------

    def initial_metadata(self) -> Any:
        return self._served.initial_metadata

    def trailing_metadata(self) -> Any:
        return self._final().trailers

    def code(self) -> grpc.StatusCode:
        return status_code(self._final().code)

    def details(self) -> str:
        return self._final().details

    def debug_error_string(self) -> str:
        return f"ssemock replay: {self.details()}"

    def is_active(self) -> bool:
        return self._end is None

    def cancel(self) -> bool:
        with self._lock:
            return self._cancel()

    def add_callback(self, callback: Callable[[], None]) -> bool:
        with self._lock:
            if self._end is not None:
                return False
            self._callbacks.append(callback)
            return True

    # -- grpc.Future -------------------------------------------------------------------

    def cancelled(self) -> bool:
        return self._end is not None and self._end.code == "CANCELLED"

    def running(self) -> bool:
        return self._end is None

    def result(self, timeout: float | None = None) -> Any:
        end = self._ended()
        if end.code != "OK":
            raise self
        return self._response

    def exception(self, timeout: float | None = None) -> Exception | None:
        return None if self._ended().code == "OK" else self

    def traceback(self, timeout: float | None = None) -> Any:
        return None

    def add_done_callback(self, fn: Callable[[Any], None]) -> None:
        with self._lock:
            if self._end is None:
                self._done_callbacks.append(fn)
                return
        fn(self)

    def __str__(self) -> str:
        return self._describe("gRPC call")

    __repr__ = __str__


def inactive_error(served: ServedCall, end: End) -> grpc.RpcError:
    """grpcio's own error of a call that ended with ``end`` (what its unary calls raise)."""
    state = _channel._RPCState((), served.initial_metadata, end.trailers, status_code(end.code), end.details)
    return _channel._InactiveRpcError(state)


# -- recording ---------------------------------------------------------------------------


def _finish_from(recorder: Any, call: Any) -> None:
    """Record the end of a real sync call (its metadata, code and details)."""
    code = call.code()
    recorder.finish(
        call.initial_metadata(), call.trailing_metadata(), code.name if code else "UNKNOWN", call.details()
    )


def _finish_if_done(recorder: Any, call: Any) -> None:
    """Record the end of a real call that has ended (grpcio has not run its callbacks yet)."""
    if call.done():
        _finish_from(recorder, call)


# -- the patches ---------------------------------------------------------------------------


def _begin(multicallable: Any, kind: str, request: Any, timeout: float | None, metadata: Any) -> Started:
    serializer = multicallable._request_serializer
    return ask(
        kind, sync_target(multicallable), multicallable._method, request, serializer, metadata, timeout
    )


def _replay(multicallable: Any, served: ServedCall, kind: str, request: Any) -> Rendezvous:
    requests = None if kind in UNARY_REQUEST else iter(request)
    return Rendezvous(
        served, requests, multicallable._request_serializer, multicallable._response_deserializer
    )


_THE_CALL = ("future", "stream")
"""The ways of calling that give the client the call itself (a future, a response stream)."""


def _patched(kind: str, how: str) -> Callable[[Any], Any]:
    """``__call__`` / ``with_call`` / ``future`` of a unary-response multi-callable (``how``:
    ``call``, ``with_call``, ``future``), or ``__call__`` of a streaming-response one (``stream``)."""

    def make(original: Any) -> Any:
        def call(
            self: Any, request: Any, timeout: float | None = None, metadata: Any = None, *rest: Any, **kw: Any
        ) -> Any:
            __tracebackhide__ = True
            if not intercepting():
                return original(self, request, timeout, metadata, *rest, **kw)
            started = _begin(self, kind, request, timeout, metadata)
            if started.served is not None:
                rendezvous = _replay(self, started.served, kind, request)
                if how in _THE_CALL:
                    return rendezvous
                response = rendezvous.unary_result()
                return (response, rendezvous) if how == "with_call" else response
            if started.recorder is None:
                return original(self, request, timeout, metadata, *rest, **kw)
            recorder, real = started.recorder, recording(self, started.recorder)
            if how in _THE_CALL:
                future = original(real, request, timeout, metadata, *rest, **kw)
                recorder.late_end = lambda: _finish_if_done(recorder, future)
                future.add_done_callback(lambda done: _finish_from(recorder, done))
                return future
            with_call = type(self).with_call.__wrapped_original__
            try:
                response, done = with_call(real, request, timeout, metadata, *rest, **kw)
            except grpc.RpcError as failed:
                _finish_from(recorder, failed)
                raise
            _finish_from(recorder, done)
            return (response, done) if how == "with_call" else response

        return call

    return make


def _keeping_original(make: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``make`` whose result remembers the original it wraps (a recording's ``__call__`` calls
    the original ``with_call``)."""

    def wrap(original: Any) -> Any:
        made = make(original)
        made.__wrapped_original__ = original
        return made

    return wrap


def patches() -> list[Patch]:
    out = []
    for kind, owner in (
        ("unary_unary", _channel._UnaryUnaryMultiCallable),
        ("stream_unary", _channel._StreamUnaryMultiCallable),
    ):
        for how, name in (("call", "__call__"), ("with_call", "with_call"), ("future", "future")):
            out.append(Patch(owner, name, _keeping_original(_patched(kind, how))))
    for kind, owner in (
        ("unary_stream", _channel._UnaryStreamMultiCallable),
        ("unary_stream", _channel._SingleThreadedUnaryStreamMultiCallable),
        ("stream_stream", _channel._StreamStreamMultiCallable),
    ):
        out.append(Patch(owner, "__call__", _patched(kind, "stream")))
    return out
