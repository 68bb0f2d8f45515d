"""allowed_hosts and ignore_hosts for the intercepted client stacks: in a replay an unmatched
request to an allowed host goes to the network for real (a matched one is still served from the
cassette) unless the cassette recorded that host and port, where it is an UnmatchedRequestError
with the diff (issue 43); requests to an ignored host are never served nor recorded, in every
mode."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp
import httpx
import httpx2
import pytest
import requests

import ssemock
from ssemock.stacks import STACKS

RECORDED = b"data: from the cassette\n\n"


def _sync(client: Callable[[], Any]) -> Callable[[str], bytes]:
    def get(url: str) -> bytes:
        with client() as session:
            return bytes(session.get(url).content)

    return get


def _async(client: Callable[[], Any]) -> Callable[[str], bytes]:
    def get(url: str) -> bytes:
        async def run() -> bytes:
            async with client() as session:
                return bytes((await session.get(url)).content)

        return asyncio.run(run())

    return get


def _aiohttp(url: str) -> bytes:
    async def run() -> bytes:
        async with aiohttp.ClientSession() as session, session.get(url) as response:
            return await response.read()

    return asyncio.run(run())


def _requests(url: str) -> bytes:
    with requests.Session() as session:
        return session.get(url, timeout=10).content


#: every intercepted stack (ssemock.stacks.STACKS), each way its library sends: sync and async
CLIENTS: dict[str, dict[str, Callable[[str], bytes]]] = {
    "httpx": {"sync": _sync(httpx.Client), "async": _async(httpx.AsyncClient)},
    "httpx2": {"sync": _sync(httpx2.Client), "async": _async(httpx2.AsyncClient)},
    "aiohttp": {"async": _aiohttp},
    "urllib3": {"sync": _requests},
}
CASES = [(stack, mode) for stack in STACKS for mode in CLIENTS.get(stack) or ["missing"]]


def _client(stack: str, mode: str) -> Callable[[str], bytes]:
    found = CLIENTS.get(stack, {}).get(mode)
    assert found is not None, f"add a client of the new stack {stack!r} to CLIENTS"
    return found


def _cassette(server: str) -> ssemock.Cassette:
    cassette = ssemock.Cassette()
    cassette.add("GET", f"{server}/events", [RECORDED], headers={"content-type": "text/event-stream"})
    return cassette


ELSEWHERE = "http://127.0.0.1:9"  # a loopback port the recording was made on, never the live server's


def _echoed(body: bytes) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(body)
    assert "headers" in found  # the loopback server's /echo answered, not the cassette
    return found


@pytest.mark.parametrize(("stack", "mode"), CASES)
def test_an_unmatched_request_to_an_allowed_host_reaches_it(stack: str, mode: str, server: str) -> None:
    get = _client(stack, mode)
    with ssemock.replay(_cassette(ELSEWHERE)) as player:  # loopback is allowed by default
        assert get(f"{ELSEWHERE}/events") == RECORDED  # matched: served from the cassette
        _echoed(get(f"{server}/echo?stack={stack}"))  # unmatched, a port never recorded: sent for real
    assert [play.index for play in player.plays] == [0]


@pytest.mark.parametrize(("stack", "mode"), CASES)
def test_an_unmatched_request_to_a_recorded_host_and_port_is_reported_though_allowed(
    stack: str, mode: str, server: str
) -> None:
    get = _client(stack, mode)
    with ssemock.replay(_cassette(server)) as player:  # loopback is allowed by default
        with pytest.raises(ssemock.UnmatchedRequestError) as unmatched:
            get(f"{server}/echo?stack={stack}")  # (the live server would answer it)
        assert get(f"{server}/events") == RECORDED
    text = str(unmatched.value)
    assert f"#0 GET {server}/events" in text and "- path: '/events'  (recorded)" in text
    assert "127.0.0.1 is an allowed host, but the cassette recorded this host and port" in text
    assert [play.index for play in player.plays] == [0]


@pytest.mark.parametrize(("stack", "mode"), CASES)
def test_allowed_hosts_names_what_passes(stack: str, mode: str, server: str) -> None:
    get = _client(stack, mode)
    named = server.replace("127.0.0.1", "localhost")
    with ssemock.replay(_cassette(ELSEWHERE), allowed_hosts=["localhost"]):
        _echoed(get(f"{named}/echo"))
        _echoed(get(f"{server}/echo"))  # a name covers the addresses it resolves to
    with ssemock.replay(_cassette(ELSEWHERE), allowed_hosts=["127.0.0.1"]):
        _echoed(get(f"{server}/echo"))
        with pytest.raises(ssemock.UnmatchedRequestError):  # a name is judged by name: never looked up
            get(f"{named}/echo")
    with ssemock.replay(_cassette(ELSEWHERE), allowed_hosts=[]):
        with pytest.raises(ssemock.UnmatchedRequestError):
            get(f"{server}/echo")


@pytest.mark.parametrize(("stack", "mode"), CASES)
def test_an_ignored_host_is_never_served(stack: str, mode: str, server: str) -> None:
    get = _client(stack, mode)
    with ssemock.replay(_cassette(server), allowed_hosts=[], ignore_hosts=["127.0.0.1"]) as player:
        assert get(f"{server}/events") != RECORDED  # the live server's stream, not the cassette's
        _echoed(get(f"{server}/echo"))
    assert player.plays == []
    with ssemock.replay(_cassette(server), allowed_hosts=[], ignore_localhost=True) as player:
        assert get(f"{server}/events") != RECORDED
    assert player.plays == []


@pytest.mark.parametrize(("stack", "mode"), CASES)
def test_an_ignored_host_is_never_recorded(stack: str, mode: str, server: str, tmp_path: Path) -> None:
    get = _client(stack, mode)
    path = tmp_path / "c.json"
    with ssemock.use_cassette(path, record_mode="all", ignore_hosts=["127.0.0.1"]) as player:
        _echoed(get(f"{server}/echo"))
    with ssemock.use_cassette(path, record_mode="all") as recorder:  # not ignored: recorded as before
        _echoed(get(f"{server}/echo"))
    assert player.recorded == [] and len(recorder.recorded) == 1 and path.exists()


def test_a_recording_still_records_an_allowed_host(server: str, tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    with ssemock.use_cassette(path, record_mode="new_episodes"):
        _echoed(httpx.get(f"{server}/echo").content)
    assert [x.request.url for x in ssemock.Cassette.load(path).interactions] == [f"{server}/echo"]


def test_an_outer_player_answers_before_the_inner_passes_through(server: str) -> None:
    """Nested players: the innermost that knows the host decides only when no player matches."""
    with ssemock.replay(_cassette(server), allowed_hosts=[]):
        with ssemock.replay(ssemock.Cassette()):
            assert httpx.get(f"{server}/events").content == RECORDED
            _echoed(httpx.get(f"{server}/echo").content)


def test_a_bad_ignore_hosts_is_refused() -> None:
    with pytest.raises(TypeError, match=r"ignore_hosts.*\['x.com'\]"):
        ssemock.replay(ssemock.Cassette(), ignore_hosts="x.com")  # type: ignore[arg-type]


def test_the_plugin_takes_ignore_hosts_everywhere(pytester: pytest.Pytester, server: str) -> None:
    pytester.makepyfile(f"""
        import httpx, pytest

        @pytest.mark.ssemock(allowed_hosts=[], ignore_hosts=["127.0.0.1"])
        def test_marker(ssemock):
            assert "headers" in httpx.get("{server}/echo").json()

        @pytest.mark.ssemock(allowed_hosts=[], ignore_localhost=True)
        def test_marker_localhost(ssemock):
            assert "headers" in httpx.get("{server}/echo").json()

        @pytest.mark.ssemock(allowed_hosts=[])
        def test_option(ssemock):
            assert "headers" in httpx.get("{server}/echo").json()
    """)
    result = pytester.runpytest_inprocess(
        "-p",
        "no:randomly",
        "-o",
        "asyncio_default_fixture_loop_scope=function",
        "-k",
        "marker",
    )
    result.assert_outcomes(passed=2)
    for flag in ("--ssemock-ignore-hosts=127.0.0.1", "--ssemock-ignore-localhost=true"):
        result = pytester.runpytest_inprocess(
            "-p",
            "no:randomly",
            "-o",
            "asyncio_default_fixture_loop_scope=function",
            "-k",
            "option",
            flag,
        )
        result.assert_outcomes(passed=1)
    conftest = pytester.makeconftest("""
        import pytest

        @pytest.fixture(scope="session")
        def ssemock_config():
            return {"ignore_hosts": ["127.0.0.1"]}
    """)
    result = pytester.runpytest_inprocess(
        "-p",
        "no:randomly",
        "-o",
        "asyncio_default_fixture_loop_scope=function",
        "-k",
        "option",
    )
    result.assert_outcomes(passed=1)
    conftest.unlink()
    pytester.makeini("[pytest]\nssemock_ignore_hosts = 127.0.0.1\n")
    result = pytester.runpytest_inprocess(
        "-p",
        "no:randomly",
        "-o",
        "asyncio_default_fixture_loop_scope=function",
        "-k",
        "option",
    )
    result.assert_outcomes(passed=1)
    result = pytester.runpytest_inprocess(
        "-p",
        "no:randomly",
        "-o",
        "asyncio_default_fixture_loop_scope=function",
        "-k",
        "option",
        "--ssemock-ignore-localhost=yes",
    )
    result.assert_outcomes(passed=1)


def test_bad_plugin_values_are_named(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        import pytest

        @pytest.mark.ssemock(ignore_localhost="yes")
        def test_x(ssemock):
            pass
    """)
    result = pytester.runpytest_inprocess(
        "-p", "no:randomly", "-o", "asyncio_default_fixture_loop_scope=function"
    )
    result.stderr.fnmatch_lines(["*ignore_localhost: must be True or False, got 'yes'*"])


