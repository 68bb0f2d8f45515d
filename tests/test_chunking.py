"""Re-chunking strategies: only where the boundaries fall changes, never the bytes."""

from __future__ import annotations

import operator
import random
import re
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from seeded import Build, binary, seeded, sized, some, unicode_text

import ssemock
import ssemock.sse
from ssemock import chunking
from ssemock.framing import accelerator
from ssemock.variants import chunking as chunking_impl

SSE_EVENTS = [
    b'event: message_start\ndata: {"type": "message_start"}\n\n',
    'data: {"text": "こんにちは、世界！🌏"}\n\n'.encode(),
    b": ping\n\n",
    "id: 7\ndata: naïve\ndata:  two spaces\n\n".encode(),
    b"data: x\n\n",
    b"data: [DONE]\n\n",
]
SSE_BODY = b"".join(SSE_EVENTS)

STRATEGIES = [
    *chunking.ALL,
    chunking.fixed(1),
    chunking.fixed(3),
    chunking.fixed(64),
    *(chunking.random(seed) for seed in range(4)),
    chunking.random(7, 32, 8),
    chunking.random(3, 1, 0),
    chunking.per_event,
]
IDS = [c.name for c in STRATEGIES]

# bodies built from a drawn seed (tests/seeded.py, sizes as hypothesis draws them: drawn event by
# event and character by character, drawing was most of these tests' CPU, issue 48 item 4)
_value = unicode_text(12, excluded="\r\n")
_FIELDS = ["event: delta", "event: エラー", "id: 42", "retry: 1000", ": ping", "data:", "data"]


def _line(rng: random.Random) -> str:
    kind = rng.randrange(3)
    return rng.choice(_FIELDS) if kind == 2 else ("data: " if kind == 0 else "data:  ") + _value(rng)


def _event(rng: random.Random) -> str:
    return "".join(f"{_line(rng)}\n" for _ in range(rng.randint(1, 4))) + "\n"


def _events(min_size: int, max_size: int) -> Build:
    return lambda rng: [_event(rng) for _ in range(min_size + sized(rng, max_size - min_size))]


sse_bodies = seeded(lambda rng: "".join(_events(0, 6)(rng)).encode())
any_bodies = st.one_of(seeded(binary(120)), sse_bodies, seeded(unicode_text(40)).map(str.encode))


def _ends_of(chunks: list[bytes]) -> list[int]:
    out, total = [], 0
    for c in chunks:
        total += len(c)
        out.append(total)
    return out


def _lines(body: bytes) -> list[tuple[int, int]]:
    return [m.span() for m in re.finditer(rb"[^\r\n]+", body)]


def _utf8_chars(body: bytes) -> list[tuple[int, int]]:
    """Byte spans of the multi-byte characters of a UTF-8 body."""
    spans, pos = [], 0
    for ch in body.decode("utf-8"):
        n = len(ch.encode())
        if n > 1:
            spans.append((pos, pos + n))
        pos += n
    return spans


# -- every strategy keeps the bytes ----------------------------------------------------------


def _keeps_the_bytes(strategy: chunking.Chunking, body: bytes, recorded: list[int]) -> None:
    chunks = strategy(body, recorded)
    assert b"".join(chunks) == body
    assert all(chunks), chunks
    ends = strategy.ends(body, recorded)
    assert ends == _ends_of(chunks)
    assert ends == sorted(set(ends))
    assert (ends[-1] == len(body)) if body else ends == []
    assert strategy(body, recorded) == chunks  # deterministic


@settings(max_examples=60, deadline=None)
@given(body=any_bodies, rng=st.randoms(use_true_random=True))
def test_chunks_join_to_the_body_and_none_is_empty(body: bytes, rng: random.Random) -> None:
    """Every strategy on each drawn body (the failing one named): drawing was most of the CPU
    when each strategy drew its own 60 bodies (a parametrized test each); each is still checked
    on 60 bodies from the same strategy (issue 33)."""
    cuts = {rng.randint(1, max(1, len(body))) for _ in range(sized(rng, 8))}
    recorded = sorted({*cuts, len(body)}) if body else []
    for strategy in STRATEGIES:
        try:
            _keeps_the_bytes(strategy, body, recorded)
        except Exception as exc:
            exc.add_note(f"under chunking {strategy.name}")
            raise


