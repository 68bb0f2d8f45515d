"""A misspelt ``ssemock_*`` ini key is the same did-you-mean usage error as a misspelt marker
keyword or command-line value, in every file pytest reads its configuration from."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize("form", ["tox.ini", "pyproject.toml", "setup.cfg"])
def test_a_misspelt_ini_key_is_a_usage_error_naming_the_closest(pytester: pytest.Pytester, form: str) -> None:
    if form == "tox.ini":
        pytester.makeini("[pytest]\nssemock_chunkng = mid_line\n")
    elif form == "pyproject.toml":
        pytester.makepyprojecttoml('[tool.pytest.ini_options]\nssemock_chunkng = "mid_line"\n')
    else:
        pytester.makefile(".cfg", setup="[tool:pytest]\nssemock_chunkng = mid_line\n")
    pytester.makepyfile(test_x="def test_x():\n    pass\n")
    result = pytester.runpytest_inprocess("-p", "no:randomly")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert (
        f"{pytester.path / form}: unknown ini option 'ssemock_chunkng': did you mean 'ssemock_chunking'?"
        in err
    )
    assert "valid: ssemock_record_mode, ssemock_chunking" in err


def test_known_ini_keys_pass(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nssemock_chunking = mid_line\nssemock_check_unplayed = warn\n")
    pytester.makepyfile(test_x="def test_x():\n    pass\n")
    pytester.runpytest_inprocess("-p", "no:randomly").assert_outcomes(passed=1)
