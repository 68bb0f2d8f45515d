"""Reference Server-Sent Events decoder (WHATWG HTML "event stream interpretation").

The implementation of [`ssemock.sse`][ssemock.sse], where its public names are documented."""

# How it works (for contributors): the bytes LF (0x0A) and CR (0x0D) never occur inside a UTF-8
# sequence and always decode to themselves (a truncated sequence before them becomes U+FFFD on its
# own), so lines are found in the *bytes* and only the values that are kept are decoded -- which
# gives exactly the characters that decoding the whole stream first would. Each chunk is scanned
# once with ``bytes`` methods; a partial line is kept as a list of pieces and joined once, when its
# line ending arrives, so the work is linear in the stream size however it is chunked. Whole blocks
# of the shape nearly every LLM stream uses (``[id:] [event:] data:`` and a blank line) are taken in
# one step by ``_blocks``; ``ssemock.framing._speedups`` is the same step in C, built by the install where a
# C compiler exists (the pure code, with identical results, is used where it does not). Its ``text``
# decodes a value of 1 MiB or more whose text needs 2 or 4 bytes per character: when the new str's
# memory comes fresh from the kernel (a str over 32 MiB, or the first large one), most of
# ``bytes.decode``'s time is page faults, which it saves by asking Linux for huge pages first
# (1.3-3.4x faster); with memory already in use it takes 0.97-1.23x ``bytes.decode``'s time.
#
# A retry value is kept exactly up to RETRY_DIGITS significant digits (leading zeros do not count),
# which int() converts without meeting Python's int-from-string limit; a longer one saturates at
# MAX_RETRY, so converting one costs time linear in its length.

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import partial
from typing import TypeGuard

from . import Framing
from .ends import event_ends as _event_ends

__all__ = [
    "MAX_RETRY",
    "RETRY_DIGITS",
    "Decoder",
    "ServerSentEvent",
    "adecode",
    "decode",
    "event_ends",
    "is_event",
    "iter_decode",
]

RETRY_DIGITS = 4300
"""Significant digits of a ``retry`` value kept exactly (Python's default int-from-str limit)."""
MAX_RETRY: int = 10**RETRY_DIGITS - 1
"""What a ``retry`` value with more than [`RETRY_DIGITS`][ssemock.sse.RETRY_DIGITS] significant digits is stored as."""


def _retry_value(digits: bytes) -> int:
    """The integer of a string of ASCII digits, saturating at [`MAX_RETRY`][ssemock.sse.MAX_RETRY].

    Converted 600 digits at a time, so it never meets ``sys.set_int_max_str_digits`` (640 at
    the least), whatever the process set it to.
    """
    digits = digits.lstrip(b"0")
    if len(digits) > RETRY_DIGITS:
        return MAX_RETRY
    value = 0
    for i in range(0, len(digits), 600):
        piece = digits[i : i + 600]
        value = value * 10 ** len(piece) + int(piece)
    return value


@dataclass(frozen=True, slots=True)
class ServerSentEvent:
    """One dispatched event, as the WHATWG algorithm defines it.

    ``event`` is the type (``"message"`` unless an ``event`` field set it), ``data`` the data
    buffer without its final LF, ``id`` the last event ID in effect when the event was
    dispatched, and ``retry`` the reconnection time set by a valid ``retry`` field in this
    event's block, else ``None``.
    """

    event: str = "message"
    """The event type (`"message"` unless an `event:` field set it)."""
    data: str = ""
    """The data buffer, without its final LF."""
    id: str = ""
    """The last event ID in effect when the event was dispatched."""
    retry: int | None = None
    """The reconnection time a valid `retry:` field in this event's block set, else `None`."""


def is_event(value: object) -> TypeGuard[ServerSentEvent]:
    """Whether ``value`` is a decoded SSE event, told by its fields (a text ``event`` and
    ``data``), not by its class: an event made by another import of ssemock (pytester's
    in-process runs re-import it) or by httpx-sse is one too."""
    return (
        not isinstance(value, Mapping)
        and isinstance(getattr(value, "event", None), str)
        and isinstance(getattr(value, "data", None), str)
    )


