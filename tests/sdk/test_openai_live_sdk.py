"""openai's GPT-Live sessions through ssemock (issue 44 item 1): ``client.live.connect()`` sync and
async, ``client.live.sideband.connect(...)`` and ``client.live.forks.connect(...)``, recorded
against a loopback stand-in that speaks GPT-Live as the SDK's types describe it, the stand-in
stopped, then replayed offline; the SDK's user sees the same session both ways, and the recording
folds as ``openai.live``."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Callable
from pathlib import Path
from typing import Any

import openai
import pytest
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.frames import OK_CLOSE_CODES
from ws_servers import gpt_live, running

import ssemock
from ssemock import cassettes
from ssemock.accumulate import accumulate_session
from ssemock.plan.websocket.variants import VariantRefused
from ssemock.variants.websocket import chunking as ws_chunking
from ssemock.variants.websocket import faults as ws_faults
from ssemock.variants.websocket import frames as ws_frames

KEY = "sk-test-live44openai0123456789"
PCM = bytes(range(256)) * 19  # the microphone's 0.1 s, as base64 inside JSON


def _seen(event: Any) -> tuple[Any, ...]:
    return (event.type, getattr(event, "delta", None), getattr(event, "event", None))


def _primary_sync(base: str) -> list[Any]:
    client = openai.OpenAI(api_key=KEY, websocket_base_url=base)
    with client.live.connect() as conn:
        conn.send({"type": "session.start", "session": {"model": "gpt-live-1"}})
        seen: list[Any] = [conn.recv().type]
        conn.send({"type": "session.input_audio.append", "audio": base64.b64encode(PCM).decode()})
        for event in conn:
            seen.append(_seen(event))
            if event.type == "session.usage.updated":
                conn.send({"type": "session.close"})
            if event.type == "session.closed":
                seen.append((event.reason, event.usage.seconds))
                break
    return seen


async def _primary_async(base: str) -> list[Any]:
    client = openai.AsyncOpenAI(api_key=KEY, websocket_base_url=base)
    async with client.live.connect() as conn:
        await conn.send({"type": "session.start", "session": {"model": "gpt-live-1"}})
        seen: list[Any] = [(await conn.recv()).type]
        await conn.send({"type": "session.input_audio.append", "audio": base64.b64encode(PCM).decode()})
        async for event in conn:
            seen.append(_seen(event))
            if event.type == "session.usage.updated":
                await conn.send({"type": "session.close"})
            if event.type == "session.closed":
                seen.append((event.reason, event.usage.seconds))
                break
    return seen


def _sideband_sync(base: str) -> list[Any]:
    client = openai.OpenAI(api_key=KEY, websocket_base_url=base)
    with client.live.sideband.connect(session_id="sess_L1") as conn:
        seen: list[Any] = [conn.recv().session.id]
        conn.send({"type": "session.instructions.append", "content": "Mention the umbrella."})
        seen.append(_seen(conn.recv()))
        conn.send({"type": "session.close"})
        seen.append(conn.recv().type)
    return seen


async def _fork_async(base: str) -> list[Any]:
    client = openai.AsyncOpenAI(api_key=KEY, websocket_base_url=base)
    async with client.live.forks.connect(session_id="sess_L1") as conn:
        await conn.send({"type": "session.start", "session": {}})
        started = await conn.recv()
        seen: list[Any] = [started.type, started.session.id]  # type: ignore[union-attr]
        await conn.send({"type": "session.input_audio.append", "audio": base64.b64encode(PCM).decode()})
        async for event in conn:
            seen.append(_seen(event))
            if event.type == "session.usage.updated":
                await conn.send({"type": "session.close"})
            if event.type == "session.closed":
                break
    return seen


CASES: dict[str, Callable[[str], list[Any]]] = {
    "primary-sync": _primary_sync,
    "primary-async": lambda base: asyncio.run(_primary_async(base)),
    "sideband-sync": _sideband_sync,
    "fork-async": lambda base: asyncio.run(_fork_async(base)),
}


@pytest.mark.parametrize("case", list(CASES))
def test_the_sdk_sees_the_same_live_session_recorded_and_replayed(tmp_path: Path, case: str) -> None:
    run = CASES[case]
    path = tmp_path / f"{case}.json"
    with running(gpt_live) as server:
        base = server.url("/v1")
        with ssemock.use_cassette(path, record_mode="once"):
            live = run(base)
    assert live and KEY not in path.read_text()
    with ssemock.use_cassette(path, record_mode="none", allowed_hosts=[]) as player:
        again = run(base)
    assert again == live
    assert player.conversations[0].unsent() == []
    (x,) = ssemock.Cassette.load(path).interactions
    assert x.websocket is not None
    (result,) = accumulate_session([m.payload for m in x.websocket.received()], url=x.request.url)
    assert result.protocol == "openai.live" and result.complete
    if case != "sideband-sync":
        assert result.text == result.transcript == "Sunny."  # type: ignore[attr-defined]
        assert result.audio == base64.b64decode("AAAA//8BAP7/") * 2  # type: ignore[attr-defined]
        assert [(c.type, c.name, c.parsed_arguments) for c in result.tool_calls] == [
            ("delegation", "responses", {}),
            ("function", "get_weather", {"city": "Paris"}),
        ]
        assert result.usage == {"seconds": 1.5} and result.finish_reason == "close_requested"


MARKED = """
import base64

