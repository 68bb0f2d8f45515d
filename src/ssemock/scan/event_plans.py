"""The piece keys of a JSON walk (`ssemock.scan.walk`), and plans that collect the strings of a
stream's events without walking them again.

A stream's events repeat a few shapes: the same keys at the same paths, the same numbers and
literals; only their strings' values differ (a delta's text, an id). An event's text cut at its
quotes (``str.split``, C speed) gives its shape (what lies outside its strings) and its strings.
Once an event of a shape has been walked, a `Plan` of that shape says, per string value in text
order, its path, its piece key and the piece lists it joins: the events of that shape seen after
it are read from their cut text (their values taken out by ``operator.itemgetter``, JSON escapes
undone by one ``orjson`` parse of all of them), never walked in Python.

A plan is made only where the cut is sound: no ``\\"`` in the text (every quote then ends or
starts a string), every object's keys distinct (the parsed object then holds the strings in text
order), no credential name on a member whose value is not a string. An event read by a plan is
valid JSON of the same shape: what lies outside its strings is, character for character, that
of an event that parsed; its keys are checked; its values are valid JSON strings (``orjson``
parsed them; or they hold no backslash, no control character and no surrogate).
"""

from __future__ import annotations

import functools
import math
import re
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import chain, cycle, repeat
from operator import add, call, itemgetter, methodcaller
from typing import Any, Protocol

import orjson

from ..framing.accelerator import unfit as _c_unfit
from .batch_match import batch_of, captured, ops_of
from .credential_shapes import has_b64_run
from .fields import credential_member, credential_member_name
from .word_lists import words_of

__all__ = [
    "Plan",
    "Shapes",
    "Slot",
    "cut",
    "json_key",
    "labels",
    "members",
    "piece_keys",
    "plain_key",
    "plan_of",
    "worth",
]


def worth(text: str) -> bool:
    """Whether a string is worth decoding further: JSON in it, a URL or a form, a base64 run (16
    characters of base64 or base64url in a row). What ``re.search(r"[{\\[]|://|=|[A-Za-z0-9+/_\\-]{16}",
    text)`` finds, at C speed (that search tries every alternative at every position)."""
    # "/" before "://": one memchr each (the 3-character search costs ~1 ns a character of prose)
    return (
        "{" in text
        or "[" in text
        or "=" in text
        or (":" in text and "/" in text and "://" in text)
        or has_b64_run(text)
    )


_UNFIT = re.compile("[\x00-\x1f\ud800-\udfff]")  # in a JSON string, only escaped


def _py_unfit(text: str) -> bool:
    """Whether ``text`` holds a character `_UNFIT` finds (``isprintable`` first: C speed, where
    the search steps through every character; the reference of the accelerator's pass)."""
    return not text.isprintable() and _UNFIT.search(text) is not None


_unfit = _c_unfit or _py_unfit


@functools.lru_cache(maxsize=4096)
def json_key(path: str, key: str) -> str:
    """The JSON path of member ``key`` of the object at ``path``."""
    return f"{path}.{key}" if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]*", key) else f"{path}[{key!r}]"


_INDEX_NAME = re.compile(r"index|\w+_index|\w+Index")  # index, output_index, contentBlockIndex
_LABEL = re.compile(r"\{\w+=(?:-?\d+|'[^']*')\}")  # {index=1}, and a message's {type='...'}


def labels(value: dict[Any, Any], keys: tuple[Any, ...]) -> str:
    """The index members of an object (``{index=1}``): what tells apart the pieces of two streamed
    fields at one JSON path (two tool calls, two choices, two content blocks), whatever the
    protocol: ``$.choices[]{index=0}.delta.tool_calls[]{index=1}.function.arguments``."""
    names = _index_names(keys)
    return "".join(f"{{{k}={value[k]}}}" for k in names if type(value[k]) is int) if names else ""


@functools.lru_cache(maxsize=4096)  # a stream's events repeat a few objects' keys at a few paths
def members(keys: tuple[Any, ...], path: str, labelled: str) -> tuple[Any, ...]:
    """Per key of an object at ``path`` whose piece key is ``labelled``: (key, name, its path, its
    piece key, the keys its strings join under, whether its name may say credential)."""
    out = [(k, str(k), json_key(path, str(k)), json_key(labelled, str(k))) for k in keys]
    return tuple((k, n, w, p, piece_keys(p), credential_member_name(n)) for k, n, w, p in out)


