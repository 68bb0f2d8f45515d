"""Transforms change the bytes of an SSE body but never the events a conforming decoder yields."""

from __future__ import annotations

import itertools
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ssemock
import ssemock.sse
from ssemock import chunking, transforms

decode = ssemock.sse.decode

BODY = b"".join(
    [
        b'event: message_start\ndata: {"type": "message_start"}\n\n',
        'data: {"text": "こんにちは、世界！🌏"}\n\n'.encode(),
        b": ping\n\n",
        b"id: 7\ndata: line one\ndata:  leading space\ndata:\n\n",
        b"retry: 1500\nevent: done\ndata: [DONE]\n\n",
    ]
)

CHAINS = [
    "crlf",
    "cr",
    "keepalive",
    "keepalive:: OPENROUTER PROCESSING",
    "no_space",
    "crlf+keepalive",
    "cr+keepalive",
    "keepalive+no_space",
    "no_space+crlf",
    "crlf+no_space+keepalive:: x",
    "cr+crlf",
    "crlf+cr",
    "keepalive+keepalive",
]

_value_chars = st.characters(exclude_characters="\r\n", exclude_categories=("Cs",))
_value = st.one_of(
    st.text(_value_chars, max_size=10), st.sampled_from(["世界", "🌏 x", " ", "", "a: b", ":"])
)
_line = st.one_of(
    _value.map(lambda v: f"data: {v}"),
    _value.map(lambda v: f"data:  {v}"),
    _value.map(lambda v: f"data:{v}"),
    _value.map(lambda v: f"event: {v}"),
    _value.map(lambda v: f"id: {v}"),
    _value.map(lambda v: f": {v}"),
    st.sampled_from(
        ["retry: 1000", "retry: x", "data", "event", "id:", "unknown: field", "data:  ", "data: "]
    ),
)
_event = st.lists(_line, min_size=1, max_size=4)


@st.composite
def sse_bodies(draw: st.DrawFn, mixed_endings: bool = True) -> bytes:
    events = draw(st.lists(_event, max_size=5))
    newline = st.sampled_from(["\n", "\r\n", "\r"]) if mixed_endings else st.just("\n")
    out = []
    for lines in events:
        for line in [*lines, ""]:
            out.append(line + draw(newline))
    if draw(st.booleans()):  # an unterminated last event
        out.append(draw(_line))
    return "".join(out).encode()


@st.composite
def body_and_ends(draw: st.DrawFn, mixed_endings: bool = True) -> tuple[bytes, list[int]]:
    body = draw(sse_bodies(mixed_endings))
    if not body:
        return body, []
    cuts = draw(st.sets(st.integers(1, len(body)), max_size=10))
    return body, sorted({*cuts, len(body)})


def _cut(body: bytes, ends: list[int]) -> list[bytes]:
    starts = [0, *ends]
    return [body[a:b] for a, b in zip(starts, ends)]


def _check(spec: str, body: bytes, ends: list[int]) -> tuple[bytes, list[int]]:
    new_body, new_ends = transforms.apply(transforms.resolve(spec), body, ends)
    assert decode([new_body]) == decode([body])
    assert len(new_ends) == len(ends)
    assert all(a <= b for a, b in itertools.pairwise(new_ends)), new_ends
    if ends:
        assert new_ends[-1] == len(new_body)
        assert new_ends[0] >= 0
        # decoded chunk by chunk, the new stream completes the same events at the same chunk
        assert _events_per_chunk(_cut(new_body, new_ends)) == _events_per_chunk(_cut(body, ends))
    return new_body, new_ends


def _events_per_chunk(chunks: list[bytes]) -> list[int]:
    decoder = ssemock.sse.Decoder()
    counts = [len(decoder.feed(c)) for c in chunks]
    counts[-1] += len(decoder.close())
    return counts


@pytest.mark.parametrize("spec", CHAINS)
def test_realistic_body_decodes_the_same(spec: str) -> None:
    ends = [3, 40, 41, 60, 100, len(BODY)]
    new_body, _ = _check(spec, BODY, ends)
    assert new_body != BODY
    assert len(decode([new_body])) == 4


