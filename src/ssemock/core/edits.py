"""Editing bytes while carrying chunk ends along: what transforms and redaction both do to a body
whose boundary map must stay true."""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["Edit", "rewrite"]

Edit = tuple[int, int, bytes]
"""Replace body[start:end] with the bytes."""


def rewrite(body: bytes, edits: Iterable[Edit], ends: list[int]) -> tuple[bytes, list[int]]:
    """``body`` with each (start, end, replacement) edit made (sorted, apart), and the (sorted) chunk
    ``ends`` carried over as [`ssemock.transforms.apply`][ssemock.transforms.apply] says: one merge walk over both."""
    out: list[bytes] = []
    new_ends: list[int] = []
    pos = shift = j = 0
    n = len(ends)
    for s, t, r in edits:
        while j < n and ends[j] <= s:
            new_ends.append(ends[j] + shift)
            j += 1
        while j < n and ends[j] < t:
            new_ends.append(s + shift + min(ends[j] - s, len(r)))
            j += 1
        out.append(body[pos:s])
        out.append(r)
        pos = t
        shift += len(r) - (t - s)
    new_ends.extend(e + shift for e in ends[j:])
    out.append(body[pos:])
    new = b"".join(out)
    if new_ends and ends[-1] == len(body):  # the end of the stream stays its end
        new_ends[-1] = len(new)
    return new, new_ends
