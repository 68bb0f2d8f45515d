"""One scan, every path, every form; messages and names mask every secret (issue 23, items 1 and 3).

Secrets of every known shape, and values of credential-named fields whatever they look like, are
hidden in every form a cassette can hold them -- streamed back in 1-16 character deltas of every
protocol, base64 inside Bedrock frames, stacked Content-Encodings, JSON / form / multipart /
query / fragment / header / URL forms -- and every write of cassette data refuses them, with a
message, a file name and a file system that hold no recoverable part of them.
"""

from __future__ import annotations

import base64
import gzip
import inspect
import json
import os
import re
import string
import zlib
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import quote

import brotli
import httpx
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from test_secrets import _secret_part, credentials

import ssemock
from ssemock import Cassette, CassetteError, UnmatchedRequestError, framing, protocols, synth
from ssemock.commands.cli import main
from ssemock.commands.loopback import running
from ssemock.framing.eventstream import encode as frame
from ssemock.plugin import cassette_name
from ssemock.plugin.naming import _assigned
from ssemock.redaction.keep import keep_masked
from ssemock.scan.body_forms import inflated_message
from ssemock.scan.shapes import credential_name, looks_random, mask_text, safe_message
from ssemock.scan.walk import scan_cassette
from ssemock.store.cassette import SecretError
from ssemock.store.websocket import Message

EXAMPLES = int(os.environ.get("SSEMOCK_SECRET_EXAMPLES", "25"))
ALNUM = string.ascii_letters + string.digits
#: Credential names in the spellings real code uses (header, JSON, form, env-style, camelCase).
NAMES = [
    "password",
    "passwd",
    "secret",
    "client_secret",
    "api_key",
    "apikey",
    "apiKey",
    "access_token",
    "refresh_token",
    "id_token",
    "private_key",
    "aws_secret_access_key",
    "session_token",
    "clientSecret",
    "AWS_SECRET_ACCESS_KEY",
    "x-api-key",
    "db_password",
    "accessToken",
]


def _protocol_synthesizers(sessions: bool) -> dict[str, Callable[..., Cassette]]:
    """Every registered protocol's synthesizer (its own, or ssemock.synth's of the same name):
    those whose cassette is an HTTP stream (``sessions=False``), or a WebSocket session
    (``openai.realtime``, ``gemini.live``, and any protocol registered later that speaks one)."""
    found = {
        p.name: p.synthesize or getattr(synth, p.name.replace(".", "_")) for p in protocols.all_protocols()
    }
    return {
        name: make
        for name, make in found.items()
        if any(x.websocket is not None for x in make().interactions) == sessions
    }


SYNTH = _protocol_synthesizers(sessions=False)
SESSIONS = _protocol_synthesizers(sessions=True)


@st.composite
def hidden(draw: st.DrawFn, generated: bool = False) -> tuple[str, str]:
    """(what is hidden, what must never be shown): a credential of a known shape, or any value
    of at least 8 characters under a credential name (as ``name=value``: the form decides).
    ``generated``: the form is a model's tool-call arguments, where a credential-named value is
    refused only when it looks generated (issue 42): a named value drawn there looks so."""
    if draw(st.booleans()):
        credential = draw(credentials())
        return credential, _secret_part(credential)
    value = draw(
        st.text(ALNUM, min_size=16, max_size=30).filter(looks_random)
        if generated
        else st.text(ALNUM + " -_.!@%&;,:/+=", min_size=8, max_size=30).filter(
            lambda v: v.strip(" ") == v and sum(c.isalnum() for c in v) >= 6
        )
    )
    # a digit every 4 characters: any run of 6 of it is told apart from the words of a message
    value = "".join(c + ("7" if k % 4 == 3 else "") for k, c in enumerate(value))
    return f"{draw(st.sampled_from(NAMES))}={value}", value


