"""The segment plans of the large-stream pass (issue 33): a segment of events of a repeated shape is
split by one regular expression, and what that gives is what the member regex gives, in the same
order, with the same base64 runs decoded and the same joins scanned."""

from __future__ import annotations

import base64
import json
import random
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ssemock import Cassette
from ssemock.scan import large_streams, segment_plans
from ssemock.scan.large_streams import LargeStream
from ssemock.scan.segment_plans import SegmentPlan, SegmentPlans, members
from ssemock.scan.walk import _DEEP_MAX, scan_cassette

KEY = "sk-ant-api03-" + "Q1w2E3r4T5y6U7i8O9p0" * 3

_TEXTS = [
    "",
    "Hello",
    " wörld 🙂",
    'say "hi": "there"',
    "back\\slash\\",
    "line\nnext\r",
    "\x00\x1f",
    "\ud800",
    '"name":"value"',
    "{",
    "}\n\ndata: {",
    "A" * 16,
    KEY[:9],
    KEY[9:30],
    KEY[30:],
    base64.b64encode(json.dumps({"text": KEY}).encode()).decode(),
    base64.urlsafe_b64encode(b"a plain note, long enough to be a run").decode(),
]


def _string(rng: random.Random) -> str:
    text = "".join(rng.choice(_TEXTS) for _ in range(rng.randrange(3)))
    return json.dumps(text, ensure_ascii=rng.random() < 0.3)


def _event(rng: random.Random, shapes: list[str], other: float = 0.15) -> bytes:
    """One SSE event: mostly the stream's main shapes, sometimes (``other``) another shape or no JSON."""
    roll = rng.random() * 0.15 / other if other else 1.0
    if roll < 0.05:  # an event that is no JSON
        return rng.choice([b"data: [DONE]\n\n", b"data: plain words, no quote\n\n", b": keep-alive\n\n"])
    if roll < 0.15:  # another shape, often with the main shapes' member names
        shape = rng.choice(
            [
                '{"type": "ping"}',
                '{"choices":[{"index":0,"delta":{"role":"assistant","content":<S>}}]}',
                '{"stop":[<S>,<S>],"content":<S>,"n":[1,2.5,-3e2]}',
                '{"a-b":<S>,"content":<S>,"x":{"text":<S>}}',
                '{"wrap":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":<S>}},"text":<S>}',
                '{"content" : <S> ,"deep":{"content":<S>}}',
            ]
        )
    else:
        shape = rng.choice(shapes)
    numbers = ("0", "7", "-1", "1718000058", "12345678901234567890", "2.5e-3")
    pieces = re.sub("<N>", lambda _: rng.choice(numbers), shape).split("<S>")
    text = "".join(p + _string(rng) for p in pieces[:-1]) + pieces[-1]
    head = b"event: content_block_delta\n" if rng.random() < 0.3 else b""
    return head + b"data: " + text.encode("utf-8", "surrogatepass") + b"\n\n"


_SHAPES = [
    '{"id":"chatcmpl-9Q8x7f3kLmN2pQrStUvWxYz","object":"chat.completion.chunk","created":<N>,'
    '"model":"gpt-4o-mini","choices":[{"index":<N>,"delta":{"content":<S>},"finish_reason":null}]}',
    '{"type":"content_block_delta","index":<N>,"delta":{"type":"text_delta","text":<S>}}',
    '{"model":"llama3","created_at":<S>,"message":{"role":"assistant","content":<S>},"done":false}',
    '{"candidates":[{"content":{"parts":[{"text":<S>}],"role":"model"},"index":<N>}],"usageMetadata":{}}',
]


def _outputs(body: bytes, cuts: list[int], *, plans: bool, pure: bool = True) -> list[tuple[str, str, int]]:
    """What the large-stream pass hands the text scan for ``body`` fed in these segments (``pure``:
    without the accelerator's members pass, which reads every segment without plans)."""
    out: list[tuple[str, str, int]] = []
    with pytest.MonkeyPatch.context() as m:
        if pure:
            m.setattr(large_streams, "_members", members)
        stream = LargeStream(
            "response.body",
            lambda text, path, depth, raw=None, hits=None: out.append((path, text, depth)),
            plans=plans,
        )
        for pos, end in zip([0, *cuts], [*cuts, len(body)]):
            stream.segment(body, pos, end)
        stream.close()
    return sorted(out)


def _cuts(body: bytes, size: int) -> list[int]:
    """Segment ends after a newline every ``size`` bytes or so (as `segment_end` cuts, smaller)."""
    cuts, pos = [], size
    while (at := body.find(b"\n", pos)) >= 0 and at + 1 < len(body):
        cuts.append(at + 1)
        pos = at + 1 + size
    return cuts


@settings(max_examples=150, deadline=None)
@given(
    st.randoms(use_true_random=True),  # seeded: drawing each call was most of the CPU
    st.lists(st.sampled_from(_SHAPES), min_size=1, max_size=2),
    st.sampled_from([0.0, 0.03, 0.15]),
    st.integers(200, 6000),
)
def test_a_stream_read_by_plans_gives_what_the_member_regex_gives(
    rng: random.Random, shapes: list[str], other: float, size: int
) -> None:
    body = b"".join(_event(rng, shapes, other) for _ in range(rng.randrange(20, 160)))
    cuts = _cuts(body, size)
    assert _outputs(body, cuts, plans=True) == _outputs(body, cuts, plans=False)
    assert _outputs(body, cuts, plans=True, pure=False) == _outputs(body, cuts, plans=False)  # the C pass
    for pos, end in zip([0, *cuts], [*cuts, len(body)]):
        read = SegmentPlans().read(body[pos:end])
        if read is not None:  # the very members, name by name, in the same order
            assert read[0] == members(body[pos:end])


