"""Repeated in-process pytest runs in one process (pytester, the way plugin and fixture authors
test): every run passes, however many. pytester drops the modules a run imported and the next run
imports them again, so no check may depend on a class being the one of an earlier import."""

from __future__ import annotations

import pytest

# The suite of a plugin author: it runs an inner suite (which uses ssemock) in-process, three times.
AUTHOR = '''
import shutil
import ssemock.cassettes
from conftest import NOT_OURS

INNER = """
import httpx, openai, pytest, ssemock

@pytest.mark.ssemock("chat_text", match_on=["method", "host", "path"])
def test_sdk_and_reference(ssemock):
    client = openai.OpenAI(api_key="sk-test-0000", max_retries=0)
    stream = client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}],
                                            stream=True)
    text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    ssemock.assert_text(text)
    import ssemock as lib
    body = ssemock.plays[-1].body
    events = lib.sse.decode([body])
    ssemock.assert_events(events)
    ssemock.assert_accumulates(lib.accumulate(events, protocol="openai.chat"))
    with pytest.raises(lib.StreamAssertionError):
        ssemock.assert_text(text + "!")

@pytest.mark.ssemock("chat_text", faults="disconnect:after_event=2", match_on=["method", "host", "path"])
def test_fault(ssemock):
    client = openai.OpenAI(api_key="sk-test-0000", max_retries=0)
    with pytest.raises(openai.APIConnectionError):
        for _ in client.chat.completions.create(model="gpt-4o-mini", messages=[], stream=True):
            pass
"""


def test_runs_the_inner_suite_three_times(pytester):
    folder = pytester.path / "cassettes" / "test_inner"
    folder.mkdir(parents=True)
    shutil.copy(ssemock.cassettes.path("openai/chat_text"), folder / "chat_text.json")
    pytester.makepyfile(test_inner=INNER)
    for _ in range(3):
        pytester.runpytest_inprocess("-p", "no:randomly", *NOT_OURS,
                                     "-W", "error::ssemock.SsemockWarning").assert_outcomes(passed=2)
'''


def test_a_public_name_is_the_one_of_the_module_imported_now(monkeypatch: pytest.MonkeyPatch) -> None:
    """As pytester does between runs: ``ssemock.plan.errors`` dropped from sys.modules and imported
    again; ``ssemock.SsemockWarning`` is then the new module's class, not the first one's."""
    import importlib
    import sys

    import ssemock

    first = ssemock.SsemockWarning
    monkeypatch.delitem(sys.modules, "ssemock.plan.errors")
    again = importlib.import_module("ssemock.plan.errors")
    assert again.SsemockWarning is not first and ssemock.SsemockWarning is again.SsemockWarning


def test_a_public_name_can_be_monkeypatched_and_restored(monkeypatch: pytest.MonkeyPatch) -> None:
    import ssemock

    replay, sse = ssemock.replay, ssemock.sse
    with monkeypatch.context() as patch:
        patch.setattr(ssemock, "replay", "patched")
        patch.setattr(ssemock, "sse", "patched too")
        assert (ssemock.replay, ssemock.sse) == ("patched", "patched too")
    assert ssemock.replay is replay and ssemock.sse is sse and callable(ssemock.replay)


# An outer suite that uses ssemock itself after running an inner suite in-process (issue 42 item 5).
OUTER = '''
import asyncio

import ssemock
from conftest import NOT_OURS
from ssemock import cassettes

INNER = """
import httpx, pytest

@pytest.mark.ssemock("chat", match_on=["method", "path"])
def test_inner(ssemock):
    with httpx.Client() as client:
        assert client.post("http://localhost:11434/api/chat", json={}).status_code == 200
"""


def _httpx(url):
    import httpx

    return httpx.post(url, json={}).content


def _httpx2(url):
    import httpx2

    return httpx2.post(url, json={}).content


def _aiohttp(url):
    import aiohttp

    async def post():
        async with aiohttp.ClientSession() as session, session.post(url, json={}) as response:
            return await response.read()

    return asyncio.run(post())


def _requests(url):
    import requests

    return requests.post(url, json={}, timeout=5).content


# one client per HTTP stack ssemock intercepts, each library imported when first used (as the
# test_author suite beside this one expects: it imports them in its own inner runs)
CLIENTS = {"httpx": _httpx, "httpx2": _httpx2, "aiohttp": _aiohttp, "urllib3": _requests}


def replay_through_every_stack():
    cassette = cassettes.load("ollama/chat")
    url = "http://ollama.invalid:11434/api/chat"  # matched by its path; never resolvable
    served = {}
    for stack, client in CLIENTS.items():
        with ssemock.replay(cassette, match_on=["method", "path"]) as player:
            assert client(url) == cassette.interactions[0].response.body, stack
        served[stack] = player.plays
    # imported only now: an import of ssemock.stacks before the replays would mend what they test
    from ssemock.stacks import STACKS, stack_of

    assert sorted(CLIENTS) == sorted(STACKS)
    assert {stack: [stack_of(p.request) for p in plays] for stack, plays in served.items()} == {
        stack: [stack] for stack in CLIENTS
    }


def test_an_inner_run_then_replays_in_the_same_test(pytester):
    folder = pytester.path / "cassettes" / "test_inner"
    folder.mkdir(parents=True)
    (folder / "chat.json").write_bytes(cassettes.path("ollama/chat").read_bytes())
    pytester.makepyfile(test_inner=INNER)
    pytester.runpytest_inprocess("-p", "no:randomly", *NOT_OURS).assert_outcomes(passed=1)
    replay_through_every_stack()


def test_replays_in_a_later_test():
    replay_through_every_stack()
'''


# The plugins of this suite's environment that the author's suite does not use, off: the subprocess
# loaded them all, ~0.3 CPU-s of its start and end (hypothesis's imports hypothesis whole at the
# session's end) (issue 48 item 4). Off in the author's inner runs too (its conftest's NOT_OURS):
# each of them imported hypothesis again at its end (pytester drops it after the run), ~1.5 CPU-s of
# the four inner runs.
NOT_THE_AUTHORS_PLUGINS = ("-p", "no:hypothesispytest", "-p", "no:xdist", "-p", "no:timeout")


def test_inner_suites_run_in_process_pass_and_leave_the_outer_process_intercepting(
    pytester: pytest.Pytester,
) -> None:
    """In a fresh process (where ssemock is not imported before pytester's first snapshot, as in
    a plugin author's suite), one subprocess for both suites:

    * ``test_author``: the second and third inner runs see re-imported ssemock modules, while the
      package and the pytest plugin stay those of the first;
    * ``test_outer`` (issue 42 item 5): its stacks module first imported by an inner run, which
      pytester drops after it, the outer suite's own replays, in the same test and in the next
      one, are served through every HTTP stack, none reaching the network lock."""
    pytester.makeconftest(f'pytest_plugins = ["pytester"]\nNOT_OURS = {NOT_THE_AUTHORS_PLUGINS!r}\n')
    pytester.makepyfile(test_author=AUTHOR, test_outer=OUTER)
    result = pytester.runpytest_subprocess("-p", "no:randomly", *NOT_THE_AUTHORS_PLUGINS)
    result.assert_outcomes(passed=3)
