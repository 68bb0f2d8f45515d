"""A gRPC call asks the players what to do (`start`, `ask`): replay it, record it, or send it for
real; and what the sync and aio edges share to serve or tee it (`decoder`, `status_code`, `tee`,
`recording`)."""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import grpc
import httpx
from respx.models import PassThrough

from ...plan.grpc.matching import Decode
from ...plan.grpc.record import GrpcRecorder
from ...plan.grpc.serving import CALL, Call, ServedCall
from ...store.grpc import metadata_headers
from .. import STACK_KEY, RecordCall, dispatch

__all__ = ["UNARY_REQUEST", "Started", "ask", "decoder", "recording", "start", "status_code", "tee"]

UNARY_REQUEST = ("unary_unary", "unary_stream")
"""The call shapes whose request is one message, given when the call starts."""


@dataclass(frozen=True)
class Started:
    """What the players said of a call: replay it (``served``), record it (``recorder``), or
    (neither) send it for real."""

    served: ServedCall | None = None
    recorder: GrpcRecorder | None = None


def _authority(target: str) -> str:
    """A channel target as a URL's authority: ``dns:///host:port``, ``dns:host``, ``ipv4:...`` ->
    ``host:port``; anything else (``unix:...``) percent-encoded whole."""
    for prefix in ("dns:///", "dns:", "ipv4:", "ipv6:"):
        if target.startswith(prefix):
            target = target[len(prefix) :]
            break
    if "/" in target or "@" in target or target.startswith("unix"):
        return quote(target, safe="")
    return target


_url = functools.lru_cache(maxsize=512)(httpx.URL)  # a stub calls a few URLs many times: parsed once


def start(
    target: str,
    secure: bool,
    method: str | bytes,
    call: Any,
    metadata: Iterable[tuple[str, str | bytes]] | None,
) -> Started:
    """Ask the players about a call to ``method`` on ``target`` (``call``: a
    `ssemock.player.grpc.Call`); raises the unmatched-request error when none answers it."""
    __tracebackhide__ = True
    path = method.decode("ascii") if isinstance(method, bytes) else method
    url = _url(f"{'https' if secure else 'http'}://{_authority(target)}{path}")
    headers = metadata_headers(tuple(metadata or ()))
    request = httpx.Request("POST", url, headers=headers, extensions={CALL: call, STACK_KEY: "grpc"})
    try:
        response = dispatch(request)
    except RecordCall as recording:
        return Started(recorder=recording.recorder)
    except PassThrough:
        return Started()
    served = response.extensions.get(CALL)
    if not isinstance(served, ServedCall):
        raise TypeError(
            f"ssemock: a route answered the gRPC call {path} with an HTTP response: a gRPC call is "
            "answered from a cassette, not by a respx route"
        )
    return Started(served=served)


def ask(
    kind: str,
    where: tuple[str, bool],
    method: str | bytes,
    request: Any,
    serializer: Callable[[Any], bytes] | None,
    metadata: Iterable[tuple[str, str | bytes]] | None,
    timeout: float | None,
) -> Started:
    """`start` a call of shape ``kind`` to ``method`` on ``where`` (the channel's target and
    whether it has credentials) as it goes out: a unary request serialized, a request stream's
    messages sent later."""
    __tracebackhide__ = True
    first = None
    if kind in UNARY_REQUEST:
        first = request if serializer is None else serializer(request)
    call = Call(kind, first, timeout, decoder(request) if kind in UNARY_REQUEST else None)
    return start(where[0], where[1], method, call, metadata)


def decoder(message: Any) -> Decode | None:
    """The parser of a request message's class, when it is a protobuf message (a generated
    class with its descriptor): the mismatch then names fields, not wire field numbers."""
    kind = type(message)
    parse = getattr(kind, "FromString", None)
    return parse if callable(parse) and getattr(kind, "DESCRIPTOR", None) is not None else None


def status_code(name: str) -> grpc.StatusCode:
    """``grpc.StatusCode`` of a status code's name."""
    return grpc.StatusCode[name]


def tee(
    serializer: Callable[[Any], bytes] | None,
    deserializer: Callable[[bytes], Any] | None,
    recorder: GrpcRecorder,
) -> tuple[Callable[[Any], bytes], Callable[[bytes], Any]]:
    """The call's serializers, each handing the wire bytes to ``recorder`` as they pass."""

    def serialize(message: Any) -> bytes:
        data = message if serializer is None else serializer(message)
        recorder.sent(data)
        return data

    def deserialize(data: bytes) -> Any:
        recorder.received(data)
        return data if deserializer is None else deserializer(data)

    return serialize, deserialize


def recording(multicallable: Any, recorder: GrpcRecorder) -> Any:
    """A copy of a real multi-callable (sync or aio) whose serializers tee into ``recorder``."""
    copied = copy.copy(multicallable)
    copied._request_serializer, copied._response_deserializer = tee(
        multicallable._request_serializer, multicallable._response_deserializer, recorder
    )
    return copied