def _steady(count: int) -> bytes:
    rng = random.Random(5)
    return b"".join(_event(rng, _SHAPES[:1], other=0) for _ in range(count))


def test_plans_read_the_segments_of_a_steady_stream(monkeypatch: pytest.MonkeyPatch) -> None:
    """The differential test means something: a steady stream's segments are read by a plan."""
    body = _steady(400)
    cuts = _cuts(body, 4000)
    plans, read = SegmentPlans(), 0
    for pos, end in zip([0, *cuts], [*cuts, len(body)]):
        read += plans.read(body[pos:end]) is not None
    assert read >= len(cuts)  # every segment but at most one
    with monkeypatch.context() as m:  # without the member regex's own pass on them
        m.setattr(segment_plans, "members", lambda text: pytest.fail("a planned segment read by the regex"))
        assert SegmentPlans().read(_steady(20)) is not None


def test_a_shape_that_fits_no_segment_is_not_tried_on_every_segment(monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[bytes] = []
    init = SegmentPlan.__init__

    def counted(self: SegmentPlan, event: bytes) -> None:
        made.append(event)
        init(self, event)

    monkeypatch.setattr(SegmentPlan, "__init__", counted)
    rng = random.Random(2)
    events = [b'data: {"k":%d,"s":"%d"}\n\n' % (i, rng.randrange(9)) for i in range(10)]
    body = b"".join(
        e.replace(b"{", b'{"n%d":"",' % i) for i, e in enumerate(events * 60)
    )  # all shapes differ
    plans = SegmentPlans()
    cuts = _cuts(body, 400)
    for pos, end in zip([0, *cuts], [*cuts, len(body)]):
        assert plans.read(body[pos:end]) is None
    assert 0 < len(made) <= len(cuts) // 4  # tried now and then, less often each time


def _found(body: bytes) -> list[str]:
    cassette = Cassette()
    cassette.add("POST", "https://api.example.com/v1/chat/completions", [body, b"data: [DONE]\n\n"])
    assert len(body) > _DEEP_MAX
    return [f"{f.rule} @ {f.where}" for f in scan_cassette(cassette)]


def _chunk(text: str, ping: bool = False) -> bytes:
    if ping:
        return b'event: ping\ndata: {"type":"ping","note":%s}\n\n' % json.dumps(text).encode()
    return b'data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":%s}}\n\n' % (
        json.dumps(text).encode()
    )


@pytest.mark.parametrize("across", ["events", "event and ping"])
def test_a_key_split_across_planned_events_and_another_shape_is_found(across: str) -> None:
    """A key in three pieces of one member name: pieces of a planned shape, or one of them in an
    event of another shape between them (its member is put in its place)."""
    filler = _chunk("lorem ipsum ") * ((_DEEP_MAX + 300_000) // len(_chunk("lorem ipsum ")))
    other = b'data: {"delta":{"text":%s},"type":"odd"}\n\n' % json.dumps(KEY[9:30]).encode()
    middle = other if across == "event and ping" else _chunk(KEY[9:30])
    body = filler + _chunk(KEY[:9]) + middle + _chunk(KEY[30:]) + filler[:50_000]
    assert _found(body) == ["an Anthropic key (sk-ant-...) @ response.body reassembled text"]


@pytest.mark.parametrize(("ping", "where"), [(False, "reassembled text base64"), (True, "base64")])
def test_a_base64_key_in_a_planned_value_or_in_a_ping_is_found(ping: bool, where: str) -> None:
    """In a planned value, with the text of the other events (its join); in a ping between the
    planned events, as a base64 run of the segment."""
    encoded = base64.b64encode(json.dumps({"api_key": KEY}).encode()).decode()
    filler = _chunk("lorem ipsum ") * ((_DEEP_MAX + 300_000) // len(_chunk("lorem ipsum ")))
    assert _found(filler + _chunk(encoded, ping=ping) + filler[:5000]) == [
        f"an Anthropic key (sk-ant-...) @ response.body {where}",
        f"a credential-named field 'api_key' @ response.body {where} $.api_key",
    ]


def test_a_string_in_an_array_is_no_member_of_the_key_before_it() -> None:
    """``"stop":["a","b"]``: STRING_MEMBER reads no member there, so neither does a plan made from
    such an event (hypothesis found a plan that read ``stop``'s first string as its member)."""
    segment = b"".join(
        b'data: {"stop":["%d","sk-ant-ap"],"content":"c%d","n":[1,2.5]}\n\n' % (i, i) for i in range(8)
    )
    read = SegmentPlan(segment.split(b"\n")[0][len(b"data: ") :]).read(segment)
    assert read is not None
    assert read[0] == members(segment) == {b"content": [b"c%d" % i for i in range(8)]}
