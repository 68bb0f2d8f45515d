"""deepgram.listen (Deepgram Flux, ``/v2/listen``; issue 44 item 4): the reference accumulator gives
one result per turn from deepgram-sdk's own message models, detection from the URL and from a
``TurnInfo`` alone, Flux's ``Error`` in its own shape, and the synthesizer's session folds back to
the words it was made from (a property)."""

from __future__ import annotations

import json
import string

import pytest
from deepgram.listen.v2.types import ListenV2FatalError, ListenV2TurnInfo
from hypothesis import given, settings
from hypothesis import strategies as st

import ssemock
from ssemock import protocols
from ssemock.accumulate import accumulate_session, detect_protocol
from ssemock.protocols.base import StreamError

FLUX = protocols.get("deepgram.listen")
# the words' letters: a-z and à-ÿ, drawn as text (a regex strategy spent most of the test drawing)
LETTERS = string.ascii_lowercase + "".join(map(chr, range(ord("à"), ord("ÿ") + 1)))


def _turn(event: str, turn: int, transcript: str) -> str:
    words = [{"word": w, "confidence": 0.9} for w in transcript.split()]
    message = ListenV2TurnInfo(request_id="req_1", sequence_id=1, event=event, turn_index=turn,
                               audio_window_start=0.0, audio_window_end=0.5, transcript=transcript,
                               words=words, end_of_turn_confidence=0.5)  # type: ignore[arg-type]  # fmt: skip
    return message.model_dump_json()


def test_one_result_per_turn_its_last_transcript() -> None:
    session = [
        json.dumps({"type": "Connected", "request_id": "req_1", "sequence_id": 0}),
        _turn("StartOfTurn", 0, "the"),
        _turn("Update", 0, "the weather"),
        _turn("EagerEndOfTurn", 0, "the weather"),
        _turn("TurnResumed", 0, "the weather is"),
        _turn("EndOfTurn", 0, "the weather is sunny"),
        _turn("StartOfTurn", 1, "thanks"),
    ]
    results = accumulate_session(session, url="wss://api.deepgram.com/v2/listen?model=flux-general-en")
    assert [(r.protocol, r.id, r.text, r.complete, r.finish_reason) for r in results] == [
        ("deepgram.listen", "turn 0", "the weather is sunny", True, "EndOfTurn"),
        ("deepgram.listen", "turn 1", "thanks", False, None),
    ]


def test_detected_from_the_url_and_from_a_turn_alone() -> None:
    assert detect_protocol(url="wss://api.deepgram.com/v2/listen?model=flux-general-en") == "deepgram.listen"
    assert detect_protocol([json.loads(_turn("Update", 0, "hi"))]) == "deepgram.listen"
    assert protocols.detect(url="wss://api.deepgram.com/v1/listen") is None  # Nova's, not Flux's


def test_the_error_event_is_flux_s_fatal_error_and_folds_as_one() -> None:
    data = FLUX.error_event(
        StreamError("SLOW_UPLOAD", "Audio arrived too slowly.", framing="ndjson", newline="")
    )
    parsed = ListenV2FatalError.model_validate_json(data)
    assert (parsed.code, parsed.description) == ("SLOW_UPLOAD", "Audio arrived too slowly.")
    (result,) = accumulate_session([_turn("StartOfTurn", 0, "the"), data], protocol="deepgram.listen")
    assert result.error == {"code": "SLOW_UPLOAD", "description": "Audio arrived too slowly."}
    assert json.loads(FLUX.http_error(401, None).body)["err_code"] == "INVALID_AUTH"


def test_a_turn_without_its_index_is_named() -> None:
    bad = json.dumps({"type": "TurnInfo", "event": "Update", "transcript": "hi"})
    with pytest.raises(ssemock.ProtocolError, match="TurnInfo has no integer 'turn_index'"):
        accumulate_session([bad], protocol="deepgram.listen")


@settings(deadline=None)
@given(st.lists(st.text(LETTERS, min_size=1, max_size=8), min_size=1, max_size=8))
def test_the_synthesized_session_folds_to_its_words(words: list[str]) -> None:
    (x,) = FLUX.synthesize(" ".join(words)).interactions  # type: ignore[misc]
    assert x.websocket is not None
    for m in x.websocket.received():
        if json.loads(m.payload)["type"] == "TurnInfo":
            ListenV2TurnInfo.model_validate_json(m.payload)
    (result,) = accumulate_session([m.payload for m in x.websocket.received()], url=x.request.url)
    assert result.text == " ".join(words) and result.complete
    assert sum(1 for m in x.websocket.sent() if m.type == "binary") == len(words)
