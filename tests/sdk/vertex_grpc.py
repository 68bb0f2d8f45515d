"""Run by tests/sdk/test_vertex_grpc.py in the vertex side environment (google-cloud-aiplatform
pins google-genai below the dev environment's: requirements/vertex.in): the GAPIC
``PredictionServiceClient.stream_generate_content`` (sync, and the async client's), over an
insecure channel to a loopback servicer (grpcio's generic handlers with the GAPIC's own message
types, which have no generated servicer), recorded and replayed every way of
tests/sdk/grpc_stand_in.py's matrix under each gRPC wire chunking named on the command line.
Prints one JSON line: what the client saw each way, and the proxy's cassette.

Usage: python vertex_grpc.py CASSETTE_DIR CHUNKING[,CHUNKING...]"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
from google.auth.credentials import AnonymousCredentials
from google.cloud import aiplatform_v1
from google.cloud.aiplatform_v1.services.prediction_service.transports import (
    PredictionServiceGrpcAsyncIOTransport,
    PredictionServiceGrpcTransport,
)
from grpc_stand_in import matrix

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


def _add(server: grpc.Server) -> None:
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
    server.add_generic_rpc_handlers([handler])


if __name__ == "__main__":
    out = matrix(Path(sys.argv[1]), sys.argv[2].split(","), "vertex", _add, stream_sync, stream_async)
    print(json.dumps(out))
