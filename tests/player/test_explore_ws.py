"""``explore=`` on WebSocket sessions (issue 35, item 5): drawn read boundaries in the server's
wire, re-framings and faults; a failure shrunk to the smallest variant, printed as a marker that,
pasted, fails the same way. The client is a hand-written frame reader of the catalogue
(``tests/variants/test_ws_readers.py``) over httpx's network stream (``tests/ws_frame_client.py``)."""

from __future__ import annotations

import re

import pytest
import ws_frame_client as client

import ssemock
from ssemock import cassettes

CASSETTE = cassettes.load(client.NAME)

INNER = f"""
import pytest, ssemock, ws_frame_client as client

@pytest.mark.ssemock(MARK, cassette={str(client.CASSETTE)!r})
def test_session(ssemock):
    text, calls, _ = client.session(client.HeaderInOneRead)
    ssemock.assert_text(text)
    ssemock.assert_tool_calls(calls)
"""


def test_explore_shrinks_a_header_split_and_the_pasted_marker_fails_the_same_way(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_drawn=INNER.replace("MARK, ", "explore=30, "))
    drawn = pytester.runpytest_inprocess("-p", "no:randomly", "--ssemock-explore-seed=5")
    drawn.assert_outcomes(failed=1)
    out = drawn.stdout.str()
    found = re.search(r"reproduce with: (@pytest\.mark\.ssemock\((.*)\))", out)
    assert found, out
    # one read boundary, inside the first frame's header, named by frame and read
    assert found.group(1) == '@pytest.mark.ssemock(chunking="at:1")', out
    assert "a read boundary at wire byte 1 (frame 0 (text of server message 0, bytes 0-" in out
    assert "in its header; read 0 ends at byte 1)" in out
    assert "IndexError" in out
    pasted = INNER.replace("@pytest.mark.ssemock(MARK, ", found.group(1)[:-1] + ", ")
    pytester.makepyfile(test_pasted=pasted)
    again = pytester.runpytest_inprocess("-p", "no:randomly", "test_pasted.py")
    again.assert_outcomes(failed=1)
    assert "IndexError: index out of range" in again.stdout.str()


def test_a_reader_that_ignores_continuations_shrinks_to_two_fragments() -> None:
    def run(player: ssemock.Player) -> None:
        text, _, _ = client.session(client.IgnoresContinuation)
        player.assert_text(text)

    failure = ssemock.explore(CASSETTE, run, 20, seed=3, database=False)
    assert failure is not None
    assert failure.reproducer == '@pytest.mark.ssemock(chunking="coalesced", transform="fragments:2")'
    assert "JSONDecodeError" in str(failure)
    assert "no read boundary inside a group" in str(failure)
    with ssemock.replay(CASSETTE, **failure.variant.options()), pytest.raises(ValueError):
        client.session(client.IgnoresContinuation)


def test_the_correct_reader_passes_drawn_variants_and_faults() -> None:
    seen: list[str] = []

    def run(player: ssemock.Player) -> None:
        seen.append("run")
        text, calls, events = client.session(client.Correct)
        seen.append(events[-1]["type"])
        player.assert_text(text)
        player.assert_tool_calls(calls)
        player.expected.assert_events(events)

    assert ssemock.explore(CASSETTE, run, 25, seed=11, faults=True, database=False) is None
    # 1 unmodified run + 25 drawn: some sessions ran whole, some a fault ended (the client raised)
    assert seen.count("run") == 26
    assert 0 < seen.count("response.done") < 26
