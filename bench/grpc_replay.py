"""gRPC replay: what a client pays per message when ssemock replays a call, beside the usual way
tests fake gRPC, a hand-written fake servicer on an in-process server (issue 46 item 7).

    python bench/grpc_replay.py [MESSAGES]

Contestants, each serving the same calls to a sync grpcio client:

* ``fake servicer``: a hand-written servicer (grpcio's generic handlers) on a ``grpc.server`` in
  this process, on loopback: the client's channel, the C core, HTTP/2 and the server's threads;
* ``ssemock replay``: ``ssemock.use_cassette`` of the same calls recorded from that servicer (a
  replayed call connects no channel: tests/stacks/test_grpc.py checks it with the server stopped
  and a listener on its port; here the servicer stays up so the rounds can interleave).

Two shapes, each timed per message: a server stream of MESSAGES response messages, and MESSAGES/10
unary calls (a call is one message each way; a round of replay includes loading its cassette).
Median of 7 interleaved rounds after a warm-up, wall time (the fake servicer's work is on its own
threads), garbage collector off while timing.
Target: ssemock replay <= 1.5x the fake servicer, per message.
"""

from __future__ import annotations

import gc
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc

import ssemock

SERVICE = "bench.Tokens"


def _tokens(request: bytes, context: grpc.ServicerContext) -> Iterator[bytes]:
    for k in range(int(request)):
        yield b'{"delta":"token %d "}' % k


def _say(request: bytes, context: grpc.ServicerContext) -> bytes:
    return b'{"text":"' + request + b'"}'


def _server() -> tuple[grpc.Server, str]:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    handlers = {
        "Stream": grpc.unary_stream_rpc_method_handler(_tokens),
        "Say": grpc.unary_unary_rpc_method_handler(_say),
    }
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, handlers),))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    return server, f"127.0.0.1:{port}"


def _stream(target: str, messages: int) -> Callable[[], None]:
    """A server stream of ``messages`` response messages."""

    def run() -> None:
        with grpc.insecure_channel(target) as channel:
            got = sum(1 for _ in channel.unary_stream(f"/{SERVICE}/Stream")(str(messages).encode()))
            assert got == messages

    return run


def _unary(target: str, calls: int) -> Callable[[], None]:
    """``calls`` unary calls, each with its own request."""

    def run() -> None:
        with grpc.insecure_channel(target) as channel:
            say = channel.unary_unary(f"/{SERVICE}/Say")
            for k in range(calls):
                say(b"hi %d" % k)

    return run


def _timed(run: Callable[[], Any]) -> float:
    gc.collect()
    gc.disable()
    try:
        start = time.perf_counter()
        run()
        return time.perf_counter() - start
    finally:
        gc.enable()


def main(messages: int = 2000) -> dict[str, tuple[float, float]]:
    """Print and return each shape's microseconds per message: (fake servicer, ssemock replay)."""
    server, target = _server()
    shapes = {
        "server stream": (_stream(target, messages), messages),
        "unary calls": (_unary(target, messages // 10), messages // 10),
    }
    out: dict[str, tuple[float, float]] = {}
    print(f"gRPC replay per message, median of 7 interleaved rounds (load average {os.getloadavg()[0]:.1f}):")
    for shape, (calls, count) in shapes.items():
        cassette = Path(tempfile.mkdtemp()) / "grpc_bench.json"
        with ssemock.use_cassette(cassette, record_mode="all"):
            calls()

        def replay(calls: Callable[[], None] = calls, cassette: Path = cassette) -> None:
            with ssemock.use_cassette(cassette):
                calls()

        fake: list[float] = []
        replayed: list[float] = []
        for _ in range(8):  # the first round of each warms up
            fake.append(_timed(calls))
            replayed.append(_timed(replay))
        fake_us = statistics.median(fake[1:]) / count * 1e6
        replay_us = statistics.median(replayed[1:]) / count * 1e6
        out[shape] = fake_us, replay_us
        ratio = replay_us / fake_us
        print(
            f"  {shape} ({count}): fake servicer {fake_us:7.2f} us, ssemock replay {replay_us:7.2f} us "
            f"({ratio:.2f}x; target <= 1.5x: {'met' if ratio <= 1.5 else 'NOT met'})"
        )
    server.stop(None).wait()
    return out


def measure(messages: int = 2000) -> dict[str, float]:
    """bench/run.py's figures, microseconds per message: ``ssemock`` and ``hand-written servicer``
    for the unary calls (the shape where replay costs the most against the servicer: one message
    each way a call), the server stream's beside them."""
    shapes = main(messages)
    (fake_unary, replay_unary), (fake_stream, replay_stream) = shapes["unary calls"], shapes["server stream"]
    return {
        "ssemock": replay_unary,
        "hand-written servicer": fake_unary,
        "ssemock, server stream": replay_stream,
        "servicer, server stream": fake_stream,
    }


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 2000)