@pytest.mark.parametrize("strategy", STRATEGIES, ids=IDS)
def test_realistic_stream_decodes_the_same_under_every_strategy(strategy: chunking.Chunking) -> None:
    chunks = strategy(SSE_BODY, [10, 57, 100, len(SSE_BODY)])
    assert b"".join(chunks) == SSE_BODY and all(chunks)
    assert ssemock.sse.decode(chunks) == ssemock.sse.decode([SSE_BODY])
    assert len(ssemock.sse.decode(chunks)) == 5


@pytest.mark.parametrize("strategy", STRATEGIES, ids=IDS)
def test_empty_body_has_no_chunks(strategy: chunking.Chunking) -> None:
    assert strategy(b"") == []
    assert strategy.ends(b"", []) == []


# -- as_recorded / bytewise / coalesced / fixed ---------------------------------------------


@settings(max_examples=100, deadline=None)
@given(seeded(lambda rng: [rng.randbytes(1 + sized(rng, 19)) for _ in range(sized(rng, 10))]))
def test_as_recorded_reproduces_the_recorded_boundaries(chunks: list[bytes]) -> None:
    body = b"".join(chunks)
    assert chunking.as_recorded(body, _ends_of(chunks)) == chunks
    assert chunking.as_recorded.ends(body, _ends_of(chunks)) == _ends_of(chunks)


def test_as_recorded_without_recorded_ends_is_one_chunk() -> None:
    assert chunking.as_recorded(b"abc") == [b"abc"]
    assert chunking.as_recorded(b"abc", []) == [b"abc"]


def test_as_recorded_normalizes_bogus_ends() -> None:
    assert chunking.as_recorded.ends(b"abcdef", [3, 1, 3, 0, 99, -2]) == [1, 3, 6]


@settings(max_examples=60, deadline=None)
@given(any_bodies)
def test_bytewise_gives_one_byte_chunks(body: bytes) -> None:
    chunks = chunking.bytewise(body)
    assert chunks == [body[i : i + 1] for i in range(len(body))]


@settings(max_examples=60, deadline=None)
@given(any_bodies)
def test_coalesced_is_one_chunk(body: bytes) -> None:
    assert chunking.coalesced(body, [1, 2, 3]) == ([body] if body else [])


@settings(max_examples=30, deadline=None)
@given(body=any_bodies)
def test_fixed_gives_n_byte_chunks(body: bytes) -> None:
    for n in [1, 2, 3, 7, 1000]:  # each size on every drawn body (was a parametrized test each)
        chunks = chunking.fixed(n)(body)
        assert chunks == [body[i : i + n] for i in range(0, len(body), n)], n
        assert chunking.fixed(n).name == f"fixed:{n}"


@pytest.mark.parametrize("n", [0, -1])
def test_fixed_rejects_sizes_below_one(n: int) -> None:
    with pytest.raises(ValueError):
        chunking.fixed(n)


# -- per_event ------------------------------------------------------------------------------


def test_per_event_gives_one_event_per_chunk() -> None:
    chunks = chunking.per_event(SSE_BODY, [3, 5])
    assert chunks == SSE_EVENTS


