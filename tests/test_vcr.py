"""ssemock import-vcr: cassettes written by the real vcrpy, replayed through ssemock."""

from __future__ import annotations

import base64
import gzip
import sys
from pathlib import Path

import httpx
import orjson
import pytest
import vcr  # vcrpy: a dev dependency (the importer is tested against what it really writes)

import ssemock
from ssemock import Cassette, CassetteError, sse
from ssemock.commands.cli import main
from ssemock.commands.import_vcr import NO_BOUNDARIES, from_vcr, import_vcr

KEY = "sk-test-0123456789abcdef"
ROUTES = [
    ("GET", "/events", None),
    ("GET", "/gzip", None),
    ("POST", "/v1/chat/completions", {"model": "gpt-test", "stream": True}),
]


def fetch(client: httpx.Client, base: str, method: str, path: str, body: object) -> tuple[bytes, list[bytes]]:
    kw = {"json": body} if body is not None else {}
    with client.stream(method, base + path, headers={"authorization": f"Bearer {KEY}"}, **kw) as r:  # type: ignore[arg-type]
        assert r.status_code == 200
        chunks = list(r.iter_bytes())
    return b"".join(chunks), chunks


def record_with_vcrpy(
    path: Path, base: str, serializer: str = "yaml", routes: list[tuple[str, str, object]] = ROUTES
) -> list[bytes]:
    live = []
    with vcr.VCR(serializer=serializer).use_cassette(str(path)):
        with httpx.Client() as client:
            for method, route, body in routes:
                live.append(fetch(client, base, method, route, body)[0])
    assert path.is_file()
    return live


