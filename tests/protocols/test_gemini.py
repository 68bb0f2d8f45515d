"""gemini.generate_content through the real google-genai SDK, on loopback: record a synthesized
stream with the SDK, replay it under every chunking and the transforms the SDK supports, with the
reference accumulator equal to what the SDK built; faults raise google-genai's own errors; the
SDK's ``data: `` (with a space) line parser fails under ``no_space`` and ``keepalive``."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from google import genai
from google.genai import errors as genai_errors

import ssemock
from ssemock import cassettes, chunking, framing, synth
from ssemock.commands.loopback import running
from ssemock.protocols import gemini

WEATHER = {"name": "get_weather", "arguments": {"city": "東京", "unit": "celsius"}}
TEXT = "Gemini streams CRLF events — 日本語 🌏 and U+2028 \u2028 inside text."
SUPPORTED = [None, "crlf", "cr"]  # the transforms google-genai's line parser handles
BROKEN = ["no_space", "keepalive"]  # valid SSE google-genai rejects (its bug, see the module docs)


def _client(base_url: str, *, async_client: httpx.AsyncClient | None = None) -> genai.Client:
    options: dict[str, Any] = {"base_url": base_url + "/", "api_version": "v1beta"}
    if async_client is not None:  # httpx, not aiohttp: the stack ssemock intercepts
        options["httpx_async_client"] = async_client
    return genai.Client(api_key="test-key-0000", http_options=options)


def _stream(base_url: str, cassette: ssemock.Cassette) -> Iterator[Any]:
    """The SDK's chunks, the client kept alive while they are read (it closes its HTTP client
    when it is collected)."""
    client = _client(base_url)
    yield from client.models.generate_content_stream(**_params(cassette))


def _params(cassette: ssemock.Cassette) -> dict[str, Any]:
    x = cassette.interactions[0]
    body = x.request.json()
    model = x.request.url.split("/models/")[1].split(":")[0]
    config = {"tools": body["tools"]} if body.get("tools") else None
    return {"model": model, "contents": body["contents"], "config": config}


def _fold(chunks: list[Any]) -> dict[str, Any]:
    """What an application builds from the SDK's typed chunks."""
    text, thinking, calls, usage, finish = "", "", [], None, None
    for chunk in chunks:
        for candidate in chunk.candidates or []:
            for part in (candidate.content.parts if candidate.content else None) or []:
                if part.text is not None:
                    if part.thought:
                        thinking += part.text
                    else:
                        text += part.text
                if part.function_call is not None:
                    calls.append({"name": part.function_call.name, "arguments": part.function_call.args})
            if candidate.finish_reason is not None:
                finish = candidate.finish_reason.value
        if chunk.usage_metadata is not None:
            usage = chunk.usage_metadata.model_dump(mode="json", by_alias=True, exclude_none=True)
    return {"text": text, "thinking": thinking, "calls": calls, "usage": usage, "finish": finish}


def _assert_same(got: dict[str, Any], player: ssemock.Player) -> None:
    want = player.expected.result
    assert want.protocol == "gemini.generate_content"
    player.assert_text(got["text"])
    player.assert_tool_calls(got["calls"])
    assert got["thinking"] == want.thinking
    assert got["finish"] == want.finish_reason
    assert got["usage"] == want.usage


# -- record through the SDK on loopback ---------------------------------------------------------


def _record(tmp: Path, name: str, made: ssemock.Cassette) -> ssemock.Cassette:
    holder: dict[str, ssemock.Interaction] = {"interaction": made.interactions[0]}
    path = tmp / f"{name}.json"
    with running(synth._serve(holder)) as base:
        with ssemock.use_cassette(path, record_mode="all"):
            chunks = list(_stream(base, made))
    recorded = ssemock.Cassette.load(path)
    (x,) = recorded.interactions
    assert x.response.body == made.interactions[0].response.body  # byte-exact
    assert "test-key-0000" not in path.read_text()  # the key never reaches the cassette
    assert (
        _fold(chunks)["text"] == ssemock.accumulate(framing.decode(x.response.body, "text/event-stream")).text
    )
    return recorded


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, ssemock.Cassette]:
    tmp = tmp_path_factory.mktemp("gemini")
    return {
        "text": _record(tmp, "text", gemini.synthesize(TEXT, thinking="Plan: greet.", seed=3)),
        "calls": _record(
            tmp,
            "calls",
            gemini.synthesize(
                "Checking.",
                tool_calls=[WEATHER, {"name": "get_time", "arguments": {"timezone": "Asia/Tokyo"}}],
                seed=4,
            ),
        ),
        "safety": _record(tmp, "safety", gemini.synthesize("The knight", finish_reason="SAFETY", seed=5)),
    }


def _base(cassette: ssemock.Cassette) -> str:
    url = cassette.interactions[0].request.url
    return url[: url.index("/v1beta/")]


