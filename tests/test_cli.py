"""The ``ssemock`` command line: parsing, exit codes, ``demo --json``, show, validate, rechunk, redact, fix."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from streams import TEXT, openai_chat_events, writes

import ssemock
from ssemock import Cassette, sse
from ssemock.commands.cli import build_parser, main


def ssemock_command() -> list[str]:
    script = Path(sys.executable).parent / "ssemock"
    return [str(script)] if script.exists() else [sys.executable, "-m", "ssemock"]


def run(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*ssemock_command(), *args], capture_output=True, text=True, encoding="utf-8", timeout=timeout
    )


def test_help_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "usage: ssemock" in out and "demo" in out


def test_help_of_the_console_script() -> None:
    proc = run("--help")
    assert proc.returncode == 0, proc.stderr
    assert "demo" in proc.stdout


def test_python_dash_m_ssemock() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "ssemock", "--help"], capture_output=True, text=True, timeout=60
    )
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


def test_demo_json_output_parses(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """``ssemock demo --json`` as ``python -m ssemock`` runs it (``main(ARGS)``), in this process,
    stdout read from its file descriptor (a subprocess only added an interpreter's start and the
    demo's imports, ~1.3 CPU-s, issue 33; test_commands_in_a_subprocess runs the console script)."""
    capfd.readouterr()
    code = main(["demo", "--json", "--dir", str(tmp_path)])
    out, err = capfd.readouterr()
    assert code == 0, err
    data = json.loads(out)  # nothing but JSON on stdout
    assert data["live_ok"] is True
    assert data["real_clients_ok"] is True
    assert {"mid_line", "mid_utf8", "bytewise"} <= set(data["naive_failed"])
    assert [r["chunking"] for r in data["rows"]] == [c.name for c in ssemock.chunking.ALL]
    assert data["recorded"]["chunks"] > 1
    assert Path(data["cassette"]).is_file()
    assert Path(data["cassette"]).parent.parent == tmp_path
    assert data["conclusion"].startswith("Conclusion:")


# -- show, validate, rechunk, redact, fix --------------------------------------------------------

CHAT = "https://api.openai.com/v1/chat/completions"
KEY = "sk-test-0123456789abcdef"


def chat_file(path: Path) -> Path:
    """An OpenAI chat stream: chunks 30 ms apart, the first at 12 ms, some cut mid-line."""
    cassette = Cassette()
    chunks = writes(openai_chat_events())
    cassette.add(
        "POST",
        CHAT,
        chunks,
        times=[0.012 + k * 0.03 for k in range(len(chunks))],
        request_json={"model": "gpt-test", "stream": True},
    )
    cassette.save(path)
    return path


def sse_file(path: Path, body: bytes, **kw: object) -> Path:
    cassette = Cassette()
    cassette.add("GET", "https://example.test/stream", [body], **kw)  # type: ignore[arg-type]
    cassette.save(path, scan_secrets=False)  # fake keys on purpose: what the command must handle
    return path


def test_show_prints_the_numbers(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = chat_file(tmp_path / "chat.json")
    resp = Cassette.load(path).interactions[0].response
    n = len(resp.chunks)
    assert main(["show", str(path)]) == 0
    out = capsys.readouterr().out
    for needle in (
        f"{path}: 1 interaction",
        f"#0  POST {CHAT}",
        "status 200  text/event-stream  complete",
        f"body {len(resp.body)} bytes in {n} chunks",
        f"time to first chunk 12 ms, last chunk at {12 + 30 * (n - 1)} ms",
        "gaps between chunks: min 30 ms, median 30 ms, max 30 ms",
        "chunk sizes (min",
        "timeline",
        f"events: {len(openai_chat_events())} SSE events; protocol openai.chat",
        repr(TEXT),
        "tool call: get_weather(",
    ):
        assert needle in out, needle
    assert "█" in out  # the histogram bars and the timeline marks
    assert "[DONE]" not in out  # events are listed only with --events
    assert main(["show", str(path), "--events", "-i", "0"]) == 0
    assert "[15] message  [DONE]" in capsys.readouterr().out


def test_show_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = chat_file(tmp_path / "chat.json")
    assert main(["show", str(path), "--json", "--events"]) == 0
    data = json.loads(capsys.readouterr().out)
    [s] = data["shown"]
    assert data["interactions"] == 1 and s["first_chunk_ms"] == 12.0 and s["gaps_ms"]["median"] == 30.0
    assert s["protocol"] == "openai.chat" and s["text"] == TEXT and s["events"] == len(s["event_list"])
    assert sum(b["count"] for b in s["histogram"]) == s["chunks"]


def test_show_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = chat_file(tmp_path / "chat.json")
    assert main(["show", str(path), "--interaction", "3"]) == 2
    assert f"ssemock: error: {path}: no interaction 3 (the cassette has 1: 0..0)" in capsys.readouterr().err
    missing = tmp_path / "missing.json"
    assert main(["show", str(missing)]) == 1
    assert f"ssemock: error: {missing}: cannot read" in capsys.readouterr().err
    assert main(["show"]) == 2


def test_validate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = chat_file(tmp_path / "good.json")
    assert main(["validate", str(good)]) == 0
    out = capsys.readouterr().out
    assert out == f"ok    {good} (1 interaction, {len(openai_chat_events())} events)\n"

    secret = sse_file(tmp_path / "secret.json", f'data: {{"key": "{KEY}"}}\n\n'.encode())
    unterminated = sse_file(tmp_path / "cut.json", b"data: one\n\ndata: two\n")
    malformed = tmp_path / "malformed.json"
    malformed.write_text('{"version": 1, "interactions": [{"request": {"method": "GET"}, "response": {}}]}')
    assert (
        main(["validate", str(good), str(secret), str(unterminated), str(malformed)]) == 2
    )  # 2 with problems
    out = capsys.readouterr().out
    assert f"ok    {good}" in out
    assert f"FAIL  {secret}" in out and f"{secret}: interaction 0: problem: secret left: response.body" in out
    assert (
        f"warn  {unterminated}" in out
        and f"{unterminated}: interaction 0: warning: unterminated last event" in out
    )
    assert f"FAIL  {malformed}" in out
    assert f"{malformed}: interaction 0: problem: request.url is missing or not a string" in out
    assert "4 files: 1 ok, 1 with warnings, 2 with problems" in out

    assert main(["validate", str(unterminated)]) == 0  # warnings alone do not fail
    capsys.readouterr()
    assert main(["validate", "--json", str(good), str(malformed)]) == 1
    reports = json.loads(capsys.readouterr().out)
    assert [r["ok"] for r in reports] == [True, False]
    assert reports[1]["problems"][0] == {
        "level": "problem",
        "interaction": 0,
        "message": "request.url is missing or not a string",
    }


def test_rechunk(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = chat_file(tmp_path / "chat.json")
    before = Cassette.load(path).interactions[0].response
    out_path = tmp_path / "fixed.json"
    assert main(["rechunk", str(path), "--chunking", "fixed:64", "--output", str(out_path)]) == 0
    expected = -(-len(before.body) // 64)
    assert f"interaction 0: {len(before.ends)} -> {expected} chunks (fixed:64)" in capsys.readouterr().out
    after = Cassette.load(out_path).interactions[0].response
    assert after.body == before.body and len(after.ends) == expected
    assert all(len(c) == 64 for c in after.chunks[:-1])
    assert after.times[0] == before.times[0] and after.times[-1] == before.times[-1]

    assert main(["rechunk", str(path), "--chunking", "per_event", "--transform", "crlf", "--in-place"]) == 0
    capsys.readouterr()
    crlf = Cassette.load(path).interactions[0].response
    assert b"\r\n\r\n" in crlf.body and len(crlf.ends) == len(openai_chat_events())
    assert sse.decode(crlf.chunks) == sse.decode([before.body])

    saved = path.read_bytes()
    assert main(["rechunk", str(path), "--chunking", "bytewise", "--preview"]) == 0
    out = capsys.readouterr().out
    assert f"-> {len(crlf.body)} chunks (bytewise)" in out and "[0]" in out and "[4]" in out and "more" in out
    assert path.read_bytes() == saved  # --preview writes nothing


def test_rechunk_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = chat_file(tmp_path / "chat.json")
    assert main(["rechunk", str(path), "--chunking", "nope", "--in-place"]) == 2
    assert "unknown chunking 'nope'" in capsys.readouterr().err
    assert main(["rechunk", str(path), "--chunking", "bytewise"]) == 2
    assert "--output" in capsys.readouterr().err
    assert main(["rechunk", str(path), "--chunking", "bytewise", "--transform", "zzz", "--preview"]) == 2
    assert main(["rechunk", str(path), "--chunking", "bytewise", "--in-place", "--preview"]) == 2
    assert main(["rechunk", str(tmp_path / "missing.json"), "--chunking", "bytewise", "--preview"]) == 1
    assert "cannot read" in capsys.readouterr().err


def test_redact(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    body = f'data: {{"a": "hi"}}\n\ndata: {{"key": "{KEY}"}}\n\ndata: [DONE]\n\n'.encode()
    cuts = [5, 30, 40, len(body)]  # 40 falls inside the key
    cassette = Cassette()
    cassette.add(
        "POST",
        CHAT,
        [body[a:b] for a, b in zip([0, *cuts], cuts)],
        times=[0.01, 0.02, 0.03, 0.04],
        request_headers={"authorization": f"Bearer {KEY}", "x-api-key": KEY},
        request_json={"model": "m"},
    )
    path = tmp_path / "leak.json"
    cassette.save(path, scan_secrets=False)  # fake keys on purpose: what the command must handle
    clean = chat_file(tmp_path / "clean.json")
    events = sse.decode([body])

    assert main(["redact", "--check", str(path), str(clean)]) == 1
    out = capsys.readouterr().out
    assert f"would redact {path}: 3 changes" in out and f"ok    {clean}: nothing to redact" in out
    assert KEY in path.read_text()  # --check writes nothing

    assert main(["redact", str(path)]) == 0
    out = capsys.readouterr().out
    assert f"redacted {path}: 3 changes" in out
    assert "interaction 0 request.headers['authorization']" in out
    assert "interaction 0 response.body: an OpenAI-style key (sk-...) at byte" in out
    assert KEY not in path.read_text()
    redacted = Cassette.load(path)  # the boundary map is still valid
    resp = redacted.interactions[0].response
    assert dict(redacted.interactions[0].request.headers)["authorization"] == "REDACTED"
    assert len(resp.ends) == 4 and resp.times == [0.01, 0.02, 0.03, 0.04]
    assert [e.data for e in sse.decode(resp.chunks)] == [e.data.replace(KEY, "REDACTED") for e in events]
    assert main(["redact", "--check", str(path)]) == 0
    assert main(["validate", str(path)]) == 0

    broken = tmp_path / "broken.json"
    broken.write_text("nope")
    capsys.readouterr()
    assert main(["redact", str(broken), str(clean)]) == 1
    captured = capsys.readouterr()
    assert f"ssemock: error: {broken}: not valid JSON" in captured.err and str(clean) in captured.out


def hand_edit(path: Path, old: str, new: str) -> None:
    """Edit an event's text in the cassette JSON the way a person would."""
    doc = json.loads(path.read_text())
    pieces = doc["interactions"][0]["response"]["body"]
    k = next(i for i, p in enumerate(pieces) if old in p)
    pieces[k] = pieces[k].replace(old, new)
    path.write_text(json.dumps(doc, indent=2, ensure_ascii=False))


def test_fix_repairs_a_hand_edit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = chat_file(tmp_path / "chat.json")
    hand_edit(path, "こんにち", "Good day, ")
    with pytest.raises(ssemock.CassetteError, match="the body was edited") as info:
        Cassette.load(path)
    assert info.value.path == str(path) and info.value.interaction == 0
    assert main(["validate", str(path)]) == 1
    capsys.readouterr()

    assert main(["fix", str(path)]) == 0
    out = capsys.readouterr().out
    assert (
        f"{path}: interaction 0: repaired:" in out and "one chunk per event" in out and f"wrote {path}" in out
    )
    resp = Cassette.load(path).interactions[0].response
    events = sse.decode(resp.chunks)
    assert len(resp.chunks) == len(events) == len(openai_chat_events())
    assert '"Good day, "' in events[1].data
    assert main(["show", str(path)]) == 0
    assert "'Good day, は、世界" in capsys.readouterr().out

    assert main(["fix", str(path)]) == 0
    assert f"{path}: nothing to fix" in capsys.readouterr().out


def test_fix_to_another_file_and_unrepairable_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = chat_file(tmp_path / "chat.json")
    doc = json.loads(path.read_text())
    doc["interactions"][0]["response"]["chunks"][1][1] = 1
    path.write_text(json.dumps(doc))
    out_path = tmp_path / "out.json"
    assert main(["fix", str(path), "-o", str(out_path)]) == 0
    assert "kept" in capsys.readouterr().out
    fixed = Cassette.load(out_path).interactions[0].response
    assert fixed.ends == [
        e for k, (_, e) in enumerate(doc["interactions"][0]["response"]["chunks"]) if k != 1
    ]
    assert json.loads(path.read_text()) == doc  # the input is untouched

    not_json = tmp_path / "not.json"
    not_json.write_text("{ nope")
    assert main(["fix", str(not_json)]) == 1
    assert f"ssemock: error: {not_json}: not valid JSON" in capsys.readouterr().err
    doc["interactions"][0]["request"] = "GET /"
    other = tmp_path / "other.json"
    other.write_text(json.dumps(doc))
    assert main(["fix", str(other)]) == 1
    err = capsys.readouterr().err
    assert f"ssemock: error: {other}: interaction 0: missing or malformed 'request'" in err
    assert "not repairable" in err
    assert main(["fix"]) == 2


def test_fix_reformat_rewrites_a_cassette_in_the_layout_before(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A cassette saved before chunk maps took a line per pair (orjson's indent: a number a line)
    loads as it is; ``fix`` says how to rewrite it and leaves it; ``fix --reformat`` rewrites it."""
    path = chat_file(tmp_path / "chat.json")
    compact = path.read_bytes()
    old = orjson.dumps(orjson.loads(compact), option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE)
    path.write_bytes(old)
    assert main(["fix", str(path)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == (
        f"{path}: nothing to fix (its layout is not ssemock's current one: `ssemock fix --reformat` "
        "rewrites it, a chunk map pair a line)"
    )
    assert path.read_bytes() == old

    assert main(["fix", "--reformat", str(path)]) == 0
    assert capsys.readouterr().out.splitlines()[-2:] == [
        f"{path}: reformatted in ssemock's current layout",
        f"wrote {path}",
    ]
    assert path.read_bytes() == compact
    assert old.count(b"\n") - compact.count(b"\n") == 3 * len(
        Cassette.load(path).interactions[0].response.ends
    )

    assert main(["fix", "--reformat", str(path)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == f"{path}: nothing to fix"
    assert path.read_bytes() == compact


def test_commands_in_a_subprocess(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The console script's exit status is the command's (1: a file with a problem), its report
    on stdout; the other commands as ``main(ARGS)`` in this process, as the console script calls
    it (a process each only added an interpreter's start, ~0.25 CPU-s: issue 48 item 4)."""
    good = chat_file(tmp_path / "good.json")
    bad = tmp_path / "bad.json"
    bad.write_text('{"version": 99, "interactions": []}')
    proc = run("validate", str(good), str(bad))
    assert proc.returncode == 1, proc.stderr
    assert f"ok    {good}" in proc.stdout
    assert f"{bad}: problem: unknown cassette version 99" in proc.stdout
    assert main(["show", str(bad)]) == 1
    shown = capsys.readouterr()
    assert shown.out == "" and (
        shown.err.strip()
        == f"ssemock: error: {bad}: unknown cassette version 99 (this ssemock reads 1, 2 and 3)"
    )
    assert main(["show", str(good), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["shown"][0]["protocol"] == "openai.chat"
    assert main(["rechunk", str(good), "--chunking", "mid_utf8", "--in-place"]) == 0, capsys.readouterr().err
    assert Cassette.load(good).interactions[0].response.body == b"".join(openai_chat_events())


def test_show_escapes_terminal_control_sequences_and_masks_secrets(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A cassette cannot set the window title, write the clipboard or recolour the terminal."""
    key = "sk-ant-test03-" + "Q1w2E3r4T5y6U7i8O9p0" * 3
    hostile = "\x1b]0;pwned\x07\x1b]52;c;ZXZpbA==\x07\x1b[2J\x9b31m\u202e"
    path = tmp_path / "hostile.json"
    c = Cassette()
    c.add(
        "POST",
        f"https://h/v1/{hostile}?key={key}",
        [
            f"data: {json.dumps({'choices': [{'delta': {'content': hostile + key}}]})}\n\n".encode(),
            b"data: [DONE]\n\n",
        ],
        request_headers={"x-note": hostile},
    )
    c.save(path, scan_secrets=False)  # fake keys on purpose: what the command must handle
    for argv in (
        ["show", str(path)],
        ["show", "--events", str(path)],
        ["show", "--json", "--events", str(path)],
        ["validate", str(path)],
        ["rechunk", "--chunking", "bytewise", "--preview", str(path)],
    ):
        main(argv)
        captured = capsys.readouterr()
        out = captured.out + captured.err
        for raw in ("\x1b", "\x07", "\x9b", "\u202e"):
            assert raw not in out, (argv, raw)
        assert key not in out and key[20:40] not in out
    main(["show", "--events", str(path)])
    assert "\\u001b]0;pwned\\u0007" in capsys.readouterr().out  # shown, escaped
    main(["show", "--json", "--events", str(path)])
    json.loads(capsys.readouterr().out)  # still valid JSON


def test_usage_errors_mask_what_they_quote(capsys: pytest.CaptureFixture[str]) -> None:
    key = "ghp_" + "TESTfake1234567890abcdefghijklmnopqr"[:36]
    assert main(["rechunk", "x.json", "--chunking", key, "--preview"]) == 2
    err = capsys.readouterr().err
    assert "unknown chunking" in err and key not in err and "ghp_***" in err


def test_fix_repairs_an_out_of_range_time(tmp_path: Path) -> None:
    import json

    path = tmp_path / "c.json"
    c = ssemock.Cassette()
    c.add("GET", "https://x.test/", [b"data: 1\n\n", b"data: 2\n\n"], times=[0.1, 0.2])
    c.save(path)
    document = json.loads(path.read_text())
    document["interactions"][0]["response"]["chunks"][1][0] = 1e308
    path.write_text(json.dumps(document))
    assert main(["fix", str(path)]) == 0
    assert ssemock.Cassette.load(path).interactions[0].response.times == [0.1, 0.1]


def test_validate_takes_folders_recursively_and_counts_problems(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plain = ssemock.Cassette()
    plain.add(
        "GET",
        "http://x.test/events",
        [b"data: 1\n\n", b": c\n\ndata: 2\n\n"],
        headers={"content-type": "text/event-stream"},
    )
    plain.save(tmp_path / "a" / "plain.json")
    plain.save(tmp_path / "a" / "b" / "deeper.json")
    plain.save(tmp_path / "a" / "b" / "kept.refused.json")  # ssemock's own side file: not a cassette
    (tmp_path / "a" / "b" / "broken.json").write_text('{"x":')
    assert main(["validate", str(tmp_path / "a")]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == "3 files: 2 ok, 0 with warnings, 1 with problems"
    assert [line.split()[1] for line in out if line.startswith(("ok", "FAIL"))] == [
        str(tmp_path / "a" / "b" / "broken.json"),
        str(tmp_path / "a" / "b" / "deeper.json"),
        str(tmp_path / "a" / "plain.json"),
    ]
    assert not any(line.startswith("warn") for line in out)  # plain SSE is fine: no protocol warning
    (tmp_path / "empty").mkdir()
    assert main(["validate", str(tmp_path / "empty")]) == 1
    assert "no cassette" in capsys.readouterr().err


def test_redact_takes_a_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    leaky = ssemock.Cassette()
    leaky.add(
        "GET",
        "http://x.test/events",
        [b"data: sk-test-" + b"A1b2C3d4" * 4 + b"\n\n"],
        headers={"content-type": "text/event-stream"},
    )
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "b" / "leaky.json").write_bytes(leaky.dumps())  # as a hand edit leaves it
    assert main(["redact", "--check", str(tmp_path / "a")]) == 1
    assert f"would redact {tmp_path / 'a' / 'b' / 'leaky.json'}: 1 change" in capsys.readouterr().out
