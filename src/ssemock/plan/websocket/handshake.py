"""The HTTP/1.1 heads of a replayed WebSocket handshake: the 101 (or a refusal) a replay answers
with, and the client's request head read into its headers."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["handshake_head", "parse_request_head"]


def handshake_head(status: int, reason: str, headers: Sequence[tuple[str, str]]) -> bytes:
    """An HTTP/1.1 response head: latin-1, as HTTP/1.1 carries it (a header edited beyond it,
    or imported from a HAR, in UTF-8, as `serve` writes it)."""
    lines = [f"HTTP/1.1 {status} {reason}", *(f"{k}: {v}" for k, v in headers)]
    text = "\r\n".join(lines) + "\r\n\r\n"
    try:
        return text.encode("latin-1")
    except UnicodeEncodeError:
        return text.encode("utf-8")


def parse_request_head(head: bytes) -> dict[str, str]:
    """The headers of a request head, by lower-case name (repeated ones joined with ", ")."""
    headers: dict[str, str] = {}
    for line in head.decode("latin-1").split("\r\n")[1:]:
        name, sep, value = line.partition(":")
        if sep:
            key = name.strip().lower()
            headers[key] = f"{headers[key]}, {value.strip()}" if key in headers else value.strip()
    return headers
