"""``ssemock --version`` and ``ssemock doctor``: what a user pastes into a bug report."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
from pathlib import Path

import pytest

import ssemock
from ssemock.commands.cli import main
from ssemock.commands.doctor import EXTRAS, install_hint, report
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


def test_doctor_lists_each_websocket_stack_its_version_and_its_hook(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    import websockets.asyncio.client

    from ssemock.stacks import WS_STACKS

    assert main(["doctor"]) == 0
    out = capsys.readouterr().out.splitlines()
    section = out[out.index("websocket stacks (patched while a player is active):") + 1 :]
    assert [line.split(":")[0].strip() for line in section] == [*WS_STACKS, "httpx-ws"]
    version = importlib.metadata.version("websockets")
    assert section[0] == (
        f"  websockets: websockets {version}, hook websockets.asyncio.client.connect.open_tcp_connection"
    )
    assert section[3].startswith(f"  aiohttp.ws: aiohttp {importlib.metadata.version('aiohttp')}, hook ")
    with ssemock.use_cassette(tmp_path / "none.json", record_mode="none"):  # a player patches them
        assert websockets.asyncio.client  # imported: its stack is installed now
        during = report()
    assert (
        f"  websockets: websockets {version}, hook websockets.asyncio.client.connect.open_tcp_connection (patched now)"
        in during
    )
    assert not any("patched now" in line for line in report())
