"""Comparing a decoder's events with the reference's: events of any shape as dicts of the fields
they carry (`normalize`), and, where they differ, the block of the body that event came from
with '|' at each chunk boundary."""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ...framing.sse import Decoder, ServerSentEvent

DecodeFn = Callable[[list[bytes]], Iterable[Any]]
"""A decoder under test: takes the chunks of a body and returns the events it decodes."""

_FIELDS = ("event", "data", "id", "retry")
_WINDOW = 160  # bytes of body shown around a failure


def _ours(event: object) -> bool:
    """Whether ``event`` is ssemock's own ServerSentEvent (every field is meaningful), told by the
    class's module and name: one from another import of ssemock (pytester re-imports it) is too."""
    kind = type(event)
    return kind.__module__ == ServerSentEvent.__module__ and kind.__qualname__ == ServerSentEvent.__qualname__


def normalize(events: Iterable[Any]) -> list[dict[str, Any]]:
    """Each event as a dict of the fields it carries (see the module docstring)."""
    out: list[dict[str, Any]] = []
    for ev in events:
        if _ours(ev):
            out.append({"event": ev.event, "data": ev.data, "id": ev.id, "retry": ev.retry})
        elif isinstance(ev, str):
            out.append({"data": ev})
        elif isinstance(ev, bytes):
            out.append({"data": ev.decode("utf-8", "replace")})
        elif isinstance(ev, tuple | list) and len(ev) == 2:
            out.append({"event": ev[0] or "message", "data": ev[1]})
        elif hasattr(ev, "data"):
            d: dict[str, Any] = {"data": ev.data}
            if hasattr(ev, "event"):
                d["event"] = ev.event or "message"
            if hasattr(ev, "id"):
                d["id"] = ev.id if ev.id is not None else ""
            if hasattr(ev, "retry"):
                d["retry"] = ev.retry
            out.append(d)
        else:
            raise TypeError(
                f"cannot compare decoder output {ev!r}: expected a ServerSentEvent, an object "
                "with .data, an (event, data) tuple or a data string"
            )
    return out


def _short(value: Any, limit: int = 120) -> str:
    text = repr(value)
    return text if len(text) <= limit else f"{text[: limit - 20]}...{text[-16:]} ({len(value)} chars)"


def _show(ev: dict[str, Any]) -> str:
    return "{" + ", ".join(f"{k}={_short(ev[k])}" for k in _FIELDS if k in ev) + "}"


def _marked(body: bytes, ends: Sequence[int], start: int, stop: int) -> str:
    """``body[start:stop]`` as escaped text with ``|`` at each chunk boundary."""
    cuts = [e for e in ends if start < e < stop]
    out, pos = [], start
    for e in [*cuts, stop]:
        out.append(repr(body[pos:e])[2:-1])
        pos = e
    return "|".join(out)


def _window(body: bytes, ends: Sequence[int], start: int, stop: int) -> str:
    """Where the chunk boundaries fell in ``body[start:stop]`` (shortened when long)."""
    start, stop = max(0, start), min(len(body), stop)
    if stop - start > _WINDOW:
        half = _WINDOW // 2
        text = f"{_marked(body, ends, start, start + half)} ... {_marked(body, ends, stop - half, stop)}"
    else:
        text = _marked(body, ends, start, stop)
    cuts = [e for e in ends if start < e < stop]
    listed = ", ".join(map(str, cuts[:12])) + (f", ... ({len(cuts)} in all)" if len(cuts) > 12 else "")
    where = f"boundaries at bytes {listed}" if cuts else "no boundary"
    return f"bytes {start}..{stop} of {len(body)} ({where}; '|' marks a boundary): {text}"


def _first_raising_prefix(decode_fn: DecodeFn, chunks: list[bytes]) -> int:
    """The fewest leading chunks the decoder raises on (binary search; all of them if it never does)."""
    lo, hi = 1, len(chunks)

    def raises(m: int) -> bool:
        try:
            list(decode_fn(chunks[:m]))
        except Exception:
            return True
        return False

    return max(lo + bisect.bisect_left(range(lo, hi), True, key=raises), 1)


def _event_span(body: bytes, index: int) -> tuple[int, int]:
    """Byte span of the block the reference dispatches as event ``index`` (or what follows the last)."""
    decoder = Decoder()
    dispatched = [0]
    for pos in range(len(body)):
        for _ in decoder.feed(body[pos : pos + 1]):
            dispatched.append(pos + 1)
    if index + 1 < len(dispatched):
        return dispatched[index], dispatched[index + 1]
    return dispatched[-1], len(body)
