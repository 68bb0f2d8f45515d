"""ssemock.commands: the logic behind show, validate, rechunk, redact and fix."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from streams import TEXT, TOOL_ARGS, openai_chat_events, writes

from ssemock import Cassette, CassetteError, chunking, sse, transforms
from ssemock.commands import (
    decode_response,
    format_summary,
    format_validation,
    rechunk,
    rechunk_response,
    redact,
    remap_ends,
    repair,
    size_histogram,
    stream_kind,
    summarize,
    timeline,
    validate_cassette,
    validate_file,
)
from ssemock.redaction.rules import find_secrets
from ssemock.redaction.scrub import _remap_offset
from ssemock.store.cassette import Response

CHAT = "https://api.openai.com/v1/chat/completions"
KEY = "sk-test-0123456789abcdef"


def chat_cassette(gap: float = 0.03, first: float = 0.012) -> Cassette:
    cassette = Cassette()
    chunks = writes(openai_chat_events())
    cassette.add(
        "POST",
        CHAT,
        chunks,
        times=[first + k * gap for k in range(len(chunks))],
        request_json={"model": "gpt-test", "stream": True},
    )
    return cassette


def one(
    body: bytes,
    *,
    url: str = "https://example.test/stream",
    content_type: str = "text/event-stream",
    chunks: list[bytes] | None = None,
    **kw: object,
) -> Cassette:
    cassette = Cassette()
    cassette.add("GET", url, chunks or [body], headers={"content-type": content_type}, **kw)  # type: ignore[arg-type]
    return cassette


def messages(report_findings: list[object]) -> str:
    return "\n".join(str(f) for f in report_findings)


# -- show ----------------------------------------------------------------------------------------


def test_summarize_chat_numbers() -> None:
    cassette = chat_cassette()
    x = cassette.interactions[0]
    s = summarize(x, 0, events=True)
    n = len(x.response.chunks)
    assert s["method"] == "POST" and s["url"] == CHAT and s["status"] == 200
    assert s["content_type"] == "text/event-stream" and s["complete"] is True
    assert s["body_bytes"] == len(x.response.body) and s["chunks"] == n
    assert s["first_chunk_ms"] == 12.0
    assert s["last_chunk_ms"] == pytest.approx(12 + 30 * (n - 1))
    assert s["gaps_ms"] == {"min": 30.0, "median": 30.0, "max": 30.0}
    assert sum(b["count"] for b in s["histogram"]) == n
    assert len(s["timeline"]) == 60 and s["timeline"][0] == "·" and s["timeline"][-1] != "·"
    assert 60 - s["timeline"].count("·") == n  # 30 ms apart: one column each
    assert s["stream"] == "sse" and s["events"] == len(openai_chat_events())
    assert s["protocol"] == "openai.chat"
    assert s["text"] == TEXT
    assert s["tool_calls"] == [{"name": "get_weather", "arguments": TOOL_ARGS}]
    assert s["event_list"][-1] == {"event": "message", "data": "[DONE]"}
    text = format_summary(s)
    for needle in (
        f"in {n} chunks",
        "time to first chunk 12 ms",
        "min 30 ms, median 30 ms, max 30 ms",
        "protocol openai.chat",
        "get_weather(",
        "[DONE]",
        "|",
    ):
        assert needle in text, needle


def test_summary_of_untimed_and_empty_responses() -> None:
    cassette = one(b"data: a\n\ndata: b\n\n", chunks=[b"data: a\n\n", b"data: b\n\n"])
    s = summarize(cassette.interactions[0])
    assert s["first_chunk_ms"] == 0 and s["last_chunk_ms"] == 0
    assert "every chunk at t=0" in format_summary(s)
    empty = Cassette()
    empty.add("GET", "https://example.test/", [], headers={"content-type": "application/json"})
    s = summarize(empty.interactions[0])
    assert s["chunks"] == 0 and s["gaps_ms"] is None and s["stream"] == "other"
    assert "body 0 bytes in 0 chunks" in format_summary(s)


def test_size_histogram_and_timeline() -> None:
    assert size_histogram([]) == []
    assert size_histogram([1, 1, 1]) == [{"lo": 1, "hi": 1, "count": 3}]
    wide = size_histogram([1, 5, 100, 5000, 70000])
    assert len(wide) <= 8 and sum(b["count"] for b in wide) == 5
    assert wide[0]["lo"] == 1 and wide[-1]["hi"] == 70000
    assert all(a["hi"] < b["lo"] for a, b in zip(wide, wide[1:]))
    row = timeline([0.0, 0.5, 1.0], width=11)
    assert len(row) == 11 and row[0] != "·" and row[5] != "·" and row[10] != "·" and row.count("·") == 8
    assert timeline([0.0, 1.0, 1.0], width=5)[-1] == "█"
    assert timeline([]) == "" and timeline([0.0, 0.0]) == "█"


def test_stream_kind_and_ndjson_decoding() -> None:
    assert stream_kind("text/event-stream; charset=utf-8") == "sse"
    assert stream_kind("application/x-ndjson") == "ndjson"
    assert stream_kind("application/json") == "other"
    assert stream_kind(None, b'{"a": 1}\n{"a": 2}\n') == "ndjson"
    assert stream_kind(None, b"data: x\n\n") == "sse"
    resp = Response(200, [("content-type", "application/x-ndjson")], b'{"a": 1}\n{"a": 2}\n', [18], [0.0])
    assert decode_response(resp).events == [{"a": 1}, {"a": 2}]
    bad = Response(200, [("content-type", "application/x-ndjson")], b'{"a": 1}\n{"a": \n', [16], [0.0])
    decoded = decode_response(bad)
    assert decoded.error is not None and "line 2" in decoded.error


def test_stream_kind_names_the_framing_of_json_arrays_and_eventstreams() -> None:
    from ssemock.framing import eventstream

    frame = eventstream.encode(
        {":message-type": "event", ":event-type": "messageStart"}, b'{"role":"assistant"}'
    )
    assert stream_kind("application/vnd.amazon.eventstream", frame) == "eventstream"
    assert (
        stream_kind(None, frame) == stream_kind("application/octet-stream", frame) == "eventstream"
    )  # its CRC says
    assert stream_kind("application/json; charset=UTF-8", b'[{"candidates": []}\n]') == "json_array"
    assert stream_kind(None, b"[{}]") == "json_array"
    assert (
        stream_kind("application/json", b'{"error": {"code": 400}}') == "other"
    )  # one JSON object: no stream
    assert stream_kind("text/html", b"[not json]") == "other"


@pytest.mark.parametrize(
    "name,kind,what,protocol",
    [
        ("gemini/array_text", "json_array", "JSON array elements", "gemini.generate_content"),
        ("bedrock/converse_tool_use", "eventstream", "eventstream frames", "bedrock.converse"),
    ],
)
def test_json_array_and_eventstream_cassettes_validate_and_show_as_streams(
    capsys: pytest.CaptureFixture[str], name: str, kind: str, what: str, protocol: str
) -> None:
    from ssemock import cassettes, framing
    from ssemock.accumulate import accumulate
    from ssemock.commands.cli import main

    x = cassettes.load(name).interactions[0]
    content_type = x.response.header("content-type")
    events = framing.decode(x.response.body, content_type)
    expected = accumulate(events, url=x.request.url, content_type=content_type)
    assert main(["validate", str(cassettes.path(name))]) == 0
    out = capsys.readouterr().out
    assert f"(1 interaction, {len(events)} events)" in out and "not a stream" not in out and "warn" not in out
    assert main(["show", str(cassettes.path(name))]) == 0
    assert f"events: {len(events)} {what}; protocol {protocol}" in capsys.readouterr().out
    s = summarize(x)
    assert (s["stream"], s["protocol"], s["events"]) == (kind, protocol, len(events)) and len(events) > 1
    assert s["text"] == expected.text and s["finish_reason"] == expected.finish_reason
    assert s["tool_calls"] == [{"name": c.name, "arguments": c.arguments} for c in expected.tool_calls]


def test_a_corrupt_eventstream_body_is_a_validate_problem_naming_the_frame(tmp_path: Path) -> None:
    from ssemock import cassettes
    from ssemock.framing import eventstream

    c = cassettes.load("bedrock/converse_tool_use")
    resp = c.interactions[0].response
    third = eventstream.frame_ends(resp.body)[2]
    body = bytearray(resp.body)
    body[third + 20] ^= 0xFF  # inside frame 3: its message CRC no longer matches
    resp.body = bytes(body)
    report = validate_cassette(c, "bedrock.json")
    assert not report.ok
    assert "does not decode as eventstream frames: eventstream frame 3" in report.of("problem")[0].message


# -- validate --------------------------------------------------------------------------------------


def test_validate_good_cassette_is_ok_and_quiet(tmp_path: Path) -> None:
    path = tmp_path / "good.json"
    chat_cassette().save(path)
    report = validate_file(path)
    assert report.ok and not [f for f in report.findings if f.level != "detail"], report.findings
    assert report.interactions == 1 and report.events == len(openai_chat_events())
    assert format_validation(report) == [f"ok    {path} (1 interaction, {report.events} events)"]


def test_validate_flags_secrets_as_problems() -> None:
    cassette = one(f'data: {{"k": "{KEY}"}}\n\n'.encode(), url=CHAT)
    report = validate_cassette(cassette, "s.json")
    assert not report.ok
    [problem] = report.of("problem")
    assert (
        problem.interaction == 0
        and "response.body" in problem.message
        and "OpenAI-style key" in problem.message
    )
    assert any("s.json: interaction 0: problem: secret left" in line for line in format_validation(report))


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        (b"data: one\n\ndata: two\n", "unterminated last event"),
        (b"data: one\n\ndata: two", "unterminated last event"),
        (b"\xef\xbb\xbfdata: one\n\n", "BOM"),
        (b"data: one\r\rdata: two\r\r", "CR-only line endings (4 bare CR)"),
        (b"data: one\n\ndata: [DONE]\n\ndata: late\n\n", "1 event(s) after [DONE]"),
        (b"data: \xff\n\n", "not valid UTF-8 at byte 6"),
    ],
)
def test_validate_warns_about_spec_oddities(body: bytes, needle: str) -> None:
    report = validate_cassette(one(body), "odd.json")
    assert report.ok  # warnings only
    assert needle in messages([f.message for f in report.of("warning")])
    assert format_validation(report)[0].startswith("warn  odd.json")


def test_a_plain_sse_stream_validates_quietly_and_says_what_it_is_under_verbose() -> None:
    report = validate_cassette(one(b"data: one\n\n"), "plain.json")
    assert report.ok and not report.of("warning") and not report.of("note")
    assert format_validation(report) == ["ok    plain.json (1 interaction, 1 events)"]
    (detail,) = report.of("detail")
    assert detail.message.startswith("plain SSE events: no known protocol")
    assert "plain SSE events" in format_validation(report, verbose=True)[0]
    # a protocol named outright is the one accumulated (and here it fails: a warning naming it)
    named = validate_cassette(one(b"data: one\n\n"), "plain.json", protocol="openai.chat")
    assert "(openai.chat) fails" in messages([f.message for f in named.of("warning")])


def test_validate_is_quiet_about_what_is_fine() -> None:
    # data: without a space, CRLF, comments, a trailing comment line: all fine for a decoder
    body = b'data:{"choices": []}\r\n\r\n: ping\n\ndata: [DONE]\n\n: bye\n'
    report = validate_cassette(one(body, url=CHAT), "fine.json")
    assert report.ok and not [f for f in report.findings if f.level != "detail"], report.findings


def test_validate_problems_and_notes() -> None:
    ndjson = one(b'{"a": 1}\nnot json\n', content_type="application/x-ndjson")
    report = validate_cassette(ndjson, "n.json")
    assert not report.ok and "line 2" in report.of("problem")[0].message
    nothing = validate_cassette(one(b": only a comment\n\n"), "c.json")
    assert not nothing.ok and "no SSE event decodes" in nothing.of("problem")[0].message
    cut = one(
        b"data: one\n\ndata: t",
        complete=False,
        error={"type": "RemoteProtocolError", "message": "peer closed", "at_byte": 18},
    )
    report = validate_cassette(cut, "cut.json")
    assert report.ok
    notes = messages([f.message for f in report.of("note")])
    assert "recorded incomplete" in notes and "RemoteProtocolError" in notes and "at byte 18" in notes
    empty = validate_cassette(Cassette(), "e.json")
    assert empty.ok and "no interactions" in empty.of("warning")[0].message
    error_body = one(b'{"error": "rate limited"}', content_type="application/json", status=429)
    report = validate_cassette(error_body, "429.json")
    assert report.ok and "not a stream" in report.of("note")[0].message


def test_validate_malformed_files(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text('{"version": 1, "interactions": [{"request": {}}]}')
    report = validate_file(path)
    assert not report.ok and report.of("problem")[0].interaction == 0
    assert f"{path}: interaction 0: problem: missing or malformed 'response'" in format_validation(report)[1]
    missing = validate_file(tmp_path / "nope.json")
    assert not missing.ok and "cannot read" in missing.of("problem")[0].message


# -- rechunk ---------------------------------------------------------------------------------------


def test_rechunk_keeps_bytes_and_takes_the_time_of_the_last_byte() -> None:
    body = b"data: one\n\ndata: two\n\n"
    resp = Response(200, [("content-type", "text/event-stream")], body, [4, 15, 22], [0.1, 0.2, 0.3])
    new, note = rechunk_response(resp, chunking.fixed(5))
    assert note is None and new.body == body
    assert new.ends == [5, 10, 15, 20, 22]
    # chunk (0,5] ends in old chunk 1 (4, 15]; (5,10] and (10,15] too; (15,20] and (20,22] in chunk 2
    assert new.times == [0.2, 0.2, 0.2, 0.3, 0.3]
    assert b"".join(new.chunks) == body
    same, _ = rechunk_response(resp, chunking.as_recorded)
    assert same.ends == resp.ends and same.times == resp.times


def test_rechunk_with_transform_keeps_events_and_times() -> None:
    cassette = chat_cassette()
    before = cassette.interactions[0].response
    events = sse.decode(before.chunks)
    old = Response(before.status, before.headers, before.body, list(before.ends), list(before.times))
    results = rechunk(cassette, chunking.as_recorded, transforms.resolve("crlf+keepalive"), keep_chunks=3)
    after = cassette.interactions[0].response
    assert results[0].transformed and results[0].after == len(old.ends) and len(results[0].chunks) == 3
    assert b"\r\n" in after.body and b": ping" in after.body
    assert sse.decode(after.chunks) == events
    assert after.times == old.times
    bytewise = rechunk(cassette, chunking.bytewise)[0]
    assert bytewise.after == len(after.body)


def test_rechunk_leaves_non_sse_bodies_untransformed() -> None:
    cassette = one(b'{"a": 1}\n{"a": 2}\n', content_type="application/x-ndjson")
    [result] = rechunk(cassette, chunking.per_event, transforms.resolve("crlf"))
    assert not result.transformed and result.note and "text/event-stream" in result.note
    assert cassette.interactions[0].response.body == b'{"a": 1}\n{"a": 2}\n'
    assert cassette.interactions[0].response.ends == [9, 18]


# -- redact ----------------------------------------------------------------------------------------


def test_remap_offsets_and_ends() -> None:
    edits = [(10, 30, 8)]  # a 20-byte secret at 10 becomes 8 bytes
    assert [_remap_offset(e, edits) for e in (5, 10, 12, 25, 30, 40)] == [5, 10, 12, 18, 18, 28]
    ends, times = remap_ends([5, 25, 30, 40], [0.1, 0.2, 0.3, 0.4], edits, 28)
    assert ends == [5, 18, 28] and times == [0.1, 0.3, 0.4]  # merged chunk keeps the later time


def test_redact_scrubs_headers_urls_and_bodies_keeping_the_map_valid() -> None:
    body = (
        f'data: {{"a": "hi"}}\n\ndata: {{"key": "{KEY}", "auth": "Bearer abcdefghijklmnop"}}\n\n'
        "data: [DONE]\n\n"
    ).encode()
    cuts = [7, 40, 45, 70, len(body)]  # 40 and 45 fall inside the key
    cassette = Cassette()
    cassette.add(
        "POST",
        CHAT + "?api_key=abc",
        [body[a:b] for a, b in zip([0, *cuts], cuts)],
        times=[0.01, 0.02, 0.03, 0.04, 0.05],
        headers={"content-type": "text/event-stream", "set-cookie": "s=1", "x-echo": KEY},
        request_headers={"authorization": f"Bearer {KEY}", "x-custom": KEY},
        request_json={"key": KEY},
        error={"type": "ReadError", "message": KEY, "at_byte": len(body)},
    )
    events = sse.decode([body])
    changes = redact(cassette)
    text = "\n".join(changes)
    for needle in (
        "request.url",
        "request.headers['authorization']",
        "request.headers['x-custom']",
        "request.body",
        "response.headers['set-cookie']",
        "response.headers['x-echo']",
        "response.body: an OpenAI-style key",
        "response.body: a Bearer token",
        "response.error",
    ):
        assert needle in text, needle
    assert find_secrets(cassette) == []
    resp = cassette.interactions[0].response
    assert resp.ends[-1] == len(resp.body) and all(a < b for a, b in zip(resp.ends, resp.ends[1:]))
    assert resp.error is not None and resp.error["at_byte"] == len(resp.body)
    again = Cassette.loads(cassette.dumps())  # the map is consistent with the body
    got = sse.decode(again.interactions[0].response.chunks)
    assert [e.data for e in got] == [
        e.data.replace(KEY, "REDACTED").replace("abcdefghijklmnop", "REDACTED") for e in events
    ]
    assert "Bearer REDACTED" in got[1].data
    assert redact(cassette) == []  # idempotent


def test_redact_leaves_no_token_a_percent_escape_cut_short() -> None:
    """A Bearer token ending in a doubly escaped ``=`` (``%253D``) then a letter: the scan's span
    stops at the escape, and the letter after it goes too, or ``REDACTEDA`` reads as a token."""
    cassette = Cassette()
    cassette.add("GET", "http://127.0.0.1:1/v1/%0ABearer%200000000000000000000000000000000a%253DA/x", [b"ok"])
    assert redact(cassette) and find_secrets(cassette) == []
    assert cassette.interactions[0].request.url == "http://127.0.0.1:1/v1/%0ABearer%20REDACTED/x"


# -- fix -------------------------------------------------------------------------------------------


def test_repair_keeps_valid_boundaries_when_only_the_map_is_wrong() -> None:
    doc = orjson.loads(chat_cassette().dumps())
    pairs = doc["interactions"][0]["response"]["chunks"]
    size = pairs[-1][1]
    pairs[2][1] = pairs[1][1]  # no longer increasing
    pairs[3][0] = 0.0  # time goes back
    with pytest.raises(CassetteError, match="does not increase"):
        Cassette.loads(orjson.dumps(doc))
    cassette, repairs = repair(orjson.dumps(doc), "x.json")
    assert repairs[0].changed and "kept" in repairs[0].message
    resp = cassette.interactions[0].response
    assert resp.ends == [e for k, (_, e) in enumerate(pairs) if k != 2] and resp.ends[-1] == size
    assert all(a <= b for a, b in zip(resp.times, resp.times[1:]))
    Cassette.loads(cassette.dumps())


def test_repair_rebuilds_per_event_after_a_body_edit() -> None:
    doc = orjson.loads(chat_cassette().dumps())
    response = doc["interactions"][0]["response"]
    old_times = [t for t, _ in response["chunks"]]
    response["body"][1] = response["body"][1].replace("こんにち", "Hi")
    cassette, repairs = repair(orjson.dumps(doc))
    assert "the body was edited" in repairs[0].message
    resp = cassette.interactions[0].response
    events = sse.decode(resp.chunks)
    assert len(resp.chunks) == len(events) == len(openai_chat_events())
    assert all(chunk.endswith(b"\n\n") for chunk in resp.chunks)
    assert round(resp.times[-1] * 1000, 1) == old_times[-1]
    assert {round(t * 1000, 1) for t in resp.times} <= set(old_times)
    assert '"Hi"' in events[1].data


def test_repair_leaves_good_interactions_and_refuses_other_damage() -> None:
    good = chat_cassette().dumps()
    cassette, repairs = repair(good)
    assert [r.changed for r in repairs] == [False]
    assert cassette.dumps() == good
    with pytest.raises(CassetteError, match="not valid JSON"):
        repair(b"{", "a.json")
    doc = orjson.loads(good)
    doc["interactions"][0]["response"]["status"] = "ok"
    with pytest.raises(CassetteError, match="interaction 0: response.status") as info:
        repair(orjson.dumps(doc), "a.json")
    assert info.value.path == "a.json"
    with pytest.raises(CassetteError, match="version"):
        repair(b'{"version": 7, "interactions": []}')


def test_repair_clamps_a_recorded_error_offset() -> None:
    cassette = one(
        b"data: hello world\n\n", complete=False, error={"type": "ReadError", "message": "x", "at_byte": 19}
    )
    doc = orjson.loads(cassette.dumps())
    doc["interactions"][0]["response"]["body"] = ["data: hi\n\n"]
    fixed, repairs = repair(orjson.dumps(doc))
    assert repairs[0].changed
    assert fixed.interactions[0].response.error == {"type": "ReadError", "message": "x", "at_byte": 10}
