"""cohere.chat through the real cohere SDK (ClientV2 with base_url), on loopback: record a
synthesized v2 stream with the SDK, replay it under every chunking x transform, with the
reference accumulator equal to what the SDK built; HTTP errors raise cohere's own exception
types; the stream's own error is a message-end with finish_reason ERROR."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import cohere
import httpx
import pytest
from cohere import errors as cohere_errors

import ssemock
from ssemock import chunking, framing, synth, transforms
from ssemock.commands.loopback import running
from ssemock.protocols import cohere as cohere_protocol

WEATHER = {"name": "get_weather", "arguments": {"city": "東京", "unit": "celsius"}}
TEXT = "Cohere v2 streams content-delta events — 日本語も 🌊 and U+0085 \u0085 too."
TRANSFORMS = transforms.alternatives("all")


def _params(cassette: ssemock.Cassette) -> dict[str, Any]:
    return {k: v for k, v in cassette.interactions[0].request.json().items() if k != "stream"}


def _stream(base_url: str, cassette: ssemock.Cassette) -> Iterator[Any]:
    client = cohere.ClientV2(api_key="test-key-0000", base_url=base_url)
    yield from client.chat_stream(**_params(cassette))


def _fold(events: list[Any]) -> dict[str, Any]:
    """What an application builds from the SDK's typed events."""
    text, plan, calls, finish, usage, error = "", "", {}, None, None, None
    for event in events:
        if event.type == "content-delta":
            text += event.delta.message.content.text or ""
        elif event.type == "tool-plan-delta":
            plan += event.delta.message.tool_plan or ""
        elif event.type == "tool-call-start":
            call = event.delta.message.tool_calls
            calls[event.index] = {
                "id": call.id,
                "name": call.function.name,
                "arguments": call.function.arguments or "",
            }
        elif event.type == "tool-call-delta":
            calls[event.index]["arguments"] += event.delta.message.tool_calls.function.arguments or ""
        elif event.type == "message-end":
            finish = event.delta.finish_reason
            usage = event.delta.usage.dict(exclude_none=True) if event.delta.usage else None
            error = event.delta.error
    return {
        "text": text,
        "plan": plan,
        "calls": [calls[k] for k in sorted(calls)],
        "finish": finish,
        "usage": usage,
        "error": error,
    }


def _assert_same(got: dict[str, Any], player: ssemock.Player) -> None:
    want = player.expected.result
    assert want.protocol == "cohere.chat"
    player.assert_text(got["text"])
    player.assert_tool_calls(
        [{"name": c["name"], "arguments": json.loads(c["arguments"])} for c in got["calls"]]
    )
    assert [c["id"] for c in got["calls"]] == [c.id for c in want.tool_calls]
    assert got["plan"] == want.thinking and got["finish"] == want.finish_reason
    assert got["usage"] == want.usage


def _record(tmp: Path, name: str, made: ssemock.Cassette) -> ssemock.Cassette:
    holder: dict[str, ssemock.Interaction] = {"interaction": made.interactions[0]}
    path = tmp / f"{name}.json"
    with running(synth._serve(holder)) as base:
        with ssemock.use_cassette(path, record_mode="all"):
            got = _fold(list(_stream(base, made)))
    recorded = ssemock.Cassette.load(path)
    (x,) = recorded.interactions
    assert x.response.body == made.interactions[0].response.body
    assert "test-key-0000" not in path.read_text()
    assert got["text"] == ssemock.accumulate(framing.decode(x.response.body, "text/event-stream")).text
    return recorded


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, ssemock.Cassette]:
    tmp = tmp_path_factory.mktemp("cohere")
    return {
        "text": _record(tmp, "text", cohere_protocol.synthesize(TEXT, seed=5)),
        "calls": _record(
            tmp,
            "calls",
            cohere_protocol.synthesize(
                tool_calls=[WEATHER, {"name": "get_time", "arguments": {"timezone": "Asia/Tokyo"}}],
                tool_plan="I will look up both.",
                seed=6,
            ),
        ),
    }


def _base(cassette: ssemock.Cassette) -> str:
    url = cassette.interactions[0].request.url
    return url[: url.index("/v2/chat")]


@pytest.fixture(scope="module")
def clients(recorded: dict[str, ssemock.Cassette]) -> dict[str, cohere.ClientV2]:
    """One SDK client per recorded case for the matrix' ~240 replays (each replay's own client,
    an httpx client and its SSL context, was most of its CPU, issue 48 item 4); the replay
    intercepts the pool all the same (no server listens at their base URL any more)."""
    return {
        case: cohere.ClientV2(api_key="test-key-0000", base_url=_base(cassette))
        for case, cassette in recorded.items()
    }