@pytest.mark.parametrize("transform", SUPPORTED, ids=str)
@pytest.mark.parametrize("strategy", chunking.ALL, ids=str)
@pytest.mark.parametrize("case", ["text", "calls", "safety"])
def test_sync_sdk_under_every_chunking(
    recorded: dict[str, ssemock.Cassette], case: str, strategy: chunking.Chunking, transform: str | None
) -> None:
    cassette = recorded[case]
    with ssemock.replay(cassette, chunking=strategy, transform=transform) as player:
        got = _fold(list(_stream(_base(cassette), cassette)))
    _assert_same(got, player)
    assert player.plays[0].stream is not None and player.plays[0].stream.finished
    if transform == "crlf" or transform is None:
        assert b"\r\n\r\n" in player.plays[0].body  # Gemini's own CRLF survives (crlf: doubled-safe)


@pytest.mark.parametrize("strategy", ["bytewise", "mid_utf8", "random:11"])
def test_async_sdk(recorded: dict[str, ssemock.Cassette], strategy: str) -> None:
    cassette = recorded["calls"]

    async def run() -> list[Any]:
        async with httpx.AsyncClient() as http:
            client = _client(_base(cassette), async_client=http)
            stream = await client.aio.models.generate_content_stream(**_params(cassette))
            return [chunk async for chunk in stream]

    with ssemock.replay(cassette, chunking=strategy) as player:
        got = _fold(asyncio.run(run()))
    _assert_same(got, player)
    assert [c.name for c in player.expected.tool_calls] == ["get_weather", "get_time"]


@pytest.mark.parametrize("transform", BROKEN)
def test_sdk_rejects_valid_sse_without_the_space_or_with_comments(
    recorded: dict[str, ssemock.Cassette], transform: str
) -> None:
    """google-genai's bug, not ssemock's: it reads a line as data only if it starts with
    ``data: `` and feeds ``data:{...}`` or a ``: ping`` comment to json.loads. The reference
    decoder still gets every event, so the stream is valid."""
    cassette = recorded["text"]
    with ssemock.replay(cassette, transform=transform) as player:
        with pytest.raises(genai_errors.UnknownApiResponseError):
            list(_stream(_base(cassette), cassette))
    assert player.expected.result.text == TEXT and player.expected.result.complete


# -- faults in Gemini's own shapes --------------------------------------------------------------


def test_error_event_is_gemini_error_object_with_crlf(recorded: dict[str, ssemock.Cassette]) -> None:
    cassette = recorded["text"]
    text = ""
    with ssemock.replay(cassette, faults="error_event:kind=overloaded_error,after_event=2") as player:
        with pytest.raises(genai_errors.ServerError) as info:
            for chunk in _stream(_base(cassette), cassette):
                text += chunk.text or ""
    assert info.value.code == 503 and info.value.status == "UNAVAILABLE"
    body = player.plays[0].body
    assert body.endswith(b'"status":"UNAVAILABLE"}}\r\n\r\n') and b"\n\n" not in body.replace(b"\r\n", b"")
    player.assert_text(text)
    assert player.expected.result.error == {"code": 503, "message": "Overloaded", "status": "UNAVAILABLE"}


@pytest.mark.parametrize("status, error", [(429, genai_errors.ClientError), (503, genai_errors.ServerError)])
def test_http_error_is_google_error_body(
    recorded: dict[str, ssemock.Cassette], status: int, error: type
) -> None:
    cassette = recorded["text"]
    with ssemock.replay(cassette, faults=f"http_error:status={status}"):
        with pytest.raises(error) as info:
            list(_stream(_base(cassette), cassette))
    assert info.value.code == status
    assert info.value.status == {429: "RESOURCE_EXHAUSTED", 503: "UNAVAILABLE"}[status]


def test_disconnect_surfaces_the_http_stack_error_after_the_events_before_it(
    recorded: dict[str, ssemock.Cassette],
) -> None:
    cassette = recorded["text"]
    text = ""
    with ssemock.replay(cassette, faults="disconnect:after_event=2") as player:
        # google-genai streams through httpx2 when it is installed, else httpx: that stack's error
        with pytest.raises((httpx.RemoteProtocolError, httpx2.RemoteProtocolError)):
            for chunk in _stream(_base(cassette), cassette):
                text += chunk.text or ""
    assert text == ssemock.accumulate(player.expected.events[:2], "gemini.generate_content").text


# -- the JSON array form (no alt=sse) ----------------------------------------------------------


def _array_client(url: str) -> Iterator[dict[str, Any]]:
    """A plain client of the array form: read the body, parse the array once it is complete."""
    with httpx.Client() as client, client.stream("POST", url, json={}) as response:
        body = b"".join(response.iter_bytes())
    yield from json.loads(body)