MODEL_CHANGED = """
import json
import os

import httpx
import pytest
from websockets.sync.client import connect

MODEL = os.environ.get("SSEMOCK_TEST_MODEL", "gpt-realtime")


@pytest.mark.ssemock
def test_realtime():
    url = os.environ.get("SSEMOCK_TEST_WS", "{ws}")
    with connect(f"{{url}}/v1/realtime?model={{MODEL}}") as ws:
        assert json.loads(ws.recv())["type"] == "session.created"


@pytest.mark.ssemock
def test_chat():
    body = {{"model": MODEL, "stream": True, "messages": [{{"role": "user", "content": "hi"}}]}}
    with httpx.stream("POST", "{http}/v1/chat/completions", json=body) as response:
        assert response.read().endswith(b"data: [DONE]\\n\\n")
"""


def test_a_request_the_recording_does_not_match_fails_with_the_diff_on_loopback(
    pytester: pytest.Pytester, server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 43 item 3, through the marker: a session and a stream recorded against loopback
    stand-ins, replayed with another model: each an UnmatchedRequestError with the diff (loopback
    is allowed: the session went out and was refused, the stream went to the live server and
    passed); a session to a port the cassettes never recorded still goes out for real."""
    from ws_servers import realtime, running

    options = ("-p", "no:randomly", "-o", "asyncio_default_fixture_loop_scope=function")
    with running(realtime) as stand_in:
        pytester.makepyfile(test_models=MODEL_CHANGED.format(ws=stand_in.url(""), http=server))
        pytester.runpytest_inprocess(*options, "--ssemock-record-mode=once").assert_outcomes(passed=2)
    monkeypatch.setenv("SSEMOCK_TEST_MODEL", "gpt-realtime-mini")
    # -rN: no short summary (CI=true leaves its lines whole, each saying the error again)
    result = pytester.runpytest_inprocess(*options, "-rN")  # the stream's server still runs
    result.assert_outcomes(failed=2)
    out = result.stdout.str()
    assert out.count("UnmatchedRequestError: ssemock: no recorded interaction matches") == 2
    assert "- query: [('model', 'gpt-realtime')]  (recorded)" in out
    assert "+ query: [('model', 'gpt-realtime-mini')]  (sent)" in out
    assert "- body $.model: 'gpt-realtime'  (recorded)" in out
    assert "ConnectionRefusedError" not in out
    with running(realtime) as elsewhere:  # a port never recorded: an allowed host, passed through
        monkeypatch.setenv("SSEMOCK_TEST_WS", elsewhere.url(""))
        pytester.runpytest_inprocess(*options, "-k", "realtime").assert_outcomes(passed=1)
