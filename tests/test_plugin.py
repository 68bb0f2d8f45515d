"""The pytest plugin, driven as users drive it: test files run by an inner pytest (in-process where
the test allows: pytester restores sys.modules after each inner run)."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import APP, run_xdist_inprocess, side_env_python
from test_explore_plugin import HEADER as EXPLORE_HEADER

import ssemock
from ssemock.commands.loopback import running

TEST_FILE = """
import asyncio, os
import httpx, httpx2, openai, pytest

URL = os.environ["SSEMOCK_TEST_SERVER"]

@pytest.mark.ssemock
def test_httpx_sse():
    with httpx.Client() as client:
        with client.stream("GET", URL + "/events") as r:
            body = b"".join(r.iter_raw())
    assert body.count(b"\\n\\n") == 3

@pytest.mark.ssemock(chunking="all")
def test_openai(ssemock):
    client = openai.OpenAI(base_url=URL + "/v1", api_key="sk-test-plugin-key-000")
    stream = client.chat.completions.create(model="m", messages=[], stream=True)
    text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    assert text.startswith("こんにちは"), text
    assert ssemock.chunking.name in {c.name for c in __import__("ssemock").chunking.ALL}

@pytest.mark.asyncio
@pytest.mark.ssemock(cassette="shared_name")
async def test_async_httpx2():
    async with httpx2.AsyncClient() as client:
        r = await client.get(URL + "/events")
    assert r.text.startswith("data: one")
"""


@pytest.fixture
def live(monkeypatch: pytest.MonkeyPatch) -> Any:
    """A loopback server only for this test (stopped to prove replay is offline)."""
    ctx = running(APP)
    url = ctx.__enter__()
    monkeypatch.setenv("SSEMOCK_TEST_SERVER", url)

    class Live:
        def stop(self) -> None:
            ctx.__exit__(None, None, None)

    yield Live()
    try:
        ctx.__exit__(None, None, None)
    except Exception:
        pass


def test_record_once_then_replay_offline_with_chunking_matrix(pytester: pytest.Pytester, live: Any) -> None:
    pytester.makepyfile(test_stream=TEST_FILE)
    first = pytester.runpytest_inprocess("--ssemock-record-mode=once", "-v")
    first.assert_outcomes(passed=9)
    cassettes = pytester.path / "cassettes" / "test_stream"
    assert sorted(p.name for p in cassettes.iterdir()) == [
        "shared_name.json",
        "test_httpx_sse.json",
        "test_openai.json",
    ]
    saved = (cassettes / "test_openai.json").read_text()
    assert "sk-test-plugin-key" not in saved
    live.stop()
    second = pytester.runpytest_inprocess("-v")
    second.assert_outcomes(passed=9)
    out = second.stdout.str()
    for c in ssemock.chunking.ALL:
        assert f"test_openai[ssemock-{c.name}] PASSED" in out
    # the whole matrix again from the command line, through the plain-marker test too
    third = pytester.runpytest_inprocess("--ssemock-chunking=mid_utf8,bytewise", "-q")
    third.assert_outcomes(passed=len(ssemock.chunking.ALL) + 2 * 2)


def test_replay_mode_blocks_network_with_helpful_error(pytester: pytest.Pytester, live: Any) -> None:
    pytester.makepyfile(
        test_blocked="""
import os, httpx, pytest
import ssemock

@pytest.mark.ssemock(allowed_hosts=[])  # the server is on loopback, allowed by default
def test_unrecorded():
    with httpx.Client() as client:
        client.get(os.environ["SSEMOCK_TEST_SERVER"] + "/events")
"""
    )
    result = pytester.runpytest_inprocess()
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "UnmatchedRequestError" in out
    assert "/events: the cassette " in out and "test_unrecorded.json does not exist" in out
    assert "--ssemock-record-mode=once" in out


def test_unmatched_request_never_opens_a_socket(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cassette = ssemock.Cassette()
    cassette.add(
        "POST",
        "https://api.example.test/v1/chat/completions",
        [b"data: x\n\n"],
        request_json={"model": "a", "stream": True},
    )
    connects: list[Any] = []
    real_connect = socket.socket.connect
    monkeypatch.setattr(
        socket.socket, "connect", lambda self, addr: connects.append(addr) or real_connect(self, addr)
    )
    with ssemock.replay(cassette):
        with httpx.Client() as client, pytest.raises(ssemock.UnmatchedRequestError) as info:
            client.post("https://api.example.test/v1/chat/completions", json={"model": "b", "stream": True})
    assert connects == []
    message = str(info.value)
    assert "closest recorded requests" in message and "#0 POST" in message
    assert "- body $.model: 'a'  (recorded)" in message and "+ body $.model: 'b'  (sent)" in message


def test_record_modes(pytester: pytest.Pytester, live: Any) -> None:
    pytester.makepyfile(
        test_modes="""
