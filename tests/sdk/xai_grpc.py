"""Run by tests/sdk/test_xai_grpc.py in the xai side environment (xai-sdk pins packaging<26:
requirements/xai.in): xai-sdk's chat streaming, sync and async, against a loopback servicer built
from xai-sdk's own generated stubs (``chat_pb2_grpc.ChatServicer``), recorded through ``ssemock
proxy`` (h2c), then replayed by ``ssemock serve`` with the servicer stopped, under each gRPC wire
chunking named on the command line; and recorded in-process (``ssemock.use_cassette``: grpcio's
channels intercepted), replayed in-process with the servicer stopped and served over the wire.
Prints one JSON line: what the SDK saw each way, the authorization metadata the servicer
received, and the proxy's cassette.

Usage: python xai_grpc.py CASSETTE_DIR CHUNKING[,CHUNKING...]"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc
from xai_sdk import AsyncClient, Client
from xai_sdk.chat import user
from xai_sdk.proto import chat_pb2, chat_pb2_grpc, sample_pb2

import ssemock
from ssemock.commands.loopback import running
from ssemock.commands.proxy import app as proxy_app
from ssemock.commands.serve import app as serve_app

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


def both(target: str) -> dict[str, Any]:
    return {"sync": chat_sync(target), "async": asyncio.run(chat_async(target))}


def main(folder: Path, chunkings: list[str]) -> dict[str, Any]:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    chat_pb2_grpc.add_ChatServicer_to_server(Chat(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    target = f"127.0.0.1:{port}"
    try:
        live = both(target)
        with ssemock.use_cassette(folder / "inprocess.json", record_mode="all"):  # grpcio intercepted
            recorded = both(target)
        with running(proxy_app(f"http://127.0.0.1:{port}", cassette_dir=folder, cassette="xai")) as url:
            proxied = both(url.removeprefix("http://"))
    finally:
        server.stop(None)
    replays = {}
    for chunking in chunkings:
        with running(serve_app(folder / "xai.json", chunking=chunking)) as url:
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
        "seen": SEEN,
        "cassette": str(folder / "xai.json"),
    }


if __name__ == "__main__":
    print(json.dumps(main(Path(sys.argv[1]), sys.argv[2].split(","))))
