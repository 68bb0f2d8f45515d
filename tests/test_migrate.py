"""ssemock migrate: a pytest-recording / vcrpy suite, with cassettes recorded by the real vcrpy
against a loopback server, migrated with --write and run again under ssemock: same outcomes."""

from __future__ import annotations

import json
import os
import re
import sys
import textwrap
import xml.etree.ElementTree as ET
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import vcr
import vcr.request
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, StreamingResponse
from starlette.routing import Route
from vcr.record_mode import RecordMode

from ssemock import Cassette, Player, Response, UnmatchedRequestError
from ssemock.commands.cli import main
from ssemock.commands.migrate import VCR_MATCH_ON, plan
from ssemock.core.modes import RECORD_MODES
from ssemock.player import vcr_hooks as vcr_compat


def _sse(obj: object, event: str | None = None) -> str:
    return (f"event: {event}\n" if event else "") + f"data: {json.dumps(obj)}\n\n"


async def _openai(request: Request) -> StreamingResponse:
    prompt = (await request.json())["messages"][-1]["content"]

    async def body() -> AsyncIterator[str]:
        for piece in ("Hello", " from", " ", prompt):
            yield _sse({"choices": [{"index": 0, "delta": {"content": piece}}]})
        yield "data: [DONE]\n\n"

    return StreamingResponse(body(), media_type="text/event-stream")