import os, httpx, pytest
URL = os.environ["SSEMOCK_TEST_SERVER"]

@pytest.mark.ssemock
def test_two_requests():
    with httpx.Client() as client:
        assert client.get(URL + "/events").status_code == 200
        if os.environ.get("SECOND"):
            assert client.get(URL + "/gzip").text == "data: one\\n\\ndata: two\\n\\n"
"""
    )
    path = pytester.path / "cassettes" / "test_modes" / "test_two_requests.json"
    pytester.runpytest_inprocess("--ssemock-record-mode=once").assert_outcomes(passed=1)
    assert len(json.loads(path.read_text())["interactions"]) == 1
    # once with an existing cassette: replay only, a new request is an error
    live_env = {"SECOND": "1"}
    for k, v in live_env.items():
        pytester._monkeypatch.setenv(k, v)
    pytester.runpytest_inprocess(
        "--ssemock-record-mode=once", "--ssemock-allowed-hosts=none"
    ).assert_outcomes(failed=1)
    # new_episodes: replays the first, records the second
    pytester.runpytest_inprocess("--ssemock-record-mode=new_episodes").assert_outcomes(passed=1)
    urls = [x["request"]["url"] for x in json.loads(path.read_text())["interactions"]]
    assert [u.rsplit("/", 1)[1] for u in urls] == ["events", "gzip"]
    # all: records both again, replacing (not duplicating) what it re-records
    pytester.runpytest_inprocess("--ssemock-record-mode=all").assert_outcomes(passed=1)
    assert len(json.loads(path.read_text())["interactions"]) == 2
    # rewrite: starts from empty
    pytester._monkeypatch.delenv("SECOND")
    pytester.runpytest_inprocess("--ssemock-record-mode=rewrite").assert_outcomes(passed=1)
    assert len(json.loads(path.read_text())["interactions"]) == 1


COEXISTS = """
import pytest
def test_options(request):
    assert request.config.pluginmanager.has_plugin({other!r})
    assert request.config.getoption("ssemock_record_mode") == "none"
    assert request.config.getoption("record_mode") == "none"
"""


def test_coexists_with_pytest_recording(pytester: pytest.Pytester) -> None:
    """pytest-recording owns --record-mode; ssemock's options are namespaced."""
    pytester.makepyfile(test_co=COEXISTS.format(other="recording"))
    loop_scope = ("-o", "asyncio_default_fixture_loop_scope=function")
    result = pytester.runpytest_inprocess(*loop_scope, "--ssemock-record-mode=none", "--record-mode=none")
    result.assert_outcomes(passed=1)
    help_text = pytester.runpytest_inprocess(*loop_scope, "--help").stdout.str()
    assert "--ssemock-record-mode" in help_text and "--record-mode" in help_text


# pytest --help, in the process of the run (another interpreter in the side environment cost ~0.7 CPU-s)
HELP = """

def test_help(capsys):
    assert pytest.main(["-p", "no:cacheprovider", "--help"]) == 0
    out = capsys.readouterr().out
    assert "--ssemock-record-mode" in out and "--record-mode" in out
"""


