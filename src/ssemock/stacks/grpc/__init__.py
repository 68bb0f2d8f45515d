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

from ...core.packages import fresh
from .. import Patch
from . import aio, channels, sync

__all__ = ["patches"]


def patches() -> list[Patch]:
    """Every patch of the gRPC stack: the channels', the sync and the aio multi-callables'."""
    return [*channels.patches(), *sync.patches(), *aio.patches()]


fresh(__name__)  # submodules read from sys.modules (pytester's in-process reruns drop them)
