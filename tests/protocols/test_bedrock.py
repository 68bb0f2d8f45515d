"""bedrock.converse through the real boto3 bedrock-runtime client: recorded from a loopback server
that writes a synthesized ConverseStream, replayed under every chunking (transforms never touch a
binary body), cut at frame boundaries by per_event and after_event faults, and folded by the
reference accumulator into what the SDK's events spell."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator, Iterable, Iterator
from pathlib import Path
from typing import Any

import boto3
import botocore.config
import botocore.eventstream
import botocore.exceptions
import pytest
import urllib3
from starlette.applications import Starlette
from starlette.requests import Request as HTTPRequest
from starlette.responses import StreamingResponse
from starlette.routing import Route

import ssemock
from ssemock import synth
from ssemock.commands.loopback import running
from ssemock.framing import eventstream as es
from ssemock.protocols import bedrock
from ssemock.protocols.base import Accumulated, StreamError
from ssemock.store.cassette import Interaction, Request, Response

SHIPPED = Path(bedrock.__file__).parents[1] / "cassettes" / "bedrock" / "converse_tool_use.json"
MODEL = "anthropic.claude-3-5-haiku-20241022-v1:0"
PROMPT = "What's the weather in Tokyo? Answer in Japanese."
TEXT = "東京の天気を調べますね。🌤 Let me check — one moment."
CALL = {
    "name": "get_weather",
    "arguments": {"city": "東京", "unit": "celsius"},
    "id": "tooluse_WeatherTokyo01",
}
TRANSFORMS = ["none", "crlf", "cr", "keepalive", "no_space"]
SOURCE = (
    "synthesized by ssemock.protocols.bedrock from Bedrock's documented ConverseStream format; "
    "recorded with boto3 through a loopback server; not captured from the real service"
)


def _synthesized() -> Interaction:
    (x,) = bedrock.synthesize(
        TEXT, tool_calls=[CALL], model=MODEL, prompt=PROMPT, chunk_size=3, gap=0.01, first_token=0.05, seed=21
    ).interactions
    return x


def _app(holder: dict[str, Interaction]) -> Starlette:
    """Writes the held interaction's chunks at their times, as Bedrock would."""

    async def endpoint(request: HTTPRequest) -> StreamingResponse:
        await request.body()
        response = holder["x"].response

        async def body() -> AsyncIterator[bytes]:
            last = 0.0
            for chunk, at in zip(response.chunks, response.times):
                await asyncio.sleep(max(at - last, 0.0))
                last = at
                yield chunk

        headers = {k: v for k, v in response.headers if k not in ("content-type", synth.SOURCE_HEADER)}
        headers[synth.SOURCE_HEADER] = SOURCE
        return StreamingResponse(
            body(), status_code=response.status, headers=headers, media_type=response.header("content-type")
        )

    return Starlette(routes=[Route("/model/{model}/converse-stream", endpoint, methods=["POST"])])


def _client(endpoint_url: str | None = None, *, read_timeout: float = 10) -> Any:
    return boto3.client(
        "bedrock-runtime",
        endpoint_url=endpoint_url,
        region_name="us-east-1",
        aws_access_key_id="AKIATESTFAKE00000000",
        aws_secret_access_key="testSECRETfake0000",
        config=botocore.config.Config(retries={"max_attempts": 1}, read_timeout=read_timeout),
    )


def _stream(client: Any, *, tools: bool = True) -> Any:
    """boto3's event stream of the converse_stream call the cassette holds."""
    tool = {
        "toolSpec": {
            "name": "get_weather",
            "description": "The get_weather tool.",
            "inputSchema": {
                "json": {
                    "type": "object",
                    "properties": {"city": {"type": "string"}, "unit": {"type": "string"}},
                    "required": ["city", "unit"],
                }
            },
        }
    }
    response = client.converse_stream(
        modelId=MODEL,
        messages=[{"role": "user", "content": [{"text": PROMPT}]}],
        **({"toolConfig": {"tools": [tool]}} if tools else {}),
    )
    return response["stream"]


def _converse(client: Any) -> list[dict[str, Any]]:
    return list(_stream(client))