async def _anthropic(request: Request) -> StreamingResponse:
    prompt = (await request.json())["messages"][-1]["content"]

    async def body() -> AsyncIterator[str]:
        yield _sse({"type": "message_start", "message": {"id": "msg_1"}}, "message_start")
        for piece in ("Hi", " ", prompt):
            yield _sse(
                {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": piece}},
                "content_block_delta",
            )
        yield _sse({"type": "message_stop"}, "message_stop")

    return StreamingResponse(body(), media_type="text/event-stream")


async def _models(request: Request) -> JSONResponse:
    return JSONResponse({"data": [{"id": "gpt-test"}]})


APP = Starlette(
    routes=[
        Route("/v1/chat/completions", _openai, methods=["POST"]),
        Route("/v1/messages", _anthropic, methods=["POST"]),
        Route("/v1/models", _models),
    ]
)

#: (cassette under tests/, requests recorded into it): (route, prompt) or a GET of /v1/models
RECORDINGS: dict[str, list[tuple[str, str | None]]] = {
    "cassettes/test_chat/test_plain.yaml": [("/v1/chat/completions", "plain")],
    "cassettes/test_chat/test_kwargs.yaml": [("/v1/chat/completions", "kwargs")],
    "cassettes/test_chat/shared.yaml": [("/v1/chat/completions", "shared")],
    "cassettes/test_chat/renamed.yaml": [("/v1/chat/completions", "renamed")],
    "cassettes/test_chat/TestGroup.test_in_class.yaml": [("/v1/messages", "class")],
    "cassettes/test_chat/test_param[a].yaml": [("/v1/chat/completions", "a")],
    "cassettes/test_chat/test_param[b].yaml": [("/v1/chat/completions", "b")],
    "cassettes/test_chat/test_stale.yaml": [("/v1/chat/completions", "old prompt")],
    "cassettes/test_chat/test_wrong.yaml": [("/v1/chat/completions", "wrong")],
    "cassettes/test_chat/test_two.yaml": [("/v1/chat/completions", "one")],
    "cassettes/test_chat/extra.yaml": [("/v1/messages", "two")],
    "recorded/test_anthropic.yaml": [("/v1/messages", "claude")],
    "recorded/test_mark_alias.yaml": [("/v1/messages", "alias")],
    "cassettes/manual/cm.yaml": [("/v1/models", None)],
    "cassettes/manual/deco.yaml": [("/v1/chat/completions", "deco")],
    "cassettes/manual/models.yaml": [("/v1/models", None)],
}

CONFTEST = """\
import pytest


def scrub_request(request):  # vcrpy's Request: a case-insensitive headers dict
    request.headers.pop("X-Trace-Id", None)
    return request


def scrub_response(response):  # vcrpy's response dict
    response["headers"].pop("date", None)
    return response


@pytest.fixture(scope="module")
def vcr_config():
    # every test of the suite: keys never reach a cassette
    return {"filter_headers": ["authorization", ("x-api-key", "DUMMY")], "decode_compressed_response": True,
            "before_record_request": scrub_request, "before_record_response": scrub_response}
"""

HELPERS = """\
import json

import httpx

BASE = "{base}"


def chat(text, route="/v1/chat/completions"):
    out = []
    with httpx.Client(headers={{"authorization": "Bearer sk-test-0123456789abcdef"}}) as client:
        body = {{"messages": [{{"role": "user", "content": text}}], "stream": True}}
        with client.stream("POST", BASE + route, json=body) as r:
            for line in r.iter_lines():
                if line.startswith("data: ") and line != "data: [DONE]":
                    event = json.loads(line[6:])
                    if "choices" in event:
                        out.append(event["choices"][0]["delta"]["content"])
                    elif event["type"] == "content_block_delta":
                        out.append(event["delta"]["text"])
    return "".join(out)
"""

TEST_CHAT = """\
import pytest
from vcr.errors import CannotOverwriteExistingCassetteException

from helpers import chat

pytestmark = pytest.mark.vcr


def test_plain():
    assert chat("plain") == "Hello from plain"


@pytest.mark.vcr(match_on=["method", "path"], record_mode="none")
def test_kwargs():
    assert chat("kwargs") == "Hello from kwargs"


@pytest.mark.vcr("shared.yaml")  # another test's cassette, by name
def test_shared():
    assert chat("shared") == "Hello from shared"


@pytest.mark.vcr("extra.yaml")  # read together with its own cassette
def test_two():
    assert chat("one") + chat("two", "/v1/messages") == "Hello from oneHi two"


@pytest.mark.default_cassette("renamed.yaml")
@pytest.mark.vcr
def test_default_cassette():
    assert chat("renamed") == "Hello from renamed"


@pytest.mark.block_network
def test_stale():  # the code sends a new prompt: vcrpy does not match the body
    assert chat("new prompt") == "Hello from old prompt"


def test_wrong():  # fails under vcrpy too
    assert chat("wrong") == "Hello from right"


def test_unrecorded():
    with pytest.raises(CannotOverwriteExistingCassetteException):
        chat("never recorded", "/v1/other")


class TestGroup:
    @pytest.mark.vcr(record_mode="none")
    def test_in_class(self):
        assert chat("class", "/v1/messages") == "Hi class"


@pytest.mark.parametrize("name", ["a", "b"])
def test_param(name):
    assert chat(name) == f"Hello from {name}"
"""

TEST_OTHER = """\
import os

import pytest
from pytest import mark
from vcr.record_mode import RecordMode

from helpers import chat

pytestmark = [pytest.mark.vcr(record_mode=RecordMode.NONE), pytest.mark.block_network]


@pytest.fixture(scope="module")
def vcr_cassette_dir():
    return os.path.join(os.path.dirname(__file__), "recorded")


@pytest.fixture
def vcr_config():
    return dict(match_on=("method", "host", "path"), filter_headers=["authorization"])


def test_anthropic():
    assert chat("claude", "/v1/messages") == "Hi claude"


@mark.vcr
def test_mark_alias():
    assert chat("alias", "/v1/messages") == "Hi alias"
"""

TEST_MANUAL = '''\
import httpx
import vcr

from helpers import BASE, chat


def test_context_manager():
    with vcr.use_cassette("tests/cassettes/manual/cm.yaml"):
        assert httpx.get(BASE + "/v1/models").json()["data"][0]["id"] == "gpt-test"


@vcr.use_cassette("tests/cassettes/manual/deco.yaml", record_mode="none")
def test_decorator():
    """A decorated test."""
    assert chat("deco") == "Hello from deco"


my_vcr = vcr.VCR(
    cassette_library_dir="tests/cassettes/manual",
    record_mode="none",
)


@my_vcr.use_cassette("models.yaml")
def test_configured_vcr():
    assert httpx.get(BASE + "/v1/models").status_code == 200
'''

PYTEST_INI = "[pytest]\n# replay only\naddopts = --record-mode=none -p no:cacheprovider\n"


def record_suite(root: Path) -> None:
    """A pytest-recording suite in ``root``, its cassettes recorded by vcrpy from a loopback server
    that is gone when this returns (so every later run replays)."""
    from ssemock.commands.loopback import running

    tests = root / "tests"
    with running(APP) as base:
        for name, calls in RECORDINGS.items():
            path = tests / name
            path.parent.mkdir(parents=True, exist_ok=True)
            with vcr.use_cassette(str(path), record_mode="all"), httpx.Client() as client:
                for route, prompt in calls:
                    body = (
                        None
                        if prompt is None
                        else {"messages": [{"role": "user", "content": prompt}], "stream": True}
                    )
                    client.request(
                        "GET" if body is None else "POST",
                        base + route,
                        json=body,
                        headers={"x-api-key": "sk-ant-test-0123456789abcdef"},
                    ).read()
    (root / "pytest.ini").write_text(PYTEST_INI)
    (tests / "conftest.py").write_text(CONFTEST)
    (tests / "helpers.py").write_text(HELPERS.format(base=base))
    (tests / "test_chat.py").write_text(TEST_CHAT)
    (tests / "test_other.py").write_text(TEST_OTHER)
    (tests / "test_manual.py").write_text(TEST_MANUAL)


def outcomes(root: Path, pytester: pytest.Pytester, *plugins: str) -> dict[str, str]:
    """Each test's outcome from a pytest run in ``root`` (its junit report): in-process (pytester
    restores sys.modules and sys.path after it; the outer run's conftest and test modules of the
    same names leave sys.modules meanwhile, tests/conftest.py)."""
    report = root / "report.xml"
    here = Path.cwd()
    os.chdir(root)
    try:
        result = pytester.runpytest_inprocess(
            "-p",
            "no:randomly",
            "-o",
            "asyncio_default_fixture_loop_scope=function",  # pytest-asyncio warns into the outer run else
            *(f"-pno:{p}" for p in plugins),
            f"--junitxml={report}",
            "-q",
            "tests",
        )
    finally:
        os.chdir(here)
    assert report.exists(), "\n".join(result.outlines + result.errlines)
    found = {}
    for case in ET.parse(report).iter("testcase"):
        kind = next((c.tag for c in case if c.tag in ("failure", "error", "skipped")), "passed")
        found[f"{case.get('classname')}::{case.get('name')}"] = kind
    report.unlink()
    return found


def snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_a_migrated_suite_has_the_outcomes_it_had_under_vcrpy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], pytester: pytest.Pytester
) -> None:
    record_suite(tmp_path)
    before = outcomes(tmp_path, pytester)
    assert before["tests.test_chat::test_wrong"] == "failure"
    assert sum(v == "passed" for v in before.values()) == 15, before

    files = snapshot(tmp_path)
    assert main(["migrate", str(tmp_path)]) == 0
    dry = capsys.readouterr().out
    assert snapshot(tmp_path) == files  # the dry run writes nothing
    assert '+@pytest.mark.ssemock("renamed")' in dry
    assert "-addopts = --record-mode=none -p no:cacheprovider" in dry
    assert "+addopts = --ssemock-record-mode=none -p no:cacheprovider" in dry
    assert "nothing written" in dry

    assert main(["migrate", str(tmp_path), "--write"]) == 0
    out = capsys.readouterr().out
    assert set(files) <= set(snapshot(tmp_path))  # the vcrpy cassettes are still there
    for name in RECORDINGS:
        json_name = (tmp_path / "tests" / name).with_suffix(".json")
        assert Cassette.load(json_name).interactions, name

    code = (tmp_path / "tests" / "test_chat.py").read_text()
    assert "pytest.raises(ssemock.UnmatchedRequestError)" in code and "import vcr" not in code
    assert "mark.vcr" not in code and "mark.block_network" not in code and "mark.default_cassette" not in code
    assert '@pytest.mark.ssemock("shared")  # another test\'s cassette, by name' in code
    assert '@pytest.mark.ssemock(match_on=["method", "path"], record_mode="none")' in code
    other = (tmp_path / "tests" / "test_other.py").read_text()
    assert 'pytestmark = [pytest.mark.ssemock(record_mode="none")]' in other
    assert "def ssemock_cassette_dir():" in other
    assert '@mark.ssemock(record_mode="none")\ndef test_mark_alias' in other  # the module's options it hid
    assert (
        'return {"match_on": ["method", "host", "path"], "allowed_hosts": []}' in other
    )  # dict(...) as a literal, tuple as a list; vcrpy's strictness kept beside its own matchers
    conftest = (tmp_path / "tests" / "conftest.py").read_text()
    assert "# every test of the suite: keys never reach a cassette" in conftest  # comments kept
    assert '"before_record_request": vcr_compat.request_hook(scrub_request)' in conftest
    assert "from ssemock import vcr_compat" in conftest
    assert json.dumps(list(VCR_MATCH_ON)) in conftest.replace("', '", '", "')
    assert "body matching" not in out  # the comment is in the code, the note in the docs
    manual = (tmp_path / "tests" / "test_manual.py").read_text()
    assert "import vcr" not in manual and "import ssemock" in manual and "VCR(" not in manual
    assert 'with ssemock.use_cassette("tests/cassettes/manual/models.json", record_mode="none"' in manual
    assert (
        '    """A decorated test."""\n    with ssemock.use_cassette("tests/cassettes/manual/deco.json"'
        in manual
    )
    assert "merged into test_two.json" in out

    after = outcomes(tmp_path, pytester, "recording")  # pytest-recording not even loaded
    assert after == before


