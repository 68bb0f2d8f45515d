"""A generic gRPC servicer on loopback (grpcio's generic handlers, no protoc) with one method per
call shape, and the calls a grpcio client makes to it, for the over-the-wire gRPC tests
(``ssemock serve`` and ``ssemock proxy``): what the client saw, in a form two runs compare by."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent import futures
from contextlib import contextmanager
from typing import Any

import grpc

SERVICE = "demo.Chat"
STREAM = f"/{SERVICE}/Stream"  # unary-stream: 7 messages, initial metadata, -bin trailers
SAY = f"/{SERVICE}/Say"  # unary-unary
TALK = f"/{SERVICE}/Talk"  # stream-stream: one answer per message
FAIL = f"/{SERVICE}/Fail"  # unary-stream: 2 messages, then RESOURCE_EXHAUSTED
KEY = "Bearer sk-test-grpcwire0123456789abcdefghijkl"


def _stream(request: bytes, context: grpc.ServicerContext) -> Iterator[bytes]:
    context.send_initial_metadata([("x-initial", "yes")])
    for i in range(7):
        yield request + f" part {i} é".encode()
    context.set_trailing_metadata([("x-trace-bin", b"\x00\x01\xfe"), ("x-served-by", "b")])


def _say(request: bytes, context: grpc.ServicerContext) -> bytes:
    return b"echo " + request


def _talk(requests: Iterator[bytes], context: grpc.ServicerContext) -> Iterator[bytes]:
    for request in requests:
        yield b"re " + request


def _fail(request: bytes, context: grpc.ServicerContext) -> Iterator[bytes]:
    yield b"one"
    yield b"two"
    context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, "slow down: 100% used")


@contextmanager
def generic_server(credentials: grpc.ServerCredentials | None = None) -> Iterator[int]:
    """The servicer on 127.0.0.1 (TLS with ``credentials``); yields its port, stops it after."""
    handler = grpc.method_handlers_generic_handler(
        SERVICE,
        {
            "Stream": grpc.unary_stream_rpc_method_handler(_stream),
            "Say": grpc.unary_unary_rpc_method_handler(_say),
            "Talk": grpc.stream_stream_rpc_method_handler(_talk),
            "Fail": grpc.unary_stream_rpc_method_handler(_fail),
        },
    )
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    server.add_generic_rpc_handlers([handler])
    port = (
        server.add_insecure_port("127.0.0.1:0")
        if credentials is None
        else server.add_secure_port("127.0.0.1:0", credentials)
    )
    server.start()
    try:
        yield port
    finally:
        server.stop(None)


def _metadata(pairs: Any) -> list[tuple[str, Any]]:
    return sorted((m.key, m.value) for m in pairs or ())


def calls(target: str) -> dict[str, Any]:
    """Each method called once through a grpcio channel to ``target`` (``host:port``): what the
    client saw (messages, metadata, status), metadata sorted (a cassette keeps trailers by name)."""
    out: dict[str, Any] = {}
    with grpc.insecure_channel(target) as channel:
        it = channel.unary_stream(STREAM)(b"hi", metadata=[("authorization", KEY)], timeout=30)
        out["stream"] = [
            list(it),
            _metadata(it.initial_metadata()),
            _metadata(it.trailing_metadata()),
            it.code(),
        ]
        out["say"] = channel.unary_unary(SAY)(b"yo", timeout=30)
        out["talk"] = list(channel.stream_stream(TALK)(iter([b"a", b"b", b"c"]), timeout=30))
        failing = channel.unary_stream(FAIL)(b"go", timeout=30)
        got = []
        try:
            got.extend(failing)
        except grpc.RpcError:
            pass
        out["fail"] = [got, failing.code(), failing.details()]
    return out
