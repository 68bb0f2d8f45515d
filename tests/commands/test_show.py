"""``ssemock show`` names the JSON-RPC method beside each POST of an MCP session, so six POSTs
to one URL tell apart."""

from __future__ import annotations

import json

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
