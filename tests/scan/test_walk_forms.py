"""No secret in any encoding (issue 31, item 3): each form is recorded from a loopback server and
imported from a vcrpy cassette, refused both ways, and kept masked beside the cassette.

The forms: a body in UTF-16 (``charset=utf-16`` with a BOM, ``utf-16le``, no charset at all),
base64 of gzip or zlib of JSON inside a JSON field, a key streamed back a few characters at a
time through Bedrock ``invoke-with-response-stream`` chunk payloads, HTML character references
(``&#115;&#107;-``, ``&#x73;``, a few characters only); and keys split across the interleaved
deltas of two tool calls, or of two choices sent out of order.
"""

from __future__ import annotations

import base64
import gzip
import json
import os
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

import ssemock
from ssemock import Cassette, CassetteError, synth
from ssemock.commands.cli import main
from ssemock.commands.loopback import running
from ssemock.protocols.bedrock_invoke import URL as INVOKE_URL
from ssemock.protocols.bedrock_invoke import chunk_frame
from ssemock.scan.walk import scan_cassette

KEY = "sk-proj-test" + "Q1w2E3r4T5y6U7i8O9p0" * 3
TAIL = KEY[-30:]  # what must never be written


def _utf16(charset: str | None) -> Cassette:
    codec = charset or "utf-16-le"
    body = json.dumps({"config": f"use {KEY} here", "n": 1}).encode(codec)
    content_type = "application/json" + (f"; charset={charset}" if charset else "")
    c = Cassette()
    c.add("POST", "https://api.example.com/v1/config", [body], headers={"content-type": content_type})
    return c


def _base64_compressed(layer: str) -> Cassette:
    inner = json.dumps({"note": f"key {KEY}"}).encode()
    packed = gzip.compress(inner) if layer == "gzip" else zlib.compress(inner)
    c = Cassette()
    c.add(
        "POST",
        "https://api.example.com/v1/state",
        [json.dumps({"state": base64.b64encode(packed).decode(), "v": 2}).encode()],
        headers={"content-type": "application/json"},
    )
    return c


def _bedrock_invoke(size: int) -> Cassette:
    text = f"here: {KEY} ok"
    events: list[Any] = [
        {"type": "message_start", "message": {"id": "m", "role": "assistant", "content": []}}
    ]
    events += [
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "text_delta", "text": text[i : i + size]},
        }
        for i in range(0, len(text), size)
    ]
    events.append({"type": "message_stop", "amazon-bedrock-invocationMetrics": {"outputTokenCount": 9}})
    c = Cassette()
    c.add(
        "POST",
        INVOKE_URL.format(model="anthropic.claude-3-haiku-20240307-v1:0"),
        [chunk_frame(e) for e in events],
        headers={"content-type": "application/vnd.amazon.eventstream"},
    )
    return c


def _html(encoded: str, content_type: str) -> Cassette:
    body = (
        f"<p>your key: {encoded}</p>"
        if content_type == "text/html"
        else json.dumps({"html": f"<code>{encoded}</code>"})
    )
    c = Cassette()
    c.add("GET", "https://api.example.com/v1/page", [body.encode()], headers={"content-type": content_type})
    return c


FORMS: dict[str, Callable[[], Cassette]] = {
    "utf-16 with a BOM": lambda: _utf16("utf-16"),
    "utf-16le": lambda: _utf16("utf-16le"),
    "utf-16 without a charset": lambda: _utf16(None),
    "base64 gzip json": lambda: _base64_compressed("gzip"),
    "base64 zlib json": lambda: _base64_compressed("zlib"),
    **{f"bedrock invoke {n}-char deltas": (lambda n=n: _bedrock_invoke(n)) for n in (1, 3, 7)},
    "html decimal references": lambda: _html("".join(f"&#{ord(c)};" for c in KEY), "text/html"),
    "html hex references in json": lambda: _html("".join(f"&#x{ord(c):x};" for c in KEY), "application/json"),
    "html references for a few characters": lambda: _html(KEY.replace("-", "&#45;"), "text/html"),
    "interleaved tool calls": lambda: synth.openai_chat(
        tool_calls=[
            {"name": "a", "arguments": {"note": KEY}},
            {"name": "b", "arguments": {"note": "x" * 60}},
        ],
        interleave_tool_calls=True,
        chunk_size=3,
        seed=1,
    ),
    "two choices out of order": lambda: synth.openai_chat(
        text=[f"a {KEY} z", "b" * 120], n=2, choices_out_of_order=True, chunk_size=2, seed=2
    ),
}