@pytest.mark.parametrize("strategy", chunking.ALL, ids=str)
def test_json_array_form_under_every_chunking(strategy: chunking.Chunking) -> None:
    cassette = cassettes.load("gemini/array_text")
    x = cassette.interactions[0]
    assert (
        "alt=sse" not in x.request.url
        and x.response.body.startswith(b"[{")
        and b"\n,\r\n{" in x.response.body
    )
    with ssemock.replay(cassette, chunking=strategy, match_on=["method", "path"]) as player:
        elements = list(_array_client(x.request.url))
    assert elements == player.expected.events
    assert (
        ssemock.accumulate(elements, "gemini.generate_content").to_dict() == player.expected.result.to_dict()
    )
    assert player.expected.result.text.startswith("Without alt=sse") and player.expected.result.complete


@pytest.mark.parametrize("after", [0, 1, 2])
def test_json_array_error_event_keeps_it_one_array(after: int) -> None:
    cassette = cassettes.load("gemini/array_text")
    url = cassette.interactions[0].request.url
    with ssemock.replay(
        cassette, faults=f"error_event:kind=rate_limit_error,after_event={after}", match_on=["method", "path"]
    ) as player:
        elements = list(_array_client(url))
    assert len(elements) == after + 1
    assert elements[-1]["error"]["status"] == "RESOURCE_EXHAUSTED" and elements[-1]["error"]["code"] == 429
    assert b"\n,\r\n{" in player.plays[0].body or after == 0
    assert player.expected.result.error == elements[-1]["error"]


def _array_chunks(url: str) -> list[bytes]:
    """The body's chunks as the client's transport hands them over."""
    with httpx.Client() as client, client.stream("POST", url, json={}) as response:
        return list(response.iter_raw())


def _elements(chunks: list[bytes]) -> list[Any]:
    """Each chunk read on its own as one array element (its separator and the brackets aside)."""
    return [json.loads(chunk.strip(b"[],\r\n")) for chunk in chunks if chunk.strip(b"[],\r\n")]


def test_json_array_per_event_serves_one_element_a_chunk() -> None:
    """per_event cuts the array form at its elements (not at the lines inside them): each chunk a
    client gets parses on its own, and the last one is the array's closing bracket."""
    cassette = cassettes.load("gemini/array_text")
    x = cassette.interactions[0]
    with ssemock.replay(cassette, chunking="per_event", match_on=["method", "path"]) as player:
        chunks = _array_chunks(x.request.url)
    assert b"".join(chunks) == x.response.body
    assert _elements(chunks) == player.expected.events and len(player.expected.events) == 7
    assert len(chunks) == len(player.expected.events) + 1 and chunks[-1].strip() == b"]"
    assert chunks == chunking.per_event(x.response.body, content_type=x.response.header("content-type"))


@pytest.mark.parametrize("after", [1, 2, 5])
def test_json_array_disconnect_after_event_counts_elements(after: int) -> None:
    cassette = cassettes.load("gemini/array_text")
    x = cassette.interactions[0]
    got: list[bytes] = []
    with ssemock.replay(
        cassette, faults=f"disconnect:after_event={after}", match_on=["method", "path"]
    ) as player:
        with pytest.raises(httpx.TransportError):
            with httpx.Client() as client, client.stream("POST", x.request.url, json={}) as response:
                got.extend(response.iter_raw())
    body = b"".join(got)  # ends right after element N's closing brace: N whole elements
    assert body == x.response.body[: framing.event_ends(x.response.body, "application/json")[after - 1]]
    assert json.loads(body + b"]") == player.expected.events[:after]


def test_json_array_rechunked_per_event_on_the_command_line(tmp_path: Path) -> None:
    from ssemock.commands.cli import main

    path = tmp_path / "array.json"
    cassettes.load("gemini/array_text").save(path)
    assert main(["rechunk", str(path), "--chunking", "per_event", "--in-place"]) == 0
    response = ssemock.Cassette.load(path).interactions[0].response
    assert response.ends == [*framing.event_ends(response.body, "application/json"), len(response.body)]


# -- the reference itself -----------------------------------------------------------------------


def test_prompt_blocked_for_safety() -> None:
    x = gemini.synthesize(blocked="SAFETY").interactions[0]
    result = ssemock.accumulate(framing.decode(x.response.body, "text/event-stream"), url=x.request.url)
    assert (result.text, result.finish_reason, result.complete) == ("", "SAFETY", True)


def test_detection_and_bad_input() -> None:
    assert (
        ssemock.detect_protocol(
            url="https://generativelanguage.googleapis.com/v1beta/models/"
            "gemini-2.0-flash:streamGenerateContent?alt=sse"
        )
        == "gemini.generate_content"
    )
    assert ssemock.detect_protocol([{"candidates": []}]) == "gemini.generate_content"
    with pytest.raises(ssemock.ProtocolError, match=r"gemini.generate_content: event 0: data is not JSON"):
        ssemock.accumulate([ssemock.ServerSentEvent(data="nope")], "gemini.generate_content")
    with pytest.raises(ssemock.ProtocolError, match="candidate index is not an integer"):
        ssemock.accumulate([{"candidates": [{"index": "0"}]}], "gemini.generate_content")
