"""``@pytest.mark.ssemock(explore=N)``: the test body against drawn variants in one item, driven
as users drive it (an inner pytest, in-process: pytester restores sys.modules after it)."""

from __future__ import annotations

import re

import pytest
from conftest import APP

from ssemock.commands.loopback import running

HEADER = """
import json, os
import httpx, pytest, ssemock
from ssemock import sse, synth

URL = synth.OPENAI_CHAT_URL

@pytest.fixture(scope="module")
def ssemock_cassette_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cassettes")
    synth.openai_chat("こんにちは世界, hello there", seed=2).save(folder / "chat.json")
    return folder

def text_of(data):
    return "".join(json.loads(d)["choices"][0]["delta"].get("content") or "" for d in data if d != "[DONE]")

def naive(response):
    body = ""
    for chunk in response.iter_bytes():
        body += chunk.decode()  # a character split between chunks raises
    return text_of(e.data for e in sse.decode([body.encode()]))

def whatwg(response):
    return [e.data for e in ssemock.sse.iter_decode(response.iter_bytes())]

MARK = dict(cassette="chat", match_on=["method", "path"])
"""

TESTS = (
    HEADER
    + """
@pytest.mark.ssemock(explore=40, **MARK)
def test_naive(ssemock):
    with httpx.stream("POST", URL, json={}) as response:
        ssemock.assert_text(naive(response))

@pytest.mark.ssemock(explore=40, chunking="all", transform="all", **MARK)
def test_whatwg(ssemock):
    with httpx.stream("POST", URL, json={}) as response:
        ssemock.assert_text(text_of(whatwg(response)))

@pytest.mark.asyncio
@pytest.mark.ssemock(explore=40, **MARK)
async def test_async_naive(ssemock):
    body = ""
    async with httpx.AsyncClient() as client, client.stream("POST", URL, json={}) as response:
        async for chunk in response.aiter_bytes():
            body += chunk.decode()
    ssemock.assert_text(text_of(e.data for e in sse.decode([body.encode()])))

@pytest.mark.ssemock(explore=40, explore_faults=True, **MARK)
def test_lenient(ssemock):
    with httpx.stream("POST", URL, json={}) as response:
        ssemock.assert_text(text_of(whatwg(response)))

@pytest.mark.ssemock(explore=40, explore_faults=["truncate", "disconnect"], **MARK)
def test_strict(ssemock):
    with httpx.stream("POST", URL, json={}) as response:
        data = whatwg(response)
    if data[-1:] != ["[DONE]"]:
        raise ConnectionError("no [DONE]")
    ssemock.assert_text(text_of(data))
"""
)


def test_explore_marker_sync_async_faults_coverage_and_database(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_explored=TESTS)
    result = pytester.runpytest_inprocess("-v", "-p", "no:randomly")
    result.assert_outcomes(passed=2, failed=3)
    out = result.stdout.str()
    # one item each, even with a chunking/transform matrix in the marker
    assert len(re.findall(r"test_explored.py::test_whatwg\S* PASSED", out)) == 1
    # the shrunk variant in words, the user's own error, a reproducer to paste
    assert re.search(r"a chunk boundary at byte \d+ \(inside '.' \(U\+[0-9A-F]{4}, a 3-byte character", out)
    assert "UnicodeDecodeError" in out
    # (in the failures' reports: pytest's summary repeats whole messages when CI is set)
    reports = out.split("short test summary info")[0]
    reproducers = re.findall(r"reproduce with: (@pytest\.mark\.ssemock\([^\n]*\))", reports)
    assert len(reproducers) == 3
    assert any("faults=" in r for r in reproducers)  # the lenient client under a drawn fault
    assert "accepted a stream a conforming client must reject" in out
    # with -v: what each explored test exercised
    assert re.search(r"test_explored.py::test_whatwg: 40 examples; boundaries exercised .*utf8-3 \d+", out)
    assert re.search(r"transforms drawn: .*(keepalive|comments|pad)", out)
    # failing variants are kept where the docs say, and replayed first
    assert any((pytester.path / ".hypothesis" / "ssemock").iterdir())
    again = pytester.runpytest_inprocess("-p", "no:randomly", "-k", "test_naive")
    again.assert_outcomes(failed=1)
    assert "first failure after 1 examples" in again.stdout.str()
    # the reproducer, pasted as a pinned regression test, fails the same way without exploring
    naive = next(r for r in reproducers if "faults" not in r)
    pytester.makepyfile(
        test_pinned=HEADER
        + f"""
{naive.replace("@pytest.mark.ssemock(", "@pytest.mark.ssemock(**MARK, ")}
def test_pinned(ssemock):
    with httpx.stream("POST", URL, json={{}}) as response:
        ssemock.assert_text(naive(response))
"""
    )
    pinned = pytester.runpytest_inprocess("test_pinned.py")
    pinned.assert_outcomes(failed=1)
    assert "UnicodeDecodeError" in pinned.stdout.str()


def test_explore_from_the_command_line_with_a_seed(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_cli=HEADER
        + """
@pytest.mark.ssemock(**MARK)
def test_naive(ssemock):
    with httpx.stream("POST", URL, json={}) as response:
        ssemock.assert_text(naive(response))
"""
    )
    runs = [
        pytester.runpytest_inprocess("--ssemock-explore=30", "--ssemock-explore-seed=4") for _ in range(2)
    ]
    for run in runs:
        run.assert_outcomes(failed=1)
    found = [re.search(r"reproduce with: .*", r.stdout.str()) for r in runs]
    assert found[0] and found[1] and found[0].group() == found[1].group()  # the seed reproduces the run
    bad = pytester.runpytest_inprocess("--ssemock-explore=soon")
    assert "number of examples" in bad.stderr.str()
    pytester.makeini("[pytest]\nssemock_explore = 25\n")
    pytester.runpytest_inprocess().assert_outcomes(failed=1)
    # explore=0 in the marker opts one test out: it runs once, as recorded, and passes
    pytester.makepyfile(
        test_cli=HEADER
        + """
@pytest.mark.ssemock(explore=0, **MARK)
def test_naive(ssemock):
    with httpx.stream("POST", URL, json={}) as response:
        ssemock.assert_text(naive(response))
"""
    )
    pytester.runpytest_inprocess("--ssemock-explore=30").assert_outcomes(passed=1)


def test_a_recording_run_explores_what_it_recorded(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(
        test_rec="""
import os, httpx, pytest

@pytest.mark.ssemock(explore=20)
def test_events(ssemock):
    with httpx.stream("GET", os.environ["SSEMOCK_TEST_SERVER"] + "/events") as response:
        body = b"".join(response.iter_bytes())
    assert body.count(b"data:") == 3
"""
    )
    with running(APP) as url:
        monkeypatch.setenv("SSEMOCK_TEST_SERVER", url)
        result = pytester.runpytest_inprocess("-v", "--ssemock-record-mode=once")
    result.assert_outcomes(passed=1)
    assert "test_rec.py::test_events: 20 examples" in result.stdout.str()  # explored after recording
    assert (pytester.path / "cassettes" / "test_rec" / "test_events.json").exists()


# Under xdist: test_plugin.py's test_xdist_two_workers_record_each_matrix_once_explore_then_replay_offline
# explores this file's tests in its two-worker session (one xdist session fewer, issue 48 item 4).
