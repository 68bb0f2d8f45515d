"""The fixture's expectations turn decoding and accumulation bugs into clear failures.

Each bug class is a small hand-written "buggy client"; it FAILS under some chunking with a
message that names the chunking and where the boundaries fell, while a correct client (and the
real SDKs, and httpx-sse) PASSES under every chunking and transform.
"""

from __future__ import annotations

import json
from typing import Any

import anthropic
import httpx
import httpx_sse
import openai
import pytest
from streams import TEXT, TOOL_ARGS, anthropic_events, openai_chat_events, writes

import ssemock
from ssemock.plan.expect import StreamAssertionError

URL = "https://api.openai.com/v1/chat/completions"
MATRIX = [(c.name, t) for c in ssemock.chunking.ALL for t in (None, "crlf", "cr", "keepalive", "no_space")]


def chat_cassette(events: list[bytes]) -> ssemock.Cassette:
    c = ssemock.Cassette()
    c.add("POST", URL, writes(events))
    return c


def chunk(
    delta: dict[str, Any] | None = None, index: int = 0, finish: str | None = None, **extra: Any
) -> bytes:
    choices = [] if delta is None else [{"index": index, "delta": delta, "finish_reason": finish}]
    obj = {
        "id": "c",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": choices,
        **extra,
    }
    return f"data: {json.dumps(obj, ensure_ascii=False)}\n\n".encode()


# -- clients ------------------------------------------------------------------------------------


def naive_split_client() -> str:
    """The classic: decode each chunk, split on 'data: ', skip what doesn't parse."""
    text = ""
    with httpx.Client() as client, client.stream("POST", URL) as r:
        for raw in r.iter_bytes():
            try:
                parts = raw.decode().split("data: ")
            except UnicodeDecodeError:
                continue
            for part in parts:
                try:
                    text += json.loads(part)["choices"][0]["delta"].get("content") or ""
                except (ValueError, TypeError, KeyError):
                    continue
    return text


def iter_lines_client() -> str:
    """Uses iter_lines(), whose splitlines() semantics also break at U+2028 and U+0085."""
    text = ""
    with httpx.Client() as client, client.stream("POST", URL) as r:
        for line in r.iter_lines():
            if line.startswith("data: ") and line != "data: [DONE]":
                text += json.loads(line[6:])["choices"][0]["delta"].get("content") or ""
    return text


def correct_client() -> tuple[str, list[dict[str, Any]]]:
    """httpx-sse + an accumulator that sets id/name once and keys tool calls by index."""
    text, calls = "", {}
    with httpx.Client() as client, httpx_sse.connect_sse(client, "POST", URL) as source:
        for sse in source.iter_sse():
            if sse.data == "[DONE]":
                break
            for choice in json.loads(sse.data)["choices"]:
                delta = choice["delta"]
                text += delta.get("content") or ""
                for call in delta.get("tool_calls") or []:
                    slot = calls.setdefault(call["index"], {"name": "", "arguments": ""})
                    slot["name"] = slot["name"] or call.get("function", {}).get("name") or ""
                    slot["arguments"] += call.get("function", {}).get("arguments") or ""
    return text, [calls[k] for k in sorted(calls)]


# -- the bug classes ----------------------------------------------------------------------------


@pytest.mark.parametrize("chunking", ["mid_line", "mid_utf8", "bytewise"])
def test_naive_split_decoder_fails_loudly(chunking: str) -> None:
    with ssemock.replay(chat_cassette(openai_chat_events()), chunking=chunking) as player:
        got = naive_split_client()
    with pytest.raises(StreamAssertionError) as info:
        player.assert_text(got)
    message = str(info.value)
    assert f"under chunking {chunking}" in message
    assert "comes from event" in message and "bytes" in message
    if chunking == "mid_utf8":
        assert "a boundary splits" in message


def test_naive_split_decoder_passes_only_when_chunks_are_whole_events() -> None:
    with ssemock.replay(chat_cassette(openai_chat_events()), chunking="per_event") as player:
        player.assert_text(naive_split_client())


@pytest.mark.parametrize("separator", ["\u2028", "\u0085"])
def test_iter_lines_decoder_breaks_on_unicode_line_separators(separator: str) -> None:
    events = [chunk({"content": f"one{separator}two"}), chunk({}, finish="stop"), b"data: [DONE]\n\n"]
    with ssemock.replay(chat_cassette(events)) as player:
        with pytest.raises(json.JSONDecodeError):
            iter_lines_client()
    with ssemock.replay(chat_cassette(events)) as player:
        text, _ = correct_client()
    player.assert_text(text)
    assert text == f"one{separator}two"


