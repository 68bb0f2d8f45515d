"""The event plans of the scan (issue 33): an event of a shape seen before is read from its text
cut at its quotes, alone or in a run of them, instead of walked; it must give exactly what the
walk gives (findings, the pieces collected per key, the data of non-JSON events), and every
form the walk finds must still be found through it."""

from __future__ import annotations

import base64
import dataclasses
import json
import random
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ssemock import Cassette
from ssemock.framing import _speedups
from ssemock.scan import batch_match, event_plans, walk
from ssemock.scan.event_plans import Shapes, worth

KEY = "sk-proj-test" + "Q1w2E3r4T5y6U7i8O9p0" * 3
OTHER = "chatcmpl-another-one-1234567"


class _Event:
    def __init__(self, data: str) -> None:
        self.data = data


@contextmanager
def _walked_only(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The scan with no plan read: every event walked, as before plans."""
    with monkeypatch.context() as m:
        m.setattr(Shapes, "read", lambda *a: False)
        m.setattr(Shapes, "bulk", lambda *a: 0)
        yield


@contextmanager
def _counted(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """The scan as it is, counting the events read by a plan (alone or in runs)."""
    read, bulk = Shapes.read, Shapes.bulk
    count = [0]

    def counted_read(self: Shapes, *a: Any) -> bool:
        done = read(self, *a)
        count[0] += done
        return done

    def counted_bulk(self: Shapes, *a: Any) -> int:
        done = bulk(self, *a)
        count[0] += done
        return done

    with monkeypatch.context() as m:
        m.setattr(Shapes, "read", counted_read)
        m.setattr(Shapes, "bulk", counted_bulk)
        yield count


def _scan(texts: list[str]) -> tuple[list[walk.Finding], dict[str, tuple[bool, str]], list[str]]:
    """What a stream of events with these data gives: findings, per key the text its pieces join
    (and whether they are more than one: only those are joined), non-JSON data."""
    s = walk._Scan(0)
    plain: list[str] = []
    s.stream("response.body", 0, [_Event(t) for t in texts], "", plain)
    pieces = {k: (len(v) > 1, "".join(v)) for k, v in s.pieces.items() if v}
    s.joined("response.body", "", plain)
    return s.found, pieces, plain


def _both(texts: list[str], monkeypatch: pytest.MonkeyPatch, squeezed: bool = False) -> tuple[Any, Any, int]:
    """The walk's results and the plans' (with a stable value's copies in a row kept whole, but
    where ``squeezed``: `test_a_value_in_every_event_is_joined_from_a_few_copies`), and how
    many events the plans read."""
    with _walked_only(monkeypatch):
        reference = _scan(texts)
    with _counted(monkeypatch) as count, monkeypatch.context() as m:
        if not squeezed:
            m.setattr(event_plans, "REPEAT_KEPT", 1 << 60)
        planned = _scan(texts)
    return reference, planned, count[0]


def _sse(texts: list[str]) -> Cassette:
    body = b"".join(
        b"".join(b"data: " + line.encode("utf-8", "surrogatepass") + b"\n" for line in t.split("\n")) + b"\n"
        for t in texts
    )
    c = Cassette()
    c.add(
        "POST",
        "https://api.example.com/v1/chat/completions",
        [body[: len(body) // 2], body[len(body) // 2 :]],
    )
    return c


# -- worth ----------------------------------------------------------------------------------------

_WORTH = re.compile(r"[{\[]|://|=|[A-Za-z0-9+/_\-]{16}")


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=st.sampled_from("aZ09+/_-{[=:/ é\ud800.") | st.characters(), max_size=40))
def test_worth_finds_what_the_search_it_replaces_finds(text: str) -> None:
    assert worth(text) == (_WORTH.search(text) is not None)


# -- any stream: the same as the walk ---------------------------------------------------------------

_VALUES = [
    "",
    " ",
    "Hello",
    "wörld 🙂",
    "50% <",
    "a=b",
    "see https://x.example/?token=abc",
    '{"k": 1}',
    "[1]",
    "line\nnext",
    'say "hi"',
    "back\\slash\\",
    "\x00\x1f",
    "\u2028\u00a0",
    "\ud800",
    "A" * 16,
    "sk-",
    KEY[:10],
    KEY[10:30],
    KEY[30:],
    KEY,
    base64.b64encode(json.dumps({"text": KEY}).encode()).decode(),
    base64.b64encode(b"hello there, a plain note").decode(),
    "hunter2hunter2",
]
_NUMBERS = ["0", "7", "01", "-0", "1.5", "1e5", "1e300", "1e400", "12345678901234567890123", "-3"]


def _raw(value: str, ident: str = "chatcmpl-9Q8x7f3kLmN2pQrStUvWxYz") -> str:
    """An OpenAI chat chunk with ``value`` written in as it is (no escape added)."""
    return '{"id":"' + ident + '","choices":[{"index":0,"delta":{"content":"' + value + '"}}]}'


def _dumps(value: Any, style: int) -> str:
    if style == 0:
        return json.dumps(value)
    if style == 1:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return json.dumps(value, indent=1)


_TEMPLATES: list[Callable[[str, int, str, int], str]] = [
    lambda v, i, n, s: _dumps(
        {"id": "chatcmpl-9Q8x7f3kLmN2pQrStUvWxYz", "choices": [{"index": i, "delta": {"content": v}}]}, s
    ),
    lambda v, i, n, s: _dumps({"type": "content_block_delta", "index": i, "delta": {"text": v}}, s),
    lambda v, i, n, s: _dumps(
        {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": i, "function": {"arguments": v}}]}}]}, s
    ),
    lambda v, i, n, s: _dumps({"token": v, "logprob": -0.5}, s),
    lambda v, i, n, s: _dumps({"delta": {"password": v, "text": "x"}}, s),
    lambda v, i, n, s: _dumps({"api_key": i, "text": v}, s),
    lambda v, i, n, s: _dumps(["a", v, {"output_index": i, "t": [v]}], s),
    lambda v, i, n, s: _dumps(
        {"bytes": base64.b64encode(json.dumps({"delta": {"text": v}}).encode()).decode()}, s
    ),
    lambda v, i, n, s: '{"a":' + json.dumps(v) + ',"b":1,"a":' + json.dumps(v[:1]) + "}",  # a key repeated
    lambda v, i, n, s: '{"b":1,"a":' + json.dumps(v) + ',"b":' + json.dumps(v + "!") + "}",
    lambda v, i, n, s: '{"n":' + n + ',"index":' + n + ',"t":' + json.dumps(v, ensure_ascii=s == 0) + "}",
    lambda v, i, n, s: ' { "t" : ' + json.dumps(v) + f' , "n" : {i} }} ',
    lambda v, i, n, s: _raw(v),  # written raw: a quote, a backslash or a control character breaks it
    lambda v, i, n, s: "[DONE]" if i else f"plain {v}",
]


@st.composite
def _streams(draw: st.DrawFn) -> list[str]:
    """Events of one to three templates (a shape repeats: plans are made and read), their values
    drawn from the forms above or any text, the same value often repeated (an id). The templates
    and values are drawn; the 8 to 80 events (16 on average, as a drawn list's) are built from a
    drawn seed: drawn one by one, five draws an event, they were most of these tests' CPU (issue
    48 item 4)."""
    kinds = draw(st.lists(st.sampled_from(range(len(_TEMPLATES))), min_size=1, max_size=3))
    values = draw(st.lists(st.sampled_from(_VALUES) | st.text(max_size=4), min_size=1, max_size=4))
    rng = random.Random(draw(st.integers(0, 2**64 - 1)))
    events = [
        (
            rng.choice(kinds),
            rng.choice(values),
            rng.choice([0, 0, 0, 1, 2]),
            rng.choice(["1e5", "1e5", "1e5", *_NUMBERS]),
            rng.choice([1, 1, 0, 2]),
        )
        for _ in range(min(80, 8 + int(rng.expovariate(1 / 8))))
    ]
    return [_TEMPLATES[t](v, i, n, s) for t, v, i, n, s in events]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=_streams())
def test_a_stream_read_by_plans_gives_what_its_walk_gives(
    texts: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    reference, planned, _ = _both(texts, monkeypatch)
    assert planned == reference


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=_streams(), seed=st.integers(0, 2**32))
def test_a_value_repeated_in_a_row_finds_what_every_copy_finds(
    texts: list[str], seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A drawn stream, each event repeated 1 to 60 times in a row (runs of the same values), with
    the copies of a value in a row kept up to 8 characters only (`REPEAT_KEPT`: a few KB): it
    finds what the walk finds (keys whole, split across events, in base64, in a URL, ...)."""
    rng = random.Random(seed)
    texts = [t for t in texts for _ in range(rng.choice([1, 1, 2, 5, 60]))]
    monkeypatch.setattr(event_plans, "REPEAT_KEPT", 8)
    reference, planned, _ = _both(texts, monkeypatch, squeezed=True)
    # each one found (a match across the copies is found as often as there are copies, and as
    # long: a key in every event joins a "key" of all the copies kept, 10,080 characters or 6,624)
    assert set(map(_but_length, planned[0])) == set(map(_but_length, reference[0]))
    assert planned[2] == reference[2]


def _but_length(finding: walk.Finding) -> walk.Finding:
    return dataclasses.replace(finding, shape=re.sub(r"^\d+ chars", "N chars", finding.shape))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=_streams())
