"""bedrock.agent (Bedrock Agents InvokeAgent) through the real boto3 client (issue 42 item 4): the
synthesized stream (raw UTF-8 text chunks, a character now and then split between two) replayed
to boto3 under several chunkings is what the reference fold reads, text and the tool calls its
``returnControl`` hands back; an exception frame is botocore's own error; and an InvokeAgent
stream, as the corpora recorded it, is labelled ``bedrock.agent``, never ``bedrock.invoke``, from
its URL or from its frames alone."""

from __future__ import annotations

import base64
import json
from typing import Any
from urllib.parse import unquote, urlsplit

import boto3
import botocore.config
import botocore.exceptions
import pytest

import ssemock
from ssemock import Cassette, framing
from ssemock.framing.eventstream import CONTENT_TYPE
from ssemock.framing.eventstream import encode as encode_frame
from ssemock.protocols import bedrock_agent, bedrock_invoke

TEXT = "Grüße aus Tokyo 🌏 — the agent answers in raw chunks, 日本語も."
WEATHER = {"name": "get_weather", "arguments": {"city": "東京", "unit": "celsius"}}


def _invoke_agent(cassette: Cassette) -> list[dict[str, Any]]:
    """The events boto3 yields for the cassette's InvokeAgent request."""
    _, _, agent, _, alias, _, session, _ = unquote(urlsplit(cassette.interactions[0].request.url).path).split(
        "/"
    )
    client = boto3.client(
        "bedrock-agent-runtime",
        region_name="us-east-1",
        aws_access_key_id="AKIATESTFAKE00000000",
        aws_secret_access_key="testSECRETfake0000",
        config=botocore.config.Config(retries={"max_attempts": 1}),
    )
    body = cassette.interactions[0].request.json()
    response = client.invoke_agent(agentId=agent, agentAliasId=alias, sessionId=session, **body)
    return list(response["completion"])


@pytest.mark.parametrize("chunking", ["as_recorded", "bytewise", "fixed:7", "mid_line"])
def test_boto3_reads_what_the_fold_reads(chunking: str) -> None:
    cassette = bedrock_agent.synthesize(TEXT, tool_calls=[WEATHER], chunk_size=5, seed=3)
    with ssemock.replay(cassette, chunking=chunking) as player:
        events = _invoke_agent(cassette)
    pieces = [e["chunk"]["bytes"] for e in events if "chunk" in e]
    assert any(not _utf8(piece) for piece in pieces)  # a character split between two chunks
    player.assert_text(b"".join(pieces).decode())
    [handed] = [e["returnControl"] for e in events if "returnControl" in e]
    player.assert_tool_calls(
        [
            {
                "name": i["functionInvocationInput"]["function"],
                "arguments": {p["name"]: p["value"] for p in i["functionInvocationInput"]["parameters"]},
            }
            for i in handed["invocationInputs"]
        ]
    )
    result = player.expected.result
    assert (result.protocol, result.text, result.tool_calls[0].id) == (
        "bedrock.agent",
        TEXT,
        handed["invocationId"],
    )


def _utf8(data: bytes) -> bool:
    try:
        data.decode()
    except UnicodeDecodeError:
        return False
    return True


def test_an_exception_frame_is_what_botocore_raises_and_the_fold_reports() -> None:
    cassette = bedrock_agent.synthesize(TEXT, seed=3)
    fault = "error_event:kind=rate_limit_error,after_event=3"
    with ssemock.replay(cassette, faults=fault) as player:
        with pytest.raises(botocore.exceptions.EventStreamError, match="throttlingException"):
            _invoke_agent(cassette)
    assert player.expected.result.error is not None
    assert player.expected.result.error["type"] == "throttlingException"


def _frame(kind: str, payload: dict[str, Any]) -> bytes:
    headers = {":event-type": kind, ":content-type": "application/json", ":message-type": "event"}
    return encode_frame(headers, json.dumps(payload).encode())


# an InvokeAgent answer as dd-trace-py recorded it: trace frames, then the text as one raw chunk
RECORDED = _frame("trace", {"agentId": "EITYAHSOCJ", "trace": {"orchestrationTrace": {}}}) + _frame(
    "chunk", {"bytes": base64.b64encode(b"Based on your preferences, Costa Rica.").decode()}
)
URL = "https://bedrock-agent-runtime.us-east-1.amazonaws.com/agents/A1/agentAliases/B2/sessions/s-3/text"


@pytest.mark.parametrize("url", [URL, None])
def test_a_recorded_agent_stream_is_labelled_bedrock_agent_and_folds_its_text(url: str | None) -> None:
    events = framing.decode(RECORDED, CONTENT_TYPE)
    assert ssemock.detect_protocol(events, url=url, content_type=CONTENT_TYPE) == "bedrock.agent"
    # a chunk whose bytes are raw text, not JSON, tells the two apart even without a trace first
    assert ssemock.detect_protocol(events[1:], content_type=CONTENT_TYPE) == "bedrock.agent"
    result = ssemock.accumulate(events, "bedrock.agent")
    assert (result.text, result.error, result.complete) == (
        "Based on your preferences, Costa Rica.",
        None,
        False,
    )
    # and InvokeModel's chunks (base64 JSON) stay bedrock.invoke's
    invoke = framing.decode(bedrock_invoke.chunk_frame({"outputText": "hi"}), CONTENT_TYPE)
    assert ssemock.detect_protocol(invoke, content_type=CONTENT_TYPE) == "bedrock.invoke"


def test_the_fold_refuses_a_chunk_that_is_no_base64() -> None:
    frame = framing.decode(_frame("chunk", {"bytes": "not base64!"}), CONTENT_TYPE)
    with pytest.raises(ssemock.ProtocolError, match="bedrock.agent: event 0: chunk bytes are not base64"):
        ssemock.accumulate(frame, "bedrock.agent")