def _under_each(specs: list[str], check: Callable[[str], object]) -> None:
    """``check`` of every spec on one drawn example, the failing spec named in the error. The
    properties below draw each example once for all their specs: drawing it was ~97% of their
    CPU when each spec drew its own (a parametrized test per spec); every spec is still checked on
    as many examples, drawn from the same strategy (issue 33)."""
    for spec in specs:
        try:
            check(spec)
        except Exception as exc:
            exc.add_note(f"under transform {spec!r}")
            raise


@settings(max_examples=60, deadline=None)
@given(case=body_and_ends())
def test_transforms_preserve_events_property(case: tuple[bytes, list[int]]) -> None:
    _under_each(CHAINS, lambda spec: _check(spec, *case))


@pytest.mark.parametrize("strategy", ["bytewise", "mid_utf8", "per_event", "random:3", "coalesced"])
@pytest.mark.parametrize("spec", ["crlf", "cr", "keepalive", "no_space", "crlf+keepalive"])
def test_transforms_under_rechunked_ends(strategy: str, spec: str) -> None:
    ends = chunking.get(strategy).ends(BODY)
    _check(spec, BODY, ends)


# -- what each transform does to the bytes ---------------------------------------------------


def test_crlf_rewrites_every_line_ending() -> None:
    src = b"data: a\n\ndata: b\r\rdata: c\r\n\r\n"
    body, ends = transforms.apply([transforms.crlf], src, [20, len(src)])
    assert body == b"data: a\r\n\r\ndata: b\r\n\r\ndata: c\r\n\r\n"
    assert ends[-1] == len(body)


def test_cr_rewrites_every_line_ending() -> None:
    src = b"data: a\n\ndata: b\r\n\r\n"
    body, _ = transforms.apply([transforms.cr], src, [len(src)])
    assert body == b"data: a\r\rdata: b\r\r"


def test_keepalive_inserts_a_comment_before_every_event() -> None:
    body, _ = transforms.apply([transforms.keepalive()], b"data: a\n\ndata: b\n\n", [18])
    assert body == b": ping\n\ndata: a\n\n: ping\n\ndata: b\n\n"
    body, _ = transforms.apply([transforms.keepalive(": OPENROUTER PROCESSING")], b"data: a\r\n\r\n", [11])
    assert body == b": OPENROUTER PROCESSING\r\n\r\ndata: a\r\n\r\n"


def test_no_space_removes_the_optional_space_only() -> None:
    src = b"event: x\ndata: a b\ndata:  two\n: comment\nid: 1\ndata: \n\n"
    body, _ = transforms.apply([transforms.no_space], src, [len(src)])
    assert body == b"event:x\ndata:a b\ndata:  two\n: comment\nid:1\ndata:\n\n"
    assert decode([body]) == [ssemock.sse.ServerSentEvent("x", "a b\n two\n", "1", None)]


def test_no_space_after_cr_line_endings() -> None:
    body, _ = transforms.apply(transforms.resolve("cr+no_space"), b"event: a\ndata: x\n\n", [18])
    assert body == b"event:a\rdata:x\r\r"


def test_keepalive_keeps_a_leading_bom_first() -> None:
    body = "\ufeffdata: x\n\n".encode()
    _check("keepalive", body, [len(body)])


def test_ends_are_carried_over_per_event() -> None:
    body = b"data: a\n\ndata: b\n\n"
    new_body, new_ends = transforms.apply([transforms.crlf], body, [9, 18])
    assert new_ends == [11, 22] == [new_body.index(b"data: b"), len(new_body)]
    new_body, new_ends = transforms.apply([transforms.keepalive()], body, [4, 9, 18])
    assert new_body[: new_ends[1]] == b": ping\n\ndata: a\n\n"
    assert new_ends[0] == len(b": ping\n\ndata")


def test_no_ends_and_empty_body() -> None:
    assert transforms.apply([transforms.crlf], b"", []) == (b"", [])
    assert transforms.apply([], BODY, [5, len(BODY)]) == (BODY, [5, len(BODY)])


