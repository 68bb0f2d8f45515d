"""Every transform on every framing (from the registries): it keeps the events a conforming
decoder yields and carries the chunk ends, or it is skipped with its reason; and the variants
real servers write for JSON arrays and JSON lines."""

from __future__ import annotations

import orjson
import pytest

import ssemock
from ssemock import framing, transforms

CELLS = [(t, f) for t in transforms.ALL for f in framing.all_framings()]


def _example(f: framing.Framing) -> tuple[str, bytes]:
    assert f.example is not None, f"framing {f.name} has no example body"
    return f.example


@pytest.mark.parametrize("transform, framed", CELLS, ids=[f"{t}-{f.name}" for t, f in CELLS])
def test_a_transform_keeps_the_events_or_says_why_it_is_skipped(
    transform: transforms.Transform, framed: framing.Framing
) -> None:
    content_type, body = _example(framed)
    kind = transforms.kind_of(content_type, body)
    ends = framed.event_ends(body)
    new, new_ends = transforms.apply([transform], body, ends, kind=kind)
    why = transforms.skipped_because(transform, body, kind)
    if why is not None:  # never a silent no-op: the reason names the transform and what it lacks
        assert str(transform) in why and (new, new_ends) == (body, ends)
        return
    assert new != body
    assert _events(framed, new) == _events(framed, body)
    assert len(new_ends) == len(ends) and new_ends == sorted(new_ends) and new_ends[-1] <= len(new)


def _events(framed: framing.Framing, body: bytes) -> list[object]:
    """What a conforming client yields (an SSE event's type and data: ``ids`` adds ids)."""
    return [
        (e.event, e.data) if isinstance(e, ssemock.sse.ServerSentEvent) else e for e in framed.decode(body)
    ]


ARRAY = b'[{"a": 1, "b": [1, 2]}\n,\r\n{"a": "\\u00e9"}\n]'


@pytest.mark.parametrize(
    "name, want",
    [
        ("compact", b'[{"a":1,"b":[1,2]},{"a":"\xc3\xa9"}]'),
        ("pretty", b'[\n{\n  "a": 1,\n  "b": [\n    1,\n    2\n  ]\n},\n{\n  "a": "\xc3\xa9"\n}\n]'),
        ("bracket_lines", b'[\n{"a": 1, "b": [1, 2]}\n,\r\n{"a": "\\u00e9"}\n]'),
        ("crlf", b'[{"a": 1, "b": [1, 2]}\r\n,\r\n{"a": "\\u00e9"}\r\n]'),
        ("cr", b'[{"a": 1, "b": [1, 2]}\r,\r{"a": "\\u00e9"}\r]'),
    ],
)
def test_json_array_variants_real_servers_write(name: str, want: bytes) -> None:
    got = transforms.get(name)(ARRAY, "json_array")
    assert got == want
    assert framing.get("json_array").decode(got) == framing.get("json_array").decode(ARRAY)
    assert orjson.loads(got) == orjson.loads(ARRAY)  # still one valid JSON document


LINES = b'{"n": 1}\n{"n": 2}\n{"n": 3, "done": true}\n'


@pytest.mark.parametrize(
    "name, want",
    [
        ("cr", b'{"n": 1}\r{"n": 2}\r{"n": 3, "done": true}\r'),
        ("no_final_newline", b'{"n": 1}\n{"n": 2}\n{"n": 3, "done": true}'),
        ("crlf", b'{"n": 1}\r\n{"n": 2}\r\n{"n": 3, "done": true}\r\n'),
        ("blank_lines", b'{"n": 1}\n\n{"n": 2}\n\n{"n": 3, "done": true}\n\n'),
    ],
)
def test_json_lines_variants(name: str, want: bytes) -> None:
    got = transforms.get(name)(LINES, "ndjson")
    assert got == want
    assert ssemock.ndjson.decode([got]) == ssemock.ndjson.decode([LINES])


def test_a_transformed_json_array_replays_through_a_client_and_the_reference_agrees() -> None:
    import httpx

    cassette = ssemock.Cassette()
    cassette.add(
        "POST",
        "https://generativelanguage.googleapis.com/v1beta/models/m:streamGenerateContent",
        [ARRAY[:9], ARRAY[9:]],
        headers={"content-type": "application/json"},
    )
    for name in ("compact", "pretty", "bracket_lines"):
        with ssemock.replay(cassette, transform=name) as player, httpx.Client() as client:
            body = client.post(cassette.interactions[0].request.url).content
            assert body == transforms.get(name)(ARRAY, "json_array")
            assert player.expected.events == [{"a": 1, "b": [1, 2]}, {"a": "é"}]


def test_the_plugin_skips_a_transform_with_no_meaning_and_says_why(pytester: pytest.Pytester) -> None:
    cassette = ssemock.Cassette()
    cassette.add(
        "POST", "https://ollama.test/api/chat", [LINES], headers={"content-type": "application/x-ndjson"}
    )
    (pytester.path / "cassettes" / "test_x").mkdir(parents=True)
    cassette.save(pytester.path / "cassettes" / "test_x" / "test_lines.json")
    pytester.makepyfile(
        test_x="""
        import httpx, pytest

        @pytest.mark.ssemock(transform="keepalive,cr")
        def test_lines(ssemock):
            httpx.post("https://ollama.test/api/chat").read()
    """
    )
    result = pytester.runpytest_inprocess("-p", "no:randomly", "-rs")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["*keepalive has no meaning for ndjson (it rewrites sse)*"])
