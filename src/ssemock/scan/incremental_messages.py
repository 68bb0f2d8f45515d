"""A WebSocket session's messages scanned as they arrive, so the save at exit does not scan each
again.

A recording (`ssemock.plan.websocket.record.WsRecorder`) hands a `MessageScan` each message as it
is reassembled; the scan reads it as the scan at save does (`ssemock.scan.walk.scan_interaction`:
the message as a body, inflated when it is compressed). What is left for the save is what needs
the whole session: the text joined across the messages of each direction, the frames' payloads
and the close reason. The save takes the findings (`adopt`) when nothing it read before the
messages (the URL, the headers) was one of the strings or base64 runs the messages' scan decoded:
the scan at save decodes each only once, so it would have skipped it in the messages; else, or
when a finding under a credential name must be judged with the request's prose, it scans the
messages itself. The scan keeps the strings it decoded (the save's scan keeps them too, while it
runs): past `_MAX` bytes of messages it lets them go and leaves the session to the save.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from .body_forms import DECODED_MAX, message_encoding
from .prescanned import messages_scanned
from .walk import _NAMED_FIELD, _no_prose, _Scan

__all__ = ["MessageScan", "messages_scanned"]

_MAX = 64 << 20  # bytes of messages scanned as they arrive, at most: past it the save scans them all
_REPEAT_MIN = 1024  # a message shorter than this is read again (its read costs about what a look-up does)
_REPEATS_KEPT = 1024  # clean messages kept to compare with, at most (the oldest go first)
_SAMPLE = 64  # characters (or bytes) of each end of a message that pick the earlier one to compare


class _Repeats:
    """Earlier messages that gave no finding, picked by their length and ends (no hash of a whole
    message): a message equal to one of them need not be read."""

    def __init__(self) -> None:
        self._kept: dict[tuple[int, str | bytes, str | bytes], str | bytes] = {}

    @staticmethod
    def _key(data: str | bytes) -> tuple[int, str | bytes, str | bytes]:
        return len(data), data[:_SAMPLE], data[-_SAMPLE:]

    def seen(self, data: str | bytes) -> bool:
        """Whether ``data`` equals a clean message kept (same type, same characters)."""
        if len(data) < _REPEAT_MIN:
            return False
        earlier = self._kept.get(self._key(data))
        return earlier is not None and type(earlier) is type(data) and earlier == data

    def clean(self, data: str | bytes) -> None:
        """``data`` was read and gave no finding."""
        if len(data) >= _REPEAT_MIN:
            if len(self._kept) >= _REPEATS_KEPT:
                del self._kept[next(iter(self._kept))]
            self._kept[self._key(data)] = data


class MessageScan:
    """The scan of one session's messages, fed in order as they arrive (`message`)."""

    def __init__(self, url: str) -> None:
        self._url = url
        self._scan = _Scan(0)
        self._data: list[str | bytes] = []  # the messages scanned (the recording's own objects)
        self._size = 0  # their bytes
        self._repeats = _Repeats()
        self.broken = False  # something went wrong, or too much to keep: the save scans the messages

    def message(self, message: Any, received: bytes) -> None:
        """The next message of the session (a `ssemock.store.websocket.Message`) and the bytes
        its data was decoded from: its ``payload`` unless a text was not UTF-8 (then encoded
        again, as the save reads it), and no text encoded again otherwise."""
        if self.broken:
            return
        try:
            data = message.data
            k = len(self._data)
            payload = data.encode() if type(data) is str and "\ufffd" in data else received
            self._size += len(payload)
            if self._size > _MAX:
                self._scan, self._data, self.broken = _Scan(0), [], True  # what it kept let go
                return
            if not self._repeats.seen(data):
                found = len(self._scan.found)
                self._read(f"websocket.messages[{k}]", payload, data)
                if len(self._scan.found) == found:
                    self._repeats.clean(data)
            self._data.append(data)
        except Exception:  # never fail a recording: the save scans the messages instead
            self.broken = True

    def _read(self, field: str, payload: bytes, data: str | bytes) -> None:
        """A message read as the scan at save reads it."""
        if type(data) is str and len(payload) <= DECODED_MAX and "\0" not in data:
            self._text(field, payload, data)
        else:
            self._scan.body(field, payload, message_encoding(data), self._url, stream=False)

    def _text(self, field: str, payload: bytes, text: str) -> None:
        """A text message as `_Scan.body` reads it, minus the steps it cannot need: text is
        never compressed (no ``Content-Encoding``), its UTF-8 has no byte order mark of UTF-16
        and, without a NUL, is not taken for UTF-16 or UTF-32, and its decoded form is ``text``
        itself (no decode of ``payload``, the copy of it the message already is)."""
        self._scan.raw(field, payload)
        if text:
            self._scan.text(field, text, "", 0, shapes=False)

    def holds(self, messages: list[Any]) -> bool:
        """Whether ``messages`` are the very messages scanned, in order."""
        data = self._data
        return (
            not self.broken
            and len(messages) == len(data)
            and all(m.data is d for m, d in zip(messages, data, strict=True))
        )

    def adopt(self, scan: _Scan) -> bool:
        """Add to ``scan`` (the scan at save, at the session's messages) the findings and the
        strings decoded of the messages, as if it had scanned them; False when it must."""
        mine = self._scan
        if scan.done & mine.done or scan.runs & mine.runs:
            return False
        if scan.prose is not _no_prose and any(f.rule.startswith(_NAMED_FIELD) for f in mine.found):
            return False
        scan.found += [dataclasses.replace(f, interaction=scan.index) for f in mine.found]
        scan.done |= mine.done
        scan.runs |= mine.runs
        return True
