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
    assert runs == [1, 1]  # no variant was drawn (the second run: each stream whole, failing too)
    assert any("before any drawn variant" in note for note in raised.value.__notes__)


def test_a_failure_on_the_recordings_own_boundaries_is_worded_a_stream_bug() -> None:
    """The unmodified streams break the code, each stream whole does not: the note says stream
    bug, not the test's own failure (issue 43 item 9); the player serves as before afterwards."""
    cut = ssemock.Cassette()
    cut.add("GET", URL, [b"data: o", b"ne\n\ndata: two\n\n"])  # as recorded: mid-event
    runs: list[tuple[bytes, ...]] = []

    def run(player: ssemock.Player) -> None:
        with httpx.Client() as client, client.stream("GET", URL) as r:
            chunks = tuple(r.iter_raw())
        runs.append(chunks)
        assert all(c.endswith(b"\n\n") for c in chunks), "one event a chunk"  # a naive decoder

    with pytest.raises(AssertionError, match="one event a chunk") as raised:
        ssemock.explore(cut, run, 50, database=False, seed=1)
    notes = raised.value.__notes__
    assert any("a stream bug" in note and "recording's own chunk boundaries" in note for note in notes), notes
    assert not any("the test's own failure" in note for note in notes), notes
    assert runs == [(b"data: o", b"ne\n\ndata: two\n\n"), (b"data: one\n\ndata: two\n\n",)]


def test_a_failure_served_whole_too_is_the_tests_own(cassette: ssemock.Cassette) -> None:
    def run(player: ssemock.Player) -> None:
        assert httpx.get(URL).text == "data: one\n\n", "the test's own bug"

    with pytest.raises(AssertionError) as raised:
        ssemock.explore(cassette, run, 50, database=False, seed=1)
    notes = raised.value.__notes__
    assert any("the test's own failure" in note for note in notes) and not any(
        "stream bug" in n for n in notes
    )


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
