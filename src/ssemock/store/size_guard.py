"""The size guard of a cassette file: JSON text with more values than a file of its size may
hold is refused before a parser builds them."""

from __future__ import annotations

import os
import re

from ..framing.accelerator import values as _c_values
from .model import CassetteError

__all__ = ["BYTES_PER_VALUE", "FREE_VALUES", "check_size"]

FREE_VALUES = 1_000_000  # a cassette may hold this many JSON values at any size ...
BYTES_PER_VALUE = 16  # ... and one more per 16 bytes (ssemock's indented layout takes more)
_PAIR_BREAK = b"],\n          ["  # between two chunk map pairs (10 spaces in): see check_size


_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')


def _py_values(data: bytes) -> int:
    """About how many JSON values ``data`` holds: every one after the first in a list or object
    follows a comma, every list or object opens with a bracket."""
    return data.count(b",") + data.count(b"[") + data.count(b"{")


_values = _c_values or _py_values  # the optional C accelerator: the same count in one pass


def check_size(
    raw: bytes | str, *, path: str | os.PathLike[str] | None = None, size: int | None = None
) -> None:
    """Refuse JSON text with more values than a cassette of its size can hold (CassetteError),
    before a parser builds them: 100 MB of ``{},{},...`` would take GBs as Python objects. Parsed
    memory then stays within a small multiple of the file (one value per 16 bytes at most, past
    the first million). In ssemock's own layout every value takes a line of its own but for the
    chunk maps' ``[t_ms, end]`` pairs, three values to a line of 20 bytes or more; so the break
    between two pairs (``],``, newline, indent, ``[``: 14 bytes) is not counted and a pair counts
    as one value (a file of nothing but such breaks holds an empty list per 14 bytes: as bounded).

    ``size``: the whole file's, when ``raw`` is the file without its bodies."""
    data = raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else raw
    size = len(data) if size is None else size
    limit = FREE_VALUES + size // BYTES_PER_VALUE
    if len(data) // 2 + 1024 <= limit:  # a value takes 2 bytes, or 1 in a chain of brackets (at
        return  # most 1024 deep): a small document needs no count
    count = _values(data)
    if count <= limit or (count := count - 2 * data.count(_PAIR_BREAK)) <= limit:
        return  # what strings hold only lowers the count (a break in one is two values of its own)
    for m in _STRING.finditer(data):  # strings' own don't count
        text = m.group()
        count -= _values(text) - 2 * text.count(_PAIR_BREAK)
    if count > limit:
        raise CassetteError(
            f"holds about {count:,} JSON values in {size:,} bytes, more than a cassette "
            f"of this size may ({limit:,}: {FREE_VALUES:,} and one per {BYTES_PER_VALUE} bytes); "
            "is it a cassette? (a hand-made compact one: indent it, e.g. python -m json.tool)",
            path=path,
        )
