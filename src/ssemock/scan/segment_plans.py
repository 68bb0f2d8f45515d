"""The members of a large stream's segment (`ssemock.scan.large_streams`), read per event shape at
C speed where the events repeat one shape.

The large-stream pass joins every string member's values per member name (what `STRING_MEMBER`
finds). Found by that regex, each member costs a Python step to sort it under its name. Most events
of a long stream are one JSON object repeated with other string values: the same keys, the same
text between its strings, other numbers. A `SegmentPlan`, made from one such event (a line that
parses as a JSON object), is a regular expression matching an object of that very shape: its keys
and the text between its strings written in, any number where it has a number, each string value
captured. ``re.split`` by it hands back, in C, the text between the events it matched (the gaps)
and the values of each matched event in text order: a member name's values are slices of that
list. Only gaps that hold a string (an event of another shape) are read by `STRING_MEMBER`, and
their members put in their place among the others.

What the plan reads is what `STRING_MEMBER` finds in those events: a matched event is a JSON object
of a shape that parsed, and in one, the regex finds exactly the members whose value is a string and
whose name is a plain name. Members are read event by event: a string of a gap that is never closed
(a data line that is not JSON) does not run on into the event after it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from itertools import chain, compress, repeat
from operator import contains

import orjson

__all__ = ["STRING_MEMBER", "SegmentPlan", "SegmentPlans", "Read", "members"]

# possessive and unrolled (no backtracking into a string): a pass over a large stream at C speed
STRING_MEMBER = re.compile(rb'"([A-Za-z0-9_]{1,40})"\s*+:\s*+"([^"\\]*+(?:\\.[^"\\]*+)*+)"')
_NAME = re.compile(rb"[A-Za-z0-9_]{1,40}")  # a member name STRING_MEMBER reads
_COLON = re.compile(rb"\s*+:\s*+")  # what STRING_MEMBER allows between a name and its string
_STRING = re.compile(rb'"((?:[^"\\]|\\.)*+)"')  # a string of a JSON text that parsed
_VALUE = rb'"([^"\\]*+(?:\\.[^"\\]*+)*+)"'  # any string, captured
_NUMBER = re.compile(rb"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?")  # a number of a JSON text that parsed
_ANY_NUMBER = rb"-?+\d++(?:\.\d++)?+(?:[eE][+-]?+\d++)?+"
_EVENT_MAX = 16 << 10  # an event longer than this makes no plan (its cost is in its own bytes)
_STRINGS_MAX = 64  # nor one with more quotes than twice this
_TRIES = 2  # events tried for a plan in a segment ...
_LINES = 16  # ... in this many lines at most
_IDLE = 4, 32  # segments read without a plan after plans made did not fit: at first, at most
_QUOTED_SHARE = 8  # a plan fits where at most one gap in this many holds a string ...
_COVERED_SHARE = 2  # ... and the gaps are at most one byte in this many of the segment

Read = tuple[dict[bytes, list[bytes]], bytes]
"""What a segment gives: the member values per name in text order, and the text its base64 runs
are searched in (its strings and the text outside them, each once)."""


def members(text: bytes) -> dict[bytes, list[bytes]]:
    """The string members of ``text`` per name, in text order, as `STRING_MEMBER` finds them."""
    groups: dict[bytes, list[bytes]] = {}
    if b'"' not in text:  # one memchr: the regex steps through every byte looking for its quote
        return groups
    for name, value in STRING_MEMBER.findall(text):
        group = groups.get(name)
        if group is None:
            groups[name] = [value]
        else:
            group.append(value)
    return groups


class SegmentPlan:
    """An event shape: the regular expression matching it and the member name of each value it captures."""

    def __init__(self, event: bytes) -> None:
        """``event``: a JSON object's text (parsed), with at most `_STRINGS_MAX` strings."""
        pieces = _STRING.split(event)  # outside, string, outside, ..., outside
        outside, strings = pieces[0::2], pieces[1::2]
        pattern = [_ANY_NUMBER.join(map(re.escape, _NUMBER.split(outside[0])))]
        names: dict[bytes, list[int]] = {}
        keys: list[bytes] = []
        key: bytes | None = None  # the key of the value that comes next
        captured = 0
        for string, after in zip(strings, outside[1:], strict=True):
            if after.lstrip().startswith(b":"):  # a key
                pattern.append(b'"' + re.escape(string) + b'"')
                keys.append(string)
                key = string if _COLON.fullmatch(after) else None  # not a string in an array
            else:
                pattern.append(_VALUE)
                if key is not None and _NAME.fullmatch(key):
                    names.setdefault(key, []).append(captured)
                captured, key = captured + 1, None
            pattern.append(_ANY_NUMBER.join(map(re.escape, _NUMBER.split(after))))
        self.pattern = re.compile(b"".join(pattern))
        self.names = names  # member name -> its captured values' places in an event, in order
        self.literal = b" ".join(chain(outside, keys))

    def read(self, segment: bytes) -> Read | None:
        """The members of ``segment`` and its base64 text, or None where the shape does not fit it
        (its events match under half the segment, or events of other shapes hold strings often)."""
        parts = self.pattern.split(segment)
        stride = self.pattern.groups + 1
        gaps = parts[0::stride]
        events = len(gaps) - 1
        if events < 2 or sum(map(len, gaps)) * _COVERED_SHARE > len(segment):
            return None
        quoted = list(compress(range(len(gaps)), map(contains, gaps, repeat(b'"'))))
        if len(quoted) * _QUOTED_SHARE > events:
            return None
        captures = [parts[g::stride] for g in range(1, stride)]  # each captured value, event by event
        columns = {name: _column(captures, places) for name, places in self.names.items()}
        if quoted:
            columns = self._interleaved(columns, gaps, quoted)
        values = set(chain.from_iterable(captures))
        return columns, b" ".join(chain(values, set(gaps), (self.literal,)))

    def _interleaved(
        self, columns: dict[bytes, list[bytes]], gaps: list[bytes], quoted: list[int]
    ) -> dict[bytes, list[bytes]]:
        """The members of the gaps that hold strings, each in its place among the events'
        (event ``j`` follows gap ``j``)."""
        out: dict[bytes, list[bytes]] = {name: [] for name in columns}
        start = 0
        for q in quoted:
            for name, column in columns.items():
                per = len(self.names[name])
                out[name] += column[start * per : q * per]
            for name, values in members(gaps[q]).items():
                out.setdefault(name, []).extend(values)
            start = q
        for name, column in columns.items():
            out[name] += column[start * len(self.names[name]) :]
        return out


