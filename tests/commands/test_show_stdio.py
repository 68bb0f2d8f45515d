"""``ssemock show`` and ``validate`` of a cassette holding child processes (``stdio``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ssemock import Cassette
from ssemock.commands.cli import main
from ssemock.store.stdio import Line, StdioSession


def _saved(tmp_path: Path) -> Path:
    session = StdioSession(
        "server.py",
        ["python", "/srv/server.py", "--key", "sk-***"],
        [
            Line("stdin", 0.001, b'{"id":1,"method":"initialize"}\n'),
            Line("stderr", 0.002, b"starting\n"),
            Line("stdout", 0.01, b'{"id":1,"result":{}}\n'),
            Line("stdin", 0.02, None),
        ],
        None,
    )
    return Cassette(stdio=[session]).save(tmp_path / "c.json")


def test_show_lists_each_child(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _saved(tmp_path)
    assert main(["show", str(path)]) == 0
    out = capsys.readouterr().out
    assert "stdio session 0 (server.py): python /srv/server.py --key sk-***" in out
    assert "1 lines in, stdin closed, 1 out, 1 on stderr; still running when recorded" in out
    assert main(["show", "--json", str(path)]) == 0
    [child] = json.loads(capsys.readouterr().out)["stdio"]
    assert child["lines"] == {"stdin": 1, "stdout": 1, "stderr": 1} and child["exit"] is None


def test_validate_takes_a_cassette_of_children_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["validate", str(_saved(tmp_path))]) == 0
    assert "no interactions" not in capsys.readouterr().out
