"""A gRPC call replayed (sans-IO: the stacks' sync and aio call objects both drive it).

`ServedCall` holds what the call serves: the server's initial metadata, then its steps, each a
response message or the end (status code, details, trailing metadata), with the number of request
messages the recorded server had read before it (``needs``: a stack sends the client's messages
up to there first) and when it is due (seconds after the call started: recorded times under
``timing=``, plus the stalls a fault adds; None: at once). A deadline (``timeout=``) that ends
before a step is due turns that step into ``DEADLINE_EXCEEDED``, due at once: nothing waits for
it. The client's request messages are checked as they come (`ServedCall.send`): a stream that
strays from the call chosen moves to another recorded call it matches (`Rematch`), or raises the
unmatched-request error naming the method and the first differing field."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ...store.grpc import header_metadata
from ...store.model import Interaction
from ...variants.grpc.faults import CallFault, Outcome
from ...variants.timing import Timing
from ..errors import UnmatchedRequestError
from .matching import Decode

__all__ = ["CALL", "Call", "End", "Rematch", "ServedCall", "Step"]

Metadata = tuple[tuple[str, str | bytes], ...]

CALL = "ssemock.grpc"
"""The request extension a gRPC stack puts its `Call` in; the answer's holds the `ServedCall`."""


@dataclass(frozen=True)
class Call:
    """What a gRPC stack tells the player of a call as it starts."""

    kind: str
    """The call shape (``unary_unary``, ``unary_stream``, ``stream_unary``, ``stream_stream``)."""
    request: bytes | None = None
    """The serialized request message of a unary request (None: a request stream, sent later)."""
    timeout: float | None = None
    """The call's deadline, in seconds from its start (``timeout=``)."""
    decode: Decode | None = None
    """The request message class's parser, when the stack knows it (for the mismatch's field)."""


@dataclass(frozen=True)
class End:
    """How the call ends, as the client sees it."""

    code: str
    """The status code's name (``"OK"``, ``"UNAVAILABLE"``...)."""
    details: str
    """The status details."""
    trailers: Metadata
    """The trailing metadata (``-bin`` values as bytes)."""


@dataclass(frozen=True)
class Step:
    """One thing the server does: a response message (``data``) or the end (``end``)."""

    data: bytes | None
    """The serialized response message (None: this step is the end)."""
    end: End | None
    """How the call ends (the last step)."""
    needs: int
    """How many request messages the recorded server had read before it."""
    due: float | None
    """Seconds after the call started when it is served (None: at once)."""


Rematch = Callable[[int, Sequence[bytes], bool], tuple[int, Interaction]]
"""The recorded call for the request messages sent so far, given the one served now (its index)
and whether the client ended its stream: ``(index, interaction)`` to serve from now on;
UnmatchedRequestError when none matches."""


