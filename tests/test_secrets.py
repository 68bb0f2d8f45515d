"""ssemock.scan.shapes: one scanner on decoded forms; nothing it finds reaches a cassette, a log or a terminal.

Fake credentials only (``sk-test``-style prefixes, random bodies made here): each is built at run
time in the shape of a real one. The property tests record through a real loopback server, in
every field (URL path, query, userinfo, headers, JSON/form/text request bodies, and, through an
echoing server, response headers and body), with the key wrapped in random JSON escapes and URL
encodings, then check the file, every CLI command and pytest's own output.
"""

from __future__ import annotations

import base64
import json
import os
import string
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import StreamingResponse
from starlette.routing import Route

import ssemock
from ssemock import Cassette, CassetteError
from ssemock.commands.cli import main
from ssemock.commands.loopback import running
from ssemock.commands.serve import Replayer
from ssemock.redaction.rules import escape_control, find_secrets, mask_text, mask_url
from ssemock.scan.shapes import scan, scan_header, scan_url

EXAMPLES = int(
    os.environ.get("SSEMOCK_SECRET_EXAMPLES", "25")
)  # per property; bounded so the file runs in seconds
ALNUM = string.ascii_letters + string.digits
TOKEN = ALNUM + "-_"


def _fill(draw: st.DrawFn, alphabet: str, n: int) -> str:
    """``n`` random characters with at least one digit and one letter (real keys always have both)."""
    body = draw(st.text(alphabet, min_size=n - 2, max_size=n - 2))
    digits = [c for c in alphabet if c.isdigit()] or list(string.digits)
    letters = [c for c in alphabet if c.isalpha()] or digits
    return body + draw(st.sampled_from(digits)) + draw(st.sampled_from(letters))


@st.composite
def credentials(draw: st.DrawFn, *, one_line: bool = True) -> str:
    """One fake credential in the shape of a real one (every shape the issue lists)."""
    kind = draw(
        st.sampled_from(
            [
                "openai-proj",
                "openai-svcacct",
                "openai-admin",
                "openai-legacy",
                "anthropic",
                "google",
                "google-oauth",
                "github",
                "github-pat",
                "aws",
                "slack",
                "stripe",
                "hf",
                "groq",
                "xai",
                "jwt",
                "bearer",
                "basic",
                *([] if one_line else ["pem"]),
            ]
        )
    )
    f = lambda alphabet, n: _fill(draw, alphabet, n)  # noqa: E731
    return {
        "openai-proj": lambda: "sk-proj-test" + f(TOKEN, 60),
        "openai-svcacct": lambda: "sk-svcacct-test" + f(TOKEN, 60),
        "openai-admin": lambda: "sk-admin-test" + f(TOKEN, 60),
        "openai-legacy": lambda: "sk-" + f(ALNUM, 48),
        "anthropic": lambda: "sk-ant-test03-" + f(TOKEN, 80),
        "google": lambda: "AIza" + f(TOKEN, 35),
        "google-oauth": lambda: "ya29." + f(TOKEN, 60),
        "github": lambda: "gh" + draw(st.sampled_from("pousr")) + "_" + f(ALNUM, 36),
        "github-pat": lambda: "github_pat_" + f(ALNUM + "_", 82),
        "aws": lambda: (
            draw(st.sampled_from(["AKIA", "ASIA"])) + f(string.ascii_uppercase + string.digits, 16)
        ),
        "slack": lambda: (
            "xox" + draw(st.sampled_from("abpr")) + "-" + f(string.digits, 12) + "-" + f(ALNUM, 24)
        ),
        "stripe": lambda: draw(st.sampled_from(["sk", "rk"])) + "_live_" + f(ALNUM, 24),
        "hf": lambda: "hf_" + f(ALNUM, 34),
        "groq": lambda: "gsk_" + f(ALNUM, 52),
        "xai": lambda: "xai-" + f(ALNUM, 80),
        "jwt": lambda: "eyJhbGciOiJIUzI1NiJ9.eyJ" + f(TOKEN, 30) + "." + f(TOKEN, 43),
        "bearer": lambda: "Bearer " + f(ALNUM + "._~+/-", 32),
        "basic": lambda: "Basic " + base64.b64encode(f"user{f(ALNUM, 6)}:{f(ALNUM, 16)}".encode()).decode(),
        "pem": lambda: (
            "-----BEGIN RSA PRIVATE KEY-----\n"
            + f(ALNUM + "+/", 64)
            + "\n"
            + f(ALNUM + "+/", 64)
            + "\n-----END RSA PRIVATE KEY-----"
        ),
    }[kind]()


