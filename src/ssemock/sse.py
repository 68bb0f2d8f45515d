"""Reference Server-Sent Events decoder (WHATWG HTML "event stream interpretation").

The decoder follows https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation
to the letter:

* the stream is UTF-8 decoded (a character may be split across chunks; invalid bytes become
  U+FFFD, one per maximal invalid subpart, as the Encoding standard says) and one leading BOM is
  stripped, even when it arrives split across chunks;
* lines end at CRLF, LF or CR -- and only there (U+0085, U+2028, U+2029 are ordinary
  characters); a CRLF split between two chunks is one line ending: a CR that ends a chunk ends
  its line at once (so its event is not held back) and an LF that starts the next chunk is
  then skipped;
* a blank line dispatches the event, unless the data buffer is empty; the event type and the
  block's ``retry`` are reset either way; the last event ID persists across events;
* the spec's *last event ID string* (what a reconnection sends as ``Last-Event-ID``) is kept
  apart from its *last event ID buffer*: an ``id`` field sets the buffer, and only a blank line
  (the dispatch step, even of a block without data) copies the buffer to the string, so a block
  cut off by the end of the stream never changes the string; a new connection (after
  :meth:`Decoder.close`, or ``Decoder(last_event_id=...)``) starts from the string;
* an event that is not terminated by a blank line when the stream ends is discarded;
* ``retry`` takes any number of ASCII digits. The value is kept exactly up to
  :data:`RETRY_DIGITS` significant digits (leading zeros do not count), which int() converts
  without meeting Python's int-from-string limit; a longer value -- over 10**4300 ms, past any
  clock -- saturates at :data:`MAX_RETRY` (``10**4300 - 1``), so no retry line is ignored and
  converting one costs time linear in its length.

How: the bytes LF (0x0A) and CR (0x0D) never occur inside a UTF-8 sequence and always decode
to themselves (a truncated sequence before them becomes U+FFFD on its own), so lines are found
in the *bytes* and only the values that are kept are decoded -- which gives exactly the
characters that decoding the whole stream first would. Each chunk is scanned once with
``bytes`` methods; a partial line is kept as a list of pieces and joined once, when its line
ending arrives, so the work is linear in the stream size however it is chunked.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator
from dataclasses import dataclass

__all__ = ["MAX_RETRY", "RETRY_DIGITS", "Decoder", "ServerSentEvent", "adecode", "decode", "iter_decode"]

RETRY_DIGITS = 4300
"""Significant digits of a ``retry`` value kept exactly (Python's default int-from-str limit)."""
MAX_RETRY: int = 10**RETRY_DIGITS - 1
"""What a ``retry`` value with more than :data:`RETRY_DIGITS` significant digits is stored as."""


def _retry_value(digits: bytes) -> int:
    """The integer of a string of ASCII digits, saturating at :data:`MAX_RETRY`.

    Converted 600 digits at a time, so it never meets ``sys.set_int_max_str_digits`` (640 at
    the least), whatever the process set it to.
    """
    digits = digits.lstrip(b"0")
    if len(digits) > RETRY_DIGITS:
        return MAX_RETRY
    value = 0
    for i in range(0, len(digits), 600):
        piece = digits[i:i + 600]
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
    data: str = ""
    id: str = ""
    retry: int | None = None


class _Builder:
    """Same slots as :class:`ServerSentEvent`, but mutable: filled, then re-classed.

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
    """A :class:`ServerSentEvent`, built without the frozen dataclass ``__init__``."""
    ev = _Builder()
    ev.event = event
    ev.data = data
    ev.id = id
    ev.retry = retry
    ev.__class__ = ServerSentEvent  # type: ignore[assignment]
    return ev  # type: ignore[return-value]


if _event("e", "d", "i", 1) != ServerSentEvent("e", "d", "i", 1):  # pragma: no cover
    raise ImportError("ssemock.sse: ServerSentEvent and _Builder layouts differ")

_BOM = b"\xef\xbb\xbf"
_NORMAL, _SKIP_LF, _AT_START = 0, 1, 2


class Decoder:
    """Incremental ``text/event-stream`` decoder: :meth:`feed` bytes, then :meth:`close`.

    ``last_event_id`` is the spec's last event ID string: the ID of the last dispatch (what a
    client sends as ``Last-Event-ID`` when it reconnects); ``last_event_id_buffer`` is the
    buffer that ``id`` fields set, which reaches the string only at the next blank line.
    ``retry`` is the latest reconnection time (``None`` until a valid ``retry`` field arrives).
    The string and ``retry`` survive :meth:`close`, after which the decoder reads a new stream
    (a reconnection) starting from them. ``Decoder(last_event_id=ID)`` starts from ``ID``, as a
    connection made with ``Last-Event-ID: ID`` does; assigning ``last_event_id`` between
    streams does the same.
    """

    __slots__ = (
        "_mode", "_head", "_parts", "_data", "_type", "_block_retry", "_clean", "_id_buffer", "_id_string",
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
        if (
            self._clean
            and chunk.startswith(b"data: ")
            and chunk.find(10) == len(chunk) - 2
            and chunk[-1] == 10
            and 13 not in chunk
        ):
            # Fast path: the chunk is exactly one "data: ...\n\n" event and no line or block is
            # pending -- how most LLM APIs write (and most clients receive) their streams.
            ev = _Builder()  # _event(), inlined
            ev.event = "message"
            ev.data = chunk[6:-2].decode("utf-8", "replace")
            ev.id = self._id_string = self._id_buffer
            ev.retry = None
            ev.__class__ = ServerSentEvent  # type: ignore[assignment]
            return [ev]  # type: ignore[list-item]
        if self._clean and chunk.startswith(b"event: ") and chunk.endswith(b"\n\n") and 13 not in chunk:
            # The same for one "event: ...\ndata: ...\n\n" event (Anthropic's shape)
            end = chunk.find(10)
            if chunk.startswith(b"data: ", end + 1) and chunk.find(10, end + 1) == len(chunk) - 2:
                ev = _Builder()
                ev.event = chunk[7:end].decode("utf-8", "replace") or "message"
                ev.data = chunk[end + 7:-2].decode("utf-8", "replace")
                ev.id = self._id_string = self._id_buffer
                ev.retry = None
                ev.__class__ = ServerSentEvent  # type: ignore[assignment]
                return [ev]  # type: ignore[list-item]
        if self._mode:
            if self._mode == _SKIP_LF:
                if not chunk:
                    return []
                self._mode = _NORMAL
                if chunk[0] == 10:
                    chunk = chunk[1:]
            else:  # strip one leading BOM, which may come split over several chunks
                head = self._head + chunk
                if len(head) < 3 and _BOM.startswith(head):
                    self._head = head
                    return []
                self._head = b""
                self._mode = _NORMAL
                chunk = head[3:] if head.startswith(_BOM) else head
        events: list[ServerSentEvent] = []
        if 13 in chunk:
            if chunk.startswith(b"data: ") and not (
                self._parts or self._data or self._type or self._block_retry is not None
            ):
                # CRLF streams: their leading one-line data blocks straight from the bytes;
                # replacing every CRLF first costs more than decoding them (a byte-wise scan)
                events, taken = self._crlf_data_blocks(chunk)
                if taken:
                    chunk = chunk[taken:]
                    if not chunk:
                        return events
            if chunk[-1] == 13:
                self._mode = _SKIP_LF
            chunk = chunk.replace(b"\r\n", b"\n")
            if 13 in chunk:  # (CRLF-only streams skip the second pass)
                chunk = chunk.replace(b"\r", b"\n")
        elif 10 not in chunk:
            if chunk:
                self._parts.append(chunk)
                self._clean = False
            return []

        find = chunk.find
        startswith = chunk.startswith
        append = events.append
        new = object.__new__
        data = self._data
        type_ = self._type
        last_id = self._id_buffer
        id_string = self._id_string
        block_retry = self._block_retry
        pos = 0
        size = len(chunk)
        parts = self._parts
        head, head_kind = b"", "message"  # the latest b"event: NAME\ndata: " and its NAME
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
                if clean:
                    # At a block start with empty buffers: take whole blocks of one-line fields
                    # -- an optional "id: ", an optional "event: ", one "data: " line, a blank
                    # line: the shape of nearly every LLM stream -- in one go. Anything else
                    # (or a block not complete in this chunk) is left to the line loop below.
                    clean = False
                    while True:
                        while startswith(b"data: ", pos):  # the commonest: no id, no type
                            end = find(b"\n", pos)
                            if end < 0 or end + 1 == size or chunk[end + 1] != 10:
                                break
                            ev = new(_Builder)  # _event(), inlined
                            ev.event = "message"
                            ev.data = chunk[pos + 6:end].decode("utf-8", "replace")
                            ev.id = last_id
                            ev.retry = None
                            ev.__class__ = ServerSentEvent  # type: ignore[assignment]
                            append(ev)  # type: ignore[arg-type]
                            pos = end + 2
                        else:
                            ident = None
                            if head and startswith(head, pos):  # the same type as last time
                                kind = head_kind
                                start = pos + len(head)
                            else:
                                start = pos
                                if startswith(b"id: ", start):
                                    end = find(b"\n", start)
                                    if end < 0:
                                        break
                                    ident = chunk[start + 4:end]
                                    if 0 in ident:
                                        break
                                    start = end + 1
                                if head and startswith(head, start):
                                    kind = head_kind
                                    start += len(head)
                                elif startswith(b"event: ", start):
                                    end = find(b"\n", start)
                                    if end < 0 or not startswith(b"data: ", end + 1):
                                        break
                                    head = chunk[start:end + 7]  # b"event: NAME\ndata: "
                                    head_kind = kind = chunk[start + 7:end].decode("utf-8", "replace") or "message"
                                    start = end + 7
                                elif ident is not None and startswith(b"data: ", start):
                                    kind = "message"
                                    start += 6
                                else:
                                    break
                            end = find(b"\n", start)
                            if end < 0 or end + 1 == size or chunk[end + 1] != 10:
                                break
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
                            continue
                        break
                    if events:
                        id_string = last_id
                end = find(b"\n", pos)
                if end < 0:
                    break
                if end == pos:  # a blank line: dispatch
                    id_string = last_id
                    if data:
                        text = str(data[0] if len(data) == 1 else b"\n".join(data), "utf-8", "replace")
                        events.append(_event(type_ or "message", text, last_id, block_retry))
                        data = []
                    type_ = ""
                    block_retry = None
                    clean = True
                    pos += 1
                    continue
                if startswith(b"data: ", pos):
                    # a long value is viewed, not copied (it is decoded straight from the view)
                    data.append(chunk[pos + 6:end] if end - pos < 65536 else memoryview(chunk)[pos + 6:end])
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

    def _crlf_data_blocks(self, chunk: bytes) -> tuple[list[ServerSentEvent], int]:
        """The leading ``data: ...\\r\\n\\r\\n`` blocks of ``chunk`` (at a block start, with
        empty buffers), and how many bytes they take; the rest goes through :meth:`feed`'s loop."""
        find = chunk.find
        startswith = chunk.startswith
        events: list[ServerSentEvent] = []
        append = events.append
        new = object.__new__
        last_id = self._id_buffer
        pos = 0
        while startswith(b"data: ", pos):
            end = find(13, pos)
            if end < 0 or not startswith(b"\n\r\n", end + 1) or find(10, pos, end) >= 0:
                break
            ev = new(_Builder)  # _event(), inlined
            ev.event = "message"
            ev.data = chunk[pos + 6:end].decode("utf-8", "replace")
            ev.id = last_id
            ev.retry = None
            ev.__class__ = ServerSentEvent  # type: ignore[assignment]
            append(ev)  # type: ignore[arg-type]
            pos = end + 4
        if events:
            self._id_string = last_id
        return events, pos

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


def iter_decode(chunks: Iterable[bytes]) -> Iterator[ServerSentEvent]:
    """Yield the events of a whole stream given as byte chunks, as soon as each completes."""
    decoder = Decoder()
    feed = decoder.feed
    for chunk in chunks:
        yield from feed(chunk)
    yield from decoder.close()


def decode(chunks: Iterable[bytes]) -> list[ServerSentEvent]:
    """The events of a whole stream given as byte chunks.

    The events do not depend on how a stream is cut into chunks (the incremental
    :class:`Decoder` guarantees it, and the tests check it under any chunking), so small chunks
    are joined and decoded in one go: the same events, without a call per chunk (large ones,
    16 KiB or more on average, are fed as they are: joining them would only copy). Use
    :class:`Decoder` or :func:`iter_decode` to get each event as soon as it completes.
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
    """Yield the events of an asynchronous byte stream as soon as each completes."""
    decoder = Decoder()
    feed = decoder.feed
    async for chunk in chunks:
        for event in feed(chunk):
            yield event
    for event in decoder.close():
        yield event
