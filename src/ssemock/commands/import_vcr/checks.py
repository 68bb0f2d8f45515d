"""What an imported interaction is checked against: the fields vcrpy writes (others cannot be
carried over: an error, or dropped and listed with ``force``), text that is text, and the bytes
the bodies of one import may decode to."""

from __future__ import annotations

from typing import Any

BODY_EXPANSION = 16
"""Bodies may decode (gzip, YAML aliases) to 16x the file, plus BODY_FREE bytes."""
BODY_FREE = 64 << 20
"""The bytes a body may decode to beyond 16 times the file's size."""


class _Invalid(Exception):
    """A problem inside one interaction (turned into CassetteError with the file and index)."""


class _Budget:
    """Bytes the bodies of one import may decode to (gzip and YAML aliases can multiply them)."""

    def __init__(self, limit: int | None) -> None:
        self.left = limit

    def take(self, size: int, where: str) -> None:
        if self.left is None:
            return
        self.left -= size
        if self.left < 0:
            raise self.exceeded(where)

    @staticmethod
    def exceeded(where: str) -> _Invalid:
        return _Invalid(
            f"{where}: the bodies decode to more than an import allows ({BODY_EXPANSION}x the "
            f"file and {BODY_FREE >> 20} MB): a compression bomb?"
        )


class _Fields:
    """Fields of a vcrpy cassette that ssemock cannot carry over: an error naming the file, the
    interaction and the field, or -- with ``force`` -- dropped and listed in `dropped`."""

    def __init__(self, force: bool) -> None:
        self.force = force
        self.dropped: list[str] = []
        self.interaction: int | None = None
        self.label = ""  # the interaction's request, for messages: "POST https://..."

    def cannot_carry(self, where: str, why: str) -> None:
        at = "" if self.interaction is None else f"interaction {self.interaction}{self.label}: "
        if not self.force:
            raise _Invalid(
                f"{where}: {why}; ssemock cannot carry it over, so nothing is written "
                "(import with --force to drop it)"
            )
        self.dropped.append(f"{at}{where}: {why}")

    def unknown(self, mapping: dict[Any, Any], known: frozenset[str], where: str) -> None:
        for key in mapping:
            if key not in known:
                self.cannot_carry(_field(where, key), "a field vcrpy does not write (a custom serializer's?)")


def _field(where: str, key: Any) -> str:
    """``where.key``; ``where[key!r]`` for a key that is no plain name (a newline, a space at
    an end, an empty or non-string key): the message stays on one line, the key readable."""
    if isinstance(key, str) and key and key.isprintable() and key.strip() == key:
        return f"{where}.{key}" if where else key
    return f"{where}[{key!r}]" if where else repr(key)


_INTERACTION = frozenset({"request", "response"})
_REQUEST = frozenset(
    {"method", "uri", "url", "body", "headers", "parsed_body", "protocol", "host", "port", "path"}
)  # the last four: vcrpy < 1.0's layout
_RESPONSE = frozenset(
    {"status", "headers", "body", "parsed_body", "url", "status_code", "content", "http_version"}
)  # the last three: old httpx layout
_BODY = frozenset({"string", "base64_string"})


def _text(value: str, where: str) -> str:
    """``value``, if it can be written as UTF-8 (YAML's ``"\\ud800"`` makes a lone surrogate)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise _Invalid(f"{where} holds a lone surrogate (\\ud800-\\udfff), which is not text") from None
    return value
