"""Word lists: a live transcript's words, one JSON object each (Deepgram's ``words``:
``[{"word": "Bearer", ...}, {"word": "9f8e...", ...}]``), where a credential read aloud is spread
over several entries, none of which looks like one alone. The scan reads a list's words joined,
as its transcript spells them (by spaces: ``Bearer 9f8e...``) and run together (a key cut into
words), per message and across messages (`ssemock.scan.walk`); the masking masks them so and
the transcript that spelled them (`ssemock.redaction.masking`)."""

from __future__ import annotations

from typing import Any

__all__ = ["WORD", "scan_spoken", "spellings", "words_of"]

WORD = "word"
"""The member of each entry that holds its word."""


def words_of(value: Any) -> list[str] | None:
    """The words of a word list (a list of two or more objects, each with a string ``word``),
    or None when ``value`` is none."""
    if type(value) is not list or len(value) < 2 or type(value[0]) is not dict:
        return None  # (the first item tells most lists apart: a vector, a list of messages)
    words = [item.get(WORD) if type(item) is dict else None for item in value]
    return words if all(type(w) is str for w in words) else None  # type: ignore[return-value]


def spellings(words: list[str]) -> tuple[str, str]:
    """A word list's words as its transcript spells them (joined by spaces), and run together."""
    return " ".join(words), "".join(words)


def scan_spoken(scan: Any, field: str, words: list[str], path: str, depth: int, key: str) -> None:
    """A word list's words read joined by the walk's ``scan`` (`ssemock.scan.walk`): in one message,
    as its transcript spells them and run together; collected (across messages), spelled, under a
    piece key of their own (the plain words join run together under the words' own)."""
    if scan.collect:
        for word in words:
            scan.collected(f"{key}[].{WORD} spelled", word + " ")
        return
    for joined in dict.fromkeys(spellings(words)):
        scan.text(field, joined, f"{scan.prefix} {path}[].{WORD} joined".strip(), max(depth, 1))
