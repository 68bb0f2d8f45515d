"""What the realtime (WebSocket) protocols share: a session's messages read as JSON objects, the
spoken result (audio and transcripts), the split of a session into the responses it holds, and
which server events only GPT-Live sends (so the Realtime detector leaves them to ``openai.live``).

Not a protocol (no ``PROTOCOL``): ``openai_realtime``, ``openai_live``, ``gemini_live`` and
``openai_responses`` import these pieces, as synthesizers import `ssemock.protocols.synthesis`.

Over a WebSocket the events a fold takes are the received messages themselves: a parsed JSON
object, or the message's text (``str``) or bytes (Gemini Live sends JSON in binary frames).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from .base import JSON, Accumulated, Event, Fold, excerpt, obj, string

__all__ = ["Spoken", "SpokenFold", "audio_bytes", "is_live_event", "lenient", "message", "split"]


@dataclass
class Spoken(Accumulated):
    """The result of a realtime response: the accumulated message, plus what it said aloud.

    ``text`` is what the model said, in order: its text parts and, for audio parts, their
    transcripts; ``transcript`` holds the audio transcripts alone; ``audio`` the decoded audio
    deltas (PCM as sent), joined; ``media`` any other inline data as ``(mime type, bytes)``.
    """

    transcript: str = ""
    """The transcripts of the audio the response spoke, joined in order."""
    audio: bytes = b""
    """The audio deltas, base64-decoded and joined in order."""
    media: list[tuple[str, bytes]] = field(default_factory=list)
    """Inline data other than audio, as ``(mime type, bytes)``, in order."""

    def to_dict(self) -> JSON:
        """Plain JSON-able form: `Accumulated.to_dict` plus the transcript, the audio's size and
        the media's types and sizes."""
        return {
            **super().to_dict(),
            "transcript": self.transcript,
            "audio_bytes": len(self.audio),
            "media": [{"mime_type": mime, "bytes": len(data)} for mime, data in self.media],
        }


class SpokenFold(Fold):
    """A realtime fold, whose result is a `Spoken` (``spoken``: the same object, as its type)."""

    def __init__(self) -> None:
        super().__init__()
        self.spoken = Spoken(self.protocol)
        self.result = self.spoken


def message(fold: Fold, event: Event) -> JSON:
    """One received message as a JSON object: a parsed object as is, text or bytes parsed; a
    `ProtocolError` (via ``fold.fail``) naming the message otherwise."""
    if isinstance(event, Mapping):
        return dict(event)
    if isinstance(event, bytes | bytearray | memoryview):
        try:
            event = bytes(event).decode()
        except UnicodeDecodeError:
            raise fold.fail(
                "a binary message that is not UTF-8 JSON (audio where an event was expected?)"
            ) from None
    if not isinstance(event, str):
        raise fold.fail(
            f"expected a WebSocket message (a JSON object, its text or bytes), got {type(event).__name__}"
        )
    try:
        value = orjson.loads(event)
    except orjson.JSONDecodeError:
        raise fold.fail(f"message is not JSON: {excerpt(event)}") from None
    if not isinstance(value, dict):
        raise fold.fail(f"message is not a JSON object: {excerpt(event)}")
    return value


def lenient(event: Event) -> JSON | None:
    """The message as a JSON object, or None when it is not one (for splitting, which never fails)."""
    if isinstance(event, Mapping):
        return dict(event)
    if isinstance(event, bytes | bytearray | memoryview | str):
        try:
            value = orjson.loads(bytes(event) if not isinstance(event, str) else event)
        except orjson.JSONDecodeError:
            return None
        return value if isinstance(value, dict) else None
    return None


def audio_bytes(fold: Fold, data: Any, what: str) -> bytes:
    """Base64 audio (standard alphabet, padded) as bytes; a ProtocolError when it is not base64."""
    if not isinstance(data, str):
        raise fold.fail(f"{what} has no base64 string")
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise fold.fail(f"{what} is not base64: {excerpt(data)}") from None


