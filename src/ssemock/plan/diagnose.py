"""Diagnostics: what a served stream held, event by event, in words a failing test can print.

Used by [`ssemock.Player.served_summary`][ssemock.Player.served_summary] (the ``ssemock`` section pytest adds to a failed
test's report), by [`ssemock.Player.check`][ssemock.Player.check] (the event a failure starts at) and by
[`ssemock.Player.assert_prompt`][ssemock.Player.assert_prompt] (which chunk completed each event). Everything here runs
after a failure, over the bytes served, once.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn

import orjson

from ..framing.sse import decode as sse_decode
from ..redaction.rules import escape_control, mask_text, mask_url
from ..variants.chunking import Chunking, event_ends
from ..variants.faults import Fault, Served
from ..variants.strategies import minimal_failing_split
from .expect import StreamAssertionError

if TYPE_CHECKING:
    from .serving import Play

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
        return self.end - 1 if body[max(self.end - 2, 0) : self.end] == b"\r\n" else self.end


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
        events = sse_decode([raw])  # an unterminated block dispatches nothing
        if events:
            out.append(Block(i, a, b, seen, events[0].event, events[0].data))
            seen += 1
        else:
            out.append(Block(i, a, b, None, "", raw.decode("utf-8", "replace").strip()))
    return out


#: fields every chunk of a provider repeats: left out of excerpts, which show what differs
_BOILERPLATE = frozenset(
    {"id", "object", "created", "model", "system_fingerprint", "service_tier", "provider"}
)


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
    return (
        head
        + (f" with {', '.join(empty)}" if empty else "")
        + f": {_excerpt(orjson.dumps(rest).decode(), most)}"
    )


def _excerpt(text: str, most: int) -> str:
    return repr(text if len(text) <= most else text[:most] + "...")


def block_line(block: Block, delivered: int | None = None) -> str:
    """One block as a report line: its index, type, bytes and an excerpt."""
    partial = delivered is not None and block.end > delivered
    where = f"bytes {block.start}-{block.end}" + (
        f", partial: the client got up to byte {delivered}" if partial else ""
    )
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
    lines = [
        f"response {play.index} for {play.request.method} {mask_url(str(play.request.url))} "
        f"under {play.described()}"
    ]
    state = ""
    if stream is not None:
        state = (
            " (the stream ended with the planned fault)"
            if stream.failed
            else " (all of it)"
            if stream.consumed
            else " (then it stopped reading)"
            if stream.opened
            else " (it never read the body)"
        )
    lines.append(
        f"  the client got {delivered} of {len(play.body)} bytes in "
        f"{stream.handed if stream is not None else len(play.ends)} of {len(play.ends)} chunks{state}"
    )
    shown = blocks(play.body, content_type, upto=delivered)[-last:]
    if shown:
        lines.append(f"  the last {'events' if len(shown) > 1 else 'event'} served:")
        lines.extend(f"    {block_line(b, delivered)}" for b in shown)
    return [escape_control(mask_text(line)) for line in lines]


def chunk_of(ends: list[int] | tuple[int, ...], offset: int) -> int:
    """How many chunks a client needs to have the bytes up to ``offset``."""
    return bisect.bisect_left(ends, offset) + 1


# -- check(): the smallest stream that still fails -------------------------------------------------


class CutAfter(Fault):
    """Check's own fault: the stream whose body is ``body`` ends cleanly after ``events`` blocks."""

    def __init__(self, events: int, body: bytes) -> None:
        self.events, self.body = events, body
        self.name = f"cut_after:{events}"

    def apply(self, served: Served, attempt: int) -> None:
        if served.body == self.body:
            ends = event_ends(served.body, sse=served.is_sse or not served.body.lstrip().startswith(b"{"))
            ends.append(len(served.body))
            served.cut(ends[self.events - 1] if self.events > 0 else 0)


def named(exc: BaseException) -> str:
    """An exception as its message, with its type when it is not one of ours (an assertion of
    the test reads as it is; a client's ``JSONDecodeError`` says what it is)."""
    if isinstance(exc, AssertionError):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"


def shrink(
    failing: Play,
    *,
    chunking: Chunking,
    transforms: Sequence[object],
    faults: list[Fault],
    original: Exception,
    fails_when: Callable[[Chunking, list[Fault]], bool],
) -> NoReturn:
    """[`ssemock.Player.check`][ssemock.Player.check] after the test failed: search the fewest chunk boundaries of
    the stream served last that still make it fail (``fails_when`` replays the test under a
    chunking and faults), else the first event it fails at, and raise a StreamAssertionError
    saying where and how to reproduce it, chained to the test's own error (which is raised as it
    is when the failure depends on neither)."""

    def fails(chunks: list[bytes]) -> bool:
        cuts = list(itertools.accumulate(len(c) for c in chunks))[:-1]
        return fails_when(
            Chunking(
                f"at:{','.join(map(str, cuts))}",
                lambda body, rec: [*cuts, len(body)] if body == failing.body else chunking.ends(body, rec),
            ),
            faults,
        )

    def fails_with(events: int) -> bool:
        """Whether it fails when the failing stream ends cleanly after ``events`` blocks."""
        return fails_when(chunking, [*faults, CutAfter(events, failing.body)])

    culprit: str | None = None
    try:
        split: Any = minimal_failing_split(failing.body, fails, failing.ends)
        if not split.boundaries:  # the failure does not depend on the chunk boundaries: on which event?
            split, culprit = None, first_failing_event(failing, fails_with)
    except ValueError:  # it no longer fails: nothing to search
        raise original from None
    options = [f'chunking="{split.chunking.name if split is not None else chunking}"']
    if transforms:
        options.append(f'transform="{"+".join(map(str, transforms))}"')
    if faults:
        options.append(f"faults={[str(f) for f in faults]!r}")
    if split is not None:
        found = f"under {chunking} it {split.explanation}"
    elif culprit is not None:
        found = f"under {chunking} the failure does not depend on chunk boundaries; {culprit}"
    else:
        original.add_note(
            "ssemock: the failure depends neither on chunk boundaries nor on which events are "
            "served (it fails even when the stream is cut before its first event)"
        )
        raise original
    raise StreamAssertionError(
        f"{named(original)}\nssemock: {found}; reproduce with {', '.join(options)}"
    ) from original


def first_failing_event(failing: Play, fails_with: Callable[[int], bool]) -> str | None:
    """The fewest leading blocks of the failing stream whose clean end still makes the test fail,
    named by the block that tips it (None when even no block fails)."""
    content_type = failing.interaction.response.header("content-type") or ""
    found = blocks(failing.body, content_type)
    if not found or fails_with(0):
        return None
    # the fewest blocks that fail (fails_with(len(found)) is the failing stream itself)
    fewest = 1 + bisect.bisect_left(range(1, len(found)), True, key=fails_with)
    return (
        f"it fails once {block_line(found[fewest - 1])} is served (the stream ended cleanly before it "
        f"passes, after it fails)"
    )
