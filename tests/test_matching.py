"""Request matching with vcrpy's matcher names, and what differs when nothing matches."""

from __future__ import annotations

import httpx
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ssemock
from ssemock import Request, matching

ALL = list(matching.MATCHERS)
URL = "https://api.openai.com/v1/chat/completions?stream=true&x=1"
BODY = {
    "model": "gpt-4o-mini",
    "stream": True,
    "temperature": 0.5,
    "messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "héllo"}],
}


def req(
    method: str = "POST",
    url: str = URL,
    body: bytes | None = None,
    headers: list[tuple[str, str]] | None = None,
) -> Request:
    return Request(method, url, headers or [], body)


def jreq(obj: object, **kw: object) -> Request:
    return req(body=orjson.dumps(obj), **kw)  # type: ignore[arg-type]


def test_matcher_names_and_default() -> None:
    assert set(matching.MATCHERS) == {
        "method",
        "scheme",
        "host",
        "port",
        "path",
        "query",
        "url",
        "uri",
        "body",
        "raw_body",
        "headers",
    }
    assert matching.DEFAULT == ("method", "scheme", "host", "port", "path", "query", "body")
    assert matching.resolve(None) == matching.DEFAULT
    assert matching.resolve(["method", "url"]) == ("method", "url")
    assert matching.resolve([]) == ()
    assert ssemock.matching is matching


@pytest.mark.parametrize("names", [["nope"], ["method", "bdy"], ["URL"]])
def test_unknown_matcher_raises_value_error(names: list[str]) -> None:
    with pytest.raises(ValueError) as info:
        matching.resolve(names)
    msg = str(info.value)
    assert repr(names[-1]) in msg
    for known in matching.MATCHERS:
        assert known in msg


def test_identical_requests_match_on_everything() -> None:
    r = jreq(BODY, headers=[("content-type", "application/json"), ("authorization", "REDACTED")])
    assert matching.differences(r, r, ALL) == []
    assert matching.differences(r, r, matching.DEFAULT) == []


# -- each matcher: one that matches, one that differs, and what the message says ---------------

CASES = [
    # name, sent, recorded, must match?, words in the message
    ("method", req("POST"), req("post".upper()), True, None),
    ("method", req("GET"), req("POST"), False, "POST recorded, GET sent"),
    ("scheme", req(url="https://h/a"), req(url="https://other/b"), True, None),
    ("scheme", req(url="http://h/a"), req(url="https://h/a"), False, "'https' recorded, 'http' sent"),
    ("host", req(url="https://API.example.com/a"), req(url="https://api.example.com/b"), True, None),
    ("host", req(url="https://a.example.com/"), req(url="https://b.example.com/"), False, "b.example.com"),
    ("port", req(url="https://h/"), req(url="https://h:443/"), True, None),
    ("port", req(url="http://h/"), req(url="http://h:80/"), True, None),
    ("port", req(url="http://h:8080/"), req(url="http://h:8081/"), False, "8081 recorded, 8080 sent"),
    ("path", req(url="https://h"), req(url="https://h/"), True, None),
    ("path", req(url="https://h/v1/a?x=1"), req(url="https://other/v1/a?y=2"), True, None),
    ("path", req(url="https://h/v1/chat"), req(url="https://h/v1/responses"), False, "/v1/responses"),
    ("query", req(url="https://h/?a=1&b=2"), req(url="https://h/?b=2&a=1"), True, None),
    ("query", req(url="https://h/?a=1"), req(url="https://h/?a=2"), False, "('a', '2')"),
    ("url", req(url="https://h/?a=1"), req(url="https://h/?a=1"), True, None),
    ("url", req(url="https://h/?a=1&b=2"), req(url="https://h/?b=2&a=1"), False, "recorded"),
    ("body", req(body=b"raw"), req(body=b"raw"), True, None),
    ("body", req(body=b"raw"), req(body=b"other!"), False, "6 bytes recorded, 3 sent"),
    ("body", req(body=None), req(body=b""), True, None),
    ("body", req(body=None), req(body=b"x"), False, "1 bytes recorded, 0 sent"),
    ("headers", req(headers=[("a", "1"), ("b", "2")]), req(headers=[("a", "1")]), True, None),
    ("headers", req(headers=[("a", "1")]), req(headers=[("a", "2")]), False, "a: '2' recorded, '1' sent"),
    ("headers", req(headers=[]), req(headers=[("x-stainless-lang", "python")]), False, "x-stainless-lang"),
]


