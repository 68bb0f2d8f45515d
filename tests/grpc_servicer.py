"""A generic gRPC servicer on loopback (grpcio's generic handlers: no protoc): one method per call
shape, messages as plain bytes, with custom initial metadata, ``-bin`` trailers and a failing method."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent import futures
from contextlib import contextmanager
from typing import Any

import grpc

SERVICE = "test.Chat"
INITIAL = (("x-served-by", "loopback"),)
TRAILERS = (("x-trace-bin", b"\x00\x01\xfe"), ("x-count", "2"))


def _say(request: bytes, context: grpc.ServicerContext) -> bytes:
    context.send_initial_metadata(INITIAL)
    context.set_trailing_metadata(TRAILERS)
    return b"hello " + request


def _count(request: bytes, context: grpc.ServicerContext) -> Iterator[bytes]:
    context.send_initial_metadata(INITIAL)
    context.set_trailing_metadata(TRAILERS)
    for k in range(int(request)):
        yield f"n:{k}".encode()


def _sum(requests: Iterator[bytes], context: grpc.ServicerContext) -> bytes:
    context.set_trailing_metadata(TRAILERS)
    return b"+".join(requests)


def _talk(requests: Iterator[bytes], context: grpc.ServicerContext) -> Iterator[bytes]:
    context.send_initial_metadata(INITIAL)
    for request in requests:
        yield b"echo " + request
    context.set_trailing_metadata(TRAILERS)


def _fail(request: bytes, context: grpc.ServicerContext) -> bytes:
    context.set_trailing_metadata((("x-retry-bin", b"\x07"),))
    context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, "slow down")


def _echo_metadata(request: bytes, context: grpc.ServicerContext) -> bytes:
    got = dict(context.invocation_metadata())
    return repr(sorted((k, v) for k, v in got.items() if k.startswith("x-"))).encode()


HANDLERS = {
    "Say": grpc.unary_unary_rpc_method_handler(_say),
    "Count": grpc.unary_stream_rpc_method_handler(_count),
    "Sum": grpc.stream_unary_rpc_method_handler(_sum),
    "Talk": grpc.stream_stream_rpc_method_handler(_talk),
    "Fail": grpc.unary_unary_rpc_method_handler(_fail),
    "Metadata": grpc.unary_unary_rpc_method_handler(_echo_metadata),
}
KINDS = {"Say": "unary_unary", "Count": "unary_stream", "Sum": "stream_unary", "Talk": "stream_stream"}


@contextmanager
def serving() -> Iterator[str]:
    """The servicer on a free loopback port: its target (``127.0.0.1:PORT``), stopped on exit."""
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, HANDLERS),))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield f"127.0.0.1:{port}"
    finally:
        server.stop(None).wait()


def method(channel: Any, name: str) -> Any:
    """The multi-callable of method ``name`` on ``channel`` (bytes in, bytes out)."""
    return getattr(channel, KINDS.get(name, "unary_unary"))(f"/{SERVICE}/{name}")
