"""ssemock.synth: synthesized streams accumulate back to what they were made from, in the
providers' documented event formats, with realistic writes and deterministic bytes."""

from __future__ import annotations

import json
import random
import string
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from seeded import nested, scalars, seeded, sized, text, unicode_text

import ssemock
from ssemock import cassettes, chunking, ndjson, sse, synth
from ssemock.accumulate import Accumulated, accumulate

# -- strategies ------------------------------------------------------------------------------

# texts and tool calls built from a drawn seed (tests/seeded.py: drawn character by character and
# leaf by leaf, and names from regexes, they were most of these tests' CPU, issue 48 item 4)
TEXT = seeded(unicode_text(40))
SHORT = seeded(unicode_text(8))
_VALUE = nested(scalars(-(2**53), 2**53, text(max_size=8)), text(max_size=8), leaves=8, width=3)
_NAME_START = string.ascii_lowercase + "_"
_NAME_CHARS = _NAME_START + string.digits
_ID_CHARS = string.ascii_letters + string.digits


def _call(rng: random.Random) -> dict[str, Any]:
    """A tool call: a name (``[a-z_][a-z0-9_]{0,15}``), an object of JSON values as its arguments
    and, half the time, an id (``call_[A-Za-z0-9]{1,12}``)."""
    name = rng.choice(_NAME_START) + "".join(rng.choices(_NAME_CHARS, k=sized(rng, 15)))
    call: dict[str, Any] = {
        "name": name,
        "arguments": {text(max_size=8)(rng): _VALUE(rng) for _ in range(rng.randint(0, 4))},
    }
    if rng.random() < 0.5:
        call["id"] = "call_" + "".join(rng.choices(_ID_CHARS, k=1 + sized(rng, 11)))
    return call


CALLS = seeded(lambda rng: [_call(rng) for _ in range(sized(rng, 3))])
SEED = st.integers(0, 2**16)
CHUNK_SIZE = st.integers(1, 9)
COUNT = st.integers(0, 10**6)
OPENAI_USAGE = st.none() | st.fixed_dictionaries(
    {"prompt_tokens": COUNT, "completion_tokens": COUNT, "total_tokens": COUNT}
)
RESPONSES_USAGE = st.none() | st.fixed_dictionaries(
    {
        "input_tokens": COUNT,
        "output_tokens": COUNT,
        "total_tokens": COUNT,
        "input_tokens_details": st.fixed_dictionaries({"cached_tokens": COUNT}),
    }
)
ANTHROPIC_USAGE = st.none() | st.fixed_dictionaries(
    {"input_tokens": COUNT, "output_tokens": COUNT},
    optional={"cache_read_input_tokens": COUNT, "cache_creation_input_tokens": COUNT},
)
OLLAMA_USAGE = st.none() | st.fixed_dictionaries(
    {"prompt_eval_count": COUNT, "eval_count": COUNT, "total_duration": COUNT}
)
CITATION = st.fixed_dictionaries(
    {
        "type": st.just("char_location"),
        "cited_text": TEXT,
        "document_index": st.integers(0, 3),
        "document_title": SHORT,
        "start_char_index": st.integers(0, 100),
        "end_char_index": st.integers(0, 100),
    }
)

ROUND_TRIP = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def folded(cassette: ssemock.Cassette, strategy: chunking.Chunking = chunking.as_recorded) -> Accumulated:
    """accumulate(decode(...)) of the cassette's only response, cut by ``strategy``."""
    (x,) = cassette.interactions
    content_type = x.response.header("content-type") or ""
    chunks = strategy(x.response.body, x.response.ends)
    events = ndjson.decode(chunks) if "ndjson" in content_type else sse.decode(chunks)
    return accumulate(events, url=x.request.url, content_type=content_type)


def assert_calls(result: Accumulated, calls: list[dict[str, Any]]) -> None:
    assert [(c.name, c.parsed_arguments) for c in result.tool_calls] == [
        (c["name"], c["arguments"]) for c in calls
    ]
    for got, want in zip(result.tool_calls, calls):
        if "id" in want:
            assert got.id == want["id"]
        assert got.id  # every provider gives (or synth makes up) an id


# -- round trips: accumulate(decode(synth(x))) == x ----------------------------------------------