class ServedCall:
    """One gRPC call served from its interaction, under the player's faults, timing and the
    call's deadline. Thread-safe: grpcio's request streams are read on their own thread."""

    def __init__(
        self,
        interaction: Interaction,
        index: int,
        *,
        faults: Sequence[CallFault] = (),
        timing: Timing,
        timeout: float | None = None,
        sent: Sequence[bytes] = (),
        rematch: Rematch | None = None,
    ) -> None:
        self.index = index
        """The interaction served (its index in the cassette)."""
        self.interaction = interaction
        self._faults, self._timing, self._timeout = tuple(faults), timing, timeout
        self._rematch = rematch
        self.sent: list[bytes] = list(sent)
        """The request messages the client sent so far."""
        self.decode: Decode | None = None
        """The request message class's parser, from a request stream's first message (`send`)."""
        self.position = 0
        """How many steps were served."""
        self.ended = False
        """Whether the client ended its request stream."""
        self._lock = threading.RLock()
        self.steps = self._steps(interaction)
        """What the call serves, in order (the last step is the end)."""

    @property
    def initial_metadata(self) -> Metadata:
        """The server's initial metadata, as recorded."""
        return header_metadata(self.interaction.response.headers)

    def _steps(self, interaction: Interaction) -> list[Step]:
        call = interaction.grpc
        assert call is not None
        needs, count = [], 0
        for m in call.messages:
            if m.direction == "send":
                count += 1
            else:
                needs.append(count)
        received = call.received()
        outcome = Outcome(
            tuple((m.t, m.data) for m in received),
            call.status.code,
            call.status.details,
            tuple(call.trailers),
            call.status.t if call.status.t is not None else (received[-1].t if received else 0.0),
        )
        for fault in self._faults:
            outcome = fault.apply(outcome)
        cut = len(outcome.messages) < len(received)
        end_needs = needs[len(outcome.messages)] if cut else count
        stalls = dict(outcome.stalls)
        steps: list[Step] = []
        extra = 0.0
        for k, (t, data) in enumerate(outcome.messages):
            extra += stalls.get(k, 0.0)
            steps.append(Step(data, None, needs[k], self._due(t, extra)))
        extra += sum(s for k, s in stalls.items() if k >= len(outcome.messages))
        end = End(outcome.code, outcome.details, header_metadata(outcome.trailers))
        steps.append(Step(None, end, end_needs, self._due(outcome.end_t, extra)))
        return self._deadline(steps)

    def _due(self, t: float, extra: float) -> float | None:
        at = self._timing.at(t)
        if at is None:
            return extra or None
        return at + extra

    def _deadline(self, steps: list[Step]) -> list[Step]:
        """The steps due after the call's deadline replaced by DEADLINE_EXCEEDED, at once."""
        if self._timeout is None:
            return steps
        for k, step in enumerate(steps):
            if step.due is not None and step.due > self._timeout:
                late = End("DEADLINE_EXCEEDED", "Deadline Exceeded", ())
                return [*steps[:k], Step(None, late, 0, None)]
        return steps

    @property
    def final(self) -> End:
        """How the call ends, as it stands (a request stream that moves to another recorded call
        may change it)."""
        end = self.steps[-1].end
        assert end is not None
        return end

    def next(self) -> Step:
        """The next step to serve (the end, again, once the call ended)."""
        with self._lock:
            return self.steps[min(self.position, len(self.steps) - 1)]

    def advance(self) -> None:
        """The step `next` gave was served."""
        with self._lock:
            self.position = min(self.position + 1, len(self.steps))

    def wait(self, step: Step, elapsed: float) -> float:
        """Seconds to wait before serving ``step``, ``elapsed`` seconds after the call started."""
        return 0.0 if step.due is None else max(0.0, step.due - elapsed)

    def send(self, data: bytes, decode: Decode | None = None) -> None:
        """The client sent request message ``data``: it must be the recorded call's next one, or
        another recorded call's (which is then served); UnmatchedRequestError otherwise, naming
        the field by ``decode`` (the message's class's parser, when the stack knows it)."""
        with self._lock:
            self.decode = self.decode or decode
            self.sent.append(bytes(data))
            self._check(ended=False)

    def end_stream(self) -> None:
        """The client ended its request stream: a recorded server that read more raises the
        unmatched-request error (another recorded call with this many messages is served instead)."""
        with self._lock:
            if self.ended:
                return
            self.ended = True
            if self.next().needs > len(self.sent):
                self._check(ended=True)

    def _check(self, *, ended: bool) -> None:
        recorded = [m.data for m in self.interaction.grpc.sent()] if self.interaction.grpc else []
        n = len(self.sent)
        fits = recorded[:n] == self.sent and (not ended or len(recorded) == n)
        if fits:
            return
        if self._rematch is None:
            raise UnmatchedRequestError("ssemock: the request stream differs from the recorded call's")
        served = [s.data for s in self.steps[: self.position]]
        index, other = self._rematch(self.index, self.sent, ended)
        steps = self._steps(other)
        if [s.data for s in steps[: self.position]] != served:
            raise UnmatchedRequestError(
                f"ssemock: the request stream of {other.grpc.method if other.grpc else '?'} matches recorded "
                f"call #{self.index} no longer, and #{index}, which it matches, served other messages before"
            )
        self.index, self.interaction, self.steps = index, other, steps
