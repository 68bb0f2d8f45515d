"""Published streaming bug classes: a vulnerable client fails under the default matrix (every
chunking x every transform of ``transform="all"``) with a message naming the cause, and its
correct twin passes every run of the same matrix."""

from __future__ import annotations

import json
import re
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
        with ssemock.replay(
            cassette, chunking=c, transform=chain, match_on=MATCH, allow_playback_repeats=True, **options
        ) as player:
            try:
                if failures:
                    client(player)
                else:
                    player.check(lambda: client(player))
            except Exception as exc:  # the client's own exception or ssemock's assertion
                failures[name] = f"{type(exc).__name__}: {exc}"
    return failures


_CLIENT = httpx.Client()  # one for every run: a client per run costs more than the run


def _stream(player: ssemock.Player) -> Any:
    url = player.cassette.interactions[0].request.url
    return _CLIENT.stream("POST", url, json={})


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
        lines = (
            line[len("data:") :].lstrip(" ") for line in response.iter_lines() if line.startswith("data:")
        )
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


def _escaped_separators() -> ssemock.Cassette:
    body = synth.openai_chat("a\u2028b\u2029c\u0085d", seed=3).interactions[0].response.body
    for ch in "\u2028\u2029\u0085":
        body = body.replace(ch.encode(), f"\\u{ord(ch):04x}".encode())
    cassette = ssemock.Cassette()
    cassette.add("POST", synth.OPENAI_CHAT_URL, [body], headers={"content-type": "text/event-stream"})
    return cassette


def test_raw_unicode_transform_exposes_escaped_separators() -> None:
    """A provider that escapes U+2028 (json.dumps' default) hides the bug until a proxy or another
    encoder writes it raw: the raw_unicode transform does that."""
    cassette = _escaped_separators()
    failures = _matrix(cassette, _splitlines_chat)
    assert failures and all("raw_unicode" in name for name in failures)
    assert _matrix(cassette, _whatwg_chat) == {}


def _ndjson_splitlines(player: ssemock.Player) -> None:
    with _stream(player) as response:
        objects = [json.loads(line) for line in response.iter_lines() if line]
    player.assert_text("".join(o["message"].get("content", "") for o in objects))


def test_ndjson_splitlines_on_raw_u0085() -> None:
    cassette = cassettes.load("ollama/chat")

    def by_lf(player: ssemock.Player) -> None:
        with _stream(player) as response:
            objects = list(ssemock.ndjson.iter_decode(response.iter_bytes()))
        player.assert_text("".join(o["message"].get("content", "") for o in objects))  # type: ignore[index]

    failures = _matrix(cassette, _ndjson_splitlines)
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


def _with_httpx_sse(player: ssemock.Player) -> None:
    import httpx_sse

    with httpx_sse.connect_sse(_CLIENT, "POST", synth.OPENAI_CHAT_URL, json={}) as source:
        player.assert_events(list(source.iter_sse()))


def test_data_less_blocks_dispatched_as_events() -> None:
    """httpx-sse 0.4.3 dispatches a block without a data line (an event-only, id-only or
    retry-only block): the WHATWG algorithm dispatches nothing."""
    cassette = synth.openai_chat("No data, no event.", seed=5)

    def reference(player: ssemock.Player) -> None:
        with _stream(player) as response:
            player.assert_events(list(ssemock.sse.iter_decode(response.iter_bytes())))

    failures = _matrix(cassette, _with_httpx_sse)
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


