"""ssemock import-vcr on cassettes written in every format it meets in the wild.

Each cassette is written by the test in its format -- by the real vcrpy (its YAML and JSON
serializers, and a custom serializer that keeps JSON bodies parsed), by pytest-recording, or by
hand for the layouts of old vcrpy versions -- then imported and compared, byte for byte, with
what the source holds (request and response bodies, headers, status) and with what a client got.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import textwrap
import zlib
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import brotli
import httpx
import orjson
import pytest
import vcr  # vcrpy: a dev dependency (the importer is tested against what it really writes)
import yaml
import zstandard
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

import ssemock
from ssemock import Cassette, CassetteError, framing
from ssemock.commands.cli import main
from ssemock.commands.import_vcr import ImportSummary, import_paths, import_vcr
from ssemock.commands.loopback import running

SSE = b'data: {"a": 1}\n\nevent: x\ndata: \xe4\xb8\x96\n\ndata: [DONE]\n\n'
NDJSON = b'{"message": {"content": "Hel"}}\n{"message": {"content": "lo"}, "done": true}\n'
GEMINI_ELEMENTS = [
    {"candidates": [{"content": {"parts": [{"text": "Hel"}], "role": "model"}}]},
    {
        "candidates": [{"content": {"parts": [{"text": "lo 世界"}], "role": "model"}}],
        "usageMetadata": {"totalTokenCount": 7},
    },
]
# as Gemini's streamGenerateContent without alt=sse writes it: pretty-printed elements, ",\r\n" between
GEMINI = (
    "[" + "\n,\r\n".join(json.dumps(e, indent=2, ensure_ascii=False) for e in GEMINI_ELEMENTS) + "\n]"
).encode()
CHAT = b'{"id": "chatcmpl-1", "choices": [{"message": {"content": "hi"}}]}'


def _compress(coding: str, data: bytes) -> bytes:
    if coding == "gzip":
        return gzip.compress(data)
    if coding == "deflate":
        return zlib.compress(data)
    if coding == "br":
        return bytes(brotli.compress(data))
    assert coding == "zstd"
    return bytes(zstandard.ZstdCompressor().compress(data))


def _decompress(coding: str, data: bytes) -> bytes:
    """The test's own decoding of a content coding (the reference the import is compared with)."""
    if coding == "gzip":
        return gzip.decompress(data)
    if coding == "deflate":
        return zlib.decompress(data)
    if coding == "br":
        return bytes(brotli.decompress(data))
    assert coding == "zstd"
    return bytes(zstandard.ZstdDecompressor().decompressobj().decompress(data))


CODINGS = ["gzip", "deflate", "br", "zstd", "gzip, gzip", "deflate, br"]


def _encoded(codings: str, data: bytes) -> bytes:
    for coding in codings.split(", "):  # applied in the order listed, as a server does
        data = _compress(coding, data)
    return data


# path -> (status, headers, body as sent)
ROUTES: dict[str, tuple[int, dict[str, str], bytes]] = {
    "/sse": (200, {"content-type": "text/event-stream", "x-request-id": "req_123"}, SSE),
    "/ndjson": (200, {"content-type": "application/x-ndjson"}, NDJSON),
    "/v1beta/models/gemini-test:streamGenerateContent": (
        200,
        {"content-type": "application/json; charset=UTF-8"},
        GEMINI,
    ),
    "/chat": (200, {"content-type": "application/json"}, CHAT),
    "/teapot": (418, {"content-type": "text/plain"}, b"short and stout"),
    "/empty": (204, {}, b""),
    **{
        f"/enc/{c.replace(', ', '-')}": (
            200,
            {"content-type": "text/event-stream", "content-encoding": c},
            _encoded(c, SSE),
        )
        for c in CODINGS
    },
}


async def _serve(request: Request) -> Response:
    await request.body()
    request.app.state.hits = getattr(request.app.state, "hits", 0) + 1
    if request.url.path == "/count":  # a different answer each time: one request, many interactions
        counter = request.app.state.count = getattr(request.app.state, "count", 0) + 1
        return Response(b"data: %d\n\n" % counter, headers={"content-type": "text/event-stream"})
    status, headers, body = ROUTES[request.url.path]
    return Response(body, status_code=status, headers=headers)


APP = Starlette(routes=[Route(p, _serve, methods=["GET", "POST"]) for p in [*ROUTES, "/count"]])


@pytest.fixture(scope="module")
def base() -> Iterator[str]:
    with running(APP) as url:
        yield url


# (method, path, JSON request body) -- every route, and /count twice
CALLS: list[tuple[str, str, Any]] = [
    ("GET", "/sse", None),
    ("GET", "/ndjson", None),
    ("POST", "/v1beta/models/gemini-test:streamGenerateContent", {"contents": [{"parts": [{"text": "hi"}]}]}),
    ("POST", "/chat", {"model": "m", "messages": [{"role": "user", "content": "é"}]}),
    ("GET", "/teapot", None),
    ("GET", "/empty", None),
    *[("GET", f"/enc/{c.replace(', ', '-')}", None) for c in CODINGS],
    ("GET", "/count", None),
    ("GET", "/count", None),
]
PLAIN_CALLS = [c for c in CALLS if not c[1].startswith("/enc/")]  # vcrpy's JSON serializer stores no bytes


