"""Redaction: secrets never reach a cassette, and find_secrets says where one was left."""

from __future__ import annotations

from urllib.parse import parse_qsl, urlsplit

import pytest

from ssemock import Cassette, Request, Response
from ssemock.redaction.rules import (
    QUERY_PARAMS,
    REDACTED,
    REQUEST_HEADERS,
    find_secrets,
    redact_request,
    redact_response,
    redact_url,
)

OPENAI_KEY = "sk-test-Ab3dEf6hIj9kLm2nOp5qRs8t"
ANTHROPIC_KEY = "sk-ant-test-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0"
GOOGLE_KEY = "AIzaTESTFAKE1b2C3d4E5f6G7h8I9j0K1l2M3n4"
BEARER = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig_abc"


def _query(url: str) -> list[tuple[str, str]]:
    return parse_qsl(urlsplit(url).query, keep_blank_values=True)


# -- redact_url -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "param",
    [
        "key",
        "api_key",
        "api-key",
        "apikey",
        "API_KEY",
        "access_token",
        "access-token",
        "token",
        "secret",
        "password",
        "Key",
    ],
)
def test_redact_url_replaces_secret_params_and_keeps_others(param: str) -> None:
    url = f"https://generativelanguage.googleapis.com/v1beta/models/g:streamGenerateContent?alt=sse&{param}={GOOGLE_KEY}&n=2#frag"
    out = redact_url(url)
    assert GOOGLE_KEY not in out
    assert _query(out) == [("alt", "sse"), (param, REDACTED), ("n", "2")]
    parts, orig = urlsplit(out), urlsplit(url)
    assert (parts.scheme, parts.netloc, parts.path, parts.fragment) == (
        orig.scheme,
        orig.netloc,
        orig.path,
        orig.fragment,
    )


def test_redact_url_exact_output() -> None:
    assert redact_url("https://h/v1?key=abc123&alt=sse") == "https://h/v1?key=REDACTED&alt=sse"
    assert (
        redact_url("https://h/v1?alt=sse&access_token=t0k&key=")
        == "https://h/v1?alt=sse&access_token=REDACTED&key=REDACTED"
    )


def test_redact_url_repeated_param_all_redacted() -> None:
    out = redact_url("https://h/?key=a&key=b&x=1")
    assert _query(out) == [("key", REDACTED), ("key", REDACTED), ("x", "1")]


@pytest.mark.parametrize(
    "url",
    [
        "https://api.openai.com/v1/chat/completions",
        "https://h/v1?alt=sse&model=gpt",
        "https://h/v1?keyword=abc&monkey=x&tokens=5&api_keys=1",
        "https://h/v1?a=%20b&c=d%2Fe",
        "https://h/v1?",
    ],
)
def test_redact_url_without_secret_params_is_unchanged(url: str) -> None:
    assert redact_url(url) == url


def test_query_params_pattern_is_anchored() -> None:
    assert QUERY_PARAMS.match("api_key") and QUERY_PARAMS.match("ACCESS_TOKEN")
    assert not QUERY_PARAMS.match("api_key_hint") and not QUERY_PARAMS.match("mykey")


# -- redact_request / redact_response ---------------------------------------------------------


DEFAULT_HEADERS = [
    "authorization",
    "x-api-key",
    "api-key",
    "cookie",
    "proxy-authorization",
    "x-goog-api-key",
    "openai-organization",
    "openai-project",
]


def test_default_header_names() -> None:
    assert set(DEFAULT_HEADERS) <= set(REQUEST_HEADERS)