def _windows(secret: str, size: int = 6) -> list[str]:
    """The parts of a secret that would give it away: every run of ``size`` characters past its
    public prefix (``sk-proj-`` is in every message about such a key)."""
    tail = secret[len(secret) // 3 :] if len(secret) > 24 else secret
    return [tail[i : i + size] for i in range(max(1, len(tail) - size + 1))]


def _assert_hidden(secret: str, *texts: str) -> None:
    # a run of one or two characters ("000000", drawn by shrinking) is in any number a body holds
    for text in texts:
        for part in (w for w in _windows(secret) if any(c.isdigit() for c in w) and len(set(w)) > 2):
            assert part not in text, (part, text[:2000])


# -- the forms -------------------------------------------------------------------------------------


def _named(what: str) -> tuple[str, str] | None:
    name, eq, value = what.partition("=")
    return (name, value) if eq and credential_name(name) else None


def _json_value(what: str) -> Any:
    named = _named(what)
    return {named[0]: named[1]} if named else {"note": f"my .env: {what}"}


def _deltas(what: str, protocol: str, size: int) -> Cassette:
    """The model streams it back: as text in ``size``-character deltas, or (a named value) as the
    arguments of a tool call, whatever the protocol."""
    make = SYNTH[protocol]
    params = inspect.signature(make).parameters
    options: dict[str, Any] = {"chunk_size": size} if "chunk_size" in params else {}
    named = _named(what)
    if named and "tool_calls" in params:
        return make(tool_calls=[{"name": "save", "arguments": {"config": {named[0]: named[1]}}}], **options)
    if named and "arguments" in params:  # MCP: a tools/call
        return make(tool="save", arguments={named[0]: named[1]}, text="ok", **options)
    return make(text=f"here it is: {what} -- keep it safe", **options)


def _carriers(what: str, synthesizers: dict[str, Callable[..., Cassette]] = SYNTH) -> list[str]:
    """The protocols that can stream ``what``: a named value (``password=...``) is a credential as
    structured data (tool arguments, an MCP call), not as prose, so only the protocols with tool
    calls carry it (openai.completions, bedrock.invoke's and a2a's synthesizers stream text)."""
    if _named(what) is None:
        return sorted(synthesizers)
    return sorted(
        name
        for name, make in synthesizers.items()
        if {"tool_calls", "arguments"} & set(inspect.signature(make).parameters)
    )


def _session_deltas(what: str, protocol: str, size: int) -> Cassette:
    """A WebSocket session's server messages stream it back (text deltas, or tool-call arguments)."""
    make = SESSIONS[protocol]
    named = _named(what)
    if named:
        return make(
            tool_calls=[{"name": "save", "arguments": {"config": {named[0]: named[1]}}}], chunk_size=size
        )
    return make(text=f"here it is: {what} -- keep it safe", chunk_size=size)


#: where a session's handshake or first message carries a key: by a credential name (any value),
#: or by a place only a key's own shape gives away (Gemini's ``?key=``, the browser subprotocol)
NAMED_PLACES = ["authorization", "x-goog-api-key", "session.created"]
SHAPED_PLACES = ["?key=", "openai-insecure-api-key"]


def _session_handshake(what: str, protocol: str, place: str) -> Cassette:
    """A synthesized session of ``protocol`` whose handshake (or first server message, as OpenAI's
    ephemeral ``ek_`` key in ``session.created``) carries the secret of ``what`` at ``place``."""
    named = _named(what)
    value = named[1] if named else what
    x = SESSIONS[protocol]().interactions[0]
    assert x.websocket is not None
    request, ws = x.request, x.websocket
    if place in ("authorization", "x-goog-api-key"):
        header = f"Bearer {value}" if place == "authorization" else value
        request = replace(request, headers=[*request.headers, (place, header)])
    elif place == "?key=":
        request = replace(request, url=f"{request.url}{'&' if '?' in request.url else '?'}key={quote(value)}")
    elif place == "openai-insecure-api-key":
        protocol_header = ("sec-websocket-protocol", f"realtime, openai-insecure-api-key.{value}")
        request = replace(request, headers=[*request.headers, protocol_header])
    else:  # the first server message: a key as OpenAI's client secret in session.created, a named value by its name
        k = next(i for i, m in enumerate(ws.messages) if m.direction == "recv")
        first = ws.messages[k]
        carried = {named[0]: value} if named else {"client_secret": {"value": value, "expires_at": 1}}
        body = {**json.loads(first.data), **carried}
        text: str | bytes = json.dumps(body) if first.type == "text" else json.dumps(body).encode()
        ws = replace(ws, messages=[*ws.messages[:k], replace(first, data=text), *ws.messages[k + 1 :]])
    return Cassette([replace(x, request=request, websocket=ws)])


def _session_adding(
    protocol: str,
    messages: list[tuple[str, str | bytes]],
    offered: list[str] | None = None,
    agreed: str | None = None,
) -> Cassette:
    """A synthesized session of ``protocol`` with ``messages`` (direction, data) after its own, and
    the subprotocols given (offered ones also in the handshake's ``Sec-WebSocket-Protocol``)."""
    x = SESSIONS[protocol]().interactions[0]
    assert x.websocket is not None
    request, ws = x.request, x.websocket
    t = max((m.t for m in ws.messages), default=0.0)
    added = [
        Message(d, t + 0.01 * (k + 1), "text" if isinstance(data, str) else "binary", data)
        for k, (d, data) in enumerate(messages)
    ]
    if offered:
        request = replace(request, headers=[*request.headers, ("sec-websocket-protocol", ", ".join(offered))])
    ws = replace(
        ws,
        messages=[*ws.messages, *added],
        subprotocols=offered or ws.subprotocols,
        subprotocol=agreed or ws.subprotocol,
    )
    return Cassette([replace(x, request=request, websocket=ws)])


def _credential_subprotocol(what: str) -> str:
    """The subprotocol a browser carries ``what`` in: OpenAI Realtime's for a key, Kubernetes'
    bearer token (base64url) for a named value."""
    named = _named(what)
    if named:
        token = base64.urlsafe_b64encode(named[1].encode()).decode().rstrip("=")
        return f"base64url.bearer.authorization.k8s.io.{token}"
    return f"openai-insecure-api-key.{what}"


def _session_subprotocol(what: str, protocol: str, place: str) -> Cassette:
    """The credential offered as a subprotocol (with ``realtime``), or the one the server agreed to."""
    carried = _credential_subprotocol(what)
    if place == "offered":
        return _session_adding(protocol, [], ["realtime", carried], "realtime")
    return _session_adding(protocol, [], [carried], carried)


def _session_plain_text(what: str, protocol: str, size: int, direction: str) -> Cassette:
    """Plain-text (non-JSON) messages of one direction carry it ``size`` characters a message
    (a named value as a form line: ``password=...``)."""
    named = _named(what)
    text = f"{quote(named[0])}={quote(named[1])}" if named else f"here it is: {what} -- keep it safe"
    return _session_adding(protocol, [(direction, text[i : i + size]) for i in range(0, len(text), size)])


_PCM = bytes(range(128, 256)) * 2  # audio-like binary data: no byte of it is text


def _compress(data: bytes, layer: str) -> bytes:
    if layer == "deflate":  # raw deflate: what a compressed binary message names no header for
        z = zlib.compressobj(wbits=-zlib.MAX_WBITS)
        return z.compress(data) + z.flush()
    return {"gzip": gzip.compress, "zlib": zlib.compress}[layer](data)


def _session_compressed(what: str, protocol: str, layer: str) -> Cassette:
    """A binary message of JSON compressed with gzip, zlib or raw deflate, each way."""
    data = _compress(json.dumps(_json_value(what)).encode(), layer)
    return _session_adding(protocol, [("recv", data), ("send", data)])


def _session_audio(what: str, protocol: str) -> Cassette:
    """A client's audio message whose base64 binary data holds a key between audio bytes (a named
    value, which no byte of binary data names, rides beside it as a JSON member)."""
    named = _named(what)
    pcm = _PCM + (b"" if named else what.encode() + _PCM)
    event: dict[str, Any] = {"type": "input_audio_buffer.append", "audio": base64.b64encode(pcm).decode()}
    if named:
        event[named[0]] = named[1]
    return _session_adding(protocol, [("send", json.dumps(event))])


def _bedrock_bytes(what: str) -> Cassette:
    """invoke-with-response-stream: every frame's payload is ``{"bytes": base64(JSON event)}``."""
    events = [
        {"type": "message_start", "message": {"id": "msg_bdrk_01", "role": "assistant", "content": []}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": what[:5]}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": what[5:]}},
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": json.dumps(_json_value(what))},
        },
        {"type": "message_stop"},
    ]
    frames = [
        frame(
            {":event-type": "chunk", ":content-type": "application/json", ":message-type": "event"},
            json.dumps({"bytes": base64.b64encode(json.dumps(e).encode()).decode(), "p": "abcd"}).encode(),
        )
        for e in events
    ]
    c = Cassette()
    c.add(
        "POST",
        "https://bedrock-runtime.us-east-1.amazonaws.com/model/m/invoke-with-response-stream",
        frames,
        headers={"content-type": "application/vnd.amazon.eventstream"},
    )
    return c


