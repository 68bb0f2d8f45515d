"""``ssemock import-har`` / ``export-har``: HAR 1.2 as DevTools, Playwright and mitmproxy write it
(``_webSocketMessages`` included) in and out, each direction saying what the other cannot hold."""

from __future__ import annotations

import base64
import copy
import gzip
import json
import os
import tempfile
import tracemalloc
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any
from unittest import mock

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ssemock
from ssemock.commands import har_reading
from ssemock.commands.cli import main
from ssemock.commands.har import HarError, export_har, import_har
from ssemock.commands.validate import validate_cassette
from ssemock.store.websocket import Close, Message, WebSocket

SCALE = int(os.environ.get("SSEMOCK_FUZZ_SCALE", "1"))  # as test_fuzz: 50 for a deep run
STREAM = 'data: {"choices": [{"delta": {"content": "世界"}}]}\n\ndata: [DONE]\n\n'


def chrome_har() -> dict[str, Any]:
    """Two entries as Chrome's DevTools writes them: an SSE POST and a WebSocket session."""
    return {
        "log": {
            "version": "1.2",
            "creator": {"name": "WebInspector", "version": "537.36"},
            "entries": [
                {
                    "startedDateTime": "2026-11-27T10:00:00.000Z",
                    "time": 812.5,
                    "request": {
                        "method": "POST",
                        "url": "https://api.example.com/v1/chat/completions",
                        "httpVersion": "h2",
                        "headers": [
                            {"name": ":authority", "value": "api.example.com"},
                            {"name": "Authorization", "value": "Bearer sk-test-not-a-real-key-0000000000"},
                            {"name": "content-type", "value": "application/json"},
                        ],
                        "postData": {"mimeType": "application/json", "text": '{"stream": true}'},
                    },
                    "response": {
                        "status": 200,
                        "headers": [
                            {"name": "content-type", "value": "text/event-stream"},
                            {"name": "content-encoding", "value": "br"},
                        ],
                        "content": {"size": 60, "mimeType": "text/event-stream", "text": STREAM},
                    },
                    "timings": {"send": 1, "wait": 300, "receive": 511.5},
                },
                {
                    "startedDateTime": "2026-11-27T10:00:01.000Z",
                    "time": 0,
                    "_resourceType": "websocket",
                    "request": {"method": "GET", "url": "wss://api.example.com/v1/realtime", "headers": []},
                    "response": {
                        "status": 101,
                        "headers": [],
                        "content": {"size": 0, "mimeType": "x-unknown"},
                    },
                    "_webSocketMessages": [
                        {"type": "send", "time": 1795773601.25, "opcode": 1, "data": '{"type": "hello"}'},
                        {"type": "receive", "time": 1795773601.5, "opcode": 1, "data": '{"type": "hi"}'},
                        {
                            "type": "receive",
                            "time": 1795773601.75,
                            "opcode": 2,
                            "data": base64.b64encode(b"\x00\xff").decode(),
                        },
                    ],
                },
            ],
        }
    }


def test_a_devtools_har_imports_with_what_it_cannot_hold_said(tmp_path: Path) -> None:
    path = tmp_path / "session.har"
    path.write_text(json.dumps(chrome_har()))
    cassette, notes = import_har(path)
    http, ws = cassette.interactions
    assert http.response.body == STREAM.encode() and http.response.chunks == [STREAM.encode()]
    assert http.response.times == [0.8125]  # one chunk, at the entry's end
    assert http.response.header("content-encoding") is None  # HAR bodies are decoded
    assert (
        dict(http.request.headers)["authorization"] != "Bearer sk-test-not-a-real-key-0000000000"
    )  # redacted
    assert not any(k.startswith(":") for k, _ in http.request.headers)
    assert ws.websocket is not None and ws.response.status == 101
    assert [(m.direction, m.t, m.type, m.data) for m in ws.websocket.messages] == [
        ("send", 0.25, "text", '{"type": "hello"}'),
        ("recv", 0.5, "text", '{"type": "hi"}'),
        ("recv", 0.75, "binary", b"\x00\xff"),
    ]
    assert ws.websocket.close.code == 1006
    assert "no chunk boundaries" in notes[0] and "no close frame" in notes[1]


