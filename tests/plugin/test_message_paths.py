"""``ignore_message_paths`` through the pytest plugin (the ini key, the command line, the marker)
and a WebSocket message that matched nothing reported once (issue 43 items 4 and 9): a Realtime
session built in code, replayed offline through the ``websockets`` sync client."""

from __future__ import annotations

import json

import pytest

import ssemock
from ssemock import Interaction, Request, Response
from ssemock.websocket import Close, Message, WebSocket

URL = "wss://api.openai.com/v1/realtime?model=gpt-realtime"

TESTS = f"""
import json

import pytest
from websockets.sync.client import connect


def session():
    with connect({URL!r}) as ws:
        ws.recv()
        ws.send(json.dumps({{"type": "session.update", "event_id": "evt_run2",
                             "session": {{"instructions": "Today is Tuesday. Be brief."}}}}))
        ws.send(json.dumps({{"type": "response.create", "event_id": "evt_run3"}}))
        return json.loads(ws.recv())["type"]


@pytest.mark.ssemock("voice")
def test_dated_instructions():
    assert session() == "response.done"


@pytest.mark.ssemock("voice")
def test_an_app_that_swallows_the_error_and_fails():
    try:
        session()
    except BaseException:  # as an SDK that turns it into a closed connection
        pass
    assert False, "the app saw a closed connection"


@pytest.mark.ssemock("voice", ignore_message_paths=["strict", "$.session.instructions"])
def test_strict_by_the_marker():
    session()
"""


@pytest.fixture
def voice(pytester: pytest.Pytester) -> pytest.Pytester:
    """The recorded session: instructions without the date, other event ids."""
    session = WebSocket(
        messages=[
            Message("recv", 0.01, "text", json.dumps({"type": "session.created", "event_id": "event_1"})),
            Message(
                "send",
                0.02,
                "text",
                json.dumps(
                    {
                        "type": "session.update",
                        "event_id": "evt_rec2",
                        "session": {"instructions": "Be brief."},
                    }
                ),
            ),
            Message("send", 0.03, "text", json.dumps({"type": "response.create", "event_id": "evt_rec3"})),
            Message("recv", 0.20, "text", json.dumps({"type": "response.done", "event_id": "event_2"})),
        ],
        close=Close(1000, "", by="client", clean=True),
    )
    cassette = ssemock.Cassette([Interaction(Request("GET", URL), Response(101), session)])
    cassette.save(pytester.path / "cassettes" / "test_voice" / "voice.json")
    pytester.makepyfile(test_voice=TESTS)
    return pytester


def test_an_unmatched_message_is_reported_once(voice: pytest.Pytester) -> None:
    # -rN: no short summary (CI=true leaves its lines whole, each saying the message again)
    result = voice.runpytest_inprocess("-p", "no:randomly", "-rN")
    result.assert_outcomes(failed=3)  # and no error at teardown
    out = result.stdout.str()
    assert "ERROR" not in out
    # the test that failed with it: said once; the test whose app swallowed it: in its report's section
    assert out.count("differs at $.session.instructions") == 2
    assert "ssemock: a WebSocket message matched nothing" in out
    assert "differs at $.event_id" in out  # strict: the ids compared too, the instructions not


def test_the_ini_key_adds_a_path_to_the_protocols_defaults(voice: pytest.Pytester) -> None:
    voice.makeini("[pytest]\nssemock_ignore_message_paths = $.session.instructions\n")
    result = voice.runpytest_inprocess("-k", "dated")
    result.assert_outcomes(passed=1, deselected=2)  # $.event_id is still ignored: the default


def test_the_command_line_asks_for_strict_matching(voice: pytest.Pytester) -> None:
    voice.makeini("[pytest]\nssemock_ignore_message_paths = $.session.instructions\n")
    result = voice.runpytest_inprocess(
        "-k", "dated", "--ssemock-ignore-message-paths=strict,$.session.instructions"
    )
    result.assert_outcomes(failed=1, deselected=2)
    assert "differs at $.event_id: 'evt_rec2' recorded, 'evt_run2' sent" in result.stdout.str()
