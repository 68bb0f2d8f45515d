"""explore runs the test on the streams unchanged first (hypothesis's health-check way): a failure
there, or one under a variant that played no interaction, is the test's own failure, never a
stream finding shrunk to a bogus reproducer. A cassette missing in record mode ``none`` is such
a failure: its error names the path."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

import ssemock

URL = "https://api.example.test/v1/stream"


@pytest.fixture
def cassette() -> ssemock.Cassette:
    c = ssemock.Cassette()
    c.add("GET", URL, [b"data: one\n\n", b"data: two\n\n"])
    return c


def test_a_failure_on_the_unmodified_stream_is_the_tests_own(cassette: ssemock.Cassette) -> None:
    runs: list[int] = []

    def run(player: ssemock.Player) -> None:
        runs.append(1)
        assert httpx.get(URL).text == "data: one\n\n", "the test's own bug"

    with pytest.raises(AssertionError, match="the test's own bug") as raised:
        ssemock.explore(cassette, run, 50, database=False, seed=1)
    assert runs == [1]  # no variant was drawn
    assert any("before any drawn variant" in note for note in raised.value.__notes__)


def test_a_run_that_played_nothing_is_not_a_stream_finding(cassette: ssemock.Cassette) -> None:
    runs: list[int] = []

    def run(player: ssemock.Player) -> None:
        runs.append(1)
        if len(runs) > 1:
            raise RuntimeError("gave up before sending anything")
        httpx.get(URL).read()

    with pytest.raises(RuntimeError, match="gave up") as raised:
        ssemock.explore(cassette, run, 50, database=False, seed=1)
    assert runs == [1, 1]  # the unmodified run, then the first variant: no search, no shrinking
    assert any("played no recorded interaction" in note for note in raised.value.__notes__)


def test_a_passing_test_is_still_explored(cassette: ssemock.Cassette) -> None:
    runs: list[int] = []

    def run(player: ssemock.Player) -> None:
        runs.append(1)
        assert httpx.get(URL).text == "data: one\n\ndata: two\n\n"

    assert ssemock.explore(cassette, run, 20, transforms=None, database=False, seed=1) is None
    assert len(runs) == 21  # the unmodified stream, then every drawn variant


def test_explore_on_a_missing_cassette_reports_the_path_not_a_stream(
    pytester: pytest.Pytester, server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SSEMOCK_TEST_SERVER", server)
    pytester.makepyfile(
        test_chat="""
import os, httpx, pytest

@pytest.mark.ssemock("../test_other/chat", explore=30)  # another module's folder: no such file
def test_chat():
    httpx.get(os.environ["SSEMOCK_TEST_SERVER"] + "/events")  # loopback, allowed by default
"""
    )
    result = pytester.runpytest_inprocess("-p", "no:randomly")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    missing = Path(pytester.path) / "cassettes" / "test_other" / "chat.json"
    assert f"the cassette {missing} does not exist" in out
    assert "before any drawn variant" in out
    assert "shrunk to" not in out and "reproduce with" not in out