def test_export_then_import_keeps_chunks_and_messages_and_says_what_other_tools_lose(tmp_path: Path) -> None:
    cassette = ssemock.Cassette()
    cassette.add(
        "POST",
        "https://api.example.com/v1/chat/completions",
        [b"data: a\n\n", b"data: \xe4\xb8", b"\x96\n\n"],
        times=[0.1, 0.2, 0.35],
        request_json={"stream": True},
    )
    cassette.add("GET", "https://api.example.com/raw", [b"\x00\x01\xfe"])
    cassette.interactions.append(
        ssemock.Interaction(
            ssemock.Request("GET", "wss://api.example.com/v1/realtime", [], None),
            ssemock.Response(101, [], b""),
            WebSocket(
                messages=[Message("send", 0.1, "text", "ping?"), Message("recv", 0.2, "binary", b"\x01")],
                close=Close(1000, "bye", "server", True, 0.3),
            ),
        )
    )
    har, notes = export_har(cassette)
    entries = har["log"]["entries"]
    assert har["log"]["version"] == "1.2" and len(entries) == 3
    assert entries[0]["response"]["content"]["text"] == "data: a\n\ndata: 世\n\n"
    assert entries[1]["response"]["content"]["encoding"] == "base64"
    assert [m["opcode"] for m in entries[2]["_webSocketMessages"]] == [1, 2]
    assert (
        "_ssemockChunks" in notes[0]
        and "no close code" in notes[1]
        and "1 close frame(s) dropped" in notes[1]
    )
    path = tmp_path / "out.har"
    path.write_text(json.dumps(har))
    back, back_notes = import_har(path)
    first = back.interactions[0].response
    assert first.chunks == cassette.interactions[0].response.chunks and first.times == [0.1, 0.2, 0.35]
    assert back.interactions[1].response.body == b"\x00\x01\xfe"
    ws = back.interactions[2].websocket
    assert ws is not None and [(m.direction, m.t, m.data) for m in ws.messages] == [
        ("send", 0.1, "ping?"),
        ("recv", 0.2, b"\x01"),
    ]
    assert len(back_notes) == 1 and "WebSocket" in back_notes[0]  # the chunks came back