def test_match_body_keeps_ssemock_matchers(tmp_path: Path) -> None:
    (tmp_path / "test_x.py").write_text("import pytest\n\n\n@pytest.mark.vcr\ndef test_x():\n    pass\n")
    with_vcr = plan(tmp_path)
    body = plan(tmp_path, match_body=True)
    assert any("match_on" in e.after for e in with_vcr.edits)
    assert not any("match_on" in e.after for e in body.edits)
    assert [e.after for e in body.edits if e.path.name == "test_x.py"] == [
        "import pytest\n\n\n@pytest.mark.ssemock\ndef test_x():\n    pass\n"
    ]


def test_strict_matching_is_kept_when_the_suite_names_its_own_matchers(tmp_path: Path) -> None:
    """vcrpy lets no unmatched request through whatever its match_on: the migrated suite keeps
    allowed_hosts=[] (else a request drifted to an unrecorded loopback URL would pass)."""
    (tmp_path / "conftest.py").write_text(
        "import pytest\n\n\n@pytest.fixture\ndef vcr_config():\n"
        '    return {"match_on": ["method", "uri"]}\n\n\n'
        "@pytest.fixture\ndef other_config(vcr_config):\n    return {**vcr_config}\n"
    )
    (tmp_path / "test_x.py").write_text("import pytest\n\n\n@pytest.mark.vcr\ndef test_x():\n    pass\n")
    conftest = next(e.after for e in plan(tmp_path).edits if e.path.name == "conftest.py")
    assert 'return {"match_on": ["method", "uri"], "allowed_hosts": []}' in conftest
    assert "# allowed_hosts=[]: as under vcrpy" in conftest
    assert "vcrpy does not match the request body" not in conftest  # its matchers are its own
    assert "return {**ssemock_config}" in conftest  # extends a config that says it


