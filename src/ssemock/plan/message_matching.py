"""How a replay matches the client's WebSocket messages with the recorded ones, and says how
they differ.

Text messages holding JSON are compared as JSON, without the paths ignored (the
``ignore_message_paths`` option, and the defaults of the session's protocol,
`ssemock.protocols.base.MessageMatching`), and with the paths the protocol compares by length
measured instead of compared (base64 audio inside JSON); other text exactly; binary messages are
counted by bytes (`ssemock.plan.conversation`) or, under strict matching, compared. A difference
is the first JSON path where they part and, for a long text or binary data, the first differing
offset with what comes before and after it on both sides.

``ignore_message_paths`` takes JSON paths (``$.name``, ``.*``, ``[N]``, ``[*]``: ``$.audio``,
``$.item.content[*].audio``), added to the protocol's defaults; ``"strict"`` first drops the
defaults (every field compared, audio and binary messages byte for byte, but the paths listed
after it).
"""

from __future__ import annotations

import base64
import binascii
import copy
import functools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from ..core.names import suggest, unknown
from ..store.websocket import Message
from .matching import _first_json_difference, around, first_difference

__all__ = ["STRICT", "MessageMatcher", "Measured", "parse_path", "recorded_excerpt", "resolve", "skip_hint"]

STRICT = "strict"
"""The ``ignore_message_paths`` entry that drops the protocol's defaults."""

_ANY = object()  # a [*] or .* segment
_SEGMENT = re.compile(r"\.([^.\[\]]+)|\[(\*|\d+)\]")


@functools.lru_cache(maxsize=256)
def parse_path(text: str) -> tuple[object, ...]:
    """A JSON path's segments: keys (str), list indexes (int) and ``[*]``/``.*`` wildcards; a
    ValueError saying what a path looks like otherwise."""
    if not text.startswith("$"):
        if suggest(text, [STRICT]) is not None:
            raise unknown("entry", text, [STRICT], shown=[STRICT, "a JSON path ($.name)"])
        hint = f": did you mean '$.{text}'?" if text.isidentifier() else ""
        raise ValueError(f"{text!r} is not a JSON path (a path starts with '$', e.g. '$.audio'){hint}")
    parts: list[object] = []
    at = 1
    while at < len(text):
        found = _SEGMENT.match(text, at)
        if found is None:
            raise ValueError(
                f"{text!r} is not a JSON path (at character {at}): a path is '$' then .name, [N] or "
                "[*] segments, e.g. '$.audio' or '$.item.content[*].audio'"
            )
        key, index = found.groups()
        parts.append(_ANY if key == "*" or index == "*" else key if key is not None else int(index))
        at = found.end()
    if not parts:
        raise ValueError("'$' alone is the whole message: ignore its fields instead, e.g. '$.audio'")
    return tuple(parts)


def resolve(value: str | Sequence[str] | None) -> tuple[bool, tuple[str, ...]]:
    """The ``ignore_message_paths`` option read: whether matching is strict (the protocol's
    defaults dropped) and the paths ignored; a ValueError naming a bad entry."""
    if value is None:
        return False, ()
    entries = [value] if isinstance(value, str) else list(value)
    strict = bool(entries) and isinstance(entries[0], str) and entries[0].strip().lower() == STRICT
    paths = tuple(entries[1:] if strict else entries)
    for path in paths:
        if not isinstance(path, str):
            raise ValueError(f"a JSON path is a string such as '$.audio', got {path!r}")
        if path.strip().lower() == STRICT:
            raise ValueError(f"{STRICT!r} must come first (it drops the protocol's defaults): {entries!r}")
        parse_path(path)
    return strict, paths


def _visit(value: Any, parts: tuple[object, ...], change: Callable[[Any, Any], None]) -> None:
    """Call ``change(container, key)`` for every place ``parts`` reaches in ``value``."""
    head, rest = parts[0], parts[1:]
    if head is _ANY:
        keys: list[Any] = (
            list(range(len(value)))
            if isinstance(value, list)
            else list(value)
            if isinstance(value, dict)
            else []
        )
    elif isinstance(head, int):
        keys = [head] if isinstance(value, list) and head < len(value) else []
    else:
        keys = [head] if isinstance(value, dict) and head in value else []
    for key in keys:
        if rest:
            _visit(value[key], rest, change)
        else:
            change(value, key)


def _leave_out(container: Any, key: Any) -> None:
    if isinstance(container, dict):
        del container[key]
    else:  # a list keeps its length: the item is left out as a null
        container[key] = None


@dataclass(frozen=True)
class Measured:
    """A text compared by its length only (a protocol's ``by_length`` path)."""

    length: int

    def __repr__(self) -> str:
        return f"<{self.length} characters, compared by length>"


def _measure(container: Any, key: Any) -> None:
    if isinstance(container[key], str):
        container[key] = Measured(len(container[key]))


