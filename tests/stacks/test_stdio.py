"""stdio=[...]: a child process whose command line matches is recorded through its pipes, and in
replay is not started (ssemock.stacks.stdio, ssemock.stacks.stdio_relay).

The real mcp 2.3.0 client against a real stdio server written with the mcp package (recorded
once, its script deleted before every replay, no socket connected meanwhile), and plain line
servers through subprocess.Popen and asyncio's subprocesses."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError
from socket_audit import connections

import ssemock

KEY = "sk-test-stdio0123456789abcdefghijklmnop"
TOKEN = "9f8e7d6c5b4a39281706f5e4d3c2b1a0"

MCP_SERVER = '''
import os, sys
from mcp.server.mcpserver import Context, MCPServer

mcp = MCPServer("demo")
print("starting with", os.environ.get("DEMO_API_KEY"), file=sys.stderr, flush=True)


@mcp.tool()
async def count(n: int, ctx: Context) -> str:
    """Count to n, logging and reporting progress on the way."""
    for k in range(n):
        await ctx.info(f"step {k} \\u2713")
        await ctx.report_progress(k + 1, n)
    return f"counted to {n} \\u2713"


if __name__ == "__main__":
    mcp.run()
'''


async def _session(params: StdioServerParameters, timeout: float | None = None) -> dict[str, Any]:
    logs: list[str] = []
    progress: list[float] = []

    async def on_log(params: Any) -> None:
        logs.append(params.data)

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append(done)

    async with stdio_client(params) as (read, write):
        async with ClientSession(
            read, write, read_timeout_seconds=timeout, logging_callback=on_log
        ) as session:
            await session.initialize()
            tools = await session.list_tools()
            result = await session.call_tool("count", {"n": 3}, progress_callback=on_progress)
    return {
        "tools": [t.name for t in tools.tools],
        "text": result.content[0].text,  # type: ignore[union-attr]
        "logs": logs,
        "progress": progress,
    }


@pytest.fixture(scope="module")
def recorded(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[Path, StdioServerParameters, dict[str, Any]]]:
    """The mcp server recorded once, then its script deleted."""
    folder = tmp_path_factory.mktemp("mcp-stdio")
    script = folder / "server.py"
    script.write_text(MCP_SERVER)
    params = StdioServerParameters(
        command=sys.executable, args=[str(script), "--api-key", TOKEN], env={"DEMO_API_KEY": KEY}
    )
    cassette = folder / "mcp.json"
    with ssemock.use_cassette(cassette, record_mode="once", stdio=["server.py"]) as player:
        live = anyio.run(_session, params)
    assert [s.match for s in player.stdio.recorded] == ["server.py"]
    script.unlink()
    yield cassette, params, live


@pytest.mark.parametrize("chunking", [str(c) for c in ssemock.chunking.ALL])
def test_an_mcp_stdio_server_replays_with_its_script_deleted(
    recorded: tuple[Path, StdioServerParameters, dict[str, Any]], chunking: str
) -> None:
    cassette, params, live = recorded
    assert live["text"] == "counted to 3 \u2713" and len(live["logs"]) == 3 and live["progress"] == [1, 2, 3]
    with connections() as made:
        with ssemock.use_cassette(cassette, stdio=["server.py"], chunking=chunking) as player:
            replayed = anyio.run(_session, params)
    assert replayed == live
    assert player.stdio.replayed == [0] and not player.stdio.recorded
    assert made == []


def test_the_cassette_keeps_each_line_stderr_apart_and_no_secret(
    recorded: tuple[Path, StdioServerParameters, dict[str, Any]],
) -> None:
    cassette, _, _ = recorded
    text = cassette.read_text()
    assert KEY not in text and TOKEN not in text
    (session,) = ssemock.Cassette.load(cassette).stdio
    assert session.argv[-2:] == ["--api-key", "***"] and session.exit is not None
    stdin = [json.loads(line) for line in session.of("stdin")]
    assert [m.get("method") for m in stdin] == [
        "initialize",
        "notifications/initialized",
        "tools/list",
        "tools/call",
    ]
    assert any(b"starting with ***" in line for line in session.of("stderr"))
    assert all(json.loads(line)["jsonrpc"] == "2.0" for line in session.of("stdout"))
    assert session.lines[-1].stream == "stdin" and session.lines[-1].data is None  # the client closed it


async def _ignore(done: float, total: float | None, message: str | None) -> None:
    pass


def test_a_different_call_fails_naming_the_difference(
    recorded: tuple[Path, StdioServerParameters, dict[str, Any]],
) -> None:
    cassette, params, _ = recorded

    async def other() -> None:
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                await session.list_tools()
                await session.call_tool("count", {"n": 4}, progress_callback=_ignore)

    with pytest.raises(ssemock.StdioMismatchError) as caught:
        with ssemock.use_cassette(cassette, stdio=["server.py"]):
            anyio.run(other)
    message = str(caught.value)
    assert "stdin line 3" in message and "$.params.arguments.n" in message and str(cassette) in message


@pytest.mark.parametrize(
    "fault",
    ["stall:before_event=2,seconds=60", "trailing_data:at=garbage", "truncate", "disconnect:after_event=2"],
)
def test_a_faulted_server_fails_the_client_at_once(
    recorded: tuple[Path, StdioServerParameters, dict[str, Any]], fault: str
) -> None:
    """A stall past the client's read timeout, garbage, a missing answer or an exit mid-stream:
    the client's own error (no 60 s waited: the client's timeout ends the stall, its exit the relay)."""
    cassette, params, _ = recorded
    with pytest.raises(BaseException) as caught:
        with ssemock.use_cassette(cassette, stdio=["server.py"], faults=fault):
            anyio.run(_session, params, 0.5)
    assert any(isinstance(e, MCPError) for e in _leaves(caught.value))


def _leaves(exc: BaseException) -> Iterator[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            yield from _leaves(inner)
    else:
        yield exc


LINE_SERVER = """
import sys
print("ready", file=sys.stderr, flush=True)
for line in sys.stdin:
    sys.stdout.write(line.upper())
    sys.stdout.flush()
sys.exit(3)
"""


def _line_server(tmp_path: Path) -> Path:
    script = tmp_path / "upper.py"
    script.write_text(textwrap.dedent(LINE_SERVER))
    return script


def test_popen_records_and_asyncio_replays_with_the_exit_status(tmp_path: Path) -> None:
    script, cassette = _line_server(tmp_path), tmp_path / "c.json"
    with ssemock.use_cassette(cassette, record_mode="once", stdio=["upper.py"]):
        child = subprocess.Popen(
            [sys.executable, script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        out, err = child.communicate(b'{"a": "x"}\n{"b": "\xc3\xa9"}\n', timeout=60)
    assert (out, err, child.returncode) == (b'{"A": "X"}\n{"B": "\xc3\x89"}\n', b"ready\n", 3)
    script.unlink()

    async def replay() -> tuple[bytes, bytes, int | None]:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            str(script),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        got, errs = await proc.communicate(b'{"a": "x"}\n{"b": "\xc3\xa9"}\n')
        return got, errs, proc.returncode

    with ssemock.use_cassette(cassette, stdio=["upper.py"], chunking="bytewise"):
        assert asyncio.run(replay()) == (out, err, 3)


HALVES = """
import os, sys, time
sys.stdout.buffer.write(b'{"a":')
sys.stdout.flush()
while not os.path.exists(sys.argv[1]):  # the client saw the first half
    time.sleep(0.01)