def test_usage_only_final_chunk_crashes_choices_0() -> None:
    events = [
        chunk({"content": "hi"}),
        chunk({}, finish="stop"),
        chunk(None, usage={"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}),
        b"data: [DONE]\n\n",
    ]
    with ssemock.replay(chat_cassette(events)):
        with pytest.raises(IndexError):
            client = openai.OpenAI(api_key="sk-test-usage")
            for c in client.chat.completions.create(
                model="m", messages=[], stream=True, stream_options={"include_usage": True}
            ):
                c.choices[0]
    with ssemock.replay(chat_cassette(events)) as player:
        text, _ = correct_client()
    player.assert_text(text)
    player.assert_accumulates(
        {"usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}, "complete": True}
    )


def test_repeated_tool_call_id_and_name_are_not_concatenated() -> None:
    events = [
        chunk(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": TOOL_ARGS[i : i + 5]},
                    }
                ]
            }
        )
        for i in range(0, len(TOOL_ARGS), 5)
    ] + [chunk({}, finish="tool_calls"), b"data: [DONE]\n\n"]
    with ssemock.replay(chat_cassette(events)) as player:
        buggy: dict[int, dict[str, str]] = {}
        with httpx.Client() as client, httpx_sse.connect_sse(client, "POST", URL) as source:
            for sse in source.iter_sse():
                if sse.data == "[DONE]":
                    break
                for choice in json.loads(sse.data)["choices"]:
                    for call in choice["delta"].get("tool_calls") or []:
                        slot = buggy.setdefault(call["index"], {"name": "", "arguments": ""})
                        slot["name"] += call["function"].get("name") or ""  # the bug
                        slot["arguments"] += call["function"].get("arguments") or ""
    with pytest.raises(StreamAssertionError, match="name='get_weatherget_weather"):
        player.assert_tool_calls(list(buggy.values()))
    with ssemock.replay(chat_cassette(events)) as player:
        _, calls = correct_client()
    player.assert_tool_calls(calls)
    player.assert_tool_calls([{"name": "get_weather", "arguments": json.loads(TOOL_ARGS)}])


def test_n2_choices_out_of_order() -> None:
    events = [
        chunk({"content": "B1"}, index=1),
        chunk({"content": "A1"}, index=0),
        chunk({"content": "B2"}, index=1),
        chunk({"content": "A2"}, index=0),
        b"data: [DONE]\n\n",
    ]
    with ssemock.replay(chat_cassette(events)) as player:
        texts: list[str] = []  # the bug: a list appended in arrival order
        with httpx.Client() as client, httpx_sse.connect_sse(client, "POST", URL) as source:
            for sse in source.iter_sse():
                if sse.data != "[DONE]":
                    choice = json.loads(sse.data)["choices"][0]
                    if len(texts) <= choice["index"]:
                        texts.append("")
                    texts[min(choice["index"], len(texts) - 1)] += choice["delta"]["content"]
    with pytest.raises(StreamAssertionError, match="choice 0 differs"):
        player.assert_text(texts[0], choice=0)
    player.assert_accumulates(
        {
            "choices": [
                {
                    "index": 0,
                    "text": "A1A2",
                    "refusal": "",
                    "tool_calls": [],
                    "finish_reason": None,
                    "thinking": "",
                    "signature": "",
                },
                {
                    "index": 1,
                    "text": "B1B2",
                    "refusal": "",
                    "tool_calls": [],
                    "finish_reason": None,
                    "thinking": "",
                    "signature": "",
                },
            ]
        }
    )


# -- the correct clients pass the whole matrix --------------------------------------------------


@pytest.mark.parametrize("chunking, transform", MATRIX)
def test_correct_client_and_sdk_pass_every_chunking_and_transform(
    chunking: str, transform: str | None
) -> None:
    cassette = chat_cassette(openai_chat_events())
    with ssemock.replay(cassette, chunking=chunking, transform=transform) as player:
        text, calls = correct_client()
    player.assert_text(text)
    player.assert_tool_calls(calls)
    with ssemock.replay(cassette, chunking=chunking, transform=transform) as player:
        client = openai.OpenAI(api_key="sk-test-matrix")
        got = list(client.chat.completions.create(model="m", messages=[], stream=True))
    player.assert_text("".join(c.choices[0].delta.content or "" for c in got if c.choices))
    assert player.expected.text == TEXT
    with ssemock.replay(cassette, chunking=chunking, transform=transform) as player:
        with httpx.Client() as client, httpx_sse.connect_sse(client, "POST", URL) as source:
            player.assert_events(list(source.iter_sse()))


