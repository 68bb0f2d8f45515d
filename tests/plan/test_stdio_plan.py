"""Which ``stdio=`` entry a command line matches, the session a relay's log records (reads cut
into lines, secrets masked), and the option's checking (ssemock.plan.stdio)."""

from __future__ import annotations

import base64

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

import ssemock
from ssemock.plan.stdio import entry_of, env_secrets, session_from_log


@pytest.mark.parametrize(
    ("entries", "argv", "found"),
    [
        (["server.py"], ["python", "/abs/path/server.py"], "server.py"),
        (["server.py"], ["python", "/abs/path/my_server.py"], None),
        (["/abs/path/server.py"], ["python", "/abs/path/server.py"], "/abs/path/server.py"),
        (["/other/server.py"], ["python", "/abs/path/server.py"], None),
        (["mcp-server-git"], ["/usr/local/bin/mcp-server-git", "--repo", "."], "mcp-server-git"),
        (["uvx", "server.py"], ["uvx", "mcp-server-fetch"], "uvx"),
        ([], ["python", "server.py"], None),
    ],
)
def test_an_entry_matches_an_element_or_its_file_name(
    entries: list[str], argv: list[str], found: str | None
) -> None:
    assert entry_of(entries, argv) == found


def _log(*entries: list[object]) -> bytes:
    return b"".join(orjson.dumps(e) + b"\n" for e in entries)


def _b(data: bytes) -> str:
    return base64.b64encode(data).decode()


def test_reads_are_cut_into_lines_timed_by_the_read_that_ends_them() -> None:
    log = _log(
        ["stdin", 1.0, _b(b'{"id":0}\n{"id"')],
        ["stdout", 2.0, _b(b'{"r":')],
        ["stdin", 3.0, _b(b":1}\n")],
        ["stdout", 4.0, _b(b'0}\n{"r":1}\n')],
        ["stderr", 4.5, _b(b"no newline")],
        ["stdin", 5.0, None],
        ["exit", -15],
        [b"cut short by a kill".decode()],
    )[:-3]
    session = session_from_log(log, "s.py", ["s.py"])
    assert [(x.stream, x.t, x.data) for x in session.lines] == [
        ("stdin", 0.001, b'{"id":0}\n'),
        ("stdin", 0.003, b'{"id":1}\n'),
        ("stdout", 0.004, b'{"r":0}\n'),
        ("stdout", 0.004, b'{"r":1}\n'),
        ("stdin", 0.005, None),
        ("stderr", 0.0045, b"no newline"),
    ]
    assert session.exit == -15


def test_the_environments_credentials_are_masked_in_the_command_line_and_the_lines() -> None:
    env = {"GITHUB_TOKEN": "9f8e7d6c5b4a39281706f5e4d3c2b1a0", "HOME": "/home/me"}
    log = _log(["stderr", 1.0, _b(b"token 9f8e7d6c5b4a39281706f5e4d3c2b1a0 loaded\n")])
    session = session_from_log(log, "s", ["s", "--repo=/x", "--token", env["GITHUB_TOKEN"]], env_secrets(env))
    assert session.argv == ["s", "--repo=/x", "--token", "***"]
    assert session.of("stderr") == [b"token *** loaded\n"]


@pytest.mark.parametrize("bad", ["", [""], [3], {"server.py": 1}])
def test_a_bad_stdio_option_is_refused_before_anything_starts(bad: object) -> None:
    with pytest.raises(ValueError, match="stdio takes a list of program names or script paths"):
        ssemock.replay(ssemock.Cassette(), stdio=bad)  # type: ignore[arg-type]


@given(
    lines=st.lists(
        st.binary(min_size=1, max_size=30).map(lambda b: b.replace(b"\n", b"") + b"\n"), max_size=8
    ),
    cuts=st.lists(st.integers(min_value=1, max_value=300), max_size=12),
)
def test_however_the_reads_fell_the_lines_are_the_same(lines: list[bytes], cuts: list[int]) -> None:
    """A JSON-RPC line across reads, reads holding several lines, a byte a read: the same lines."""
    data = b"".join(lines)
    ends = sorted({c for c in cuts if c < len(data)} | {len(data)}) if data else []
    reads = [data[a:b] for a, b in zip([0, *ends], ends)]
    log = _log(*(["stdout", float(k), _b(r)] for k, r in enumerate(reads)))
    session = session_from_log(log, "s", ["s"])
    assert session.of("stdout") == lines
    kept, at = [], 0  # the reads, as the lines keep them (as_recorded replays them)
    for x in session.lines:
        assert x.data is not None
        kept += [at + r for r in (x.reads if x.reads is not None else (len(x.data),))]
        at += len(x.data)
    assert kept == ends


def test_a_read_that_ends_in_a_masked_secret_ends_with_its_line() -> None:
    token = "9f8e7d6c5b4a39281706f5e4d3c2b1a0"
    log = _log(
        ["stdout", 1.0, _b(b'{"t":"' + token[:20].encode())],
        ["stdout", 2.0, _b(token[20:].encode() + b'"}\n')],
    )
    (line,) = session_from_log(log, "s", ["s"], [token]).lines
    assert (line.data, line.reads) == (b'{"t":"***"}\n', None)  # its read ends at the line's end