def _as_provider(request: Request) -> Request:
    """The recorded request as sent to Bedrock itself (the loopback host and port replaced)."""
    path = request.url.split("/model/", 1)[1]
    per_call = ("host", "user-agent", "amz-sdk-invocation-id", "x-amz-date")
    headers = [(k, v) for k, v in request.headers if k not in per_call]
    return Request(
        request.method, f"https://bedrock-runtime.us-east-1.amazonaws.com/model/{path}", headers, request.body
    )


def _without_date(response: Response) -> Response:
    response.headers = [(k, v) for k, v in response.headers if k not in ("date", "server")]
    return response


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, Any]]]:
    """A cassette recorded from boto3 against the loopback server, and the events boto3 yielded."""
    holder = {"x": _synthesized()}
    path = tmp_path_factory.mktemp("bedrock") / "converse.json"
    with running(_app(holder)) as base:
        with ssemock.use_cassette(
            path, record_mode="all", before_record_request=_as_provider, before_record_response=_without_date
        ):
            live = _converse(_client(base))
    return path, live


def _accumulate(events: Iterable[Any]) -> Accumulated:
    """The reference fold of Bedrock events (frames, or boto3's dicts)."""
    return ssemock.accumulate(events, "bedrock.converse")


def _client_side(events: list[dict[str, Any]]) -> dict[str, Any]:
    """What application code builds from boto3's events (text, tool input, stop reason, usage)."""
    text, tools, out = "", {}, {}
    for event in events:
        if "contentBlockStart" in event:
            start = event["contentBlockStart"]
            tools[start["contentBlockIndex"]] = {**start["start"]["toolUse"], "input": ""}
        elif "contentBlockDelta" in event:
            delta = event["contentBlockDelta"]["delta"]
            if "text" in delta:
                text += delta["text"]
            if "toolUse" in delta:
                tools[event["contentBlockDelta"]["contentBlockIndex"]]["input"] += delta["toolUse"]["input"]
        elif "messageStop" in event:
            out["stop"] = event["messageStop"]["stopReason"]
        elif "metadata" in event:
            out["usage"] = event["metadata"]["usage"]
    calls = [
        {"id": t["toolUseId"], "name": t["name"], "input": json.loads(t["input"])} for t in tools.values()
    ]
    return {"text": text, "calls": calls, **out}


def _reference(result: Accumulated) -> dict[str, Any]:
    return {
        "text": result.text,
        "stop": result.finish_reason,
        "usage": result.usage,
        "calls": [{"id": c.id, "name": c.name, "input": c.parsed_arguments} for c in result.tool_calls],
    }


def test_boto3_records_the_frames_the_server_wrote(recorded: tuple[Path, list[dict[str, Any]]]) -> None:
    path, live = recorded
    (x,) = ssemock.Cassette.load(path).interactions
    made = _synthesized()
    assert x.response.chunks == made.response.chunks and x.response.complete
    assert x.request.url == bedrock.URL.format(model=MODEL.replace(":", "%3A"))
    assert (
        x.response.header("content-type") == es.CONTENT_TYPE
        and x.response.header(synth.SOURCE_HEADER) == SOURCE
    )
    assert dict(x.request.headers)["authorization"] == "REDACTED"
    assert [next(iter(e)) for e in live][:2] == ["messageStart", "contentBlockDelta"]
    assert _client_side(live) == {
        "text": TEXT,
        "calls": [{"id": CALL["id"], "name": CALL["name"], "input": CALL["arguments"]}],
        "stop": "tool_use",
        "usage": live[-1]["metadata"]["usage"],
    }


def test_the_reference_accumulator_equals_what_the_sdk_built(recorded: tuple[Path, Any]) -> None:
    path, live = recorded
    (x,) = ssemock.Cassette.load(path).interactions
    frames = es.decode(x.response.body)
    assert _reference(_accumulate(frames)) == _client_side(live)
    assert _accumulate(live).to_dict() == _accumulate(frames).to_dict()  # boto3's dicts fold the same
    assert _accumulate(frames).complete and _accumulate(frames).error is None