def test_per_event_cuts_at_the_events_of_the_framing_the_content_type_names() -> None:
    from ssemock.framing import eventstream

    lines = b'{"a": 1}\n\n{"b": 2}\n{"c": 3}\n'  # JSON lines with a blank line (the blank_lines transform)
    assert chunking.per_event(lines, content_type="application/x-ndjson") == [
        b'{"a": 1}\n',
        b"\n",
        b'{"b": 2}\n',
        b'{"c": 3}\n',
    ]
    assert chunking.per_event(lines) == [b'{"a": 1}\n\n', b'{"b": 2}\n{"c": 3}\n']  # no type: the old guess
    array = b'[{"x": [1, 2]}\n,\r\n{"y": "}\\"{"}\n]'  # brackets inside strings are not elements
    assert (
        chunking.per_event(array)
        == chunking.per_event(array, content_type="application/json")
        == [b'[{"x": [1, 2]}', b'\n,\r\n{"y": "}\\"{"}', b"\n]"]
    )
    frames = [eventstream.encode({":event-type": "e"}, b"x" * n) for n in (1, 10, 100)]
    assert chunking.per_event(b"".join(frames), content_type=eventstream.CONTENT_TYPE) == frames
    assert chunking.per_event(SSE_BODY, content_type="text/event-stream") == SSE_EVENTS
    assert chunking.bytewise.ends(array, content_type="application/json") == chunking.bytewise.ends(array)


@settings(max_examples=100, deadline=None)
@given(seeded(_events(1, 6)))
def test_per_event_property(events: list[str]) -> None:
    raw = [e.encode() for e in events]
    chunks = chunking.per_event(b"".join(raw))
    assert chunks == raw
    for chunk in chunks:
        assert len(ssemock.sse.decode([chunk])) <= 1


@pytest.mark.parametrize("sep", [b"\r\n", b"\r"])
def test_per_event_with_other_line_endings(sep: bytes) -> None:
    events = [e.replace(b"\n", sep) for e in SSE_EVENTS]
    assert chunking.per_event(b"".join(events)) == events


@settings(max_examples=300, deadline=None)
@given(seeded(some([b"a", b"\n", b"\r", b"\r\n", b"data: x"], 40)))
def test_event_ends_are_the_blank_line_matches_of_the_sse_grammar(parts: list[bytes]) -> None:
    """The fast path for ``\n``-only bodies finds the same ends as the line-ending regex."""
    body = b"".join(parts)
    reference = [m.end() for m in re.finditer(rb"(?:\r\n|\r(?!\n)|\n)(?:\r\n|\r|\n)", body)]
    assert chunking.event_ends(body, sse=True) == reference
    assert chunking.event_ends(body.replace(b"\r", b""), sse=True) == [
        m.end() for m in re.finditer(rb"\n\n", body.replace(b"\r", b""))
    ]


def test_per_event_keeps_an_unterminated_tail() -> None:
    assert chunking.per_event(b"data: a\n\ndata: b\n\ndata: par") == [
        b"data: a\n\n",
        b"data: b\n\n",
        b"data: par",
    ]


def test_per_event_on_json_lines_is_one_line_per_chunk() -> None:
    body = b'{"message": {"content": "\xe4\xb8\x96"}}\n{"done": false}\n{"done": true}\n'
    assert chunking.per_event(body) == [
        b'{"message": {"content": "\xe4\xb8\x96"}}\n',
        b'{"done": false}\n',
        b'{"done": true}\n',
    ]


# -- mid_line / mid_utf8 --------------------------------------------------------------------


def _assert_every_line_is_cut(body: bytes, ends: list[int]) -> None:
    cut = set(ends)
    for a, b in _lines(body):
        if b - a >= 2:
            assert any(a < e < b for e in cut), (body[a:b], ends)


@settings(max_examples=150, deadline=None)
@given(any_bodies)
def test_mid_line_cuts_inside_every_line(body: bytes) -> None:
    _assert_every_line_is_cut(body, chunking.mid_line.ends(body))


def test_mid_line_on_a_known_body() -> None:
    body = b"data: abcd\n\nx\nyz\n"
    ends = chunking.mid_line.ends(body)
    assert any(0 < e < 10 for e in ends)
    assert any(14 < e < 16 for e in ends)  # "yz" is cut between y and z
    assert 15 in ends


@settings(max_examples=150, deadline=None)
@given(st.one_of(sse_bodies, seeded(unicode_text(60)).map(str.encode)))
def test_mid_utf8_cuts_inside_every_multibyte_character(body: bytes) -> None:
    ends = chunking.mid_utf8.ends(body)
    cut = set(ends)
    for a, b in _utf8_chars(body):
        assert any(a < e < b for e in cut), (body[a:b], ends)
    _assert_every_line_is_cut(body, ends)  # lines without one fall back to a mid-line cut


