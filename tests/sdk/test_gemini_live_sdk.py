"""google-genai's Live API through ssemock (issue 34): ``client.aio.live.connect`` (which binds
``websockets.asyncio.client.connect`` as ``ws_connect`` at import, and forces ``wss`` whenever an
API key is set) recorded against a TLS loopback server with a test CA (trustme), the server
stopped, then replayed with the network lock on (no TLS at all: the hook sits above it)."""

from __future__ import annotations

import asyncio
import ssl
from pathlib import Path
from typing import Any

import trustme
from google import genai
from google.genai import types
from ws_servers import gemini_live, running

import ssemock


async def _session(port: int, context: ssl.SSLContext) -> list[Any]:
    client = genai.Client(
        api_key="test-gemini-key-ws34",
        http_options=types.HttpOptions(
            base_url=f"https://127.0.0.1:{port}", async_client_args={"ssl": context}
        ),
    )
    seen: list[Any] = []
    config = types.LiveConnectConfig(response_modalities=[types.Modality.TEXT])
    async with client.aio.live.connect(model="gemini-live-2.5-flash", config=config) as session:
        await session.send_client_content(
            turns=types.Content(role="user", parts=[types.Part(text="Weather in Paris?")]), turn_complete=True
        )
        async for message in session.receive():
            if message.tool_call:
                call = message.tool_call.function_calls[0]
                seen.append(("tool", call.name, call.args))
                await session.send_tool_response(
                    function_responses=[
                        types.FunctionResponse(id=call.id, name=call.name, response={"sky": "sun"})
                    ]
                )
            elif message.text:
                seen.append(("text", message.text))
            if message.server_content and message.server_content.turn_complete:
                seen.append(
                    ("usage", message.usage_metadata.total_token_count if message.usage_metadata else None)
                )
                break
    return seen


def test_gemini_live_records_over_tls_and_replays_offline(tmp_path: Path) -> None:
    ca = trustme.CA()
    served = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(served)
    trusted = ssl.create_default_context()
    ca.configure_trust(trusted)
    path = tmp_path / "live.json"
    with running(gemini_live, ssl=served) as server:
        port = server.port
        with ssemock.use_cassette(path, record_mode="once"):
            live = asyncio.run(_session(port, trusted))
    assert live[-1] == ("usage", 11) and ("tool", "get_weather", {"city": "Paris"}) in live
    text = path.read_text()
    assert "test-gemini-key-ws34" not in text and '"binary-text"' in text and "wss://127.0.0.1" in text
    with ssemock.use_cassette(path, record_mode="none", allowed_hosts=[]) as player:
        again = asyncio.run(_session(port, trusted))
    assert again == live and player.conversations[0].unsent() == []
