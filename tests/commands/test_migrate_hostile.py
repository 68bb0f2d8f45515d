"""``ssemock migrate`` on hostile and tricky suites, through the CLI in one subprocess: a test file
too deeply nested for its syntax-tree rewriter (libcst recursed, then crashed the process) is
reported and left alone while the rest migrates; a ``vcr.VCR`` object another module uses is
kept; pytest-recording's options in a pyproject list are carried over item by item; vcrpy
Cassette attributes read on a migrated block, and options not carried, are listed to do."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import tomllib
from pathlib import Path

CASSETTE = """interactions:
- request:
    body: null
    headers: {}
    method: GET
    uri: http://127.0.0.1:9/models
  response:
    body: {string: 'ok'}
    headers: {}
    status: {code: 200, message: OK}
version: 1
"""
PYPROJECT = """[tool.pytest.ini_options]
addopts = ["--block-network", "-v"]
more = ["-q", "--block-network"]
split = ["--record-mode", "none", "--block-network", "-x"]
lines = [
    "--block-network",
    "--vcr-record=none",
]
"""
DEEP = """import pytest


@pytest.mark.vcr
def test_sum():
    assert {terms} > 0
"""
HELPERS = """import vcr

my_vcr = vcr.VCR(record_mode="none")
__all__ = ["my_vcr"]


def fetch():
    with my_vcr.use_cassette("cassettes/models.yaml") as cass:
        pass
    assert cass.play_count == 1
    assert cass.all_played
"""
RECORDERS = """import vcr

recorder = vcr.VCR(record_mode="none")


def fetch():
    with recorder.use_cassette("cassettes/models.yaml"):
        pass
"""
USES = """from recorders import recorder


def test_uses_the_recorder():
    with recorder.use_cassette("cassettes/models.yaml"):
        pass
"""
PLAIN = """import pytest


@pytest.mark.vcr
def test_plain():
    pass
"""


def test_hostile_files_are_reported_and_the_rest_migrates_without_breaking_a_module(tmp_path: Path) -> None:
    tests = tmp_path / "tests"
    (tests / "cassettes" / "test_plain").mkdir(parents=True)
    (tests / "cassettes" / "models.yaml").write_text(CASSETTE)
    (tests / "cassettes" / "test_plain" / "test_plain.yaml").write_text(CASSETTE)
    (tmp_path / "pyproject.toml").write_text(PYPROJECT)
    deep = DEEP.format(terms=" + ".join(["1"] * 1_000))  # libcst: RecursionError
    deeper = DEEP.format(terms=" + ".join(["1"] * 10_000))  # libcst: a segfault after ~90 s
    (tests / "test_deep.py").write_text(deep)
    (tests / "test_deeper.py").write_text(deeper)
    (tests / "helpers.py").write_text(HELPERS)
    (tests / "recorders.py").write_text(RECORDERS)
    (tests / "test_uses.py").write_text(USES)
    (tests / "test_plain.py").write_text(PLAIN)

    proc = subprocess.run(
        [sys.executable, "-m", "ssemock", "migrate", "--write", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "NO_COLOR": "1"},
    )
    out = proc.stdout + proc.stderr
    assert "Traceback" not in out, out

    # the deep files: one clear line each, naming the file and the bound; left as they were
    for name, text in (("test_deep.py", deep), ("test_deeper.py", deeper)):
        (line,) = [x for x in out.splitlines() if name in x]
        assert "levels deep" in line or "deeper than Python's own parser" in line, line
        assert "MAX_NESTING" in line and "by hand" in line, line
        assert (tests / name).read_text() == text
    # ...and the run went on: the plain test migrated, its cassette converted
    assert "pytest.mark.ssemock" in (tests / "test_plain.py").read_text()
    assert (tests / "cassettes" / "test_plain" / "test_plain.json").exists()

    # a VCR object __all__ lists, or another module imports: kept, so that module still works
    helpers = (tests / "helpers.py").read_text()
    recorders = (tests / "recorders.py").read_text()
    assert 'my_vcr = vcr.VCR(record_mode="none")' in helpers and "import vcr" in helpers
    assert 'recorder = vcr.VCR(record_mode="none")' in recorders and "import vcr" in recorders
    for text in (helpers, recorders, (tests / "test_uses.py").read_text()):
        ast.parse(text)
    assert "helpers.py:3: my_vcr = vcr.VCR(...): kept, as vcrpy, because its __all__ lists it" in out, out
    assert (
        "recorders.py:3: recorder = vcr.VCR(...): kept, as vcrpy, because tests/test_uses.py may import it"
        in out
    )
    # vcrpy Cassette attributes on a migrated block: listed, with what to use
    assert "helpers.py:10: cass.play_count: vcrpy's Cassette attribute" in out, out
    assert "sum(cass.play_counts)" in out
    assert "helpers.py:11: cass.all_played" in out and "not cass.unplayed()" in out

    # pyproject: --block-network dropped item by item (never an empty string left), the split
    # --record-mode carried over, the option it could not carry listed with its line
    options = tomllib.loads((tmp_path / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert options["addopts"] == ["-v"]
    assert options["more"] == ["-q"]
    assert options["split"] == ["--ssemock-record-mode=none", "-x"]
    assert options["lines"] == ["--vcr-record=none"]
    assert "pyproject.toml:7: --vcr-record: a vcrpy plugin's option, not carried over" in out, out