def test_strict_matching_is_kept_with_match_body(tmp_path: Path) -> None:
    (tmp_path / "test_x.py").write_text("import pytest\n\n\n@pytest.mark.vcr\ndef test_x():\n    pass\n")
    conftest = next(e.after for e in plan(tmp_path, match_body=True).edits if e.path.name == "conftest.py")
    assert 'return {"allowed_hosts": []}' in conftest and "match_on" not in conftest


def test_a_file_that_does_not_parse_is_reported_and_left_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = "import pytest\n\n\n@pytest.mark.vcr\ndef test_x(:\n    pass\n"
    (tmp_path / "test_broken.py").write_text(broken)
    (tmp_path / "test_fine.py").write_text("import pytest\n\n\n@pytest.mark.vcr\ndef test_y():\n    pass\n")
    assert main(["migrate", str(tmp_path), "--write"]) == 1
    err = capsys.readouterr().err
    assert re.search(
        rf"{re.escape(str(tmp_path / 'test_broken.py'))}:\d: does not parse, left as it is", err
    ), err
    assert (tmp_path / "test_broken.py").read_text() == broken
    assert "@pytest.mark.ssemock\n" in (tmp_path / "test_fine.py").read_text()


UNCONVERTIBLE = """\
import pytest

SEEN = []


def remember(request):
    SEEN.append(request.uri)
    return request


def pytest_recording_configure(config, vcr):
    vcr.register_persister(object())


@pytest.fixture
def vcr_config():
    return {"before_record_request": remember, "filter_headers": ["x-trace"]}


@pytest.mark.vcr(ignore_localhost=True, match_on=["method", "my_matcher"])
def test_x():
    pass
"""