def test_a_recorded_stream_is_scanned_with_plans_as_without(
    texts: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A whole body of fewer than `PLANNED_MIN` events is walked (most drawn here), a longer one
    read by plans: the same findings either way (and with plans for any length)."""
    cassette = _sse(texts)
    with _walked_only(monkeypatch):
        reference = walk.scan_cassette(cassette)
    assert walk.scan_cassette(cassette) == reference
    monkeypatch.setattr(event_plans, "PLANNED_MIN", 0)
    assert walk.scan_cassette(cassette) == reference


@pytest.mark.parametrize("events", [event_plans.PLANNED_MIN - 1, event_plans.PLANNED_MIN])
def test_a_whole_body_is_read_by_plans_from_planned_min_events_on(
    events: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The test above means something: a body of `PLANNED_MIN` events is read by plans, a shorter
    one walked (the plans' regexes cost more than they save on a few events)."""
    texts = [_TEMPLATES[0](w, 0, "0", 1) for w in ["Hello", " there", ",", " how"] * 20][:events]
    with _walked_only(monkeypatch):
        reference = walk.scan_cassette(_sse(texts))
    with _counted(monkeypatch) as read:
        assert walk.scan_cassette(_sse(texts)) == reference
    assert (read[0] > 0) is (events >= event_plans.PLANNED_MIN)


def test_the_plans_read_most_events_of_a_steady_stream(monkeypatch: pytest.MonkeyPatch) -> None:
    """The differential tests mean something: plans do read the events they are handed."""
    texts = [_TEMPLATES[0](w, 0, "0", 1) for w in ["Hello", " there", ",", " how", " are", " you"] * 50]
    reference, planned, read = _both(texts, monkeypatch)
    assert planned == reference
    assert read >= len(texts) - 5


@pytest.mark.parametrize("size", [1000, 3000])  # stable values written into a regex, or not (`_LITERAL_MAX`)
def test_a_long_value_repeated_across_events_is_read_as_the_walk_reads_it(
    monkeypatch: pytest.MonkeyPatch, size: int
) -> None:
    """A long value the same in event after event (a system prompt echoed back), beside deltas that
    stream a key: plans read the events in bulk and find the key joined, as the walk does (two
    deltas worth decoding in a row, read one by one, make the long value a stable one)."""
    long = ("the same long note " * 200)[:size]
    deltas = ["a=1", "b=2", "Hi", *(KEY[k : k + 5] for k in range(0, len(KEY), 5)), " bye"]
    texts = [
        json.dumps({"type": "delta", "note": long.upper() if 40 <= i < 45 else long, "delta": {"text": d}})
        for i, d in enumerate(deltas * 8)  # (the note changes mid-run: a plan that kept it would be wrong)
    ]
    reference, planned, read = _both(texts, monkeypatch)
    assert planned == reference
    assert any("reassembled" in str(f) for f in planned)
    assert read >= len(texts) - 5


@pytest.mark.parametrize("value", ["chatcmpl-9Q8x7f3kLmN2pQrStUvWxYz", "QUF", "a"])
def test_a_value_in_every_event_is_joined_from_a_few_copies(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    """A value the same in event after event (an id, a type) joins its piece list as a few KB of
    copies (`event_plans.REPEAT_KEPT`), not a copy an event; what follows it there is read where
    it was: a key streamed in base64 after 3,000 events of "QUF" (the copies left out keep
    base64's groups) is found decoded, as the walk finds it; every finding is the walk's."""
    monkeypatch.setattr(event_plans, "REPEAT_KEPT", 600)  # (under a run of 3,000 copies of "a")
    streamed = base64.b64encode(KEY.encode()).decode()
    deltas = [value] * 3000 + [streamed[k : k + 4] for k in range(0, len(streamed), 4)]
    texts = [_raw(d, value) for d in deltas]
    reference, planned, read = _both(texts, monkeypatch, squeezed=True)
    assert planned[0] == reference[0] and planned[2] == reference[2]
    assert any("reassembled" in f.path and "base64" in f.path for f in planned[0])
    (many, joined), (_, whole) = planned[1]["$.id"], reference[1]["$.id"]
    assert many and whole == value * len(texts) and joined == value * (len(joined) // len(value))
    assert len(joined) * 3 < len(whole)
    assert (len(whole) - len(joined)) % 12 == 0
    assert read >= len(texts) - 40


# -- the forms a plan must hand to the walk, or read as the walk does ------------------------------

_FILLER = [_TEMPLATES[0](w, 0, "0", 1) for w in ["lorem", " ipsum", " dolor"] * 40]


def _found(texts: list[str], monkeypatch: pytest.MonkeyPatch) -> tuple[list[str], int]:
    reference, planned, read = _both(texts, monkeypatch)
    assert planned == reference
    assert read > 0
    return [f"{f.rule} @ {f.path}" for f in planned[0]], read


def _chunk(index: int, text: str) -> str:
    return json.dumps({"choices": [{"index": index, "delta": {"content": text}}]}, separators=(",", ":"))


def test_a_key_in_1_char_deltas_across_two_interleaved_choices_is_found(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    texts = [_chunk(i % 2, "z") for i in range(60)]
    for c in KEY:
        texts += [_chunk(1, c), _chunk(0, "z")]
    found, _ = _found(texts, monkeypatch)
    assert (
        "an OpenAI key (sk-proj-/sk-svcacct-/sk-admin-...) @ reassembled $.choices[]{index=1}.delta.content"
        in found
    )


def test_a_key_in_nested_json_of_interleaved_tool_arguments_is_found(monkeypatch: pytest.MonkeyPatch) -> None:
    def call(index: int, args: str) -> str:
        return _TEMPLATES[2](args, index, "0", 1)

    args = json.dumps({"note": f"use {KEY}"})
    texts = [call(i % 2, "ab") for i in range(60)]
    for k in range(0, len(args), 3):
        texts += [call(0, args[k : k + 3]), call(1, "xy")]
    found, _ = _found(texts, monkeypatch)
    assert any(f.startswith("an OpenAI key") and "{index=0}.function.arguments" in f for f in found), found


def test_a_key_in_1_char_base64_payloads_is_found(monkeypatch: pytest.MonkeyPatch) -> None:
    texts = [_TEMPLATES[7](w, 0, "0", 1) for w in ["lorem", " ipsum"] * 30]
    texts += [_TEMPLATES[7](c, 0, "0", 1) for c in f"here: {KEY} ok"]
    found, _ = _found(texts, monkeypatch)
    assert any(f.startswith("an OpenAI key") and "base64" in f for f in found), found


def test_a_credential_named_member_of_a_planned_shape_is_found(monkeypatch: pytest.MonkeyPatch) -> None:
    texts = [json.dumps({"delta": {"api_key": "", "text": "x"}}) for _ in range(60)]
    texts.append(json.dumps({"delta": {"api_key": "hunter2hunter2", "text": "x"}}))
    texts += [json.dumps({"token": w, "logprob": -0.1}) for w in ["The", " cat"] * 30]
    texts.append(json.dumps({"token": "Zx81kQ0pLm2nB7vC", "logprob": -0.1}))
    found, _ = _found(texts, monkeypatch)
    assert "a credential-named field 'api_key' @ event 60 $.delta.api_key" in found
    assert "a credential-named field 'token' @ event 121 $.token" in found


def test_a_key_in_escaped_1_char_deltas_is_found(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each character written as a JSON escape (``\\u0073``): only the values undone and joined hold the key."""
    texts = list(_FILLER)
    texts += [_raw(f"\\u{ord(c):04x}") for c in KEY]
    texts += [_raw(f'\\"{c}\\"') for c in "quoted"]
    found, read = _found(texts, monkeypatch)
    assert (
        "an OpenAI key (sk-proj-/sk-svcacct-/sk-admin-...) @ reassembled $.choices[]{index=0}.delta.content"
        in found
    )
    assert read >= len(texts) - 10  # the escaped ones too (but those with an escaped quote)


def test_a_stream_of_events_that_are_no_json_after_all_is_walked(monkeypatch: pytest.MonkeyPatch) -> None:
    """Events of a planned shape whose values no JSON string holds as written (a control
    character, a lone surrogate, a bad escape, a number out of range) are walked: not JSON."""
    texts = [_raw(w) for w in ["lorem", " ipsum", " dolor"] * 20]
    texts += [_raw(v) for v in ["a\tb", "\ud800", "\\x41", KEY, "\\"]]
    texts += [_raw("a\tb", OTHER)]  # read a value at a time (its id is not the one before)
    texts += ['{"n":' + n + ',"t":"a"}' for n in ["1e300", "1e300", "1e300", "1e400", "01", "1e5"]]
    reference, planned, read = _both(texts, monkeypatch)
    assert planned == reference
    no_json = [_raw(v) for v in ["a\tb", "\ud800", "\\x41", "\\"]] + [_raw("a\tb", OTHER)]
    no_json += ['{"n":1e400,"t":"a"}', '{"n":01,"t":"a"}']
    assert planned[2] == no_json  # walked: their data joined as text
    assert read >= 60 - 5


def test_runs_of_events_are_read_in_one_pass_as_they_are_walked(monkeypatch: pytest.MonkeyPatch) -> None:
    """A run of events of the last shape is read by one regex pass over their texts joined by
    NULs (`Shapes._run`), each piece list extended once; a run with a NUL in a text (two texts of
    the shape in one, beside a text of no shape: as many matches as texts), a value
    worth decoding, a value no JSON string holds, another id, or a list of strings (two values
    to one piece list) is read the ways before, with the same results."""
    run, runs = Shapes._run, [0]

    def counted(self: Shapes, *a: Any) -> int | None:
        done = run(self, *a)
        runs[0] += bool(done)
        return done

    monkeypatch.setattr(Shapes, "_run", counted)
    words = [" lorem", " ipsum", " dol\\u00f6r", " a\\\\b"]  # (as written: JSON escapes)
    texts = [_raw(w) for w in words * 50]
    texts[100] = _raw("a\x00b")  # a NUL in a text (escaped in JSON: no plan reads it raw)
    texts[101] = _raw("a\u0000b")
    texts[120] = _raw(" lorem") + "\x00" + _raw(" ipsum")  # two texts of the shape, NUL-joined in one,
    texts[121] = '{"note":"' + KEY + '"}'  # beside one of no shape: as many matches as texts
    texts[150] = _raw(KEY)  # worth decoding
    texts[170] = _raw("a\tb")  # a tab as written: no JSON string
    texts += [_raw(w, OTHER) for w in words * 30]  # another stable id
    texts += [_dumps(["a", w, {"output_index": 0, "t": [w]}], 1) for w in words * 30]  # shared lists
    texts += [_dumps({"token": w, "logprob": -0.5}, 1) for w in words * 30]  # nothing stable
    reference, planned, read = _both(texts, monkeypatch)
    assert planned == reference
    assert any(f.rule.startswith("an OpenAI key") for f in planned[0])
    assert runs[0] >= 3 and read >= len(texts) - 40


def test_plans_are_sound_for_the_event_shapes_a_cut_cannot_read() -> None:
    assert event_plans.cut('{"a":"x\\"y"}') is None  # a quote escaped: cut elsewhere than JSON cuts
    assert event_plans.cut('{"a":"x}') is None  # an odd number of quotes
    parts, shape = event_plans.cut('{"a":"x","n":1718000001}') or ([], "")
    assert parts[1::2] == ["a", "x", "n"] and shape == '{":",":1111000001}'


@pytest.mark.parametrize("ids", [1, 2], ids=["in runs", "one at a time"])
def test_the_pieces_kept_per_key_stop_at_the_same_size(ids: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past `REASSEMBLE_MAX` characters of a key's pieces no more are kept, plans or not (the cap
    made 1 MB where both read it: at 8 MB, 9 MB of events scanned twice was most of the CPU)."""
    for module in (event_plans, walk):
        monkeypatch.setattr(module, "REASSEMBLE_MAX", 1 << 20)
    idents = [OTHER, KEY][:ids]  # one id: events read in runs; two taking turns: each one by one
    texts = [_raw(f"{i} " + "x y " * 25_000, idents[i % ids]) for i in range(14)]  # 1.4 MB under one key
    reference, planned, read = _both(texts, monkeypatch)
    assert planned[1] == reference[1]
    assert len(planned[1]["$.choices[]{index=0}.delta.content"][1]) < event_plans.REASSEMBLE_MAX + 100_010
    assert read > 0


def _mutated(text: str, rng: random.Random) -> str:
    """``text``, or with a character changed, dropped or added (a digit, a quote, a NUL, one past
    Latin-1 or past ASCII), or cut short."""
    at = rng.randrange(len(text) + 1)
    change = rng.choice(["same"] * 12 + ["put", "drop", "add", "cut"])
    put = rng.choice(["5", "0", '"', "\x00", "\u0101", "\u00e9", "x", "\\"])
    if change == "put":
        return text[:at] + put + text[at + 1 :]
    if change == "drop":
        return text[:at] + text[at + 1 :]
    if change == "add":
        return text[:at] + put + text[at:]
    return text[:at] if change == "cut" else text


@settings(max_examples=300, deadline=None)
@given(texts=_streams(), seed=st.integers(0, 2**32))
def test_the_accelerator_reads_a_run_of_events_as_the_batch_regex_does(texts: list[str], seed: int) -> None:
    """`ssemock.scan.batch_match`: a plan of each event shape (its stable values written in, or
    not) reads a run of events of that shape and others, changed a character at a time: the accelerator's ops give the values
    its batch regex captures, None where one text is not of the shape, and leave to the regex a
    text of characters past Latin-1."""
    assert batch_match._c_plan_match is _speedups.plan_match  # built: CI's install compiles it
    rng = random.Random(seed)
    for text in texts:
        shape = event_plans.cut(text)
        try:
            plan = None if shape is None else event_plans.plan_of(shape[0], json.loads(text))
        except ValueError:
            continue
        if plan is None:
            continue
        pattern = list(plan.pattern)
        if plan.value_parts and rng.random() < 0.5:  # a stable value written in, as `_Planned.faster`
            pattern[plan.value_parts[0]] = re.escape(shape[0][plan.value_parts[0]])
        regex = '"'.join(pattern)
        batch = batch_match.batch_of(regex)
        ops = batch_match.ops_of(regex)
        alike = [t for t in texts if (event_plans.cut(t) or ("", ""))[1] == shape[1]]  # (most of a run)
        run = [
            _mutated(rng.choice(alike if rng.random() < 0.9 else texts), rng)
            for _ in range(rng.randint(1, 6))
        ]
        got = _speedups.plan_match(ops, run)
        reference = batch_match._py_captured(batch, run)
        if all(max(map(ord, t), default=0) < 256 for t in run) and all(
            isinstance(o, bool) or max(map(ord, o), default=0) < 256 for o in ops
        ):
            assert got == reference, (ops, run)
        else:
            assert got is NotImplemented
        assert batch_match.captured(batch, ops, run) == reference


@settings(max_examples=300, deadline=None)
@given(
    st.text(
        alphabet=st.characters(codec=None, max_codepoint=0x1FFFF) | st.sampled_from("\x00\x1f\ud800\udfff a")
    )
)
def test_the_accelerator_finds_a_character_no_json_string_holds_unescaped_as_the_regex_does(
    text: str,
) -> None:
    assert event_plans._unfit is _speedups.unfit  # built: CI's install compiles it
    assert (
        _speedups.unfit(text) is event_plans._py_unfit(text) is (event_plans._UNFIT.search(text) is not None)
    )


@pytest.mark.parametrize("wide", ["", "\u00e9", "\u20ac", "\U0001f600"])
def test_a_control_character_is_found_at_every_offset_of_a_long_value(wide: str) -> None:
    """32 characters a step (a str of one byte a character, with AVX2), then one at a time."""
    for size in (31, 32, 33, 64, 100):
        for at in range(size):
            for bad in ("\x00", "\x1f", "\n"):
                text = wide + "x" * at + bad + "y" * (size - at - 1)
                assert _speedups.unfit(text) is True, (size, at, bad)
        assert _speedups.unfit(wide + "x" * size + " ~\x7f") is False
    with pytest.raises(TypeError, match="unfit"):
        _speedups.unfit(b"x")  # type: ignore[arg-type]