@ROUND_TRIP
@given(
    texts=st.lists(TEXT, min_size=1, max_size=3),
    calls=CALLS,
    usage=OPENAI_USAGE,
    refusal=st.none() | TEXT,
    finish=st.sampled_from([None, "stop", "length", "content_filter"]),
    include_usage=st.booleans(),
    repeat=st.booleans(),
    out_of_order=st.booleans(),
    azure=st.booleans(),
    interleave=st.booleans(),
    size=CHUNK_SIZE,
    seed=SEED,
)
def test_openai_chat_round_trip(
    texts: list[str],
    calls: list[dict[str, Any]],
    usage: dict[str, Any] | None,
    refusal: str | None,
    finish: str | None,
    include_usage: bool,
    repeat: bool,
    out_of_order: bool,
    azure: bool,
    interleave: bool,
    size: int,
    seed: int,
) -> None:
    cassette = synth.openai_chat(
        texts,
        n=len(texts),
        tool_calls=calls,
        usage=usage,
        refusal=refusal,
        finish_reason=finish,
        include_usage=include_usage,
        repeat_tool_ids=repeat,
        choices_out_of_order=out_of_order,
        content_filter=azure,
        interleave_tool_calls=interleave,
        chunk_size=size,
        seed=seed,
    )
    result = folded(cassette)
    assert result.complete and result.error is None
    assert [c.index for c in result.choices] == list(range(len(texts)))
    assert [c.text for c in result.choices] == texts
    assert_calls(result, calls)
    assert result.refusal == (refusal or "")
    assert result.finish_reason == (finish or ("tool_calls" if calls else "stop"))
    if usage is not None:
        assert result.usage == usage
    elif not include_usage:
        assert result.usage is None
    assert folded(cassette, chunking.random(seed)).to_dict() == result.to_dict()


@ROUND_TRIP
@given(text=TEXT, calls=CALLS, usage=RESPONSES_USAGE, size=CHUNK_SIZE, seed=SEED)
def test_openai_responses_round_trip(
    text: str, calls: list[dict[str, Any]], usage: dict[str, Any] | None, size: int, seed: int
) -> None:
    cassette = synth.openai_responses(text, tool_calls=calls, usage=usage, chunk_size=size, seed=seed)
    result = folded(cassette)
    assert result.complete and result.protocol == "openai.responses"
    assert result.text == text
    assert_calls(result, calls)
    assert result.finish_reason == "completed"
    if usage is not None:
        assert result.usage == usage
    assert folded(cassette, chunking.bytewise).to_dict() == result.to_dict()


@ROUND_TRIP
@given(
    text=TEXT,
    calls=CALLS,
    thinking=st.none() | TEXT,
    signature=st.none() | st.text("abcXYZ019+/=", min_size=1),
    citations=st.none() | st.lists(CITATION, min_size=1, max_size=2),
    usage=ANTHROPIC_USAGE,
    ping=st.booleans() | st.integers(1, 5),
    error=st.none() | st.sampled_from(["overloaded_error", "api_error"]),
    size=CHUNK_SIZE,
    seed=SEED,
)
def test_anthropic_messages_round_trip(
    text: str,
    calls: list[dict[str, Any]],
    thinking: str | None,
    signature: str | None,
    citations: list[dict[str, Any]] | None,
    usage: dict[str, Any] | None,
    ping: bool | int,
    error: str | None,
    size: int,
    seed: int,
) -> None:
    if thinking is None:
        signature = None
    cassette = synth.anthropic_messages(
        text,
        tool_calls=calls,
        thinking=thinking,
        signature=signature,
        citations=citations,
        usage=usage,
        ping=ping,
        error=error,
        chunk_size=size,
        seed=seed,
    )
    result = folded(cassette)
    assert result.protocol == "anthropic.messages"
    assert result.text == text
    assert_calls(result, calls)
    assert result.thinking == (thinking or "")
    if signature is not None:
        assert result.signature == signature
    assert bool(result.signature) == (thinking is not None)
    assert result.citations == (citations or [])
    if error is None:
        assert result.complete and result.error is None
        assert result.finish_reason == ("tool_use" if calls else "end_turn")
        if usage is not None:
            assert result.usage == usage
    else:
        assert not result.complete and result.error is not None and result.error["type"] == error
    assert folded(cassette, chunking.mid_utf8).to_dict() == result.to_dict()