@dataclass(frozen=True)
class MessageMatcher:
    """How one session's client messages are matched: ``ignore`` (JSON paths left out),
    ``by_length`` (JSON paths whose text is compared by length), ``binary`` (``"count"``: binary
    messages counted by bytes; ``"compare"``: compared)."""

    ignore: tuple[str, ...] = ()
    by_length: tuple[str, ...] = ()
    binary: str = "count"

    @classmethod
    def for_session(
        cls, protocol: Any, ignore_message_paths: str | Sequence[str] | None, binary: str = "count"
    ) -> MessageMatcher:
        """The matcher of a session of ``protocol`` (a `ssemock.protocols.Protocol`, or None)
        under the ``ignore_message_paths`` option."""
        strict, paths = resolve(ignore_message_paths)
        if strict:
            return cls(paths, (), "compare")
        defaults = protocol.client_messages if protocol is not None else None
        return cls(
            (*(defaults.ignore if defaults else ()), *paths),
            defaults.by_length if defaults else (),
            binary,
        )

    def normal(self, payload: bytes) -> Any:
        """The message as the JSON value compared (None when it is no JSON)."""
        try:
            value = orjson.loads(payload)
        except orjson.JSONDecodeError:
            return None
        if (self.ignore or self.by_length) and isinstance(value, (dict, list)):
            value = copy.deepcopy(value)
            for path in self.ignore:
                _visit(value, parse_path(path), _leave_out)
            for path in self.by_length:
                _visit(value, parse_path(path), _measure)
        return value

    def difference(self, sent: tuple[str, bytes], rec: Message) -> str | None:
        """None when the sent message (kind, payload) matches the recorded one; else the first
        place they differ (a JSON path, or an offset with the context on both sides)."""
        kind, payload = sent
        if kind != rec.type:
            return f"a {rec.type} message recorded, a {kind} message sent"
        a, b = self.normal(payload), self.normal(rec.payload)
        if a is not None and b is not None:
            found = _first_json_difference(a, b)
            return _with_offset(found, a, b) if found is not None else None
        if payload == rec.payload:
            return None
        if kind == "text":
            at, lines = _offset_lines(
                rec.payload.decode("utf-8", "replace"), payload.decode("utf-8", "replace"), "character"
            )
            return f"character {at} ({len(rec.payload)} bytes recorded, {len(payload)} sent){lines}"
        at, lines = _offset_lines(rec.payload, payload, "byte")
        return f"byte {at} ({len(rec.payload)} bytes recorded, {len(payload)} sent){lines}"


def _with_offset(found: str, sent: Any, recorded: Any) -> str:
    """A JSON difference; when its values are long texts, on three lines (the offset, then each
    side around it), with the byte of the decoded data when both are base64."""
    path = found.partition(": ")[0]
    b, a = _at(recorded, path), _at(sent, path)
    if not (isinstance(a, str) and isinstance(b, str)) or max(len(a), len(b)) <= 40:
        return found
    at, lines = _offset_lines(b, a, "character")
    return (
        f"{path}, character {at} ({len(b)} characters recorded, {len(a)} sent"
        f"{_base64_byte(b, a, at)}; ignore_message_paths=[{path!r}] skips it){lines}"
    )


def _offset_lines(recorded: str | bytes, sent: str | bytes, unit: str) -> tuple[int, str]:
    """The first differing offset, and the lines showing each side around it, with a caret
    under it when both sides put it in the same column."""
    width = 20 if unit == "character" else 8
    at, recorded_text, sent_text = first_difference(recorded, sent, width)
    leads = {len(around(v[:at], at, width)) for v in (recorded, sent)}
    caret = f"\n    {' ' * (10 + leads.pop())}^" if len(leads) == 1 and unit == "character" else ""
    return at, f"\n    recorded: {recorded_text}\n    sent:     {sent_text}{caret}"


def _at(value: Any, path: str) -> Any:
    """The value at a concrete path (``$.a[2].b``) as `_first_json_difference` names it."""
    for key, index in _SEGMENT.findall(path.removeprefix("$")):
        try:
            value = value[int(index)] if index else value[key]
        except (KeyError, IndexError, TypeError):
            return None
    return value


def _base64_byte(recorded: str, sent: str, at: int) -> str:
    """``; byte N of the decoded data`` when both texts are base64 (audio inside JSON)."""
    try:
        for text in (recorded, sent):
            base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return ""
    return f"; byte {at * 3 // 4} of the base64-decoded data"


def recorded_excerpt(m: Message) -> str:
    """A recorded client message as a mismatch report quotes it: its text, or its size and first bytes."""
    if m.type == "text" or m.json() is not None:
        text = m.payload.decode("utf-8", "replace")
        return text if len(text) <= 200 else text[:197] + "..."
    return f"<{len(m.payload)} bytes: {base64.b64encode(m.payload[:12]).decode()}...>"


def skip_hint(diff: str) -> str:
    """For a difference at a JSON path below the top (a field that may change from run to run:
    a date in the instructions, an id of the client's), the ``ignore_message_paths`` entry
    that skips it; nothing when the difference already names it or is not at a path."""
    path = re.match(r"(\$[^:,]+)[:,] ", diff)
    if path is None or "ignore_message_paths" in diff:
        return ""
    return f", skip the field with ignore_message_paths=[{path[1]!r}]"