def _secret_part(credential: str) -> str:
    """What must never be shown: the value (the word of ``Bearer x``/``Basic x`` may stay)."""
    return credential.split(" ", 1)[1] if credential.startswith(("Bearer ", "Basic ")) else credential


OPENERS = ["\\n", "\\t", "\\u0020", '\\"', "\\\\n", "%3D", "%20", "%0A", "%22", "%253D", " ", "=", ":", ""]
# A key ends where a character that cannot be part of it follows (fixed-length shapes such as
# AIza + 35 and AKIA + 16 need that, or base64 blobs would be full of them); it may start anywhere.
CLOSERS = ["\\n", "\\t", "\\u0020", '\\"', "%3D", "%20", "%0A", "%26", " ", ","]


@st.composite
def wrapped(draw: st.DrawFn, credential: str) -> str:
    """Words around the key, a random JSON escape or URL encoding right before and after it, and
    sometimes some of the key's own characters escaped (``%XX`` or ``\\u00XX``)."""
    before = draw(st.text(string.ascii_letters + " ", max_size=12))
    after = draw(st.text(string.ascii_letters + " ", max_size=12))
    key = credential
    how = draw(st.sampled_from(["plain", "plain", "percent", "json"]))
    if how != "plain" and " " not in key:
        picks = draw(st.sets(st.integers(0, len(key) - 1), max_size=6))
        key = "".join(
            (f"%{ord(c):02X}" if how == "percent" else f"\\u{ord(c):04x}") if i in picks else c
            for i, c in enumerate(key)
        )
    return before + draw(st.sampled_from(OPENERS)) + key + draw(st.sampled_from(CLOSERS)) + after


# -- the scanner itself ----------------------------------------------------------------------------


@settings(max_examples=EXAMPLES * 4, deadline=None)
@given(st.data())
def test_every_shape_is_found_wherever_it_starts(data: st.DataObject) -> None:
    credential = data.draw(credentials(one_line=False))
    text = data.draw(wrapped(credential))
    found = scan(text)
    assert found, text
    masked = mask_text(text)
    assert _secret_part(credential) not in masked
    assert all(_secret_part(credential)[-8:] not in s.preview for s in found)


@pytest.mark.parametrize(
    "text",
    [
        "a risk-assessment-framework-2024 for the disk-usage-monitor",
        "Bearer authentication and Basic authentication are described in RFC 6750",
        "the bearer of the news",
        "ask-me-anything",
        "AIza is not a key alone",
        "eyJ alone",
        "hf_ is short",
        "sk-learn-based-classifier",
        "ghp_short",
        'data: {"id":"chatcmpl-9Q8x7f3kLmN2pQrStUvWxYz","system_fingerprint":'
        '"fp_0123456789","model":"gpt-4o-mini-2024-07-18"}\n\n',
        "50% off \\u003c b \\u003e %20 %2F",
    ],
)
def test_ordinary_text_is_not_a_secret(text: str) -> None:
    assert scan(text) == []
    assert mask_text(text) == text