class _Builder:
    """Same slots as [`ServerSentEvent`][ssemock.ServerSentEvent], but mutable: filled, then re-classed.

    A frozen dataclass ``__init__`` costs four ``object.__setattr__`` calls; plain slot stores
    and one ``__class__`` assignment (allowed between classes with identical layouts) are
    several times cheaper, and the decoder builds one event per dispatch.
    """

    __slots__ = ("event", "data", "id", "retry")
    event: str
    data: str
    id: str
    retry: int | None


def _event(event: str, data: str, id: str, retry: int | None) -> ServerSentEvent:
    """A [`ServerSentEvent`][ssemock.ServerSentEvent], built without the frozen dataclass ``__init__``."""
    ev = _Builder()
    ev.event = event
    ev.data = data
    ev.id = id
    ev.retry = retry
    ev.__class__ = ServerSentEvent  # type: ignore[assignment]
    return ev  # type: ignore[return-value]


if _event("e", "d", "i", 1) != ServerSentEvent("e", "d", "i", 1):  # pragma: no cover
    raise ImportError("ssemock.sse: ServerSentEvent and _Builder layouts differ")


def _py_blocks(chunk: bytes, pos: int, last_id: str, events: list[ServerSentEvent]) -> tuple[int, str]:
    """Append the events of the whole *simple* blocks at ``chunk[pos:]``; return the offset after
    the last one taken and the last event ID in effect there.

    Called at a block start with empty buffers. A simple block is ``["id: " ID LF]
    ["event: " TYPE LF] "data: " DATA LF LF`` (no NUL in ID): the shape of nearly every LLM
    stream, taken without the line-by-line state machine. The first block of another shape, or
    not complete in ``chunk``, stops it; so does any CR in ``chunk[pos:]`` (nothing is taken:
    [`Decoder.feed`][ssemock.sse.Decoder.feed] turns line endings into LFs first). ``ssemock.framing._speedups.blocks`` is
    the same function in C, used when it was built; it also takes CRLF-ended blocks.
    """
    if chunk.find(13, pos) >= 0:
        return pos, last_id
    find = chunk.find
    startswith = chunk.startswith
    append = events.append
    new = object.__new__
    size = len(chunk)
    head, head_kind = b"", "message"  # the latest b"event: TYPE\ndata: " and its TYPE
    while True:
        while startswith(b"data: ", pos):  # the commonest: no id, no type
            end = find(10, pos)
            if end < 0 or end + 1 == size or chunk[end + 1] != 10:
                return pos, last_id
            ev = new(_Builder)  # _event(), inlined
            ev.event = "message"
            ev.data = chunk[pos + 6 : end].decode("utf-8", "replace")
            ev.id = last_id
            ev.retry = None
            ev.__class__ = ServerSentEvent  # type: ignore[assignment]
            append(ev)  # type: ignore[arg-type]
            pos = end + 2
        if pos == size:
            return pos, last_id
        ident = None
        if head and startswith(head, pos):  # the same type as the block before
            kind = head_kind
            start = pos + len(head)
        else:
            start = pos
            if startswith(b"id: ", start):
                end = find(10, start)
                if end < 0:
                    return pos, last_id
                ident = chunk[start + 4 : end]
                if 0 in ident:
                    return pos, last_id
                start = end + 1
            if head and startswith(head, start):
                kind = head_kind
                start += len(head)
            elif startswith(b"event: ", start):
                end = find(10, start)
                if end < 0 or not startswith(b"data: ", end + 1):
                    return pos, last_id
                head = chunk[start : end + 7]  # b"event: TYPE\ndata: "
                head_kind = kind = chunk[start + 7 : end].decode("utf-8", "replace") or "message"
                start = end + 7
            elif ident is not None and startswith(b"data: ", start):
                kind = "message"
                start += 6
            else:
                return pos, last_id
        end = find(10, start)
        if end < 0 or end + 1 == size or chunk[end + 1] != 10:
            return pos, last_id
        if ident is not None:
            last_id = ident.decode("utf-8", "replace")
        ev = new(_Builder)
        ev.event = kind
        ev.data = chunk[start:end].decode("utf-8", "replace")
        ev.id = last_id
        ev.retry = None
        ev.__class__ = ServerSentEvent  # type: ignore[assignment]
        append(ev)  # type: ignore[arg-type]
        pos = end + 2


