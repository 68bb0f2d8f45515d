"""Reference Server-Sent Events decoder (WHATWG HTML "event stream interpretation").

The decoder follows https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation
to the letter:

* bytes are UTF-8 decoded incrementally (a character may be split across chunks; invalid bytes
  become U+FFFD, one per maximal invalid subpart, as the Encoding standard says) and one leading
  BOM is stripped, even when it arrives split across chunks;
* lines end at CRLF, LF or CR -- and only there (U+0085, U+2028, U+2029 are ordinary characters);
  a CRLF split between two chunks is one line ending;
* a blank line dispatches the event, unless the data buffer is empty; the event type and the
  per-block ``retry`` are reset either way; the last event ID persists across events;
* an event that is not terminated by a blank line when the stream ends is discarded.

It is incremental and linear: each chunk is decoded and scanned once with ``str`` methods, a
partial line is kept as a list of pieces and joined once, when its line ending arrives.
"""

from __future__ import annotations

from codecs import utf_8_decode
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator
from dataclasses import dataclass

__all__ = ["Decoder", "ServerSentEvent", "adecode", "decode", "iter_decode"]


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


_new = object.__new__
_set_event = ServerSentEvent.event.__set__  # type: ignore[attr-defined]
_set_data = ServerSentEvent.data.__set__  # type: ignore[attr-defined]
_set_id = ServerSentEvent.id.__set__  # type: ignore[attr-defined]
_set_retry = ServerSentEvent.retry.__set__  # type: ignore[attr-defined]


def _event(event: str, data: str, id: str, retry: int | None) -> ServerSentEvent:
    """Build a frozen event without the dataclass ``__init__``'s four ``object.__setattr__`` calls."""
    ev: ServerSentEvent = _new(ServerSentEvent)
    _set_event(ev, event)
    _set_data(ev, data)
    _set_id(ev, id)
    _set_retry(ev, retry)
    return ev


class Decoder:
    """Incremental ``text/event-stream`` decoder: :meth:`feed` bytes, then :meth:`close`.

    ``last_event_id`` is the last event ID buffer and ``retry`` the latest reconnection time
    (``None`` until a valid ``retry`` field arrives); both survive :meth:`close`, so a decoder
    can be fed the stream of a reconnection afterwards.
    """

    __slots__ = (
        "_raw", "_started", "_skip_lf", "_parts", "_data", "_type", "_block_retry",
        "last_event_id", "retry",
    )

    def __init__(self) -> None:
        self._raw = b""  # undecoded bytes: an incomplete UTF-8 sequence at the end of a chunk
        self._started = False  # True once the first character (maybe a BOM) was seen
        self._skip_lf = False  # the text so far ended in CR: a leading LF ends no new line
        self._parts: list[str] = []  # pieces of the current, unterminated line
        self._data: list[str] = []  # the data buffer, one item per data field
        self._type = ""  # the event type buffer
        self._block_retry: int | None = None  # retry set in the current block
        self.last_event_id = ""
        self.retry: int | None = None

    def feed(self, chunk: bytes) -> list[ServerSentEvent]:
        """Decode ``chunk`` and return the events it completes (often none)."""
        raw = self._raw
        if raw:
            chunk = raw + chunk
        text, used = utf_8_decode(chunk, "replace", False)
        if used != len(chunk):
            self._raw = bytes(chunk[used:])
        elif raw:
            self._raw = b""
        if not text:
            return []
        if self._skip_lf:
            self._skip_lf = False
            if text[0] == "\n":
                text = text[1:]
                if not text:
                    return []
        elif not self._started:
            self._started = True
            if text[0] == "\ufeff":
                text = text[1:]
                if not text:
                    return []
        if "\n" not in text and "\r" not in text:
            self._parts.append(text)
            return []
        return self._lines(text)

    def close(self) -> list[ServerSentEvent]:
        """End the stream: flush the UTF-8 decoder and discard any unterminated line and event.

        A flush can only add U+FFFD characters, never a line ending, so in practice this
        returns no events; it returns whatever the flushed text completes, per the spec.
        """
        events: list[ServerSentEvent] = []
        if self._raw:
            text, _ = utf_8_decode(self._raw, "replace", True)
            self._raw = b""
            if "\n" in text or "\r" in text:  # pragma: no cover - a UTF-8 flush yields U+FFFD only
                events = self._lines(text)
        self._started = False
        self._skip_lf = False
        self._parts = []
        self._data = []
        self._type = ""
        self._block_retry = None
        return events

    def _lines(self, text: str) -> list[ServerSentEvent]:
        """Run every complete line of ``text`` (which holds a line ending) through the spec."""
        if "\r" in text:
            if text[-1] == "\r":
                self._skip_lf = True
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        find = text.find
        startswith = text.startswith
        events: list[ServerSentEvent] = []
        data = self._data
        type_ = self._type
        last_id = self.last_event_id
        block_retry = self._block_retry
        pos = 0
        parts = self._parts
        if parts:  # the first line began in an earlier chunk
            end = find("\n")
            first = parts[0]
            parts.append(text[:end])
            pos = end + 1
            if first.startswith("data: "):  # spare one copy of a (possibly huge) data line
                parts[0] = first[6:]
                data.append("".join(parts))
                line = ""
            else:
                line = "".join(parts)
            self._parts = []
        else:
            line = ""
        while True:
            if not line:
                end = find("\n", pos)
                if end < 0:
                    break
                if end == pos:  # blank line: dispatch
                    if data:
                        events.append(_event(type_ or "message", "\n".join(data), last_id, block_retry))
                        data = []
                    type_ = ""
                    block_retry = None
                    pos += 1
                    continue
                if startswith("data: ", pos):  # the common case, sliced straight out of the text
                    data.append(text[pos + 6:end])
                    pos = end + 1
                    continue
                line = text[pos:end]
                pos = end + 1
            name, _, value = line.partition(":")
            line = ""
            if value and value[0] == " ":
                value = value[1:]
            if name == "data":
                data.append(value)
            elif name == "event":
                type_ = value
            elif name == "id":
                if "\0" not in value:
                    last_id = value
            elif name == "retry":
                if value.isdigit() and value.isascii():
                    try:
                        block_retry = self.retry = int(value)
                    except ValueError:  # more digits than int() accepts (sys.int_info)
                        stripped = value.lstrip("0")
                        if len(stripped) <= 4000:
                            block_retry = self.retry = int(stripped or "0")
            # else: a comment (empty name) or an unknown field: ignored
        if pos < len(text):
            self._parts.append(text[pos:])
        self._data = data
        self._type = type_
        self.last_event_id = last_id
        self._block_retry = block_retry
        return events


def iter_decode(chunks: Iterable[bytes]) -> Iterator[ServerSentEvent]:
    """Yield the events of a whole stream given as byte chunks, as soon as each completes."""
    decoder = Decoder()
    feed = decoder.feed
    for chunk in chunks:
        yield from feed(chunk)
    yield from decoder.close()


def decode(chunks: Iterable[bytes]) -> list[ServerSentEvent]:
    """The events of a whole stream given as byte chunks."""
    decoder = Decoder()
    feed = decoder.feed
    events: list[ServerSentEvent] = []
    for chunk in chunks:
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