# -- names -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name,expected",
    [
        ("crlf", "crlf"),
        ("cr", "cr"),
        ("no_space", "no_space"),
        ("keepalive", "keepalive"),
        ("keepalive:ping", "keepalive"),
        ("keepalive:: ping", "keepalive"),
        ("keepalive:: OPENROUTER PROCESSING", "keepalive:: OPENROUTER PROCESSING"),
        ("keepalive:OPENROUTER PROCESSING", "keepalive:: OPENROUTER PROCESSING"),
    ],
)
def test_get_by_name(name: str, expected: str) -> None:
    t = transforms.get(name)
    assert t.name == expected == str(t)
    assert transforms.get(t.name).name == t.name
    assert transforms.get(t) is t


def test_named_singletons() -> None:
    assert transforms.get("crlf") is transforms.crlf
    assert transforms.get("cr") is transforms.cr
    assert transforms.get("no_space") is transforms.no_space
    assert transforms.keepalive().name == "keepalive"
    assert transforms.keepalive(": OPENROUTER PROCESSING").name == "keepalive:: OPENROUTER PROCESSING"


def test_keepalive_comment_is_used() -> None:
    t = transforms.get("keepalive:: OPENROUTER PROCESSING")
    body, _ = transforms.apply([t], b"data: a\n\n", [9])
    assert body.startswith(b": OPENROUTER PROCESSING\n\n")


@pytest.mark.parametrize("name", ["nope", "CRLF", "lf", "crlf:2", ""])
def test_get_unknown_name(name: str) -> None:
    with pytest.raises(ValueError) as info:
        transforms.get(name)
    for known in ("crlf", "cr", "no_space", "keepalive"):
        assert known in str(info.value)


def test_resolve() -> None:
    assert transforms.resolve(None) == []
    assert [t.name for t in transforms.resolve("crlf+keepalive")] == ["crlf", "keepalive"]
    assert transforms.resolve("cr") == [transforms.cr]
    assert transforms.resolve(transforms.no_space) == [transforms.no_space]
    assert [t.name for t in transforms.resolve(["crlf", transforms.keepalive(": x"), "cr+no_space"])] == [
        "crlf",
        "keepalive:: x",
        "cr",
        "no_space",
    ]
    with pytest.raises(ValueError):
        transforms.resolve("crlf+bogus")


@pytest.mark.parametrize("comment", ["ping", "data: x", " : ping", ": a\nb", ": a\rb", ""])
def test_keepalive_rejects_a_non_comment(comment: str) -> None:
    with pytest.raises(ValueError, match="comment"):
        transforms.keepalive(comment)


def test_transforms_are_reachable_from_the_package() -> None:
    assert ssemock.transforms is transforms


# -- the wider set: metadata blocks, comments, mixed endings, raw unicode, padding --------------

EVERY = [
    "mixed",
    "comments",
    "ids",
    "meta",
    "retry",
    "pad",
    "pad:7",
    "keepalive::",
    "raw_unicode",
    "mixed+meta+comments",
    "raw_unicode+mixed+pad",
    "ids+crlf",
    "meta+cr",
]
_json_text = st.text(st.sampled_from(list('ab \u2028\u2029\u0085\\"é世')), max_size=8)
_json_line = _json_text.map(lambda t: "data: " + __import__("json").dumps({"t": t}))
_escaped_line = st.sampled_from(
    [
        'data: {"t": "a\\u2028b"}',
        'data: {"t": "\\\\u2029"}',
        'data: {"t": "\\u0085"}',
        'data: "\\u2029"',
        'data: {"t": "\\\\\\u2028"}',
        "data: not json \\u2028",
    ]
)


@st.composite
def rich_bodies(draw: st.DrawFn) -> tuple[bytes, list[int]]:
    """SSE bodies with JSON data (escaped and raw line-separator characters), ids, comments,
    blank-line-only blocks, a BOM at the start or inside, and chunk ends anywhere."""
    events = draw(
        st.lists(st.lists(st.one_of(_line, _json_line, _escaped_line), min_size=1, max_size=3), max_size=5)
    )
    nl = st.sampled_from(["\n", "\r\n", "\r"])
    out = ["\ufeff"] if draw(st.booleans()) else []
    for lines in events:
        if draw(st.integers(0, 6)) == 0:
            out.append("\ufeffdata: x" + draw(nl))  # a BOM mid-stream is part of a field name
        out.extend(line + draw(nl) for line in [*lines, ""])
        if draw(st.integers(0, 6)) == 0:
            out.append(draw(nl))  # an extra blank line
    if draw(st.booleans()):
        out.append(draw(st.one_of(_line, _json_line)))
    body = "".join(out).encode()
    cuts = draw(st.sets(st.integers(1, max(len(body), 1)), max_size=12)) if body else set()
    return body, sorted({*cuts, len(body)} - {0})


