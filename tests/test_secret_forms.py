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
from ssemock.redaction.keep import keep_masked
from ssemock.scan.shapes import credential_name, mask_text, safe_message
from ssemock.scan.walk import scan_cassette
from ssemock.store.cassette import SecretError

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
def hidden(draw: st.DrawFn) -> tuple[str, str]:
    """(what is hidden, what must never be shown): a credential of a known shape, or any value
    of at least 8 characters under a credential name (as ``name=value``: the form decides)."""
    if draw(st.booleans()):
        credential = draw(credentials())
        return credential, _secret_part(credential)
    value = draw(
        st.text(ALNUM + " -_.!@%&;,:/+=", min_size=8, max_size=30).filter(
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


FORMS: dict[str, Callable[[st.DrawFn, str], Cassette]] = {
    "deltas": lambda draw, what: _deltas(
        what, draw(st.sampled_from(_carriers(what))), draw(st.integers(1, 16))
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
        what, draw(st.sampled_from(_carriers(what, SESSIONS))), draw(st.integers(1, 16))
    ),
    "session handshake": lambda draw, what: _session_handshake(
        what,
        draw(st.sampled_from(sorted(SESSIONS))),
        draw(st.sampled_from(NAMED_PLACES if _named(what) else NAMED_PLACES + SHAPED_PLACES)),
    ),
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
    what, secret = data.draw(hidden())
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
    what, secret = data.draw(hidden())
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
            assert all(
                json.loads(m.payload) is not None for m in after.websocket.messages if m.type == "text"
            )


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
    result = pytester.runpytest_inprocess("-v", "-p", "no:cacheprovider", "-p", "no:cassetter")
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
    what, secret = data.draw(hidden())
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
