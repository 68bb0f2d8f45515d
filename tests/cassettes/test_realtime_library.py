"""The shipped WebSocket sessions (``realtime/``): written by ``ssemock.synth`` as they are, in
each protocol's shape (checked against the SDKs' own event models), folding to what they were
synthesized from, and replayed through the real websockets client under the wire chunkings."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
import websockets
from google.genai import types
from openai._models import validate_type
from openai.types.live.client_event import ClientEvent as LiveClientEvent
from openai.types.live.server_event import ServerEvent as LiveServerEvent
from openai.types.realtime import RealtimeServerEvent
from openai.types.responses import ResponseStreamEvent

import ssemock
from ssemock import cassettes, synth
from ssemock.accumulate import accumulate_session

NAMES = [n for n in cassettes.names() if n.startswith("realtime/")]


def test_the_shipped_sessions_are_what_synth_writes(tmp_path: Path) -> None:
    assert NAMES == sorted(synth.REALTIME_LIBRARY)
    for written in synth.write_realtime_library(tmp_path):
        name = written.relative_to(tmp_path).with_suffix("").as_posix()
        assert written.read_bytes() == cassettes.path(name).read_bytes(), name


@pytest.mark.parametrize("name", NAMES)
def test_each_session_is_in_its_protocol_s_shape_and_folds_to_what_was_synthesized(name: str) -> None:
    (x,) = cassettes.load(name).interactions
    assert x.websocket is not None and x.response.status == 101
    assert x.response.header(synth.SOURCE_HEADER) == synth.SYNTH_SOURCE
    received = [m.payload for m in x.websocket.received()]
    for data in received:
        if "openai_responses" in name:
            assert validate_type(type_=ResponseStreamEvent, value=json.loads(data))  # type: ignore[arg-type]
        elif "openai_live" in name:
            assert validate_type(type_=LiveServerEvent, value=json.loads(data))  # type: ignore[arg-type]
        elif "openai" in name:
            assert validate_type(type_=RealtimeServerEvent, value=json.loads(data))  # type: ignore[arg-type]
        else:
            assert types.LiveServerMessage.model_validate_json(data)
    *before, result = accumulate_session(received, url=x.request.url)
    assert result.complete and result.usage
    if (
        name == "realtime/openai_responses_websocket"
    ):  # two responses on one socket: a tool call, then its answer
        [first] = before
        assert first.complete and [(c.name, c.parsed_arguments) for c in first.tool_calls] == [
            ("get_weather", {"city": "Paris", "unit": "celsius"})
        ]
        assert result.text == "Sunny, 22 °C in Paris ☀." and not result.tool_calls
    else:
        assert before == []
    if "tool_call" in name or "delegation" in name:
        assert [(c.name, c.parsed_arguments) for c in result.tool_calls if c.type == "function"] == [
            ("get_weather", {"city": "Paris", "unit": "celsius"})
        ]
    if "openai_live" in name:  # the client's messages too: GPT-Live's own client events
        for m in x.websocket.sent():
            assert validate_type(type_=LiveClientEvent, value=json.loads(m.data))  # type: ignore[arg-type]
        assert result.text == result.transcript == "Sunny, 22 °C in Paris ☀ — Grüße!"  # type: ignore[attr-defined]
        assert len(result.audio) == 48 * len(result.text) and result.finish_reason == "close_requested"  # type: ignore[attr-defined]
        assert [c.type for c in result.tool_calls] == ["delegation", "function"]
    if name == "realtime/openai_realtime_audio":
        assert result.text == "Grüße aus Paris — 22 °C, sonnig ☀." and len(result.audio) > 0  # type: ignore[attr-defined]
    if name == "realtime/gemini_live_text":
        assert result.text == "東京は晴れ — sunny in Tokyo 🌏."


@pytest.mark.parametrize("chunking", ["as_recorded", "mid_utf8", "mid_line"])
def test_the_realtime_session_replays_through_websockets(chunking: str) -> None:
    (x,) = cassettes.load("realtime/openai_realtime_audio").interactions
    assert x.websocket is not None
    url = x.request.url.replace("wss://", "ws://")  # the same session, without TLS on the client
    x.request.url = url
    sent = [m.data for m in x.websocket.sent()]

    async def session() -> list[str]:
        got = []
        async with websockets.connect(url) as ws:
            got.append(await ws.recv())
            await ws.send(sent[0])
            got.append(await ws.recv())
            for text in sent[1:]:
                await ws.send(text)
            while json.loads(got[-1])["type"] != "response.done":
                got.append(await ws.recv())
        return [str(g) for g in got]

    cassette = ssemock.Cassette([x])
    with ssemock.replay(cassette, chunking=chunking, allowed_hosts=[]) as player:
        got = asyncio.run(session())
        said = "".join(json.loads(g).get("delta", "") for g in got if "transcript.delta" in g)
        player.assert_text(said)
    assert got == [m.data for m in x.websocket.received()]


@pytest.mark.parametrize("chunking", ["as_recorded", "mid_utf8"])
def test_the_responses_websocket_session_replays_through_the_openai_sdk(chunking: str) -> None:
    """The shipped Responses WebSocket mode session through openai's ``beta.responses.connect``:
    a tool call, its output sent with ``previous_response_id``, the answer; ``player.expected``
    has one reference result per response."""
    import openai

    cassette = cassettes.load("realtime/openai_responses_websocket")
    (x,) = cassette.interactions
    assert x.websocket is not None
    first, second = (json.loads(m.data) for m in x.websocket.sent())
    client = openai.OpenAI(
        api_key="sk-test-ws35shipped0123456789", websocket_base_url="wss://api.openai.com/v1"
    )
    seen: list[str] = []
    with ssemock.replay(cassette, chunking=chunking, allowed_hosts=[]) as player:
        with client.beta.responses.connect() as conn:
            conn.response.create(model="gpt-5", input=first["input"], store=False, tools=first["tools"])
            for event in conn:
                if event.type == "response.completed":
                    calls = [o for o in event.response.output if o.type == "function_call"]
                    break
            conn.response.create(
                model="gpt-5",
                input=[
                    {
                        "type": "function_call_output",
                        "call_id": calls[0].call_id,
                        "output": second["input"][0]["output"],
                    }
                ],
                previous_response_id=event.response.id,
                store=False,
            )
            for event in conn:
                if event.type == "response.output_text.delta":
                    seen.append(event.delta)
                if event.type == "response.completed":
                    break
        expected = player.expected
        assert len(expected.results) == 2
        assert [c.name for c in expected.results[0].tool_calls] == [calls[0].name] == ["get_weather"]
        player.assert_text("".join(seen))
        assert player.conversations[0].unsent() == []
    assert "".join(seen) == "Sunny, 22 °C in Paris ☀."