@functools.lru_cache(maxsize=4096)
def piece_keys(key: str) -> tuple[str, ...]:
    """The keys a string with piece key ``key`` joins under: with its index labels and without."""
    plain = plain_key(key)
    return (key,) if plain == key else (key, plain)


@functools.lru_cache(maxsize=4096)
def _index_names(keys: tuple[Any, ...]) -> tuple[Any, ...]:
    """Which of an object's keys are named like an index (the events of a stream share a few key sets)."""
    return tuple(k for k in keys if _INDEX_NAME.fullmatch(str(k)))


@functools.lru_cache(maxsize=4096)
def plain_key(key: str) -> str:
    """A piece key without its index labels: the pieces of one path whatever their index (an
    ``index`` member that counts events rather than naming a field)."""
    return _LABEL.sub("", key)


@dataclass(frozen=True)
class Slot:
    """A string value of a planned event: its path, its piece key, the keys it joins under, and
    its member's name when that name may say credential (else None)."""

    where: str
    piece: str
    pieces: tuple[str, ...]
    name: str | None


@dataclass(frozen=True)
class Plan:
    """How to read an event of one shape."""

    regex: re.Pattern[str]
    """Matches (whole) the events cut (`cut`) into that shape with the same keys and index labels
    (its parts outside strings written out, but for their digits: ``0``, or ``[1-9]``), and
    captures their string values, as written (escapes not undone)."""
    pattern: tuple[str, ...]
    """The pattern of each part of the cut text (``regex``'s, joined by quotes)."""
    value_parts: tuple[int, ...]
    """Which part each value is."""
    slots: tuple[Slot, ...]
    """Where each value goes."""
    named: bool
    """Whether some slot's name may say credential."""
    spread: int
    """The most piece keys a value joins under (what its size counts for, at most)."""


_JSON_SPACE = " \t\r\n"
# the shape keeps which digits of a number are zeros (what makes it valid JSON: ``01`` is not) ...
_DIGITS = str.maketrans("23456789", "11111111")
# ... and a number of that pattern may overflow to infinity (orjson refuses it): no plan then
_HUGE = re.compile(r"\d{200}|[eE][+-]?\d{3}")


def cut(text: str) -> tuple[list[str], str] | None:
    """``text`` cut at its quotes, and its shape (what lies outside its strings: the even parts,
    their digits but 0 written 1), or None when a quote may be escaped (``\\"``) or the quotes
    are not paired."""
    if "\\" in text and '\\"' in text:
        return None
    parts = text.split('"')
    if not len(parts) & 1:
        return None
    return parts, '"'.join(parts[::2]).translate(_DIGITS)


class _NoPlan(Exception):
    pass


def plan_of(parts: list[str], parsed: Any) -> Plan | None:
    """The plan of the event whose cut text is ``parts`` and which parsed to ``parsed`` (its walk
    from ``$`` as `ssemock.scan.walk` walks it), or None when its strings cannot be read by one."""
    key_at = [i for i in range(1, len(parts), 2) if parts[i + 1].lstrip(_JSON_SPACE)[:1] == ":"]
    slots: list[Slot] = []
    exact_at: set[int] = set()
    seen = [0]  # keys walked, in text order

    def walk(value: Any, path: str, key: str) -> None:
        if isinstance(value, dict):
            keys = tuple(value)
            for k, name, where, piece, pieces, named in members(keys, path, key + labels(value, keys)):
                at = seen[0]
                seen[0] += 1
                v = value[k]
                if type(v) is str:
                    slots.append(Slot(where, piece, pieces, name if named else None))
                elif named:  # decided by its value: a number, null, an object (never planned)
                    raise _NoPlan
                elif isinstance(v, (dict, list)):
                    walk(v, where, piece)
                elif k in _index_names(keys) and at < len(key_at):
                    exact_at.add(key_at[at] + 1)  # the part after the key (``:1,``): written out
        elif isinstance(value, list):
            if words_of(value) is not None:  # read joined too (`ssemock.scan.walk`): walked
                raise _NoPlan
            for i, v in enumerate(value):
                where = f"{path}[{i}]"
                if type(v) is str:
                    slots.append(Slot(where, key + "[]", piece_keys(key + "[]"), None))
                elif isinstance(v, (dict, list)):
                    walk(v, where, key + "[]")

    try:
        walk(parsed, "$", "$")
    except _NoPlan:
        return None
    keys = set(key_at)
    if seen[0] != len(keys) or len(slots) != len(parts) // 2 - len(keys):  # a key repeated in an object
        return None
    if _HUGE.search("".join(parts[::2])):
        return None
    pattern = [
        (re.escape(part) if i in exact_at else re.sub("[1-9]", "[1-9]", re.escape(part)))
        if not i & 1
        else (re.escape(part) if i in keys else '([^"]*)')
        for i, part in enumerate(parts)
    ]
    return Plan(
        re.compile('"'.join(pattern)),
        tuple(pattern),
        tuple(i for i in range(1, len(parts), 2) if i not in keys),
        tuple(slots),
        any(s.name is not None for s in slots),
        max((len(s.pieces) for s in slots), default=1),
    )


