"""``ssemock show`` names the JSON-RPC method beside each POST of an MCP session, so six POSTs
to one URL tell apart."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import ssemock
from ssemock.commands.cli import main


def test_show_lists_the_json_rpc_method_of_each_mcp_post(capsys: pytest.CaptureFixture[str]) -> None:
    path = ssemock.cassettes.path("mcp/streamable_http_session")
    assert main(["show", str(path)]) == 0
    heads = [line for line in capsys.readouterr().out.splitlines() if line.startswith("#")]
    assert [h.split("/mcp", 1)[1] for h in heads] == [
        "  (initialize)",
        "  (notifications/initialized)",
        "",
        "  (tools/list)",
        "  (tools/call)",
        "  (tools/call)",
        "  (resources/read)",
        "",
    ]
    assert main(["show", str(path), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    items = shown["shown"]
    assert items[0]["rpc"] == ["initialize"] and items[7]["rpc"] == []


def test_a_plain_post_has_no_rpc_note(capsys: pytest.CaptureFixture[str]) -> None:
    path = ssemock.cassettes.path("openai/chat_text")
    assert main(["show", str(path)]) == 0
    head = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("#0"))
    assert head.endswith("/v1/chat/completions")


def test_json_output_stays_json_when_a_text_says_password(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A model's text "...for each password:\\n- ..." (realtraffic3's Mirascope streams): masked
    line by line, the value after ``password:`` ran to the line's end and took the closing quote;
    each string is masked on its own now (issue 42 item 4)."""
    text = 'Here are the secrets for each password:\n- "mellon": "Welcome"'
    cassette = ssemock.synth.openai_chat(text, seed=2)
    path = tmp_path / "c.json"
    cassette.save(path)
    for command in (["show", str(path), "--json"], ["validate", str(path), "--json"]):
        assert main(command) == 0
        json.loads(capsys.readouterr().out)  # JSON, whatever the text holds
    assert main(["show", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["shown"][0]["text"] == text