import openai
import pytest

BASE = {base!r}


@pytest.mark.ssemock
def test_live():
    client = openai.OpenAI(api_key="sk-test-live44marker0123456789", websocket_base_url=BASE)
    with client.live.connect() as conn:
        conn.send({{"type": "session.start", "session": {{"model": "gpt-live-1"}}}})
        assert conn.recv().type == "session.started"
        conn.send({{"type": "session.input_audio.append", "audio": base64.b64encode({pcm!r}).decode()}})
        said = []
        for event in conn:
            if event.type == "session.output_transcript.delta":
                said.append(event.delta)
            if event.type == "session.usage.updated":
                conn.send({{"type": "session.close"}})
            if event.type == "session.closed":
                break
    assert "".join(said) == "Sunny."
"""


def test_the_marker_replays_a_live_session_offline(pytester: pytest.Pytester) -> None:
    """Under the marker: the session recorded by ``use_cassette`` against the stand-in, which is
    then stopped; the marker's test replays it (offline, the default mode) with other microphone
    samples of the same length (the audio matches by its length, the protocol's default)."""
    cassette = pytester.path / "cassettes" / "test_marked" / "test_live.json"
    with running(gpt_live) as server:
        base = server.url("/v1")
        pytester.makepyfile(test_marked=MARKED.format(base=base, pcm=bytes(reversed(PCM))))
        with ssemock.use_cassette(cassette, record_mode="once"):
            _primary_sync(base)
    replayed = pytester.runpytest_inprocess("-p", "no:randomly")
    replayed.assert_outcomes(passed=1)


# -- the shipped session under every WebSocket variant ---------------------------------------------

SHIPPED = "realtime/openai_live_audio_delegation"


def _ask_shipped(client: openai.OpenAI, pcm: bytes) -> tuple[str, list[str], str]:
    """The shipped session's client, as the recipe writes it: what was said, the delegated
    calls, the close reason; an ``error`` event ends it with its code."""
    said, calls = "", []
    with client.live.connect() as conn:
        fmt = {"format": {"type": "audio/pcm", "rate": 24000}}
        conn.send({"type": "session.start", "session": {"model": "gpt-live-1", "audio": fmt}})
        assert conn.recv().type == "session.started"
        conn.send({"type": "session.input_audio.append", "audio": base64.b64encode(pcm).decode()})
        for event in conn:
            if event.type == "session.output_transcript.delta":
                said += event.delta
            if event.type == "response.event" and event.event["type"] == "response.output_item.done":
                calls.append(str(event.event["item"]["name"]))  # type: ignore[index]
            if event.type == "session.usage.updated":
                conn.send({"type": "session.close"})
            if event.type in ("session.closed", "error"):
                return said, calls, event.reason if event.type == "session.closed" else event.error.code
    return said, calls, "ended"


# every re-framing of the registry the SDK can take (it offers no permessage-deflate: below)
REFRAMINGS = [None if r.name == "as_recorded" else r.name for r in ws_frames.ALL if r.deflate is None] + [
    "fragments:2+pings"
]


@pytest.mark.parametrize("transform", REFRAMINGS)
@pytest.mark.parametrize("chunking", ws_chunking.names())
def test_the_shipped_session_replays_through_the_sdk_under_every_variant(
    chunking: str, transform: str | None
) -> None:
    client = openai.OpenAI(api_key=KEY, websocket_base_url="wss://api.openai.com/v1")
    with ssemock.replay(
        cassettes.load(SHIPPED), chunking=chunking, transform=transform, allowed_hosts=[]
    ) as player:
        said, calls, reason = _ask_shipped(client, bytes(816))
        player.assert_text(said)
    assert (said, calls, reason) == ("Sunny, 22 °C in Paris ☀ — Grüße!", ["get_weather"], "close_requested")


def test_a_deflate_reframing_is_refused_for_the_sdk_which_offers_none() -> None:
    client = openai.OpenAI(api_key=KEY, websocket_base_url="wss://api.openai.com/v1")
    for name in [r.name for r in ws_frames.ALL if r.deflate]:
        with pytest.raises(VariantRefused, match="permessage-deflate"):
            with ssemock.replay(cassettes.load(SHIPPED), transform=name, allowed_hosts=[]):
                _ask_shipped(client, bytes(816))


def _outcome(client: openai.OpenAI) -> tuple[str, object]:
    """How the shipped session ended for the SDK's user: ("ended", the close reason or error
    code), ("closed", the close code received, None: none) or ("refused", the HTTP status)."""
    try:
        return "ended", _ask_shipped(client, bytes(816))[2]
    except ConnectionClosed as closed:
        return "closed", closed.rcvd.code if closed.rcvd is not None else None
    except InvalidStatus as refused:
        return "refused", refused.response.status_code


def _expected(fault: str) -> set[tuple[str, object]]:
    """What a fault of the registry does to the SDK's session, from its own parameters: the
    outcomes it may have. A close with a normal code (1000, 1001, 1005: websockets' "OK" closes)
    either meets the SDK's next send (the close code raised) or ends its event loop quietly, as
    the close and the send race; any other close is raised."""
    head, _, rest = fault.partition(":")
    params = dict(p.split("=", 1) for p in rest.split(",") if "=" in p)
    if head == "sequence":  # the first connection takes the first part
        return _expected(rest.split("|")[0])
    if head == "close":
        code = int(params["code"])
        return {("closed", code), ("ended", "ended")} if code in OK_CLOSE_CODES else {("closed", code)}
    return {
        {
            "drop": lambda: ("closed", None),
            "stall": lambda: ("closed", None),  # the SDK's keepalive, shorter than the stall, ends it
            "handshake": lambda: ("refused", int(params["status"])),
            "error_event": lambda: ("ended", "server_error"),  # GPT-Live's own error event, its code
        }[head]()
    }


@pytest.mark.parametrize("fault", ws_faults.VARIANTS)
def test_every_websocket_fault_of_the_registry_breaks_a_gpt_live_session_its_way(fault: str) -> None:
    client = openai.OpenAI(api_key=KEY, websocket_base_url="wss://api.openai.com/v1")
    with ssemock.replay(cassettes.load(SHIPPED), faults=fault, allowed_hosts=[]):
        assert _outcome(client) in _expected(fault)


def test_an_error_event_fault_is_gpt_live_s_own_error_and_a_drop_ends_the_session() -> None:
    client = openai.OpenAI(api_key=KEY, websocket_base_url="wss://api.openai.com/v1")
    with ssemock.replay(cassettes.load(SHIPPED), faults="error_event:after_message=14", allowed_hosts=[]):
        said, calls, code = _ask_shipped(client, bytes(816))
    assert calls == ["get_weather"] and said and code == "server_error"  # parsed as the SDK's ErrorEvent
    with ssemock.replay(cassettes.load(SHIPPED), faults="drop:after_message=14", allowed_hosts=[]):
        with pytest.raises(Exception) as dropped:  # the websockets client's own error for a lost connection
            _ask_shipped(client, bytes(816))
    assert "ConnectionClosed" in type(dropped.value).__name__