def test_coexists_with_cassetter(pytester: pytest.Pytester) -> None:
    """cassetter owns --record-mode too (so it cannot share an environment with pytest-recording:
    it lives in the cassetter side environment, `conftest.side_env_python`); ssemock's options
    are namespaced. One pytest run there: its second test runs ``pytest --help`` in-process."""
    python = str(side_env_python("cassetter"))
    pytester.makepyfile(test_co=COEXISTS.format(other="cassetter") + HELP)
    run = [python, "-m", "pytest", "-p", "no:cacheprovider"]
    done = subprocess.run(
        [*run, "--ssemock-record-mode=none", "--record-mode=none"],
        cwd=pytester.path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 passed" in done.stdout


def test_config_fixtures_and_teardown_checks(pytester: pytest.Pytester) -> None:
    pytester.makeconftest("""
import pytest
@pytest.fixture
def ssemock_config():
    return {"check_unconsumed": "error"}

@pytest.fixture
def ssemock_cassette_dir(tmp_path_factory):
    import pathlib
    return pathlib.Path(__file__).parent / "my_cassettes"
""")
    cassette = ssemock.Cassette()
    cassette.add("GET", "https://example.test/stream", [b"data: 1\n\n", b"data: 2\n\n"])
    cassette.save(pytester.path / "my_cassettes" / "test_partial.json")
    pytester.makepyfile(
        test_checks="""
import httpx, pytest

@pytest.mark.ssemock
def test_partial(ssemock):
    with httpx.Client() as client:
        with client.stream("GET", "https://example.test/stream") as r:
            next(r.iter_raw())
    assert ssemock.path.parent.name == "my_cassettes"
"""
    )
    result = pytester.runpytest_inprocess()
    result.assert_outcomes(passed=1, errors=1)
    assert "was not read to the end under as_recorded" in result.stdout.str()


def test_user_routes_on_the_router(tmp_path: Path) -> None:
    cassette = ssemock.Cassette()
    cassette.add("GET", "https://example.test/stream", [b"data: 1\n\n"])
    with ssemock.replay(cassette) as player:
        player.router.get("https://example.test/health").respond(200, json={"ok": True})
        with httpx.Client() as client:
            assert client.get("https://example.test/health").json() == {"ok": True}
            assert client.get("https://example.test/stream").text == "data: 1\n\n"
    assert [p.index for p in player.plays] == [0]


def test_transform_matrix_and_ini_defaults(pytester: pytest.Pytester) -> None:
    c = ssemock.Cassette()
    c.add("GET", "https://example.test/s", [b"data: \xe4\xb8\x96\n\n", b"data: 2\n\n"])
    c.save(pytester.path / "cassettes" / "test_tm" / "test_matrix.json")
    c.save(pytester.path / "cassettes" / "test_tm" / "test_ini.json")
    pytester.makeini("[pytest]\nssemock_chunking = bytewise,mid_utf8\n")
    pytester.makepyfile(
        test_tm="""
import httpx, pytest
import ssemock.sse as ssemock_sse

@pytest.mark.ssemock(chunking="as_recorded", transform="all")
def test_matrix(ssemock):
    with httpx.Client() as client, client.stream("GET", "https://example.test/s") as response:
        ssemock.assert_events(list(ssemock_sse.iter_decode(response.iter_bytes())))

def test_ini(ssemock):
    assert ssemock.chunking.name in ("bytewise", "mid_utf8")
    with httpx.Client() as client:
        assert client.get("https://example.test/s").text == "data: 世\\n\\ndata: 2\\n\\n"
"""
    )
    result = pytester.runpytest_inprocess("-v")
    # every transform of "all" but those that change nothing here (no JSON escape to write raw,
    # no JSON lines or JSON array to rewrite): those are skipped as duplicates, saying why
    result.assert_outcomes(passed=13, skipped=6)
    out = result.stdout.str()
    for run in (
        "ssemock-as_recorded]",
        "ssemock-as_recorded+crlf]",
        "ssemock-as_recorded+cr]",
        "ssemock-as_recorded+keepalive]",
        "ssemock-as_recorded+no_space]",
        "ssemock-as_recorded+meta]",
        "ssemock-as_recorded+mixed]",
        "ssemock-as_recorded+pad]",
        "test_ini[ssemock-bytewise]",
        "test_ini[ssemock-mid_utf8]",
    ):
        assert run in out
    assert "ssemock-as_recorded+raw_unicode] SKIPPED" in out
    assert "ssemock-as_recorded+blank_lines] SKIPPED" in out
    for name in ("no_final_newline", "compact", "pretty", "bracket_lines"):
        assert f"ssemock-as_recorded+{name}] SKIPPED" in out


def test_a_single_run_is_not_parametrized_and_a_matrix_from_ssemock_config_fails_clearly(
    pytester: pytest.Pytester,
) -> None:
    c = ssemock.Cassette()
    c.add("GET", "https://example.test/s", [b"data: 1\n\n"])
    for name in ("test_marked", "test_fixture", "test_config_matrix"):
        c.save(pytester.path / "cassettes" / "test_one" / f"{name}.json")
    pytester.makepyfile(
        test_one="""
import httpx, pytest

@pytest.fixture
def ssemock_config(request):
    return {"chunking": "all"} if request.node.name == "test_config_matrix" else {"chunking": "mid_line"}

@pytest.mark.ssemock
def test_marked(request):
    player = request.getfixturevalue("ssemock")
    assert player.chunking.name == "mid_line"
    assert "_ssemock_chunking" not in request.fixturenames
    with httpx.Client() as client:
        assert client.get("https://example.test/s").text == "data: 1\\n\\n"

def test_fixture(ssemock):
    assert ssemock.chunking.name == "mid_line"
    with httpx.Client() as client:
        assert client.get("https://example.test/s").text == "data: 1\\n\\n"

def test_config_matrix(ssemock):
    pass
"""
    )
    result = pytester.runpytest_inprocess("-v")
    result.assert_outcomes(passed=2, errors=1)
    out = result.stdout.str()
    assert "test_one.py::test_marked PASSED" in out and "test_one.py::test_fixture PASSED" in out
    assert "a matrix of chunkings/transforms from ssemock_config cannot parametrize the test" in out


# -- the first hour: recording runs that assert, naming, options, errors ---------------------

COUNTED: dict[str, int] = {}


async def _counted(request: Any) -> Any:
    from starlette.responses import StreamingResponse

    COUNTED[request.url.path] = COUNTED.get(request.url.path, 0) + 1
    body = await request.body()

    async def events() -> Any:
        yield b'data: {"choices": [{"index": 0, "delta": {"content": "Hel"}}]}\n\n'
        yield b'data: {"choices": [{"index": 0, "delta": {"content": "lo"}}]}\n\n'
        yield b"data: [DONE]\n\n"

    assert body is not None
    return StreamingResponse(events(), media_type="text/event-stream")


class Counting:
    """A loopback server counting the requests it gets, per path; ``stop()`` it to replay."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        from starlette.applications import Starlette
        from starlette.routing import Route

        COUNTED.clear()
        self._server = running(Starlette(routes=[Route("/v1/chat/completions", _counted, methods=["POST"])]))
        monkeypatch.setenv("SSEMOCK_TEST_SERVER", self._server.__enter__())
        self._running = True

    @property
    def counts(self) -> dict[str, int]:
        return dict(COUNTED)

    def stop(self) -> None:
        if self._running:
            self._running = False
            self._server.__exit__(None, None, None)


@pytest.fixture
def counting(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counting]:
    found = Counting(monkeypatch)
    yield found
    found.stop()


MATRIX_TEST = """
import os, openai, pytest
URL = os.environ.get("SSEMOCK_TEST_SERVER", "http://127.0.0.1:9")

@pytest.mark.ssemock(chunking="all")
def test_chat(ssemock):
    client = openai.OpenAI(base_url=URL + "/v1", api_key="sk-test-first-hour-000", max_retries=0)
    stream = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}],
                                            stream=True)
    text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    ssemock.assert_text(text)
    assert ssemock.expected.text == "Hello"