def split(events: Sequence[Event], role: Callable[[JSON], tuple[str, str | None]]) -> list[list[int]]:
    """The positions of the events of each response in a session, in the order responses start.

    ``role(message)`` says what a message is to the split: ``("start", id)`` opens a response,
    ``("end", id)`` ends it (after taking the message), ``("in", id)`` belongs to the response
    ``id`` (``None``: the open one), ``("notice", None)`` belongs to the open response or, with none
    open, stands alone (an error event, a go-away; ``("notice", id)``: the response ``id`` while it
    is open), ``("late", None)`` belongs to the open response
    or else to the last one (usage sent after the end), ``("skip", None)`` is a session event.
    A message that is not JSON goes to the open response (whose fold then names it) or is skipped.
    """
    groups: list[list[int]] = []
    by_id: dict[str, int] = {}
    open_: list[int] = []  # the groups still open, oldest first

    def start(key: str | None) -> int:
        groups.append([])
        open_.append(len(groups) - 1)
        if key is not None:
            by_id[key] = len(groups) - 1
        return len(groups) - 1

    def current() -> int | None:
        return open_[-1] if open_ else None

    for position, event in enumerate(events):
        payload = lenient(event)
        if payload is None:
            at = current()
            if at is not None:
                groups[at].append(position)
            continue
        kind, key = role(payload)
        if kind == "skip":
            continue
        found: int | None
        if kind == "start":
            found = start(key)
        elif kind == "late":
            found = current() if open_ else (len(groups) - 1 if groups else start(None))
        elif kind == "notice":
            found = current() if key is None else by_id.get(key)
            found = found if found is None or found in open_ else None
            if found is None:
                groups.append([position])
                continue
        else:  # in / end
            found = by_id.get(key) if key is not None else current()
        at = start(key) if found is None else found
        groups[at].append(position)
        if kind == "end" and at in open_:
            open_.remove(at)
    return groups


def one_session(
    url: str,
    messages: Sequence[tuple[str, float, str, str | bytes]],
    *,
    request_headers: Mapping[str, str] | None = None,
    response_headers: Mapping[str, str] | None = None,
) -> Any:
    """The cassette a realtime synthesizer returns: one WebSocket interaction (the handshake's
    request and 101, then ``messages`` as ``(direction, t seconds, "text" | "binary", data)``,
    closed by the client with 1000), marked synthesized in the 101's headers."""
    from ..store.cassette import Cassette
    from ..store.model import Interaction, Request, Response
    from ..store.websocket import Close, Message, WebSocket
    from .synthesis import SOURCE_HEADER, SYNTH_SOURCE

    session = [Message(d, t, kind, data) for d, t, kind, data in messages]
    end = (messages[-1][1] if messages else 0.0) + 0.05
    headers = {
        "upgrade": "websocket",
        "connection": "Upgrade",
        **(response_headers or {}),
        SOURCE_HEADER: SYNTH_SOURCE,
    }
    return Cassette(
        [
            Interaction(
                Request("GET", url, list((request_headers or {}).items())),
                Response(101, list(headers.items())),
                WebSocket(messages=session, close=Close(1000, "", "client", True, end)),
            )
        ]
    )


# the server event types only GPT-Live sends (session.updated it shares with Realtime)
_LIVE_EVENTS = frozenset(
    {
        "session.started",
        "session.closed",
        "session.resumed",
        "session.paused",
        "session.usage.updated",
        "session.delegation.created",
        "session.input_audio.append",
        "session.input_audio.muted",
        "session.input_audio.unmuted",
        "session.input_transcript.delta",
        "session.output_transcript.delta",
        "session.output_audio.delta",
        "session.output_audio.fixture.playing",
        "session.output_audio.fixture.played",
        "session.instructions.appended",
        "session.thinking.appended",
        "session.commentary.appended",
        "response.event",
        "decision.event",
        "decision.item.created",
        "decision.item.deleted",
        "transport.dtmf.received",
        "transport.dtmf.send",
        "transport.dtmf.sent",
        "transport.ringing",
        "transport.answered",
        "transport.failed",
    }
)


def is_live_event(event: Any) -> bool:
    """One server event only GPT-Live sends (a ``session.updated`` counts when its session's
    model is a ``gpt-live`` one)."""
    if not isinstance(event, Mapping):
        return False
    kind = string(event.get("type"))
    if kind == "session.updated":
        return string(obj(event.get("session")).get("model")).startswith("gpt-live")
    return kind in _LIVE_EVENTS