def _encoded(what: str, layers: list[str]) -> Cassette:
    body = b"data: " + json.dumps(_json_value(what)).encode() + b"\n\ndata: [DONE]\n\n"
    for layer in layers:
        body = {"gzip": gzip.compress, "deflate": zlib.compress, "br": brotli.compress}[layer](body)
    c = Cassette()
    c.add(
        "GET",
        "https://api.example.com/v1/s",
        [body[:7], body[7:]],
        headers={"content-type": "text/event-stream", "content-encoding": ", ".join(layers)},
    )
    return c


def _request(what: str, form: str) -> Cassette:
    named = _named(what) or ("note", what)
    name, value = named
    c = Cassette()
    url, body, headers = "https://api.example.com/v1/x", None, {}
    if form == "json":
        body = json.dumps({"model": "m", "auth": {name: value}, "max_tokens": 5}).encode()
    elif form == "form":
        body = f"grant_type=client_credentials&{quote(name)}={quote(value)}".encode()
        headers = {"content-type": "application/x-www-form-urlencoded"}
    elif form == "multipart":
        body = (
            f'--XyZ\r\nContent-Disposition: form-data; name="file"\r\n\r\nhello\r\n--XyZ\r\n'
            f'Content-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n--XyZ--\r\n'
        ).encode()
        headers = {"content-type": "multipart/form-data; boundary=XyZ"}
    elif form == "query":
        url += f"?page=2&{quote(name)}={quote(value)}"
    elif form == "fragment":
        url += f"#state=1&{quote(name)}={quote(value)}"
    elif form == "base64 json":
        body = json.dumps({"data": base64.b64encode(json.dumps({name: value}).encode()).decode()}).encode()
    c.add("POST", url, [b"data: ok\n\n"], request_headers=headers, request_body=body)
    return c


def _response_header(what: str, form: str) -> Cassette:
    name, value = _named(what) or ("token" if form != "named header" else "x-note", what)
    header = {
        "location": ("location", f"https://app.example.com/callback?{quote(name)}={quote(value)}&state=x"),
        "link": ("link", f'<https://api.example.com/v1/p?{quote(name)}={quote(value)}>; rel="next"'),
        "fragment location": ("location", f"https://app.example.com/cb#{quote(name)}={quote(value)}"),
        "named header": (name.replace("_", "-"), value),
    }[form]
    c = Cassette()
    c.add(
        "GET",
        "https://api.example.com/v1/x",
        [b"data: ok\n\n"],
        headers=[header, ("content-type", "text/event-stream")],
    )
    return c


#: the longest delta drawn: past a key's length, so a key is whole in one delta as often as split
DELTA_MAX = 70

#: the forms that put a named value in a model's tool-call arguments (Bedrock's: in partial_json)
MODEL_FORMS = {"deltas", "session deltas", "bedrock base64"}
FORMS: dict[str, Callable[[st.DrawFn, str], Cassette]] = {
    "deltas": lambda draw, what: _deltas(
        what, draw(st.sampled_from(_carriers(what))), draw(st.integers(1, DELTA_MAX))
    ),
    "bedrock base64": lambda draw, what: _bedrock_bytes(what),
    "stacked encodings": lambda draw, what: _encoded(
        what, draw(st.lists(st.sampled_from(["gzip", "deflate", "br"]), min_size=1, max_size=3))
    ),
    "request": lambda draw, what: _request(
        what, draw(st.sampled_from(["json", "form", "multipart", "query", "fragment", "base64 json"]))
    ),
    "response header": lambda draw, what: _response_header(
        what, draw(st.sampled_from(["location", "link", "fragment location", "named header"]))
    ),
    "session deltas": lambda draw, what: _session_deltas(
        what, draw(st.sampled_from(_carriers(what, SESSIONS))), draw(st.integers(1, DELTA_MAX))
    ),
    "session handshake": lambda draw, what: _session_handshake(
        what,
        draw(st.sampled_from(sorted(SESSIONS))),
        draw(st.sampled_from(NAMED_PLACES if _named(what) else NAMED_PLACES + SHAPED_PLACES)),
    ),
    # issue 41: a subprotocol the session keeps, plain-text messages read as a stream, compressed
    # binary messages, a key in the base64 of binary data
    "session subprotocol": lambda draw, what: _session_subprotocol(
        what, draw(st.sampled_from(sorted(SESSIONS))), draw(st.sampled_from(["offered", "agreed"]))
    ),
    "session plain text": lambda draw, what: _session_plain_text(
        what,
        draw(st.sampled_from(sorted(SESSIONS))),
        draw(st.integers(1, 16)),
        draw(st.sampled_from(["send", "recv"])),
    ),
    "session compressed binary": lambda draw, what: _session_compressed(
        what, draw(st.sampled_from(sorted(SESSIONS))), draw(st.sampled_from(["gzip", "zlib", "deflate"]))
    ),
    "session base64 binary": lambda draw, what: _session_audio(what, draw(st.sampled_from(sorted(SESSIONS)))),
}


