"""Diagnostics: what a served stream held, event by event, in words a failing test can print.

Used by :meth:`ssemock.Player.served_summary` (the ``ssemock`` section pytest adds to a failed
test's report), by :meth:`ssemock.Player.check` (the event a failure starts at) and by
:meth:`ssemock.Player.assert_prompt` (which chunk completed each event). Everything here runs
after a failure, over the bytes served, once.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import TYPE_CHECKING

import orjson

from . import sse
from .chunking import event_ends
from .redact import escape_control, mask_text, mask_url

if TYPE_CHECKING:
    from .replay import Play

__all__ = ["Block", "blocks", "describe", "play_summary"]


@dataclass(frozen=True)
class Block:
    """One framed piece of a body: an SSE block (up to its blank line) or a JSON line.

    ``event`` is the index of the event it dispatches among the stream's events (None for a
    block that dispatches nothing: a comment, ``retry:`` or ``id:`` alone); ``type`` and ``data``
    what it dispatches (a JSON line: ``"json"`` and the line)."""

    index: int
    start: int
    end: int
    event: int | None
    type: str
    data: str

    def done_at(self, body: bytes) -> int:
        """The byte after which a WHATWG decoder has dispatched it: the blank line's CR when the
        blank line is a CRLF (the decoder does not wait for the LF)."""
        return self.end - 1 if body[max(self.end - 2, 0):self.end] == b"\r\n" else self.end


def blocks(body: bytes, content_type: str, upto: int | None = None) -> list[Block]:
    """The blocks of ``body`` that start before ``upto`` (all by default)."""
    is_sse = "event-stream" in content_type or not body.lstrip().startswith(b"{")
    ends = event_ends(body, sse=is_sse)
    if not ends or ends[-1] != len(body):
        ends.append(len(body))
    limit = len(body) if upto is None else upto
    out: list[Block] = []
    seen = 0
    for i, (a, b) in enumerate(zip([0, *ends], ends)):
        if a >= limit:
            break
        raw = body[a:b]
        if not is_sse:
            text = raw.decode("utf-8", "replace").strip()
            out.append(Block(i, a, b, seen if text else None, "json", text))
            seen += bool(text)
            continue
        events = sse.decode([raw])  # an unterminated block dispatches nothing
        if events:
            out.append(Block(i, a, b, seen, events[0].event, events[0].data))
            seen += 1
        else:
            out.append(Block(i, a, b, None, "", raw.decode("utf-8", "replace").strip()))
    return out


#: fields every chunk of a provider repeats: left out of excerpts, which show what differs
_BOILERPLATE = frozenset({"id", "object", "created", "model", "system_fingerprint", "service_tier", "provider"})


def describe(data: str, most: int = 100) -> str:
    """A short account of an event's data: a JSON object by its ``object``/``type``, naming its
    empty or null fields (``choices: []``), then an excerpt without the fields every chunk
    repeats; anything else as an excerpt."""
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError:
        return _excerpt(data, most)
    if not isinstance(value, dict):
        return _excerpt(data, most)
    kind = value.get("object") if isinstance(value.get("object"), str) else value.get("type")
    empty = [f"{k}: {orjson.dumps(v).decode()}" for k, v in value.items() if v in ([], {}, "")]
    rest = {k: v for k, v in value.items() if k not in _BOILERPLATE}
    head = f"a {kind}" if isinstance(kind, str) else "a JSON object"
    return (head + (f" with {', '.join(empty)}" if empty else "")
            + f": {_excerpt(orjson.dumps(rest).decode(), most)}")


def _excerpt(text: str, most: int) -> str:
    return repr(text if len(text) <= most else text[:most] + "...")


def block_line(block: Block, delivered: int | None = None) -> str:
    """One block as a report line: its index, type, bytes and an excerpt."""
    partial = delivered is not None and block.end > delivered
    where = f"bytes {block.start}-{block.end}" + (f", partial: the client got up to byte {delivered}"
                                                  if partial else "")
    if block.event is None:
        return f"block {block.index} ({where}, dispatches nothing): {_excerpt(block.data, 60)}"
    if block.type == "json":
        return f"line {block.event} ({where}): {describe(block.data)}"
    return f"event {block.event} (type {block.type!r}, {where}): {describe(block.data)}"


def play_summary(play: Play, last: int = 3) -> list[str]:
    """Report lines for one served response: the variant, how far the client read, and the
    last ``last`` blocks it was given."""
    stream = play.stream
    delivered = stream.delivered if stream is not None else len(play.body)
    content_type = play.interaction.response.header("content-type") or ""
    lines = [f"response {play.index} for {play.request.method} {mask_url(str(play.request.url))} "
             f"under {play.described()}"]
    state = ""
    if stream is not None:
        state = (" (the stream ended with the planned fault)" if stream.failed
                 else " (all of it)" if stream.consumed else " (then it stopped reading)" if stream.opened
                 else " (it never read the body)")
    lines.append(f"  the client got {delivered} of {len(play.body)} bytes in "
                 f"{stream.handed if stream is not None else len(play.ends)} of {len(play.ends)} chunks{state}")
    shown = blocks(play.body, content_type, upto=delivered)[-last:]
    if shown:
        lines.append(f"  the last {'events' if len(shown) > 1 else 'event'} served:")
        lines.extend(f"    {block_line(b, delivered)}" for b in shown)
    return [escape_control(mask_text(line)) for line in lines]


def chunk_of(ends: list[int] | tuple[int, ...], offset: int) -> int:
    """How many chunks a client needs to have the bytes up to ``offset``."""
    return bisect.bisect_left(ends, offset) + 1
