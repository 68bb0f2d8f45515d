"""a2a-sdk 1.3.0's gRPC binding recorded and replayed (issue 46 item 6): its client
(``supported_protocol_bindings=["GRPC"]``, a ``grpc.aio`` channel) streaming a message
(``SendStreamingMessage``) from its own gRPC server (``GrpcHandler`` over ``DefaultRequestHandler``,
a streaming agent) on loopback, recorded through ``ssemock proxy`` and replayed by ``ssemock
serve`` with the server stopped, under every gRPC wire chunking; and recorded in-process
(``use_cassette``: the ``grpc.aio`` channel intercepted), replayed in-process and over the wire. The binding needs grpcio only
(``a2a.client.transports.grpc`` and ``a2a.server.request_handlers.grpc_handler`` import grpc and
the protobuf packages a2a-sdk depends on; the ``grpc`` extra's grpcio-tools is never imported)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import grpc
import pytest
from a2a.client import ClientConfig, ClientFactory
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.request_handlers.grpc_handler import GrpcHandler
from a2a.server.tasks import InMemoryTaskStore
from a2a.types import (
    TaskState,
    a2a_pb2_grpc,
)
from a2a_agent import Weather, card, request

import ssemock
from ssemock.commands.loopback import running
from ssemock.commands.proxy import app as proxy_app
from ssemock.commands.serve import app as serve_app
from ssemock.store.cassette import Cassette
from ssemock.variants.grpc import chunking as grpc_chunking

METHOD = "/lf.a2a.v1.A2AService/SendStreamingMessage"


async def _ask(target: str) -> list[Any]:
    """What a2a-sdk's gRPC client yields for one streamed message to ``target`` (host:port)."""
    config = ClientConfig(
        grpc_channel_factory=grpc.aio.insecure_channel, supported_protocol_bindings=["GRPC"]
    )
    client = ClientFactory(config).create(card(("GRPC", target)))
    try:
        return [event async for event in client.send_message(request())]
    finally:
        await client.close()


async def _live_and_proxied(folder: Path) -> tuple[list[Any], list[Any]]:
    server = grpc.aio.server()
    port = server.add_insecure_port("127.0.0.1:0")
    handler = DefaultRequestHandler(Weather(), InMemoryTaskStore(), card(("GRPC", f"127.0.0.1:{port}")))
    a2a_pb2_grpc.add_A2AServiceServicer_to_server(GrpcHandler(handler), server)
    await server.start()
    try:
        live = await _ask(f"127.0.0.1:{port}")
        with running(proxy_app(f"http://127.0.0.1:{port}", cassette_dir=folder, cassette="a2a")) as url:
            proxied = await _ask(url.removeprefix("http://"))
        with ssemock.use_cassette(folder / "inprocess.json", record_mode="all"):  # grpc.aio intercepted
            await _ask(f"127.0.0.1:{port}")
    finally:
        await server.stop(None)
    return live, proxied


def _shape(events: list[Any]) -> list[Any]:
    """The events without the ids the server makes up per task (a live run and a recording differ)."""
    return [e.WhichOneof("payload") for e in events]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Any], list[Any]]:
    folder = tmp_path_factory.mktemp("a2a-grpc")
    live, proxied = asyncio.run(_live_and_proxied(folder))
    return folder / "a2a.json", live, proxied


@pytest.mark.parametrize("chunking", grpc_chunking.names())
def test_a2a_grpc_streaming_replays_what_was_recorded(
    recorded: tuple[Path, list[Any], list[Any]], chunking: str
) -> None:
    cassette, live, proxied = recorded
    assert (
        _shape(proxied)
        == _shape(live)
        == [
            "task",
            "status_update",
            "artifact_update",
            "artifact_update",
            "status_update",
        ]
    )
    with running(serve_app(cassette, chunking=chunking)) as url:
        replayed = asyncio.run(_ask(url.removeprefix("http://")))
    assert replayed == proxied  # the recorded task ids too: the server is stopped
    [call] = [x.grpc for x in Cassette.load(cassette).interactions]
    assert call is not None and call.method == METHOD and len(call.received()) == 5
    assert replayed[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED


def test_a2a_grpc_recorded_in_process_replays_in_process_and_over_the_wire(
    recorded: tuple[Path, list[Any], list[Any]],
) -> None:
    cassette, live, _ = recorded
    inprocess = cassette.with_name("inprocess.json")
    target = urlsplit(Cassette.load(inprocess).interactions[0].request.url).netloc  # the stopped server's
    with ssemock.use_cassette(inprocess, record_mode="none"):
        replayed = asyncio.run(_ask(target))
    with running(serve_app(inprocess, chunking="mid_header")) as url:
        served = asyncio.run(_ask(url.removeprefix("http://")))
    assert _shape(replayed) == _shape(live) and served == replayed
    assert replayed[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED
