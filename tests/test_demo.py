"""The demo: a real loopback recording, replayed under every chunking through real clients."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from rich.console import Console

import ssemock
from ssemock.commands import demo
from ssemock.commands.cli import main
from ssemock.commands.demo import DemoResult, run_demo
from ssemock.variants.websocket import chunking as ws_chunking


def ssemock_command() -> list[str]:
    """The installed console script, or ``python -m ssemock`` when it is missing."""
    script = Path(sys.executable).parent / "ssemock"
    return [str(script)] if script.exists() else [sys.executable, "-m", "ssemock"]


@pytest.fixture(scope="module")
def printed_and_result(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, DemoResult]:
    out = io.StringIO()
    result = run_demo(
        Console(file=out, width=120, color_system=None), directory=tmp_path_factory.mktemp("demo")
    )
    return out.getvalue(), result


@pytest.fixture(scope="module")
def result(printed_and_result: tuple[str, DemoResult]) -> DemoResult:
    return printed_and_result[1]


def test_the_live_run_got_what_the_server_sent(result: DemoResult) -> None:
    assert result.live_ok, result.live
    assert result.live.text == demo.TEXT
    assert result.live.tool_calls == [demo.ToolCall(demo.TOOL_ID, demo.TOOL_NAME, demo.TOOL_ARGS)]
    assert result.live.finish_reason == "tool_calls"
    assert result.live.chunks == len(demo.EVENTS) - 1  # every event but [DONE]


def test_every_chunking_is_replayed(result: DemoResult) -> None:
    assert [r.chunking for r in result.rows] == [c.name for c in ssemock.chunking.ALL]
    size = sum(map(len, demo.WRITES))
    for row in result.rows:
        assert row.bytes == size, row.chunking
        assert row.events == len(demo.EVENTS), row.chunking
    assert result.row("as_recorded").chunks == len(demo.WRITES)
    assert result.row("coalesced").chunks == 1
    assert result.row("per_event").chunks == len(demo.EVENTS)
    assert result.row("bytewise").chunks == size


def test_real_sdk_and_httpx_sse_are_right_under_every_chunking(result: DemoResult) -> None:
    for row in result.rows:
        assert row.openai_text_ok, (row.chunking, row.openai)
        assert row.openai_tool_args_ok, (row.chunking, row.openai)
        assert row.httpx_sse_ok, (row.chunking, row.httpx_sse)
    assert result.real_clients_ok


def test_the_naive_decoder_fails_where_lines_and_characters_are_split(result: DemoResult) -> None:
    assert {"mid_line", "mid_utf8", "bytewise"} <= set(result.naive_failed)
    # a split inside a multi-byte character breaks chunk.decode() itself; the demo survives it
    assert result.row("mid_utf8").naive_got == "UnicodeDecodeError"
    assert result.row("bytewise").naive_got == "UnicodeDecodeError"
    # a split inside a line loses events silently: no error, fewer chunks
    mid_line = result.row("mid_line")
    assert mid_line.naive.error is None and mid_line.naive.chunks < result.live.chunks
    assert mid_line.naive_got == f"{mid_line.naive.chunks}/{result.live.chunks} chunks"
    # the check is not rigged: when every chunk holds whole events, the naive decoder is right
    assert result.row("coalesced").naive_ok and result.row("per_event").naive_ok


def test_the_cassette_keeps_the_chunks_as_the_server_wrote_them(result: DemoResult) -> None:
    assert len(result.recorded_chunks) > 1
    assert result.recorded_chunks == demo.WRITES
    assert any(not w.endswith(b"\n\n") for w in demo.WRITES), "some writes end mid-line"
    loaded = ssemock.Cassette.load(result.cassette_path)
    assert len(loaded.interactions) == 1
    response = loaded.interactions[0].response
    assert response.chunks == demo.WRITES
    assert response.error is None
    # (not asserting response.complete: the openai SDK closes the response right after [DONE]
    # without reading to EOF, and record.py then stores complete=False; reported to its owner)
    assert response.header("content-type", "").startswith("text/event-stream")
    request = loaded.interactions[0].request
    assert request.method == "POST" and request.url.endswith("/v1/chat/completions")
    assert dict(request.headers)["authorization"] == "REDACTED"
    assert demo.API_KEY not in result.cassette_path.read_text(encoding="utf-8")


def test_the_recording_kept_the_timing_and_streamed_while_recording(result: DemoResult) -> None:
    times = result.recorded_times
    assert times == sorted(times)
    assert times[-1] - times[0] >= 0.9 * sum(demo.GAPS)  # the gaps between the writes are kept
    # the client had its first chunk long before the stream ended: not buffered while recording
    assert result.client_first_chunk_s < times[-1]


def test_the_printed_table(printed_and_result: tuple[str, DemoResult]) -> None:
    printed, result = printed_and_result
    assert result.cassette_kept and result.cassette_path.exists()
    assert f"ssemock show {result.cassette_path}" in printed.splitlines()[-1]
    for row in result.rows:
        assert row.chunking in printed
    assert "UnicodeDecodeError" in printed
    assert "✓" in printed and "✗" in printed
    assert result.conclusion.startswith("Conclusion:")
    assert " ".join(result.conclusion.split()) in " ".join(printed.split())


def test_as_dict_is_plain_json(result: DemoResult) -> None:
    import json

    data = json.loads(json.dumps(result.as_dict()))
    assert data["cassette"] == str(result.cassette_path)
    assert data["recorded"]["chunks"] == len(demo.WRITES)
    assert [r["chunking"] for r in data["rows"]] == [c.name for c in ssemock.chunking.ALL]


def _run_command(*args: str) -> subprocess.CompletedProcess[str]:
    """``ssemock demo ARGS`` as a user runs it with its output piped (no terminal, no COLUMNS)."""
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    env["PYTHONIOENCODING"] = "utf-8"
    proc = subprocess.run(
        [*ssemock_command(), "demo", *args],
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=60,
        env=env,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


@pytest.fixture(scope="module")
def with_dir(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess[str], Path]:
    """One ``ssemock demo --dir DIR`` run and its DIR, for the tests that read what it printed
    and kept (neither changes either)."""
    directory = tmp_path_factory.mktemp("demo-dir")
    return _run_command("--dir", str(directory)), directory


def test_ssemock_demo_command_with_dir_keeps_the_cassette_and_says_how_to_show_it(
    with_dir: tuple[subprocess.CompletedProcess[str], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    proc, tmp_path = with_dir
    for name in ("as_recorded", "bytewise", "mid_line", "mid_utf8", "coalesced", "per_event", "random:7"):
        assert name in proc.stdout
    assert "Conclusion:" in proc.stdout
    saved = list(tmp_path.glob("ssemock-demo-*/chat_completions.json"))
    assert len(saved) == 1
    assert ssemock.Cassette.load(saved[0]).interactions[0].response.chunks == demo.WRITES
    lines = proc.stdout.splitlines()
    assert f"The cassette is kept in {saved[0]}. Look inside it (chunks, timing, events):" in lines
    assert lines[-1] == f"  ssemock show {saved[0]}"
    # the command it suggests works on what it kept (``main(ARGS)``, as the console script calls
    # it: the script itself is the demo's run above)
    capsys.readouterr()
    code = main(["show", str(saved[0])])
    shown = capsys.readouterr()
    assert code == 0 and "protocol openai.chat" in shown.out, shown.out + shown.err


def test_ssemock_demo_command_without_dir_removes_its_temp_folder(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """In this process (``_main``: the console script is test_ssemock_demo_command_with_dir's), the
    temporary folder read from TMPDIR as a new process reads it (``tempfile`` forgets the one it
    found before)."""
    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setenv("TMPDIR", str(temp))
    monkeypatch.setattr(tempfile, "tempdir", None)
    printed = _main(capfd, monkeypatch)
    recorded_into = next(line for line in printed.splitlines() if line.startswith("   recorded into "))
    path = Path(recorded_into.removeprefix("   recorded into ").split(": ", 1)[0])
    assert path.parent.parent == temp and path.name == "chat_completions.json"  # it was written there ...
    # ... and nothing of the demo is left (the user's private folder of cassette locks is not the demo's)
    assert not path.parent.exists() and [p.name for p in temp.iterdir()] in ([], [f"ssemock-{os.getuid()}"])
    assert "removed now" in printed
    assert (
        printed.splitlines()[-1]
        == "  ssemock demo --dir .   then   ssemock show ./ssemock-demo-*/chat_completions.json"
    )


def test_piped_output_keeps_each_sentence_on_one_line(
    with_dir: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    proc = with_dir[0]
    lines = proc.stdout.splitlines()
    conclusion = [line for line in lines if line.startswith("Conclusion:")]
    assert len(conclusion) == 1 and conclusion[0].endswith("."), lines
    assert len(conclusion[0]) > 120  # no console width applied to it
    # every sentence line starts where a sentence starts: a numbered step, an indented detail,
    # the table, the conclusion or the closing hint; none is the tail of a wrapped line
    starts = (
        "1. Recording",
        "   recorded into ",
        "   live result: ",
        "2. Replaying",
        "Replayed under",
        "Conclusion:",
        "The cassette",
        "  ssemock show",
        "3. A WebSocket session",
    )
    table = [line for line in lines if not line.startswith(starts)]
    # the HTTP table: 2 header lines, the rule, one row each; the WebSocket one: 1 header line, the rule
    assert len(table) == 3 + len(ssemock.chunking.ALL) + 2 + len(ws_chunking.ALL), table
    assert next(line for line in lines if line.startswith("1. Recording")).endswith('record_mode="once"')
    assert next(line for line in lines if line.startswith("   live result: ")).endswith(
        f"tool call {demo.TOOL_NAME}({demo.TOOL_ARGS})"
    )
    assert next(line for line in lines if line.startswith("2. Replaying")).endswith("through three clients")


def test_run_demo_without_directory_removes_its_folder() -> None:
    out = io.StringIO()
    result = run_demo(Console(file=out, width=100, color_system=None))
    assert result.cassette_kept is False and result.as_dict()["cassette_kept"] is False
    assert not result.cassette_path.exists() and not result.cassette_path.parent.exists()
    assert result.live_ok and result.real_clients_ok  # the rows were computed before the removal
    assert "removed now" in out.getvalue()


def _main(capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, *args: str) -> str:
    """``ssemock demo ARGS`` as ``python -m ssemock`` runs it (``main(ARGS)``), in this process, its
    output read from file descriptors 1 and 2 as a pipe gets it (no terminal, no COLUMNS): what it
    printed to stdout. A subprocess per run only added an interpreter's start and the demo's
    imports, ~1.3 CPU-s (issue 33); the console script and the piped output are
    test_ssemock_demo_command_with_dir's and test_piped_output_keeps_each_sentence_on_one_line's."""
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.delenv("LINES", raising=False)
    capfd.readouterr()
    code = main(["demo", *args])
    out, err = capfd.readouterr()
    assert code == 0, out + err
    return out


def test_ssemock_demo_explore_shows_the_naive_decoders_smallest_failing_stream(
    capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    found = json.loads(_main(capfd, monkeypatch, "--explore", "60", "--json"))["explore"]
    assert found["examples"] == 60
    failure = found["failure"]
    assert failure is not None and len(failure["boundaries"]) == 1  # shrunk to one boundary
    assert failure["reproducer"].startswith('@pytest.mark.ssemock(chunking="at:')
    # printed beside the matrix's table, with the marker to pin it
    printed = _main(capfd, monkeypatch, "--explore", "60")
    assert (
        "3. Exploring" in printed
        and 'pin it as a regression test: @pytest.mark.ssemock(chunking="at:' in printed
    )
    assert "a chunk boundary at byte" in printed and "Conclusion:" in printed
