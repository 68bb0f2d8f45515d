"""Without the ``explore`` extra (hypothesis), every way into explore says which extra to install:
``ssemock.explore``, ``ssemock.strategies``, the marker's ``explore=``, ``--ssemock-explore``, and
``ssemock doctor`` says whether explore is available. One child process hides hypothesis
(``sys.modules['hypothesis'] = None`` before anything imports it) and tries each."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import ssemock
from ssemock.commands.doctor import report

CHILD = textwrap.dedent(
    """
    import json, os, sys
    sys.modules["hypothesis"] = None  # as if the explore extra were not installed
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"  # hypothesis's own pytest plugin with it
    import pytest, ssemock, ssemock.strategies
    from ssemock.commands.doctor import report

    out = {}
    cassette = ssemock.Cassette.load(sys.argv[1])
    for name, use in [
        ("explore", lambda: ssemock.explore(cassette, lambda player: None, 5)),
        ("variants", lambda: ssemock.strategies.variants(cassette)),
        ("chunkings", lambda: ssemock.strategies.chunkings(b"data: 1\\n\\n")),
    ]:
        try:
            use()
            out[name] = "no error"
        except ModuleNotFoundError as exc:
            out[name] = str(exc)
    out["doctor"] = [line for line in report() if line.startswith("explore:")]
    for name, args in [("marker", ["-q", "test_marked.py"]), ("option", ["-q", "--ssemock-explore=5", "test_plain.py"])]:
        code = pytest.main(["-p", "no:cacheprovider", "-p", "ssemock.plugin", *args])
        out[name] = int(code)
    print("RESULT " + json.dumps(out))
    """
)


def test_explore_without_hypothesis_names_the_extra(tmp_path: Path) -> None:
    cassette = ssemock.Cassette()
    cassette.add("GET", "https://api.example.test/s", [b"data: 1\n\n"])
    cassette.save(tmp_path / "chat.json")
    test = 'import httpx, pytest\n\n@pytest.mark.ssemock("../chat"{})\ndef test_x():\n    httpx.get("https://api.example.test/s")\n'
    (tmp_path / "test_marked.py").write_text(test.format(", explore=5"))
    (tmp_path / "test_plain.py").write_text(test.format(""))
    (tmp_path / "cassettes").mkdir()
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(tmp_path / "chat.json")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    line = next((x for x in done.stdout.splitlines() if x.startswith("RESULT ")), None)
    assert line is not None, done.stdout + done.stderr
    out = json.loads(line.removeprefix("RESULT "))
    for name, feature in [
        ("explore", "ssemock.explore"),
        ("variants", "ssemock.strategies.variants"),
        ("chunkings", "ssemock.strategies.chunkings"),
    ]:
        assert out[name].startswith(f"ssemock: {feature} needs hypothesis, which the 'explore' extra"), out
        assert 'pip install -e ".[explore]"' in out[name]
    assert out["doctor"] == [
        "explore: unavailable: it needs hypothesis, the 'explore' extra "
        '(pip install -e ".[explore]" in your ssemock clone '
        '(or pip install "ssemock[explore] @ git+<URL of the ssemock repository>"))'
    ]
    assert out["marker"] == out["option"] == 4  # a usage error, before any test runs
    assert done.stderr.count("explore needs hypothesis, which the 'explore' extra installs") == 2, done.stderr
    assert "--ssemock-explore" in done.stderr and "test_marked.py::test_x" in done.stderr


def test_doctor_says_explore_is_available_with_hypothesis() -> None:
    import hypothesis

    assert f"explore: available (hypothesis {hypothesis.__version__})" in report()


def test_the_explore_extra_holds_hypothesis_and_dev_holds_it() -> None:
    import tomllib

    pyproject = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())
    extras = pyproject["project"]["optional-dependencies"]
    assert any(r.startswith("hypothesis") for r in extras["explore"])
    assert any("explore" in r for r in extras["dev"] if r.startswith("ssemock["))
    assert json.dumps(extras["demo"])  # the README's first command: demo (explore is its own extra)