def _same(spec: str, before: list[ssemock.ServerSentEvent], after: list[ssemock.ServerSentEvent]) -> None:
    """What each transform keeps: every event as it was; ``ids`` the types and data (ids are
    new), ``raw_unicode`` the JSON value of each data."""
    import json

    assert len(after) == len(before)
    for a, b in zip(after, before):
        assert (a.event, a.retry) == (b.event, b.retry)
        if "ids" not in spec:
            assert a.id == b.id
        if "raw_unicode" in spec and a.data != b.data:
            assert json.loads(a.data) == json.loads(b.data)
        else:
            assert a.data == b.data


def _keeps_the_events(spec: str, body: bytes, ends: list[int]) -> None:
    new_body, new_ends = transforms.apply(transforms.resolve(spec), body, ends)
    _same(spec, decode([body]), decode([new_body]))
    assert len(new_ends) == len(ends)
    assert all(a <= b for a, b in itertools.pairwise(new_ends))
    if ends:
        assert new_ends[-1] == len(new_body)
        assert _events_per_chunk(_cut(new_body, new_ends)) == _events_per_chunk(_cut(body, ends))


@settings(max_examples=80, deadline=None)
@given(case=rich_bodies())
def test_every_transform_keeps_the_events_property(case: tuple[bytes, list[int]]) -> None:
    _under_each(EVERY + CHAINS[:5], lambda spec: _keeps_the_events(spec, *case))


@settings(max_examples=80, deadline=None)
@given(
    objects=st.lists(st.dictionaries(st.sampled_from(["a", "t"]), _json_text), min_size=1, max_size=6),
    data=st.data(),
)
def test_json_lines_transforms_keep_the_objects_property(
    objects: list[dict[str, str]], data: st.DataObject
) -> None:
    import json

    body = "".join(json.dumps(o) + "\n" for o in objects).encode()
    ends = sorted({*data.draw(st.sets(st.integers(1, len(body)), max_size=8)), len(body)})

    def keeps_the_objects(spec: str) -> None:
        new_body, new_ends = transforms.apply(transforms.resolve(spec), body, ends, kind="ndjson")
        assert ssemock.ndjson.decode(_cut(new_body, new_ends)) == objects
        assert new_ends[-1] == len(new_body) and len(new_ends) == len(ends)

    _under_each(["crlf", "blank_lines", "raw_unicode", "crlf+blank_lines+raw_unicode"], keeps_the_objects)


def test_mixed_varies_line_endings_per_event() -> None:
    body = b"".join(b"data: %d\ndata: x\n\n" % i for i in range(4))
    new = transforms.mixed(body)
    assert new == (
        b"data: 0\ndata: x\n\r\ndata: 1\r\ndata: x\r\n\ndata: 2\ndata: x\n\rdata: 3\r\ndata: x\r\n\r"
    )
    assert decode([new]) == decode([body])


def test_comments_rotate_the_heartbeats_real_servers_send() -> None:
    new = transforms.comments(b"data: a\n\ndata: b\n\ndata: c\n\n")
    assert new.startswith(
        b":\n\ndata: a\n\n: ping - 2024-02-23 06:52:12.345678+00:00\n\ndata: b\n\n"
        b": OPENROUTER PROCESSING\n\ndata: c"
    )


def test_ids_number_events_only_where_the_body_has_none() -> None:
    assert transforms.ids(b"data: a\n\ndata: b\n\n") == b"id: 1\ndata: a\n\nid: 2\ndata: b\n\n"
    assert [e.id for e in decode([transforms.ids(b"data: a\n\ndata: b\n\n")])] == ["1", "2"]
    assert not transforms.applies(transforms.ids, b"id: 7\ndata: a\n\n", "sse")


