"""The channels' side of the gRPC stack: which channels were made with credentials (their calls'
URLs are https), a multi-callable's target, and the connectivity methods that, while a replay
holds the network lock, answer READY instead of letting grpcio's C core connect."""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

import grpc
import grpc._channel
import grpc.aio
import grpc.aio._channel

from .. import Patch, intercepting
from ..lock import blocking

__all__ = ["is_secure", "patches", "sync_target", "target_of"]

_secure: weakref.WeakSet[Any] = weakref.WeakSet()  # aio channels made with credentials
_secure_targets: set[str] = set()  # targets of sync channels made with credentials


def _noting_secure(original: Callable[..., Any], aio: bool) -> Callable[..., Any]:
    """A channel's ``__init__`` that notes whether it has credentials (its calls' URLs are https)."""

    def __init__(self: Any, target: str, options: Any, credentials: Any, *args: Any) -> None:
        original(self, target, options, credentials, *args)
        if credentials is not None:
            if aio:
                _secure.add(self)
            else:
                _secure_targets.add(target)

    return __init__


def _text(target: Any) -> str:
    return target.decode("utf-8", "replace") if isinstance(target, bytes) else str(target or "unknown")


def target_of(channel: Any) -> str:
    """An aio channel's target, as grpcio's core channel holds it (so a channel made before the
    player started has its own, too)."""
    return _text(getattr(getattr(channel, "_channel", None), "target", None))


def is_secure(channel: Any) -> bool:
    """Whether an aio channel was made with credentials."""
    return channel in _secure


def sync_target(multicallable: Any) -> tuple[str, bool]:
    """A sync multi-callable's channel target, and whether its channel has credentials."""
    target = _text(getattr(multicallable, "_target", None))
    return target, target in _secure_targets


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
    """The channels' patches (sync and aio): credentials noted, connectivity READY in a replay."""
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
    ]