"""


@pytest.mark.parametrize("mode", ["once", "all", "rewrite"])
def test_a_matrix_records_once_and_asserts_on_the_recording_run(
    pytester: pytest.Pytester, counting: Any, mode: str
) -> None:
    pytester.makepyfile(test_m=MATRIX_TEST)
    runs = len(ssemock.chunking.ALL)
    pytester.runpytest_inprocess(f"--ssemock-record-mode={mode}").assert_outcomes(passed=runs)
    assert counting.counts == {"/v1/chat/completions": 1}  # one request recorded, the variants replayed it
    counting.stop()
    pytester.runpytest_inprocess().assert_outcomes(passed=runs)


# What test_explore_plugin.py's explore tests run under xdist, in the xdist session below: their
# marker's record_mode wins over the session's ini ssemock_record_mode = all (they replay the
# cassette their module's fixture writes, as that file's other tests do)
EXPLORED_UNDER_XDIST = (
    EXPLORE_HEADER
    + """
@pytest.mark.ssemock(explore=30, record_mode="none", **MARK)
def test_naive(ssemock):
    with httpx.stream("POST", URL, json={}) as response:
        ssemock.assert_text(naive(response))

@pytest.mark.ssemock(explore=30, record_mode="none", **MARK)
def test_whatwg(ssemock):
    with httpx.stream("POST", URL, json={}) as response:
        ssemock.assert_text(text_of(whatwg(response)))
