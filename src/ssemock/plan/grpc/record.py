"""Recording a gRPC call: `GrpcRecorder` takes each message as the channel serializes or
deserializes it (the wire bytes, in order both ways, with their times), the server's initial
metadata, and the end (trailing metadata, status code and details), and builds the cassette's
`ssemock.store.grpc.GrpcCall` from them, redacted as it will be saved, then given to the
``before_record_response`` hook as an HTTP response is (`GrpcRecorder.kept`)."""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from ...redaction.rules import redact_response
from ...store.grpc import GrpcCall, GrpcMessage, GrpcStatus, metadata_headers
from ...store.model import Interaction, Request, Response

__all__ = ["GrpcRecorder"]

Metadata = Iterable[tuple[str, Any]] | None


class GrpcRecorder:
    """One live call being recorded (thread-safe: grpcio serializes a request stream on its own thread)."""

    def __init__(
        self,
        request: Request,
        method: str,
        kind: str,
        before_record_response: Callable[[Response], Response | None] | None = None,
    ) -> None:
        self.request = request
        """The call's request as stored (URL, the client's metadata redacted)."""
        self.method, self.kind = method, kind
        self.t0 = time.monotonic()
        """When the call started (monotonic seconds): recordings are saved in order of start."""
        self._lock = threading.Lock()
        self._messages: list[GrpcMessage] = []
        self._initial: list[tuple[str, str]] = []
        self._trailers: list[tuple[str, str]] = []
        self._status: GrpcStatus | None = None
        self._hook = before_record_response
        self.late_end: Callable[[], object] | None = None
        """Set by the stack: records the end from the real call when it has ended but the stack
        has not been told yet (grpcio runs its done-callbacks on its own thread, maybe after the save)."""

    def _now(self) -> float:
        return max(0.0, time.monotonic() - self.t0)

    def sent(self, data: bytes) -> None:
        """The client sent ``data`` (a serialized request message)."""
        with self._lock:
            self._messages.append(GrpcMessage("send", self._now(), bytes(data)))

    def received(self, data: bytes) -> None:
        """The client received ``data`` (a serialized response message)."""
        with self._lock:
            self._messages.append(GrpcMessage("recv", self._now(), bytes(data)))

    @property
    def finished(self) -> bool:
        """Whether the call's end was recorded."""
        return self._status is not None

    def finish(self, initial: Metadata, trailing: Metadata, code: str, details: str | None) -> None:
        """The call ended: the server's initial and trailing metadata, the status code's name and
        its details. Only the first end counts."""
        with self._lock:
            if self._status is not None:
                return
            self._initial = metadata_headers(tuple(initial or ()))
            self._trailers = metadata_headers(tuple(trailing or ()))
            self._status = GrpcStatus(code, details or "", self._now())

    def interaction(self) -> Interaction:
        """The recording so far, redacted as it will be saved (a call that has not ended yet is
        saved as CANCELLED: the test left it before its end)."""
        if self._status is None and self.late_end is not None:
            self.late_end()
        with self._lock:
            status = self._status or GrpcStatus(
                "CANCELLED", "ssemock: the call had not ended when it was saved"
            )
            response = redact_response(Response(200, list(self._initial), b"", [], [], True, None))
            trailers = redact_response(Response(200, list(self._trailers), b"", [], [], True, None)).headers
            call = GrpcCall(self.method, self.kind, list(self._messages), trailers, status)
        return Interaction(self.request, response, grpc=call)

    def kept(self) -> Interaction | None:
        """The recording as it is saved: `interaction` after the ``before_record_response`` hook,
        which gets the call's initial metadata as the response's headers (the messages are the
        call's, not a body) and returns it, edited, or None to leave the call out."""
        interaction = self.interaction()
        if self._hook is None:
            return interaction
        response = self._hook(interaction.response)
        return None if response is None else dataclasses.replace(interaction, response=response)