_py_text: Callable[..., str] = partial(str, encoding="utf-8", errors="replace")
"""A data value as text: what ``ssemock.framing._speedups.text`` computes faster for a large one."""

_blocks: Callable[[bytes, int, str, list[ServerSentEvent]], tuple[int, str]]
try:  # the optional C accelerator: the same functions, several times faster
    from . import _speedups
except ImportError:  # not built (no compiler where it was installed): the pure code
    _blocks = _py_blocks
    _text = _py_text
else:
    _blocks = _speedups.blocks
    _text = _speedups.text
    _speedups.init(ServerSentEvent)

_BOM = b"\xef\xbb\xbf"
_NORMAL, _SKIP_LF, _AT_START = 0, 1, 2


class Decoder:
    """Incremental ``text/event-stream`` decoder: [`feed`][ssemock.sse.Decoder.feed] bytes, then [`close`][ssemock.sse.Decoder.close].

    ``last_event_id`` is the spec's last event ID string: the ID of the last dispatch (what a
    client sends as ``Last-Event-ID`` when it reconnects); ``last_event_id_buffer`` is the
    buffer that ``id`` fields set, which reaches the string only at the next blank line.
    ``retry`` is the latest reconnection time (``None`` until a valid ``retry`` field arrives).
    The string and ``retry`` survive [`close`][ssemock.sse.Decoder.close], after which the decoder reads a new stream
    (a reconnection) starting from them. ``Decoder(last_event_id=ID)`` starts from ``ID``, as a
    connection made with ``Last-Event-ID: ID`` does; assigning ``last_event_id`` between
    streams does the same.
    """

    __slots__ = (
        "_mode",
        "_head",
        "_parts",
        "_data",
        "_type",
        "_block_retry",
        "_clean",
        "_id_buffer",
        "_id_string",
        "retry",
    )

    def __init__(self, *, last_event_id: str = "") -> None:
        self._mode = _AT_START  # _AT_START: a BOM may come; _SKIP_LF: the last byte was a CR,
        # already taken as a line ending (so events dispatch at once), and an LF next is its CRLF
        self._head = b""  # the first bytes, while they could still be a split BOM
        self._parts: list[bytes] = []  # pieces of the current, unterminated line
        self._data: list[bytes | memoryview] = []  # the data buffer, one item per data field (undecoded)
        self._type = ""  # the event type buffer
        self._block_retry: int | None = None  # retry set in the current block
        self._clean = False  # no partial line, no field of the current block, _mode is _NORMAL
        self._id_buffer = self._id_string = last_event_id
        self.retry: int | None = None
        """The reconnection time the stream last set with a valid `retry:` field, in milliseconds."""

    @property
    def last_event_id(self) -> str:
        """The last event ID string: set at each dispatch (blank line), never by a cut-off block."""
        return self._id_string

    @last_event_id.setter
    def last_event_id(self, value: str) -> None:
        self._id_buffer = self._id_string = value

    @property
    def last_event_id_buffer(self) -> str:
        """The last event ID buffer: the latest valid ``id`` field, dispatched or not."""
        return self._id_buffer

    def feed(self, chunk: bytes | bytearray | memoryview) -> list[ServerSentEvent]:
        """Take the next bytes of the stream; return the events they complete (often none)."""
        if type(chunk) is not bytes:
            chunk = bytes(chunk)
        events: list[ServerSentEvent] = []
        clean = self._clean  # at a block start with empty buffers (and _mode is _NORMAL)
        if self._mode:
            if self._mode == _SKIP_LF:
                if not chunk:
                    return events
                self._mode = _NORMAL
                if chunk[0] == 10:
                    chunk = chunk[1:]
                clean = not (self._parts or self._data or self._type or self._block_retry is not None)
            else:  # strip one leading BOM, which may come split over several chunks
                head = self._head + chunk
                if len(head) < 3 and _BOM.startswith(head):
                    self._head = head
                    return events
                self._head = b""
                self._mode = _NORMAL
                chunk = head[3:] if head.startswith(_BOM) else head
                clean = True  # a new stream: every buffer is empty
        if clean:  # whole simple blocks in one go
            pos, last_id = _blocks(chunk, 0, self._id_buffer, events)
            if pos:
                self._id_buffer = self._id_string = last_id
                if pos == len(chunk):
                    self._clean = True
                    return events
                chunk = chunk[pos:]
        if 13 in chunk:
            if chunk[-1] == 13:
                self._mode = _SKIP_LF
            chunk = chunk.replace(b"\r\n", b"\n")
            if 13 in chunk:  # (CRLF-only streams skip the second pass)
                chunk = chunk.replace(b"\r", b"\n")
        elif 10 not in chunk:
            if chunk:
                self._parts.append(chunk)
                self._clean = False
            return events

        find = chunk.find
        startswith = chunk.startswith
        data = self._data
        type_ = self._type
        last_id = self._id_buffer
        id_string = self._id_string
        block_retry = self._block_retry
        pos = 0
        size = len(chunk)
        parts = self._parts
        if parts:  # the first line began in an earlier chunk
            end = find(b"\n")
            first = parts[0]
            parts.append(chunk[:end])
            pos = end + 1
            if first.startswith(b"data: "):  # spare one copy of a (possibly huge) data line
                parts[0] = first[6:]
                data.append(b"".join(parts))
                line = b""
            else:
                line = b"".join(parts)
            self._parts = []
            clean = False
        else:
            line = b""
            clean = not data and not type_ and block_retry is None
        while True:
            if not line:
                if clean:  # a block start with empty buffers: its whole simple blocks at once
                    clean = False
                    taken = len(events)
                    pos, last_id = _blocks(chunk, pos, last_id, events)
                    if len(events) > taken:
                        id_string = last_id
                end = find(b"\n", pos)
                if end < 0:
                    break
                if end == pos:  # a blank line: dispatch
                    id_string = last_id
                    if data:
                        text = _text(data[0] if len(data) == 1 else b"\n".join(data))
                        events.append(_event(type_ or "message", text, last_id, block_retry))
                        data = []
                    type_ = ""
                    block_retry = None
                    clean = True
                    pos += 1
                    continue
                if startswith(b"data: ", pos):
                    # a long value is viewed, not copied (it is decoded straight from the view)
                    data.append(
                        chunk[pos + 6 : end] if end - pos < 65536 else memoryview(chunk)[pos + 6 : end]
                    )
                    pos = end + 1
                    continue
                line = chunk[pos:end]
                pos = end + 1
            name, _, value = line.partition(b":")
            line = b""
            if value and value[0] == 32:  # one leading space is not part of the value
                value = value[1:]
            if name == b"data":
                data.append(value)
            elif name == b"event":
                type_ = value.decode("utf-8", "replace")
            elif name == b"id":
                if b"\0" not in value:
                    last_id = value.decode("utf-8", "replace")
            elif name == b"retry":
                if value.isdigit():  # bytes.isdigit(): ASCII digits only, and not empty
                    block_retry = self.retry = int(value) if len(value) < 600 else _retry_value(value)
            # else: a comment (empty name) or an unknown field: ignored
        if pos < size:
            self._parts.append(chunk[pos:])
            self._clean = False
        else:
            self._clean = not data and not type_ and block_retry is None and not self._mode
        self._data = data
        self._type = type_
        self._id_buffer = last_id
        self._id_string = id_string
        self._block_retry = block_retry
        return events

    def close(self) -> list[ServerSentEvent]:
        """End the stream: discard the unterminated line and event, if any.

        The last event ID buffer goes back to the last event ID string (an ``id`` of a block cut
        off by the end never reaches the next connection). Flushing the UTF-8 decoder can only turn a truncated sequence into U+FFFD, never into a
        line ending, so no line completes and no event is dispatched: the list is always empty.
        """
        self._mode = _AT_START
        self._head = b""
        self._parts = []
        self._data = []
        self._type = ""
        self._block_retry = None
        self._clean = False
        self._id_buffer = self._id_string
        return []


