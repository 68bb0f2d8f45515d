"""A run of a stream's events read at once by the plan of their shape
(`ssemock.scan.event_plans.Shapes.bulk`): their texts joined by NULs and read by one regex pass, or
by the accelerator's ops (`_speedups.plan_match`), which read every text ~8x faster and give the
same values (the pure-Python regex is the reference)."""

from __future__ import annotations

import re
from itertools import chain

from ..framing.accelerator import plan_match as _c_plan_match

__all__ = ["batch_of", "captured", "ops_of"]


def batch_of(pattern: str) -> re.Pattern[str]:
    """The regex that reads a run of a plan's events, joined by NULs and led by one, from the
    pattern that reads one (`ssemock.scan.event_plans._Planned.batched`)."""
    return re.compile("\x00" + pattern.replace('([^"]*)', '([^"\x00]*)') + "(?=\x00)")


# a capture, a digit, an escaped character, one
_TOKEN = re.compile(r'(\(\[\^"\]\*\))|(\[1-9\])|\\(.)|(.)', re.S)


def ops_of(pattern: str) -> tuple[str | bool, ...]:
    """A plan's pattern (`ssemock.scan.event_plans.Plan.regex`'s: its parts written by
    ``re.escape``, but for the captures and the digits from 1 to 9) as the accelerator's ops (`_speedups.plan_match`): its literals
    joined, True for a digit, False for a capture."""
    ops: list[str | bool] = []
    literal: list[str] = []
    for capture, digit, escaped, char in _TOKEN.findall(pattern):
        if capture or digit:
            if literal:
                ops.append("".join(literal))
                literal = []
            ops.append(bool(digit))
        else:
            literal.append(escaped or char)
    if literal:
        ops.append("".join(literal))
    return tuple(ops)


def _py_captured(batch: re.Pattern[str], texts: list[str]) -> list[str] | None:
    """The values ``batch`` (`batch_of`) captures in each of ``texts`` in turn, in text
    order; None when one is not of its shape (or holds a NUL, which no JSON text does)."""
    if "\x00" in "".join(texts):  # (a memchr: counting the NULs of the NUL-joined texts cost ~5x the
        return None  # join and the search)
    found = batch.findall("\x00".join(["", *texts, ""]))
    if len(found) != len(texts):
        return None
    width = batch.groups
    return found if width == 1 else list(chain.from_iterable(found)) if width else []


def captured(batch: re.Pattern[str], ops: tuple[str | bool, ...], texts: list[str]) -> list[str] | None:
    """`_py_captured`, read by the accelerator's ops where it reads every text (a str of one byte a
    character; ~8x faster than the regex, which takes a step a character)."""
    if _c_plan_match is not None:
        flat = _c_plan_match(ops, texts)
        if flat is not NotImplemented:
            return flat  # type: ignore[return-value]
    return _py_captured(batch, texts)