"""
)


def test_xdist_two_workers_record_each_matrix_once_explore_then_replay_offline(
    pytester: pytest.Pytester, live: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two workers record (``all`` from the ini; no cassette exists yet: ``all`` records as ``once``
    would), a chunking matrix from one request however its variants are spread over the workers;
    then what they wrote replays offline and no temporary file is left. In the same session, two
    workers explore their own tests, each in one item: the failure and its reproducer come back
    through xdist's report, and the failing variants are stored for the next run. One inner session
    for the three files: each xdist run starts two Python workers, each importing pytest, its
    plugins and the SDKs (issue 33; the explore file joined it in issue 48 item 4).
    The replay runs in-process (as test_scale's does): replaying reads the cassettes, with nothing
    shared between workers, and replay under two workers, a chunking matrix spread over them, is
    what docs/recipes/xdist.md's page runs (twice) and the explore file here does."""
    streams = os.environ["SSEMOCK_TEST_SERVER"]  # the live server's
    counting = Counting(monkeypatch)  # points SSEMOCK_TEST_SERVER at the counting server
    monkeypatch.setenv("SSEMOCK_COUNTING_SERVER", os.environ["SSEMOCK_TEST_SERVER"])
    monkeypatch.setenv("SSEMOCK_TEST_SERVER", streams)
    pytester.makepyfile(
        test_stream=TEST_FILE,
        test_m=MATRIX_TEST.replace("SSEMOCK_TEST_SERVER", "SSEMOCK_COUNTING_SERVER"),
        test_workers=EXPLORED_UNDER_XDIST,
    )
    # the record mode from the ini, where the explore file's marker wins over it (the command line's
    # would win over the marker)
    pytester.makeini("[pytest]\nssemock_record_mode = all\n")
    runs = 9 + len(ssemock.chunking.ALL)
    try:
        result = run_xdist_inprocess(pytester, "-n", "2")
        result.assert_outcomes(passed=runs + 1, failed=1)  # the explore file: test_naive fails
        assert counting.counts == {"/v1/chat/completions": 1}
    finally:
        counting.stop()
    out = result.stdout.str()
    assert re.search(r"reproduce with: @pytest\.mark\.ssemock\(chunking=\"at:\d+", out)
    assert any((pytester.path / ".hypothesis" / "ssemock").iterdir())
    live.stop()
    replay = ("-p", "no:xdist", "--ssemock-record-mode=none", "test_stream.py", "test_m.py")
    pytester.runpytest_inprocess(*replay).assert_outcomes(passed=runs)
    leftovers = [p for p in (pytester.path / "cassettes").rglob("*") if p.name.endswith(".tmp")]
    assert leftovers == []


def test_a_scrubbed_body_field_still_replays(pytester: pytest.Pytester, counting: Any) -> None:
    pytester.makeconftest("""
import pytest

def scrub(request):
    body = request.json()
    if isinstance(body, dict) and "user" in body:
        body["user"] = "SCRUBBED"
        request.body = __import__("json").dumps(body).encode()
    return request

@pytest.fixture
def ssemock_config():
    return {"before_record_request": scrub}
""")
    pytester.makepyfile(
        test_scrub="""
import os, openai, pytest
URL = os.environ.get("SSEMOCK_TEST_SERVER", "http://127.0.0.1:9")

@pytest.mark.ssemock
def test_chat(ssemock):
    client = openai.OpenAI(base_url=URL + "/v1", api_key="sk-test-scrub-000", max_retries=0)
    stream = client.chat.completions.create(model="m", messages=[], user="alice@example.com", stream=True)
    ssemock.assert_text("".join(c.choices[0].delta.content or "" for c in stream if c.choices))
"""
    )
    pytester.runpytest_inprocess("--ssemock-record-mode=once").assert_outcomes(passed=1)
    saved = (pytester.path / "cassettes" / "test_scrub" / "test_chat.json").read_text()
    assert "alice@example.com" not in saved and "SCRUBBED" in saved
    counting.stop()
    pytester.runpytest_inprocess().assert_outcomes(passed=1)


def test_class_positional_and_relative_names(pytester: pytest.Pytester) -> None:
    def save(rel: str) -> None:
        c = ssemock.Cassette()
        c.add("GET", f"https://example.test/{rel}", [b"data: x\n\n"])
        c.save(pytester.path / "cassettes" / "test_names" / rel)

    for rel in ("TestA.test_same.json", "TestB.test_same.json", "shared.json", "sub/deep.json"):
        save(rel)
    (pytester.path / "elsewhere").mkdir()
    pytester.makepyfile(
        test_names="""
import httpx, pytest

class TestA:
    @pytest.mark.ssemock
    def test_same(self):
        assert httpx.get("https://example.test/TestA.test_same.json").status_code == 200

class TestB:
    @pytest.mark.ssemock
    def test_same(self):
        assert httpx.get("https://example.test/TestB.test_same.json").status_code == 200

@pytest.mark.ssemock("shared")
def test_positional():
    assert httpx.get("https://example.test/shared.json").status_code == 200

@pytest.mark.ssemock(cassette="sub/deep")
def test_relative(ssemock):
    assert ssemock.path.name == "deep.json" and ssemock.path.parent.name == "sub"
    assert httpx.get("https://example.test/sub/deep.json").status_code == 200
"""
    )
    pytester._monkeypatch.chdir(pytester.path / "elsewhere")  # a name never resolves in the working directory
    result = pytester.runpytest_inprocess(str(pytester.path / "test_names.py"))
    result.assert_outcomes(passed=4)