_py_feed = Decoder.feed
"""The pure [`Decoder.feed`][ssemock.sse.Decoder.feed]. Where the accelerator is built, ``Decoder.feed``
is ``ssemock.framing._speedups.feeder``'s: the same step with its two commonest calls in C (a chunk
without a line ending, kept as a piece of the line: nearly every call of a stream cut byte by
byte; the whole simple blocks of a chunk at a block start), which hands every other call, and the
rest of a chunk, to this one."""
if _blocks is not _py_blocks:  # the accelerator is built
    Decoder.feed = _speedups.feeder(Decoder, _NORMAL, _py_feed)  # type: ignore[method-assign,assignment]


def _py_until_line(chunks: Iterator[bytes]) -> bytes | None:
    """The next chunk of ``chunks`` that holds a line ending (LF or CR), the chunks before it that
    hold none joined in front of it, or None at the end: the chunks after the last line ending
    complete no event. ``ssemock.framing._speedups.until_line`` is the same in C."""
    pending: list[bytes] = []
    for chunk in chunks:
        if 10 in chunk or 13 in chunk:
            if pending:
                pending.append(chunk)
                return b"".join(pending)
            return chunk
        pending.append(chunk)
    return None


_until_line: Callable[[Iterator[bytes]], bytes | None] = (
    _py_until_line if _blocks is _py_blocks else _speedups.until_line
)