def test_import_a_yaml_cassette_written_by_vcrpy_and_replay_it(
    server: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "vcr" / "stream.yaml"
    live = record_with_vcrpy(source, server)
    text = source.read_text()
    assert "!!binary" in text and "content-encoding" in text  # vcrpy kept the gzip bytes as they came
    assert KEY in text  # vcrpy kept the key

    assert main(["import-vcr", str(source)]) == 0
    out, err = capsys.readouterr()
    assert NO_BOUNDARIES in err
    assert "vcrpy kept no chunk boundaries or timing: using one chunk per event, all at t=0" in err
    target = source.with_suffix(".json")
    assert f"converted {source} -> {target}: 3 interactions" in out
    assert "import-vcr: 1 converted, 0 skipped, 0 refused" in out

    cassette = Cassette.load(target)
    assert [x.request.method for x in cassette.interactions] == ["GET", "GET", "POST"]
    assert KEY not in target.read_text() and ssemock.redaction.rules.find_secrets(cassette) == []
    for x, body in zip(cassette.interactions, live):
        resp = x.response
        assert resp.body == body and resp.times == [0.0] * len(resp.ends)
        assert resp.chunks == list(ssemock.store.cassette.split_body(body, "text/event-stream"))
        assert resp.header("content-encoding") is None and resp.header("transfer-encoding") is None
    assert dict(cassette.interactions[2].request.headers)["authorization"] == "REDACTED"

    with ssemock.use_cassette(target):
        with httpx.Client() as client:
            for (method, route, body), expected in zip(ROUTES, live):
                got, chunks = fetch(client, server, method, route, body)
                assert got == expected
                assert chunks == list(ssemock.store.cassette.split_body(expected, "text/event-stream"))
    assert [e.data for e in sse.decode([live[0]])] == ["one", "two", "世"]


def test_import_a_json_cassette_written_by_vcrpy(
    server: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "stream.json"
    routes = [ROUTES[0], ROUTES[2]]  # vcrpy's JSON serializer cannot store the gzip bytes
    live = record_with_vcrpy(source, server, "json", routes)
    target = tmp_path / "out" / "imported.json"
    assert main(["import-vcr", str(source), "-o", str(target)]) == 0
    assert NO_BOUNDARIES in capsys.readouterr().err
    cassette = Cassette.load(target)
    assert [x.response.body for x in cassette.interactions] == live
    with ssemock.use_cassette(target), httpx.Client() as client:
        assert [fetch(client, server, *route)[0] for route in routes] == live
    # a .json vcrpy cassette is not overwritten by default
    assert main(["import-vcr", str(source)]) == 0
    assert "the ssemock plugin looks for stream.json" in capsys.readouterr().out
    assert (tmp_path / "stream.ssemock.json").is_file() and source.read_text().startswith("{")
    assert not ssemock.commands.import_vcr.is_ssemock_cassette(orjson.loads(source.read_bytes()))
    # ... unless asked to
    assert main(["import-vcr", str(source), "--replace-json"]) == 0
    assert Cassette.load(source).interactions[0].response.body == live[0]


def vcr_doc(
    body: object,
    *,
    request_body: object = "",
    headers: dict[str, list[str]] | None = None,
    status: object = None,
) -> dict[str, object]:
    return {
        "version": 1,
        "interactions": [
            {
                "request": {
                    "method": "POST",
                    "uri": "https://api.openai.com/v1/chat/completions",
                    "body": request_body,
                    "headers": {"Content-Type": ["application/json"]},
                },
                "response": {
                    "status": status or {"code": 200, "message": "OK"},
                    "headers": headers or {"Content-Type": ["text/event-stream"]},
                    "body": body,
                },
            }
        ],
    }


def test_refuses_to_write_when_a_secret_is_left(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "leak.json"
    source.write_bytes(orjson.dumps(vcr_doc({"string": f'data: {{"k": "{KEY}"}}\n\n'})))
    target = tmp_path / "leak.out.json"
    assert main(["import-vcr", str(source), "-o", str(target)]) == 1
    err = capsys.readouterr().err
    assert err.splitlines()[-3:] == [
        f"ssemock: error: refused {source}: a secret is left after redaction (1 finding): refusing to write {target}:",
        "  interaction 0 response.body: an OpenAI-style key (sk-...) ('sk-***', 24 chars: digits - a-z, at offset 13)",
        "  what to do: remove the secrets from the vcrpy cassette (or filter them when recording), or import "
        "with --scrub-bodies (each one replaced with REDACTED)",
    ]
    assert not target.exists()
    assert main(["import-vcr", str(source), "-o", str(target), "--scrub-bodies"]) == 0
    assert "scrubbed interaction 0 response.body" in capsys.readouterr().out
    assert sse.decode(Cassette.load(target).interactions[0].response.chunks)[0].data == '{"k": "REDACTED"}'


def test_body_and_header_shapes() -> None:
    events = b"data: a\n\ndata: b\n\n"
    shapes: list[object] = [
        {"string": events.decode()},
        events.decode(),
        {"string": events},
        {"base64_string": base64.b64encode(events).decode()},
    ]
    for shape in shapes:
        cassette = from_vcr(vcr_doc(shape, request_body={"string": '{"model": "m"}'}))
        x = cassette.interactions[0]
        assert x.response.body == events and x.response.ends == [9, 18], shape
        assert x.request.json() == {"model": "m"}
        assert x.response.header("content-type") == "text/event-stream"
    gz = from_vcr(
        vcr_doc(
            {"string": gzip.compress(events)},
            headers={
                "Content-Type": ["text/event-stream"],
                "Content-Encoding": ["gzip"],
                "Content-Length": ["99"],
            },
        )
    )
    resp = gz.interactions[0].response
    assert resp.body == events and resp.headers == [("content-type", "text/event-stream")]
    # the httpx cassette format of old vcrpy versions, and a plain status code
    old = {
        "interactions": [
            {
                "request": {"method": "get", "uri": "https://x.test/s", "body": None, "headers": {}},
                "response": {
                    "status_code": 201,
                    "headers": {"content-type": "text/event-stream"},
                    "content": "data: x\n\n",
                },
            }
        ]
    }
    x = from_vcr(old).interactions[0]
    assert (x.request.method, x.request.body, x.response.status, x.response.body) == (
        "GET",
        None,
        201,
        b"data: x\n\n",
    )
    assert from_vcr(vcr_doc("", status=204)).interactions[0].response.ends == []


def test_bad_vcr_cassettes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    not_vcr = tmp_path / "x.yaml"
    not_vcr.write_text("just: a mapping\n")
    assert main(["import-vcr", str(not_vcr)]) == 1
    assert f"ssemock: error: refused {not_vcr}: not a vcrpy cassette" in capsys.readouterr().err
    broken = tmp_path / "y.yaml"
    broken.write_text("interactions: [\n  - {")
    assert main(["import-vcr", str(broken)]) == 1
    assert "YAML does not parse" in capsys.readouterr().err
    with pytest.raises(
        CassetteError, match="interaction 0: POST https://api.openai.com/v1/chat/completions: response.status"
    ):
        from_vcr(vcr_doc("", status={"code": "teapot"}), "z.yaml")
    with pytest.raises(CassetteError, match="cannot read"):
        import_vcr(tmp_path / "missing.yaml")
    assert main(["import-vcr"]) == 2


def test_missing_pyyaml_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "c.yaml"
    source.write_text("interactions: []\nversion: 1\n")
    monkeypatch.setitem(sys.modules, "yaml", None)
    assert main(["import-vcr", str(source)]) == 1
    assert "needs PyYAML: pip install pyyaml" in capsys.readouterr().err