@pytest.mark.parametrize(
    "marker, expected",
    [
        ('chunking="mid_lin"', "did you mean 'mid_line'?"),
        ('transform="crfl"', "did you mean 'crlf'?"),
        ('faults="disconect:after_event=1"', "disconect"),
        ('match_on=["methd"]', "methd"),
        ('record_mode="onse"', "did you mean 'once'?"),
        ('chunkng="mid_line"', "did you mean 'chunking'?"),
        ('timing="scaled:x"', "scaled"),
        ('drain_on_close="soon"', "drain_on_close must be True, False or a number of seconds"),
        ('ignore_message_paths=["audio"]', "did you mean '$.audio'?"),
        ('ignore_messages_paths=["$.audio"]', "did you mean 'ignore_message_paths'?"),
    ],
)
def test_a_bad_option_is_one_usage_error_naming_the_test(
    pytester: pytest.Pytester, marker: str, expected: str
) -> None:
    pytester.makepyfile(
        test_bad=f"""
import pytest

@pytest.mark.ssemock({marker})
def test_broken():
    pass

def test_fine():
    pass
"""
    )
    result = pytester.runpytest_inprocess()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert "test_bad.py::test_broken" in err and expected in err
    assert "Traceback" not in err and "plugin.py" not in err


@pytest.mark.parametrize(
    "args, ini, expected",
    [
        (["--ssemock-chunking=bytewize"], "", "--ssemock-chunking: "),
        (["--ssemock-faults=stall:before_event=x,seconds=1"], "", "--ssemock-faults: "),
        ([], "ssemock_timing = slow", "ini option ssemock_timing: "),
        ([], "ssemock_check_unplayed = eror", "did you mean 'error'?"),
        (["--ssemock-drain-on-close=soon"], "", "--ssemock-drain-on-close: drain_on_close must be"),
        ([], "ssemock_drain_on_close = -1", "ini option ssemock_drain_on_close: "),
        (
            ["--ssemock-ignore-message-paths=$.a[x]"],
            "",
            "--ssemock-ignore-message-paths: '$.a[x]' is not a JSON path",
        ),
        ([], "ssemock_ignore_message_paths = strikt", "did you mean 'strict'?"),
    ],
)
def test_a_bad_command_line_or_ini_option_is_one_usage_error(
    pytester: pytest.Pytester, args: list[str], ini: str, expected: str
) -> None:
    pytester.makepyfile(test_any="def test_x():\n    pass\n")
    if ini:
        pytester.makeini(f"[pytest]\n{ini}\n")
    result = pytester.runpytest_inprocess(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert expected in result.stderr.str() and "Traceback" not in result.stderr.str()


def test_markers_list_every_keyword(pytester: pytest.Pytester) -> None:
    out = pytester.runpytest_inprocess("--markers").stdout.str()
    line = next(x for x in out.splitlines() if x.startswith("@pytest.mark.ssemock"))
    signature = line[: line.index("):")]
    for keyword in ssemock.plugin.KEYWORDS:
        assert len(re.findall(rf"\b{keyword}=", signature)) == 1, (
            keyword
        )  # each keyword once in the signature


def test_every_option_from_ini_and_the_allowed_hosts_everywhere(pytester: pytest.Pytester) -> None:
    c = ssemock.Cassette()
    c.add("GET", "https://example.test/s", [b"data: 1\n\n", b"data: 2\n\n"])
    c.save(pytester.path / "cassettes" / "test_ini_all" / "test_options.json")
    pytester.makeini(
        "[pytest]\nssemock_timing = scaled:0.5\nssemock_faults = disconnect:after_event=1\n"
        "ssemock_match_on = method, uri\nssemock_allowed_hosts = 127.0.0.1\n"
        "ssemock_check_unplayed = error\nssemock_allow_playback_repeats = true\n"
    )
    pytester.makepyfile(
        test_ini_all="""
import httpx, pytest

@pytest.mark.ssemock
def test_options(ssemock):
    assert ssemock.timing.factor == 0.5
    assert [str(f) for f in ssemock.faults] == ["disconnect:after_event=1"]
    assert ssemock.match_on == ("method", "uri") and ssemock.allow_playback_repeats
    assert ssemock.guard.allowed_hosts == ["127.0.0.1"]
    with pytest.raises(httpx.RemoteProtocolError):
        httpx.get("https://example.test/s")

@pytest.mark.ssemock(cassette="test_options", allowed_hosts=[], faults=[])
def test_marker_wins(ssemock):
    assert ssemock.guard.allowed_hosts == []
    assert httpx.get("https://example.test/s").text == "data: 1\\n\\ndata: 2\\n\\n"
"""
    )
    pytester.runpytest_inprocess().assert_outcomes(passed=2)
    result = pytester.runpytest_inprocess("--ssemock-allowed-hosts=none", "-k", "options")
    result.assert_outcomes(failed=1)
    assert "allowed_hosts == ['127.0.0.1']" in result.stdout.str() or "[] ==" in result.stdout.str()


def test_drain_on_close_from_the_ini_the_command_line_ssemock_config_and_the_marker(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeini("[pytest]\nssemock_drain_on_close = false\n")
    pytester.makeconftest("""
import pytest

@pytest.fixture
def ssemock_config(request):
    return {"drain_on_close": 5} if "configured" in request.node.name else {}
""")
    pytester.makepyfile(
        test_drain="""
import os, pytest

@pytest.mark.ssemock
def test_default(ssemock):
    assert ssemock.drain_on_close == float(os.environ["EXPECTED"]) if os.environ["EXPECTED"] else \
        ssemock.drain_on_close is False

@pytest.mark.ssemock(drain_on_close=True)
def test_marker(ssemock):
    assert ssemock.drain_on_close is True

@pytest.mark.ssemock
def test_configured(ssemock):
    assert ssemock.drain_on_close == 5
"""
    )
    pytester._monkeypatch.setenv("EXPECTED", "")
    pytester.runpytest_inprocess().assert_outcomes(passed=3)  # the ini's false
    pytester._monkeypatch.setenv("EXPECTED", "2.5")
    pytester.runpytest_inprocess("--ssemock-drain-on-close=2.5", "-k", "default or marker").assert_outcomes(
        passed=2
    )


def test_disable_turns_the_plugin_off(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_off="""
import httpcore, pytest

@pytest.mark.ssemock(chunking="all")
def test_unpatched(ssemock):
    assert "handle_request" not in vars(httpcore.ConnectionPool) or \\
        vars(httpcore.ConnectionPool)["handle_request"].__module__.startswith("httpcore")
"""
    )
    pytester.runpytest_inprocess("--ssemock-disable").assert_outcomes(passed=1)


def test_an_unmatched_request_is_a_short_error_with_each_fix(pytester: pytest.Pytester) -> None:
    c = ssemock.Cassette()
    c.add(
        "POST",
        "https://api.example.test/v1/chat/completions",
        [b"data: x\n\n"],
        request_json={"model": "big", "stream": True},
    )
    c.save(pytester.path / "cassettes" / "test_miss" / "test_other_model.json")
    pytester.makepyfile(
        test_miss="""
import httpx, pytest

@pytest.mark.ssemock
def test_other_model():
    httpx.post("https://api.example.test/v1/chat/completions", json={"model": "small", "stream": True})

@pytest.mark.ssemock
def test_no_cassette():
    httpx.get("https://api.example.test/v1/models")
"""
    )
    result = pytester.runpytest_inprocess()
    result.assert_outcomes(failed=2)
    out = result.stdout.str()
    assert "AllMockedAssertionError" not in out and "During handling" not in out
    assert "- body $.model: 'big'  (recorded)" in out and "+ body $.model: 'small'  (sent)" in out
    assert "match_on=['method', 'scheme', 'host', 'port', 'path', 'query']" in out
    assert 'record_mode="new_episodes"' in out and "test_no_cassette.json does not exist" in out
    assert len(out.splitlines()) < 130  # two failures with their tracebacks (was 135 lines for one)


def test_the_plugin_loads_no_http_library_until_a_test_uses_it() -> None:
    import subprocess
    import sys

    code = (
        "import sys, pytest, ssemock.plugin\n"
        "heavy = [m for m in ('httpx', 'respx', 'orjson', 'httpcore', 'ssemock.player.replay', 'ssemock.store.cassette') "
        "if m in sys.modules]\n"
        "print(heavy)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_where_an_option_is_given_in_several_places_the_order_is_marker_cli_config_ini(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As docs/guide/pytest.md says: the marker wins, then the command line, then ssemock_config,
    then the ini file."""
    c = ssemock.Cassette()
    c.add("GET", "https://example.test/s", [b"data: 1\n\n"])
    for name in ("test_config", "test_marker"):
        c.save(pytester.path / "cassettes" / "test_order" / f"{name}.json")
    pytester.makeini("[pytest]\nssemock_timing = scaled:0.25\n")
    pytester.makeconftest("""
import pytest

@pytest.fixture
def ssemock_config():
    return {"timing": "scaled:0.5"}
""")
    pytester.makepyfile(
        test_order="""
import os, pytest

@pytest.mark.ssemock
def test_config(ssemock):
    assert ssemock.timing.factor == float(os.environ["EXPECTED"])

@pytest.mark.ssemock(timing="scaled:4")
def test_marker(ssemock):
    assert ssemock.timing.factor == 4.0
"""
    )
    monkeypatch.setenv("EXPECTED", "0.5")  # ssemock_config over the ini
    pytester.runpytest_inprocess().assert_outcomes(passed=2)
    monkeypatch.setenv("EXPECTED", "2.0")  # the command line over ssemock_config
    pytester.runpytest_inprocess("--ssemock-timing=scaled:2").assert_outcomes(passed=2)


def test_a_relative_cassette_name_with_dots_resolves_lexically(pytester: pytest.Pytester) -> None:
    """``../test_streams/x.json`` is found though this module's own cassette folder was never
    made; a missing one is named by its resolved path."""
    shared = ssemock.Cassette()
    shared.add("GET", "http://api.test/x", [b"data: hi\n\n"])
    shared.save(pytester.path / "cassettes" / "test_streams" / "x.json")
    pytester.makepyfile(
        test_other="""
import httpx, pytest

@pytest.mark.ssemock("../test_streams/x.json")
def test_sibling():
    assert httpx.get("http://api.test/x").text == "data: hi\\n\\n"

@pytest.mark.ssemock("../nowhere/y")
def test_missing():
    httpx.get("http://api.test/x")
"""
    )
    assert not (pytester.path / "cassettes" / "test_other").exists()
    result = pytester.runpytest_inprocess()
    result.assert_outcomes(passed=1, failed=1)
    assert str(pytester.path / "cassettes" / "nowhere" / "y.json") in result.stdout.str()


FAILING = """
import httpx, pytest, ssemock

def cassette():
    c = ssemock.Cassette()
    c.add("POST", "https://api.openai.com/v1/chat/completions",
          [b'data: {"choices": [{"index": 0, "delta": {"content": "H\\\\u00e9llo"}}]}\\n\\n', b"data: [DONE]\\n\\n"])
    return c

def naive(chunk):
    return "".join(__import__("json").loads(p[6:])["choices"][0]["delta"]["content"]
                   for p in chunk.split(b"\\n\\n") if p.startswith(b"data: {"))

def test_text():
    with ssemock.replay(cassette(), chunking="bytewise") as player:
        httpx.post("https://api.openai.com/v1/chat/completions")
        player.assert_text("Hallo")

def test_check():
    with ssemock.replay(cassette(), chunking="bytewise") as player:
        def run():
            with httpx.Client() as client, client.stream("POST", "https://api.openai.com/v1/chat/completions") as r:
                text = "".join(naive(chunk) for chunk in r.iter_raw())
            player.assert_text(text)
        player.check(run)
"""


def test_a_failing_assertion_shows_the_users_lines_and_no_ssemock_frame(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_failing=FAILING)
    result = pytester.runpytest_inprocess("-p", "no:randomly", "-k", "test_text")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    package = str(Path(ssemock.__file__).parent)
    assert package not in out and "def assert_text" not in out  # no ssemock frame, no ssemock source
    assert re.search(r'^>\s+player.assert_text\("Hallo"\)$', out, re.M)  # the user's line
    assert "text of choice 0 differs under chunking bytewise" in out  # ssemock's message
    failure = out[out.index("_ test_text _") : out.index("short test summary")]
    assert len(failure.splitlines()) <= 30, failure
    checked = pytester.runpytest_inprocess("-p", "no:randomly", "-k", "test_check").stdout.str()
    assert package not in checked and "def check" not in checked
    assert "player.check(run)" in checked and 'reproduce with chunking="at:' in checked
    # --full-trace still shows everything
    full = pytester.runpytest_inprocess("-p", "no:randomly", "-k", "test_text", "--full-trace")
    assert package in full.stdout.str()
