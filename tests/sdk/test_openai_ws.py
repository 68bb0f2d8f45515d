"""The openai SDK's WebSocket sessions through ssemock (issue 34): ``realtime.connect`` and
``responses.connect``, sync and async, recorded against a loopback server at
``websocket_base_url``, the server stopped, then replayed with the network lock on; what the SDK's
user sees is the same both ways."""

from __future__ import annotations

import asyncio
import base64
from pathlib import Path
from typing import Any

import openai
import pytest
from ws_servers import realtime, responses, running

import ssemock
from ssemock.plan.conversation import UnmatchedMessageError

KEY = "sk-test-ws34openai0123456789"


def _realtime_sync(base: str) -> list[Any]:
    client = openai.OpenAI(api_key=KEY, websocket_base_url=base)
    with client.realtime.connect(model="gpt-realtime") as conn:
        seen: list[Any] = [conn.recv().type]
        conn.session.update(session={"type": "realtime", "instructions": "Be brief."})
        conn.response.create()
        for event in conn:
            seen.append((event.type, getattr(event, "delta", None)))
            if event.type == "response.done":
                seen.append(event.response.usage.total_tokens)
                return seen
    return seen


async def _realtime_async(base: str) -> list[Any]:
    client = openai.AsyncOpenAI(api_key=KEY, websocket_base_url=base)
    async with client.realtime.connect(model="gpt-realtime") as conn:
        seen: list[Any] = [(await conn.recv()).type]
        await conn.session.update(session={"type": "realtime", "instructions": "Be brief."})
        await conn.response.create()
        async for event in conn:
            seen.append((event.type, getattr(event, "delta", None)))
            if event.type == "response.done":
                seen.append(event.response.usage.total_tokens)
                return seen
    return seen


def _responses_sync(base: str) -> list[Any]:
    client = openai.OpenAI(api_key=KEY, websocket_base_url=base)
    seen: list[Any] = []
    with client.responses.connect() as conn:
        for prompt in ("Say hello.", "Again."):
            conn.response.create(model="gpt-5", input=prompt, store=False)
            for event in conn:
                seen.append((event.type, getattr(event, "delta", None)))
                if event.type == "response.completed":
                    seen.append(event.response.usage.total_tokens)
                    break
    return seen


async def _responses_async(base: str) -> list[Any]:
    client = openai.AsyncOpenAI(api_key=KEY, websocket_base_url=base)
    seen: list[Any] = []
    async with client.responses.connect() as conn:
        for prompt in ("Say hello.", "Again."):
            await conn.response.create(model="gpt-5", input=prompt, store=False)
            async for event in conn:
                seen.append((event.type, getattr(event, "delta", None)))
                if event.type == "response.completed":
                    seen.append(event.response.usage.total_tokens)
                    break
    return seen


CASES = {
    "realtime-sync": (realtime, _realtime_sync),
    "realtime-async": (realtime, lambda base: asyncio.run(_realtime_async(base))),
    "responses-sync": (responses, _responses_sync),
    "responses-async": (responses, lambda base: asyncio.run(_responses_async(base))),
}


@pytest.mark.parametrize("case", list(CASES))
def test_the_sdk_sees_the_same_session_recorded_and_replayed(tmp_path: Path, case: str) -> None:
    server_handler, run = CASES[case]
    path = tmp_path / f"{case}.json"
    with running(server_handler) as server:
        base = server.url("/v1")
        with ssemock.use_cassette(path, record_mode="once"):
            live = run(base)
    assert live and KEY not in path.read_text()
    with ssemock.use_cassette(path, record_mode="none", allowed_hosts=[]) as player:
        again = run(base)
    assert again == live
    assert player.conversations[0].unsent() == []


# -- a voice app: base64 audio inside JSON (issue 43 item 4) ---------------------------------------


def _pcm(changed: int | None = None) -> bytes:
    """0.3 s of 24 kHz PCM16 (a sine-like ramp), with the sample ``changed`` one step off."""
    samples = [(i * 37) % 2000 - 1000 for i in range(7200)]
    if changed is not None:
        samples[changed] += 1
    return b"".join(s.to_bytes(2, "little", signed=True) for s in samples)


def _voice(base: str, pcm: bytes, instructions: str = "Be brief.") -> list[Any]:
    """The openai SDK's Realtime client as a voice app drives it: the microphone's audio appended
    in 100 ms chunks, committed, then a response."""
    client = openai.OpenAI(api_key=KEY, websocket_base_url=base)
    with client.realtime.connect(model="gpt-realtime") as conn:
        seen: list[Any] = [conn.recv().type]
        conn.session.update(session={"type": "realtime", "instructions": instructions})
        for at in range(0, len(pcm), 4800):
            conn.input_audio_buffer.append(audio=base64.b64encode(pcm[at : at + 4800]).decode())
        conn.input_audio_buffer.commit()
        conn.response.create()
        for event in conn:
            seen.append((event.type, getattr(event, "delta", None)))
            if event.type == "response.done":
                return seen
    return seen


@pytest.fixture(scope="module")
def voice(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, list[Any]]:
    """A voice session recorded once against a loopback Realtime server (stopped after)."""
    path = tmp_path_factory.mktemp("voice") / "voice.json"
    with running(realtime) as server:
        base = server.url("/v1")
        with ssemock.use_cassette(path, record_mode="once"):
            live = _voice(base, _pcm())
    return path, base, live


def test_audio_one_sample_off_replays_by_its_place_and_length(voice: tuple[Path, str, list[Any]]) -> None:
    path, base, live = voice
    with ssemock.use_cassette(path, allowed_hosts=[]) as player:
        assert _voice(base, _pcm(changed=3000)) == live
    assert player.conversations[0].unsent() == []


def test_strict_matching_names_the_first_differing_offset_with_context(
    voice: tuple[Path, str, list[Any]],
) -> None:
    path, base, _ = voice
    changed = _pcm(changed=3000)  # sample 3000: byte 6000, in the second 4800-byte append
    recorded, sent = (base64.b64encode(p[4800:9600]).decode() for p in (_pcm(), changed))
    at = next(i for i, (x, y) in enumerate(zip(recorded, sent)) if x != y)
    with pytest.raises(UnmatchedMessageError) as failed:
        with ssemock.use_cassette(path, allowed_hosts=[], ignore_message_paths=["strict"]):
            _voice(base, changed)
    message = str(failed.value)
    assert (
        f"differs at $.audio, character {at} ({len(recorded)} characters recorded, {len(sent)} sent"
        in message
    )
    assert f"byte {at * 3 // 4} of the base64-decoded data" in message
    lines = message.splitlines()
    where = next(i for i, line in enumerate(lines) if line.startswith("    recorded: "))
    assert lines[where] == f"    recorded: ...{recorded[at - 20 : at + 20]}..."
    assert lines[where + 1] == f"    sent:     ...{sent[at - 20 : at + 20]}..."
    assert lines[where + 2] == " " * len("    recorded: ...") + " " * 20 + "^"  # under the first difference


def test_a_path_of_the_users_is_ignored_and_the_defaults_kept(voice: tuple[Path, str, list[Any]]) -> None:
    path, base, live = voice
    with pytest.raises(UnmatchedMessageError, match=r"differs at \$\.session\.instructions"):
        with ssemock.use_cassette(path, allowed_hosts=[]):
            _voice(base, _pcm(), instructions="Today is Tuesday. Be brief.")
    with ssemock.use_cassette(path, allowed_hosts=[], ignore_message_paths=["$.session.instructions"]):
        assert _voice(base, _pcm(changed=7), instructions="Today is Tuesday. Be brief.") == live