def _call(client: httpx.Client, base: str, method: str, path: str, body: Any) -> tuple[int, bytes]:
    kw: dict[str, Any] = {} if body is None else {"content": json.dumps(body).encode()}
    with client.stream(method, base + path, **kw) as r:
        return r.status_code, b"".join(r.iter_bytes())


def _run(calls: list[tuple[str, str, Any]], base: str) -> list[tuple[int, bytes]]:
    with httpx.Client() as client:
        return [_call(client, base, *c) for c in calls]


def _record(
    path: Path, base: str, calls: list[tuple[str, str, Any]], **options: Any
) -> list[tuple[int, bytes]]:
    with vcr.VCR(**options).use_cassette(str(path)):
        got = _run(calls, base)
    assert path.is_file()
    return got


# -- the reference: what the source cassette holds, read by the test itself ----------------------


def _source_bytes(value: Any) -> bytes | None:
    if isinstance(value, dict):
        value = value.get("string")
    if value is None:
        return None
    return value if isinstance(value, bytes) else value.encode("utf-8")


def _expected(item: dict[str, Any]) -> dict[str, Any]:
    """An interaction of a vcrpy cassette as ssemock must carry it: bodies exact (the response's
    decoded from its Content-Encoding), header names lower case, hop-by-hop headers dropped."""
    req, resp = item["request"], item["response"]
    req_body = (
        _source_bytes(req["body"]) if "parsed_body" not in req else json.dumps(req["parsed_body"]).encode()
    )
    body = (
        _source_bytes(resp.get("body"))
        if "parsed_body" not in resp
        else json.dumps(resp["parsed_body"]).encode()
    ) or b""
    headers = [(k.lower(), v) for k, vs in resp["headers"].items() for v in vs]
    codings = [c.strip() for k, v in headers if k == "content-encoding" for c in v.split(",")]
    for coding in reversed(codings):
        body = _decompress(coding, body)
    hop = {"content-encoding", "content-length", "transfer-encoding", "connection", "keep-alive"}
    return {
        "method": req["method"],
        "url": req["uri"],
        "request_body": req_body or None,
        "request_headers": [(k.lower(), v) for k, vs in req["headers"].items() for v in vs],
        "status": resp["status"]["code"],
        "headers": [(k, v) for k, v in headers if k not in hop],
        "body": body,
    }


def _actual(x: ssemock.store.cassette.Interaction) -> dict[str, Any]:
    return {
        "method": x.request.method,
        "url": x.request.url,
        "request_body": x.request.body,
        "request_headers": x.request.headers,
        "status": x.response.status,
        "headers": x.response.headers,
        "body": x.response.body,
    }


def _json_or_bytes(body: bytes | None) -> Any:
    try:
        return ("json", json.loads(body)) if body else body
    except ValueError:
        return body


def _assert_same(source_items: list[dict[str, Any]], cassette: Cassette, *, saved: bool = True) -> None:
    """``saved``: the cassette was loaded from its file, where ssemock keeps a JSON request body
    as JSON (readable; matched semantically): that body compares as JSON, all else as bytes."""
    assert len(cassette.interactions) == len(source_items)
    for i, (item, x) in enumerate(zip(source_items, cassette.interactions)):
        got, expected = _actual(x), _expected(item)
        for side in (
            got,
            expected,
        ):  # names sorted (a cassette file keeps them so); one name's values in order
            side["headers"] = sorted(side["headers"], key=lambda h: h[0])
            side["request_headers"] = sorted(side["request_headers"], key=lambda h: h[0])
        if saved:
            got["request_body"] = _json_or_bytes(got["request_body"])
            expected["request_body"] = _json_or_bytes(expected["request_body"])
        assert got == expected, f"interaction {i}"


def _assert_cut_at_events(cassette: Cassette) -> None:
    """Each response is one chunk per event of its framing, all at t=0: SSE events, JSON lines,
    a JSON array's elements (whatever the lines inside an element)."""
    for x in cassette.interactions:
        resp = x.response
        content_type = resp.header("content-type")
        assert resp.times == [0.0] * len(resp.ends)
        found = framing.detect(content_type, resp.body)
        ends = found.event_ends(resp.body)
        assert resp.ends == ends + ([len(resp.body)] if (ends[-1] if ends else 0) < len(resp.body) else [])
        if resp.body == GEMINI:
            assert found.name == "json_array"
            assert [orjson.loads(c.lstrip(b"[,\r\n")) for c in resp.chunks[:2]] == GEMINI_ELEMENTS
            assert resp.chunks[2] == b"\n]"
        if resp.body == NDJSON:
            assert resp.chunks == NDJSON.splitlines(keepends=True)
        if resp.body == SSE:
            assert [e.data for e in ssemock.sse.decode(resp.chunks[:1])] == ['{"a": 1}']
            assert len(resp.chunks) == 3


def _replayed(path: Path, base: str, calls: list[tuple[str, str, Any]]) -> list[tuple[int, bytes]]:
    with ssemock.use_cassette(path):
        return _run(calls, base)


# -- vcrpy's own serializers ---------------------------------------------------------------------