def test_offsets_point_into_the_original_even_when_found_decoded() -> None:
    key = "sk-proj-test" + "Ab3dEf6hIj9kLm2nOp5qRs8tUvWx"
    text = "note: x%3D" + quote(key, safe="").replace("j", "%6A") + "%26y"
    (found,) = scan(text)
    assert text[found.start : found.end].replace("%6A", "j") == key
    assert found.preview == "sk-***" and key not in found.preview
    utf = "ünïcödé " + key + " 世界"
    (found,) = scan(utf)
    assert utf[found.start : found.end] == key


def test_aws_secret_beside_an_access_key_id() -> None:
    text = "aws_access_key_id=AKIATESTFAKE1234ABCD\naws_secret=wJalrXUtnFEMI/K7MDENG/bPxRfiCYTESTFAKEKY"
    whats = [s.what for s in scan(text)]
    assert whats == ["an AWS access key id (AKIA/ASIA...)", "an AWS secret access key"]
    assert "wJalrXUtnFEMI" not in mask_text(text)


def test_credential_named_values_in_headers_queries_and_urls() -> None:
    assert scan_header("x-auth-token", "9f8e7d6c5b4a39281706")
    assert scan_header("private-token", "glpat-Ab3dEf6hIj9kLm2nOp5q")
    assert not scan_header("x-ratelimit-remaining-tokens", "149984")
    assert not scan_header("anthropic-ratelimit-tokens-reset", "2024-05-01T00:00:00Z")
    assert not scan_header("content-type", "application/json")
    url = "https://user:hunter2pass@h/v1?client_secret=Zx9Yw8Vu7Ts6Rq5Po4&X-Amz-Signature=0a1b2c3d4e5f6a7b8c9d&n=1"
    found = scan_url(url)
    assert [url[s.start : s.end] for s in found] == [
        "hunter2pass",
        "Zx9Yw8Vu7Ts6Rq5Po4",
        "0a1b2c3d4e5f6a7b8c9d",
    ]
    assert mask_url(url) == "https://user:REDACTED@h/v1?client_secret=REDACTED&X-Amz-Signature=REDACTED&n=1"


def test_escape_control_keeps_a_cassette_off_the_terminal() -> None:
    text = "title \x1b]0;pwned\x07 clip \x1b]52;c;ZXZpbA==\x07 red \x1b[31mx\x1b[0m csi \x9b2J bidi \u202e\nnext\tline"
    out = escape_control(text)
    assert "\x1b" not in out and "\x07" not in out and "\x9b" not in out and "\u202e" not in out
    assert "\\u001b]0;pwned\\u0007" in out and "\\u202e" in out and "\nnext\tline" in out


# -- recording through a real server ----------------------------------------------------------------


async def _echo(request: Request) -> StreamingResponse:
    """Echoes every request header into its response headers and its SSE body (servers do)."""
    body = await request.body()
    echoed = {k: v for k, v in request.headers.items() if k not in ("host", "content-length")}

    async def events() -> AsyncIterator[bytes]:
        yield b"data: " + json.dumps({"headers": echoed, "url": str(request.url)}).encode() + b"\n\n"
        yield b"data: " + json.dumps({"body": body.decode("latin-1")}).encode() + b"\n\n"
        yield b"data: [DONE]\n\n"

    headers = {f"x-echo-{k}": v for k, v in echoed.items() if k.startswith("x-")}
    return StreamingResponse(events(), media_type="text/event-stream", headers=headers)


ECHO = Starlette(routes=[Route("/{path:path}", _echo, methods=["GET", "POST"])])


@pytest.fixture(scope="module")
def echo() -> Iterator[str]:
    with running(ECHO) as url:
        yield url