@pytest.mark.parametrize("name", sorted({*DEFAULT_HEADERS, *REQUEST_HEADERS}))
def test_redact_request_replaces_each_default_header(name: str) -> None:
    c = Cassette()
    x = c.add(
        "POST",
        "https://h/v1?key=k123",
        [b"data: x\n\n"],
        request_headers=[
            ("Content-Type", "application/json"),
            (name, "Bearer s3cr3t-value"),
            ("User-Agent", "sdk/1.0"),
        ],
        request_json={"model": "m"},
    )
    original = x.request
    red = redact_request(original)
    assert red.headers == [("content-type", "application/json"), (name, REDACTED), ("user-agent", "sdk/1.0")]
    assert red.method == "POST"
    assert red.body == original.body
    assert _query(red.url) == [("key", REDACTED)]
    assert "s3cr3t" not in repr(red)
    # the original is not modified
    assert (name, "Bearer s3cr3t-value") in original.headers
    assert original.url == "https://h/v1?key=k123"


def test_redact_request_keeps_a_clean_request() -> None:
    req = Request("GET", "https://h/v1/models", [("accept", "application/json")], None)
    assert redact_request(req) == req


def test_redact_response_replaces_set_cookie() -> None:
    x = Cassette().add(
        "GET",
        "https://h/",
        [b"data: x\n\n"],
        headers=[("Set-Cookie", "session=abc"), ("Set-Cookie", "b=2"), ("X-Id", "1")],
    )
    resp = redact_response(x.response)
    assert [v for k, v in resp.headers if k == "set-cookie"] == [REDACTED, REDACTED]
    assert ("x-id", "1") in resp.headers
    assert resp.body == b"data: x\n\n"


# -- find_secrets -----------------------------------------------------------------------------


def _clean() -> Cassette:
    c = Cassette()
    c.add(
        "POST",
        "https://api.openai.com/v1/chat/completions",
        [b'data: {"choices": []}\n\n', b"data: [DONE]\n\n"],
        request_headers={
            "authorization": "Bearer REDACTED",
            "x-api-key": REDACTED,
            "content-type": "application/json",
        },
        request_json={"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Ask me a task"}]},
        headers={"set-cookie": REDACTED, "x-request-id": "req_123"},
    )
    c.add("GET", "https://h/v1?key=REDACTED&alt=sse", ["data: こんにちは\n\n".encode()])
    return c


def test_clean_cassette_has_no_secrets() -> None:
    assert find_secrets(_clean()) == []
    assert find_secrets(Cassette()) == []


@pytest.mark.parametrize("header", ["Bearer REDACTED", "Bearer  REDACTED", "REDACTED"])
def test_redacted_bearer_is_not_a_secret(header: str) -> None:
    c = Cassette()
    c.add("GET", "https://h/", [b"x"], request_headers={"authorization": header})
    assert find_secrets(c) == []


@pytest.mark.parametrize("header", ["Bearer short", "Basic dXNlcjpwYXNz", "token abc"])
def test_any_bearer_or_basic_header_value_is_a_secret(header: str) -> None:
    c = Cassette()
    c.add("GET", "https://h/", [b"x"], request_headers={"x-forwarded-for-upstream": header})
    (found,) = find_secrets(c)
    assert "request.headers['x-forwarded-for-upstream']" in found and header.split()[1] not in found


def test_words_ending_in_sk_are_not_keys() -> None:
    c = Cassette()
    c.add("GET", "https://h/", [b'data: {"text": "a risk-assessment of the disk-usage-monitor"}\n\n'])
    assert find_secrets(c) == []