@pytest.mark.parametrize(
    "name,sent,recorded,ok,words",
    CASES,
    ids=[f"{c[0]}-{'match' if c[3] else 'differ'}-{i}" for i, c in enumerate(CASES)],
)
def test_each_matcher(name: str, sent: Request, recorded: Request, ok: bool, words: str | None) -> None:
    diffs = matching.differences(sent, recorded, [name])
    if ok:
        assert diffs == []
    else:
        assert len(diffs) == 1
        assert diffs[0].startswith(f"{name}: ")
        assert words in diffs[0]


def test_only_the_chosen_matchers_are_used() -> None:
    sent, rec = req("GET", "http://a/x?q=1"), req("POST", "https://b/y?q=2", body=b"zz")
    assert matching.differences(sent, rec, []) == []
    diffs = matching.differences(sent, rec, ["query", "method", "host"])
    assert [d.split(":")[0] for d in diffs] == ["query", "method", "host"]  # one line each, in order
    names = [d.split(":")[0] for d in matching.differences(sent, rec, ALL)]
    assert names == [n for n in ALL if n != "headers"]  # port differs too (80 vs 443); headers agree


# -- JSON bodies -------------------------------------------------------------------------------


def test_json_bodies_compare_semantically() -> None:
    a = b'{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"h\\u00e9llo"}]}'
    b = '{\n  "messages": [ {"content": "héllo",  "role": "user"} ],\n  "stream": true, "model": "gpt-4o-mini"\n}'.encode()
    assert matching.differences(req(body=a), req(body=b), ["body"]) == []
    assert matching.differences(req(body=b), req(body=a), ["body"]) == []


@settings(max_examples=100, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=5),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
        max_leaves=10,
    ),
    st.randoms(use_true_random=False),
)
def test_json_key_order_and_whitespace_do_not_matter(obj: object, rnd: object) -> None:
    def shuffled(o: object) -> object:
        if isinstance(o, dict):
            items = list(o.items())
            rnd.shuffle(items)  # type: ignore[attr-defined]
            return {k: shuffled(v) for k, v in items}
        if isinstance(o, list):
            return [shuffled(v) for v in o]
        return o

    pretty = orjson.dumps(shuffled(obj), option=orjson.OPT_INDENT_2)
    assert matching.differences(req(body=orjson.dumps(obj)), req(body=pretty), ["body"]) == []


@pytest.mark.parametrize(
    "sent,words",
    [
        ({**BODY, "model": "gpt-4o"}, "$.model: 'gpt-4o-mini' recorded, 'gpt-4o' sent"),
        ({**BODY, "stream": False}, "$.stream: True recorded, False sent"),
        (
            {**BODY, "messages": [BODY["messages"][0], {"role": "user", "content": "bye"}]},
            "$.messages[1].content: 'héllo' recorded, 'bye' sent",
        ),
        ({**BODY, "messages": BODY["messages"][:1]}, "$.messages: 2 items recorded, 1 sent"),
        ({**BODY, "tools": []}, "$.tools: only sent"),
        ({k: v for k, v in BODY.items() if k != "temperature"}, "$.temperature: only recorded"),
        ({**BODY, "temperature": "0.5"}, "$.temperature"),
        ([BODY], "$"),
    ],
)
def test_body_differences_name_the_json_path(sent: object, words: str) -> None:
    diffs = matching.differences(jreq(sent), jreq(BODY), ["method", "body"])
    assert len(diffs) == 1
    assert diffs[0].startswith("body: ")
    assert words in diffs[0]