Getter = Callable[[tuple[str, ...]], tuple[str, ...]]


def _getter(at: list[int]) -> Getter:
    """The items at ``at``, as a tuple (`itemgetter` of one index returns the item alone)."""
    if len(at) < 2:
        return itemgetter(slice(at[0], at[0] + 1) if at else slice(0, 0))
    return itemgetter(*at)


class Walker(Protocol):
    """What `Shapes` reads an event into (`ssemock.scan.walk._Scan`)."""

    total: int
    prefix: str
    recording: list[list[tuple[str, str]]]
    done: set[str]
    nested: dict[tuple[str, str], list[tuple[str, str]]]

    def json(self, field: str, value: Any, path: str, depth: int, key: str = "$") -> None: ...

    def add(self, field: str, rule: str, value: str | bytes, preview: str, path: str = "") -> None: ...


REASSEMBLE_MAX = 8 << 20
"""Characters of reassembled text kept per piece key, at most (a key is short; a body may not be)."""
_PLANS = 1024  # event shapes remembered per stream, at most
_GROUPS = methodcaller("groups")
REPEAT_KEPT = 8 << 10
"""Characters of one value repeated in a row kept in its piece list (`_Planned.repeated`): a key
streamed in pieces is far shorter, and a key in the value itself is found in one copy."""
_LITERAL_MAX = 1024  # characters of stable values written into a regex (`_Planned.faster`), at most