@ROUND_TRIP
@given(text=TEXT, calls=CALLS, thinking=st.none() | TEXT, usage=OLLAMA_USAGE, size=CHUNK_SIZE, seed=SEED)
def test_ollama_chat_round_trip(
    text: str,
    calls: list[dict[str, Any]],
    thinking: str | None,
    usage: dict[str, Any] | None,
    size: int,
    seed: int,
) -> None:
    cassette = synth.ollama_chat(
        text, tool_calls=calls, thinking=thinking, usage=usage, chunk_size=size, seed=seed
    )
    result = folded(cassette)
    assert result.complete and result.protocol == "ollama.chat"
    assert result.text == text
    assert_calls(result, calls)
    assert result.thinking == (thinking or "")
    assert result.usage is not None
    for key, value in (usage or {}).items():
        assert result.usage[key] == value
    assert folded(cassette, chunking.mid_line).to_dict() == result.to_dict()


@ROUND_TRIP
@given(text=TEXT, calls=CALLS, usage=OPENAI_USAGE, keepalives=st.integers(0, 4), size=CHUNK_SIZE, seed=SEED)
def test_openrouter_chat_round_trip(
    text: str,
    calls: list[dict[str, Any]],
    usage: dict[str, Any] | None,
    keepalives: int,
    size: int,
    seed: int,
) -> None:
    cassette = synth.openrouter_chat(
        text, tool_calls=calls, usage=usage, keepalives=keepalives, chunk_size=size, seed=seed
    )
    result = folded(cassette)
    assert result.complete and result.protocol == "openai.chat"
    assert result.text == text
    assert_calls(result, calls)
    if usage is not None:
        assert result.usage == usage
    body = cassette.interactions[0].response.body
    assert body.startswith(synth.OPENROUTER_KEEPALIVE * keepalives)
    assert body.count(synth.OPENROUTER_KEEPALIVE) == keepalives


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=TEXT, calls=CALLS, seed=SEED)
def test_the_openai_sdk_agrees_with_a_synthesized_stream(
    text: str, calls: list[dict[str, Any]], seed: int
) -> None:
    cassette = synth.openai_chat(text, tool_calls=calls, seed=seed)
    body = cassette.interactions[0].request.json()
    with ssemock.replay(cassette, chunking=chunking.random(seed)) as player:
        client = openai.OpenAI(api_key="sk-test-synth-0000", max_retries=0)
        got, args = "", {}
        for chunk in client.chat.completions.create(**body):
            for choice in chunk.choices:
                got += choice.delta.content or ""
                for tc in choice.delta.tool_calls or []:
                    slot = args.setdefault(tc.index, {"name": "", "arguments": ""})
                    slot["name"] = slot["name"] or (tc.function and tc.function.name) or ""
                    slot["arguments"] += (tc.function and tc.function.arguments) or ""
    assert got == text
    player.assert_text(got)
    player.assert_tool_calls(
        [{"name": a["name"], "arguments": json.loads(a["arguments"])} for _, a in sorted(args.items())]
    )


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=TEXT, calls=CALLS, thinking=st.none() | TEXT, seed=SEED)
def test_the_anthropic_sdk_agrees_with_a_synthesized_stream(
    text: str, calls: list[dict[str, Any]], thinking: str | None, seed: int
) -> None:
    cassette = synth.anthropic_messages(text, tool_calls=calls, thinking=thinking, seed=seed)
    params = {k: v for k, v in cassette.interactions[0].request.json().items() if k != "stream"}
    with ssemock.replay(cassette, chunking=chunking.random(seed)):
        client = anthropic.Anthropic(api_key="sk-ant-test-synth-0000", max_retries=0)
        with client.messages.stream(**params) as stream:
            message = stream.get_final_message()
    assert "".join(b.text for b in message.content if b.type == "text") == text
    assert [(b.name, b.input) for b in message.content if b.type == "tool_use"] == [
        (c["name"], c["arguments"]) for c in calls
    ]
    assert "".join(b.thinking for b in message.content if b.type == "thinking") == (thinking or "")


# -- the documented formats ---------------------------------------------------------------------


def _data(cassette: ssemock.Cassette) -> list[Any]:
    return [
        e.data if e.data == "[DONE]" else json.loads(e.data)
        for e in sse.decode([cassette.interactions[0].response.body])
    ]


