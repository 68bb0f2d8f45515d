"""bedrock.invoke (InvokeModelWithResponseStream) through the real boto3 client (issue 31): the
synthesized stream replayed to boto3 under every chunking is what the reference fold reads; an
exception frame and an HTTP error body are botocore's own errors; each model family the corpora
hold (Anthropic messages, Claude v2 completion, Titan, Nova; and, issue 42, Cohere Command and
Command R, Meta Llama, Mistral ``outputs``, the ``choices`` of AI21 Jamba and Mistral Large 2)
folds to its text; and detection tells it from ConverseStream, which shares its content type."""

from __future__ import annotations

import json
from typing import Any

import boto3
import botocore.config
import botocore.exceptions
import pytest

import ssemock
from ssemock import Cassette, framing
from ssemock.framing.eventstream import encode as encode_frame
from ssemock.protocols import bedrock, bedrock_invoke
from ssemock.protocols import synthesis as synth
from ssemock.protocols.base import StreamError
from ssemock.protocols.synthesis import DEFAULT_PROMPT

MODEL = "anthropic.claude-3-haiku-20240307-v1:0"
TEXT = "東京は晴れです。🌤 Sunny — 24°C."


def _client() -> Any:
    return boto3.client(
        "bedrock-runtime",
        region_name="us-east-1",
        aws_access_key_id="AKIATESTFAKE00000000",
        aws_secret_access_key="testSECRETfake0000",
        config=botocore.config.Config(retries={"max_attempts": 1}),
    )


def _invoke(client: Any) -> list[dict[str, Any]]:
    """The decoded chunks boto3 yields."""
    response = client.invoke_model_with_response_stream(
        modelId=MODEL,
        body=json.dumps(
            {
                "anthropic_version": "bedrock-2023-05-31",
                "max_tokens": 1024,
                "messages": synth.user(DEFAULT_PROMPT),
            }
        ),
    )
    return [json.loads(event["chunk"]["bytes"]) for event in response["body"]]


def _synth() -> Cassette:
    return bedrock_invoke.synthesize(
        TEXT, model=MODEL, chunk_size=3, seed=4, usage={"input_tokens": 9, "output_tokens": 7}
    )


@pytest.mark.parametrize("chunking", ["as_recorded", "bytewise", "fixed:7", "mid_line"])
def test_boto3_reads_what_the_fold_reads(chunking: str) -> None:
    cassette = _synth()
    with ssemock.replay(cassette, chunking=chunking):
        chunks = _invoke(_client())
    text = "".join(c["delta"]["text"] for c in chunks if c["type"] == "content_block_delta")
    [x] = cassette.interactions
    result = ssemock.accumulate(
        framing.decode(x.response.body, x.response.header("content-type")), url=x.request.url
    )
    assert result.protocol == "bedrock.invoke" and result.complete
    assert result.text == text == TEXT
    assert (
        result.finish_reason
        == "end_turn"
        == next(c["delta"]["stop_reason"] for c in chunks if c["type"] == "message_delta")
    )
    assert result.usage and result.usage["output_tokens"] == 7


def test_an_exception_frame_is_what_botocore_raises_and_the_fold_reports() -> None:
    [x] = _synth().interactions
    frames = framing.get("eventstream").decode(x.response.body)
    error = bedrock_invoke.PROTOCOL.error_event(
        StreamError(kind="rate_limit_error", message="slow down", framing="eventstream")
    )
    cassette = Cassette()
    cassette.add("POST", x.request.url, [f.raw for f in frames[:3]] + [error], headers=x.response.headers)
    with ssemock.replay(cassette):
        with pytest.raises(botocore.exceptions.EventStreamError) as info:
            _invoke(_client())
    assert info.value.response["Error"] == {"Code": "throttlingException", "Message": "slow down"}
    result = ssemock.accumulate(
        framing.get("eventstream").decode(b"".join(f.raw for f in frames[:3]) + error), "bedrock.invoke"
    )
    assert result.error == {"type": "throttlingException", "message": "slow down"} and not result.complete


@pytest.mark.parametrize(
    ("status", "exception"), [(429, "ThrottlingException"), (400, "ValidationException")]
)
def test_the_http_error_body_is_the_sdks_own_exception(status: int, exception: str) -> None:
    body = bedrock_invoke.PROTOCOL.http_error(status, None)
    client = _client()
    with ssemock.replay(_synth(), faults=ssemock.faults.http_error(status, body=body.body)):
        with pytest.raises(getattr(client.exceptions, exception)) as info:
            _invoke(client)
    assert info.value.response["ResponseMetadata"]["HTTPStatusCode"] == status


