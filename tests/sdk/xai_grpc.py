"""Run by tests/sdk/test_xai_grpc.py in the xai side environment (xai-sdk pins packaging<26:
requirements/xai.in): xai-sdk's chat streaming, sync and async, against a loopback servicer built
from xai-sdk's own generated stubs (``chat_pb2_grpc.ChatServicer``), recorded and replayed every
way of tests/sdk/grpc_stand_in.py's matrix under each gRPC wire chunking named on the command
line. Prints one JSON line: what the SDK saw each way, the authorization metadata the servicer
received, and the proxy's cassette.

Usage: python xai_grpc.py CASSETTE_DIR CHUNKING[,CHUNKING...]"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
from grpc_stand_in import matrix
from xai_sdk import AsyncClient, Client
from xai_sdk.chat import user
from xai_sdk.proto import chat_pb2, chat_pb2_grpc, sample_pb2

PIECES = ["Hel", "lo, ", "wörld", "!"]
KEY = "xai-test-0123456789abcdefghijklmnopqrstuvwxyz"
SEEN: list[str] = []


class Chat(chat_pb2_grpc.ChatServicer):
    """Streams PIECES back as xAI's chunks (the last with finish_reason STOP)."""

    def GetCompletionChunk(self, request: Any, context: grpc.ServicerContext) -> Iterator[Any]:
        SEEN.append(dict(context.invocation_metadata()).get("authorization", ""))
        for i, piece in enumerate(PIECES):
            last = i + 1 == len(PIECES)
            yield chat_pb2.GetChatCompletionChunk(
                id="resp-1",
                model=request.model,
                outputs=[
                    chat_pb2.CompletionOutputChunk(
                        index=0,
                        delta=chat_pb2.Delta(content=piece, role=chat_pb2.ROLE_ASSISTANT),
                        finish_reason=sample_pb2.REASON_STOP if last else sample_pb2.REASON_INVALID,
                    )
                ],
            )


def chat_sync(target: str) -> dict[str, Any]:
    client = Client(api_key=KEY, api_host=target, use_insecure_channel=True, timeout=30)
    chat = client.chat.create(model="grok-test")
    chat.append(user("Say hello"))
    pieces, last = [], None
    for response, chunk in chat.stream():
        pieces.append(chunk.content)
        last = response  # the SDK's accumulated response
    client.close()
    assert last is not None
    return {"pieces": pieces, "content": last.content, "finish": str(last.finish_reason)}


async def chat_async(target: str) -> dict[str, Any]:
    client = AsyncClient(api_key=KEY, api_host=target, use_insecure_channel=True, timeout=30)
    chat = client.chat.create(model="grok-test")
    chat.append(user("Say hello"))
    pieces, last = [], None
    async for response, chunk in chat.stream():
        pieces.append(chunk.content)
        last = response
    await client.close()
    assert last is not None
    return {"pieces": pieces, "content": last.content, "finish": str(last.finish_reason)}


def _add(server: grpc.Server) -> None:
    chat_pb2_grpc.add_ChatServicer_to_server(Chat(), server)


if __name__ == "__main__":
    out = matrix(Path(sys.argv[1]), sys.argv[2].split(","), "xai", _add, chat_sync, chat_async)
    print(json.dumps({**out, "seen": SEEN}))