def test_mid_utf8_splits_each_character_of_a_realistic_stream() -> None:
    chunks = chunking.mid_utf8(SSE_BODY)
    for chunk in chunks:
        if any(b >= 0x80 for b in chunk):
            with pytest.raises(UnicodeDecodeError):
                chunk.decode("utf-8")
    assert b"".join(chunks) == SSE_BODY


@settings(max_examples=100, deadline=None)
@given(st.one_of(sse_bodies, seeded(binary(60))).map(lambda b: bytes(x & 0x7F for x in b)))
def test_mid_utf8_equals_mid_line_on_ascii(body: bytes) -> None:
    assert chunking.mid_utf8(body) == chunking.mid_line(body)


# -- random ----------------------------------------------------------------------------------


def test_random_is_reproducible_and_differs_across_seeds() -> None:
    body = SSE_BODY * 4
    runs = {seed: chunking.random(seed)(body) for seed in range(6)}
    for seed, chunks in runs.items():
        assert chunking.random(seed)(body) == chunks
        assert chunking.get(f"random:{seed}")(body) == chunks
        assert b"".join(chunks) == body
    assert len({tuple(c) for c in runs.values()}) == len(runs)


@pytest.mark.parametrize("avg,var", [(16, 12), (32, 8), (5, 0), (3, 10)])
def test_random_sizes_stay_in_range(avg: int, var: int) -> None:
    body = SSE_BODY * 3
    chunks = chunking.random(11, avg, var)(body)
    lo, hi = max(1, avg - var), avg + var
    assert all(lo <= len(c) <= hi for c in chunks[:-1])
    assert 1 <= len(chunks[-1]) <= hi
    if var == 0:
        assert all(len(c) == avg for c in chunks[:-1])


@pytest.mark.parametrize("args", [(0, 0, 0), (0, 16, -1), (1, -3, 2)])
def test_random_rejects_bad_sizes(args: tuple[int, int, int]) -> None:
    with pytest.raises(ValueError):
        chunking.random(*args)


# -- names -----------------------------------------------------------------------------------


def test_all_has_the_documented_strategies() -> None:
    assert [c.name for c in chunking.ALL] == [
        "as_recorded",
        "bytewise",
        "mid_line",
        "mid_utf8",
        "coalesced",
        "per_event",
        "random:7",
    ]
    assert chunking.ALL[0] is chunking.as_recorded


@pytest.mark.parametrize("strategy", STRATEGIES, ids=IDS)
def test_names_round_trip_through_get(strategy: chunking.Chunking) -> None:
    again = chunking.get(strategy.name)
    assert again.name == strategy.name
    assert str(strategy) == strategy.name
    assert again.ends(SSE_BODY, [5, 50, len(SSE_BODY)]) == strategy.ends(SSE_BODY, [5, 50, len(SSE_BODY)])
    assert chunking.get(strategy) is strategy


@pytest.mark.parametrize(
    "name,expected",
    [
        ("mid_utf8", "mid_utf8"),
        ("fixed:3", "fixed:3"),
        ("random:7", "random:7"),
        ("random:7:32:8", "random:7:32:8"),
        ("random:7:16:12", "random:7"),
        ("random", "random:0"),
        (" mid_line ", "mid_line"),
        ("bytewise", "bytewise"),
    ],
)
def test_get_by_name(name: str, expected: str) -> None:
    assert chunking.get(name).name == expected


def test_named_singletons_are_returned() -> None:
    for c in (
        chunking.as_recorded,
        chunking.bytewise,
        chunking.mid_line,
        chunking.mid_utf8,
        chunking.coalesced,
        chunking.per_event,
    ):
        assert chunking.get(c.name) is c


