"""Real provider traffic is never refused; every credential shape still is (issue 21, item 1).

A loopback server answers with each provider's full header set and body shape
(:mod:`secrets_corpus`); each exchange is recorded through the public API, saved, and checked with
``ssemock validate``: 0 refusals. Each credential shape the scanner knows, in the same traffic,
is refused with a message naming the field, the rule and the value's shape, never the value.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from secrets_corpus import CREDENTIALS, PROVIDERS, Endpoint

import ssemock
from ssemock import Cassette, CassetteError
from ssemock.commands.cli import main
from ssemock.commands.loopback import running
from ssemock.redaction.rules import find_secrets
from ssemock.scan.credential_shapes import _SHAPES
from ssemock.scan.walk import scan_cassette

_SERVED: dict[tuple[str, str], Endpoint] = {}


async def _app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """Answers each corpus endpoint with its exact headers (repeated ones too) and chunks."""
    if scope["type"] != "http":
        return
    while (await receive()).get("more_body"):
        pass
    endpoint = _SERVED[(scope["method"], scope["path"])]
    await send(
        {
            "type": "http.response.start",
            "status": endpoint.status,
            "headers": [(k.encode(), v.encode()) for k, v in endpoint.headers],
        }
    )
    for chunk in endpoint.chunks:
        await send({"type": "http.response.body", "body": chunk, "more_body": True})
    await send({"type": "http.response.body", "body": b""})


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with running(_app) as url:
        yield url


def _serve(endpoint: Endpoint, path: str | None = None) -> str:
    path = path or endpoint.path
    _SERVED[(endpoint.method, path.replace("%3A", ":"))] = endpoint
    return path


def _record(server: str, endpoint: Endpoint, target: Path, path: str | None = None) -> bytes:
    path = _serve(endpoint, path)
    url = f"{server}{path}" + (f"?{endpoint.query}" if endpoint.query else "")
    with ssemock.use_cassette(target, record_mode="once"):
        with httpx.Client() as client:
            with client.stream(
                endpoint.method, url, headers=endpoint.request_headers, content=endpoint.request_body
            ) as response:
                return response.read()


def test_the_corpus_covers_every_provider_the_issue_names() -> None:
    assert {e.provider for e in PROVIDERS.values()} >= {
        "openai",
        "anthropic",
        "gemini",
        "bedrock",
        "cohere",
        "mistral",
        "groq",
        "ollama",
        "mcp",
    }


@pytest.mark.parametrize("name", sorted(PROVIDERS))
def test_real_provider_traffic_is_recorded_saved_and_valid(
    name: str, server: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    endpoint = PROVIDERS[name]
    target = tmp_path / f"{name}.json"
    body = _record(server, endpoint, target)  # refused -> CassetteError here
    assert body == b"".join(endpoint.chunks)
    cassette = Cassette.load(target)
    [x] = cassette.interactions
    assert x.response.body == body and x.response.status == endpoint.status
    stored = dict(x.response.headers)
    assert stored.get("anthropic-ratelimit-input-tokens-reset", "2026").startswith("2026")  # kept as it is
    assert scan_cassette(cassette) == [] and find_secrets(cassette) == []
    capsys.readouterr()
    assert main(["validate", str(target)]) == 0, capsys.readouterr().out
    assert "secret" not in capsys.readouterr().out


def test_every_shape_the_scanner_knows_has_a_credential_in_the_corpus() -> None:
    assert set(CREDENTIALS) == {shape.what for shape in _SHAPES}


_HIDING_PLACES = {
    "response header": lambda e, key: e.headers.append(("x-debug-echo", key.replace("\n", " "))),  # one line
    "response body": lambda e, key: e.chunks.insert(
        1, b"data: " + json.dumps({"note": key}).encode() + b"\n\n"
    ),
}


@pytest.mark.parametrize("where", sorted(_HIDING_PLACES))
@pytest.mark.parametrize("what", sorted(CREDENTIALS))
def test_every_credential_shape_in_real_traffic_is_still_refused(
    what: str, where: str, server: str, tmp_path: Path
) -> None:
    key = CREDENTIALS[what]
    base = PROVIDERS["anthropic"]
    endpoint = Endpoint(
        base.provider,
        base.method,
        base.path,
        dict(base.request_headers),
        base.request_body,
        base.status,
        list(base.headers),
        list(base.chunks),
    )
    _HIDING_PLACES[where](endpoint, key)
    target = tmp_path / "c.json"
    with pytest.raises(CassetteError) as info:
        _record(server, endpoint, target, path=f"/leak/{abs(hash((what, where)))}")
    message = str(info.value)
    assert not target.exists()
    value = key.split(" ", 1)[1] if key.startswith(("Bearer ", "Basic ")) else key
    for line in value.splitlines():
        assert line.strip("-") not in message or len(line.strip("-")) < 4
    assert what in message
    assert ("x-debug-echo" in message) if where == "response header" else ("response.body" in message)
    assert " chars: " in message  # the value's shape


def test_a_refusal_names_the_header_the_rule_and_the_shape(server: str, tmp_path: Path) -> None:
    """A value that looks generated under a credential-like name is refused with its shape shown,
    so a user can see what was taken for a key (here it is one)."""
    base = PROVIDERS["openai_chat"]
    endpoint = Endpoint(
        base.provider,
        base.method,
        base.path,
        dict(base.request_headers),
        base.request_body,
        base.status,
        [*base.headers, ("x-echo-auth-token", "9f8e7d6c5b4a39281706f5e4")],
        list(base.chunks),
    )
    with pytest.raises(CassetteError) as info:
        _record(server, endpoint, tmp_path / "c.json", path="/v1/named")
    message = str(info.value)
    assert "response.headers['x-echo-auth-token']" in message
    assert "credential-like value named 'x-echo-auth-token'" in message
    assert "24 chars: digits a-z" in message
    assert "9f8e7d6c5b4a39281706f5e4" not in message
