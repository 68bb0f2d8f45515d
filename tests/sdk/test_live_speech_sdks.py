"""The other live speech sessions apps open, through their real SDKs (issue 44 item 4): OpenAI
Realtime transcription (``client.realtime.connect(extra_query={"intent": "transcription"})``) and
translation (``client.realtime.translations.connect(...)``), and Deepgram Flux (deepgram-sdk 7.17's
``client.listen.v2.connect(...)``, sync through ``websockets.sync`` and async through
``websockets.legacy.client.connect``). Each is recorded against a loopback stand-in that validates
every server event with the SDK's own types (tests/ws_servers_speech.py), replayed with the
stand-in stopped and every socket connection audited (none is made), under every WebSocket
chunking and re-framing; the recording is labelled with its protocol and folds as it says."""

from __future__ import annotations

import asyncio
import base64
import functools
import os
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
from deepgram import AsyncDeepgramClient, DeepgramClient
from deepgram.environment import DeepgramClientEnvironment
from google import genai
from socket_audit import connections
from ws_servers import running
from ws_servers_speech import (
    AUDIO_OUT,
    deepgram_flux,
    gemini_interactions,
    realtime_transcription,
    realtime_translation,
)

import ssemock
from ssemock import Cassette, CassetteError
from ssemock.accumulate import accumulate_session, detect_protocol
from ssemock.scan.walk import scan_cassette
from ssemock.variants.websocket import chunking as ws_chunking

KEY = "sk-test-speech44openai0123456789"
DEEPGRAM_KEY = "dg-test-0123456789abcdef0123456789abcdef"
GOOGLE_KEY = "AIzaSyTest-speech44-0123456789abcdefghij"
PCM = bytes(range(256)) * 25  # 0.13 s of 24 kHz PCM16 from the microphone


@pytest.fixture
def audited() -> Iterator[list[Any]]:
    """The socket connections made while it is active (Python's audit hook, ``socket.connect``)."""
    with connections() as made:
        yield made


def _transcribe(base: str) -> list[Any]:
    client = openai.OpenAI(api_key=KEY, websocket_base_url=base)
    seen: list[Any] = []
    with client.realtime.connect(extra_query={"intent": "transcription"}) as conn:
        seen.append(conn.recv().session.type)  # type: ignore[union-attr]
        conn.session.update(session={"type": "transcription"})
        conn.input_audio_buffer.append(audio=base64.b64encode(PCM).decode())
        conn.input_audio_buffer.commit()
        for event in conn:
            seen.append((event.type, getattr(event, "delta", None)))
            if event.type == "conversation.item.input_audio_transcription.completed":
                seen.append(event.transcript)
                return seen
    return seen


def _translate(base: str) -> list[Any]:
    client = openai.OpenAI(api_key=KEY, websocket_base_url=base)
    seen: list[Any] = []
    with client.realtime.translations.connect(model="gpt-realtime-translate") as conn:
        seen.append(conn.recv().type)
        for _ in range(2):
            conn.session.input_audio_buffer.append(audio=base64.b64encode(PCM).decode())
        audio = b""
        for event in conn:
            seen.append(
                (
                    event.type,
                    getattr(event, "delta", None) if event.type != "session.output_audio.delta" else "audio",
                )
            )
            if event.type == "session.output_audio.delta":
                audio += base64.b64decode(event.delta)
                if audio == AUDIO_OUT * 2:
                    conn.session.close()
            if event.type == "session.closed":
                return seen
    return seen


def _deepgram_env(base: str) -> DeepgramClientEnvironment:
    return DeepgramClientEnvironment(
        base=base.replace("ws", "http", 1), production=base, agent=base, agent_rest=base
    )


