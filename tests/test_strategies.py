"""Hypothesis chunkings that shrink to the fewest boundaries, and the failing-split minimiser."""

from __future__ import annotations

import math
import subprocess
import sys
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, find, given, settings

from ssemock import chunking, strategies
from ssemock.sse import decode
from ssemock.strategies import (
    At,
    at,
    chunkings,
    describe_boundary,
    minimal_failing_split,
)

BODY = 'data: {"t": "héllo 世界 😀"}\n\nevent: done\ndata: [DONE]\n\n'.encode()
WANT = [e.data for e in decode([BODY])]

QUIET = settings(database=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])


def naive(chunks: list[bytes]) -> list[str]:
    """Buffers text, but decodes each chunk on its own: breaks on a split multi-byte character."""
    buf, out = "", []
    for chunk in chunks:
        buf += chunk.decode()
        while "\n\n" in buf:
            block, buf = buf.split("\n\n", 1)
            out.append("\n".join(line[6:] for line in block.split("\n") if line.startswith("data: ")))
    return out


def per_chunk(chunks: list[bytes]) -> list[str]:
    """Assumes every chunk holds whole lines."""
    return [
        line[6:]
        for chunk in chunks
        for line in chunk.decode("utf-8", "replace").split("\n")
        if line.startswith("data: ")
    ]


def broken_by(decoder: Callable[[list[bytes]], list[str]], body: bytes) -> Callable[[list[bytes]], bool]:
    want = [e.data for e in decode([body])]

    def fails(chunks: list[bytes]) -> bool:
        try:
            return decoder(chunks) != want
        except UnicodeDecodeError:
            return True

    return fails


# -- At, at(), get() --------------------------------------------------------------------------------


def test_at_names_and_cuts() -> None:
    c = at(1043, 17, 17)
    assert isinstance(c, chunking.Chunking) and isinstance(c, At)
    assert c.name == str(c) == "at:17,1043" and c.boundaries == (17, 1043)
    assert at(3, 9)(b"0123456789ab") == [b"012", b"345678", b"9ab"]
    assert at(3, 99)(b"0123456") == [b"012", b"3456"]  # boundaries past the end are ignored
    assert at()(b"abc") == [b"abc"] and at().name == "at:"
    assert chunking.get(c) is c


def test_get_parses_at_names() -> None:
    assert strategies.get("at:17,1043") == at(17, 1043)
    assert strategies.get("at:") == at()
    assert strategies.get("fixed:3").name == "fixed:3"
    assert strategies.get(" bytewise") is chunking.bytewise
    with pytest.raises(ValueError, match="comma-separated"):
        strategies.get("at:1,x")
    assert hash(at(1, 2)) == hash(strategies.get("at:2,1"))


def test_importing_ssemock_strategies_does_not_import_hypothesis() -> None:
    code = "import sys, ssemock.strategies, ssemock.conformance; assert 'hypothesis' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


# -- chunkings() ----------------------------------------------------------------------------------------


@given(chunkings(BODY))
@settings(max_examples=60, database=None)
def test_drawn_chunkings_are_valid_and_named_by_their_boundaries(c: At) -> None:
    assert all(0 < b < len(BODY) for b in c.boundaries)
    assert list(c.boundaries) == sorted(set(c.boundaries))
    assert strategies.get(c.name) == c
    chunks = c(BODY)
    assert b"".join(chunks) == BODY and len(chunks) == len(c.boundaries) + 1
    assert [e.data for e in decode(chunks)] == WANT  # the reference is chunk-invariant


@given(chunkings(BODY, max_boundaries=2))
@settings(max_examples=30, database=None)
def test_max_boundaries(c: At) -> None:
    assert len(c.boundaries) <= 2


def test_tiny_bodies_have_one_chunking() -> None:
    assert find(chunkings(b"x"), lambda c: True) == at()
    assert find(chunkings(BODY, max_boundaries=0), lambda c: True) == at()


def test_find_shrinks_a_buggy_decoder_to_one_boundary() -> None:
    fails = broken_by(naive, BODY)
    found = find(chunkings(BODY), lambda c: fails(c(BODY)), settings=QUIET)
    assert len(found.boundaries) == 1
    assert "inside 'é'" in describe_boundary(BODY, found.boundaries[0])  # the first multi-byte character


def test_given_test_failure_shrinks_to_one_boundary() -> None:
    seen: list[At] = []

    @given(chunkings(BODY))
    @settings(max_examples=200, database=None, derandomize=True, report_multiple_bugs=False)
    def test_my_decoder(c: At) -> None:
        seen.append(c)
        assert per_chunk(c(BODY)) == WANT

    with pytest.raises(AssertionError):
        test_my_decoder()
    shrunk = seen[-1]  # hypothesis replays the minimal failing example last
    assert per_chunk(shrunk(BODY)) != WANT
    assert len(shrunk.boundaries) == 1 and shrunk.name == f"at:{shrunk.boundaries[0]}"


