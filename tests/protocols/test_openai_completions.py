"""openai.completions (the legacy ``/v1/completions``) through the real openai client (issue 31):
the synthesized stream replayed under several chunkings is what the SDK reads and what the fold
reads; a mid-stream error event and an HTTP error body are the SDK's own errors; detection goes by
the events (a chat chunk, or Writer's ``{"value"}`` stream at a ``/completions`` path, is not it)."""

from __future__ import annotations

import json

import openai
import pytest

import ssemock
from ssemock import Cassette, framing
from ssemock.framing.sse import ServerSentEvent
from ssemock.protocols import openai_completions
from ssemock.protocols.base import StreamError

TEXT = "Once upon a time — ünïcode 🌙 and a moral."
PROMPT = "Tell me a story."


def _client() -> openai.OpenAI:
    return openai.OpenAI(api_key="sk-test-fake", max_retries=0)


def _synth() -> Cassette:
    return openai_completions.synthesize(
        TEXT, chunk_size=3, seed=5, prompt=PROMPT, usage={"prompt_tokens": 5}
    )


def _stream(client: openai.OpenAI) -> str:
    stream = client.completions.create(model="gpt-3.5-turbo-instruct", prompt=PROMPT, stream=True)
    return "".join(c.choices[0].text for c in stream if c.choices)


@pytest.mark.parametrize("chunking", ["as_recorded", "bytewise", "mid_utf8", "fixed:5"])
def test_the_sdk_reads_what_the_fold_reads(chunking: str) -> None:
    cassette = _synth()
    with ssemock.replay(cassette, chunking=chunking):
        assert _stream(_client()) == TEXT
    [x] = cassette.interactions
    result = ssemock.accumulate(framing.decode(x.response.body, "text/event-stream"), url=x.request.url)
    assert (result.protocol, result.text, result.finish_reason, result.complete) == (
        "openai.completions",
        TEXT,
        "stop",
        True,
    )
    assert result.usage == {"prompt_tokens": 5}


def test_an_error_event_is_the_sdks_api_error() -> None:
    """The fault writes this protocol's own error event: the SDK raises it mid-stream."""
    cassette = _synth()
    [x] = cassette.interactions
    found = ssemock.protocols.for_response(x.request.url, x.response.headers, x.response.body)
    assert found is openai_completions.PROTOCOL
    with ssemock.replay(cassette, faults=ssemock.faults.error_event("server_error", after_event=2)):
        with pytest.raises(openai.APIError):
            _stream(_client())
    error = openai_completions.PROTOCOL.error_event(StreamError(kind="server_error", message="boom"))
    first = x.response.body.split(b"\n\n", 1)[0] + b"\n\n"
    result = ssemock.accumulate(framing.decode(first + error, "text/event-stream"), "openai.completions")
    assert result.error == {"message": "boom", "type": "server_error", "param": None, "code": None}


@pytest.mark.parametrize(
    ("status", "exception"), [(429, openai.RateLimitError), (500, openai.InternalServerError)]
)
def test_the_http_error_body_is_the_sdks_own_exception(status: int, exception: type[Exception]) -> None:
    body = openai_completions.PROTOCOL.http_error(status, "nope")
    with ssemock.replay(_synth(), faults=ssemock.faults.http_error(status, body=body.body)):
        with pytest.raises(exception, match="nope"):
            _stream(_client())


def _event(payload: object) -> ServerSentEvent:
    return ServerSentEvent(data=json.dumps(payload))


def test_detection_is_by_the_events_and_a_choice_without_index_is_choice_0() -> None:
    chunk = {"choices": [{"text": "Hi", "index": 0, "finish_reason": None}]}
    last = {"choices": [{"delta": {}, "finish_reason": "stop"}]}  # a compatible server's last chunk
    assert ssemock.detect_protocol([_event(chunk)]) == "openai.completions"
    result = ssemock.accumulate(
        [_event(chunk), _event(last), ServerSentEvent(data="[DONE]")], "openai.completions"
    )
    assert (result.text, result.finish_reason, result.complete) == ("Hi", "stop", True)
    chat = {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": "Hi"}}]}
    assert ssemock.detect_protocol([_event(chat)]) == "openai.chat"
    with pytest.raises(ssemock.ProtocolError, match="cannot detect"):  # Writer answers at /v1/completions too
        ssemock.detect_protocol([_event({"value": "Hi"})], url="https://api.writer.com/v1/completions")