sys.stdout.buffer.write(b'1}\\n{"b":2}\\n')
sys.stdout.flush()
"""


def test_the_childs_reads_are_kept_for_as_recorded(tmp_path: Path) -> None:
    """A line read in two, then a read holding the rest and a whole line: the cassette keeps
    where the reads ended, and the replay gives the same bytes back with the script deleted."""
    script, cassette, go = tmp_path / "halves.py", tmp_path / "c.json", tmp_path / "go"
    script.write_text(HALVES)
    argv = [sys.executable, str(script), str(go)]
    with ssemock.use_cassette(cassette, record_mode="once", stdio=["halves.py"]):
        child = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE)
        assert child.stdout is not None
        first = os.read(child.stdout.fileno(), 100)  # the relay passes each read on at once
        go.touch()
        rest = child.stdout.read()
        child.wait(60)
    assert (first, rest) == (b'{"a":', b'1}\n{"b":2}\n')
    (session,) = ssemock.Cassette.load(cassette).stdio
    assert [(x.data, x.reads) for x in session.lines if x.stream == "stdout"] == [
        (b'{"a":1}\n', (5,)),
        (b'{"b":2}\n', None),
    ]
    script.unlink()
    with ssemock.use_cassette(cassette, stdio=["halves.py"]):
        replayed = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, check=True)
    assert replayed.stdout == first + rest


def test_ignore_message_paths_leaves_a_stdin_field_out_of_matching(tmp_path: Path) -> None:
    script, cassette = _line_server(tmp_path), tmp_path / "c.json"

    def send(line: bytes) -> bytes:
        return subprocess.run([sys.executable, script], input=line, capture_output=True, check=False).stdout

    with ssemock.use_cassette(cassette, record_mode="once", stdio=["upper.py"]):
        assert send(b'{"id": 1, "sent_at": "10:00"}\n') == b'{"ID": 1, "SENT_AT": "10:00"}\n'
    script.unlink()
    with ssemock.use_cassette(cassette, stdio=["upper.py"], ignore_message_paths=["$.sent_at"]):
        assert send(b'{"id": 1, "sent_at": "11:30"}\n') == b'{"ID": 1, "SENT_AT": "10:00"}\n'
    with pytest.raises(ssemock.StdioMismatchError, match=r"stdin line 0 differs .* at \$\.sent_at"):
        with ssemock.use_cassette(cassette, stdio=["upper.py"]):
            assert send(b'{"id": 1, "sent_at": "11:30"}\n') == b""  # the child said nothing more


def test_a_secret_in_a_childs_output_refuses_the_save_and_keeps_it_masked(tmp_path: Path) -> None:
    script, cassette = _line_server(tmp_path), tmp_path / "c.json"
    with pytest.raises(ssemock.SecretError, match=r"stdio\[0\]\.lines\[\d\]"):
        with ssemock.use_cassette(cassette, record_mode="once", stdio=["upper.py"]):
            subprocess.run([sys.executable, script], input=f'{{"token": "{TOKEN}"}}\n'.encode(), check=False)
    refused = tmp_path / "c.refused.json"
    assert (
        not cassette.exists()
        and TOKEN.upper() not in refused.read_text()
        and TOKEN not in refused.read_text()
    )
    (session,) = ssemock.Cassette.load(refused).stdio
    assert session.of("stdin") == [b'{"token": "***"}\n'] and session.of("stdout") == [b'{"TOKEN": "***"}\n']


def test_an_interrupted_recording_keeps_its_children_beside_the_cassette(tmp_path: Path) -> None:
    script, cassette = _line_server(tmp_path), tmp_path / "c.json"
    with pytest.raises(KeyboardInterrupt):
        with ssemock.use_cassette(cassette, record_mode="once", stdio=["upper.py"]):
            subprocess.run([sys.executable, script], input=b"kept\n", capture_output=True, check=False)
            raise KeyboardInterrupt
    assert not cassette.exists()
    (session,) = ssemock.Cassette.load(tmp_path / "c.partial.json").stdio
    assert session.of("stdout") == [b"KEPT\n"] and session.exit == 3


def test_ctrl_c_during_a_recording_is_the_childs_and_its_exit_is_kept(tmp_path: Path) -> None:
    """Ctrl-C reaches the whole process group (the relay and the child): the child ends as it
    would, its exit by the signal is recorded, and the relay writes no traceback of its own."""
    script, cassette = _line_server(tmp_path), tmp_path / "c.json"
    with ssemock.use_cassette(cassette, record_mode="once", stdio=["upper.py"]):
        child = subprocess.Popen(
            [sys.executable, script],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,  # its own group, as a terminal's foreground job
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # a runner may ignore it
        )
        assert child.stdin is not None and child.stdout is not None and child.stderr is not None
        child.stdin.write(b"one\n")
        child.stdin.flush()
        assert child.stdout.readline() == b"ONE\n"
        os.killpg(child.pid, signal.SIGINT)
        err = child.stderr.read()
        child.wait(60)
    assert child.returncode == -signal.SIGINT and b"stdio_relay" not in err and b"KeyboardInterrupt" in err
    (session,) = ssemock.Cassette.load(cassette).stdio
    assert session.exit == -signal.SIGINT and session.of("stdout") == [b"ONE\n"]


def test_record_modes_add_and_replace_sessions(tmp_path: Path) -> None:
    script, cassette = _line_server(tmp_path), tmp_path / "c.json"

    def shout(text: bytes) -> bytes:
        return subprocess.run([sys.executable, script], input=text, capture_output=True, check=False).stdout

    with ssemock.use_cassette(cassette, record_mode="once", stdio=["upper.py"]):
        assert shout(b"one\n") == b"ONE\n"
    with ssemock.use_cassette(cassette, record_mode="new_episodes", stdio=["upper.py"]) as player:
        assert shout(b"one\n") == b"ONE\n" and shout(b"two\n") == b"TWO\n"  # replayed, then recorded
    assert player.stdio.replayed == [0] and len(player.stdio.recorded) == 1
    assert [s.of("stdin") for s in ssemock.Cassette.load(cassette).stdio] == [[b"one\n"], [b"two\n"]]
    with ssemock.use_cassette(cassette, record_mode="all", stdio=["upper.py"]):
        assert shout(b"three\n") == b"THREE\n"
    assert [s.of("stdin") for s in ssemock.Cassette.load(cassette).stdio] == [[b"three\n"]]


def test_a_child_with_no_recorded_session_left_is_refused(tmp_path: Path) -> None:
    script, cassette = _line_server(tmp_path), tmp_path / "c.json"
    ssemock.Cassette().save(cassette)
    with ssemock.use_cassette(cassette, stdio=["upper.py"]):
        with pytest.raises(ssemock.StdioMismatchError, match=r"upper\.py.*no recorded session of it is left"):
            subprocess.run([sys.executable, script], input=b"x\n", check=False)


@pytest.mark.parametrize("entries", [["lower.py"], None])
def test_a_recorded_child_stdio_does_not_name_is_refused_naming_its_entry(
    tmp_path: Path, entries: list[str] | None
) -> None:
    script, cassette = _line_server(tmp_path), tmp_path / "c.json"
    with ssemock.use_cassette(cassette, record_mode="once", stdio=["upper.py"]):
        subprocess.run([sys.executable, script], input=b"x\n", capture_output=True, check=False)
    script.unlink()
    with ssemock.use_cassette(cassette, stdio=entries):
        other = subprocess.run([sys.executable, "-c", "print(2)"], capture_output=True, check=True)
        with pytest.raises(ssemock.StdioMismatchError) as refused:
            subprocess.run([sys.executable, script], input=b"x\n", check=False)
    assert other.stdout == b"2\n"  # a child no session recorded starts as it is
    assert f"{cassette}: stdio session 0 was recorded" in str(refused.value)
    assert f"under the entry 'upper.py', which stdio={list(entries or [])!r} does not name" in str(
        refused.value
    )


def test_a_program_that_cannot_be_run_fails_as_it_would_without_ssemock(tmp_path: Path) -> None:
    with ssemock.use_cassette(tmp_path / "c.json", record_mode="once", stdio=["no-such-server"]) as player:
        with pytest.raises(FileNotFoundError):
            subprocess.Popen(["no-such-server", "--stdio"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert player.stdio.recorded == [] and not (tmp_path / "c.json").exists()


SHOW = "import json, os; print(json.dumps(dict(os.environ)))"


def test_the_network_lock_still_reaches_a_child_that_is_not_replayed(tmp_path: Path) -> None:
    script, cassette = _line_server(tmp_path), tmp_path / "c.json"
    with ssemock.use_cassette(cassette, record_mode="once", stdio=["upper.py"]):
        subprocess.run([sys.executable, script], input=b"x\n", capture_output=True, check=False)
    with ssemock.use_cassette(cassette, stdio=["upper.py"], block_subprocesses=True):
        replayed = subprocess.run([sys.executable, script], input=b"x\n", capture_output=True, check=False)
        other = subprocess.run([sys.executable, "-c", SHOW], capture_output=True, check=True)
    assert (replayed.stdout, replayed.returncode) == (b"X\n", 3)
    assert json.loads(other.stdout)["HTTP_PROXY"].startswith("http://127.0.0.1:")
    assert "HTTP_PROXY" not in os.environ or not os.environ["HTTP_PROXY"].startswith("http://127.0.0.1:")