def _printable(what: str) -> bool:
    return "\n" not in what


# -- every write refuses, and says so without the secret ----------------------------------------------


@settings(
    max_examples=EXAMPLES * 4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data(), form=st.sampled_from(sorted(FORMS)))
def test_every_form_is_found_and_no_write_holds_it(
    data: st.DataObject,
    form: str,
    tmp_path_factory: pytest.TempPathFactory,
    capsys: pytest.CaptureFixture[str],
) -> None:
    what, secret = data.draw(hidden(generated=form in MODEL_FORMS))
    if form != "deltas" and not _printable(what):
        what, secret = what.replace("\n", " "), secret.replace("\n", " ")
    cassette = FORMS[form](data.draw, what)
    findings = scan_cassette(cassette)
    assert findings, (form, what)
    folder = tmp_path_factory.mktemp("forms")
    target = folder / "c.json"
    with pytest.raises(SecretError) as info:
        cassette.save(target)
    assert os.listdir(folder) == []  # nothing written, no temp file left
    _assert_hidden(secret, str(info.value), *map(str, findings), *(repr(f) for f in findings))
    # the CLI's writes go through the same scan: rechunk and fix of a file holding it write nothing
    cassette.save(target, scan_secrets=False)  # as a hand-edited file could hold it
    before = target.read_bytes()
    assert main(["rechunk", str(target), "--chunking", "fixed:3", "-o", str(folder / "r.json")]) == 1
    assert main(["fix", str(target), "-o", str(folder / "f.json")]) == 1
    assert main(["validate", str(target)]) == 1
    assert sorted(os.listdir(folder)) == ["c.json"] and target.read_bytes() == before
    _assert_hidden(secret, capsys.readouterr().out + capsys.readouterr().err)


@settings(
    max_examples=EXAMPLES * 4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data(), form=st.sampled_from(sorted(FORMS)))
