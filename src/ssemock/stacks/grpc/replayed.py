"""What a replayed gRPC call's sync and aio shapes share (`Replayed`): its state, its messages'
wire bytes both ways, how it stands and ends, and one step of serving it (`Replayed._serving`),
which each shape drives with its own way of reading the client's request messages and of
waiting (a thread's, or the event loop's)."""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any

from ...plan.grpc.serving import End, ServedCall
from ...variants import timing as _timing

__all__ = ["Replayed"]

OK = End("OK", "", ())


class Replayed:
    """The core of a replayed call (`ssemock.stacks.grpc.sync.Rendezvous`,
    `ssemock.stacks.grpc.aio.AioCall`): ``served`` the call, ``requests`` the client's request
    messages (None: a unary request, or an aio call written to), ``serialize`` and ``deserialize``
    the multi-callable's (None: messages are bytes)."""

    def __init__(
        self,
        served: ServedCall,
        requests: Any,
        serialize: Callable[[Any], bytes] | None,
        deserialize: Callable[[bytes], Any] | None,
    ) -> None:
        self._served, self._requests = served, requests
        self._serialize, self._deserialize = serialize, deserialize
        self._clock = _timing.clock
        self._t0 = self._clock.now()
        self._end: End | None = None
        self._response: Any = None
        self._callbacks: list[Callable[[], None]] = []
        self._done_callbacks: list[Callable[[Any], None]] = []

    def _bytes(self, message: Any) -> bytes:
        return message if self._serialize is None else self._serialize(message)

    def _message(self, data: bytes) -> Any:
        return data if self._deserialize is None else self._deserialize(data)

    def _serving(self) -> Generator[tuple[str, float], None, bytes | None]:
        """One step of the call, for a shape to drive: yields ``("send", n)`` to have the client's
        request messages sent up to the n-th first, ``("wait", seconds)`` to wait; returns a
        response message's bytes, or None once the call ended (`_finish` ran)."""
        served = self._served
        yield "send", served.next().needs
        step = served.next()  # the client's messages may have moved the call to another recording
        wait = served.wait(step, self._clock.now() - self._t0)
        if wait:
            yield "wait", wait
        served.advance()
        if step.data is not None:
            return step.data
        if self._requests is not None and not served.ended and step.end and step.end.code == "OK":
            yield "send", len(served.sent) + 1  # a request stream the server read to its end
        self._finish(step.end or OK)
        return None

    def _finish(self, end: End) -> None:
        self._end = end
        for callback in self._callbacks:
            callback()
        for done in self._done_callbacks:
            done(self)

    def _final(self) -> End:
        """How the call ends (the end to come, for a call still being served: grpcio's
        ``code()`` waits for it; a replay knows it)."""
        return self._end or self._served.final

    def _cancel(self) -> bool:
        """End the call as the client's cancel does; False when it had ended."""
        if self._end is not None:
            return False
        self._finish(End("CANCELLED", "Locally cancelled by application!", ()))
        return True

    def done(self) -> bool:
        return self._end is not None

    def time_remaining(self) -> float | None:
        return None

    def _describe(self, what: str) -> str:
        end = self._end
        return f"<ssemock replayed {what}: {'active' if end is None else f'{end.code}: {end.details}'}>"
