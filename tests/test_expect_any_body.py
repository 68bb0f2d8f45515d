"""The reference never crashes on a body ssemock serves: plain and pretty JSON bodies, HTTP
error bodies (ssemock's own), empty bodies, and streams a fault cut short in every framing; of a
cut stream it reports what a conforming client gets and that it was cut."""

from __future__ import annotations

import httpx
import pytest

import ssemock
from ssemock import framing, protocols

TEXT = "Streams are cut where they are cut. 切れる。"


def _read(cassette: ssemock.Cassette, method: str = "POST") -> tuple[int, bytes]:
    x = cassette.interactions[0]
    got = bytearray()
    with httpx.Client() as client, client.stream(method, x.request.url, content=x.request.body) as response:
        try:
            for chunk in response.iter_bytes():
                got += chunk
        except httpx.RemoteProtocolError:
            pass
        return response.status_code, bytes(got)


STREAMS = {
    "ollama.chat": lambda: ssemock.synth.ollama_chat(TEXT, seed=1),
    "gemini json_array": lambda: protocols.get("gemini.generate_content").synthesize(
        TEXT, alt_sse=False, seed=1
    ),
    "bedrock.converse": lambda: protocols.get("bedrock.converse").synthesize(TEXT, seed=1),
    "openai.chat": lambda: ssemock.synth.openai_chat(TEXT, seed=1),
}
CUTS = ["disconnect:after_byte=77", "truncate:at=mid_event", "disconnect:after_event=2", "truncate"]


@pytest.mark.parametrize("fault", CUTS)
@pytest.mark.parametrize("stream", list(STREAMS))
def test_a_cut_stream_gives_its_whole_events_and_says_it_was_cut(stream: str, fault: str) -> None:
    cassette = STREAMS[stream]()
    body = cassette.interactions[0].response.body
    with ssemock.replay(cassette, faults=fault) as player:
        _, got = _read(cassette)
        expected = player.expected
        assert expected.cut and got == body[: len(got)] and len(got) < len(body)
        kind = framing.get(expected.framing)
        ends = kind.event_ends(got)
        assert expected.events == (
            kind.decode(got[: ends[-1]]) if ends else []
        )  # the unfinished event dropped
        result = expected.result
        assert result.complete is False and TEXT.startswith(result.text)
        player.assert_text(result.text)  # a client that kept what it got passes
        if result.text != TEXT:  # (a truncate that drops only the terminator keeps the whole text)
            with pytest.raises(ssemock.StreamAssertionError):
                player.assert_text(TEXT)


@pytest.mark.parametrize(
    "url",
    [
        "https://generativelanguage.googleapis.com/v1beta/models/m:streamGenerateContent",  # pretty-printed
        "https://api.openai.com/v1/chat/completions",
        "http://127.0.0.1:11434/api/chat",
        "https://api.anthropic.com/v1/messages",
    ],
)
def test_ssemocks_own_http_error_body_is_an_error_result_not_a_crash(url: str) -> None:
    cassette = ssemock.Cassette()
    cassette.add("POST", url, [b"data: {}\n\n"], headers={"content-type": "text/event-stream"})
    with ssemock.replay(cassette, faults="http_error:status=429") as player:
        status, body = _read(cassette)
        assert status == 429
        expected = player.expected
        assert not expected.stream and expected.framing == "json"
        assert expected.events == [__import__("orjson").loads(body)]
        assert expected.result.error and expected.result.complete is False
        player.assert_text("")
        player.assert_accumulates({"complete": False, "text": ""})


@pytest.mark.parametrize(
    "body, content_type",
    [
        (b'{\n  "id": "chatcmpl-1",\n  "choices": [{"message": {"content": "hi"}}]\n}\n', "application/json"),
        (b'{"ok": true}', "application/json"),
        (b"", "application/json"),
        (b"", "text/event-stream"),
    ],
)
def test_plain_and_empty_bodies(body: bytes, content_type: str) -> None:
    cassette = ssemock.Cassette()
    cassette.add(
        "GET",
        "https://api.example.test/v1/thing",
        [body] if body else [],
        headers={"content-type": content_type},
    )
    with ssemock.replay(cassette) as player:
        _, got = _read(cassette, "GET")
        expected = player.expected
        assert got == body and not expected.stream and not expected.cut
        assert expected.events == ([__import__("orjson").loads(body)] if body else [])
        assert expected.result.complete is True and expected.result.error is None
        player.assert_events(expected.events)