def test_random_name_reflects_its_arguments() -> None:
    assert chunking.random(7, 32, 8).name == "random:7:32:8"
    assert chunking.random(7).name == "random:7"
    assert chunking.get("random:7:32:8")(SSE_BODY) == chunking.random(7, 32, 8)(SSE_BODY)
    assert chunking.get("random:7:32:8")(SSE_BODY) != chunking.random(7)(SSE_BODY)


@pytest.mark.parametrize("name", ["nope", "mid-utf8", "fixed", "fixed:1:2", "random:1:2", "mid_line:3", ""])
def test_get_unknown_name_lists_the_known_ones(name: str) -> None:
    with pytest.raises(ValueError) as info:
        chunking.get(name)
    msg = str(info.value)
    assert repr(name) in msg
    for known in (
        "as_recorded",
        "bytewise",
        "mid_line",
        "mid_utf8",
        "coalesced",
        "per_event",
        "fixed",
        "random",
    ):
        assert known in msg


@pytest.mark.parametrize("name", ["fixed:0", "fixed:-2", "fixed:x", "random:x", "random:1:0:0"])
def test_get_bad_arguments_raise_value_error_naming_the_spec(name: str) -> None:
    with pytest.raises(ValueError, match=re.escape(repr(name))):
        chunking.get(name)


def test_get_fixed_zero_lists_the_known_names() -> None:
    with pytest.raises(ValueError, match="mid_utf8"):
        chunking.get("fixed:0")


def test_resolve() -> None:
    assert [c.name for c in chunking.resolve("all")] == [c.name for c in chunking.ALL]
    assert chunking.resolve("all") == list(chunking.ALL)
    assert [c.name for c in chunking.resolve("mid_line,fixed:2")] == ["mid_line", "fixed:2"]
    assert [c.name for c in chunking.resolve(" mid_line , fixed:2 ,")] == ["mid_line", "fixed:2"]
    assert chunking.resolve(None) == [chunking.as_recorded]
    assert chunking.resolve("bytewise") == [chunking.bytewise]
    assert chunking.resolve(chunking.fixed(5))[0].name == "fixed:5"
    assert [c.name for c in chunking.resolve(["bytewise", chunking.fixed(4), "random:1,mid_utf8"])] == [
        "bytewise",
        "fixed:4",
        "random:1",
        "mid_utf8",
    ]
    with pytest.raises(ValueError, match="nope"):
        chunking.resolve("mid_line,nope")


def test_chunking_is_reachable_from_the_package() -> None:
    assert ssemock.chunking is chunking
    assert ssemock.chunking.get("mid_utf8") is ssemock.chunking.mid_utf8


def test_per_event_framing_matches_the_decoder_on_mixed_blank_lines() -> None:
    """A blank line may be LF, CR or CRLF after any line ending (found by the conformance work)."""
    from ssemock import sse

    body = b"data: d\n\rdata: e\r\n\rdata: f\n\ndata: g\r\n\r\ndata: h\r\r"
    chunks = chunking.per_event(body)
    assert [len(sse.decode([c])) for c in chunks] == [1, 1, 1, 1, 1]


def test_resolve_keeps_the_offsets_of_an_at_name_together() -> None:
    """A comma splits names, not the offsets of ``at:`` (as --ssemock-chunking passes them)."""
    assert chunking.resolve("coalesced,at:17,40") == [chunking.coalesced, chunking.at(17, 40)]
    assert [c.name for c in chunking.resolve("at:3, 9,random:1,")] == ["at:3,9", "random:1"]


# -- lazy ends for fixed-size chunkings -------------------------------------------------------


@pytest.mark.parametrize("size, step", [(0, 1), (1, 1), (7, 1), (7, 3), (9, 3), (5, 8)])
def test_regular_ends_behave_as_the_list_they_stand_for(size: int, step: int) -> None:
    body = bytes(range(size))
    want = chunking.fixed(step).ends(body)
    got = chunking.fixed(step).lazy_ends(body)
    assert got == want and want == got and list(got) == want and len(got) == len(want)
    assert [got[i] for i in range(-len(want), len(want))] == want + want
    assert got[1:-1] == want[1:-1] and got[::2] == want[::2]
    assert all(e in got for e in want) and 0 not in got and size + 1 not in got
    with pytest.raises(IndexError):
        got[len(want)]
    slices = chunking.Slices(body, got)
    assert slices == chunking.fixed(step)(body) and list(slices) == chunking.fixed(step)(body)
    assert [slices[i] for i in range(len(slices))] == chunking.fixed(step)(body)


