"""The secret scan of a gRPC call (`ssemock.store.grpc.GrpcCall`): every message's bytes as a body
is scanned (a protobuf string sits in them as it is, so a key's shape is found where it is), each
direction's messages read together (a key streamed across them), the trailers as headers and the
status details as the ``grpc-message`` trailer they are on the wire. The walk's scanning methods
are handed in (`ssemock.scan.walk` holds them)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["scan_call"]


def scan_call(
    call: Any,
    url: str,
    body: Callable[..., None],
    joined_text: Callable[[str, list[str]], None],
    header: Callable[[str, str, str], None],
) -> None:
    """Scan ``call`` (the interaction's request went to ``url``) with the walk's methods."""
    for k, m in enumerate(call.messages):
        body(f"grpc.messages[{k}]", m.data, [], url, stream=False)
    for direction in ("send", "recv"):
        texts = [m.data.decode("utf-8", "replace") for m in call.messages if m.direction == direction]
        joined_text(f"grpc.messages ({direction})", texts)
    for name, value in [*call.trailers, ("grpc-message", call.status.details)]:
        if value:
            header("grpc.trailers", name, value)
