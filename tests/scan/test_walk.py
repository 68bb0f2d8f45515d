"""The walk of a stream too large to walk event by event (issue 33): it reads about a MiB at a time
(member values grouped per name, the base64 runs split out, the data of non-JSON events) and must
find what the per-match walk found, wherever the MiB cuts fall."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from seeded import seeded, some

from ssemock import Cassette, CassetteError
from ssemock.scan import fields
from ssemock.scan.large_streams import _WINDOW
from ssemock.scan.walk import _DEEP_MAX, scan_cassette

KEY = "sk-ant-api03-" + "Q1w2E3r4T5y6U7i8O9p0" * 3


def _one(body: bytes) -> list[str]:
    cassette = Cassette()
    cassette.add("POST", "https://api.example.com/v1/chat/completions", [body, b"data: [DONE]\n\n"])
    assert len(cassette.interactions[0].response.body) > _DEEP_MAX
    return [f"{f.rule} @ {f.where}" for f in scan_cassette(cassette)]


def _delta(text: str) -> bytes:
    return b'data: {"choices":[{"index":0,"delta":{"content":%s}}]}\n\n' % json.dumps(text).encode()


@pytest.mark.parametrize("at", [_WINDOW - 40, _WINDOW, _WINDOW + 7, 2 * _WINDOW + 100])
def test_a_key_split_in_deltas_across_the_mib_cut_is_found(at: int) -> None:
    filler = _delta("lorem ")
    head = filler * (at // len(filler))
    pieces = b"".join(_delta(KEY[i : i + 3]) for i in range(0, len(KEY), 3))
    tail = filler * ((_DEEP_MAX + _WINDOW) // len(filler))
    [found] = _one(head + pieces + tail)
    assert found == "an Anthropic key (sk-ant-...) @ response.body reassembled content"


def test_a_key_split_in_plain_text_events_of_a_large_stream_is_found() -> None:
    filler = _delta("lorem ") * ((_DEEP_MAX + 100) // len(_delta("lorem ")))
    pieces = b"".join(b"data: %s\n\n" % KEY[i : i + 4].encode() for i in range(0, len(KEY), 4))
    [found] = _one(filler + pieces)
    assert found == "an Anthropic key (sk-ant-...) @ response.body reassembled data"


def test_a_key_in_a_base64_value_of_a_large_stream_is_found() -> None:
    filler = _delta("lorem ") * ((_DEEP_MAX + 100) // len(_delta("lorem ")))
    wrapped = base64.b64encode(f"note: {KEY} end".encode()).decode()
    [found] = _one(filler + b'data: {"chunk":{"bytes":"%s"}}\n\n' % wrapped.encode() + filler)
    assert found.startswith("an Anthropic key (sk-ant-...) @ response.body")


def test_a_large_stream_without_a_secret_is_clean() -> None:
    assert _one(_delta("lorem ipsum, dolor sit amet ") * (_DEEP_MAX // 60 + 10)) == []


def test_a_password_in_a_url_split_across_deltas_of_a_large_stream_is_found() -> None:
    """Filler windows of a large stream are searched for shapes only (their text is not made);
    the window holding a URL is read as text, and the password split across its deltas found."""
    filler = _delta("lorem ipsum ") * ((_DEEP_MAX + 2 * _WINDOW) // len(_delta("lorem ipsum ")))
    said = ["see https://ada:", "hunter2-", "Q1w2E3r4", "@h.example/ there"]
    found = _one(filler + b"".join(map(_delta, said)) + filler)
    assert found == ["a password in the URL @ response.body reassembled content"]


@pytest.mark.parametrize(
    "text", ["see http://[oops for more", "[docs](https://[::1/x)", "https://h]/v1?q=1", "a://[b@c"]
)
def test_a_text_holding_a_url_urlsplit_refuses_is_saved(text: str, tmp_path: Path) -> None:
    """A model's text may hold what only looks like a URL (a bracket in its host): the scan reads
    it by hand instead of failing, and the recording is saved as it was streamed."""
    cassette = Cassette()
    body = _delta(text) + b"data: [DONE]\n\n"
    cassette.add("POST", "https://api.example.com/v1/chat/completions", [body])
    cassette.save(tmp_path / "c.json")
    assert Cassette.load(tmp_path / "c.json").interactions[0].response.body == body


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("see https://ada:hunter2-Q1w2E3@[h/x", "a password in the URL"),
        ("see https://[h/v1?api_key=hunter2-Q1w2E3 now", "a credential-named parameter 'api_key'"),
        ("see https://[h/v1#access_token=hunter2-Q1w2E3", "a credential-named parameter 'access_token'"),
    ],
)
def test_a_secret_in_a_url_urlsplit_refuses_is_still_found(text: str, rule: str, tmp_path: Path) -> None:
    """The password, query and fragment of such a URL are read by hand: a secret there is refused."""
    cassette = Cassette()
    cassette.add("POST", "https://api.example.com/v1/chat", [_delta(text), b"data: [DONE]\n\n"])
    assert [f.rule for f in scan_cassette(cassette)] == [rule]
    with pytest.raises(CassetteError):
        cassette.save(tmp_path / "c.json")
    assert not (tmp_path / "c.json").exists()


# the URL patterns as they were, a scheme tried at every position (quadratic in a long run of letters)
_URL_BEFORE = re.compile(r"""(?:[a-z][a-z0-9+.-]*://|^[/?#])[^\s"'<>]*""", re.I)
_URL_IN_TEXT_BEFORE = re.compile(
    r"""[a-z][a-z0-9+.\-]*://[^\s"'<>]*|(?<![^\s<"'=;,])/[^\s"'<>]*[?#][^\s"'<>]*""", re.I
)
_URL_BITS = ["a", "Zz", "h9", "+", ".", "-", "_", ":", "//", "/", "?", "#", " ", "=", "x" * 30, "é", "'"]


@settings(max_examples=400, deadline=None)
@given(seeded(lambda rng: "".join(some(_URL_BITS, 30)(rng))))
def test_the_url_patterns_find_what_they_found_when_tried_at_every_position(text: str) -> None:
    """The URL patterns try a scheme only where a run of its characters starts: the same URLs."""
    assert [m.span("url") for m in fields.URL.finditer(text)] == [
        m.span() for m in _URL_BEFORE.finditer(text)
    ]
    assert [m.span("url") for m in fields._URL_IN_TEXT.finditer(text)] == [
        m.span() for m in _URL_IN_TEXT_BEFORE.finditer(text)
    ]


@pytest.mark.parametrize("before", ["1.", "2)-", "+", "0.9.", "a1b2-"])
def test_a_url_whose_run_starts_with_digits_or_signs_is_read(before: str) -> None:
    """A URL right after a numbered list's ``1.`` or a sign: its scheme starts at the run's first
    letter (only the run's start tried, ``.https://`` was no URL: its parameters went unread)."""
    cassette = Cassette()
    text = f"see {before}https://h.example/v1?api_key=hunter2-Q1w2E3 now"
    cassette.add("POST", "https://api.example.com/v1/chat/completions", [_delta(text), b"data: [DONE]\n\n"])
    assert [f.rule for f in scan_cassette(cassette)] == ["a credential-named parameter 'api_key'"]


def test_a_url_beside_a_mib_of_letters_in_a_large_stream_is_read_at_once() -> None:
    """A reassembled window holding a URL and a long run of letters and digits (a base64url blob,
    a hex dump): the URL's parameters are read in one pass over the run (tried at every position
    of it, a MiB took hours)."""
    filler = _delta("lorem ipsum ") * (_DEEP_MAX // len(_delta("lorem ipsum ")))
    blob = _delta("a9" * (_WINDOW // 2))
    found = _one(filler + _delta("see https://h.example/v1?api_key=hunter2-Q1w2E3 ") + blob + filler)
    assert found == ["a credential-named parameter 'api_key' @ response.body reassembled content"]
