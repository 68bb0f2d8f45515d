"""A cassette's child processes (``stdio``): saved a line a line, loaded back equal, and every
malformed part a CassetteError naming the file, the session, the line and the field."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

import ssemock
from ssemock.store.stdio import Line, StdioSession

SESSION = StdioSession(
    "server.py",
    ["python", "/tmp/x/server.py"],
    [
        Line("stdin", 0.0004, b'{"id":0,"method":"initialize"}\n'),
        Line("stderr", 0.002, b"starting\n"),
        Line("stdout", 0.0105, b'{"id":0,"result":{"text":"caf\xc3\xa9"}}\n'),
        Line("stdout", 0.011, b"\xff\xfe not UTF-8\n"),
        Line("stdout", 0.012, b'{"id":1}\n', (3, 9)),  # read in two
        Line("stdin", 0.02, None),
    ],
    0,
)


def test_a_session_round_trips_one_line_a_line(tmp_path: Path) -> None:
    cassette = ssemock.Cassette(stdio=[SESSION])
    path = cassette.save(tmp_path / "c.json")
    text = path.read_text()
    assert '        ["stdin",0.4,"{\\"id\\":0,\\"method\\":\\"initialize\\"}\\n"],\n' in text
    assert '{"base64":"//4gbm90IFVURi04Cg=="}' in text and orjson.loads(text)["version"] == 2
    assert '        ["stdout",12.0,"{\\"id\\":1}\\n",[3,9]],\n' in text
    loaded = ssemock.Cassette.load(path)
    assert loaded.stdio == [SESSION] and loaded.interactions == []
    assert loaded.dumps() == path.read_bytes()


def test_a_cassette_without_children_is_unchanged() -> None:
    cassette = ssemock.Cassette()
    cassette.add("GET", "https://api.example.com/s", [b"data: x\n\n"])
    assert b"stdio" not in cassette.dumps() and orjson.loads(cassette.dumps())["version"] == 1


@pytest.mark.parametrize(
    ("session", "said"),
    [
        ({"match": "", "argv": ["x"], "lines": [], "exit": 0}, "stdio session 0: match must be"),
        ({"match": "s", "argv": [], "lines": [], "exit": 0}, "argv must be a non-empty list"),
        ({"match": "s", "argv": ["x"], "lines": {}, "exit": 0}, "lines must be a list"),
        ({"match": "s", "argv": ["x"], "lines": [], "exit": "0"}, "exit must be an integer"),
        ({"match": "s", "argv": ["x"], "lines": [["stdout", 1]], "exit": 0}, "line 0 must be [stream"),
        ({"match": "s", "argv": ["x"], "lines": [["out", 1, "x"]], "exit": 0}, "line 0: stream must be"),
        ({"match": "s", "argv": ["x"], "lines": [["stdin", -1, "x"]], "exit": 0}, "line 0: t_ms must be"),
        ({"match": "s", "argv": ["x"], "lines": [["stdout", 1, None]], "exit": 0}, "is stdin's only"),
        ({"match": "s", "argv": ["x"], "lines": [["stdout", 1, {"base64": "!"}]], "exit": 0}, "not base64"),
        ({"match": "s", "argv": ["x"], "lines": [["stdout", 1, ""]], "exit": 0}, "line 0: data is empty"),
        (
            {"match": "s", "argv": ["x"], "lines": [["stdout", 1, "ab\n", [4]]], "exit": 0},
            "line 0: reads must be",
        ),
        (
            {"match": "s", "argv": ["x"], "lines": [["stdout", 1, "ab\n", [2, 1]]], "exit": 0},
            "line 0: reads must be",
        ),
        (
            {"match": "s", "argv": ["x"], "lines": [["stdin", 1, "ab\n", [3]]], "exit": 0},
            "only a stdout line has reads",
        ),
    ],
)
def test_a_malformed_session_names_its_place(tmp_path: Path, session: object, said: str) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes(orjson.dumps({"version": 2, "interactions": [], "stdio": [session]}))
    with pytest.raises(ssemock.CassetteError) as caught:
        ssemock.Cassette.load(path)
    assert str(path) in str(caught.value) and said in str(caught.value)


def test_a_secret_in_a_childs_line_refuses_the_save(tmp_path: Path) -> None:
    leaky = StdioSession(
        "s.py", ["s.py"], [Line("stdout", 0.1, b'{"api_key": "9f8e7d6c5b4a39281706f5e4d3c2b1a0"}\n')]
    )
    with pytest.raises(
        ssemock.SecretError, match=r"stdio\[0\]\.lines\[0\]: a credential-named field 'api_key'"
    ):
        ssemock.Cassette(stdio=[leaky]).save(tmp_path / "c.json")
    assert not (tmp_path / "c.json").exists()