def _usage_last() -> ssemock.Cassette:
    return synth.openai_chat(
        "Usage comes last.", usage={"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}, seed=8
    )


def _first_choice(player: ssemock.Player) -> None:
    text = ""
    for data in _reference_events(player):
        if data != "[DONE]":
            text += json.loads(data)["choices"][0]["delta"].get("content") or ""
    player.assert_text(text)


def test_usage_only_chunk_named_by_check() -> None:
    cassette = _usage_last()
    failures = _matrix(cassette, _first_choice)
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


# -- explore finds them too, and one the matrix misses ---------------------------------------------


#: every bug class above: (cassette, vulnerable client, the faults the matrix runs it under)
BUGS: dict[str, tuple[Callable[[], ssemock.Cassette], Client, str | None]] = {
    "splitlines on U+2028": (lambda: cassettes.load("compat/event_ids"), _splitlines_chat, None),
    "escaped separators written raw": (_escaped_separators, _splitlines_chat, None),
    "ndjson splitlines on U+0085": (lambda: cassettes.load("ollama/chat"), _ndjson_splitlines, None),
    "naive field parser": (
        lambda: synth.openai_chat("Heartbeats and ids are not data.", seed=4),
        _field_split_chat,
        None,
    ),
    "data-less blocks dispatched": (
        lambda: synth.openai_chat("No data, no event.", seed=5),
        _with_httpx_sse,
        None,
    ),
    "blank line only as LF LF": (
        lambda: synth.openai_chat("Every event may end its lines its own way.", seed=6),
        _blank_line_split,
        None,
    ),
    "events held back": (
        lambda: synth.openai_chat("Each event must reach the caller at once.", seed=7),
        _held_back,
        None,
    ),
    "usage-only chunk": (_usage_last, _first_choice, None),
    **{
        f"accepts {fault}": (
            lambda: synth.openai_chat("A stream that ends wrong must not pass.", seed=9),
            _lenient,
            fault,
        )
        for fault in ("trailing_data:at=garbage", "trailing_data:at=same_event", "truncate")
    },
}


def _explore(
    cassette: ssemock.Cassette, client: Client, fault: str | None, seed: int = 1, shrink: bool = False
) -> Any:
    return ssemock.explore(
        cassette,
        client,
        200,
        transforms="all",
        faults=[fault] if fault else False,
        seed=seed,
        database=False,
        match_on=MATCH,
        allow_playback_repeats=True,
        shrink=shrink,
    )


@pytest.mark.parametrize("bug", list(BUGS))
def test_explore_finds_what_the_matrix_finds(bug: str) -> None:
    """200 explored examples (every transform in the pool, as the matrix's transform="all") find
    each bug class the fixed matrix finds (the tests above run the matrix on the same cassette and
    client, each asserting what it finds), with the code's own error."""
    make, client, fault = BUGS[bug]
    cassette = make()
    try:
        failure = _explore(cassette, client, fault)
    except Exception as exc:
        # the bug shows on the stream as the cassette serves it: explore reports it as the test's own
        # failure (its unmodified run first), not as a stream to shrink; the matrix agrees
        assert any("before any drawn variant" in note for note in getattr(exc, "__notes__", [])), exc
        assert "as_recorded" in _matrix(cassette, client)
        return
    assert failure is not None, f"explore missed {bug}"
    assert failure.examples <= 200 and failure.reproducer.startswith("@pytest.mark.ssemock(")
    if fault is not None:
        assert failure.variant.fault is not None and "must reject" in str(failure.error)


def _buffered_64(player: ssemock.Player) -> None:
    """An Anthropic client that reads 64-byte buffers (``iter_bytes(64)``) and splits each on
    CR, LF or CRLF: a CR at a buffer's end is taken as a whole line ending, so the LF that opens
    the next buffer ends an empty line. After an ``event:`` line that blank line dispatches
    nothing and forgets the type: the event's data goes out as a 'message' and its text is lost.
    No chunking moves the bug (the client re-buffers), only what shifts the bytes does."""
    events, event, data, pending = [], "message", [], b""
    with _stream(player) as response:
        for buf in response.iter_bytes(64):
            lines = re.split(rb"\r\n|\r|\n", pending + buf)
            pending = lines.pop()
            for line in lines:
                if not line:
                    if data:
                        events.append((event, "\n".join(data)))
                    event, data = "message", []
                elif line.startswith(b"event:"):
                    event = line[6:].decode().strip()
                elif line.startswith(b"data:"):
                    data.append(line[5:].decode().removeprefix(" "))
    player.assert_text(
        "".join(json.loads(d)["delta"].get("text", "") for e, d in events if e == "content_block_delta")
    )


def test_explore_finds_a_cr_at_a_buffer_end_that_the_matrix_misses() -> None:
    cassette = synth.anthropic_messages("Buffers end where they end.", seed=0)
    assert _matrix(cassette, _buffered_64) == {}  # no CR of an event: line lands at byte 63 of 64
    failure = _explore(cassette, _buffered_64, None, seed=0, shrink=True)
    assert failure is not None
    assert {"crlf", "mixed"} & {
        t.name for t in failure.variant.transforms
    }  # CRLFs, shifted onto a buffer end
    assert "text of choice 0 differs" in str(failure.error)
    with ssemock.replay(cassette, match_on=MATCH, **failure.variant.options()) as player:  # type: ignore[arg-type]
        with pytest.raises(ssemock.StreamAssertionError):
            _buffered_64(player)  # the reproducer reproduces it