def test_openai_chat_chunks() -> None:
    cassette = synth.openai_chat(
        "Hello there", tool_calls=[{"name": "f", "arguments": {"a": 1}}], include_usage=True
    )
    (x,) = cassette.interactions
    assert x.request.method == "POST" and x.request.url == synth.OPENAI_CHAT_URL
    body = x.request.json()
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["model"] == "gpt-4o-mini" and body["messages"] == [
        {"role": "user", "content": synth.DEFAULT_PROMPT}
    ]
    assert body["tools"][0]["function"]["name"] == "f"
    assert x.response.header("content-type") == "text/event-stream; charset=utf-8"
    assert x.response.header(synth.SOURCE_HEADER) == synth.SYNTH_SOURCE
    data = _data(cassette)
    assert data[-1] == "[DONE]"
    chunks = data[:-1]
    assert all(c["object"] == "chat.completion.chunk" and c["id"] == chunks[0]["id"] for c in chunks)
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": "", "refusal": None}
    assert all(c["usage"] is None for c in chunks[:-1])
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["total_tokens"] > 0
    first_call = next(
        c["choices"][0]["delta"]["tool_calls"][0] for c in chunks if "tool_calls" in c["choices"][0]["delta"]
    )
    assert first_call == {
        "index": 0,
        "id": first_call["id"],
        "type": "function",
        "function": {"name": "f", "arguments": ""},
    }
    assert chunks[-2]["choices"][0]["finish_reason"] == "tool_calls"


def test_openai_chat_n2_out_of_order_and_repeated_ids() -> None:
    data = _data(synth.openai_chat(["a b c d", "e f g h"], n=2, choices_out_of_order=True))
    indexes = [c["choices"][0]["index"] for c in data[:-1]]
    assert indexes[0] == 1 and sorted(set(indexes)) == [0, 1] and indexes != sorted(indexes)
    data = _data(
        synth.openai_chat(tool_calls=[{"name": "f", "arguments": {"long": "x" * 40}}], repeat_tool_ids=True)
    )
    deltas = [
        c["choices"][0]["delta"]["tool_calls"][0]
        for c in data[:-1]
        if "tool_calls" in c["choices"][0]["delta"]
    ]
    assert len(deltas) > 3 and all(
        d["id"] and d["function"]["name"] == "f" and d["type"] == "function" for d in deltas
    )


def test_azure_content_filter_shape() -> None:
    cassette = synth.openai_chat("Hi", content_filter=True, finish_reason="content_filter")
    assert cassette.interactions[0].request.url.startswith(
        "https://example-resource.openai.azure.com/openai/deployments/"
    )
    data = _data(cassette)
    assert data[0]["choices"] == [] and data[0]["prompt_filter_results"][0]["prompt_index"] == 0
    assert list(data[1]) == sorted(data[1])  # Azure sends sorted keys
    assert all("content_filter_results" in c["choices"][0] for c in data[1:-1])
    assert data[-2]["choices"][0]["content_filter_results"]["violence"]["filtered"] is True


def test_responses_event_sequence() -> None:
    cassette = synth.openai_responses("Hi!", tool_calls=[{"name": "f", "arguments": {"x": 1}}])
    events = sse.decode([cassette.interactions[0].response.body])
    kinds = [e.event for e in events]
    assert kinds == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        *["response.output_text.delta"] * (len([k for k in kinds if k == "response.output_text.delta"])),
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.output_item.added",
        *["response.function_call_arguments.delta"]
        * len([k for k in kinds if k == "response.function_call_arguments.delta"]),
        "response.function_call_arguments.done",
        "response.output_item.done",
        "response.completed",
    ]
    payloads = [json.loads(e.data) for e in events]
    assert [p["sequence_number"] for p in payloads] == list(range(len(payloads)))
    assert all(p["type"] == e.event for p, e in zip(payloads, events))
    assert payloads[-1]["response"]["status"] == "completed" and len(payloads[-1]["response"]["output"]) == 2
    assert cassette.interactions[0].request.json()["input"] == [
        {"role": "user", "content": synth.DEFAULT_PROMPT}
    ]


