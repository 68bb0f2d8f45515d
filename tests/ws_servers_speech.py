"""Loopback stand-ins for the live speech sessions apps open (issue 44 item 4), written with the
``websockets`` sync server, each speaking what its SDK's own types describe and validating every
server event with them before it is sent: OpenAI Realtime transcription
(``/v1/realtime?intent=transcription``), OpenAI Realtime translation
(``/v1/realtime/translations``), Deepgram Flux (``/v2/listen``) and Gemini Live Interactions
(``/v1beta/interactions/live``)."""

from __future__ import annotations

import base64
import itertools
import json
from collections.abc import Sequence
from typing import Any

import pydantic
from deepgram.listen.v2.socket_client import V2SocketClientResponse
from openai.types.realtime.realtime_server_event import RealtimeServerEvent
from openai.types.realtime.realtime_translation_server_event import RealtimeTranslationServerEvent
from websockets.sync.server import ServerConnection

__all__ = [
    "AUDIO_OUT",
    "deepgram_flux",
    "gemini_interactions",
    "realtime_transcription",
    "realtime_translation",
]

AUDIO_OUT = bytes(range(0, 256, 3))  # the translation's spoken audio (PCM16 as sent)


def _sender(ws: ServerConnection, types: Any, *, ids: bool = True) -> Any:
    adapter: pydantic.TypeAdapter[Any] = pydantic.TypeAdapter(types)
    numbers = itertools.count(1)

    def send(event: dict[str, Any]) -> None:
        body = {**event, "event_id": f"event_{next(numbers)}"} if ids else event
        parsed = adapter.validate_python(body)
        assert parsed.type == body["type"], (parsed, body)
        ws.send(json.dumps(body))

    return send


def realtime_transcription(ws: ServerConnection) -> None:
    """A transcription session: ``session.created`` (type transcription); per committed buffer, its
    input item's transcript deltas and ``.completed`` with the usage."""
    send = _sender(ws, RealtimeServerEvent)
    send({"type": "session.created", "session": {"type": "transcription", "id": "sess_T1"}})
    items = itertools.count(1)
    for raw in ws:
        event = json.loads(raw)
        if event["type"] == "session.update":
            send({"type": "session.updated", "session": {"type": "transcription", "id": "sess_T1"}})
        elif event["type"] == "input_audio_buffer.commit":
            item = f"item_T{next(items)}"
            send({"type": "input_audio_buffer.committed", "item_id": item, "previous_item_id": None})
            for piece in ("It is ", "sunny."):
                send({"type": "conversation.item.input_audio_transcription.delta", "item_id": item,
                      "content_index": 0, "delta": piece})  # fmt: skip
            usage = {"type": "duration", "seconds": 0.4}
            send({"type": "conversation.item.input_audio_transcription.completed", "item_id": item,
                  "content_index": 0, "transcript": "It is sunny.", "usage": usage})  # fmt: skip


def realtime_translation(ws: ServerConnection) -> None:
    """A translation session: ``session.created``; per appended audio, the input's transcript, the
    output's transcript and audio; ``session.closed`` once the client asks."""
    send = _sender(ws, RealtimeTranslationServerEvent)
    session = {"id": "sess_X1", "type": "translation", "model": "gpt-realtime-translate",
               "expires_at": 1764637200, "audio": {"output": {"language": "de"}}}  # fmt: skip
    send({"type": "session.created", "session": session})
    said = iter(("Es ist ", "sonnig."))
    for raw in ws:
        event = json.loads(raw)
        if event["type"] == "session.update":
            send({"type": "session.updated", "session": session})
        elif event["type"] == "session.input_audio_buffer.append":
            send({"type": "session.input_transcript.delta", "delta": "It is sunny. ", "elapsed_ms": 200})
            send({"type": "session.output_transcript.delta", "delta": next(said, ""), "elapsed_ms": 200})
            delta = base64.b64encode(AUDIO_OUT).decode()
            send(
                {
                    "type": "session.output_audio.delta",
                    "delta": delta,
                    "format": "pcm16",
                    "sample_rate": 24000,
                }
            )
        elif event["type"] == "session.close":
            send({"type": "session.closed"})
            return


def deepgram_flux(
    ws: ServerConnection, said: Sequence[str] = ("the", "weather", "in", "paris", "is", "sunny")
) -> None:
    """Deepgram Flux: ``Connected``; the audio's turns as ``TurnInfo`` (``StartOfTurn``, an
    ``Update`` per audio message, ``EndOfTurn`` every third message, the whole transcript and its
    word list each time), a word of ``said`` heard per audio message; ``CloseStream`` ends it."""
    send = _sender(ws, V2SocketClientResponse, ids=False)
    sequence = itertools.count()
    send({"type": "Connected", "request_id": "req_D1", "sequence_id": next(sequence)})
    words = iter(said)
    turn, heard, audio = 0, [], 0

    def info(kind: str) -> None:
        send({"type": "TurnInfo", "request_id": "req_D1", "sequence_id": next(sequence), "event": kind,
              "turn_index": turn, "audio_window_start": 0.0, "audio_window_end": audio * 0.1,
              "transcript": " ".join(heard), "words": [{"word": w, "confidence": 0.9} for w in heard],
              "end_of_turn_confidence": 0.9 if kind == "EndOfTurn" else 0.1})  # fmt: skip

    for raw in ws:
        if isinstance(raw, bytes):
            audio += 1
            heard.append(next(words, "..."))
            info("StartOfTurn" if len(heard) == 1 else "Update")
            if len(heard) == 3:
                info("EndOfTurn")
                turn, heard = turn + 1, []
        elif json.loads(raw).get("type") == "CloseStream":
            return


def gemini_interactions(ws: ServerConnection) -> None:
    """Gemini Live Interactions: ``interaction.connected`` once the client connects to its
    interaction; per ``input``, a ``model_output`` step (its text deltas, then ``step.stop``) with
    the first two events in one ``{"events": [...]}`` batch; ``interaction.completed`` once the
    client completes it."""
    from google.genai._gaos.types.interactions.serverevent import ServerEvent

    adapter: pydantic.TypeAdapter[Any] = pydantic.TypeAdapter(ServerEvent)

    def send(*events: dict[str, Any]) -> None:
        for event in events:
            assert adapter.validate_python(event).event_type == event["event_type"], event
        ws.send(json.dumps(events[0] if len(events) == 1 else {"events": list(events)}))

    steps = itertools.count()
    for raw in ws:
        event = json.loads(raw)
        kind = event.get("event_type")
        if kind == "interaction.connect":
            send({"event_type": "interaction.connected"})
        elif kind == "input":
            index = next(steps)
            send({"event_type": "step.start", "index": index, "step": {"type": "model_output"}},
                 {"event_type": "step.delta", "index": index, "delta": {"type": "text", "text": "Sunny "}})  # fmt: skip
            send({"event_type": "step.delta", "index": index, "delta": {"type": "text", "text": "in Paris."}})
            send({"event_type": "step.stop", "index": index, "usage": {"total_output_tokens": 3}})
        elif kind == "interaction.complete":
            send({"event_type": "interaction.completed", "usage": {"total_input_tokens": 5,
                  "total_output_tokens": 3}})  # fmt: skip
