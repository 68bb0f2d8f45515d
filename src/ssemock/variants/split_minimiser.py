"""The split minimiser: a split of a body under which a check fails, shrunk by delta debugging
until every boundary left is needed (`minimal_failing_split`), and where each boundary falls,
in words (`describe_boundary`)."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from .boundary_draws import _BOM
from .chunking import At, at

__all__ = ["MinimalSplit", "describe_boundary", "minimal_failing_split"]

_NEWLINE = re.compile(rb"\r\n|\r|\n")


@dataclass(frozen=True)
class MinimalSplit:
    """A 1-minimal failing split: removing any single one of ``boundaries`` makes the check pass.

    ``ends`` are the chunk ends (``boundaries`` plus ``len(body)``), ``explanation`` says in words
    where each boundary falls, ``calls`` how many times ``fails`` ran.
    """

    ends: list[int]
    """The chunk ends (`boundaries` plus the body's length)."""
    boundaries: list[int]
    """The boundaries: removing any single one makes the check pass."""
    explanation: str
    """Where each boundary falls, in words."""
    calls: int = 0
    """How many times the check ran."""
    chunking: At = field(default_factory=at, compare=False, repr=False)
    """An [`At`][ssemock.strategies.At] chunking that serves exactly this split."""

    def chunks(self, body: bytes) -> list[bytes]:
        """``body`` cut at the boundaries."""
        return self.chunking(body)


def _chunks(body: bytes, cuts: Sequence[int]) -> list[bytes]:
    starts = [0, *cuts]
    stops = [*cuts, len(body)]
    return [body[a:b] for a, b in zip(starts, stops)]


def minimal_failing_split(
    body: bytes,
    fails: Callable[[list[bytes]], bool],
    ends: Sequence[int] | None = None,
) -> MinimalSplit:
    """Shrink a failing split of ``body`` to a 1-minimal set of boundaries, and explain it.

    ``ends`` are the chunk ends of a split under which ``fails(chunks)`` is true (default: byte
    by byte); ``ValueError`` if it is not. Boundaries are removed by delta debugging: first whole
    halves, then smaller and smaller parts, down to single boundaries, until no single removal
    keeps it failing. Later parts are tried first, so of several boundaries that each break the
    decoder, the earliest is kept. When one boundary is to blame, that takes about ``2 log2(n)`` calls for
    ``n`` boundaries; ``k`` remaining boundaries cost ``O(k log n)``.
    """
    size = len(body)
    given = list(range(1, size + 1)) if ends is None else list(ends)
    cuts = sorted({e for e in given if 0 < e < size})
    cache: dict[tuple[int, ...], bool] = {}
    calls = 0

    def test(candidate: list[int]) -> bool:
        nonlocal calls
        key = tuple(candidate)
        if key not in cache:
            calls += 1
            cache[key] = bool(fails(_chunks(body, candidate)))
        return cache[key]

    if not test(cuts):
        raise ValueError(
            f"the given split ({len(cuts)} boundaries, {_names(cuts)}) does not fail: nothing to minimise"
        )
    n = 2
    while cuts:
        if len(cuts) == 1:
            if test([]):
                cuts = []
            break
        n = min(n, len(cuts))
        parts = _partition(cuts, n)
        for part in reversed(parts):  # try removing each part, the last first (keep early boundaries)
            drop = set(part)
            rest = [c for c in cuts if c not in drop]
            if test(rest):
                cuts = rest
                n = max(n - 1, 2)
                break
        else:
            if n >= len(cuts):
                break  # no single boundary can be removed: 1-minimal
            n = min(2 * n, len(cuts))
    split = at(*cuts)
    return MinimalSplit([*cuts, size] if size else [], list(cuts), _explain(body, cuts), calls, split)


def _names(cuts: Sequence[int]) -> str:
    shown = ",".join(map(str, cuts[:8])) + (",..." if len(cuts) > 8 else "")
    return f"at:{shown}"


def _partition(items: list[int], n: int) -> list[list[int]]:
    """``items`` in ``n`` contiguous parts of near-equal size."""
    size, extra = divmod(len(items), n)
    out, pos = [], 0
    for i in range(n):
        step = size + (1 if i < extra else 0)
        out.append(items[pos : pos + step])
        pos += step
    return [p for p in out if p]


def _explain(body: bytes, cuts: Sequence[int]) -> str:
    if not cuts:
        return (
            "fails with no boundary at all (the whole body in one chunk): the failure does not "
            "depend on chunking"
        )
    if len(cuts) == 1:
        return (
            f"fails when a boundary falls at byte {cuts[0]} ({describe_boundary(body, cuts[0])}); "
            "passes with that boundary alone removed"
        )
    listed = [f"{c} ({describe_boundary(body, c)})" for c in cuts]
    joined = ", ".join(listed[:-1]) + " and " + listed[-1]
    return f"fails when boundaries fall at bytes {joined}; passes with any one of them alone removed"


@dataclass(frozen=True)
class _Line:
    start: int  # first byte of the line
    stop: int  # end of its content (its line ending starts here)
    end: int  # after its line ending
    event: int  # 0-based index of the blank-line-framed block it is in


def _lines(body: bytes) -> list[_Line]:
    out: list[_Line] = []
    pos, event = 0, 0
    if body.startswith(_BOM):
        pos = 3
    for m in _NEWLINE.finditer(body, pos):
        out.append(_Line(pos, m.start(), m.end(), event))
        if m.start() == pos:
            event += 1
        pos = m.end()
    if pos < len(body):
        out.append(_Line(pos, len(body), len(body), event))
    return out


def _char_at(body: bytes, b: int) -> tuple[int, bytes] | None:
    """The multi-byte UTF-8 character that a cut at ``b`` splits: (its start, its bytes)."""
    if not 0 < b < len(body) or not 0x80 <= body[b] < 0xC0:
        return None
    start = b - 1
    while start > max(0, b - 4) and 0x80 <= body[start] < 0xC0:
        start -= 1
    lead = body[start]
    width = 2 if 0xC0 <= lead < 0xE0 else 3 if 0xE0 <= lead < 0xF0 else 4 if 0xF0 <= lead < 0xF8 else 0
    if not width or start + width <= b:
        return None
    raw = body[start : start + width]
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return start, raw


def _excerpt(text: bytes, limit: int = 24) -> str:
    s = text.decode("utf-8", "replace")
    return repr(s if len(s) <= limit else s[: limit - 4] + "...")


def describe_boundary(body: bytes, b: int) -> str:
    """Where a chunk boundary at byte ``b`` of ``body`` falls, in words.

    Names a multi-byte UTF-8 character it splits, a CRLF it splits, a field name or the
    ``data: `` prefix it cuts, or the line it is in, and the 0-based event (counted by
    blank-line framing, comment-only blocks included) it is in.
    """
    if not 0 < b < len(body):
        return f"outside the body (0..{len(body)})"
    if body.startswith(_BOM) and b < 3:
        return f"inside the leading BOM (after its byte {b} of 3), event 0"
    lines = _lines(body)
    line = next((ln for ln in lines if ln.start <= b < ln.end), lines[-1] if lines else None)
    if line is None:  # pragma: no cover - b is inside the body, so some line holds it
        return f"at byte {b}"
    content = body[line.start : line.stop]
    where = f"event {line.event}, line {_excerpt(content)}"
    if line.stop < b < line.end:
        if not content:
            return f"between the CR and LF of a blank line's CRLF (the end of event {line.event})"
        return f"between the CR and LF of a CRLF line ending, {where}"
    if b == line.start:
        if line.stop == line.start:
            return f"at the start of a blank line (the end of event {line.event})"
        return f"at the start of a line, {where}"
    if b == line.stop:
        return f"just before a line ending, {where}"
    k = b - line.start
    char = _char_at(body, b)
    if char is not None:
        start, raw = char
        ch = raw.decode("utf-8")
        what = f"inside {ch!r} (U+{ord(ch):04X}, a {len(raw)}-byte character, after its byte {b - start})"
        return f"{what}, {where}"
    colon = content.find(b":")
    if content.startswith(b":"):
        return f"inside a comment line, {where}"
    if content.startswith(b"data: ") and k < 6:
        return f"inside the 'data: ' prefix (after {content[:k].decode()!r}), {where}"
    if k == colon:
        return f"between the field name {_excerpt(content[:k])} and its colon, {where}"
    if colon < 0 or k < colon:
        name = content if colon < 0 else content[:colon]
        return f"inside the field name {_excerpt(name)} (after {_excerpt(content[:k])}), {where}"
    if k == colon + 1 and content[colon + 1 : colon + 2] == b" ":
        return f"between {_excerpt(content[: colon + 1])} and its space, {where}"
    name = content[:colon]
    value_start = colon + 2 if content[colon + 1 : colon + 2] == b" " else colon + 1
    if k == value_start:
        return f"just after the {_excerpt(content[:k])} prefix, before the value, {where}"
    return (
        f"inside the value of the {_excerpt(name)} field (after byte {k - value_start} of "
        f"{len(content) - value_start}), {where}"
    )