def test_lazy_ends_of_other_chunkings_are_their_lists() -> None:
    for strategy in (chunking.as_recorded, chunking.mid_line, chunking.per_event, chunking.random(3)):
        assert strategy.lazy_ends(SSE_BODY) == strategy.ends(SSE_BODY)
    assert (
        chunking.bytewise.lazy_ends(SSE_BODY)
        == chunking.bytewise.ends(SSE_BODY)
        == list(range(1, len(SSE_BODY) + 1))
    )
    assert chunking.bytewise.lazy_ends(SSE_BODY) != [1, 2]
    assert chunking.bytewise.lazy_ends(b"") == []


def _pure_iterate(slices: chunking.Slices) -> tuple[list[bytes], list[int]]:
    """The chunks ``Slices.iterate`` gives without the accelerator, and what is left after each."""
    with pytest.MonkeyPatch.context() as m:
        m.setattr(chunking_impl, "_c_slices", None)
        chunks, left = slices.iterate()
    return _each(chunks, left)


def _each(chunks: Iterator[bytes], left: Iterator[object]) -> tuple[list[bytes], list[int]]:
    got, hints = [], [operator.length_hint(left)]
    for chunk in chunks:
        got.append(chunk)
        hints.append(operator.length_hint(left))
    return got, hints


@settings(max_examples=300, deadline=None)
@given(
    st.binary(max_size=40),
    st.one_of(
        st.lists(st.integers(-50, 50), max_size=12),  # any list: unsorted, negative, past the end
        st.lists(st.integers(0, 40), max_size=12).map(sorted),
        st.tuples(st.integers(1, 9), st.integers(0, 60)),  # Regular(step, size), size apart from the body's
    ),
)
def test_the_accelerator_cuts_the_chunks_the_pure_slicing_cuts(body: bytes, ends: object) -> None:
    """``Slices.iterate`` through the accelerator (one C step a chunk) gives the chunks, and the
    count left after each, that the pure maps over slice objects give, for any list of ends (as
    Python slices them: negative, unsorted, past the end) and any `Regular` ends."""
    cut = chunking.Regular(*ends) if isinstance(ends, tuple) else ends
    slices = chunking.Slices(body, cut)  # type: ignore[arg-type]
    assert accelerator.slices is not None  # the install builds it
    assert _each(*slices.iterate()) == _pure_iterate(slices)


def test_the_accelerator_slices_as_python_does_where_an_end_is_no_small_int() -> None:
    assert accelerator.slices is not None
    huge = 1 << 70
    assert list(accelerator.slices(b"abcdef", [2, huge, -huge, 4])) == [b"ab", b"cdef", b"", b"abcd"]
    whole = b"x" * 100
    assert next(accelerator.slices(whole, [100])) is whole  # as body[0:len(body)] is
    with pytest.raises(TypeError):  # as b"abc"[0:"2"] raises
        next(accelerator.slices(b"abc", ["2"]))  # type: ignore[list-item]
    with pytest.raises(TypeError, match="slices"):
        accelerator.slices(bytearray(b"abc"), [1])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="step"):
        accelerator.slices(b"abc", 0, 3)


def test_slices_hand_out_each_chunk_once_and_count_what_is_left() -> None:
    for ends in (chunking.Regular(4, 10), [3, 4, 10]):
        chunks, left = chunking.Slices(b"0123456789", ends).iterate()
        assert operator.length_hint(left) == len(ends)
        first = next(chunks)
        assert first == b"0123456789"[: ends[0]] and operator.length_hint(left) == len(ends) - 1
        assert b"".join([first, *chunks]) == b"0123456789" and operator.length_hint(left) == 0