def test_anthropic_event_sequence() -> None:
    cassette = synth.anthropic_messages(
        "Hi", thinking="hmm", tool_calls=[{"name": "f", "arguments": {"x": 1}}]
    )
    events = sse.decode([cassette.interactions[0].response.body])
    kinds = [e.event for e in events]
    assert kinds[:3] == ["message_start", "content_block_start", "ping"]
    assert kinds[-2:] == ["message_delta", "message_stop"]
    assert all(json.loads(e.data)["type"] == e.event for e in events)
    blocks = [json.loads(e.data)["content_block"]["type"] for e in events if e.event == "content_block_start"]
    assert blocks == ["thinking", "text", "tool_use"]
    deltas = [json.loads(e.data)["delta"]["type"] for e in events if e.event == "content_block_delta"]
    assert deltas.index("signature_delta") == deltas.count("thinking_delta")
    assert "input_json_delta" in deltas
    body = cassette.interactions[0].request.json()
    assert body["max_tokens"] > body["thinking"]["budget_tokens"]
    assert dict(cassette.interactions[0].request.headers)["anthropic-version"] == "2023-06-01"
    errored = synth.anthropic_messages("Hi", error="overloaded_error")
    last = sse.decode([errored.interactions[0].response.body])[-1]
    assert last.event == "error" and json.loads(last.data) == {
        "type": "error",
        "error": {"type": "overloaded_error", "message": "Overloaded"},
    }


def test_ollama_lines() -> None:
    cassette = synth.ollama_chat(
        "Hi there", thinking="hmm", tool_calls=[{"name": "f", "arguments": {"x": 1}}]
    )
    (x,) = cassette.interactions
    assert x.request.url == synth.OLLAMA_URL and x.response.header("content-type") == "application/x-ndjson"
    lines = ndjson.decode([x.response.body])
    assert all(line["done"] is False for line in lines[:-1]) and lines[-1]["done"] is True
    assert lines[-1]["done_reason"] == "stop" and lines[-1]["eval_count"] > 0
    assert any(line["message"].get("tool_calls") for line in lines)
    assert x.response.body.count(b"\n") == len(lines) and x.response.body.endswith(b"\n")
    assert x.request.json()["think"] is True


# -- writes and times --------------------------------------------------------------------------


def test_writes_group_events_and_sometimes_cut_mid_line() -> None:
    for name in sorted(synth.LIBRARY):
        x = synth.library_cassette(name).interactions[0]
        assert b"".join(x.response.chunks) == x.response.body
    x = synth.openai_chat("A longer text, so that there are plenty of events to group. " * 3).interactions[0]
    ends = chunking.event_ends(x.response.body, sse=True)
    assert len(x.response.chunks) < len(ends)  # several events per write sometimes
    mid_line = [e for e in x.response.ends if e not in ends]
    assert mid_line and all(x.response.body[e - 1 : e] != b"\n" for e in mid_line)


def test_times_follow_first_token_and_gap() -> None:
    x = synth.openai_chat("Some text to stream here.", gap=0.05, first_token=0.4).interactions[0]
    assert x.response.times == pytest.approx([0.4 + 0.05 * k for k in range(len(x.response.times))])
    x = synth.openrouter_chat("Hi", keepalives=3, first_token=0.8, gap=0.02).interactions[0]
    assert x.response.times[:4] == pytest.approx([0.2, 0.4, 0.6, 0.8])


def test_deterministic_for_a_seed() -> None:
    for make in (
        synth.openai_chat,
        synth.openai_responses,
        synth.anthropic_messages,
        synth.ollama_chat,
        synth.openrouter_chat,
    ):
        a, b = make("Deterministic text, please.", seed=3), make("Deterministic text, please.", seed=3)
        assert a.dumps() == b.dumps()
        assert make("Deterministic text, please.", seed=4).dumps() != a.dumps()


def test_bad_input_is_refused() -> None:
    with pytest.raises(ValueError, match="tool_calls\\[0\\]"):
        synth.openai_chat(tool_calls=[{"arguments": {}}])
    with pytest.raises(ValueError, match="not JSON"):
        synth.openai_chat(tool_calls=[{"name": "f", "arguments": "{oops"}])
    with pytest.raises(ValueError, match="n=3 but 2 texts"):
        synth.openai_chat(["a", "b"], n=3)
    with pytest.raises(ValueError, match="gap"):
        synth.anthropic_messages("x", gap=-1)
    with pytest.raises(ValueError, match="chunk_size"):
        synth.ollama_chat("x", chunk_size=0)
    with pytest.raises(ValueError, match="signature needs thinking"):
        synth.anthropic_messages("x", signature="abc")
    with pytest.raises(ValueError, match="output_tokens"):
        synth.anthropic_messages("x", usage={"input_tokens": 1})
    with pytest.raises(ValueError, match="JSON object"):
        synth.ollama_chat(tool_calls=[{"name": "f", "arguments": "[1]"}])