def test_a_yaml_cassette_recorded_by_vcrpy_every_body_and_encoding(base: str, tmp_path: Path) -> None:
    source = tmp_path / "all.yaml"
    live = _record(source, base, CALLS)
    text = source.read_text()
    assert "!!binary" in text and "gzip, gzip" in text  # vcrpy kept the compressed bytes as they came

    summary = import_paths([source])
    assert [c.target for c in summary.converted] == summary.written == [tmp_path / "all.json"]
    items = yaml.safe_load(text)["interactions"]
    _assert_same(items, import_vcr(source), saved=False)  # every byte, the request bodies' too
    cassette = Cassette.load(tmp_path / "all.json")
    _assert_same(items, cassette)
    _assert_cut_at_events(cassette)
    assert [x.response.body for x in cassette.interactions] == [body for _, body in live]
    assert _replayed(tmp_path / "all.json", base, CALLS) == live  # /count: 1 then 2, as recorded


def test_a_json_cassette_recorded_by_vcrpy(base: str, tmp_path: Path) -> None:
    source = tmp_path / "plain.json"
    live = _record(source, base, PLAIN_CALLS, serializer="json")
    summary = import_paths([source])
    target = tmp_path / "plain.ssemock.json"  # vcrpy's file keeps its name ...
    assert (
        summary.written == [target]
        and summary.converted[0].note
        and "--replace-json" in summary.converted[0].note
    )
    _assert_same(json.loads(source.read_text())["interactions"], Cassette.load(target))
    _assert_cut_at_events(Cassette.load(target))
    assert _replayed(target, base, PLAIN_CALLS) == live

    summary = import_paths([source], replace_json=True)  # ... unless it is replaced
    assert summary.written == [source] and Cassette.load(source).interactions[0].response.body == SSE
    again = import_paths([tmp_path])  # plain.json is an ssemock cassette now; plain.ssemock.json is its
    assert [(s.source, s.reason) for s in again.skipped] == [
        (source, "already an ssemock cassette")
    ]  # target
    assert again.ok and not again.converted


# -- a custom serializer that keeps JSON bodies parsed ------------------------------------------


def _parsed_serializer(unknown_key: str | None = None) -> ModuleType:
    """A vcrpy serializer as agent frameworks write them: a JSON body is stored parsed, under
    ``parsed_body`` (or ``unknown_key``), and handed back to vcrpy as ``json.dumps`` of it."""
    key = unknown_key or "parsed_body"
    module = ModuleType("parsed_serializer")

    def serialize(cassette: dict[str, Any]) -> str:
        for item in cassette["interactions"]:
            for side in ("request", "response"):
                data = item[side]
                body = data.get("body")
                text = body["string"] if isinstance(body, dict) else body
                if text and any(
                    "json" in v
                    for k, vs in data["headers"].items()
                    if k.lower() == "content-type"
                    for v in vs
                ):
                    del data["body"]
                    data[key] = json.loads(text)
        return str(yaml.safe_dump(cassette, allow_unicode=True))

    def deserialize(text: str) -> dict[str, Any]:
        cassette: dict[str, Any] = yaml.safe_load(text)
        for item in cassette["interactions"]:
            for side in ("request", "response"):
                data = item[side]
                if key in data:
                    dumped = json.dumps(data.pop(key))
                    data["body"] = {"string": dumped} if side == "response" else dumped
        return cassette

    module.serialize, module.deserialize = serialize, deserialize  # type: ignore[attr-defined]
    return module


def _with_serializer(name: str, module: ModuleType) -> Any:
    recorder = vcr.VCR(serializer=name)
    recorder.register_serializer(name, module)
    return recorder


CUSTOM_CALLS = [
    c for c in PLAIN_CALLS if c[1] in ("/chat", "/sse", "/v1beta/models/gemini-test:streamGenerateContent")
]
JSON_HEADERS = {"content-type": "application/json"}


def _run_json(calls: list[tuple[str, str, Any]], base: str) -> list[tuple[int, bytes]]:
    with httpx.Client(headers=JSON_HEADERS) as client:
        return [_call(client, base, *c) for c in calls]


def test_parsed_body_from_a_custom_serializer_is_carried_over(base: str, tmp_path: Path) -> None:
    """91 request and 22 response bodies of a real suite were dropped silently: the bytes vcrpy
    served through the serializer are the bytes ssemock serves now."""
    source = tmp_path / "parsed.yaml"
    recorder = _with_serializer("parsed", _parsed_serializer())
    with recorder.use_cassette(str(source)):
        _run_json(CUSTOM_CALLS, base)
    items = yaml.safe_load(source.read_text())["interactions"]
    assert sum("parsed_body" in item[side] for item in items for side in ("request", "response")) >= 4
    with recorder.use_cassette(str(source), record_mode="none"):
        under_vcrpy = _run_json(CUSTOM_CALLS, base)

    assert main(["import-vcr", str(source)]) == 0
    target = tmp_path / "parsed.json"
    cassette = Cassette.load(target)
    _assert_same(items, cassette)
    assert all(x.request.body for x in cassette.interactions if x.request.method == "POST")
    with ssemock.use_cassette(target), httpx.Client(headers=JSON_HEADERS) as client:
        assert [_call(client, base, *c) for c in CUSTOM_CALLS] == under_vcrpy