def test_the_commands_write_files_and_name_what_is_wrong(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    har = tmp_path / "in.har"
    har.write_text(json.dumps(chrome_har()))
    out = tmp_path / "c.json"
    assert main(["import-har", str(har), "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "2 interaction(s) written" in printed and "HAR cannot hold" in printed
    assert len(ssemock.Cassette.load(out).interactions) == 2
    assert main(["export-har", str(out), "-o", str(tmp_path / "again.har")]) == 0
    assert json.loads((tmp_path / "again.har").read_text())["log"]["entries"][1]["_webSocketMessages"]
    broken = chrome_har()
    del broken["log"]["entries"][1]["response"]
    har.write_text(json.dumps(broken))
    assert main(["import-har", str(har), "-o", str(tmp_path / "x.json")]) == 1
    err = capsys.readouterr().err
    assert f"{har}: log.entries[1]: response is missing" in err
    leaky = chrome_har()
    leaky["log"]["entries"][0]["response"]["content"]["text"] = (
        'data: {"key": "sk-proj-' + "A1b2C3d4E5f6G7h8I9j0" * 3 + '"}\n\n'
    )
    har.write_text(json.dumps(leaky))
    assert main(["import-har", str(har), "-o", str(tmp_path / "y.json")]) == 1
    assert "secret" in capsys.readouterr().err and not (tmp_path / "y.json").exists()


def test_a_refused_har_lists_every_finding_and_json_lists_them_all(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each secret left on its line (a screenful at most), then what to do; ``--json`` has every
    one (issue 42 item 3)."""
    from ssemock.commands.cli.output import SCREENFUL

    leaky = chrome_har()
    entry = leaky["log"]["entries"][0]
    entry["request"]["postData"]["text"] = json.dumps({"payload": json.dumps({"password": "hunter2"})})
    leaky["log"]["entries"] = [entry] * (SCREENFUL + 2)
    har, out = tmp_path / "leaky.har", tmp_path / "c.json"
    har.write_text(json.dumps(leaky))
    assert main(["import-har", str(har), "-o", str(out)]) == 1
    lines = capsys.readouterr().err.splitlines()
    assert (
        lines[0]
        == f"ssemock: error: {har}: not written to {out}: a secret is left ({SCREENFUL + 2} findings):"
    )
    assert lines[1] == (
        "  interaction 0 request.body: a credential-named field 'password' at $.payload $.password "
        "('***', 7 chars: digits a-z)"
    )
    assert len(lines) == SCREENFUL + 2 and lines[SCREENFUL] == "  and 3 more (--json lists them all)"
    assert lines[-1].startswith("  what to do: remove the secrets from the HAR file")
    assert main(["import-har", str(har), "-o", str(out), "--json"]) == 1
    findings = json.loads(capsys.readouterr().out)["refused"]["findings"]
    assert [f.split(" ", 2)[1] for f in findings] == [str(k) for k in range(SCREENFUL + 2)]
    assert not out.exists()


# -- hostile HARs: one HarError naming the file, the entry and the field; nothing written --------


def _edit_http(edit: Callable[[dict[str, Any]], object]) -> Callable[[dict[str, Any]], object]:
    return lambda har: edit(har["log"]["entries"][0])


def _edit_ws(edit: Callable[[list[dict[str, Any]]], object]) -> Callable[[dict[str, Any]], object]:
    return lambda har: edit(har["log"]["entries"][1]["_webSocketMessages"])


HOSTILE: list[tuple[Callable[[dict[str, Any]], object], str]] = [
    (_edit_http(lambda e: e["response"].__setitem__("status", 99999)), "log.entries[0].response.status"),
    (_edit_http(lambda e: e["response"].__setitem__("status", True)), "log.entries[0].response.status"),
    (_edit_http(lambda e: e.__setitem__("time", -5)), "log.entries[0].time"),
    (_edit_http(lambda e: e.__setitem__("time", 1e12)), "log.entries[0].time"),
    (_edit_http(lambda e: e["request"].__setitem__("url", "")), "log.entries[0].request.url is empty"),
    (
        _edit_http(lambda e: e["request"]["headers"].append({"name": "x-a", "value": "1\r\nx-b: 2"})),
        "log.entries[0].request.headers[3].value holds a CR",
    ),
    (
        _edit_http(lambda e: e["response"]["headers"].append({"name": "x\x00", "value": "1"})),
        "log.entries[0].response.headers[2].name holds a NUL",
    ),
    (
        _edit_http(lambda e: e.__setitem__("_ssemockChunks", {"ends": [60], "times": ["soon"]})),
        "log.entries[0]._ssemockChunks.times[0]",
    ),
    (
        _edit_http(lambda e: e.__setitem__("_ssemockChunks", {"ends": [1, 2], "times": [0.1]})),
        "log.entries[0]._ssemockChunks: 2 ends but 1 times",
    ),
    (
        _edit_http(lambda e: e.__setitem__("_ssemockChunks", {"ends": [60], "times": [-1]})),
        "log.entries[0]._ssemockChunks.times[0]",
    ),
    (_edit_ws(lambda ms: ms[1].__setitem__("time", 9e9)), "log.entries[1]._webSocketMessages[1].time"),
    (_edit_ws(lambda ms: ms[2].__setitem__("time", 1795773601.0)), "_webSocketMessages[2].time: goes back"),
    (_edit_ws(lambda ms: ms[0].__setitem__("time", -1)), "log.entries[1]._webSocketMessages[0].time"),
    (_edit_ws(lambda ms: ms[0].__setitem__("time", "now")), "log.entries[1]._webSocketMessages[0].time"),
    (_edit_ws(lambda ms: ms[0].__setitem__("opcode", 3)), "log.entries[1]._webSocketMessages[0].opcode: 3"),
    (_edit_ws(lambda ms: ms[0].__setitem__("opcode", 0)), "log.entries[1]._webSocketMessages[0].opcode: 0"),
    (
        _edit_ws(lambda ms: ms[0].__setitem__("data", "\ud800")),
        "log.entries[1]._webSocketMessages[0].data: a lone surrogate",
    ),
    (lambda har: har["log"].__setitem__("entries", {}), "log.entries: expected list"),
]


@pytest.mark.parametrize(("edit", "named"), HOSTILE)
def test_a_hostile_har_is_one_error_naming_the_entry_and_field_and_nothing_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], edit: Callable[[dict[str, Any]], object], named: str
) -> None:
    har = chrome_har()
    edit(har)
    path = tmp_path / "hostile.har"
    path.write_text(json.dumps(har))
    with pytest.raises(HarError) as failed:
        import_har(path)
    assert str(failed.value).startswith(f"{path}: ") and named in str(failed.value)
    out = tmp_path / "c.json"
    assert main(["import-har", str(path), "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert named in err and "Traceback" not in err and not out.exists()


@pytest.mark.parametrize(
    ("raw", "named"),
    [
        (b'{"log": {"entries": [\xff]}}', "not UTF-8"),
        (b'{"log": {"entries": [{"time": NaN}]}}', "not JSON"),
        (b'{"log": {"entries": [{"time": 1e400}]}}', "out of a float's range"),
        (b'{"log": {"entries": [], "entries": []}}', "log.entries appears twice"),
        (b'{"log": {"entries": []}} []', "something follows"),
        (b'{"log": {"entries": [', "not JSON"),
        (b"[]", "expected an object with a log"),
        (b'{"log": []}', "log: expected dict, got list"),
        (b'{"log": {}}', "log: entries is missing"),
    ],
)
def test_a_file_that_is_no_har_is_one_error(tmp_path: Path, raw: bytes, named: str) -> None:
    path = tmp_path / "broken.har"
    path.write_bytes(raw)
    with pytest.raises(HarError) as failed:
        import_har(path)
    assert str(failed.value).startswith(f"{path}: ") and named in str(failed.value)


def test_a_request_with_no_answer_is_left_out_and_said(tmp_path: Path) -> None:
    har = chrome_har()
    har["log"]["entries"][0]["response"]["status"] = 0  # blocked, cancelled or failed
    path = tmp_path / "blocked.har"
    path.write_text(json.dumps(har))
    cassette, notes = import_har(path)
    assert [x.response.status for x in cassette.interactions] == [101]
    assert any("1 request(s) got no answer" in n for n in notes)
    ssemock.Cassette.load(cassette.save(tmp_path / "c.json"))


def _compressed(body: bytes, encoding: str) -> bytes:
    import brotli
    import zstandard

    if encoding == "gzip":
        return gzip.compress(body)
    if encoding == "deflate":
        return zlib.compress(body)
    if encoding == "br":
        return bytes(brotli.compress(body))
    return zstandard.ZstdCompressor().compress(body)


def _still_encoded(encoding: str, body: bytes) -> dict[str, Any]:
    """A HAR whose writer kept the response body in its Content-Encoding (base64, as HAR holds bytes)."""
    har = chrome_har()
    entry = har["log"]["entries"][0]
    entry["response"]["headers"] = [
        {"name": "content-type", "value": "text/event-stream"},
        {"name": "content-encoding", "value": encoding},
    ]
    entry["response"]["content"] = {
        "mimeType": "text/event-stream",
        "encoding": "base64",
        "text": base64.b64encode(_compressed(body, encoding)).decode(),
    }
    del har["log"]["entries"][1]
    return har


@pytest.mark.parametrize("encoding", ["gzip", "deflate", "br", "zstd"])
def test_a_body_still_compressed_is_imported_as_the_client_read_it(tmp_path: Path, encoding: str) -> None:
    """The scan reads the inflated body, and a replay serves what the client read (not bytes no
    client decodes with the header gone)."""
    path = tmp_path / "encoded.har"
    path.write_text(json.dumps(_still_encoded(encoding, STREAM.encode())))
    cassette, _ = import_har(path)
    (x,) = cassette.interactions
    assert x.response.body == STREAM.encode() and x.response.header("content-encoding") is None
    saved = cassette.save(tmp_path / "c.json")
    with ssemock.use_cassette(saved, record_mode="none"):
        got = httpx.post("https://api.example.com/v1/chat/completions", json={"stream": True})
    assert got.text == STREAM


@pytest.mark.parametrize("encoding", ["gzip", "br"])
def test_a_key_in_a_compressed_har_body_is_found(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], encoding: str
) -> None:
    key = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0" * 3
    path = tmp_path / "leaky.har"
    path.write_text(json.dumps(_still_encoded(encoding, f'data: {{"key": "{key}"}}\n\n'.encode())))
    out = tmp_path / "c.json"
    assert main(["import-har", str(path), "-o", str(out)]) == 1
    assert "secret" in capsys.readouterr().err and not out.exists()


def test_a_compressed_body_cut_short_or_inflating_past_the_cap_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    har = _still_encoded("gzip", STREAM.encode() * 20)
    content = har["log"]["entries"][0]["response"]["content"]
    whole = base64.b64decode(content["text"])
    content["text"] = base64.b64encode(whole[:-6]).decode()
    path = tmp_path / "cut.har"
    path.write_text(json.dumps(har))
    with pytest.raises(
        HarError, match=r"log.entries\[0\].response.content: Content-Encoding 'gzip': .*cut short"
    ):
        import_har(path)
    content["text"] = base64.b64encode(whole).decode()
    path.write_text(json.dumps(har))
    monkeypatch.setattr("ssemock.commands.har_content.INFLATED_MAX", 1000)  # a bomb, small
    with pytest.raises(HarError, match="inflates past 1,000 bytes"):
        import_har(path)


def test_import_streams_the_entries_within_three_times_the_har(tmp_path: Path) -> None:
    """import-har parses one entry at a time: the peak of what it allocates to import and save
    a 3 MB HAR of 20 streamed responses stays under 3x the file (the whole document parsed at
    once was about 8x)."""
    har = chrome_har()
    words = " ".join(f"word{k} 世界" for k in range(150))
    body = "".join(
        f'data: {{"choices": [{{"delta": {{"content": "{k} {words}"}}}}]}}\n\n' for k in range(100)
    )
    one = har["log"]["entries"][0]
    one["response"]["content"]["text"] = body
    one["request"]["headers"] = one["request"]["headers"][2:]
    har["log"]["entries"] = [one] * 20
    path = tmp_path / "large.har"
    path.write_text(json.dumps(har, ensure_ascii=False))
    size = path.stat().st_size
    assert size > 3_000_000
    tracemalloc.start()
    try:
        cassette, _ = import_har(path)
        cassette.save(tmp_path / "large.json")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(ssemock.Cassette.load(tmp_path / "large.json").interactions) == 20
    assert peak < 3 * size, f"peak {peak:,} bytes for a {size:,}-byte HAR"


# -- any HAR: a cassette that loads, or one HarError --------------------------------------------

_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(), st.text(max_size=12)
)
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=10,
)
_HOSTILE_VALUES = st.sampled_from(
    [0, -1, 1, 2, 3, 8, 99999, 2**64, 1e300, -0.5, "", "a\r\nb", "\x00", "\ud800", "世界", [], {}, None, True]
)


def _starting_hars() -> list[dict[str, Any]]:
    """Valid HARs to mutate: a browser's, an exported cassette's (``_ssemockChunks``), a body
    still gzip-compressed."""
    cassette = ssemock.Cassette()
    cassette.add("POST", "https://api.example.com/v1/x", [b"data: a\n\n", b"data: b\n\n"], times=[0.1, 0.2])
    exported, _ = export_har(cassette)
    return [chrome_har(), exported, _still_encoded("gzip", STREAM.encode())]


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for k, v in items:
        out += _paths(v, (*prefix, k))
    return out


def _mutated(har: Any, path: tuple[Any, ...], how: str, new: Any) -> Any:
    if not path:
        return new
    parent = har
    for key in path[:-1]:
        parent = parent[key]
    key = path[-1]
    if how == "delete":
        del parent[key]
    elif how == "duplicate" and isinstance(parent, list):
        parent.insert(key, copy.deepcopy(parent[key]))
    else:
        parent[key] = new
    return har


def _imported(path: Path, window: int | None) -> ssemock.Cassette | str:
    """The HAR imported (with the reading window given), or its HarError's text."""
    try:
        if window is None:
            return import_har(path)[0]
        with mock.patch.object(har_reading, "_WINDOW", window):
            return import_har(path)[0]
    except HarError as exc:
        assert str(exc).startswith(f"{path}: ")
        return str(exc)


@settings(max_examples=150 * SCALE, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(range(3)), st.data())
def test_any_har_imports_to_a_cassette_that_loads_or_is_one_har_error(
    start: int, data: st.DataObject
) -> None:
    """A valid HAR mutated anywhere (any JSON value, NaN, lone surrogates, deleted or repeated
    parts) imports to a cassette that saves and loads, or raises one HarError naming the file;
    the same whatever the reading window (entries cut anywhere); what loads, validate and
    export-har read without an exception."""
    har = _starting_hars()[start]
    for _ in range(data.draw(st.integers(0, 3))):
        path = data.draw(st.sampled_from(_paths(har)))
        how = data.draw(st.sampled_from(["replace", "delete", "duplicate"]))
        new = copy.deepcopy(data.draw(st.one_of(_values, _HOSTILE_VALUES)))
        har = _mutated(har, path, how, new)
    raw = json.dumps(har, ensure_ascii=False).encode("utf-8", "surrogatepass")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "drawn.har"
        path.write_bytes(raw)
        whole = _imported(path, None)
        small = _imported(path, data.draw(st.integers(1, 64)))
        if isinstance(whole, str) or isinstance(small, str):
            assert small == whole
            return
        assert small.dumps() == whole.dumps()
        saved = whole.save(Path(tmp) / "c.json", scan_secrets=False)
        loaded = ssemock.Cassette.load(saved)
        assert loaded.dumps() == saved.read_bytes()
        validate_cassette(loaded, str(saved))
        export_har(loaded)