# -- minimal_failing_split ------------------------------------------------------------------------------------


LONG = b"".join(f'data: {{"i": {i}, "text": "ok"}}\n\n'.encode() for i in range(60))
LONG += 'data: {"text": "世界"}\n\n'.encode() + b"data: [DONE]\n\n"


def test_naive_decoder_under_bytewise_shrinks_to_the_split_character() -> None:
    calls = 0
    fails = broken_by(naive, LONG)

    def counted(chunks: list[bytes]) -> bool:
        nonlocal calls
        calls += 1
        return fails(chunks)

    result = minimal_failing_split(LONG, counted)  # default: bytewise
    assert len(result.boundaries) == 1
    (b,) = result.boundaries
    start = LONG.index("世".encode())
    assert start < b < start + 6  # inside 世 or 界
    assert result.ends == [b, len(LONG)]
    assert result.calls == calls <= 4 * math.ceil(math.log2(len(LONG))) + 4
    assert f"fails when a boundary falls at byte {b} (inside '" in result.explanation
    assert "a 3-byte character" in result.explanation and "event 60" in result.explanation
    assert 'line \'data: {"text": "世界"}\'' in result.explanation
    assert result.explanation.endswith("passes with that boundary alone removed")
    assert fails(result.chunks(LONG)) and not fails([LONG])


def test_per_chunk_decoder_shrinks_into_the_data_prefix() -> None:
    body = b"data: a\n\ndata: b\n\n"
    result = minimal_failing_split(body, broken_by(per_chunk, body), chunking.bytewise.ends(body))
    assert result.boundaries == [1]
    assert result.explanation == (
        "fails when a boundary falls at byte 1 (inside the 'data: ' prefix (after 'd'), event 0, line 'data: a'); "
        "passes with that boundary alone removed"
    )


def test_two_boundaries_needed() -> None:
    body = bytes(range(32, 127))

    def fails(chunks: list[bytes]) -> bool:  # only when both 10 and 50 are boundaries
        ends = {sum(map(len, chunks[:i])) for i in range(1, len(chunks))}
        return {10, 50} <= ends

    result = minimal_failing_split(body, fails, range(1, len(body) + 1))
    assert result.boundaries == [10, 50]
    assert result.explanation.startswith("fails when boundaries fall at bytes 10 (")
    assert result.explanation.endswith("passes with any one of them alone removed")
    assert result.calls <= 4 * 2 * math.ceil(math.log2(len(body))) + 8


def test_failing_without_any_boundary() -> None:
    body = b"data: x\r\n\r\n"
    result = minimal_failing_split(body, broken_by(naive, body))
    assert result.boundaries == [] and result.ends == [len(body)]
    assert "does not depend on chunking" in result.explanation


def test_value_error_when_the_split_does_not_fail() -> None:
    with pytest.raises(ValueError, match="does not fail"):
        minimal_failing_split(LONG, broken_by(naive, LONG), [len(LONG)])
    with pytest.raises(ValueError, match="does not fail"):
        minimal_failing_split(b"data: a\n\n", broken_by(naive, b"data: a\n\n"))


@pytest.mark.parametrize(
    ("body", "at_byte", "words"),
    [
        ("data: 😀\n\n".encode(), 8, "inside '😀' (U+1F600, a 4-byte character, after its byte 2), event 0"),
        ("data: é\n\n".encode(), 7, "inside 'é' (U+00E9, a 2-byte character, after its byte 1)"),
        (b"data: a\r\n\r\n", 8, "between the CR and LF of a CRLF line ending, event 0, line 'data: a'"),
        (b"data: a\r\n\r\n", 10, "between the CR and LF of a blank line's CRLF (the end of event 0)"),
        (b"\xef\xbb\xbfdata: a\n\n", 2, "inside the leading BOM"),
        (
            b"event: x\ndata: a\n\n",
            3,
            "inside the field name 'event' (after 'eve'), event 0, line 'event: x'",
        ),
        (b"event: x\ndata: a\n\n", 6, "between 'event:' and its space"),
        (b"event: x\ndata: a\n\n", 13, "inside the 'data: ' prefix (after 'data')"),
        (b"data: a\n\ndata: bc\n\n", 16, "inside the value of the 'data' field (after byte 1 of 2), event 1"),
        (b"data: a\n\n: ping\n\n", 11, "inside a comment line, event 1, line ': ping'"),
        (b"data: a\n\ndata: b\n\n", 8, "at the start of a blank line (the end of event 0)"),
        (b"data: a\n\ndata: b\n\n", 9, "at the start of a line, event 1"),
        (b"data:" + b"x" * 40 + b"\n\n", 10, "line 'data:xxxxxxxxxxxxxxx...'"),
    ],
)
def test_describe_boundary(body: bytes, at_byte: int, words: str) -> None:
    assert words in describe_boundary(body, at_byte)