def test_long_values_are_shortened_in_messages() -> None:
    diffs = matching.differences(jreq({"p": "x" * 500}), jreq({"p": "y" * 500}), ["body"])
    assert len(diffs) == 1 and "..." in diffs[0] and len(diffs[0]) < 200


def test_long_texts_differ_at_their_first_differing_character_with_context() -> None:
    """Two long prompts that look alike at their start (issue 43 item 4): where they part."""
    recorded = "Summarize: " + "a" * 300 + "b" * 100
    sent = "Summarize: " + "a" * 300 + "c" * 100
    (diff,) = matching.differences(jreq({"p": sent}), jreq({"p": recorded}), ["body"])
    assert diff == (
        f"body: $.p: character 311 differs (411 recorded, 411 sent): "
        f"recorded '...{'a' * 20}{'b' * 20}...', sent '...{'a' * 20}{'c' * 20}...'"
    )


def test_json_against_non_json_body() -> None:
    diffs = matching.differences(req(body=b"not json"), jreq({"a": 1}), ["body"])
    assert diffs and diffs[0].startswith("body: ")


@pytest.mark.parametrize("sent", [None, b"", b"anything", orjson.dumps(BODY), b"\xff\xfe"])
def test_recorded_without_body_matches_any_body(sent: bytes | None) -> None:
    assert matching.differences(req(body=sent), req(body=None), ALL) == []


def test_cassette_interaction_without_request_body_matches_any_body() -> None:
    c = ssemock.Cassette()
    x = c.add("POST", URL, [b"data: x\n\n"])
    assert matching.differences(jreq(BODY), x.request, matching.DEFAULT) == []
    y = c.add("POST", URL, [b"data: x\n\n"], request_json=BODY)
    assert matching.differences(jreq(BODY), y.request, matching.DEFAULT) == []
    assert matching.differences(jreq({**BODY, "n": 2}), y.request, matching.DEFAULT) == [
        "body: $.n: only sent"
    ]
    loaded = ssemock.Cassette.loads(c.dumps())
    assert matching.differences(jreq(BODY), loaded.interactions[0].request, matching.DEFAULT) == []
    assert matching.differences(jreq(BODY), loaded.interactions[1].request, matching.DEFAULT) == []


def test_json_numbers_compare_by_value() -> None:
    assert matching.differences(jreq({"t": 1}), jreq({"t": 1.0}), ["body"]) == []


def test_repeated_headers_match_themselves() -> None:
    r = req(headers=[("accept", "a"), ("accept", "b")])
    assert matching.differences(r, r, ["headers"]) == []


_hname = st.text(alphabet="abcdefghijklmnopqrstuvwxyz-", min_size=1, max_size=8)


@settings(max_examples=100, deadline=None)
@given(
    st.sampled_from(["GET", "POST", "PUT"]),
    st.sampled_from(["http", "https"]),
    st.sampled_from(["h", "api.example.com", "localhost:8080"]),
    st.text(alphabet="abc/", max_size=8),
    st.lists(
        st.tuples(st.text(alphabet="abc", min_size=1, max_size=3), st.text(alphabet="xyz", max_size=3)),
        max_size=3,
    ),
    st.one_of(
        st.none(),
        st.binary(max_size=10),
        st.dictionaries(st.text(max_size=3), st.integers(-(2**63), 2**63 - 1)).map(orjson.dumps),
    ),
    st.dictionaries(_hname, st.text(max_size=5), max_size=3),
)
def test_a_request_matches_itself(
    method: str,
    scheme: str,
    host: str,
    path: str,
    query: list[tuple[str, str]],
    body: bytes | None,
    headers: dict[str, str],
) -> None:
    qs = "&".join(f"{k}={v}" for k, v in query)
    r = Request(method, f"{scheme}://{host}/{path}" + (f"?{qs}" if qs else ""), list(headers.items()), body)
    assert matching.differences(r, r, ALL) == []