def test_an_unknown_body_key_is_refused_by_interaction_and_field(
    base: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "odd.yaml"
    with _with_serializer("odd", _parsed_serializer("json_body")).use_cassette(str(source)):
        post = next(c for c in CUSTOM_CALLS if c[1] == "/chat")
        _run_json([("GET", "/sse", None), post], base)
    assert main(["import-vcr", str(source)]) == 1
    out, err = capsys.readouterr()
    assert (
        f"ssemock: error: refused {source}: interaction 1: {post[0]} {base}{post[1]}: request.json_body: "
        "a field vcrpy does not write"
    ) in err
    assert "--force" in err and "import-vcr: 0 converted, 0 skipped, 1 refused" in out
    assert not (tmp_path / "odd.json").exists()

    assert main(["import-vcr", str(source), "--force"]) == 0
    out, _ = capsys.readouterr()
    assert (
        f"  dropped interaction 1 ({post[0]} {base}{post[1]}): request.json_body: a field vcrpy does not write"
        in out
    )
    assert (
        f"  dropped interaction 1 ({post[0]} {base}{post[1]}): response.json_body: a field vcrpy does not write"
        in out
    )
    x = Cassette.load(tmp_path / "odd.json").interactions
    assert (
        x[0].response.body == SSE and x[1].response.body == b""
    )  # what --force dropped is gone, and said so


@pytest.mark.parametrize(
    "change, field",
    [
        (
            lambda d: d["interactions"][0]["response"]["status"].update(message="Fine Thanks"),
            "response.status.message",
        ),
        (lambda d: d["interactions"][0]["response"].update(url="http://other.test/"), "response.url"),
        (lambda d: d["interactions"][0].update(recorded_at="2024-01-01"), "recorded_at"),
        (
            lambda d: d["interactions"][0]["response"]["body"].update(encoding="UTF-8"),
            "response.body.encoding",
        ),
        (lambda d: d.update(metadata={"k": "v"}), "metadata"),
    ],
)
def test_a_field_that_cannot_be_carried_over_is_an_error_force_drops_it(
    tmp_path: Path, change: Any, field: str
) -> None:
    doc: dict[str, Any] = {
        "version": 1,
        "interactions": [
            {
                "request": {"method": "GET", "uri": "http://h.test/s", "body": None, "headers": {}},
                "response": {
                    "status": {"code": 200, "message": "OK"},
                    "headers": {"Content-Type": ["text/event-stream"]},
                    "body": {"string": "data: x\n\n"},
                },
            }
        ],
    }
    change(doc)
    source = tmp_path / "c.yaml"
    source.write_text(yaml.safe_dump(doc))
    with pytest.raises(CassetteError, match=f"{field}: .*--force"):
        import_vcr(source)
    summary = import_paths([source])
    assert not summary.ok and summary.refused[0].reason.count(field) >= 1 and not summary.written
    forced = import_paths([source], force=True)
    assert forced.ok and any(f"{field}: " in d for d in forced.converted[0].dropped)
    assert Cassette.load(forced.written[0]).interactions[0].response.body == b"data: x\n\n"


# -- old layouts, written by hand ----------------------------------------------------------------

OLD_LAYOUTS = {
    # a bare string body, body: null, a !!binary response body, a !!binary request body
    "bare_strings.yaml": """\
        interactions:
        - request:
            body: '{"q": 1}'
            headers: {Content-Type: [application/json]}
            method: POST
            uri: http://h.test/chat
          response:
            body: "data: a\\n\\ndata: b\\n\\n"
            headers: {Content-Type: [text/event-stream]}
            status: {code: 200, message: OK}
        - request: {body: null, headers: {}, method: GET, uri: http://h.test/none}
          response:
            body: null
            headers: {}
            status: {code: 204, message: No Content}
        - request:
            body: !!binary |
              AP9yYXc=
            headers: {}
            method: POST
            uri: http://h.test/bin
          response:
            body: {string: !!binary "ZGF0YTog5LiWCgo="}
            headers: {Content-Type: [text/event-stream]}
            status: {code: 200, message: OK}
        version: 1
        """,
    # vcrpy < 1.0: a bare list, the URL in parts
    "v0.yaml": """\
        - request: {body: null, headers: {}, host: h.test, method: GET, path: /old, port: 8080, protocol: http}
          response:
            body: {string: "data: old\\n\\n"}
            headers: {content-type: [text/event-stream]}
            status: {code: 200, message: OK}
        """,
    # the httpx format of old vcrpy versions
    "old_httpx.yaml": """\
        interactions:
        - request: {body: '', headers: {}, method: GET, uri: 'https://h.test/x'}
          response:
            status_code: 200
            http_version: HTTP/1.1
            headers: {content-type: application/x-ndjson}
            content: "{\\"a\\": 1}\\n{\\"b\\": 2}\\n"
        version: 1
        """,
}


def test_old_layouts_written_by_hand(tmp_path: Path) -> None:
    for name, text in OLD_LAYOUTS.items():
        (tmp_path / name).write_text(textwrap.dedent(text))
    summary = import_paths([tmp_path])
    assert summary.ok and len(summary.converted) == 3, summary.refused

    bare = Cassette.load(tmp_path / "bare_strings.json").interactions
    assert (bare[0].request.json(), bare[0].response.body, bare[0].response.ends) == (
        {"q": 1},
        b"data: a\n\ndata: b\n\n",
        [9, 18],
    )
    assert (bare[1].request.body, bare[1].response.status, bare[1].response.body) == (None, 204, b"")
    assert (bare[2].request.body, bare[2].response.body) == (b"\x00\xffraw", "data: 世\n\n".encode())
    (old,) = Cassette.load(tmp_path / "v0.json").interactions
    assert (old.request.url, old.response.body) == ("http://h.test:8080/old", b"data: old\n\n")
    (httpx_old,) = Cassette.load(tmp_path / "old_httpx.json").interactions
    assert httpx_old.response.chunks == [b'{"a": 1}\n', b'{"b": 2}\n']


AIOHTTP_RECORDED = """\
interactions:
- request:
    body: '{"stream": true}'
    headers:
      ? !!python/object/apply:multidict._multidict.istr
      - Content-Type
      : - application/json
      ? !!python/object/new:multidict._multidict_py.istr
      - X-Stainless-Lang
      : - python
      ? !!python/object/apply:multidict.istr
      - Accept
      : - text/event-stream
    method: POST
    uri: https://api.openai.com/v1/chat/completions
  response:
    body:
      string: "data: {}\\n\\ndata: [DONE]\\n\\n"
    headers:
      ? !!python/object/apply:multidict._multidict.istr
      - Content-Type
      : - text/event-stream
    status:
      code: 200
      message: OK
"""


def test_an_aiohttp_recorded_cassette_reads_its_istr_header_names_as_strings(tmp_path: Path) -> None:
    """aiohttp's header names are multidict ``istr`` (a str subclass): vcrpy wrote their tag
    (dd-trace-py's cassettes), and each reads as the name it wraps (issue 42 item 2)."""
    (tmp_path / "aiohttp.yaml").write_text(AIOHTTP_RECORDED)
    summary = import_paths([tmp_path])
    assert summary.ok and len(summary.converted) == 1, summary.refused
    (x,) = Cassette.load(tmp_path / "aiohttp.json").interactions
    assert sorted((k.lower(), v) for k, v in x.request.headers) == [
        ("accept", "text/event-stream"),
        ("content-type", "application/json"),
        ("x-stainless-lang", "python"),
    ]
    assert (x.response.header("content-type"), x.response.body) == (
        "text/event-stream",
        b"data: {}\n\ndata: [DONE]\n\n",
    )


@pytest.mark.parametrize(
    "tagged",
    [
        "!!python/object/apply:os.system\n      - Accept",
        "!!python/object/apply:multidict._multidict.istr\n      - Accept\n      - Other",
        "!!python/object/apply:multidict._multidict.istr\n      - [Accept]",
        "!!python/object/apply:multidict._multidict.istr []",
        "!!python/object/new:yarl.URL\n      - http://h/",
        "!!python/name:os.system",
        "!!python/object:multidict._multidict.istr {}",
    ],
)
def test_every_other_python_tag_is_still_refused(tmp_path: Path, tagged: str) -> None:
    """Only the tags that wrap one string read as it: a callable applied to anything else, or
    any other Python object, is refused with the tag and its line."""
    text = AIOHTTP_RECORDED.replace(
        "? !!python/object/apply:multidict.istr\n      - Accept", f"? {tagged}", 1
    )
    assert text != AIOHTTP_RECORDED
    (tmp_path / "odd.yaml").write_text(text)
    summary = import_paths([tmp_path / "odd.yaml"])
    (refused,) = summary.refused
    assert "unsupported YAML tag" in refused.reason or "YAML does not parse" in refused.reason
    assert not (tmp_path / "odd.json").exists()


def _leaky_vcr(path: Path, passwords: int) -> None:
    """A vcrpy cassette of ``passwords`` interactions, each sending a password inside a JSON string
    (found at ``$.payload $.password``) and getting an OpenAI key back."""
    item = {
        "request": {
            "method": "POST",
            "uri": "https://auth.example.com/login",
            "body": json.dumps({"payload": json.dumps({"password": "hunter2"})}),
            "headers": {"Content-Type": ["application/json"]},
        },
        "response": {
            "status": {"code": 200, "message": "OK"},
            "headers": {"Content-Type": ["application/json"]},
            "body": {"string": json.dumps({"key": "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0" * 3})},
        },
    }
    path.write_text(json.dumps({"version": 1, "interactions": [item] * passwords}))


def test_a_refusal_lists_every_finding_then_what_to_do(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each finding on its line, whole: the masking of a printed line takes only values, never
    what follows a credential-named path such as ``$.password`` (issue 42 item 3)."""
    source, target = tmp_path / "leak.json", tmp_path / "out.json"
    _leaky_vcr(source, 1)
    assert main(["import-vcr", str(source), "-o", str(target)]) == 1
    assert capsys.readouterr().err.splitlines() == [
        f"ssemock: error: refused {source}: a secret is left after redaction (2 findings): refusing to write {target}:",
        "  interaction 0 request.body: a credential-named field 'password' at $.payload $.password "
        "('***', 7 chars: digits a-z)",
        "  interaction 0 response.body: an OpenAI key (sk-proj-/sk-svcacct-/sk-admin-...) "
        "('sk-***', 68 chars: digits - a-z A-Z, at offset 9)",
        "  what to do: remove the secrets from the vcrpy cassette (or filter them when recording), or "
        "import with --scrub-bodies (each one replaced with REDACTED)",
    ]
    assert not target.exists()


def test_a_long_refusal_shows_a_screenful_and_json_shows_every_finding(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from ssemock.commands.cli.output import SCREENFUL

    source, target = tmp_path / "leak.json", tmp_path / "out.json"
    _leaky_vcr(source, SCREENFUL)  # two findings each
    assert main(["import-vcr", str(source), "-o", str(target)]) == 1
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].endswith(f"({2 * SCREENFUL} findings): refusing to write {target}:")
    assert [line.split(" ", 4)[3] for line in lines[1:SCREENFUL]] == [
        f"{k // 2}" for k in range(SCREENFUL - 1)
    ]
    assert lines[SCREENFUL:] == [
        f"  and {SCREENFUL + 1} more (--json lists them all)",
        lines[-1],
    ] and lines[-1].startswith("  what to do: ")
    assert main(["import-vcr", str(source), "-o", str(target), "--json"]) == 1
    (refused,) = json.loads(capsys.readouterr().out)["refused"]
    assert len(refused["findings"]) == 2 * SCREENFUL
    assert refused["findings"][-1].startswith(f"interaction {SCREENFUL - 1} response.body: an OpenAI key")
    assert "--scrub-bodies" in refused["what_to_do"] and not target.exists()


# -- pytest-recording: its folder naming is where the ssemock plugin looks -----------------------

SUITE = """
import os

import httpx
import pytest

BASE = os.environ["IMPORT_VCR_BASE"]


def get(path):
    with httpx.Client() as client:
        return client.get(BASE + path).content


@pytest.mark.{marker}
def test_stream():
    assert get("/sse").startswith(b"data: ")


@pytest.mark.{marker}
@pytest.mark.parametrize("route", ["ndjson", "v1beta/models/gemini-test:streamGenerateContent"])
def test_param(route):
    assert get("/" + route)


class TestGroup:
    @pytest.mark.{marker}
    def test_in_class(self):
        first, second = get("/count"), get("/count")  # one request, two interactions, in order
        assert int(second[6:-2]) == int(first[6:-2]) + 1
"""


def test_a_pytest_recording_suite_finds_its_imported_cassettes(
    base: str, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Recorded by pytest-recording, imported in one command, replayed by the ssemock plugin at its
    default paths -- a parametrized name with '/' and ':' (which pytest-recording turns into '-')
    and a test in a class included."""
    monkeypatch.setenv("IMPORT_VCR_BASE", base)
    pytester.makepyfile(test_suite=SUITE.replace("{marker}", "vcr"))
    # in-process (pytester restores sys.modules after each run); said for pytest-asyncio, which
    # warns into the outer run otherwise
    loop = ("-o", "asyncio_default_fixture_loop_scope=function")
    result = pytester.runpytest_inprocess("-p", "no:randomly", *loop, "--record-mode=once")
    result.assert_outcomes(passed=4)
    folder = pytester.path / "cassettes" / "test_suite"
    names = sorted(p.name for p in folder.iterdir())
    assert "TestGroup.test_in_class.yaml" in names and "test_stream.yaml" in names

    assert main(["import-vcr", str(pytester.path)]) == 0
    pytester.makepyfile(test_suite=SUITE.replace("{marker}", "ssemock"))
    hits = APP.state.hits
    result = pytester.runpytest_inprocess(
        "-p", "no:recording", "-p", "no:randomly", *loop, "--ssemock-record-mode=none"
    )
    result.assert_outcomes(passed=4)  # replayed from the imported cassettes ...
    assert APP.state.hits == hits  # ... not one request reached the server
    assert sorted(p.name for p in folder.glob("*.json")) == sorted(n[:-5] + ".json" for n in names)


# -- a whole tree in one command -----------------------------------------------------------------


def _vcr_doc(i: int) -> dict[str, Any]:
    return {
        "version": 1,
        "interactions": [
            {
                "request": {
                    "method": "POST",
                    "uri": f"https://api.test/v1/{i}",
                    "body": json.dumps({"n": i}),
                    "headers": {"Content-Type": ["application/json"]},
                },
                "response": {
                    "status": {"code": 200, "message": "OK"},
                    "headers": {"Content-Type": ["text/event-stream"]},
                    "body": {"string": f"data: {i}\n\ndata: [DONE]\n\n"},
                },
            }
        ],
    }


def _tree(root: Path, count: int) -> list[Path]:
    """``count`` vcrpy cassettes in nested folders, in both serializers, as vcrpy writes them."""
    from vcr.serializers import jsonserializer, yamlserializer

    paths = []
    for i in range(count):
        folder = root / f"pkg{i % 4}" / "tests" / "cassettes" / f"test_mod{i % 7}"
        folder.mkdir(parents=True, exist_ok=True)
        serializer, suffix = (jsonserializer, ".json") if i % 5 == 0 else (yamlserializer, ".yaml")
        path = folder / f"test_{i}{suffix}"
        path.write_text(serializer.serialize(_vcr_doc(i)))
        paths.append(path)
    return paths


def test_two_hundred_cassettes_in_nested_folders_in_one_command(tmp_path: Path) -> None:
    root = tmp_path / "suite"
    sources = _tree(root, 200)
    (root / "pkg0" / "tests" / "data.json").write_text('{"not": "a cassette"}')  # found, not a cassette
    ssemock.synth.openai_chat("hi", seed=1).save(root / "pkg1" / "recorded.json")  # already ssemock
    refused = root / "pkg2" / "tests" / "cassettes" / "broken.yaml"
    refused.write_text(
        "interactions:\n- {request: {method: GET, uri: 'http://h/'}, response: {status: 200, "
        "json_body: {a: 1}}}\n"
    )
    proc = subprocess.run(
        [sys.executable, "-m", "ssemock", "import-vcr", str(root)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert proc.returncode == 1, proc.stderr  # one file was refused
    lines = proc.stdout.splitlines()
    assert lines[-1] == "import-vcr: 200 converted, 2 skipped, 1 refused"
    assert sum(line.startswith("converted ") for line in lines) == 200
    assert f"skipped {root / 'pkg1' / 'recorded.json'}: already an ssemock cassette" in lines
    assert f"skipped {root / 'pkg0' / 'tests' / 'data.json'}: not a vcrpy cassette" in lines
    assert (
        f"ssemock: error: refused {refused}: interaction 0: GET http://h/: response.json_body: a field vcrpy "
        "does not write"
    ) in proc.stderr
    for i, source in enumerate(sources):
        target = source.with_name(f"test_{i}{'.ssemock' if source.suffix == '.json' else ''}.json")
        (x,) = Cassette.load(target).interactions
        assert (x.request.json(), x.response.body) == ({"n": i}, f"data: {i}\n\ndata: [DONE]\n\n".encode())

    again = import_paths([root])  # nothing changed since: all up to date, or ssemock cassettes
    assert len(again.converted) == 0 and len(again.refused) == 1
    assert sum(s.reason.startswith("up to date: ") for s in again.skipped) == 200  # the vcrpy cassettes (what
    assert len(again.skipped) == 200 + 2  # they became is not listed again: their source's line says it)


def test_globs_and_an_output_folder_mirroring_the_tree(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "suite"
    sources = _tree(root, 10)
    out = tmp_path / "out"
    assert main(["import-vcr", f"{root}/**/*.yaml", f"{root}/**/test_[05].json", "--out", str(out)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "import-vcr: 10 converted, 0 skipped, 0 refused"
    for source in sources:
        target = out / source.relative_to(root).with_suffix(".json")
        assert (
            Cassette.load(target).interactions[0].request.url
            == _vcr_doc(int(source.stem[5:]))["interactions"][0]["request"]["uri"]
        )
    assert not list(root.rglob("*.ssemock.json"))  # nothing written beside the sources

    assert main(["import-vcr", str(tmp_path / "nowhere"), f"{root}/**/*.nothing"]) == 1
    err = capsys.readouterr().err
    assert f"refused {tmp_path / 'nowhere'}: no such file or folder" in err
    assert "the pattern matches no file" in err


def test_a_target_that_is_not_an_ssemock_cassette_is_never_overwritten(tmp_path: Path) -> None:
    (tmp_path / "x.yaml").write_text(yaml.safe_dump(_vcr_doc(1)))
    (tmp_path / "x.json").write_text(json.dumps(_vcr_doc(2)))  # vcrpy's own JSON cassette of the same name
    summary = import_paths([tmp_path / "x.yaml"])
    assert [r.reason for r in summary.refused] == [
        f"{tmp_path / 'x.json'} exists and is not an ssemock cassette: not overwritten (move it away)"
    ]
    assert json.loads((tmp_path / "x.json").read_text()) == _vcr_doc(2)
    assert isinstance(summary, ImportSummary) and not summary.ok


def test_names_pytest_recording_writes_map_to_the_plugins_names(tmp_path: Path) -> None:
    """pytest-recording keeps a space or '=' in a parametrized name; the plugin makes the name
    safe and adds a digest: the import writes the name the plugin looks for."""
    from ssemock.plugin import cassette_name

    class Node:
        def __init__(self, name: str) -> None:
            self.name = name

    for name in ["test_a", "test_b[gpt-4o-mini]", "test_c[a b]", "test_d[x=1,y=2]"]:
        (tmp_path / f"{name}.yaml").write_text(yaml.safe_dump(_vcr_doc(0)))
        summary = import_paths([tmp_path / f"{name}.yaml"])
        assert summary.written == [tmp_path / cassette_name(Node(name))]


def test_a_content_coding_ssemock_cannot_decode_is_refused_by_interaction(tmp_path: Path) -> None:
    """(A body in such a coding that is text was stored decoded: that one is carried over.)"""
    doc = _vcr_doc(3)
    doc["interactions"][0]["response"]["headers"]["Content-Encoding"] = ["compress"]
    doc["interactions"][0]["response"]["body"]["string"] = b"\x1f\x9d\x90d\xc2\x84"  # LZW: binary
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(doc))
    summary = import_paths([tmp_path / "c.yaml"])
    assert [r.reason for r in summary.refused] == [
        "interaction 0: POST https://api.test/v1/3: response.body is compress-encoded and ssemock decodes gzip, "
        "deflate, br and zstd only"
    ]


def test_two_sources_of_one_target_the_second_is_refused(tmp_path: Path) -> None:
    (tmp_path / "x.yaml").write_text(yaml.safe_dump(_vcr_doc(1)))
    (tmp_path / "x.yml").write_text(yaml.safe_dump(_vcr_doc(2)))
    summary = import_paths([tmp_path])
    assert summary.written == [tmp_path / "x.json"] and Cassette.load(tmp_path / "x.json").interactions[
        0
    ].request.json() == {"n": 1}
    assert [r.reason for r in summary.refused] == [
        f"its target {tmp_path / 'x.json'} is also the target of {tmp_path / 'x.yaml'}: rename one"
    ]


def test_a_cassette_recorded_by_ssemock_is_never_replaced_by_an_import(tmp_path: Path) -> None:
    source = tmp_path / "test_chat.yaml"
    source.write_text(yaml.safe_dump(_vcr_doc(1)))
    recorded = ssemock.synth.openai_chat("hi", seed=1)  # chunk times as a recording has them
    assert any(t > 0 for t in recorded.interactions[0].response.times)
    target = recorded.save(tmp_path / "test_chat.json")
    before = target.read_bytes()
    os.utime(source, (target.stat().st_mtime + 10, target.stat().st_mtime + 10))  # the source looks newer
    summary = import_paths([source])
    assert [s.reason for s in summary.skipped] == [
        f"{target} was recorded by ssemock (it has chunk times): kept"
    ]
    assert target.read_bytes() == before

    imported = import_paths([source], out=tmp_path / "out").written[0]  # an import older than its source ...
    os.utime(source, (imported.stat().st_mtime + 10, imported.stat().st_mtime + 10))
    assert import_paths([source], out=tmp_path / "out").written == [imported]  # ... is imported again


def test_yaml_imported_again_still_parses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """pytester drops the modules a test imported; yaml's C extension survives a re-import and
    builds events of the first import's classes: the import must not read every file as empty."""
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(_vcr_doc(1)))
    for name in [m for m in sys.modules if m == "yaml" or m.startswith("yaml.")]:
        monkeypatch.delitem(sys.modules, name)
    summary = import_paths([tmp_path / "c.yaml"])
    assert summary.ok and Cassette.load(summary.written[0]).interactions[0].request.json() == {"n": 1}


def _with_requests(base: str, paths: list[str]) -> list[bytes]:
    import requests

    with requests.Session() as session:
        return [session.get(base + path).content for path in paths]


def _with_aiohttp(base: str, paths: list[str]) -> list[bytes]:
    import asyncio

    import aiohttp

    async def run() -> list[bytes]:
        async with aiohttp.ClientSession() as session:
            got = []
            for path in paths:
                async with session.get(base + path) as r:
                    got.append(await r.read())
            return got

    return asyncio.run(run())


@pytest.mark.parametrize("client", [_with_requests, _with_aiohttp], ids=["requests", "aiohttp"])
def test_compressed_bodies_recorded_through_other_stubs(base: str, tmp_path: Path, client: Any) -> None:
    """vcrpy's requests and aiohttp stubs store what the client library decoded (or, where it
    could not, the wire bytes) and keep Content-Encoding: either way the import carries the
    decoded body."""
    paths = [f"/enc/{c.replace(', ', '-')}" for c in CODINGS if "zstd" not in c]  # neither decodes zstd here
    source = tmp_path / "stub.yaml"
    with vcr.use_cassette(str(source)):
        live = client(base, paths)
    assert live[:3] == [SSE] * 3  # gzip, deflate, br (aiohttp takes only one layer off "gzip, gzip")
    items = yaml.safe_load(source.read_text())["interactions"]
    assert any(item["response"]["body"]["string"] == SSE.decode() for item in items)  # stored decoded
    assert all("content-encoding" in {k.lower() for k in item["response"]["headers"]} for item in items)
    cassette = import_vcr(source)
    assert [x.response.body for x in cassette.interactions] == [SSE] * len(paths)  # every layer off
    assert all(x.response.header("content-encoding") is None for x in cassette.interactions)


def test_a_text_body_under_a_content_encoding_was_stored_decoded(tmp_path: Path) -> None:
    doc = _vcr_doc(4)
    doc["interactions"][0]["response"]["headers"]["Content-Encoding"] = ["gzip"]
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(doc))
    (x,) = import_vcr(tmp_path / "c.yaml").interactions
    assert x.response.body == b"data: 4\n\ndata: [DONE]\n\n" and x.response.header("content-encoding") is None
    doc["interactions"][0]["response"]["body"]["string"] = b"\x1f\x8b\x08\x00not gzip after all"
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(doc))
    with pytest.raises(
        CassetteError,
        match="interaction 0: POST https://api.test/v1/4: the response body does not decode as gzip",
    ):
        import_vcr(tmp_path / "c.yaml")