def test_assert_events_message_names_event_and_boundaries() -> None:
    with ssemock.replay(chat_cassette(openai_chat_events()), chunking="fixed:5") as player:
        with httpx.Client() as client, httpx_sse.connect_sse(client, "POST", URL) as source:
            got = [(e.event, e.data) for e in source.iter_sse()]
    player.assert_events(got)
    with pytest.raises(
        StreamAssertionError,
        match=r"expected 16 events .* got 15; the first missing is \(.message., .\[DONE\].\)",
    ):
        player.assert_events(got[:-1])
    got[2] = ("message", "tampered")
    with pytest.raises(StreamAssertionError, match=r"event 2 differs under chunking fixed:5") as info:
        player.assert_events(got)
    assert "chunk boundaries inside it at: 385, 390, 395" in str(info.value)


def test_expected_before_anything_served_is_a_clear_error() -> None:
    with ssemock.replay(ssemock.Cassette()) as player:
        with pytest.raises(StreamAssertionError, match="nothing was served or recorded yet"):
            _ = player.expected


def test_truncate_makes_accumulate_report_an_unterminated_stream() -> None:
    with ssemock.replay(chat_cassette(openai_chat_events()), faults=["truncate"]) as player:
        text, _ = correct_client()
    player.assert_text(text)
    assert player.expected.result.complete is False
    with ssemock.replay(chat_cassette(openai_chat_events())) as player:
        correct_client()
    assert player.expected.result.complete is True


def test_fixture_assertions_in_a_marked_test(pytester: pytest.Pytester) -> None:
    c = chat_cassette(openai_chat_events())
    c.save(pytester.path / "cassettes" / "test_fx" / "test_chat.json")
    pytester.makepyfile(
        test_fx="""
import openai, pytest

@pytest.mark.ssemock(chunking="all", transform="crlf")
def test_chat(ssemock):
    client = openai.OpenAI(api_key="sk-test-fixture")
    stream = client.chat.completions.create(model="m", messages=[], stream=True)
    text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    ssemock.assert_text(text)
    ssemock.assert_text(text[:-1])  # fails on purpose, with the chunking named
"""
    )
    result = pytester.runpytest_inprocess()
    result.assert_outcomes(failed=len(ssemock.chunking.ALL))
    out = result.stdout.str()
    assert "differs under chunking mid_utf8, transform crlf" in out


def test_check_reports_the_minimal_failing_split() -> None:
    cassette = chat_cassette(openai_chat_events())
    with ssemock.replay(cassette, chunking="mid_utf8") as player:
        with pytest.raises(StreamAssertionError) as info:
            player.check(lambda: player.assert_text(naive_split_client()))
    message = str(info.value)
    assert "under mid_utf8 it fails when a boundary falls at byte" in message
    assert "passes with that boundary alone removed" in message
    name = message.rsplit('reproduce with chunking="', 1)[1].split('"')[0]
    assert name.startswith("at:") and name.count(",") == 0  # one boundary is enough
    # the name reproduces the failure on its own
    with ssemock.replay(cassette, chunking=name) as again:
        with pytest.raises(StreamAssertionError):
            again.assert_text(naive_split_client())
    with ssemock.replay(cassette, chunking="per_event") as fine:
        fine.check(lambda: fine.assert_text(naive_split_client()))  # passes: returns quietly


ANTHROPIC_URL = "https://api.anthropic.com/v1/messages"


@pytest.mark.parametrize("chunking, transform", MATRIX)
def test_anthropic_sdk_passes_every_chunking_and_transform(chunking: str, transform: str | None) -> None:
    cassette = ssemock.Cassette()
    cassette.add("POST", ANTHROPIC_URL, writes(anthropic_events()))
    with ssemock.replay(cassette, chunking=chunking, transform=transform) as player:
        client = anthropic.Anthropic(api_key="sk-ant-test-matrix")
        with client.messages.stream(model="m", max_tokens=8, messages=[]) as stream:
            message = stream.get_final_message()
    player.assert_text("".join(b.text for b in message.content if b.type == "text"))
    player.assert_tool_calls(
        [{"name": b.name, "arguments": b.input} for b in message.content if b.type == "tool_use"]
    )
    assert player.expected.result.usage == {"input_tokens": 10, "output_tokens": 42}