def test_every_form_is_kept_masked_with_its_events_whole(
    data: st.DataObject, form: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Nothing lost to a refusal: whatever form the secret takes, the masked copy is written, holds
    no part of it, and keeps every event of the stream (a key split across deltas is masked
    across them)."""
    what, secret = data.draw(hidden(generated=form in MODEL_FORMS))
    what, secret = what.replace("\n", " "), secret.replace("\n", " ")
    cassette = FORMS[form](data.draw, what)
    assume(scan_cassette(cassette))
    _assert_kept_masked(cassette, secret, tmp_path_factory.mktemp("kept") / "c.refused.json")


#: the scheme word and the token in different deltas, the token cut mid-way; between the text
#: deltas, audio deltas whose base64 the scan joins with them (one path): draw 1 of a falsifying
#: example ('session deltas', openai.realtime, 4-character deltas), and its Bearer twin
SPLIT_CREDENTIALS = [
    ("Basic dXNlcjAwMDAwYTowMDAwMDAwMDAwMDAwMDBh", "dXNlcjAwMDAwYTowMDAwMDAwMDAwMDAwMDBh"),
    ("Bearer 9f8e7d6c5b4a3f2e1d0cQ7w8", "9f8e7d6c5b4a3f2e1d0cQ7w8"),
]


@pytest.mark.parametrize("size", [1, 4, 7, 16])
@pytest.mark.parametrize("protocol", sorted(SESSIONS))
@pytest.mark.parametrize(("what", "secret"), SPLIT_CREDENTIALS, ids=["basic", "bearer"])
def test_a_credential_split_across_session_deltas_is_kept_masked_in_every_message(
    what: str, secret: str, protocol: str, size: int, tmp_path: Path
) -> None:
    """A Bearer/Basic credential streamed back in a session's deltas is masked out of every
    message it spans, its scheme word too (left alone, the word reads as a credential again
    with the audio delta the scan joins after it), and the masked copy is written."""
    cassette = _session_deltas(what, protocol, size)
    assert scan_cassette(cassette)
    _assert_kept_masked(cassette, secret, tmp_path / "c.refused.json")


#: a key whose first delta alone already reads as a key (``sk-`` and 13 characters): masking
#: that delta alone first left the rest of the key, in the deltas after it, unmasked (the masked
#: copy of a falsifying example ('session deltas', openai.live, 14) held 37 of its characters);
#: whole in one delta (63), Bedrock's eventstream frame holding it was scrubbed in place, its CRC
#: then wrong
HEAD_FIRST_KEY = "sk-000000000000A0000000000000000000000000000000010a"


@pytest.mark.parametrize("size", [14, 20, 28, 31, 63])
@pytest.mark.parametrize(
    ("form", "protocol"),
    [("deltas", p) for p in sorted(SYNTH) if "chunk_size" in inspect.signature(SYNTH[p]).parameters]
    + [("session deltas", p) for p in sorted(SESSIONS)],
)
def test_a_key_whose_first_delta_reads_as_a_key_is_kept_masked_whole(
    form: str, protocol: str, size: int, tmp_path: Path
) -> None:
    """The deltas of a key are masked together before each is masked alone: the masked copy holds
    no part of a key whose first piece the scan already finds on its own."""
    make = _deltas if form == "deltas" else _session_deltas
    cassette = make(HEAD_FIRST_KEY, protocol, size)
    assert scan_cassette(cassette)
    _assert_kept_masked(cassette, HEAD_FIRST_KEY, tmp_path / "c.refused.json")


def _assert_kept_masked(cassette: Cassette, secret: str, target: Path) -> None:
    """The masked copy of ``cassette`` is written to ``target``, holds no part of ``secret`` and
    keeps every event of each stream and every message of each session."""
    kept = keep_masked(cassette.interactions, target)
    assert kept.path == target and not kept.left and kept.masked, kept
    _assert_hidden(secret, target.read_text("utf-8"), kept.describe())
    masked = Cassette.load(target)
    assert scan_cassette(masked) == []
    for before, after in zip(cassette.interactions, masked.interactions):
        response = before.response
        if response.header("content-encoding") is None:  # (a compressed body is kept decoded)
            content_type = response.header("content-type")
            assert len(framing.decode(after.response.body, content_type)) == len(
                framing.decode(response.body, content_type)
            )
        if before.websocket is not None:  # every message of a session kept
            assert after.websocket is not None
            assert len(after.websocket.messages) == len(before.websocket.messages)
            for m, kept in zip(before.websocket.messages, after.websocket.messages):
                if isinstance(m.json(), (dict, list)):  # JSON stays JSON, compressed data compressed
                    assert isinstance(kept.json(), (dict, list))
                elif m.type == "binary":
                    assert bool(inflated_message(m.payload)[1]) == bool(inflated_message(kept.payload)[1])


def test_a_secret_parameter_never_shows_in_a_test_id(pytester: pytest.Pytester) -> None:
    """pytest prints a parameter's value as its test id: a key, or any value of an argument
    named like a credential, shows as a hashed stand-in instead, in the terminal and in the
    cassette's file name."""
    key = "sk-proj-" + "Q1w2E3r4T5y6U7i8O9p0" * 3
    pytester.makepyfile(
        test_ids=f"""
        import pytest

        @pytest.mark.parametrize("api_key", [{key!r}, "sk-test-plain"])
        @pytest.mark.parametrize("model", ["gpt-4o-mini"])
        def test_key(api_key, model):
            assert api_key

        @pytest.mark.parametrize("password", ["hunter2"])
        def test_password(password):
            assert password
        """
    )
    result = pytester.runpytest_inprocess("-v", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=3)
    out = result.stdout.str()
    assert key[10:] not in out and "hunter2" not in out
    assert out.count("[gpt-4o-mini-secret-") == 2 and "test_password[secret-" in out
    assert "3 test parameter(s) held a secret" in out


@settings(max_examples=EXAMPLES, deadline=None)
@given(data=st.data())
def test_messages_mask_every_secret_and_credential_named_value(data: st.DataObject) -> None:
    what, secret = data.draw(hidden())
    named = _named(what)
    shown = [
        what,
        json.dumps({"auth": _json_value(what)}),
        repr(_json_value(what)),
        f"sent {what}&next=1",
        f"('{named[0]}', {named[1]!r})" if named else f"key: {what}",
        base64.b64encode(json.dumps(_json_value(what)).encode()).decode(),
    ]
    for text in shown:
        _assert_hidden(secret, mask_text(text), safe_message(text))


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("password=.&00700007", "password=***"),  # found by the test above: '.' is no redaction
        ("sent password=.&00700007&next=1", "sent password=***"),
        ("password=x 0070a07b", "password=***"),
        ("https://h/v1?key=REDACTED&alt=sse", "https://h/v1?key=REDACTED&alt=sse"),
        ("password=*** at the end", "password=*** at the end"),
        ("GET /v1?client_secret=REDACTED -> 404 no match", "GET /v1?client_secret=REDACTED -> 404 no match"),
        ("for each password:\n- mellon: Welcome", "for each password:\n- mellon: Welcome"),
        ("password: - 0070a07b", "password: ***"),
    ],
)
def test_a_password_after_a_placeholder_like_first_piece_is_masked(text: str, kept: str) -> None:
    """A bare value's first piece looking like a placeholder (``.``, ``x``) hides the rest only
    when the rest is a query's next parameter, or follows a space and a placeholder redaction
    leaves, or is a list's bullet on the line under the name: else it is a password holding ``&``
    or a space, and all of it is masked."""
    assert mask_text(text) == kept and safe_message(text) == kept


@pytest.mark.parametrize(
    "value",
    [
        "hunter2",
        "correct horse battery staple",
        "a&b&c9",
        "x;y;z9",
        "p,q,r9",
        'quo"te9',
        "ünïcödé9",
        "\x1b]0;pwned\x07",
    ],
)
def test_the_unmatched_request_diff_never_shows_a_sent_password(value: str) -> None:
    """Found by the red team: 5 of these 7 shapes were printed in full; and an escape from what was
    sent must not reach the terminal."""
    cassette = Cassette()
    cassette.add(
        "POST",
        "https://api.example.com/v1/login",
        [b"data: ok\n\n"],
        request_json={"user": "a", "password": "recorded-pw1", "client_secret": "cs-recorded"},
    )
    with ssemock.replay(cassette):
        with pytest.raises(UnmatchedRequestError) as info:
            httpx.post(
                "https://api.example.com/v1/login",
                json={"user": "a", "password": value, "client_secret": value},
            )
    message = str(info.value)
    assert value not in message and "recorded-pw1" not in message and "cs-recorded" not in message
    assert "\x1b" not in message and "\x07" not in message
    assert "$.client_secret" in message or "$.password" in message  # it still says what differs


@settings(max_examples=EXAMPLES, deadline=None)
@given(data=st.data())
def test_a_cassette_name_built_from_a_test_id_never_holds_a_secret(data: st.DataObject) -> None:
    what, secret = data.draw(hidden())
    what = what.replace("\n", " ")

    class Node:
        name = f"test_chat[{what}-gpt-4o]"

    name = cassette_name(Node())
    _assert_hidden(secret, name)
    assert name.startswith("test_chat[secret-") and name == cassette_name(Node())  # stable: replay finds it

    class Plain:
        name = "test_chat[gpt-4o-mini-2024-07-18-max_tokens=5]"

    assert cassette_name(Plain()).startswith(
        "test_chat[gpt-4o-mini-2024-07-18-max_tokens_5]"
    )  # a real id stays readable


