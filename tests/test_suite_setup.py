"""The suite's own setup, as a fresh clone meets it (issue 43 item 1): the tests that read the
public corpora run only when ``--ssemock-corpora`` / ``SSEMOCK_CORPORA`` names their folder;
without it they are deselected and the header says how to run them; a folder that is not there
stops the run with one line naming it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CORPUS_TESTS = ROOT / "tests" / "commands" / "test_import_vcr_corpora.py"


def _collect(pytester: pytest.Pytester, *args: str, env: str | None = None) -> pytest.RunResult:
    """The corpus tests collected (not run) by this suite's own configuration and conftest, with
    ``SSEMOCK_CORPORA=env`` (unset if None)."""
    if env is None:
        pytester._monkeypatch.delenv("SSEMOCK_CORPORA", raising=False)
    else:
        pytester._monkeypatch.setenv("SSEMOCK_CORPORA", env)
    pytester._monkeypatch.chdir(ROOT)
    return pytester.runpytest_inprocess(str(CORPUS_TESTS), "--collect-only", "-p", "no:randomly", *args)


def test_without_corpora_the_corpus_tests_are_deselected_and_the_header_says_how_to_run_them(
    pytester: pytest.Pytester,
) -> None:
    result = _collect(pytester)
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED  # this file holds only corpus tests
    result.stdout.fnmatch_lines(
        [
            "corpora: none given, the tests that read them are deselected; run them with "
            "--ssemock-corpora DIR or SSEMOCK_CORPORA=DIR *",
            "* deselected*",
        ]
    )
    deselected = re.search(r"(\d+) deselected", result.stdout.str())
    assert deselected is not None and int(deselected[1]) > 0  # every test of the file
    assert "<Function" not in result.stdout.str()
    # under -q there is no header: the same line ends the output
    quiet = _collect(pytester, "-q")
    quiet.stdout.fnmatch_lines(["corpora: none given, * --ssemock-corpora DIR or SSEMOCK_CORPORA=DIR *"])


@pytest.mark.parametrize("how", ["option", "environment"])
def test_a_corpora_folder_collects_them(pytester: pytest.Pytester, tmp_path: Path, how: str) -> None:
    if how == "option":
        result = _collect(pytester, f"--ssemock-corpora={tmp_path}")
    else:
        result = _collect(pytester, env=str(tmp_path))
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines([f"corpora: {tmp_path.resolve()}", "* tests collected*"])
    collected = re.search(r"(\d+) tests collected", result.stdout.str())
    assert collected is not None and int(collected[1]) == result.stdout.str().count("<Function") > 0
    assert "deselected" not in result.stdout.str()


@pytest.mark.parametrize("how", ["option", "environment"])
def test_a_corpora_folder_that_is_not_there_is_a_usage_error(
    pytester: pytest.Pytester, tmp_path: Path, how: str
) -> None:
    missing = tmp_path / "no-corpora"
    if how == "option":
        result = _collect(pytester, f"--ssemock-corpora={missing}")
        source = "--ssemock-corpora"
    else:
        result = _collect(pytester, env=str(missing))
        source = "SSEMOCK_CORPORA"
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {source}={missing}: {missing} is not a folder; *"])
