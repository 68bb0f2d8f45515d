"""``check()`` and ``player.expected`` on a replayed WebSocket session (issue 35, item 4), through
the public API with a hand-written frame reader over httpx (``tests/ws_frame_client.py``): the
diagnosis names the frame and the read boundary; the reference is per response in the session."""

from __future__ import annotations

import pytest
import ws_frame_client as client

import ssemock
from ssemock import cassettes
from ssemock.plan.expect import StreamAssertionError

CASSETTE = cassettes.load(client.NAME)


def test_check_shrinks_a_bytewise_failure_to_one_read_boundary_inside_a_frame_header() -> None:
    with ssemock.replay(CASSETTE, chunking="bytewise") as player:

        def run() -> None:
            text, calls, _ = client.session(client.HeaderInOneRead)
            player.assert_text(text)

        with pytest.raises(StreamAssertionError) as failed:
            player.check(run)
        message = str(failed.value)
        assert "the client fails on the WebSocket session of interaction #0" in message
        assert "under chunking=bytewise" in message
        assert "a read boundary at wire byte 1 (frame 0 (text of server message 0, bytes 0-" in message
        assert "in its header; read 0 ends at byte 1)" in message
        assert 'reproduce with: @pytest.mark.ssemock(chunking="at:1")' in message
        assert isinstance(failed.value.__cause__, IndexError)
        assert len(player.conversations) == 1  # the search's own sessions are not the test's
        served = player.conversations[0]  # the bytewise one, as it was served: the first group byte by byte
        assert served.reads == list(range(1, served.message_start(1) + 1))


def test_check_of_a_failure_no_read_boundary_causes_names_the_reframing() -> None:
    with ssemock.replay(CASSETTE, transform="fragments:2") as player:
        with pytest.raises(StreamAssertionError) as failed:
            player.check(lambda: client.session(client.IgnoresContinuation))
    message = str(failed.value)
    assert "no read boundary inside a group" in message
    assert 'reproduce with: @pytest.mark.ssemock(chunking="coalesced", transform="fragments:2")' in message


def test_expected_is_the_sessions_reference_per_response() -> None:
    with ssemock.replay(CASSETTE, chunking="mid_utf8", transform="pings") as player:
        text, calls, events = client.session(client.Correct)
        expected = player.expected
        assert expected is not None and expected.stream
        assert len(expected.results) == 1 and expected.results[0].complete
        assert expected.text == text and text
        assert [c.name for c in expected.tool_calls] == [c["name"] for c in calls] == ["get_weather"]
        assert expected.events == events
        expected.assert_events(events)
        expected.assert_accumulates({"text": text, "complete": True})
        player.assert_text(text)
        with pytest.raises(StreamAssertionError) as short:
            expected.assert_events(events[:-1])
        assert (
            f"expected {len(events)} server messages in the WebSocket session under chunking=mid_utf8"
            in str(short.value)
        )
        assert f"the first missing is server message {len(events) - 1}: wire byte" in str(short.value)
        assert f"text of server message {len(events) - 1}" in str(short.value)
        changed = [*events[:3], {**events[3], "delta": "?"}, *events[4:]]
        with pytest.raises(StreamAssertionError, match=r"server message 3 of the WebSocket session differs"):
            expected.assert_events(changed)
        with pytest.raises(
            StreamAssertionError, match=r"accumulated 'text' of the WebSocket session differs"
        ):
            expected.assert_accumulates({"text": text + "!"})
