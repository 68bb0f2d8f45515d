"""``check()`` and ``player.expected`` on a replayed WebSocket session (issue 35, item 4), through
the public API with a hand-written frame reader over httpx (``tests/ws_frame_client.py``): the
diagnosis names the frame and the read boundary; the reference is per response in the session."""

from __future__ import annotations

from pathlib import Path

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


RECORDED_SESSION_TEST = """
import json

from pathlib import Path

import pytest
from websockets.sync.client import connect

URL = "{url}"


def talk():
    with connect(URL, additional_headers={{"authorization": "Bearer sk-test-record-assert-0000"}}) as ws:
        assert json.loads(ws.recv())["type"] == "session.created"
        ws.send(json.dumps({{"type": "response.create", "event_id": "evt_1"}}))
        text, calls, arguments = "", [], ""
        while True:
            event = json.loads(ws.recv())
            if event["type"] == "response.output_audio_transcript.delta":
                text += event["delta"]
            elif event["type"] == "response.function_call_arguments.delta":  # as they stream
                arguments += event["delta"]
            elif event["type"] == "response.function_call_arguments.done":
                calls.append({{"name": event["name"], "arguments": arguments}})
            elif event["type"] == "response.done":
                return text, calls


@pytest.mark.ssemock
def test_realtime(ssemock):
    text, calls = talk()
    ssemock.assert_text(text)
    ssemock.assert_tool_calls(calls)
    assert ssemock.expected.text == text == "Sunny."
    assert ssemock.expected.results[-1].complete
    with pytest.raises(AssertionError, match="text of response 0 of the WebSocket session differs"):
        ssemock.assert_text(text + "!")
"""


def test_a_recording_run_asserts_on_the_session_just_recorded(pytester: pytest.Pytester) -> None:
    """Issue 43 item 2: ``assert_text``, ``assert_tool_calls`` and ``expected`` on the run that
    records a WebSocket session (the first recording, then a re-record) compare with that
    session, as on its replay."""
    from ws_servers import realtime, running

    options = ("-p", "no:randomly", "-o", "asyncio_default_fixture_loop_scope=function")
    with running(realtime) as server:
        url = server.url("/v1/realtime?model=gpt-realtime")
        pytester.makepyfile(test_rt=RECORDED_SESSION_TEST.format(url=url))
        for mode in ("once", "all"):
            pytester.runpytest_inprocess(*options, f"--ssemock-record-mode={mode}").assert_outcomes(passed=1)
    cassette = next(pytester.path.rglob("*.json"))
    assert ssemock.Cassette.load(cassette).interactions[0].websocket is not None
    replay = pytester.runpytest_inprocess(*options, "--ssemock-allowed-hosts=none")  # the server is gone
    replay.assert_outcomes(passed=1)


def test_on_a_recording_run_the_reference_is_what_was_recorded_last(tmp_path: Path, server: str) -> None:
    """An HTTP stream recorded after the session is the reference from then on, and a session
    recorded after a stream is, as on a replay."""
    import httpx
    from ws_servers import realtime, running

    from ssemock.plan.websocket.expect import SessionExpected

    def chat() -> None:
        with httpx.stream("POST", f"{server}/v1/chat/completions", json={"stream": True}) as response:
            response.read()

    with (
        running(realtime) as ws_server,
        ssemock.use_cassette(tmp_path / "mixed.json", record_mode="once") as player,
    ):
        chat()
        http_text = player.expected.text
        _realtime_session(ws_server.url("/v1/realtime?model=gpt-realtime"))
        assert isinstance(player.expected, SessionExpected) and player.expected.text == "Sunny."
        chat()
        assert not isinstance(player.expected, SessionExpected) and player.expected.text == http_text
    assert http_text and http_text != "Sunny."


def _realtime_session(url: str) -> None:
    import json

    from websockets.sync.client import connect

    with connect(url) as ws:
        ws.recv()
        ws.send(json.dumps({"type": "response.create"}))
        while json.loads(ws.recv())["type"] != "response.done":
            pass