@pytest.mark.parametrize("transform", TRANSFORMS)
@pytest.mark.parametrize("chunking", ssemock.chunking.ALL, ids=str)
def test_replay_under_every_chunking_and_transform(
    recorded: tuple[Path, list[dict[str, Any]]], chunking: Any, transform: str
) -> None:
    path, live = recorded
    recorded_body = ssemock.Cassette.load(path).interactions[0].response.body
    with ssemock.use_cassette(
        path, chunking=chunking, transform=None if transform == "none" else transform
    ) as player:
        assert _converse(_client()) == live  # boto3's default endpoint: intercepted, never reached
    (play,) = player.plays
    assert play.body == recorded_body  # no transform runs on a binary body
    assert _reference(_accumulate(es.decode(play.body))) == _client_side(live)


def test_per_event_serves_one_frame_per_chunk(recorded: tuple[Path, Any]) -> None:
    path, live = recorded
    with ssemock.use_cassette(path, chunking="per_event") as player:
        assert _converse(_client()) == live
    (play,) = player.plays
    chunks = [play.body[a:b] for a, b in zip([0, *play.ends], play.ends)]
    assert chunks == [f.raw for f in es.decode(play.body)] and len(chunks) == len(live)


def test_disconnect_after_event_2_cuts_after_frame_2(recorded: tuple[Path, Any]) -> None:
    path, live = recorded
    got: list[dict[str, Any]] = []
    with ssemock.use_cassette(path, chunking="bytewise", faults="disconnect:after_event=2") as player:
        with pytest.raises(urllib3.exceptions.ProtocolError):  # what botocore lets through live
            for event in _stream(_client()):
                got.append(event)
    assert got == live[:2]
    assert player.plays[0].body == b"".join(
        f.raw for f in es.decode(ssemock.Cassette.load(path).interactions[0].response.body)[:2]
    )


def test_stall_before_event_lands_on_a_frame_boundary(recorded: tuple[Path, Any]) -> None:
    path, live = recorded
    with ssemock.use_cassette(path, chunking="coalesced", faults="stall:before_event=3,seconds=30") as player:
        with pytest.raises(urllib3.exceptions.ReadTimeoutError):
            _converse(_client(read_timeout=1))
    assert es.frame_ends(player.plays[0].body)[2] in player.plays[0].ends


def test_an_exception_frame_is_what_botocore_raises_and_the_fold_reports(recorded: tuple[Path, Any]) -> None:
    path, live = recorded
    (x,) = ssemock.Cassette.load(path).interactions
    frames = es.decode(x.response.body)
    error = bedrock.PROTOCOL.error_event(StreamError(kind="throttling", message="", framing="eventstream"))
    cassette = ssemock.Cassette()
    cassette.add("POST", x.request.url, [f.raw for f in frames[:3]] + [error], headers=x.response.headers)
    got: list[dict[str, Any]] = []
    with ssemock.replay(cassette, chunking="mid_line"):
        with pytest.raises(botocore.exceptions.EventStreamError) as info:
            for event in _stream(_client(), tools=False):
                got.append(event)
    assert got == live[:3]
    assert info.value.response["Error"] == {
        "Code": "throttlingException",
        "Message": bedrock._MESSAGES["throttlingException"],
    }
    result = _accumulate(es.decode(b"".join(f.raw for f in frames[:3]) + error))
    assert result.error == {
        "type": "throttlingException",
        "message": bedrock._MESSAGES["throttlingException"],
    }
    assert not result.complete


@pytest.mark.parametrize(
    ("status", "exception"),
    [(429, "ThrottlingException"), (400, "ValidationException"), (503, "ServiceUnavailableException")],
)
def test_the_http_error_body_is_the_sdks_own_exception(
    recorded: tuple[Path, Any], status: int, exception: str
) -> None:
    body = bedrock.PROTOCOL.http_error(status, None)
    client = _client()
    with ssemock.use_cassette(recorded[0], faults=ssemock.faults.http_error(status, body=body.body)):
        with pytest.raises(getattr(client.exceptions, exception)) as info:
            _converse(client)
    assert info.value.response["ResponseMetadata"]["HTTPStatusCode"] == status
    assert json.loads(body.body)["message"] in str(info.value)