@pytest.mark.parametrize(
    "where,build,what",
    [
        (
            "request.headers['authorization']",
            lambda c: c.add(
                "GET", "https://h/", [b"x"], request_headers={"Authorization": f"Bearer {BEARER}"}
            ),
            "Bearer",
        ),
        (
            "request.headers['x-api-key']",
            lambda c: c.add("GET", "https://h/", [b"x"], request_headers={"x-api-key": ANTHROPIC_KEY}),
            "Anthropic",
        ),
        ("request.url", lambda c: c.add("GET", f"https://h/v1?key={GOOGLE_KEY}", [b"x"]), "Google"),
        (
            "request.body",
            lambda c: c.add("POST", "https://h/", [b"x"], request_json={"api_key": OPENAI_KEY}),
            "OpenAI",
        ),
        (
            "response.body",
            lambda c: c.add("GET", "https://h/", [b"data: ", f'{{"echo": "{ANTHROPIC_KEY}"}}\n\n'.encode()]),
            "Anthropic",
        ),
        (
            "response.headers['x-debug']",
            lambda c: c.add("GET", "https://h/", [b"x"], headers={"x-debug": f"key={GOOGLE_KEY}"}),
            "Google",
        ),
        (
            "response.error",
            lambda c: c.add(
                "GET",
                "https://h/",
                [b"x"],
                complete=False,
                error={"type": "HTTPError", "message": f"bad key {OPENAI_KEY}"},
            ),
            "OpenAI",
        ),
    ],
)
def test_find_secrets_names_interaction_and_field(where: str, build, what: str) -> None:  # type: ignore[no-untyped-def]
    c = _clean()
    build(c)
    found = find_secrets(c)
    assert found, "secret not found"
    assert all(f.startswith("interaction 2 ") for f in found), found
    assert any(where in f and what in f for f in found), found
    for secret in (OPENAI_KEY, ANTHROPIC_KEY, GOOGLE_KEY, BEARER):
        assert all(secret not in f for f in found)  # the report does not leak the secret


def test_find_secrets_kinds_are_told_apart() -> None:
    c = Cassette()
    c.add("POST", "https://h/", [b"x"], request_body=f"a={ANTHROPIC_KEY}".encode())
    c.add("POST", "https://h/", [b"x"], request_body=f"o={OPENAI_KEY}".encode())
    found = find_secrets(c)
    assert len(found) == 2
    assert (
        found[0].startswith("interaction 0 request.body")
        and "Anthropic" in found[0]
        and "OpenAI" not in found[0]
    )
    assert found[1].startswith("interaction 1 request.body") and "OpenAI" in found[1]


def test_find_secrets_after_redact_request_is_clean() -> None:
    c = Cassette()
    x = c.add(
        "GET",
        f"https://h/v1?key={GOOGLE_KEY}",
        [b"x"],
        request_headers={"authorization": f"Bearer {OPENAI_KEY}", "x-goog-api-key": GOOGLE_KEY},
    )
    assert len(find_secrets(c)) >= 3
    x.request = redact_request(x.request)
    assert find_secrets(c) == []


def test_find_secrets_in_non_utf8_body() -> None:
    c = Cassette()
    c.add("GET", "https://h/", [b"\xff\xfe" + OPENAI_KEY.encode() + b"\x80"])
    found = find_secrets(c)
    assert len(found) == 1 and "response.body" in found[0]


def test_redact_module_is_importable_from_the_package() -> None:
    import ssemock.redaction.rules

    assert ssemock.redaction.rules.REDACTED == "REDACTED"


def test_redact_response_redacts_the_session_id_an_endpoint_event_hands_the_client() -> None:
    """The legacy MCP transport's GET stream names the POST URL, session id included: it is redacted
    as the requests' URLs are (so the client's POSTs still match), the chunk ends moved with it."""
    endpoint = b"event: endpoint\r\ndata: /messages/?session_id=0123456789abcdef0123456789abcdef\r\n\r\n"
    message = b'event: message\r\ndata: {"url": "/x?session_id=keep-in-json"}\r\n\r\n'
    body = endpoint + message
    response = Response(
        200, [("content-type", "text/event-stream")], body, [10, len(endpoint), len(body)], [0, 0, 0]
    )
    redacted = redact_response(response)
    assert redacted.body == endpoint.replace(b"0123456789abcdef0123456789abcdef", b"REDACTED") + message
    assert redacted.ends == [10, len(redacted.body) - len(message), len(redacted.body)]
    assert redact_url("http://h/messages/?session_id=0123456789abcdef0123456789abcdef") == (
        "http://h/messages/?session_id=REDACTED"
    )