def _listen_sync(base: str) -> list[Any]:
    client = DeepgramClient(api_key=DEEPGRAM_KEY, environment=_deepgram_env(base))
    seen: list[Any] = []
    with client.listen.v2.connect(model="flux-general-en", encoding="linear16", sample_rate=16000) as socket:
        seen.append(socket.recv().type)  # type: ignore[union-attr]
        for n in range(4):
            socket.send_media(bytes([n]) * 3200)
            event = socket.recv()
            seen.append((event.event, event.turn_index, event.transcript))  # type: ignore[union-attr]
            if n == 2:
                event = socket.recv()
                seen.append((event.event, event.turn_index, event.transcript))  # type: ignore[union-attr]
        socket.send_close_stream()
    return seen


async def _listen_async(base: str) -> list[Any]:
    client = AsyncDeepgramClient(api_key=DEEPGRAM_KEY, environment=_deepgram_env(base))
    seen: list[Any] = []
    async with client.listen.v2.connect(
        model="flux-general-en", encoding="linear16", sample_rate=16000
    ) as socket:
        seen.append((await socket.recv()).type)  # type: ignore[union-attr]
        for n in range(3):
            await socket.send_media(bytes([n]) * 3200)
            event = await socket.recv()
            seen.append((event.event, event.turn_index, event.transcript))  # type: ignore[union-attr]
        event = await socket.recv()
        seen.append((event.event, event.turn_index, event.transcript))  # type: ignore[union-attr]
        await socket.send_close_stream()
    return seen


async def _interact(base: str) -> list[Any]:
    """google-genai's Live Interactions (experimental): connect to an interaction, send a text
    input, read its step to the end, complete it."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # (the SDK's own "experimental" warning)
        client = genai.Client(api_key=GOOGLE_KEY, http_options={"base_url": base.replace("ws", "http", 1)})
        context = client.aio.interactions.connect(id="v1_interaction1")
    seen: list[Any] = []
    async with context as conn:
        await conn.send("What is the weather in Paris?")
        async for event in conn.receive():
            delta = getattr(event, "delta", None)
            seen.append((event.event_type, getattr(delta, "text", None)))
            if event.event_type == "step.stop":
                await conn.complete()
    return seen


CASES: dict[str, tuple[Any, Callable[[str], list[Any]], str, list[tuple[str, str, bool]]]] = {
    "transcription": (
        realtime_transcription,
        _transcribe,
        "openai.realtime",
        [("item_T1", "It is sunny.", True)],
    ),
    "translation": (realtime_translation, _translate, "openai.realtime", [("", "Es ist sonnig.", True)]),
    "deepgram-sync": (
        deepgram_flux,
        _listen_sync,
        "deepgram.listen",
        [("turn 0", "the weather in", True), ("turn 1", "paris", False)],
    ),
    "gemini-interactions": (
        gemini_interactions,
        lambda base: asyncio.run(_interact(base)),
        "gemini.interactions",
        [("", "Sunny in Paris.", True)],
    ),
    "deepgram-async": (
        deepgram_flux,
        lambda base: asyncio.run(_listen_async(base)),
        "deepgram.listen",
        [("turn 0", "the weather in", True)],
    ),
}


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, str, list[Any]]]:
    """Each case recorded once against its stand-in (stopped after)."""
    out = {}
    for case, (handler, run, _, _) in CASES.items():
        path = tmp_path_factory.mktemp(case) / "session.json"
        with running(handler) as server:
            base = server.url("/v1" if case.startswith(("transcription", "translation")) else "")
            with ssemock.use_cassette(path, record_mode="once"):
                live = run(base)
        out[case] = (path, base, live)
    return out


@pytest.mark.parametrize("case", list(CASES))
def test_the_sdk_sees_the_same_session_replayed_offline(
    recorded: dict[str, tuple[Path, str, list[Any]]], audited: list[Any], case: str
) -> None:
    path, base, live = recorded[case]
    text = path.read_text()
    assert live and KEY not in text and DEEPGRAM_KEY not in text and GOOGLE_KEY not in text
    with ssemock.use_cassette(path, record_mode="none", allowed_hosts=[]) as player:
        again = CASES[case][1](base)
    assert again == live
    assert player.conversations[0].unsent() == []
    assert audited == []


@pytest.mark.parametrize("case", list(CASES))
def test_the_recording_is_labelled_and_folds(
    recorded: dict[str, tuple[Path, str, list[Any]]], case: str
) -> None:
    path, _, _ = recorded[case]
    (x,) = ssemock.Cassette.load(path).interactions
    assert x.websocket is not None
    received = [m.payload for m in x.websocket.received()]
    protocol = CASES[case][2]
    assert detect_protocol(url=x.request.url) == protocol
    results = accumulate_session(received, url=x.request.url)
    assert [(r.id, r.text, r.complete) for r in results] == CASES[case][3]
    assert all(r.protocol == protocol for r in results)
    if case == "translation":
        assert results[0].audio == AUDIO_OUT * 2  # type: ignore[attr-defined]
        assert results[0].transcript == "Es ist sonnig."  # type: ignore[attr-defined]


@pytest.mark.parametrize("transform", [None, "fragments:3", "pings"])
@pytest.mark.parametrize("chunking", ws_chunking.names())
@pytest.mark.parametrize("case", list(CASES))
def test_every_variant_replays(
    recorded: dict[str, tuple[Path, str, list[Any]]], case: str, chunking: str, transform: str | None
) -> None:
    path, base, live = recorded[case]
    with ssemock.use_cassette(path, allowed_hosts=[], chunking=chunking, transform=transform):
        assert CASES[case][1](base) == live


TOKEN = "Zq9xR2vL8mT4kW7pN3bY6cH1sD5fG0jA"  # an opaque token: a credential only after "Bearer"
SPOKEN_KEY = ("sk-proj-", "Flux44Spoken9Key0123456789abcd")  # a key heard as two words


def _listen_turns(base: str, words: int) -> list[Any]:
    """deepgram-sdk's sync Flux client: an audio message per word, each answered (and every
    third, the turn's end); what it heard, per message."""
    client = DeepgramClient(api_key=DEEPGRAM_KEY, environment=_deepgram_env(base))
    seen: list[Any] = []
    with client.listen.v2.connect(model="flux-general-en", encoding="linear16", sample_rate=16000) as socket:
        socket.recv()
        for n in range(words):
            socket.send_media(bytes([n]) * 3200)
            for _ in range(2 if n % 3 == 2 else 1):
                event = socket.recv()
                seen.append((event.event, [w.word for w in event.words]))  # type: ignore[union-attr]
        socket.send_close_stream()
    return seen


