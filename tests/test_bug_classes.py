"""Published streaming bug classes: a vulnerable client fails under the default matrix (every
chunking x every transform of ``transform="all"``) with a message naming the cause, and its
correct twin passes every run of the same matrix."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

import ssemock
from ssemock import cassettes, chunking, synth, transforms

MATCH = ["method", "path"]
Client = Callable[[ssemock.Player], object]


def _variants(cassette: ssemock.Cassette) -> Iterator[tuple[chunking.Chunking, list[transforms.Transform]]]:
    """The default matrix, without the runs whose transform changes nothing (as the plugin skips)."""
    response = cassette.interactions[0].response
    kind = transforms.kind_of(response.header("content-type") or "", response.body)
    for c in chunking.resolve("all"):
        for chain in transforms.alternatives("all"):
            if not chain or any(transforms.applies(t, response.body, kind) for t in chain):
                yield c, chain


def _matrix(cassette: ssemock.Cassette, client: Client, **options: Any) -> dict[str, str]:
    """Run ``client`` under every variant: the failure messages by variant id. The first
    failure goes through ``Player.check`` (shrunk, with the event or boundaries it depends on)."""
    failures: dict[str, str] = {}
    for c, chain in _variants(cassette):
        name = "+".join([c.name, *(t.name for t in chain)])
        with ssemock.replay(cassette, chunking=c, transform=chain, match_on=MATCH,
                            allow_playback_repeats=True, **options) as player:
            try:
                if failures:
                    client(player)
                else:
                    player.check(lambda: client(player))
            except Exception as exc:  # the client's own exception or ssemock's assertion
                failures[name] = f"{type(exc).__name__}: {exc}"
    return failures


def _stream(player: ssemock.Player) -> Any:
    url = player.cassette.interactions[0].request.url
    return httpx.Client().stream("POST", url, json={})


def _chat_text(events: Any) -> str:
    text = ""
    for data in events:
        if data == "[DONE]":
            break
        for choice in json.loads(data)["choices"]:
            text += choice["delta"].get("content") or ""
    return text


def _reference_events(player: ssemock.Player) -> Iterator[str]:
    with _stream(player) as response:
        for event in ssemock.sse.iter_decode(response.iter_bytes()):
            yield event.data


# -- str.splitlines / httpx iter_lines on raw U+2028, U+2029, U+0085 ------------------------------


def _splitlines_chat(player: ssemock.Player) -> None:
    with _stream(player) as response:
        lines = (line[len("data:"):].lstrip(" ") for line in response.iter_lines() if line.startswith("data:"))
        player.assert_text(_chat_text(lines))


def _whatwg_chat(player: ssemock.Player) -> None:
    player.assert_text(_chat_text(_reference_events(player)))


def test_splitlines_on_line_separators_fails_on_the_shipped_cassette() -> None:
    cassette = cassettes.load("compat/event_ids")
    failures = _matrix(cassette, _splitlines_chat)
    assert len(failures) == len(list(_variants(cassette)))  # every run: the hazards are in the content
    first = next(iter(failures.values()))
    assert "JSONDecodeError" in first or "Unterminated string" in first
    assert "it fails once event" in first  # check() names the event that carries the separator
    assert _matrix(cassette, _whatwg_chat) == {}


def test_raw_unicode_transform_exposes_escaped_separators() -> None:
    """A provider that escapes U+2028 (json.dumps' default) hides the bug until a proxy or another
    encoder writes it raw: the raw_unicode transform does that."""
    escaped = synth.openai_chat("a\u2028b\u2029c\u0085d", seed=3)
    response = escaped.interactions[0].response
    body = response.body.replace("\u2028".encode(), b"\\u2028").replace("\u2029".encode(), b"\\u2029") \
        .replace("\u0085".encode(), b"\\u0085")
    cassette = ssemock.Cassette()
    cassette.add("POST", synth.OPENAI_CHAT_URL, [body], headers={"content-type": "text/event-stream"})
    failures = _matrix(cassette, _splitlines_chat)
    assert failures and all("raw_unicode" in name for name in failures)
    assert _matrix(cassette, _whatwg_chat) == {}


def test_ndjson_splitlines_on_raw_u0085() -> None:
    cassette = cassettes.load("ollama/chat")

    def splitlines(player: ssemock.Player) -> None:
        with _stream(player) as response:
            objects = [json.loads(line) for line in response.iter_lines() if line]
        player.assert_text("".join(o["message"].get("content", "") for o in objects))

    def by_lf(player: ssemock.Player) -> None:
        with _stream(player) as response:
            objects = list(ssemock.ndjson.iter_decode(response.iter_bytes()))
        player.assert_text("".join(o["message"].get("content", "") for o in objects))  # type: ignore[index]

    failures = _matrix(cassette, splitlines)
    assert failures and "JSONDecodeError" in next(iter(failures.values()))
    assert {n.split("+", 1)[-1] for n in failures} >= {"crlf", "blank_lines"}  # JSON-lines transforms ran
    assert _matrix(cassette, by_lf) == {}


# -- comments, ids and metadata blocks --------------------------------------------------------------


def _field_split_chat(player: ssemock.Player) -> None:
    """Splits every line at ': ' (chokes on a bare ':' heartbeat) and takes each field but
    event for data (an id: line becomes data)."""
    data = []
    with _stream(player) as response:
        for line in response.iter_lines():
            if not line:
                continue
            field, value = line.split(": ", 1)  # ValueError on a bare ':' (or ':....' padding)
            if field not in ("event", ""):
                data.append(value)
    player.assert_text(_chat_text(data))


def test_comment_and_id_lines_break_a_naive_field_parser() -> None:
    cassette = synth.openai_chat("Heartbeats and ids are not data.", seed=4)
    failures = _matrix(cassette, _field_split_chat)
    failed = {name.split("+", 1)[-1] for name in failures}
    assert {"comments", "ids", "retry", "meta", "pad", "no_space"} <= failed  # bare ':' and non-data fields
    assert "ValueError: not enough values to unpack" in failures["as_recorded+comments"]
    assert _matrix(cassette, _whatwg_chat) == {}


def test_data_less_blocks_dispatched_as_events() -> None:
    """httpx-sse 0.4.3 dispatches a block without a data line (an event-only, id-only or
    retry-only block): the WHATWG algorithm dispatches nothing."""
    import httpx_sse
    cassette = synth.openai_chat("No data, no event.", seed=5)

    def with_httpx_sse(player: ssemock.Player) -> None:
        with httpx.Client() as client, httpx_sse.connect_sse(client, "POST", synth.OPENAI_CHAT_URL,
                                                             json={}) as source:
            player.assert_events(list(source.iter_sse()))

    def reference(player: ssemock.Player) -> None:
        with _stream(player) as response:
            player.assert_events(list(ssemock.sse.iter_decode(response.iter_bytes())))

    failures = _matrix(cassette, with_httpx_sse)
    assert {name.split("+", 1)[-1] for name in failures} == {"meta", "retry"}
    first = next(iter(failures.values()))
    assert "event 0 differs" in first and "'keepalive'" in first
    assert _matrix(cassette, reference) == {}


# -- line endings and delivery order ----------------------------------------------------------------


def _blank_line_split(player: ssemock.Player) -> None:
    """Splits the text on '\\n\\n' only (CR and CRLF streams never end an event)."""
    buffer, data = "", []
    with _stream(player) as response:
        for text in response.iter_text():
            buffer += text
            *blocks, buffer = buffer.split("\n\n")
            data += [line[6:] for block in blocks for line in block.split("\n") if line.startswith("data: ")]
    player.assert_text(_chat_text(data))


def test_mixed_line_endings() -> None:
    cassette = synth.openai_chat("Every event may end its lines its own way.", seed=6)
    failures = _matrix(cassette, _blank_line_split)
    assert {"crlf", "cr", "mixed"} <= {name.split("+", 1)[-1] for name in failures}
    assert "text of choice 0 differs" in failures["as_recorded+mixed"]
    assert _matrix(cassette, _whatwg_chat) == {}


def _held_back(player: ssemock.Player) -> None:
    """httpx's line decoder keeps a chunk's trailing CR until the next chunk (to see whether an
    LF follows): an event whose blank line is a CR at a chunk's end waits for the next chunk."""
    with _stream(player) as response:
        pending = False
        for line in response.iter_lines():
            if line.startswith("data:"):
                pending = True
            elif not line and pending:
                player.handed(line)
                pending = False
    player.assert_prompt()


def _prompt(player: ssemock.Player) -> None:
    with _stream(player) as response:
        for event in ssemock.sse.iter_decode(response.iter_bytes()):
            player.handed(event)
    player.assert_prompt()


def test_events_held_back_until_the_next_chunk() -> None:
    cassette = synth.openai_chat("Each event must reach the caller at once.", seed=7)
    failures = _matrix(cassette, _held_back)
    assert failures and {name.split("+", 1)[-1] for name in failures} <= {"cr", "mixed", "crlf"}
    message = next(iter(failures.values()))
    assert "holds events back until more bytes arrive" in message
    assert _matrix(cassette, _prompt) == {}


# -- the usage-only chunk ---------------------------------------------------------------------------


def test_usage_only_chunk_named_by_check() -> None:
    cassette = synth.openai_chat("Usage comes last.", usage={"prompt_tokens": 3, "completion_tokens": 4,
                                                             "total_tokens": 7}, seed=8)

    def first_choice(player: ssemock.Player) -> None:
        text = ""
        for data in _reference_events(player):
            if data != "[DONE]":
                text += json.loads(data)["choices"][0]["delta"].get("content") or ""
        player.assert_text(text)

    failures = _matrix(cassette, first_choice)
    assert len(failures) == len(list(_variants(cassette)))
    first = failures["as_recorded"]
    assert "IndexError" in first or "list index out of range" in first
    assert "it fails once event" in first and "with choices: []" in first
    assert _matrix(cassette, _whatwg_chat) == {}


# -- must-fail streams ------------------------------------------------------------------------------


def _lenient(player: ssemock.Player) -> str:
    text = ""
    for data in _reference_events(player):
        if data.startswith("[DONE]"):
            break
        text += json.loads(data.split("\n")[0])["choices"][0]["delta"].get("content") or ""
    return text


def _strict(player: ssemock.Player) -> str:
    text, done = "", False
    for data in _reference_events(player):
        if done:
            continue  # events after the terminator are ignored
        if data == "[DONE]":
            done = True
            continue
        text += json.loads(data)["choices"][0]["delta"].get("content") or ""
    if not done:
        raise ConnectionError("the stream ended without data: [DONE]")
    return text


@pytest.mark.parametrize("fault", ["trailing_data:at=garbage", "trailing_data:at=same_event", "truncate"])
def test_streams_a_client_must_reject(fault: str) -> None:
    cassette = synth.openai_chat("A stream that ends wrong must not pass.", seed=9)
    failures = _matrix(cassette, lambda p: p.assert_rejected(lambda: _lenient(p)), faults=fault)
    assert len(failures) == len(list(_variants(cassette)))
    assert "accepted a stream a conforming client must reject" in next(iter(failures.values()))
    assert _matrix(cassette, lambda p: p.assert_rejected(lambda: _strict(p)), faults=fault) == {}


def test_an_event_after_the_terminator_is_ignored() -> None:
    cassette = synth.openai_chat("Nothing after [DONE] counts.", seed=10)
    assert _matrix(cassette, lambda p: p.assert_text(_strict(p)), faults="trailing_data") == {}
    with ssemock.replay(cassette, faults="trailing_data", match_on=MATCH) as player:
        with pytest.raises(ssemock.StreamAssertionError, match="the reference accepts the stream"):
            player.assert_rejected(lambda: _strict(player))