def test_what_cannot_be_converted_is_listed_with_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "test_odd.py"
    path.write_text(UNCONVERTIBLE)
    assert main(["migrate", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    expected = [
        (11, "pytest_recording_configure: the VCR it configures"),
        (12, "register_persister: a custom persister"),
        (17, "before_record_request: the hook remember has side effects (SEEN.append())"),
        (17, "filter_headers: ssemock redacts credential headers by default, but not ['x-trace']"),
        (20, "match_on: 'my_matcher' is not a matcher ssemock knows"),
    ]
    for line, message in expected:
        assert f"{path}:{line}: {message}" in out, (message, out)
    assert (
        "ignore_localhost=True" in out and "ignore_localhost: not converted" not in out
    )  # ssemock's option too
    assert path.read_text() == UNCONVERTIBLE


@pytest.mark.parametrize("mode", [*(m.value for m in RecordMode), "rewrite"])
def test_record_mode_in_every_ini_file(tmp_path: Path, mode: str) -> None:
    files = {
        "pytest.ini": f"[pytest]\naddopts = --record-mode={mode} -v\n[other]\nx = --record-mode={mode}\n",
        "tox.ini": f"[tox]\nenvlist = py311\n\n[pytest]\naddopts =\n    --record-mode {mode}\n    --block-network\n",
        "setup.cfg": f"[metadata]\nname = x\n[tool:pytest]\naddopts = -ra --record-mode={mode} --disable-recording\n",
        "pyproject.toml": f'[project]\nname = "x"\n\n[tool.pytest.ini_options]\naddopts = ["--record-mode={mode}", '
        f'"--allowed-hosts=api\\\\.example\\\\.com"]\n',
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    migration = plan(tmp_path)
    after = {e.path.name: e.after for e in migration.edits}
    new = mode if mode in RECORD_MODES else "new_episodes"  # vcrpy's "any"
    assert (
        after["pytest.ini"]
        == f"[pytest]\naddopts = --ssemock-record-mode={new} -v\n[other]\nx = --record-mode={mode}\n"
    )
    assert (
        after["tox.ini"]
        == f"[tox]\nenvlist = py311\n\n[pytest]\naddopts =\n    --ssemock-record-mode {new}\n"
    )
    assert after["setup.cfg"].endswith(f"addopts = -ra --ssemock-record-mode={new} --ssemock-disable\n")
    assert (
        f'"--ssemock-record-mode={new}", "--ssemock-allowed-hosts=api.example.com"' in after["pyproject.toml"]
    )
    assert {p.name: p.read_text() for p in tmp_path.iterdir()} == files  # a plan writes nothing


def test_one_test_file_with_remove_originals(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "cassettes" / "test_x"
    folder.mkdir(parents=True)
    (folder / "test_x.yaml").write_text(
        textwrap.dedent("""\
        interactions:
        - request:
            body: null
            headers: {}
            method: GET
            uri: http://127.0.0.1:1/v1/models
          response:
            body: {string: '{"data": []}'}
            headers: {content-type: [application/json]}
            status: {code: 200, message: OK}
        version: 1
        """)
    )
    (tmp_path / "test_x.py").write_text("import pytest\n\n\n@pytest.mark.vcr\ndef test_x():\n    pass\n")
    assert main(["migrate", str(tmp_path / "test_x.py"), "--write", "--remove-originals"]) == 0  # one file
    assert sorted(p.name for p in folder.iterdir()) == ["test_x.json"]
    assert "def ssemock_config():" in (tmp_path / "test_x.py").read_text()  # no conftest for one file
    assert Cassette.load(folder / "test_x.json").interactions[0].response.body == b'{"data": []}'


def test_without_libcst_it_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "libcst", None)
    assert main(["migrate", str(tmp_path)]) == 1
    assert 'pip install -e ".[migrate]"' in capsys.readouterr().err


MATCHER_CONFTEST = """\
import json

import pytest


def same_stream(r1, r2):
    assert json.loads(r1.body)["stream"] == json.loads(r2.body)["stream"]


def pytest_recording_configure(config, vcr):
    vcr.register_matcher("same_stream", same_stream)


@pytest.fixture
def vcr_config():
    return {"match_on": ["method", "path", "same_stream"]}
"""


def test_a_registered_matcher_is_wrapped_where_it_is_named(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text(MATCHER_CONFTEST)
    (edit,) = plan(tmp_path).edits
    assert "pytest_recording_configure" not in edit.after  # it only registered the matcher
    assert (
        'return {"match_on": ["method", "path", vcr_compat.matcher(same_stream)], "allowed_hosts": []}'
        in (edit.after)
    )
    assert edit.after.startswith("import json\n\nimport pytest\nfrom ssemock import vcr_compat\n")


def test_vcrpy_hooks_and_matchers_run_on_vcrpy_types_under_ssemock() -> None:
    seen: list[tuple[str, object]] = []

    def same_stream(r1: Any, r2: Any) -> None:  # vcrpy's convention: assert
        seen.append(("matcher", type(r1)))
        assert json.loads(r1.body)["stream"] == json.loads(r2.body)["stream"]

    def scrub(request: Any) -> Any:
        seen.append(("hook", type(request)))
        request.headers.pop("X-Trace-Id", None)
        return request

    cassette = Cassette()
    cassette.add(
        "POST",
        "http://api.test/v1/chat",
        [b"data: 1\n\n"],
        request_json={"stream": True},
        headers=[("content-type", "text/event-stream")],
    )
    player = Player(
        cassette,
        match_on=["method", "path", vcr_compat.matcher(same_stream)],
        before_record_request=vcr_compat.request_hook(scrub),
    )
    with player, httpx.Client() as client:
        r = client.post("http://api.test/v1/chat", json={"stream": True}, headers={"x-trace-id": "t-1"})
        assert r.text == "data: 1\n\n"
        with pytest.raises(UnmatchedRequestError, match="same_stream"):
            client.post("http://api.test/v1/chat", json={"stream": False})
    assert ("hook", vcr.request.Request) in seen and ("matcher", vcr.request.Request) in seen


def test_a_vcrpy_response_hook_edits_what_is_recorded() -> None:
    def scrub(response: dict[str, Any]) -> dict[str, Any]:
        response["headers"].pop("x-request-id", None)
        response["body"]["string"] = response["body"]["string"].replace(b"secret", b"XXXXXX")
        return response

    original = Response(
        200,
        [("content-type", "text/event-stream"), ("x-request-id", "req_1")],
        b"data: a secret\n\ndata: b\n\n",
        [5, 25],
        [0.01, 0.02],
    )
    out = vcr_compat.response_hook(scrub)(original)
    assert out is not None
    assert out.headers == [("content-type", "text/event-stream")]
    assert out.body == b"data: a XXXXXX\n\ndata: b\n\n" and out.ends == [16, 25]  # one chunk per event
    assert vcr_compat.response_hook(lambda r: None)(original) is None


def test_a_vcrpy_json_cassette_at_ssemock_s_path_is_converted_in_place_and_kept(tmp_path: Path) -> None:
    folder = tmp_path / "cassettes" / "test_x"
    folder.mkdir(parents=True)
    original = json.dumps(
        {
            "version": 1,
            "interactions": [
                {
                    "request": {
                        "method": "GET",
                        "uri": "http://127.0.0.1:1/v1/models",
                        "body": None,
                        "headers": {},
                    },
                    "response": {
                        "status": {"code": 200, "message": "OK"},
                        "headers": {"content-type": ["application/json"]},
                        "body": {"string": "{}"},
                    },
                }
            ],
        }
    ).encode()
    (folder / "test_x.json").write_bytes(original)
    (tmp_path / "test_x.py").write_text(
        'import pytest\n\n\n@pytest.mark.vcr(serializer="json")\ndef test_x():\n    pass\n'
    )
    migration = plan(tmp_path)
    assert any("converted in place, the original kept as test_x.json.vcrpy" in str(f) for f in migration.todo)
    migration.write()
    assert (folder / "test_x.json.vcrpy").read_bytes() == original
    assert Cassette.load(folder / "test_x.json").interactions[0].response.body == b"{}"


FORMS = [  # (before, after): each form of pytest-recording / vcrpy usage the rewriter knows
    (
        "import pytest\n\n\n@pytest.mark.vcr(record_mode='once')\nclass TestX:\n    def test_x(self):\n        pass\n",
        'import pytest\n\n\n@pytest.mark.ssemock(record_mode="once")\nclass TestX:\n    def test_x(self):\n        pass\n',
    ),
    (
        "import pytest\n\npytestmark = [pytest.mark.vcr, pytest.mark.slow]\n",
        "import pytest\n\npytestmark = [pytest.mark.ssemock, pytest.mark.slow]\n",
    ),
    (
        "import pytest\n\n\n@pytest.mark.block_network(allowed_hosts=['127\\\\.0\\\\.0\\\\.1'])\ndef test_x():\n    pass\n",
        'import pytest\n\n\n@pytest.mark.ssemock(allowed_hosts=["127.0.0.1"])\ndef test_x():\n    pass\n',
    ),
    (
        "import pytest\nfrom vcr.record_mode import RecordMode\n\n\n@pytest.mark.vcr(record_mode=RecordMode.ALL)\n"
        "def test_x():\n    pass\n",
        'import pytest\n\n\n@pytest.mark.ssemock(record_mode="all")\ndef test_x():\n    pass\n',
    ),
    (
        "import vcr\n\n\n@vcr.use_cassette('c.yaml', record_mode='none', match_on=['method', 'uri'])\n"
        "async def test_x():\n    await go()\n",
        'import ssemock\n\n\nasync def test_x():\n    with ssemock.use_cassette("c.json", record_mode="none", '
        "match_on=['method', 'uri'], allowed_hosts=[]):\n        await go()\n",
    ),
    (
        "from vcr import use_cassette\n\n\ndef test_x():\n    with use_cassette('c.yaml', allow_playback_repeats=True):\n"
        "        pass\n",
        'import ssemock\n\n\ndef test_x():\n    with ssemock.use_cassette("c.json", allow_playback_repeats=True, '
        'record_mode="once", match_on=["method", "scheme", "host", "port", "path", "query"], '
        "allowed_hosts=[]):\n        pass\n",
    ),
]


@pytest.mark.parametrize(("before", "after"), FORMS)
def test_each_form_is_rewritten(tmp_path: Path, before: str, after: str) -> None:
    (tmp_path / "cassettes").mkdir()
    (tmp_path / "test_x.py").write_text(before)
    edits = {e.path.name: e.after for e in plan(tmp_path).edits}
    assert edits["test_x.py"] == after


def test_a_cassette_path_computed_at_run_time_is_listed(tmp_path: Path) -> None:
    (tmp_path / "test_x.py").write_text(
        "import vcr\n\n\ndef test_x(name):\n    with vcr.use_cassette(f'{name}.yaml'):\n        pass\n"
    )
    (finding,) = plan(tmp_path).todo
    assert (finding.path.name, finding.line) == ("test_x.py", 5)
    assert "a path computed at run time" in finding.message


def test_crlf_line_endings_are_kept(tmp_path: Path) -> None:
    before = "import pytest\r\n\r\n\r\n@pytest.mark.vcr  # a comment\r\ndef test_x():\r\n    pass\r\n"
    (tmp_path / "test_x.py").write_bytes(before.encode())
    plan(tmp_path).write()
    assert (tmp_path / "test_x.py").read_bytes() == before.replace("mark.vcr", "mark.ssemock").encode()


def test_a_configured_vcr_used_otherwise_stays_and_is_listed(tmp_path: Path) -> None:
    (tmp_path / "test_x.py").write_text(
        "import vcr\n\nmy_vcr = vcr.VCR(record_mode='none')\nmy_vcr.x = 1\n\n\n"
        "@my_vcr.use_cassette('c.yaml')\ndef test_x():\n    pass\n"
    )
    migration = plan(tmp_path)
    (edit,) = migration.edits
    assert "import vcr\nimport ssemock\n\nmy_vcr = vcr.VCR(record_mode='none')" in edit.after
    assert 'with ssemock.use_cassette("c.json", record_mode="none",' in edit.after
    assert [(f.line, f.message.split(":")[0]) for f in migration.todo if "VCR" in f.message] == [
        (3, "my_vcr = vcr.VCR(...)")
    ]


def test_the_dry_run_diff_masks_values_never_header_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "conftest.py").write_text(
        "import pytest\n\n\n@pytest.fixture\ndef vcr_config():\n"
        '    return {"filter_headers": ["authorization", "x-api-key", ("x-goog-api-key", None)]}\n'
    )
    key = "sk-ant-api03-" + "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJ"
    (tmp_path / "test_x.py").write_text(
        f'import pytest\n\n\n@pytest.mark.vcr\ndef test_x():\n    headers = {{"x-api-key": "{key}"}}\n'
    )
    assert main(["migrate", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert '["authorization", "x-api-key", ("x-goog-api-key", None)]' in out  # names, shown as written
    assert key not in out and '{"x-api-key": "sk-ant-***"}' in out  # the value, masked