class SegmentPlans:
    """The plan a large stream's segments are read by: kept while it fits, made again from the
    segment where it stops fitting (a line near its middle), none for a while where that fails
    (longer each time: a stream whose shapes never repeat pays for a plan tried now and then)."""

    def __init__(self) -> None:
        self._plan: SegmentPlan | None = None
        self._idle = 0  # segments still to read without a plan
        self._wait = _IDLE[0]  # ... after the next plans made do not fit (doubled each time)

    def read(self, segment: bytes) -> Read | None:
        """The members and base64 text of ``segment`` (whole lines), or None: read it with
        `members` and search the whole segment for base64 runs."""
        if self._plan is not None:
            read = self._plan.read(segment)
            if read is not None:
                return read
            self._plan = None
        if self._idle:
            self._idle -= 1
            return None
        for event in _events(segment):
            plan = SegmentPlan(event)
            read = plan.read(segment)
            if read is not None:
                self._plan, self._wait = plan, _IDLE[0]
                return read
        self._idle, self._wait = self._wait, min(2 * self._wait, _IDLE[1])
        return None


def _events(segment: bytes) -> Iterable[bytes]:
    """Up to `_TRIES` JSON objects of one line each, from the line at the segment's middle on
    (`_LINES` lines at most)."""
    at, tried = len(segment) // 2, 0
    for _ in range(_LINES):
        start = segment.rfind(b"\n", 0, at) + 1
        stop = segment.find(b"\n", at)
        stop = len(segment) if stop < 0 else stop
        opened, closed = segment.find(b"{", start, stop), segment.rfind(b"}", start, stop)
        if 0 <= opened < closed and closed - opened < _EVENT_MAX:
            event = segment[opened : closed + 1]
            if event.count(b'"') <= 2 * _STRINGS_MAX and _is_object(event):
                yield event
                tried += 1
                if tried == _TRIES:
                    return
        at = stop + 1
        if at >= len(segment):
            return


def _is_object(text: bytes) -> bool:
    try:
        return isinstance(orjson.loads(text), dict)
    except orjson.JSONDecodeError:
        return False


def _column(captures: list[list[bytes]], places: list[int]) -> list[bytes]:
    """A name's values in text order: its captures at ``places`` in each event, event by event."""
    if len(places) == 1:
        return captures[places[0]]
    return list(chain.from_iterable(zip(*(captures[p] for p in places), strict=True)))
