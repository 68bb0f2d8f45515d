"""The same suite on a recording run and on the replay run after it: the same test ids, the same
outcomes, no teardown warnings, and a fault test that passes both ways (pytest, in-process)."""

from __future__ import annotations

import pytest

import ssemock

INNER = """
import os
import httpx, openai, pytest
from ssemock import sse

SERVER = os.environ["SSEMOCK_TEST_SERVER"]


def _client():
    return openai.OpenAI(api_key="sk-test-0000", base_url=SERVER + "/v1", max_retries=2)


@pytest.mark.ssemock(faults="disconnect:after_event=3")
def test_disconnect(ssemock):
    stream = _client().chat.completions.create(model="gpt-4o-mini", messages=[], stream=True)
    with pytest.raises(openai.APIConnectionError):
        for _ in stream:
            pass


@pytest.mark.ssemock(faults="http_error:status=429,retry_after=0")
def test_rate_limited(ssemock):
    with pytest.raises(openai.RateLimitError):
        _client().chat.completions.create(model="gpt-4o-mini", messages=[], stream=True)
    assert len(ssemock.plays) == 3  # the first attempt and two retries, each served the 429


@pytest.mark.ssemock(chunking=["as_recorded", "mid_line"], transform="all")
def test_matrix(ssemock):
    with httpx.stream("GET", SERVER + "/events") as response:
        events = sse.decode(list(response.iter_bytes()))
    ssemock.assert_events(events)
"""


def _outcomes(pytester: pytest.Pytester, *args: str) -> dict[str, list[str]]:
    """Each outcome's test ids (sorted), with ssemock's warnings as errors."""
    reprec = pytester.inline_run("-p", "no:randomly", "-W", "error::ssemock.SsemockWarning", *args)
    passed, skipped, failed = reprec.listoutcomes()
    return {
        "passed": sorted(r.nodeid for r in passed),
        "skipped": sorted(r.nodeid for r in skipped),
        "failed": sorted(r.nodeid for r in failed),
    }


def test_recording_and_replay_runs_give_the_same_ids_and_outcomes(
    pytester: pytest.Pytester, server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A recording run with ``once`` from no cassette, then one with ``rewrite`` re-recording over
    the replayable suite it left: each gives the ids and outcomes of the replay run after it (one
    test for both modes: the rewrite run needs the suite the once run records, issue 48 item 4)."""
    monkeypatch.setenv("SSEMOCK_TEST_SERVER", server)
    pytester.makepyfile(test_inner=INNER)
    for mode in ("once", "rewrite"):
        recording = _outcomes(pytester, f"--ssemock-record-mode={mode}")
        replaying = _outcomes(pytester)
        assert not recording["failed"], (mode, recording["failed"])
        assert recording == replaying, mode
        # transforms that change no byte of /events are duplicates on both runs; the others ran
        assert replaying["skipped"] and any("+" in nodeid for nodeid in replaying["passed"])
        assert "test_inner.py::test_disconnect" in replaying["passed"]
        assert "test_inner.py::test_rate_limited" in replaying["passed"]
        # the fault tests recorded the whole live stream once each: no retry, no cut
        folder = pytester.path / "cassettes" / "test_inner"
        for name in ("test_disconnect", "test_rate_limited"):
            (x,) = ssemock.Cassette.load(folder / f"{name}.json").interactions
            assert x.response.complete and x.response.body.rstrip().endswith(b"data: [DONE]")


def test_an_http_error_fault_test_ends_without_an_unplayed_warning(pytester: pytest.Pytester) -> None:
    """The interaction a 429 was served for (left to be matched again, as retries need) is played."""
    cassette = ssemock.Cassette()
    cassette.add(
        "POST",
        "https://api.openai.com/v1/chat/completions",
        [b"data: [DONE]\n\n"],
        headers={"content-type": "text/event-stream"},
    )
    cassette.save(pytester.path / "cassettes" / "test_limit" / "test_429.json")
    pytester.makepyfile(
        test_limit="""
import openai, pytest

@pytest.mark.ssemock(faults="http_error:status=429", match_on=["method", "path"])
def test_429(ssemock):
    with pytest.raises(openai.RateLimitError):
        openai.OpenAI(api_key="sk-test-0000", max_retries=0).chat.completions.create(
            model="m", messages=[], stream=True)
"""
    )
    result = pytester.runpytest("-p", "no:randomly", "-W", "error::ssemock.SsemockWarning")
    result.assert_outcomes(passed=1)


def test_the_replay_player_counts_a_faulted_interaction_as_played() -> None:
    cassette = ssemock.Cassette()
    cassette.add(
        "GET", "https://example.test/a", [b"data: x\n\n"], headers={"content-type": "text/event-stream"}
    )
    cassette.add(
        "GET", "https://example.test/b", [b"data: y\n\n"], headers={"content-type": "text/event-stream"}
    )
    import httpx

    with ssemock.replay(cassette, faults="http_error:status=503") as player:
        assert httpx.get("https://example.test/a").status_code == 503
    assert player.play_counts == [0, 0]  # left to be matched again
    assert player.unplayed() == [1]


def test_a_fault_a_recording_run_cannot_serve_is_an_error_at_collection(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_aimed="""
import pytest, ssemock

class NeedsTheCassette(ssemock.faults.Fault):
    name = "needs_the_cassette"
    replay_only = "it is aimed at a recorded interaction by its index"
    def apply(self, served, attempt):
        pass

@pytest.mark.ssemock(faults=[NeedsTheCassette()])
def test_x(ssemock):
    pass
"""
    )
    result = pytester.runpytest("--ssemock-record-mode=once")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "*test_aimed.py::test_x: faults: with record_mode='once' a recording run cannot "
            "serve them as their replay will: needs_the_cassette: it is aimed at a recorded "
            "interaction by its index*"
        ]
    )
    assert pytester.runpytest().ret != pytest.ExitCode.USAGE_ERROR  # replay: collected


def test_a_recorded_stream_left_unread_is_named_as_the_recorded_response(
    pytester: pytest.Pytester, server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a recording run under a chunking the client reads the recording's replay: leaving it
    unread is reported as on replay, naming the response recorded (it has no index yet)."""
    monkeypatch.setenv("SSEMOCK_TEST_SERVER", server)
    pytester.makepyfile(
        test_unread="""
import os, httpx, pytest

@pytest.mark.ssemock(chunking="bytewise")
def test_first_byte_only(ssemock):
    with httpx.stream("POST", os.environ["SSEMOCK_TEST_SERVER"] + "/ten", content=b"{}") as response:
        assert next(response.iter_raw()) == b"d"
"""
    )
    result = pytester.runpytest("-p", "no:randomly", "--ssemock-record-mode=once")
    result.assert_outcomes(passed=1, warnings=1)
    result.stdout.fnmatch_lines(
        [
            "*ssemock: the stream of the response recorded (POST http://127.0.0.1:*/ten) was "
            "not read to the end under bytewise*"
        ]
    )