def test_a_credential_spoken_into_the_word_lists_is_refused_and_kept_masked(tmp_path: Path) -> None:
    """A Bearer token and a key read aloud reach Flux's word lists as separate words (the key in
    two, neither a key alone; the transcripts cumulative): the recording is refused, naming the
    message and the word list, and the recording kept beside it holds neither, in any message."""
    said = ("Bearer", TOKEN, "please", *SPOKEN_KEY, "thanks")
    path = tmp_path / "flux.json"
    with running(functools.partial(deepgram_flux, said=said)) as server:
        with pytest.raises(CassetteError) as refused, ssemock.use_cassette(path, record_mode="once"):
            heard = _listen_turns(server.url(""), len(said))
    assert ("Update", list(SPOKEN_KEY)) in heard  # the stand-in spoke them as separate words
    message = str(refused.value)
    assert "websocket.messages[" in message and "$.words[].word joined" in message
    assert not path.exists() and sorted(os.listdir(tmp_path)) == ["flux.refused.json"]
    kept_text = (tmp_path / "flux.refused.json").read_text()
    for secret in (TOKEN, SPOKEN_KEY[1], TOKEN[:12], SPOKEN_KEY[1][:12], "".join(SPOKEN_KEY)):
        assert secret not in kept_text and secret not in message
    kept = Cassette.load(tmp_path / "flux.refused.json")
    assert scan_cassette(kept) == []
    ws = kept.interactions[0].websocket
    assert ws is not None
    turns = [m.json() for m in ws.received() if m.json().get("type") == "TurnInfo"]  # type: ignore[union-attr]
    assert len(turns) == len(heard)  # every message kept, JSON still
    assert turns[2]["words"][-1]["word"] == "please" and turns[2]["transcript"].endswith(" please")
