"""block_subprocesses=True: children started during a replay get proxy variables pointing at a
loopback port that refuses every connection; the test process's own environment is unchanged."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys

import pytest

import ssemock

PROXIES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")
SHOW = "import json, os; print(json.dumps(dict(os.environ)))"
# The child checks the proxy is set before it sends anything, so a missing proxy never sends
# a packet towards the documentation address.
FETCH = """
import os, sys, urllib.request
proxy = os.environ.get("HTTP_PROXY", "")
if not proxy.startswith("http://127.0.0.1:"):
    sys.exit("no refusing proxy")
try:
    urllib.request.urlopen("http://192.0.2.1:9/", timeout=5)
except OSError as exc:
    print("refused:", type(exc).__name__)
else:
    sys.exit("the request went through")
"""


def _run(code: str, **kwargs: object) -> str:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60, **kwargs
    ).stdout  # type: ignore[call-overload,no-any-return]


def test_children_get_a_refusing_proxy_and_the_parent_keeps_its_environment() -> None:
    before = dict(os.environ)
    with ssemock.replay(
        ssemock.Cassette(),
        block_subprocesses=True,
        allowed_hosts=["*.internal.example"],
        ignore_hosts=["10.0.0.0/8"],
    ):
        env = json.loads(_run(SHOW))
        assert "refused:" in _run(FETCH)
        assert dict(os.environ) == before
    proxies = {env[name] for name in PROXIES}
    assert len(proxies) == 1 and proxies.pop().startswith("http://127.0.0.1:")
    assert env["NO_PROXY"] == env["no_proxy"] == ".internal.example,10.0.0.0/8"
    after = json.loads(_run(SHOW))  # the player is gone: children get the plain environment
    assert {name: after.get(name) for name in PROXIES} == {name: before.get(name) for name in PROXIES}


def test_an_explicit_env_is_kept_and_loopback_stays_direct() -> None:
    with ssemock.replay(ssemock.Cassette(), block_subprocesses=True):
        env = json.loads(_run(SHOW, env={"KEEP": "1", "PATH": os.environ.get("PATH", "")}))
    assert env["KEEP"] == "1" and env["HTTPS_PROXY"].startswith("http://127.0.0.1:")
    assert {"localhost", "127.0.0.1", "::1", "127.0.0.0/8"} <= set(env["NO_PROXY"].split(","))


def test_asyncio_children_too() -> None:
    async def child() -> bytes:
        process = await asyncio.create_subprocess_exec(sys.executable, "-c", SHOW, stdout=subprocess.PIPE)
        out, _ = await process.communicate()
        return out

    with ssemock.replay(ssemock.Cassette(), block_subprocesses=True):
        env = json.loads(asyncio.run(child()))
    assert env["ALL_PROXY"].startswith("http://127.0.0.1:")


def test_off_by_default() -> None:
    before = {name: os.environ.get(name) for name in PROXIES}
    with ssemock.replay(ssemock.Cassette()):
        env = json.loads(_run(SHOW))
    assert {name: env.get(name) for name in PROXIES} == before


def test_the_marker_takes_it(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(f"""
        import json, subprocess, sys
        import pytest

        @pytest.mark.ssemock(block_subprocesses=True)
        def test_x(ssemock):
            out = subprocess.run([sys.executable, "-c", {SHOW!r}], capture_output=True, text=True).stdout
            assert json.loads(out)["HTTP_PROXY"].startswith("http://127.0.0.1:")
    """)
    result = pytester.runpytest_inprocess(
        "-p", "no:randomly", "-o", "asyncio_default_fixture_loop_scope=function"
    )
    result.assert_outcomes(passed=1)


WRITE = "import json, os, sys; open(sys.argv[1], 'w').write(json.dumps(dict(os.environ)))"


@pytest.mark.parametrize(
    "start",
    [
        pytest.param(lambda out: os.system(f'{sys.executable} -c "{WRITE}" {out}'), id="os.system"),
        pytest.param(
            lambda out: os.spawnv(os.P_WAIT, sys.executable, [sys.executable, "-c", WRITE, out]),
            id="os.spawnv",
        ),
        pytest.param(
            lambda out: os.spawnlp(os.P_WAIT, sys.executable, sys.executable, "-c", WRITE, out),
            id="os.spawnlp",
        ),
        pytest.param(
            lambda out: os.spawnve(
                os.P_WAIT, sys.executable, [sys.executable, "-c", WRITE, out], {"KEEP": "1"}
            ),
            id="os.spawnve",
        ),
    ],
)
def test_os_level_starts_get_it_too(start: object, tmp_path: object) -> None:
    """os.system, os.spawn* (and the os.exec* under them) take the child's environment as well."""
    out = str(tmp_path / "env.json")  # type: ignore[operator]
    before = dict(os.environ)
    with ssemock.replay(ssemock.Cassette(), block_subprocesses=True):
        assert start(out) == 0  # type: ignore[operator]
        assert dict(os.environ) == before
    with open(out) as f:
        env = json.load(f)
    assert env["HTTPS_PROXY"].startswith("http://127.0.0.1:") and "127.0.0.1" in env["NO_PROXY"].split(",")
    assert os.system(f'{sys.executable} -c "{WRITE}" {out}') == 0  # the player is gone: plain again
    with open(out) as f:
        assert json.load(f).get("HTTPS_PROXY") == before.get("HTTPS_PROXY")


def test_os_system_keeps_its_wait_status() -> None:
    with ssemock.replay(ssemock.Cassette(), block_subprocesses=True):
        status = os.system(f'{sys.executable} -c "import sys; sys.exit(3)"')
    assert os.waitstatus_to_exitcode(status) == 3