def test_a_credential_named_parameter_of_a_test_id_is_hidden_whatever_its_value() -> None:
    """Found by the property above: in ``password=X&00700017`` the form's reading gives the
    password the one letter ``X`` (too short to mask) and the rest to another parameter, but in a
    test id the value runs to the next ``-``: the whole id is hashed."""

    class Node:
        name = "test_chat[password=X&00700017-gpt-4o]"

    name = cassette_name(Node())
    assert name.startswith("test_chat[secret-") and "0070" not in name


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="aZ_9.é=: \t-[]", max_size=40))
def test_the_names_given_a_value_in_a_test_id_are_what_a_search_from_every_position_finds(
    name: str,
) -> None:
    """The plugin finds a test id's assigned names from each run's start only (linear in a long
    id); they are those a search of ``name=`` from every position finds."""
    assert _assigned(name) == [m[1] for m in re.finditer(r"([A-Za-z_][\w.]*)\s*[=:]", name)]


# -- through a real recording --------------------------------------------------------------------------

_SERVED: dict[str, Cassette] = {}


async def _app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    while (await receive()).get("more_body"):
        pass
    resp = _SERVED[scope["path"]].interactions[0].response
    await send(
        {
            "type": "http.response.start",
            "status": resp.status,
            "headers": [(k.encode(), v.encode()) for k, v in resp.headers],
        }
    )
    for chunk in resp.chunks:
        await send({"type": "http.response.body", "body": chunk, "more_body": True})
    await send({"type": "http.response.body", "body": b""})


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with running(_app) as url:
        yield url


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    data=st.data(), form=st.sampled_from(["deltas", "bedrock base64", "stacked encodings", "response header"])
)
def test_a_recording_holding_it_in_any_form_is_refused_and_not_written(
    data: st.DataObject, form: str, server: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    what, secret = data.draw(hidden(generated=form in MODEL_FORMS))
    what, secret = what.replace("\n", " "), secret.replace("\n", " ")
    source = FORMS[form](data.draw, what)
    assume(
        any(f.field.startswith("response") for f in scan_cassette(source))
    )  # (MCP puts tool arguments in the request)
    path = f"/v1/{len(_SERVED)}"
    _SERVED[path] = source
    folder = tmp_path_factory.mktemp("rec")
    with pytest.raises(CassetteError) as info:
        with ssemock.use_cassette(folder / "c.json", record_mode="all"):
            with httpx.Client() as client:
                client.get(server + path).read()
    assert not (folder / "c.json").exists()
    # at most the recording kept beside it (masked, for `ssemock accept`), and no part of the secret in it
    assert set(os.listdir(folder)) == {"c.refused.json"}  # kept masked: no second paid call
    for kept in folder.iterdir():
        _assert_hidden(secret, kept.read_text("utf-8", "replace"))
    _assert_hidden(secret, str(info.value))


def test_an_interrupted_recording_is_scanned_like_any_save(server: str, tmp_path: Path) -> None:
    """The partial recording an interrupt keeps beside the cassette goes through the same scan."""
    key = "sk-proj-test" + "Q1w2E3r4T5y6U7i8O9p0" * 3
    _SERVED["/v1/partial"] = SYNTH["openai.chat"](text=f"key {key} end", chunk_size=3)
    target = tmp_path / "c.json"
    with pytest.raises((SecretError, KeyboardInterrupt)) as info:  # refused, or the interrupt goes on
        with ssemock.use_cassette(target, record_mode="all"):
            with httpx.Client() as client:
                client.get(server + "/v1/partial").read()
            raise KeyboardInterrupt
    assert not target.exists()
    for written in tmp_path.rglob("*"):  # whatever is kept beside it (a masked copy) holds no part of the key
        _assert_hidden(key, written.name, written.read_text("utf-8", "replace") if written.is_file() else "")
    _assert_hidden(key, str(info.value))


def test_stacked_content_encodings_are_recorded_decoded(server: str, tmp_path: Path) -> None:
    """``Content-Encoding: gzip, gzip`` used to be stored compressed, out of the scan's sight."""
    _SERVED["/v1/gzgz"] = _encoded("hello", ["gzip", "gzip"])
    target = tmp_path / "c.json"
    with ssemock.use_cassette(target, record_mode="all"):
        with httpx.Client() as client:
            assert client.get(server + "/v1/gzgz").text.startswith("data: ")
    [x] = Cassette.load(target).interactions
    assert x.response.body.startswith(b"data: ") and x.response.header("content-encoding") is None


def test_a_key_in_deltas_of_a_stream_too_large_to_walk_is_found_too() -> None:
    """Past 2 MiB a stream is reassembled per JSON member name in one regex pass, not event by event."""
    key = "sk-ant-api03-" + "Q1w2E3r4T5y6U7i8O9p0" * 3
    filler = b'data: {"choices":[{"index":0,"delta":{"content":"lorem "}}]}\n\n' * 40_000
    pieces = b"".join(
        b'data: {"choices":[{"index":0,"delta":{"content":%s}}]}\n\n' % json.dumps(key[i : i + 3]).encode()
        for i in range(0, len(key), 3)
    )
    cassette = Cassette()
    cassette.add("POST", "https://api.example.com/v1/chat/completions", [filler, pieces, b"data: [DONE]\n\n"])
    assert len(cassette.interactions[0].response.body) > 2 << 20
    [found] = scan_cassette(cassette)
    assert found.rule == "an Anthropic key (sk-ant-...)" and "reassembled content" in found.where


@pytest.mark.parametrize(
    ("protocol", "place"), [(p, place) for p in sorted(SESSIONS) for place in NAMED_PLACES + SHAPED_PLACES]
)
def test_every_session_protocol_carries_a_key_in_every_place_and_it_is_found(
    protocol: str, place: str, tmp_path: Path
) -> None:
    """Each WebSocket protocol of the registry (its synthesized session), each place a session's
    key goes (issue 35): found where it is, the save refused, the kept copy masked."""
    key = "sk-" + "test-" + "ws35forms0123456789abcdefghij"  # put together: no key-shaped literal here
    cassette = _session_handshake(key, protocol, place)
    fields = {f.field for f in scan_cassette(cassette)}
    ws = cassette.interactions[0].websocket
    assert ws is not None
    first = next(k for k, m in enumerate(ws.messages) if m.direction == "recv")
    where = {"session.created": f"websocket.messages[{first}]", "?key=": "request.url"}.get(place)
    assert fields and (where is None or where in fields), fields
    with pytest.raises(SecretError):
        cassette.save(tmp_path / "s.json")
    kept = keep_masked(cassette.interactions, tmp_path / "s.refused.json")
    assert kept.masked and key[8:] not in (tmp_path / "s.refused.json").read_text("utf-8")


# -- issue 41: each new session form recorded through a real client, and imported from a browser's HAR


#: a key of OpenAI's project shape, put together: no key-shaped literal sits in this file
KEY41 = "sk-" + "proj-" + "test41" + "Ws0rm5Q1w2E3r4T5y6U7i8O9p0ZxCvBnMlKj"
#: the same session replayed with another key
OTHER41 = "sk-" + "proj-" + "test41" + "0therKeyQ1w2E3r4T5y6U7i8O9p0ZxCvBnM"


def _views(text: str) -> Iterator[str]:
    """``text``, and what each base64 run in it decodes to, inflated when it is compressed."""
    yield text
    for run in re.findall(r"[A-Za-z0-9+/_\-]{16,}={0,2}", text):
        for decode in (base64.b64decode, base64.urlsafe_b64decode):
            try:
                raw = decode(run + "=" * (-len(run) % 4))
            except ValueError:
                continue
            yield raw.decode("latin-1")
            yield inflated_message(raw)[0].decode("latin-1")


def _assert_nowhere(key: str, *texts: str) -> None:
    """No part of ``key`` past its public prefix in ``texts`` or what their base64 decodes to,
    plain, URL-encoded or base64 (at each of the three byte alignments, either alphabet)."""
    secret = key[8:]
    needles = {secret, quote(key, safe="")[8:]}
    for pad in range(3):
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            needles.add(encode(b"\x00" * pad + key.encode()).decode()[12:-4])
    for text in texts:
        for view in _views(text):
            for needle in needles:
                assert needle not in view, (needle, view[:300])


def _session_server(form: str) -> Callable[[Any], None]:
    """A loopback server: a Realtime-like ``session.created``, then what ``form`` needs of it
    (a compressed binary message holding the key, or an answer to each client message)."""

    def serve(ws: Any) -> None:
        ws.send(json.dumps({"type": "session.created", "session": {"id": "sess_41"}}))
        if form in ("gzip", "zlib", "deflate"):
            ws.send(_compress(json.dumps({"type": "note", "text": f"your key: {KEY41}"}).encode(), form))
        for raw in ws:
            ws.send(json.dumps({"type": "ack", "size": len(raw)}))

    return serve


async def _client(url: str, form: str, key: str = KEY41) -> list[Any]:
    """What a browser-like client does in ``form``: the key in a subprotocol, sent as plain text
    in pieces, or in the base64 of its audio; every server message it got (binary ones inflated)."""
    from websockets.asyncio.client import connect

    subprotocols = {
        "subprotocol": ["realtime", f"openai-insecure-api-key.{key}"],
        "agreed subprotocol": [f"openai-insecure-api-key.{key}"],
    }.get(form)
    async with connect(url, subprotocols=subprotocols) as ws:  # type: ignore[arg-type]
        got: list[Any] = [ws.subprotocol is not None, json.loads(await ws.recv())]
        if form in ("gzip", "zlib", "deflate"):
            got.append(json.loads(inflated_message(await ws.recv())[0]))
        sent = {
            "plain text": [f"my key is {key[:9]}", key[9:20], f"{key[20:]} -- keep it"],
            "base64 binary": [
                json.dumps(
                    {
                        "type": "input_audio_buffer.append",
                        "audio": base64.b64encode(_PCM + key.encode() + _PCM).decode(),
                    }
                )
            ],
        }.get(form, ['{"type": "response.create"}'])
        for message in sent:
            await ws.send(message)
            got.append(json.loads(await ws.recv()))
        return got


def _record41(form: str, path: Path) -> tuple[list[Any], str]:
    """``form`` recorded through the real websockets client against a loopback server."""
    import asyncio

    from ws_servers import running as ws_running

    agreed = {"subprotocol": ["realtime"], "agreed subprotocol": [f"openai-insecure-api-key.{KEY41}"]}
    with ws_running(_session_server(form), subprotocols=agreed.get(form)) as server:
        url = server.url("/v1/realtime?model=gpt-realtime")
        with ssemock.use_cassette(path, record_mode="all"):
            return asyncio.run(_client(url, form)), url


@pytest.mark.parametrize("form", ["subprotocol", "agreed subprotocol"])
def test_a_key_in_a_subprotocol_is_recorded_masked_and_replays_with_another_key(
    form: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    """The browser's ``openai-insecure-api-key.<key>`` subprotocol, offered (the server agrees to
    ``realtime``) or agreed to: masked by default, as ``authorization`` is, so the recording is
    kept as the cassette; a client offering another key replays it, and gets its own back."""
    import asyncio

    path = tmp_path / "rt.json"
    live, url = _record41(form, path)
    ws = Cassette.load(path).interactions[0].websocket
    assert ws is not None and any(p.endswith(".REDACTED") for p in [*ws.subprotocols, ws.subprotocol or ""])
    with ssemock.use_cassette(path, record_mode="none"):
        assert asyncio.run(_client(url, form, key=OTHER41)) == live
    out = capsys.readouterr()
    _assert_nowhere(KEY41, path.read_text(), out.out, out.err, caplog.text)


@pytest.mark.parametrize("form", ["plain text", "gzip", "zlib", "deflate", "base64 binary"])
def test_a_key_a_session_carries_in_any_new_form_is_refused_and_kept_masked(
    form: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    """A key split across plain-text messages, in a gzip / zlib / raw deflate binary message, or
    in the base64 of a client's audio, recorded for real: the save refused, the recording kept
    beside it masked (every message kept), nothing holding the key in any encoding."""
    path = tmp_path / "rt.json"
    with pytest.raises(CassetteError) as info:
        _record41(form, path)
    assert not path.exists() and sorted(os.listdir(tmp_path)) == ["rt.refused.json"]
    kept = Cassette.load(tmp_path / "rt.refused.json")
    assert scan_cassette(kept) == []
    ws = kept.interactions[0].websocket
    assert ws is not None and len(ws.messages) == {"plain text": 7, "base64 binary": 3}.get(form, 4)
    out = capsys.readouterr()
    _assert_nowhere(
        KEY41, (tmp_path / "rt.refused.json").read_text(), str(info.value), out.out, out.err, caplog.text
    )


def _browser_har(form: str, key: str = KEY41) -> dict[str, Any]:
    """A Chrome DevTools HAR of a Realtime session carrying ``key`` in ``form``."""
    messages = [("receive", 1, json.dumps({"type": "session.created"}))]
    headers = [{"name": "Upgrade", "value": "websocket"}, {"name": "Sec-WebSocket-Version", "value": "13"}]
    if form == "subprotocol":
        headers.append(
            {"name": "Sec-WebSocket-Protocol", "value": f"realtime, openai-insecure-api-key.{key}"}
        )
    elif form == "plain text":
        messages += [("send", 1, key[:9]), ("send", 1, key[9:20]), ("send", 1, key[20:])]
    elif form == "base64 binary":
        audio = base64.b64encode(_PCM + key.encode() + _PCM).decode()
        messages.append(("send", 1, json.dumps({"type": "input_audio_buffer.append", "audio": audio})))
    else:
        data = _compress(json.dumps({"type": "note", "text": key}).encode(), form)
        messages.append(("receive", 2, base64.b64encode(data).decode()))
    entry = {
        "startedDateTime": "2026-11-26T16:00:00.000Z",
        "time": 900,
        "request": {
            "method": "GET",
            "url": "wss://api.openai.com/v1/realtime?model=gpt-realtime",
            "headers": headers,
        },
        "response": {"status": 101, "headers": [{"name": "Sec-WebSocket-Protocol", "value": "realtime"}]},
        "_resourceType": "websocket",
        "_webSocketMessages": [
            {"type": kind, "time": 1795773600.25 + 0.25 * k, "opcode": opcode, "data": data}
            for k, (kind, opcode, data) in enumerate(messages)
        ],
    }
    return {"log": {"version": "1.2", "entries": [entry]}}


@pytest.mark.parametrize("form", ["subprotocol", "plain text", "gzip", "zlib", "deflate", "base64 binary"])
def test_import_har_of_a_browser_session_never_writes_its_key(
    form: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``ssemock import-har`` of a browser's Realtime session: a key in the subprotocol is masked
    as a header's is and the cassette written; in any other form the import is refused and
    nothing written; neither the file nor the terminal holds the key."""
    har, out = tmp_path / "rt.har", tmp_path / "rt.json"
    har.write_text(json.dumps(_browser_har(form)))
    code = main(["import-har", str(har), "-o", str(out)])
    printed = capsys.readouterr()
    if form == "subprotocol":
        assert code == 0 and Cassette.load(out).interactions[0].websocket is not None
        [(name, value)] = [
            h for h in Cassette.load(out).interactions[0].request.headers if "protocol" in h[0]
        ]
        assert value == "realtime, openai-insecure-api-key.REDACTED"
        _assert_nowhere(KEY41, out.read_text())
    else:
        assert code == 1 and not out.exists() and "websocket.messages" in printed.err
    _assert_nowhere(KEY41, printed.out, printed.err)


def test_export_har_and_the_timeline_page_never_show_a_key(tmp_path: Path) -> None:
    """A cassette holding a key in every new form (saved unscanned, as a hand-edited file or a
    refused recording's original could): ``export-har`` writes it masked and says so, and
    ``serve``'s page shows none of it."""
    import httpx as client

    from ssemock.commands.serve import app

    forms = [
        _session_subprotocol(KEY41, "openai.realtime", "offered"),
        _session_subprotocol(KEY41, "openai.realtime", "agreed"),
        _session_plain_text(KEY41, "openai.realtime", 5, "send"),
        *(_session_compressed(KEY41, "openai.realtime", layer) for layer in ("gzip", "zlib", "deflate")),
        _session_audio(KEY41, "openai.realtime"),
    ]
    cassette = Cassette([x for c in forms for x in c.interactions])
    x = cassette.interactions[0]
    cassette.interactions[0] = replace(
        x, request=replace(x.request, url=x.request.url.replace("wss://", f"wss://u:{KEY41}@"))
    )
    # and an HTTP stream whose URL's userinfo holds a password no shape gives away (the page
    # draws its timeline)
    password = "Zq7xWv9Lp2" + "Rt8YmK4"
    cassette.add("GET", f"https://u:{password}@api.example.com/v1/s", [b"data: ok\n\n"])
    path = tmp_path / "held.json"
    cassette.save(path, scan_secrets=False)
    har = tmp_path / "held.har"
    assert main(["export-har", str(path), "-o", str(har)]) == 0
    assert len(json.loads(har.read_text())["log"]["entries"]) == len(forms) + 1
    with running(app(path)) as url:
        page = client.get(url + "/").text
    assert page.count('class="interaction websocket"') == len(forms) and "api.example.com" in page
    _assert_nowhere(KEY41, har.read_text(), page)
    assert password not in har.read_text() and password not in page