def test_string_arguments_are_streamed_as_given() -> None:
    result = folded(
        synth.openai_chat(tool_calls=[{"name": "f", "arguments": '{"a": [1, 2]}', "id": "call_x"}])
    )
    assert result.tool_calls[0].arguments == '{"a": [1, 2]}' and result.tool_calls[0].id == "call_x"


# -- the library generator ---------------------------------------------------------------------


def test_main_without_a_command_prints_help() -> None:
    assert synth.main([]) == 2
    with pytest.raises(SystemExit):
        synth.main(["--write-library", "no/such"])


def test_write_library_records_through_loopback(tmp_path: Path) -> None:
    """One cassette re-recorded through the loopback server equals the shipped one, times aside."""
    assert synth.main(["--write-library", "--dir", str(tmp_path), "ollama/chat"]) == 0
    new = (tmp_path / "ollama" / "chat.json").read_bytes()
    old = cassettes.path("ollama/chat").read_bytes()
    assert synth._without_times(new) == synth._without_times(old)
    assert new != old  # the times are measured again
    times = ssemock.Cassette.load(tmp_path / "ollama" / "chat.json").interactions[0].response.times
    # The server waits 0.25 s for the first token, then 0.03 s a piece: lower bounds only (a
    # loaded machine delays a read, never hastens one).
    assert all(t >= 0.25 + 0.03 * k - 0.001 for k, t in enumerate(times)) and times == sorted(times)


def test_a_late_recording_is_recorded_again_and_the_most_punctual_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A machine too busy to read on time never fails the library: with every recording counted
    late (PUNCTUAL below zero), each attempt is made and one of them written, chunks as shipped."""
    monkeypatch.setattr(synth, "PUNCTUAL", -1.0)
    made = []
    through_sdk = synth._through_sdk

    def counted(base: str, interaction: Any) -> bool:
        made.append(interaction)
        return through_sdk(base, interaction)

    monkeypatch.setattr(synth, "_through_sdk", counted)
    (path,) = synth.write_library(tmp_path, names=["ollama/chat"], attempts=2)
    assert len(made) == 2
    assert synth._without_times(path.read_bytes()) == synth._without_times(
        cassettes.path("ollama/chat").read_bytes()
    )


def test_event_ids_and_a_charset_less_content_type() -> None:
    plain = synth.openai_chat("Numbered \u2028 events.", seed=4)
    numbered = synth.openai_chat("Numbered \u2028 events.", seed=4, event_ids=True, charset=False)
    response = numbered.interactions[0].response
    assert response.header("content-type") == "text/event-stream"
    assert plain.interactions[0].response.header("content-type") == "text/event-stream; charset=utf-8"
    events = ssemock.sse.decode([response.body])
    assert [e.id for e in events] == [str(n) for n in range(1, len(events) + 1)]
    assert [e.data for e in events] == [
        e.data for e in ssemock.sse.decode([plain.interactions[0].response.body])
    ]
    assert len(response.chunks) == len(plain.interactions[0].response.chunks)  # the same writes, longer
    assert ssemock.accumulate(events, "openai.chat").text == "Numbered \u2028 events."


@pytest.mark.parametrize(
    "name",
    [
        "openai/chat_text",
        "anthropic/messages_text",
        "ollama/chat",
        "openrouter/chat_keepalive",
        "compat/event_ids",
    ],
)
def test_the_library_carries_the_line_separator_hazards(name: str) -> None:
    interaction = ssemock.cassettes.load(name).interactions[0]
    response = interaction.response
    assert all(c in response.body.decode() for c in "\u2028\u2029\u0085")  # raw, as JSON encoders write them
    content_type = response.header("content-type") or ""
    events = ndjson.decode([response.body]) if "ndjson" in content_type else sse.decode([response.body])
    result = accumulate(events, url=interaction.request.url, content_type=content_type)
    assert result.text.endswith(synth.HAZARDS)
