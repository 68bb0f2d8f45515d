"""Run by tests/sdk/test_vertex_grpc.py in the vertex side environment (google-cloud-aiplatform
pins google-genai below the dev environment's: requirements/vertex.in): the GAPIC
``PredictionServiceClient.stream_generate_content`` (sync, and the async client's), over an
insecure channel to a loopback servicer (grpcio's generic handlers with the GAPIC's own message
types, which have no generated servicer), recorded through ``ssemock proxy`` (h2c), then replayed
by ``ssemock serve`` with the servicer stopped, under each gRPC wire chunking named on the
command line; and recorded in-process (``ssemock.use_cassette``: grpcio's channels intercepted),
replayed in-process with the servicer stopped and served over the wire. Prints one JSON line:
what the client saw each way, and the proxy's cassette.

Usage: python vertex_grpc.py CASSETTE_DIR CHUNKING[,CHUNKING...]"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc
from google.auth.credentials import AnonymousCredentials
from google.cloud import aiplatform_v1
from google.cloud.aiplatform_v1.services.prediction_service.transports import (
    PredictionServiceGrpcAsyncIOTransport,
    PredictionServiceGrpcTransport,
)

import ssemock
from ssemock.commands.loopback import running
from ssemock.commands.proxy import app as proxy_app
from ssemock.commands.serve import app as serve_app

SERVICE = "google.cloud.aiplatform.v1.PredictionService"
MODEL = "projects/p/locations/us-central1/publishers/google/models/gemini-test"
PIECES = ["Guten ", "Tag, ", "Wörld", "!"]


def _stream(request: Any, context: grpc.ServicerContext) -> Iterator[Any]:
    assert request.model == MODEL
    for i, piece in enumerate(PIECES):
        last = i + 1 == len(PIECES)
        yield aiplatform_v1.GenerateContentResponse(
            candidates=[
                aiplatform_v1.Candidate(
                    content=aiplatform_v1.Content(role="model", parts=[aiplatform_v1.Part(text=piece)]),
                    finish_reason=aiplatform_v1.Candidate.FinishReason.STOP if last else None,
                )
            ],
            model_version="gemini-test-001",
        )


def _request() -> Any:
    content = aiplatform_v1.Content(role="user", parts=[aiplatform_v1.Part(text="Say hello")])
    return aiplatform_v1.GenerateContentRequest(model=MODEL, contents=[content])


def _seen(responses: list[Any]) -> dict[str, Any]:
    candidates = [r.candidates[0] for r in responses]
    return {
        "pieces": [c.content.parts[0].text for c in candidates],
        "finish": [c.finish_reason.name for c in candidates],
        "model_version": responses[-1].model_version,
    }


def stream_sync(target: str) -> dict[str, Any]:
    channel = grpc.insecure_channel(target)
    transport = PredictionServiceGrpcTransport(channel=channel, credentials=AnonymousCredentials())
    client = aiplatform_v1.PredictionServiceClient(transport=transport)
    try:
        return _seen(list(client.stream_generate_content(request=_request(), timeout=30)))
    finally:
        channel.close()


async def stream_async(target: str) -> dict[str, Any]:
    channel = grpc.aio.insecure_channel(target)
    transport = PredictionServiceGrpcAsyncIOTransport(channel=channel, credentials=AnonymousCredentials())
    client = aiplatform_v1.PredictionServiceAsyncClient(transport=transport)
    try:
        stream = await client.stream_generate_content(request=_request(), timeout=30)
        return _seen([response async for response in stream])
    finally:
        await channel.close()


def both(target: str) -> dict[str, Any]:
    return {"sync": stream_sync(target), "async": asyncio.run(stream_async(target))}


def main(folder: Path, chunkings: list[str]) -> dict[str, Any]:
    handler = grpc.method_handlers_generic_handler(
        SERVICE,
        {
            "StreamGenerateContent": grpc.unary_stream_rpc_method_handler(
                _stream,
                request_deserializer=aiplatform_v1.GenerateContentRequest.deserialize,
                response_serializer=aiplatform_v1.GenerateContentResponse.serialize,
            )
        },
    )
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    server.add_generic_rpc_handlers([handler])
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    target = f"127.0.0.1:{port}"
    try:
        live = both(target)
        with ssemock.use_cassette(folder / "inprocess.json", record_mode="all"):  # grpcio intercepted
            recorded = both(target)
        with running(proxy_app(f"http://127.0.0.1:{port}", cassette_dir=folder, cassette="vertex")) as url:
            proxied = both(url.removeprefix("http://"))
    finally:
        server.stop(None)
    replays = {}
    for chunking in chunkings:
        with running(serve_app(folder / "vertex.json", chunking=chunking)) as url:
            replays[chunking] = both(url.removeprefix("http://"))
    with ssemock.use_cassette(folder / "inprocess.json", record_mode="none"):  # the servicer is stopped
        inprocess = both(target)
    with running(serve_app(folder / "inprocess.json", chunking="mid_header")) as url:
        served_inprocess = both(url.removeprefix("http://"))  # an in-process recording, over the wire
    return {
        "live": live,
        "recorded": recorded,
        "inprocess": inprocess,
        "served_inprocess": served_inprocess,
        "proxied": proxied,
        "replays": replays,
        "cassette": str(folder / "vertex.json"),
    }


if __name__ == "__main__":
    print(json.dumps(main(Path(sys.argv[1]), sys.argv[2].split(","))))
