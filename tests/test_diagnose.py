"""What was served, in words: the report section, check()'s event search, delivery order,
must-fail assertions and the reference after a fault."""

from __future__ import annotations

import json

import httpx
import pytest

import ssemock
from ssemock import faults, synth
from ssemock.plan import diagnose

MATCH = ["method", "path"]
CASSETTE = synth.openai_chat(
    "Hello there.", usage={"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}, seed=1
)
URL = synth.OPENAI_CHAT_URL


def _read(client: httpx.Client) -> bytes:
    with client.stream("POST", URL, json={}) as response:
        return b"".join(response.iter_raw())


def test_served_summary_names_the_variant_and_the_last_events() -> None:
    with ssemock.replay(CASSETTE, chunking="fixed:64", transform="crlf", match_on=MATCH) as player:
        assert player.served_summary() == ""
        with httpx.Client() as client, client.stream("POST", URL, json={}) as response:
            stream = response.iter_raw()
            next(stream)
            next(stream)
        summary = player.served_summary(last=2)
    lines = summary.splitlines()
    assert lines[0] == f"response 0 for POST {URL} under chunking fixed:64, transform crlf"
    assert lines[1].startswith("  the client got 128 of ") and "in 2 of " in lines[1]
    assert "then it stopped reading" in lines[1]
    assert (
        lines[3].startswith("    event 0 (type 'message', bytes 0-") and "a chat.completion.chunk" in lines[3]
    )
    assert "partial: the client got up to byte 128" in lines[3] or "partial" in lines[4]


def test_describe_names_empty_fields_and_leaves_out_boilerplate() -> None:
    data = json.dumps(
        {"id": "x", "object": "chat.completion.chunk", "choices": [], "usage": {"total_tokens": 3}}
    )
    assert diagnose.describe(data) == (
        'a chat.completion.chunk with choices: []: \'{"choices":[],"usage":{"total_tokens":3}}\''
    )
    assert diagnose.describe("[DONE]") == "'[DONE]'"


def test_blocks_count_dispatched_events_and_comments_apart() -> None:
    body = b": ping\n\ndata: a\n\nretry: 5\n\nevent: x\ndata: b\n\n"
    found = diagnose.blocks(body, "text/event-stream")
    assert [(b.index, b.event, b.type, b.data) for b in found] == [
        (0, None, "", ": ping"),
        (1, 0, "message", "a"),
        (2, None, "", "retry: 5"),
        (3, 1, "x", "b"),
    ]
    assert diagnose.blocks(body, "text/event-stream", upto=9)[-1].index == 1


def test_check_names_the_event_a_chunking_independent_failure_starts_at() -> None:
    def first_choice() -> None:
        with httpx.Client() as client, client.stream("POST", URL, json={}) as response:
            for event in ssemock.sse.iter_decode(response.iter_bytes()):
                if event.data != "[DONE]":
                    json.loads(event.data)["choices"][0]

    with ssemock.replay(
        CASSETTE,
        transform="ids",
        faults="stall:before_event=0,seconds=0",
        match_on=MATCH,
        allow_playback_repeats=True,
    ) as player:
        with pytest.raises(ssemock.StreamAssertionError) as info:
            player.check(first_choice)
        assert len(player.plays) == 1  # the search's runs are not plays
    message = str(info.value)
    assert message.startswith("IndexError: list index out of range\n")
    assert "the failure does not depend on chunk boundaries; it fails once event " in message
    assert "with choices: []" in message
    assert (
        'reproduce with chunking="as_recorded", transform="ids", faults=[\'stall:before_event=0,seconds=0\']'
    ) in message


def test_check_keeps_a_failure_that_no_event_explains() -> None:
    def always() -> None:
        with httpx.Client() as client:
            _read(client)
        raise KeyError("not about the stream")

    with ssemock.replay(CASSETTE, match_on=MATCH, allow_playback_repeats=True) as player:
        with pytest.raises(KeyError) as info:
            player.check(always)
    assert any("depends neither on chunk boundaries nor on which events" in n for n in info.value.__notes__)


def test_expected_stops_where_a_stall_past_the_timeout_cut_the_stream() -> None:
    with ssemock.replay(CASSETTE, faults="stall:before_event=2,seconds=60", match_on=MATCH) as player:
        with httpx.Client(timeout=httpx.Timeout(5.0)) as client, pytest.raises(httpx.ReadTimeout):
            _read(client)
        full = ssemock.accumulate(ssemock.sse.decode([player.plays[0].body]), "openai.chat")
        assert len(player.expected.events) == 2
        assert player.expected.text != full.text and full.text.startswith(player.expected.text)
        assert not player.expected.result.complete


def test_expected_after_a_disconnect_is_what_was_delivered() -> None:
    with ssemock.replay(CASSETTE, faults=faults.disconnect(after_byte=500), match_on=MATCH) as player:
        with httpx.Client() as client, pytest.raises(httpx.RemoteProtocolError):
            _read(client)
        assert player.plays[0].reference_body == player.plays[0].body[:500]
        assert len(player.expected.events) == len(ssemock.sse.decode([player.plays[0].body[:500]]))


@pytest.mark.parametrize(
    "at,tail",
    [
        ("event", b'data: [DONE]\n\ndata: {"ssemock": "data after the terminator"}\n\n'),
        ("same_event", b'data: [DONE]\ndata: {"ssemock": "data after the terminator"}\n\n'),
        ("garbage", b"data: [DONE]garbage\n\n"),
    ],
)
def test_trailing_data(at: str, tail: bytes) -> None:
    with ssemock.replay(CASSETTE, faults=f"trailing_data:at={at}", match_on=MATCH):
        with httpx.Client() as client:
            body = _read(client)
    assert body.endswith(tail)
    assert str(faults.get(f"trailing_data:at={at}")) == (
        "trailing_data" if at == "event" else f"trailing_data:at={at}"
    )


def test_trailing_data_rejects_a_bad_place() -> None:
    with pytest.raises(ValueError, match="did you mean 'garbage'"):
        faults.get("trailing_data:at=garbag")


def test_assert_rejected_fails_a_client_that_raises_on_a_good_stream() -> None:
    with ssemock.replay(CASSETTE, match_on=MATCH) as player:

        def picky() -> None:
            with httpx.Client() as client:
                _read(client)
            raise ValueError("I reject everything")

        with pytest.raises(
            ssemock.StreamAssertionError, match="the client raised on a stream the reference accepts"
        ):
            player.assert_rejected(picky)


def test_assert_rejected_accepts_a_flagged_result() -> None:
    with ssemock.replay(CASSETTE, faults="truncate", match_on=MATCH) as player:

        def flags() -> dict[str, bool]:
            with httpx.Client() as client:
                return {"complete": _read(client).endswith(b"data: [DONE]\n\n")}

        assert player.assert_rejected(flags, flagged=lambda r: not r["complete"]) == {"complete": False}


def test_assert_prompt_needs_noted_events() -> None:
    with ssemock.replay(CASSETTE, match_on=MATCH) as player:
        with pytest.raises(ssemock.StreamAssertionError, match="wrap each event"):
            player.assert_prompt()


def test_a_failed_pytest_test_reports_what_was_served(pytester: pytest.Pytester) -> None:
    CASSETTE.save(pytester.path / "cassettes" / "test_fail" / "test_client.json")
    pytester.makepyfile(
        test_fail="""
import json, httpx, pytest

@pytest.mark.ssemock(match_on=["method", "path"], chunking="mid_line")
def test_client(ssemock):
    with httpx.Client() as client, client.stream("POST", "https://api.openai.com/v1/chat/completions",
                                                 json={}) as response:
        for line in response.iter_lines():
            if line.startswith("data: {"):
                json.loads(line[6:])["choices"][0]
"""
    )
    result = pytester.runpytest_inprocess()
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "ssemock: what was served before the failure" in out
    assert "under chunking mid_line" in out and "with choices: []" in out
    assert "IndexError" in out
