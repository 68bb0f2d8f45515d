"""The openai SDK's WebSocket sessions through ssemock (issue 34): ``realtime.connect`` and
``responses.connect``, sync and async, recorded against a loopback server at
``websocket_base_url``, the server stopped, then replayed with the network lock on; what the SDK's
user sees is the same both ways."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import openai
import pytest
from ws_servers import realtime, responses, running

import ssemock

KEY = "sk-test-ws34openai0123456789"


def _realtime_sync(base: str) -> list[Any]:
    client = openai.OpenAI(api_key=KEY, websocket_base_url=base)
    with client.realtime.connect(model="gpt-realtime") as conn:
        seen: list[Any] = [conn.recv().type]
        conn.session.update(session={"type": "realtime", "instructions": "Be brief."})
        conn.response.create()
        for event in conn:
            seen.append((event.type, getattr(event, "delta", None)))
            if event.type == "response.done":
                seen.append(event.response.usage.total_tokens)
                return seen
    return seen


async def _realtime_async(base: str) -> list[Any]:
    client = openai.AsyncOpenAI(api_key=KEY, websocket_base_url=base)
    async with client.realtime.connect(model="gpt-realtime") as conn:
        seen: list[Any] = [(await conn.recv()).type]
        await conn.session.update(session={"type": "realtime", "instructions": "Be brief."})
        await conn.response.create()
        async for event in conn:
            seen.append((event.type, getattr(event, "delta", None)))
            if event.type == "response.done":
                seen.append(event.response.usage.total_tokens)
                return seen
    return seen


def _responses_sync(base: str) -> list[Any]:
    client = openai.OpenAI(api_key=KEY, websocket_base_url=base)
    seen: list[Any] = []
    with client.responses.connect() as conn:
        for prompt in ("Say hello.", "Again."):
            conn.response.create(model="gpt-5", input=prompt, store=False)
            for event in conn:
                seen.append((event.type, getattr(event, "delta", None)))
                if event.type == "response.completed":
                    seen.append(event.response.usage.total_tokens)
                    break
    return seen


async def _responses_async(base: str) -> list[Any]:
    client = openai.AsyncOpenAI(api_key=KEY, websocket_base_url=base)
    seen: list[Any] = []
    async with client.responses.connect() as conn:
        for prompt in ("Say hello.", "Again."):
            await conn.response.create(model="gpt-5", input=prompt, store=False)
            async for event in conn:
                seen.append((event.type, getattr(event, "delta", None)))
                if event.type == "response.completed":
                    seen.append(event.response.usage.total_tokens)
                    break
    return seen


CASES = {
    "realtime-sync": (realtime, _realtime_sync),
    "realtime-async": (realtime, lambda base: asyncio.run(_realtime_async(base))),
    "responses-sync": (responses, _responses_sync),
    "responses-async": (responses, lambda base: asyncio.run(_responses_async(base))),
}


@pytest.mark.parametrize("case", list(CASES))
def test_the_sdk_sees_the_same_session_recorded_and_replayed(tmp_path: Path, case: str) -> None:
    server_handler, run = CASES[case]
    path = tmp_path / f"{case}.json"
    with running(server_handler) as server:
        base = server.url("/v1")
        with ssemock.use_cassette(path, record_mode="once"):
            live = run(base)
    assert live and KEY not in path.read_text()
    with ssemock.use_cassette(path, record_mode="none", allowed_hosts=[]) as player:
        again = run(base)
    assert again == live
    assert player.conversations[0].unsent() == []