FAMILIES = {
    "claude v2 completion": (
        [
            {"completion": " Hello", "stop_reason": None},
            {"completion": " there.", "stop_reason": "stop_sequence"},
        ],
        " Hello there.",
        "stop_sequence",
    ),
    "titan": (
        [{"outputText": "Hi ", "index": 0}, {"outputText": "you.", "index": 0, "completionReason": "FINISH"}],
        "Hi you.",
        "FINISH",
    ),
    "nova": (
        [
            {"messageStart": {"role": "assistant"}},
            {"contentBlockDelta": {"delta": {"text": "Bon"}, "contentBlockIndex": 0}},
            {
                "contentBlockDelta": {"delta": {"text": "jour"}, "contentBlockIndex": 0},
                "amazon-bedrock-guardrailAction": "NONE",
            },
            {"messageStop": {"stopReason": "end_turn"}},
        ],
        "Bonjour",
        "end_turn",
    ),
    # the families realtraffic3 holds besides (issue 42 item 4), as dd-trace-py recorded them
    "cohere command": (
        [
            {"is_finished": False, "text": " I"},
            {"is_finished": False, "text": " am"},
            {"finish_reason": "MAX_TOKENS", "is_finished": True},
        ],
        " I am",
        "MAX_TOKENS",
    ),
    "cohere command generations": (
        [
            {"generations": [{"text": "Hola", "finish_reason": None}]},
            {"generations": [{"text": ".", "finish_reason": "COMPLETE"}]},
        ],
        "Hola.",
        "COMPLETE",
    ),
    "cohere command r": (
        [
            {"is_finished": False, "event_type": "stream-start", "generation_id": "g"},
            {"is_finished": False, "event_type": "text-generation", "text": "Salut"},
            {
                "is_finished": True,
                "event_type": "stream-end",
                "finish_reason": "COMPLETE",
                "response": {"text": "Salut"},
            },
        ],
        "Salut",
        "COMPLETE",
    ),
    "meta llama": (
        [
            {"generation": "\n", "prompt_token_count": 10, "generation_token_count": 1, "stop_reason": None},
            {
                "generation": "The",
                "prompt_token_count": None,
                "generation_token_count": 2,
                "stop_reason": None,
            },
            {
                "generation": ".",
                "prompt_token_count": None,
                "generation_token_count": 3,
                "stop_reason": "length",
            },
        ],
        "\nThe.",
        "length",
    ),
    "mistral outputs": (
        [
            {"outputs": [{"text": "Ciao", "stop_reason": None}]},
            {"outputs": [{"text": "!", "stop_reason": "stop"}]},
        ],
        "Ciao!",
        "stop",
    ),
    "ai21 jamba choices": (
        [
            {
                "id": "c",
                "choices": [
                    {"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}
                ],
            },
            {"id": "c", "choices": [{"index": 0, "delta": {"content": "Shalom"}, "finish_reason": None}]},
            {"id": "c", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        ],
        "Shalom",
        "stop",
    ),
    "mistral large 2 choices": (
        [
            {
                "id": "m",
                "choices": [
                    {"index": 0, "message": {"role": "assistant", "content": "Bon"}, "stop_reason": None}
                ],
            },
            {"id": "m", "choices": [{"index": 0, "message": {"content": "soir"}, "stop_reason": "stop"}]},
        ],
        "Bonsoir",
        "stop",
    ),
}


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_each_model_family_folds_to_its_text(family: str) -> None:
    events, text, reason = FAMILIES[family]
    metrics = {"amazon-bedrock-invocationMetrics": {"inputTokenCount": 3, "outputTokenCount": 2}}
    frames = [bedrock_invoke.chunk_frame(e) for e in events[:-1]] + [
        bedrock_invoke.chunk_frame({**events[-1], **metrics})
    ]
    decoded = framing.get("eventstream").decode(b"".join(frames))
    # no URL: the content type both Bedrock APIs claim, then the events, decide
    assert (
        ssemock.detect_protocol(decoded, content_type="application/vnd.amazon.eventstream")
        == "bedrock.invoke"
    )
    result = ssemock.accumulate(decoded, "bedrock.invoke")
    assert (result.text, result.finish_reason, result.complete) == (text, reason, True)
    assert result.usage == metrics["amazon-bedrock-invocationMetrics"]


def test_cohere_command_with_several_generations_folds_each_as_a_choice() -> None:
    """``num_generations: 2``: each chunk's ``index`` names its generation; the last chunk's
    ``finish_reason`` (no index) ends them all."""
    events = [
        {"index": 0, "is_finished": False, "text": " In"},
        {"index": 0, "is_finished": False, "text": " short"},
        {"index": 1, "is_finished": False, "text": " A"},
        {"index": 1, "is_finished": False, "text": " chain"},
        {
            "finish_reason": "MAX_TOKENS",
            "is_finished": True,
            "amazon-bedrock-invocationMetrics": {"inputTokenCount": 40, "outputTokenCount": 4},
        },
    ]
    decoded = framing.get("eventstream").decode(b"".join(bedrock_invoke.chunk_frame(e) for e in events))
    result = ssemock.accumulate(decoded, "bedrock.invoke")
    assert [(c.index, c.text, c.finish_reason) for c in result.choices] == [
        (0, " In short", "MAX_TOKENS"),
        (1, " A chain", "MAX_TOKENS"),
    ]


def test_detection_tells_invoke_from_converse() -> None:
    converse = bedrock.synthesize("hi")
    [x] = converse.interactions
    frames = framing.get("eventstream").decode(x.response.body)
    assert (
        ssemock.detect_protocol(frames, content_type="application/vnd.amazon.eventstream")
        == "bedrock.converse"
    )
    assert ssemock.detect_protocol(url=bedrock_invoke.URL.format(model=MODEL)) == "bedrock.invoke"
    assert (
        ssemock.protocols.for_response(x.request.url, x.response.headers, x.response.body).name
        == "bedrock.converse"
    )
    [y] = _synth().interactions
    assert (
        ssemock.protocols.for_response("https://proxy.example/x", y.response.headers, y.response.body).name
        == "bedrock.invoke"
    )


def test_the_fold_refuses_a_chunk_that_is_no_base64_json() -> None:
    bad = {":event-type": "chunk", ":content-type": "application/json", ":message-type": "event"}
    frame = framing.get("eventstream").decode(encode_frame(bad, b'{"bytes": "not base64!"}'))
    with pytest.raises(
        ssemock.ProtocolError, match="bedrock.invoke: event 0: chunk bytes are not base64 of JSON"
    ):
        ssemock.accumulate(frame, "bedrock.invoke")