_SERVED: dict[str, Cassette] = {}


async def _app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    while (await receive()).get("more_body"):
        pass
    resp = _SERVED[scope["path"]].interactions[0].response
    headers = [(k.encode(), v.encode()) for k, v in resp.headers]
    await send({"type": "http.response.start", "status": resp.status, "headers": headers})
    for chunk in resp.chunks:
        await send({"type": "http.response.body", "body": chunk, "more_body": True})
    await send({"type": "http.response.body", "body": b""})


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with running(_app) as url:
        yield url


def _assert_masked(kept: Path) -> None:
    assert TAIL not in kept.read_text("utf-8", "replace")
    masked = Cassette.load(kept)
    assert scan_cassette(masked) == []
    for x in masked.interactions:  # in the body's own charset too
        assert TAIL.encode("utf-16-le") not in x.response.body


@pytest.mark.parametrize("form", sorted(FORMS))
def test_a_recording_of_it_is_refused_and_kept_masked(form: str, server: str, tmp_path: Path) -> None:
    path = f"/v1/{form.replace(' ', '-')}"
    _SERVED[path] = FORMS[form]()
    with pytest.raises(CassetteError) as info:
        with ssemock.use_cassette(tmp_path / "c.json", record_mode="all"):
            with httpx.Client() as client:
                client.post(server + path, content=b"{}").read()
    assert TAIL not in str(info.value)
    assert sorted(os.listdir(tmp_path)) == ["c.refused.json"]
    _assert_masked(tmp_path / "c.refused.json")


def _vcr(cassette: Cassette) -> dict[str, Any]:
    [x] = cassette.interactions
    return {
        "version": 1,
        "interactions": [
            {
                "request": {"method": x.request.method, "uri": x.request.url, "body": None, "headers": {}},
                "response": {
                    "status": {"code": x.response.status, "message": "OK"},
                    "headers": {k: [v] for k, v in x.response.headers},
                    "body": {"string": x.response.body},  # bytes: written as !!binary
                },
            }
        ],
    }


@pytest.mark.parametrize("form", sorted(FORMS))
def test_an_import_of_it_is_refused(form: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "c.yaml"
    source.write_text(yaml.safe_dump(_vcr(FORMS[form]())))
    assert main(["import-vcr", str(source), "-o", str(tmp_path / "c.json")]) == 1
    out = capsys.readouterr()
    assert "refused" in out.err + out.out and TAIL not in out.err + out.out
    assert sorted(os.listdir(tmp_path)) == ["c.yaml"]


def test_the_same_streams_without_a_key_are_written(tmp_path: Path) -> None:
    """The joins refuse a key, not a stream: the same shapes with plain text are saved."""
    synth.openai_chat(
        tool_calls=[{"name": "a", "arguments": {"note": "hello"}}, {"name": "b", "arguments": {"n": 2}}],
        interleave_tool_calls=True,
        chunk_size=3,
    ).save(tmp_path / "a.json")
    events = [
        chunk_frame({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": t}})
        for t in "hello there"
    ]
    c = Cassette()
    c.add(
        "POST",
        INVOKE_URL.format(model="m"),
        events,
        headers={"content-type": "application/vnd.amazon.eventstream"},
    )
    c.save(tmp_path / "b.json")
    _html("caf&#233; &#38; cr&#xE8;me", "text/html").save(tmp_path / "c.json")
    assert sorted(os.listdir(tmp_path)) == ["a.json", "b.json", "c.json"]


@pytest.mark.parametrize("protocol", ["gemini.live", "openai.realtime"])
@pytest.mark.parametrize("size", [1, 4])
def test_a_key_streamed_across_websocket_messages_is_refused(
    protocol: str, size: int, tmp_path: Path
) -> None:
    """A WebSocket session's messages are joined per piece key like a stream's events."""
    make = ssemock.protocols.get(protocol).synthesize
    assert make is not None
    with pytest.raises(CassetteError):
        make(text=f"here: {KEY} ok", chunk_size=size).save(tmp_path / "c.json")
    make(text="here: nothing to hide, only words", chunk_size=size).save(tmp_path / "d.json")
    assert sorted(os.listdir(tmp_path)) == ["d.json"]