def test_vcrpy_uri_raw_body_and_callables() -> None:
    recorded = Request("POST", "https://api.x.test/v1?a=1", [("x-tenant", "t1")], b'{"a": 1, "b": 2}')
    same_json = Request("POST", "https://api.x.test/v1?a=1", [("x-tenant", "t2")], b'{"b": 2, "a": 1}')
    assert matching.differences(same_json, recorded, matching.resolve(["uri", "body"])) == []
    assert matching.differences(same_json, recorded, matching.resolve(["raw_body"])) == [
        "raw_body: 16 bytes recorded, 16 sent, not the same bytes"
    ]
    other = Request("POST", "https://api.x.test/v1?a=2", [], b"")
    assert matching.differences(other, recorded, ["uri"])[0].startswith(
        "uri: 'https://api.x.test/v1?a=1' recorded"
    )

    def same_tenant(sent: Request, rec: Request) -> None:
        assert dict(sent.headers).get("x-tenant") == dict(rec.headers).get("x-tenant"), "another tenant"

    def never(sent: Request, rec: Request) -> bool:
        return False

    assert matching.differences(same_json, recorded, matching.resolve([same_tenant])) == [
        "same_tenant: another tenant"
    ]
    assert matching.differences(recorded, recorded, matching.resolve([same_tenant, "uri"])) == []
    assert matching.differences(recorded, recorded, [never]) == ["never: does not match"]
    with pytest.raises(ValueError, match=r"\['uri'\]"):
        matching.resolve("uri")  # type: ignore[arg-type]


def test_a_callable_matcher_through_replay() -> None:
    import httpx

    cassette = ssemock.Cassette()
    cassette.add("GET", "https://api.x.test/a", [b"data: a\n\n"])
    cassette.add("GET", "https://api.x.test/b", [b"data: b\n\n"])

    def last_letter(sent: Request, rec: Request) -> bool:
        return sent.url[-1] == rec.url[-1]

    with ssemock.replay(cassette, match_on=["method", last_letter]):
        assert httpx.get("https://other.x.test/b").text == "data: b\n\n"


def test_the_unmatched_request_shows_every_body_difference() -> None:
    """Model AND prompt changed: both are in the diff, not only the first found."""
    cassette = ssemock.Cassette()
    url = "https://api.example.test/v1/chat/completions"
    cassette.add("POST", url, [b"data: x\n\n"], request_json={"model": "big", "messages": ["Hi"], "n": 1})
    with ssemock.replay(cassette), pytest.raises(ssemock.UnmatchedRequestError) as raised:
        httpx.post(url, json={"model": "small", "messages": ["Bye"], "n": 1})
    message = str(raised.value)
    assert "- body $.model: 'big'  (recorded)" in message and "+ body $.model: 'small'  (sent)" in message
    assert "- body $.messages[0]: 'Hi'  (recorded)" in message
    assert "+ body $.messages[0]: 'Bye'  (sent)" in message
    assert "$.n" not in message


def test_many_body_differences_are_counted_past_a_dozen() -> None:
    cassette = ssemock.Cassette()
    url = "https://api.example.test/v1/x"
    cassette.add("POST", url, [b"data: x\n\n"], request_json={f"k{i:02}": i for i in range(20)})
    with ssemock.replay(cassette), pytest.raises(ssemock.UnmatchedRequestError) as raised:
        httpx.post(url, json={f"k{i:02}": -i for i in range(20)})
    message = str(raised.value)
    assert "$.k12: 12" in message and "$.k13" not in message  # k00 is equal (0 == -0): k01..k12 shown
    assert "and 7 more differences" in message