def test_meta_adds_event_only_and_id_only_blocks_that_change_nothing() -> None:
    body = b"id: 7\ndata: a\n\ndata: b\n\n"
    new = transforms.meta(body)
    assert new == (b"event: keepalive\n\nid: \n\nid: 7\ndata: a\n\nevent: keepalive\n\nid: 7\n\ndata: b\n\n")
    assert decode([new]) == decode([body])


def test_retry_blocks() -> None:
    assert transforms.retry(b"data: a\n\n") == b"retry: 3000\n\ndata: a\n\n"


def test_raw_unicode_writes_escapes_as_characters_in_json_only() -> None:
    body = b'data: {"t": "a\\u2028b\\\\u2029"}\n\ndata: plain \\u2028\n\n'
    new = transforms.raw_unicode(body)
    assert new == 'data: {"t": "a\u2028b\\\\u2029"}\n\ndata: plain \\u2028\n\n'.encode()
    assert not transforms.applies(transforms.raw_unicode, b'data: {"t": "x"}\n\n', "sse")
    nd = b'{"t": "\\u0085"}\n'
    assert transforms.raw_unicode(nd, "ndjson") == '{"t": "\u0085"}\n'.encode()


def test_pad_moves_line_endings_to_every_offset() -> None:
    body = b"".join(b"data: x\n\n" for _ in range(64))
    new = transforms.pad()(body)
    starts = [m.start() for m in __import__("re").finditer(rb"data", new)]
    assert len({s % 16 for s in starts}) == 16  # a 16-byte reader sees events at every offset
    shifted = transforms.get("pad:7")(b"data: x\n\n")
    assert len(shifted) == len(b"data: x\n\n") + 7 and decode([shifted]) == decode([b"data: x\n\n"])


def test_keepalive_never_moves_a_bom() -> None:
    body = b"data: a\n\n\xef\xbb\xbfdata: b\n\n"  # the second BOM is part of a field name: ignored
    assert [e.data for e in decode([body])] == ["a"]
    for name in ("keepalive", "comments", "meta", "ids", "pad", "retry"):
        new = transforms.get(name)(body)
        assert [e.data for e in decode([new])] == ["a"], name
    lead = b"\xef\xbb\xbfdata: a\n\n"
    assert transforms.keepalive()(lead) == b"\xef\xbb\xbf: ping\n\ndata: a\n\n"


def test_transforms_that_do_not_apply_change_nothing() -> None:
    nd = b'{"a": 1}\n{"a": 2}\n'
    for t in (transforms.mixed, transforms.keepalive(), transforms.meta, transforms.ids):
        assert not transforms.applies(t, nd, "ndjson")
        assert f"{t} has no meaning for ndjson" in str(transforms.skipped_because(t, nd, "ndjson"))
        assert transforms.apply([t], nd, [len(nd)], kind="ndjson") == (nd, [len(nd)])
    assert not transforms.applies(transforms.blank_lines, b"data: a\n\n", "sse")
    assert transforms.kind_of("application/x-ndjson", nd) == "ndjson"
    assert transforms.kind_of("text/event-stream", b"data: a\n\n") == "sse"
    assert transforms.kind_of("application/json", b'{"a": 1}') is None


def test_all_runs_every_named_transform_once() -> None:
    chains = transforms.alternatives("all")
    assert chains[0] == [] and [c[0].name for c in chains[1:]] == [t.name for t in transforms.ALL]
    assert {"mixed", "comments", "ids", "meta", "retry", "pad", "raw_unicode", "blank_lines"} <= {
        t.name for t in transforms.ALL
    }


def test_many_chunk_ends_inside_one_large_event_are_carried_in_one_pass() -> None:
    big = b"data: " + b"x" * 200_000 + b"\n\n"
    ends = list(range(1000, len(big), 1000)) + [len(big)]
    new_body, new_ends = transforms.apply(transforms.resolve("crlf+keepalive+mixed+pad"), big, ends)
    assert decode([new_body]) == decode([big]) and len(new_ends) == len(ends)