class _Planned:
    """A plan, the appends of its values to their piece lists, and which of its values are
    ``stable``: the same, as written, in the last two events it read one by one, and known to
    need only collecting (no credential name, nothing to decode, or decoded already: an id repeated
    in every event). An event whose stable values are those again is read in bulk: its other
    values alone undone, checked and tested, every value collected by C-level calls."""

    def __init__(self, plan: Plan, pieces: dict[str, list[str]]) -> None:
        self.plan = plan
        self.pieces = pieces
        self.batch_of: re.Pattern[str] | None = None  # the regex `batch` was made from
        self.appends = tuple(tuple(pieces.setdefault(k, []).append for k in s.pieces) for s in plan.slots)
        self.last: tuple[str, ...] | None = None  # the values of the last event read one by one
        self.settles = 0
        self.stable_slots: tuple[int, ...] = ()
        self.stable_at: Getter = _getter([])
        self.stable: tuple[str, ...] = ()
        self.settle((), (), ())

    def settle(self, raw: tuple[str, ...], values: tuple[str, ...], stable: tuple[int, ...]) -> None:
        """The slots at ``stable`` hold stable values: ``raw`` as written, ``values`` decoded."""
        if self.settles and stable == self.stable_slots and self.stable_at(raw) == self.stable:
            return  # the same stable values again (an event read one by one, its others worth decoding)
        slots = range(len(self.plan.slots))
        vary = [i for i in slots if i not in stable]
        self.stable_slots = stable
        self.stable_at = _getter(list(stable))
        self.stable = self.stable_at(raw)
        self.stable_values = self.stable_at(values)
        self.stable_size = sum(map(len, self.stable))
        self.vary_at = _getter(vary)
        order = [*stable, *vary]  # where each slot's value is in stable values + vary values
        self.flat_appends = tuple(a for appends in self.appends for a in appends)
        self.flat_at = _getter([order.index(i) for i in slots for _ in self.appends[i]])
        self.settles += 1
        self.fast: re.Pattern[str] | None = None  # made when a run is read
        self.batch: re.Pattern[str] | None = None
        self.ops: tuple[str | bool, ...] = ()  # `batch` as the accelerator's ops (`_ops`)
        self.columns = self._columns()

    def _columns(self) -> tuple[tuple[list[str], int, bool], ...] | None:
        """Per piece list the values of a run join, in order: the list, the slot whose values it
        takes (a stable slot: ``-1 - i``, its ``i``-th stable value; else its place among the
        values that vary) and whether a stable value's copies may be squeezed there (`repeated`;
        not in AWS payload parts, each decoded alone); None where a list takes the values of two
        slots (a list of strings: its values interleave)."""
        keys = [slot.pieces for slot in self.plan.slots]
        lists = [[self.pieces[k] for k in each] for each in keys]
        if len({id(x) for each in lists for x in each}) < sum(map(len, lists)):
            return None
        vary = [i for i in range(len(lists)) if i not in self.stable_slots]
        where = {i: -1 - n for n, i in enumerate(self.stable_slots)} | {i: n for n, i in enumerate(vary)}
        self.repeats: list[tuple[str | None, int, str]] = [(None, 0, "")] * sum(map(len, lists))
        return tuple(
            (self.pieces[k], where[i], not k.endswith(".bytes")) for i, each in enumerate(keys) for k in each
        )

    def repeated(self, column: int, pieces: list[str], value: str, n: int) -> None:
        """Add ``n`` copies of ``value`` to ``pieces``, the list of column ``column``, as one
        string: all of them while the copies in a row there (added so, nothing since) are under
        `REPEAT_KEPT` characters; then only what keeps the text after them where it was, as a
        decoder reads it (those left out: a multiple of 12 characters, so of every base64, hex and
        UTF-16 group). An id or a type in every event is then joined from a few KB, not from a
        copy an event (a third of the scan of a 1 MB stream was those copies)."""
        last, kept, was = self.repeats[column]
        if not pieces or pieces[-1] is not last or was != value:
            kept = 0
        more = n if kept < REPEAT_KEPT else n % (12 // math.gcd(len(value), 12))
        if more:
            pieces.append(last := value * more)
            self.repeats[column] = (last, kept + len(last), value)

    def batched(self) -> re.Pattern[str] | None:
        """The regex that reads a run of events in one pass, their texts joined by NULs (which no
        text of theirs holds) and led by one: `faster`'s (``plan.regex`` with no stable value),
        each match a NUL, a whole text and the NUL after it, a value captured short of any NUL.
        None when there is no `faster`, or a list takes the values of two slots."""
        regex = self.faster() if self.stable else self.plan.regex
        if regex is None or self.columns is None:
            return None
        if self.batch is None or self.batch_of is not regex:
            self.batch, self.batch_of = batch_of(regex.pattern), regex
            self.ops = ops_of(regex.pattern)
        return self.batch

    def faster(self) -> re.Pattern[str] | None:
        """``plan.regex`` with the stable values written in: it captures only the others (made
        for the first few stable sets: an id that changes every few events is not worth it; and
        for stable values of `_LITERAL_MAX` characters at most: a 16 KB value took ~20-100 ms to
        compile, and its match costs what capturing it and comparing it does)."""
        if self.fast is None and self.stable and self.settles <= 8 and self.stable_size <= _LITERAL_MAX:
            pattern = list(self.plan.pattern)
            for i, value in zip(self.stable_slots, self.stable):
                pattern[self.plan.value_parts[i]] = re.escape(value)
            self.fast = re.compile('"'.join(pattern))
        return self.fast


def _undone(raw: Sequence[str]) -> tuple[tuple[str, ...], str] | None:
    """String values as written between a JSON text's quotes, as JSON reads them, and joined by
    spaces (what `worth` tests: a space joins no match): their escapes undone by one parse of them
    all (which checks them). None where one is no JSON string's content, or may not end where
    JSON ends it: a control character or a surrogate unescaped, a backslash at its end (a quote
    escaped: the text is not cut where JSON cuts it)."""
    joined = " ".join(raw)
    if "\\" not in joined:
        if _unfit(joined):
            return None
        return tuple(raw), joined
    if any(map(methodcaller("endswith", "\\"), raw)):
        return None
    try:
        values = tuple(orjson.loads('["' + '","'.join(raw) + '"]'))
    except orjson.JSONDecodeError:
        return None
    return (values, " ".join(values)) if len(values) == len(raw) else None


def _reserve(walker: Walker, size: int) -> bool:
    """Whether ``size`` more characters fit the walker's piece lists under `REASSEMBLE_MAX` (counted then)."""
    if walker.total + size >= REASSEMBLE_MAX:
        return False
    walker.total += size
    return True


BATCH_FIRST = 64
"""Events of a stream the walk tries to read together first, and walks one by one at most after
a run failed (`ssemock.scan.walk._Scan.stream`)."""
PLANNED_MIN = 64
"""Events a whole body's stream has, at least, for its events to be read by plans (`Shapes.whole`)."""


class Shapes:
    """The event shapes of one stream: each seen once (False), with no plan (True), or planned."""

    def __init__(self) -> None:
        self._plans: dict[str, _Planned | bool] = {}
        self._last: _Planned | None = None  # the plan that read the last event read
        self._cut: tuple[str, tuple[list[str], str] | None] | None = None  # the last event cut
        self.off = False  # no plan made or read until `clear`: every event walked (`whole`)
        self.batch = BATCH_FIRST  # events the walk tries to read together next (`_Scan.stream`)

    def clear(self) -> None:
        self._plans.clear()
        self._last = self._cut = None
        self.off = False
        self.batch = BATCH_FIRST

    def whole(self, events: int) -> None:
        """A whole stream of ``events`` events is walked next: no plan under `PLANNED_MIN` (real
        streams: 16 events at the median), whose regexes (0.3 ms each) cost more than they save."""
        self.off = events < PLANNED_MIN

    def learn(self, pieces: dict[str, list[str]], text: str, parsed: Any) -> None:
        """Event text ``text`` parsed to ``parsed`` and was walked: the second event of a shape
        makes its plan (its values will join ``pieces``, the walk's piece lists)."""
        if self.off:
            return
        shape = self._cut[1] if self._cut is not None and self._cut[0] is text else cut(text)
        self._cut = None
        if shape is None:
            return
        known = self._plans.get(shape[1])
        if known is None:
            if len(self._plans) < _PLANS:
                self._plans[shape[1]] = False
        elif known is False:
            plan = plan_of(shape[0], parsed)
            self._plans[shape[1]] = True if plan is None else _Planned(plan, pieces)

    def read(self, walker: Walker, field: str, path: str, k: int, text: str) -> bool:
        """Event ``k`` of the stream at ``path``, whose data is ``text``, read by the plan of its
        shape into ``walker``: its strings collected, each one worth decoding walked
        (``walker.json``), as its walk would do; False: nothing done, it must be walked."""
        if self.off:
            return False
        last = self._last
        m = None if last is None else last.plan.regex.fullmatch(text)
        if last is not None and m is not None:
            known = last
        else:
            if text.lstrip()[:1] not in ("{", "["):  # no JSON (plain data): no shape of it is planned,
                return False  # and its cut would translate every character (~90 us a 16 KB event)
            shape = cut(text)
            self._cut = (text, shape)
            found = None if shape is None else self._plans.get(shape[1])
            if not isinstance(found, _Planned):
                return False
            m = found.plan.regex.fullmatch(text)
            if m is None:
                return False
            self._last = known = found
        if "\\" in text and '\\"' in text:  # a quote may be escaped: not cut where JSON cuts
            return False
        plan = known.plan
        if walker.recording:
            return False
        raw: tuple[str, ...] = m.groups()
        if known.stable_at(raw) == known.stable and not plan.named:  # in bulk
            undone = _undone(known.vary_at(raw))
            if undone is None:
                return False
            vary, joined = undone
            if not worth(joined):  # (a space joins no match)
                if not _reserve(walker, plan.spread * (len(joined) + known.stable_size)):
                    return False
                deque(map(call, known.flat_appends, known.flat_at(known.stable_values + vary)), 0)
                return True
        return self._one_by_one(walker, field, path, k, known, raw)

    def bulk(self, walker: Walker, texts: list[str]) -> int:
        """Read the first events whose data are ``texts`` (one after the other) together, as `read`
        reads each one in bulk, by the plan that read the last event: how many it read (0: none,
        the first must be read by `read` or walked). Every step is one C-level call for them all."""
        known = self._last  # (None while `off`: no plan read)
        if known is None or known.plan.named or walker.recording or not texts:
            return 0
        batch = known.batched()
        read = None if batch is None else self._run(walker, known, batch, texts)
        if read is not None:
            return read
        fast = known.faster()
        matches = list(map((fast or known.plan.regex).fullmatch, texts))
        if None in matches:
            matches = matches[: matches.index(None)]
        varys: list[tuple[str, ...]] = list(map(_GROUPS, matches))
        if fast is None:  # the stable values checked, the others taken
            stables = list(map(known.stable_at, varys))
            if stables.count(known.stable) != len(stables):
                varys = varys[: next(i for i, s in enumerate(stables) if s != known.stable)]
            varys = list(map(known.vary_at, varys))
        if not varys:
            return 0
        undone = _undone(list(chain.from_iterable(varys)))
        if undone is None:
            return 0
        flat, joined = undone
        width = len(varys[0])
        varys = list(zip(*[iter(flat)] * width)) if width else varys  # (escapes undone)
        if worth(joined):  # (a space joins no match)
            return self._before_worth(walker, texts, varys)
        if not _reserve(walker, known.plan.spread * (len(joined) + len(varys) * known.stable_size)):
            return 0
        values = chain.from_iterable(map(known.flat_at, map(add, repeat(known.stable_values), varys)))
        deque(map(call, cycle(known.flat_appends), values), 0)
        return len(varys)

    def _run(self, walker: Walker, known: _Planned, batch: re.Pattern[str], texts: list[str]) -> int | None:
        """`bulk` by one pass of ``batch`` (`_Planned.batched`), each piece list extended once by
        the run's values (`_Planned.columns`): how many events it read (all, or those before the
        first worth decoding: its values are at hand, the texts need no regex again), or None when
        some text is not of the shape (`bulk` reads the ones before it by the plan's regex)."""
        n = len(texts)
        flat = captured(batch, known.ops, texts)
        if flat is None:
            return None
        width = batch.groups
        undone = _undone(flat)
        if undone is None:
            return 0
        values, words = undone
        if worth(words):  # (a space joins no match)
            return self._before_worth(walker, texts, list(zip(*[iter(values)] * width)))
        if not _reserve(walker, known.plan.spread * (len(words) + n * known.stable_size)):
            return 0
        stable = known.stable_values
        for column, (pieces, at, squeeze) in enumerate(known.columns or ()):
            taken = values[at::width] if at >= 0 else None  # (a value the same in all: one count)
            if taken is None or (squeeze and taken[0] == taken[-1] and taken.count(taken[0]) == n):
                value = stable[-1 - at] if taken is None else taken[0]
                if squeeze:
                    known.repeated(column, pieces, value, n)
                else:
                    pieces.extend(repeat(value, n))
            else:
                pieces.extend(taken)
        return n

    def _before_worth(self, walker: Walker, texts: list[str], varys: list[tuple[str, ...]]) -> int:
        """`bulk` of the events before the first whose values (``varys``) are worth decoding."""
        first = next(i for i, v in enumerate(varys) if worth(" ".join(v)))
        return self.bulk(walker, texts[:first]) if first else 0

    def _one_by_one(
        self, walker: Walker, field: str, path: str, k: int, known: _Planned, raw: tuple[str, ...]
    ) -> bool:
        """`read`, a value at a time (a credential name, a value to decode, a stable value changed)."""
        plan = known.plan
        undone = _undone(raw)
        if undone is None or not _reserve(walker, plan.spread * sum(map(len, undone[0]))):
            return False
        values = undone[0]
        walker.prefix = where = f"{path} event {k}".strip()
        settled: list[int] = []
        for i, (slot, appends, value) in enumerate(zip(plan.slots, known.appends, values)):
            if slot.name is not None and credential_member(slot.name, value):
                walker.add(
                    field, f"a credential-named field {slot.name!r}", value, "***", f"{where} {slot.where}"
                )
            if not worth(value):
                for append in appends:
                    append(value)
                settled.append(i)
            else:
                walker.json(field, value, slot.where, 1, slot.piece)
                if value in walker.done and (slot.piece, value) not in walker.nested:
                    settled.append(i)  # the same value again is only collected
        walker.prefix = ""
        last, known.last = known.last, raw
        if last is not None:  # stable: settled, with no credential name, and as the last time
            known.settle(
                raw, values, tuple(i for i in settled if plan.slots[i].name is None and last[i] == raw[i])
            )
        return True