@pytest.mark.parametrize("transform", TRANSFORMS, ids=lambda chain: "+".join(map(str, chain)) or "none")
@pytest.mark.parametrize("strategy", chunking.ALL, ids=str)
@pytest.mark.parametrize("case", ["text", "calls"])
def test_sdk_under_every_chunking_and_transform(
    recorded: dict[str, ssemock.Cassette],
    clients: dict[str, cohere.ClientV2],
    case: str,
    strategy: chunking.Chunking,
    transform: list[Any],
) -> None:
    cassette = recorded[case]
    with ssemock.replay(cassette, chunking=strategy, transform=transform) as player:
        got = _fold(list(clients[case].chat_stream(**_params(cassette))))
    _assert_same(got, player)
    assert player.plays[0].stream is not None and player.plays[0].stream.finished


@pytest.mark.parametrize("strategy", ["bytewise", "mid_utf8"])
def test_async_sdk(recorded: dict[str, ssemock.Cassette], strategy: str) -> None:
    cassette = recorded["calls"]

    async def run() -> list[Any]:
        client = cohere.AsyncClientV2(api_key="test-key-0000", base_url=_base(cassette))
        return [event async for event in client.chat_stream(**_params(cassette))]

    with ssemock.replay(cassette, chunking=strategy) as player:
        got = _fold(asyncio.run(run()))
    _assert_same(got, player)


def test_error_event_is_cohere_message_end_with_error(recorded: dict[str, ssemock.Cassette]) -> None:
    """Cohere ends a failed stream with message-end, finish_reason ERROR: the SDK raises nothing
    and hands the error to the application, which must look at finish_reason."""
    cassette = recorded["text"]
    with ssemock.replay(
        cassette, faults="error_event:kind=server_error,after_event=3", transform="crlf"
    ) as player:
        got = _fold(list(_stream(_base(cassette), cassette)))
    assert (
        got["finish"] == "ERROR"
        and got["error"] == "The server had an error while processing your request. Sorry about that!"
    )
    assert player.expected.result.error == {"message": got["error"]}
    assert player.plays[0].body.endswith(b"\r\n\r\n") and b'"finish_reason":"ERROR"' in player.plays[0].body
    player.assert_text(got["text"])


@pytest.mark.parametrize(
    "status, error",
    [
        (429, cohere_errors.TooManyRequestsError),
        (500, cohere_errors.InternalServerError),
        (503, cohere_errors.ServiceUnavailableError),
        (400, cohere_errors.BadRequestError),
    ],
)
def test_http_error_raises_cohere_errors(
    recorded: dict[str, ssemock.Cassette], status: int, error: type
) -> None:
    cassette = recorded["text"]
    with ssemock.replay(cassette, faults=f"http_error:status={status}"):
        with pytest.raises(error) as info:
            list(_stream(_base(cassette), cassette))
    assert info.value.status_code == status
    assert info.value.body["message"] == f"ssemock http_error {status}" and "id" in info.value.body


def test_disconnect_surfaces_httpx_error(recorded: dict[str, ssemock.Cassette]) -> None:
    cassette = recorded["calls"]
    with ssemock.replay(cassette, faults="disconnect:after_event=4"):
        with pytest.raises(httpx.RemoteProtocolError):
            list(_stream(_base(cassette), cassette))


def test_reference_rejects_impossible_streams() -> None:
    delta = ssemock.ServerSentEvent(
        "content-delta",
        json.dumps({"type": "content-delta", "index": 0, "delta": {"message": {"content": {"text": "x"}}}}),
    )
    with pytest.raises(
        ssemock.ProtocolError,
        match="cohere.chat: event 0: content-delta for content block 0, which never started",
    ):
        ssemock.accumulate([delta], "cohere.chat")
    call = ssemock.ServerSentEvent("tool-call-delta", json.dumps({"type": "tool-call-delta", "index": 2}))
    with pytest.raises(ssemock.ProtocolError, match="tool call 2, which never started"):
        ssemock.accumulate([call], "cohere.chat")
    assert ssemock.detect_protocol([delta]) == "cohere.chat"
    assert ssemock.detect_protocol(url="https://api.cohere.com/v2/chat") == "cohere.chat"
