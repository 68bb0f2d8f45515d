"""Deepgram Flux (``deepgram.listen``): the server messages of a ``/v2/listen`` WebSocket session.

The client streams binary audio (and ``{"type": "CloseStream"}`` to end); the server answers
``Connected`` once, then ``TurnInfo`` messages per turn of speech (``turn_index``): ``StartOfTurn``,
``Update`` / ``EagerEndOfTurn`` / ``TurnResumed`` as the turn is heard, ``EndOfTurn``; each holds
the turn's whole ``transcript`` so far (not a delta) and its ``words``. ``Error`` (``code``,
``description``) is fatal. deepgram-sdk 7.17 (``client.listen.v2.connect(...)``) connects through
``websockets`` (its async client through ``websockets.legacy.client.connect``).

`accumulate_session` gives one result per turn: ``id`` ``"turn N"``, ``text`` the turn's last
transcript, ``complete`` once its ``EndOfTurn`` arrived.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from . import Protocol, _path
from . import synthesis as syn
from .base import JSON, Event, Fold, HTTPErrorBody, StreamError, obj, string
from .messages import message, one_session, split

__all__ = ["PROTOCOL", "URL", "synthesize"]

URL = "wss://api.deepgram.com/v2/listen?model=flux-general-en&encoding=linear16&sample_rate=16000"

_TURN = ("StartOfTurn", "Update", "EagerEndOfTurn", "TurnResumed", "EndOfTurn")


class _Listen(Fold):
    """Flux messages: a turn's transcript, replaced by each ``TurnInfo``; ``EndOfTurn`` ends it."""

    protocol = "deepgram.listen"
    container = "turn"

    def feed(self, event: Event) -> None:
        payload = message(self, event)
        kind = string(payload.get("type"))
        if kind == "TurnInfo":
            turn = payload.get("turn_index")
            if not isinstance(turn, int) or isinstance(turn, bool):
                raise self.fail("TurnInfo has no integer 'turn_index'")
            self.result.id = self.result.id or f"turn {turn}"
            self.result.model = self.result.model or string(payload.get("request_id"))
            choice = self.choice(0)
            choice.text = string(payload.get("transcript"))  # the whole turn so far
            if payload.get("event") == "EndOfTurn":
                choice.finish_reason = "EndOfTurn"
                self.result.complete = True
        elif kind == "Error":
            self.result.error = {k: v for k, v in payload.items() if k not in ("type", "sequence_id")}


def _role(payload: JSON) -> tuple[str, str | None]:
    kind = string(payload.get("type"))
    if kind == "TurnInfo":
        key = f"turn {payload.get('turn_index')}"
        event = payload.get("event")
        return ("start" if event == "StartOfTurn" else "end" if event == "EndOfTurn" else "in"), key
    if kind == "Error":
        return "notice", None
    return "skip", None


def responses(events: Sequence[Event]) -> list[list[int]]:
    """The positions of each turn's messages in a session's received messages, by ``turn_index``
    from ``StartOfTurn`` to ``EndOfTurn``; an ``Error`` joins the turn in progress or stands alone."""
    return split(events, _role)


def error_event(error: StreamError) -> bytes:
    """Flux's fatal ``Error`` message."""
    payload = {"type": "Error", "sequence_id": 0, "code": error.kind, "description": error.message}
    return orjson.dumps(payload) + error.newline.encode()


def http_error(status: int, text: str | None) -> HTTPErrorBody:
    """Deepgram's error body for a refused upgrade."""
    codes = {
        401: "INVALID_AUTH",
        402: "ASR_PAYMENT_REQUIRED",
        403: "INSUFFICIENT_PERMISSIONS",
        429: "TOO_MANY_REQUESTS",
    }
    body = {"err_code": codes.get(status, "INTERNAL_SERVER_ERROR"), "err_msg": text or f"ssemock http_error {status}",
            "request_id": "00000000-0000-0000-0000-000000000000"}  # fmt: skip
    return HTTPErrorBody(orjson.dumps(body))


def _is_flux_event(event: Any) -> bool:
    payload = obj(event)
    return payload.get("type") == "TurnInfo" and payload.get("event") in _TURN and "turn_index" in payload


def synthesize(
    text: str = "",
    *,
    chunk_size: int = 0,
    chunk: bytes = bytes(3200),
    gap: float = 0.1,
    seed: int = 0,
    url: str | None = None,
) -> Any:
    """A Flux session: ``Connected``; the client's audio, one binary message (``chunk``, 0.1 s of
    16 kHz PCM16) per word of ``text`` (per ``chunk_size`` characters when given), each answered
    with the turn's transcript so far, its whole words only (``StartOfTurn``, then ``Update``),
    ``EndOfTurn`` after the last, each with its word list (a credential read aloud is spread over
    it: the secret scan reads its words joined, `ssemock.scan.word_lists`); the client's
    ``CloseStream``."""
    if chunk_size < 0:
        raise ValueError(f"chunk_size is a whole number >= 0, got {chunk_size!r}")
    if chunk_size:
        pieces = [text[at : at + chunk_size] for at in range(0, len(text), chunk_size)] or [""]
    else:
        pieces = [(" " if n else "") + w for n, w in enumerate(text.split())] or [""]
    request_id = f"{seed:08x}-0000-4000-8000-{seed:012x}"
    session = syn.Timeline(0.05)
    sequence = iter(range(1_000_000))

    def recv(after: float, payload: JSON) -> None:
        session.recv(after, orjson.dumps({**payload, "sequence_id": next(sequence)}).decode())

    recv(0.0, {"type": "Connected", "request_id": request_id})
    for n in range(len(pieces)):
        session.send(chunk, gap)
        heard = "".join(pieces[: n + 1])
        last = n == len(pieces) - 1
        if not last:  # recognised words only: a word still being heard is not in the transcript yet
            heard = heard[: heard.rfind(" ") + 1].rstrip() if " " in heard else ""
        for kind in (
            "StartOfTurn" if n == 0 else "Update",
            *(("EndOfTurn",) if n == len(pieces) - 1 else ()),
        ):
            recv(0.01, {"type": "TurnInfo", "request_id": request_id, "event": kind, "turn_index": 0,
                        "audio_window_start": 0.0, "audio_window_end": round((n + 1) * gap, 4),
                        "transcript": heard, "words": [{"word": w, "confidence": 0.98} for w in heard.split()],
                        "end_of_turn_confidence": 0.95 if kind == "EndOfTurn" else 0.05})  # fmt: skip
    session.send('{"type":"CloseStream"}', 0.05)
    return one_session(url or URL, session.messages, request_headers={"user-agent": "deepgram-sdk/7.17.0"})


PROTOCOL = Protocol(
    name="deepgram.listen",
    # over a WebSocket the events are the messages, one JSON object each, as JSON lines are
    framing="ndjson",
    fold=_Listen,
    error_event=error_event,
    http_error=http_error,
    url=lambda url: _path(url).endswith("/v2/listen"),
    event=_is_flux_event,
    synthesize=synthesize,
    responses=responses,
)
