"""The gRPC stack (grpcio, sync and aio): every call made on any channel is intercepted.

The patches sit on grpcio's multi-callables (what ``channel.unary_unary(...)`` and the generated
stubs hold), so channels made by ``grpc.insecure_channel``, ``grpc.secure_channel``, ``grpc.aio.*``
and ``grpc.intercept_channel`` over them are covered, whenever the channel or the stub was made.
A call starts by asking the players (`start`): the answer is a replay
(`ssemock.plan.grpc.serving.ServedCall`, served by `sync` and `aio` in grpcio's own types, with no
channel connecting: grpcio's C core opens its sockets outside Python, where the network lock
cannot see them, so a replayed call never reaches it), a recording (the real call, its serializers
teeing each message's wire bytes into a `ssemock.plan.grpc.record.GrpcRecorder`), or the real
call to an allowed host. A call no player answers raises the unmatched-request error before
anything is sent. While a replay holds the network lock, a channel asked to connect
(``grpc.channel_ready_future``, ``subscribe(try_to_connect=True)``, aio's ``channel_ready()``)
is READY at once, and its C core never connects.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import grpc
import grpc.aio
import httpx
from respx.models import PassThrough

from ...plan.grpc.matching import Decode
from ...plan.grpc.record import GrpcRecorder
from ...plan.grpc.serving import CALL, ServedCall
from ...store.grpc import metadata_headers
from .. import STACK_KEY, Patch, RecordCall, dispatch, intercepting
from ..lock import blocking

__all__ = ["Started", "decoder", "is_secure", "patches", "start", "status_code", "sync_target", "tee"]

_secure: weakref.WeakSet[Any] = weakref.WeakSet()  # aio channels made with credentials
_secure_targets: set[str] = set()  # targets of sync channels made with credentials


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


def _noting_secure(original: Callable[..., Any], aio: bool) -> Callable[..., Any]:
    """A channel's ``__init__`` that notes whether it has credentials (its calls' URLs are https)."""

    def __init__(self: Any, target: str, options: Any, credentials: Any, *args: Any) -> None:
        original(self, target, options, credentials, *args)
        if credentials is not None:
            if aio:
                _secure.add(self)
            else:
                _secure_targets.add(target)
        if aio:
            self._ssemock_target = target

    return __init__


def is_secure(channel: Any) -> bool:
    """Whether an aio channel was made with credentials."""
    return channel in _secure


def _ready_in_replay(original: Callable[..., Any], ready: Callable[..., Any]) -> Callable[..., Any]:
    """A channel's connectivity method that, while a replay holds the lock, answers READY
    (``ready``) instead of letting grpcio's C core connect: a replayed call needs no connection,
    and the C core's sockets are beyond the lock (``grpc.channel_ready_future(channel).result()``
    would wait on a stopped server, or reach a host no test may)."""

    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        if intercepting() and blocking():
            return ready(*args, **kwargs)
        return original(self, *args, **kwargs)

    return method


def _subscribed(callback: Callable[[Any], None], try_to_connect: bool | None = None) -> None:
    callback(grpc.ChannelConnectivity.READY)


async def _ready(*args: Any, **kwargs: Any) -> None:
    return None


async def _state_changed(last_observed_state: Any) -> None:
    return None


def patches() -> list[Patch]:
    from . import aio, sync

    aio_channel = grpc.aio._channel.Channel
    return [
        Patch(grpc._channel.Channel, "__init__", lambda original: _noting_secure(original, aio=False)),
        Patch(aio_channel, "__init__", lambda original: _noting_secure(original, aio=True)),
        Patch(grpc._channel.Channel, "subscribe", lambda original: _ready_in_replay(original, _subscribed)),
        Patch(aio_channel, "channel_ready", lambda original: _ready_in_replay(original, _ready)),
        Patch(
            aio_channel,
            "get_state",
            lambda original: _ready_in_replay(original, lambda *a, **k: grpc.ChannelConnectivity.READY),
        ),
        Patch(
            aio_channel, "wait_for_state_change", lambda original: _ready_in_replay(original, _state_changed)
        ),
        *sync.patches(),
        *aio.patches(),
    ]


def sync_target(multicallable: Any) -> tuple[str, bool]:
    """A sync multi-callable's channel target, and whether its channel has credentials."""
    target = getattr(multicallable, "_target", None) or "unknown"
    if isinstance(target, bytes):
        target = target.decode("utf-8", "replace")
    return str(target), target in _secure_targets