def _requests(base: str, text: str, credential: str) -> list[Callable[[httpx.Client], object]]:
    """One request per field the secret can travel in."""
    host = base.split("//", 1)[1]
    path_safe = quote(text, safe="")
    return [
        lambda c: c.get(f"{base}/v1/{path_safe}/x"),
        lambda c: c.get(f"{base}/v1/search?q={path_safe}&n=1"),
        lambda c: c.get(f"http://user:{quote(_secret_part(credential), safe='')}@{host}/v1/userinfo"),
        lambda c: c.get(
            f"{base}/v1/header", headers={"x-debug-note": text.strip()}
        ),  # (no edge spaces in HTTP)
        lambda c: c.post(
            f"{base}/v1/chat/completions",
            json={"messages": [{"role": "user", "content": f"my .env:\n{text}"}]},
        ),
        lambda c: c.post(
            f"{base}/v1/form",
            content=f"note={quote(text)}&n=1".encode(),
            headers={"content-type": "application/x-www-form-urlencoded"},
        ),
        lambda c: c.post(f"{base}/v1/text", content=text.encode(), headers={"content-type": "text/plain"}),
    ]


def _cli_outputs(path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """What every cassette command prints about ``path`` (read-only ones first)."""
    out = []
    for argv in (
        ["show", str(path)],
        ["show", "--events", str(path)],
        ["show", "--json", "--events", str(path)],
        ["validate", str(path)],
        ["validate", "--json", str(path)],
        ["redact", "--check", str(path)],
        ["rechunk", "--chunking", "fixed:5", "--preview", str(path)],
        ["fix", str(path), "-o", str(path.with_suffix(".fixed.json"))],
        ["redact", str(path)],
        ["show", "--events", str(path)],
    ):
        main(argv)
        captured = capsys.readouterr()
        out.append(captured.out + captured.err)
    return "\n".join(out)


def _serve_outputs(path: Path, text: str) -> str:
    """The 404 body and the access log of ``ssemock serve`` for a request that matches nothing."""
    lines: list[str] = []
    replayer = Replayer([path], log=lines.append)
    sent = ssemock.Request("POST", f"http://h/v1/other?q={quote(text, safe='')}", [], text.encode())
    return json.dumps(replayer.unmatched(sent)) + "\n".join(lines) + "\n".join(replayer.routes())


def _secret_cassette(text: str) -> Cassette:
    """A cassette holding ``text`` in every field (written by hand, as an edited file could be);
    in the headers with CR, LF and NUL as spaces, which no header may hold (the cassette refuses
    them)."""
    c = Cassette()
    in_header = text.translate({10: " ", 13: " ", 0: " "})
    c.add(
        "POST",
        f"https://api.example.com/v1/{quote(text, safe='')}?q={quote(text, safe='')}",
        [f"data: {json.dumps({'echo': text})}\n\n".encode(), b"data: [DONE]\n\n"],
        headers={"x-echo": in_header, "content-type": "text/event-stream"},
        request_headers={"x-debug-note": in_header},
        request_body=f"note: {text}".encode(),
        complete=False,
        error={"type": "ReadError", "message": text},
    )
    return c


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_a_secret_in_any_field_never_reaches_the_file_or_any_output(
    data: st.DataObject,
    echo: str,
    tmp_path_factory: pytest.TempPathFactory,
    capsys: pytest.CaptureFixture[str],
) -> None:
    credential = data.draw(credentials())
    text = data.draw(wrapped(credential))
    secret = _secret_part(credential)
    send = data.draw(st.sampled_from(_requests(echo, text, credential)))
    folder = tmp_path_factory.mktemp("secret")
    path = folder / "c.json"
    try:
        with ssemock.use_cassette(path, record_mode="all"):
            with httpx.Client() as client:
                send(client)
    except CassetteError as exc:  # refused: says where, with a masked preview
        assert secret not in str(exc) and "offset" in str(exc)
        assert not path.exists()
    else:
        assert secret not in path.read_text(encoding="utf-8")
        assert find_secrets(Cassette.load(path)) == []
    hand = folder / "hand.json"
    _secret_cassette(text).save(hand, scan_secrets=False)  # by hand, as an edited file could be
    assert secret not in _cli_outputs(hand, capsys)
    assert secret not in _serve_outputs(hand, text)
    assert find_secrets(Cassette.load(hand)) == []  # `ssemock redact` scrubbed it


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_headers_echoed_by_the_server_are_redacted_or_refused(
    data: st.DataObject, echo: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    credential = data.draw(credentials())
    secret = _secret_part(credential)
    name = data.draw(
        st.sampled_from(
            [
                "authorization",
                "x-api-key",
                "x-auth-token",
                "anthropic-api-key",
                "x-amz-security-token",
                "ocp-apim-subscription-key",
                "private-token",
                "x-goog-api-key",
                "x-custom-note",
            ]
        )
    )
    path = tmp_path_factory.mktemp("echo") / "c.json"
    try:
        with ssemock.use_cassette(path, record_mode="all"):
            with httpx.Client() as client:
                client.get(f"{echo}/v1/echo", headers={name: credential})
    except CassetteError as exc:
        assert secret not in str(exc) and "response" in str(exc)  # the echo in the response is caught
    else:
        assert secret not in path.read_text(encoding="utf-8")
        assert (
            name == "x-custom-note"
            or dict(Cassette.load(path).interactions[0].request.headers)[name] == "REDACTED"
        )


# -- pytest's own output ---------------------------------------------------------------------------


def test_pytest_output_never_shows_a_secret(pytester: pytest.Pytester, echo: str) -> None:
    """A test run that records secrets fails at the save, and its report shows previews only."""
    keys = {
        "openai": "sk-proj-test" + "Q1w2E3r4T5y6U7i8O9p0" * 3,
        "google": "AIza" + "TESTfake1234567890abcdefghijklmnop"[:35],
        "github": "ghp_" + "TESTfake1234567890abcdefghijklmnopqr"[:36],
        "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ0ZXN0In0.c2lnbmF0dXJlX3Rlc3RfZmFrZQ",
    }
    pytester.makepyfile(
        test_leak=f"""
import httpx, pytest

KEYS = {keys!r}

@pytest.mark.parametrize("name", sorted(KEYS))
def test_leak(ssemock, name):
    with httpx.Client() as client:
        client.post("{echo}/v1/chat/completions", json={{"content": "my .env:\\n" + KEYS[name]}},
                    headers={{"x-note": "%3D" + KEYS[name]}})
"""
    )
    result = pytester.runpytest("--ssemock-record-mode=all", "-p", "no:cacheprovider", "-rA")
    output = "\n".join(result.outlines + result.errlines)
    assert "refusing to save" in output, output
    for key in keys.values():
        assert key not in output


def test_stream_assertion_messages_are_masked() -> None:
    """Assertion failures quote stream and client data; Player.check's shrunk failure too."""
    key = "sk-proj-test" + "Q1w2E3r4T5y6U7i8O9p0" * 3
    cassette = Cassette()
    cassette.add("GET", "https://api.example.com/v1/s", [b"data: one\n\n", b"data: two\n\n"])
    with ssemock.replay(cassette, chunking="bytewise") as player:

        def run() -> None:  # a decoder that needs whole events per chunk, and says so with a key
            with httpx.Client() as client:
                with client.stream("GET", "https://api.example.com/v1/s") as resp:
                    chunks = list(resp.iter_raw())
            assert all(c.endswith(b"\n\n") for c in chunks), f"split event while using {key}"

        with pytest.raises(AssertionError) as info:
            player.check(run)
        with pytest.raises(AssertionError) as events_info:
            player.assert_events([("message", key)])
    for message in (str(info.value), str(events_info.value)):
        assert key not in message and "sk-***" in message


def test_what_redaction_leaves_is_no_secret(tmp_path: Path) -> None:
    """Found by the property test: a Bearer value followed by %3D, redacted, was still flagged."""
    path = tmp_path / "hand.json"
    _secret_cassette("\nBearer 0000000000000000000000000000000a%3D").save(path, scan_secrets=False)
    assert find_secrets(Cassette.load(path)) != []
    assert main(["redact", str(path)]) == 0
    assert find_secrets(Cassette.load(path)) == []
