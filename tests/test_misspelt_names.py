"""Misspelt names: one ValueError listing the valid names and suggesting the closest one."""

from __future__ import annotations

from pathlib import Path

import pytest

import ssemock
from ssemock import chunking, matching, transforms
from ssemock.commands.cli import main
from ssemock.core.names import suggest, unknown


def test_suggest_finds_the_closest_known_name() -> None:
    known = ["as_recorded", "bytewise", "mid_line", "mid_utf8"]
    assert suggest("mid_lin", known) == "mid_line"
    assert suggest("mid-line", known) == "mid_line"
    assert suggest("BYTEWISE", known) == "bytewise"
    assert suggest("zzz", known) is None
    assert suggest(3, known) is None


def test_unknown_lists_every_name_and_keeps_the_arguments_in_the_suggestion() -> None:
    error = unknown("chunking", "fixd:3", ["fixed", "random"], shown=["fixed:N", "random:SEED"], head="fixd")
    assert str(error) == "unknown chunking 'fixd:3': did you mean 'fixed:3'? valid: fixed:N, random:SEED"
    assert str(unknown("matcher", "zzz", ["method", "url"])) == "unknown matcher 'zzz'; valid: method, url"


@pytest.mark.parametrize(
    "resolve, name, closest",
    [
        (chunking.get, "mid_lin", "mid_line"),
        (chunking.get, "midutf8", "mid_utf8"),
        (chunking.get, "fixd:3", "fixed:3"),
        (chunking.resolve, "as_recorded,bytwise", "bytewise"),
        (transforms.get, "crfl", "crlf"),
        (transforms.resolve, "crlf+keepalve", "keepalive"),
        (transforms.alternatives, "none,no-space", "no_space"),
        (lambda name: matching.resolve([name]), "methd", "method"),
    ],
)
def test_a_misspelt_name_suggests_the_closest_and_lists_the_valid_ones(
    resolve: object, name: str, closest: str
) -> None:
    with pytest.raises(ValueError) as info:
        resolve(name)  # type: ignore[operator]
    message = str(info.value)
    assert f"did you mean {closest!r}?" in message
    assert "valid: " in message and message.count(", ") >= 3


@pytest.mark.parametrize(
    "resolve, value",
    [
        (chunking.get, 3),
        (chunking.resolve, 3),
        (transforms.get, 3),
        (transforms.resolve, 3),
        (matching.resolve, "method"),
    ],
)
def test_a_value_that_is_no_name_is_a_value_error_too(resolve: object, value: object) -> None:
    with pytest.raises(ValueError, match="valid names|list of matchers"):
        resolve(value)  # type: ignore[operator]


def test_the_player_rejects_a_misspelt_name_with_the_suggestion() -> None:
    with pytest.raises(ValueError, match="did you mean 'mid_utf8'"):
        ssemock.replay(ssemock.Cassette(), chunking="mid_utf")
    with pytest.raises(ValueError, match="did you mean 'crlf'"):
        ssemock.replay(ssemock.Cassette(), transform="crlff")
    with pytest.raises(ValueError, match="did you mean 'strict'"):
        ssemock.replay(ssemock.Cassette(), ignore_message_paths=["stric", "$.event_id"])


@pytest.mark.parametrize(
    "command",
    [
        ["rechunk", "--chunking", "all", "--preview"],
        ["serve", "--chunking", "all"],
        ["serve", "--transform", "all"],
    ],
)
def test_all_where_one_name_is_taken_says_why(
    command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Never 'unknown chunking 'all': did you mean 'all'?': it names a matrix, and here one is taken."""
    c = ssemock.Cassette()
    c.add("GET", "http://x.test/s", [b"data: 1\n\n"])
    c.save(tmp_path / "c.json")
    code = main([command[0], str(tmp_path / "c.json"), *command[1:]])
    err = capsys.readouterr().err
    assert code in (1, 2) and "names every" in err and "this takes one" in err, err
    assert "did you mean" not in err
