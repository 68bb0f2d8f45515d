"""``stdio=`` through the pytest marker: a test that starts a line server through
``subprocess.run`` records it on the first run, and replays it with the script deleted."""

from __future__ import annotations

import pytest

TESTS = """
import subprocess
import sys
from pathlib import Path

import pytest

SERVER = Path(__file__).with_name("shout.py")


@pytest.mark.ssemock("shout", stdio=["shout.py"])
def test_shout(ssemock):
    done = subprocess.run([sys.executable, str(SERVER)], input=b"hi\\n", capture_output=True, check=False)
    assert (done.stdout, done.returncode) == (b"HI\\n", 0)


@pytest.mark.ssemock("shout", stdio=["shout.py"])
def test_never_starts_it(ssemock):
    pass
"""


def test_the_marker_records_then_replays_without_the_script(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_shout=TESTS)
    server = pytester.path / "shout.py"
    server.write_text("import sys\nfor line in sys.stdin:\n    print(line.strip().upper(), flush=True)\n")
    pytester.runpytest_inprocess("-p", "no:randomly", "--ssemock-record-mode=once").assert_outcomes(passed=2)
    cassette = pytester.path / "cassettes" / "test_shout" / "shout.json"
    assert '"match": "shout.py"' in cassette.read_text()
    server.unlink()
    replayed = pytester.runpytest_inprocess("-p", "no:randomly")
    replayed.assert_outcomes(passed=2, warnings=1)
    replayed.stdout.fnmatch_lines(
        ["*test_never_starts_it*", "*stdio sessions never started: [[]0[]] of *shout.json*"]
    )


def test_a_bad_stdio_marker_fails_the_test_naming_it(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.ssemock(stdio="")
        def test_x(ssemock):
            pass
        """
    )
    result = pytester.runpytest_inprocess("-p", "no:randomly")
    assert result.ret != 0
    result.stderr.fnmatch_lines(["*test_x: stdio: stdio takes a list of program names or script paths*"])
