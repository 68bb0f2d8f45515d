"""``ssemock --version`` and ``ssemock doctor``: what a user pastes into a bug report."""

from __future__ import annotations

import subprocess
import sys

import pytest

import ssemock
from ssemock.commands.cli import main
from ssemock.commands.doctor import EXTRAS, install_hint
from ssemock.framing import _speedups


def test_version_says_the_version_the_accelerator_and_the_python(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith(f"ssemock {ssemock.__version__} (")
    assert lines[1] == f"accelerator: C accelerator in use ({_speedups.__file__.rsplit('/', 1)[-1]})"
    assert lines[2].startswith("python: ") and sys.executable in lines[2]


def test_without_the_accelerator_version_says_pure_python_and_why() -> None:
    code = (
        "import sys; sys.modules['ssemock.framing._speedups'] = None\n"
        "from ssemock.commands.cli import main; raise SystemExit(main(['--version']))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    accelerator = done.stdout.splitlines()[1]
    assert accelerator.startswith("accelerator: pure Python: the accelerator was not built")
    assert "C compiler" in accelerator


def test_doctor_lists_extras_and_library_versions(capsys: pytest.CaptureFixture[str]) -> None:
    import httpx

    assert main(["doctor"]) == 0
    out = capsys.readouterr().out
    # the dev environment has every extra
    assert f"extras importable: {', '.join(EXTRAS)}" in out.splitlines()
    assert f"httpx {httpx.__version__}" in out
    assert out.startswith(f"ssemock {ssemock.__version__} (")


def test_install_hints_are_for_a_clone() -> None:
    hint = install_hint("serve")
    assert 'pip install -e ".[serve]"' in hint and "git+" in hint