def iter_decode(chunks: Iterable[bytes]) -> Iterator[ServerSentEvent]:
    """Yield the events of a whole stream given as byte chunks, as soon as each completes.

    Only a line ending (LF or CR) can complete an event, so a chunk without one is kept and
    joined to the next that has one: the same events at the same moments (the decoder does not
    depend on the chunking), without a call per chunk of a stream cut byte by byte.
    """
    decoder = Decoder()
    feed = decoder.feed
    until_line = _until_line
    chunks = iter(chunks)
    while (chunk := until_line(chunks)) is not None:
        yield from feed(chunk)
    yield from decoder.close()


def decode(chunks: Iterable[bytes]) -> list[ServerSentEvent]:
    """The events of a whole stream given as byte chunks.

    The events do not depend on how a stream is cut into chunks (the incremental
    [`Decoder`][ssemock.sse.Decoder] guarantees it, and the tests check it under any chunking), so small chunks
    are joined and decoded in one go: the same events, without a call per chunk (large ones,
    16 KiB or more on average, are fed as they are: joining them would only copy). Use
    [`Decoder`][ssemock.sse.Decoder] or [`iter_decode`][ssemock.sse.iter_decode] to get each event as soon as it completes.
    """
    parts = chunks if isinstance(chunks, list) else list(chunks)
    if len(parts) > 1 and sum(map(len, parts)) < 16384 * len(parts):
        parts = [b"".join(parts)]
    decoder = Decoder()
    feed = decoder.feed
    events: list[ServerSentEvent] = []
    for chunk in parts:
        got = feed(chunk)
        if got:
            events += got
    events += decoder.close()
    return events


async def adecode(chunks: AsyncIterable[bytes]) -> AsyncIterator[ServerSentEvent]:
    """Yield the events of an asynchronous byte stream as soon as each completes (a chunk
    without a line ending waits for the next, as in [`iter_decode`][ssemock.sse.iter_decode])."""
    decoder = Decoder()
    feed = decoder.feed
    pending: list[bytes] = []
    async for chunk in chunks:
        if 10 in chunk or 13 in chunk:
            if pending:
                pending.append(chunk)
                chunk = b"".join(pending)
                pending = []
            for event in feed(chunk):
                yield event
        else:
            pending.append(chunk)
    for event in decoder.close():
        yield event


# The SSE framing's registry entry: where events end in a body (after each blank line: LF LF,
# CR CR, CRLF CRLF and mixes), and the decoder above.


def event_ends(body: bytes) -> list[int]:
    """The byte offset after each blank line that ends an event block (comments count as blocks)."""
    return _event_ends(body, sse=True)


def _decode_body(body: bytes) -> list[ServerSentEvent]:
    return decode([body])


def _never(body: bytes) -> bool:
    return False  # SSE is the fallback when nothing else fits


FRAMING = Framing(
    name="sse",
    decode=_decode_body,
    event_ends=event_ends,
    content_type="text/event-stream".__eq__,
    sniff=_never,
    example=("text/event-stream", b'data: {"n": 1}\n\ndata: {"n": 2}\n\ndata: {"n": 3}\n\ndata: [DONE]\n\n'),
)