def test_a_bad_crc_in_a_served_frame_is_a_frame_error_and_botocores(recorded: tuple[Path, Any]) -> None:
    (x,) = ssemock.Cassette.load(recorded[0]).interactions
    ends = es.frame_ends(x.response.body)
    body = bytearray(x.response.body)
    body[ends[3] + 30] ^= 0x20  # inside frame 4
    cassette = ssemock.Cassette()
    cassette.add("POST", x.request.url, [bytes(body)], headers=x.response.headers)
    with ssemock.replay(cassette, chunking="random:7"):
        with pytest.raises(botocore.eventstream.ChecksumMismatch):
            _converse(_client())
    with pytest.raises(es.FrameError, match=rf"eventstream frame 4 \(at byte {ends[3]}\): message CRC32"):
        es.decode(bytes(body))


def test_detection_by_url_content_type_and_first_frame() -> None:
    protocol = bedrock.PROTOCOL
    assert protocol.url(
        "https://bedrock-runtime.eu-west-1.amazonaws.com/model/amazon.nova-lite-v1%3A0/converse-stream"
    )
    assert protocol.url("http://127.0.0.1:8000/model/x/converse-stream")
    assert not protocol.url("https://bedrock-runtime.us-east-1.amazonaws.com/model/x/converse")
    assert not protocol.url("https://api.openai.com/v1/chat/completions")
    assert protocol.content_type("application/vnd.amazon.eventstream") and not protocol.content_type(
        "text/event-stream"
    )
    first = es.decode(_synthesized().response.body)[0]
    assert protocol.event(first) and protocol.event({"messageStart": {"role": "assistant"}})
    assert not protocol.event({"choices": []})


def test_the_fold_refuses_impossible_streams() -> None:
    tool_delta = bedrock.frame(
        "contentBlockDelta", {"contentBlockIndex": 1, "delta": {"toolUse": {"input": "{"}}}
    )
    with pytest.raises(
        ValueError,
        match=r"bedrock.converse: event 0: a toolUse delta for content block 1, which "
        r"never started",
    ):
        _accumulate(es.decode(tool_delta))
    with pytest.raises(ValueError, match=r"event 0: contentBlockDelta has no integer 'contentBlockIndex'"):
        _accumulate(es.decode(bedrock.frame("contentBlockDelta", {"delta": {"text": "x"}})))


def test_synthesize_thinking_and_errors_fold_back() -> None:
    (x,) = bedrock.synthesize(
        "Answer.",
        thinking="Reasoning first.",
        usage={"inputTokens": 1, "outputTokens": 2, "totalTokens": 3},
        seed=3,
    ).interactions
    result = _accumulate(es.decode(x.response.body))
    assert (result.thinking, result.text, result.usage, result.finish_reason) == (
        "Reasoning first.",
        "Answer.",
        {"inputTokens": 1, "outputTokens": 2, "totalTokens": 3},
        "end_turn",
    )
    assert len(result.signature) == 64 and result.complete
    (y,) = bedrock.synthesize("Partial", error="overloaded_error", seed=4).interactions
    failed = _accumulate(es.decode(y.response.body))
    assert failed.text == "Partial" and failed.error is not None and not failed.complete
    assert failed.error["type"] == "serviceUnavailableException"


def _shipped_without_times(path: Path) -> Any:
    doc = json.loads(path.read_bytes())
    for interaction in doc["interactions"]:
        interaction["response"]["chunks"] = [[0, end] for _, end in interaction["response"]["chunks"]]
    return doc


def test_the_shipped_cassette_is_what_boto3_records(recorded: tuple[Path, Any]) -> None:
    """Set SSEMOCK_WRITE_CASSETTES=1 to rewrite it from this run's recording."""
    if os.environ.get("SSEMOCK_WRITE_CASSETTES"):
        SHIPPED.parent.mkdir(parents=True, exist_ok=True)
        SHIPPED.write_bytes(recorded[0].read_bytes())
    shipped = _shipped_without_times(SHIPPED)
    shipped["interactions"][0]["response"]["headers"] = {}
    fresh = _shipped_without_times(recorded[0])
    fresh["interactions"][0]["response"]["headers"] = {}
    assert shipped == fresh
    with ssemock.use_cassette(SHIPPED, chunking="mid_utf8"):
        assert _converse(_client()) == recorded[1]


@pytest.fixture(autouse=True)
def _no_real_credentials(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(name, raising=False)
    yield
