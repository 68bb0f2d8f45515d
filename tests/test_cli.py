"""The ``ssemock`` command line: parsing, exit codes, ``demo --json``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import ssemock
from ssemock.cli import build_parser, main


def ssemock_command() -> list[str]:
    script = Path(sys.executable).parent / "ssemock"
    return [str(script)] if script.exists() else [sys.executable, "-m", "ssemock"]


def run(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*ssemock_command(), *args], capture_output=True, text=True,
                          encoding="utf-8", timeout=timeout)


def test_help_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "usage: ssemock" in out and "demo" in out


def test_help_of_the_console_script() -> None:
    proc = run("--help")
    assert proc.returncode == 0, proc.stderr
    assert "demo" in proc.stdout


def test_python_dash_m_ssemock() -> None:
    proc = subprocess.run([sys.executable, "-m", "ssemock", "--help"], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "usage: ssemock" in proc.stdout


def test_unknown_command_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["no-such-command"]) == 2
    assert "invalid choice" in capsys.readouterr().err
    proc = run("no-such-command")
    assert proc.returncode == 2
    assert "invalid choice" in proc.stderr


def test_no_command_prints_help_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "usage: ssemock" in capsys.readouterr().err


def test_unknown_option_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--no-such-option"]) == 2


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert ssemock.__version__ in capsys.readouterr().out


def test_demo_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--help"]) == 0
    assert "--json" in capsys.readouterr().out


def test_subcommands_are_registered_through_one_parser() -> None:
    parser = build_parser()
    args = parser.parse_args(["demo", "--json"])
    assert args.command == "demo" and args.json and callable(args.handler)


def test_demo_json_output_parses(tmp_path: Path) -> None:
    proc = run("demo", "--json", "--dir", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)  # nothing but JSON on stdout
    assert data["live_ok"] is True
    assert data["real_clients_ok"] is True
    assert {"mid_line", "mid_utf8", "bytewise"} <= set(data["naive_failed"])
    assert [r["chunking"] for r in data["rows"]] == [c.name for c in ssemock.chunking.ALL]
    assert data["recorded"]["chunks"] > 1
    assert Path(data["cassette"]).is_file()
    assert Path(data["cassette"]).parent.parent == tmp_path
    assert data["conclusion"].startswith("Conclusion:")
