"""A Realtime session recorded once through the real ``websockets`` asyncio client (loopback
server), then replayed offline under every chunking of ``chunking="all"`` and each WebSocket
fault, given as ``chunking=`` and ``faults=`` exactly as for HTTP (issue 35)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
import websockets
from websockets.exceptions import ConnectionClosedError, InvalidStatus
from ws_servers import realtime, running

import ssemock
from ssemock import chunking
from ssemock.plan.websocket.variants import VariantRefused, VariedConversation

KEY = {"authorization": "Bearer sk-test-ws35abcdefghijklmnop"}


async def _session(url: str) -> list[Any]:
    seen: list[Any] = []
    try:
        async with websockets.connect(url, additional_headers=KEY) as ws:
            seen.append(json.loads(await ws.recv())["type"])
            await ws.send(json.dumps({"type": "session.update", "session": {"instructions": "Be brief."}}))
            seen.append(json.loads(await ws.recv())["type"])
            await ws.send(json.dumps({"type": "response.create"}))
            while True:
                event = json.loads(await ws.recv())
                seen.append((event["type"], event.get("delta")))
                if event["type"] == "response.done":
                    return seen
    except ConnectionClosedError as closed:
        seen.append(("closed", closed.rcvd.code if closed.rcvd else 1006))
        return seen


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, list[Any]]:
    path = tmp_path_factory.mktemp("ws35") / "realtime.json"
    with running(realtime) as server:
        url = server.url("/v1/realtime?model=gpt-realtime")
        with ssemock.use_cassette(path, record_mode="once"):
            live = asyncio.run(_session(url))
    return path, url, live


def _replay(recorded: tuple[Path, str, list[Any]], **options: Any) -> tuple[list[Any], ssemock.Player]:
    path, url, _ = recorded
    with ssemock.use_cassette(path, record_mode="none", allowed_hosts=[], **options) as player:
        return asyncio.run(_session(url)), player


@pytest.mark.parametrize("name", [c.name for c in chunking.ALL])
def test_every_chunking_of_all_replays_the_same_session(
    recorded: tuple[Path, str, list[Any]], name: str
) -> None:
    again, player = _replay(recorded, chunking=name)
    assert again == recorded[2]
    [conversation] = player.conversations
    assert isinstance(conversation, VariedConversation)
    assert conversation.reads == sorted(set(conversation.reads))
    if name == "bytewise":  # one read per byte of the wire
        assert conversation.reads == list(range(1, conversation.reads[-1] + 1))
    if name == "mid_line":  # a WebSocket session has no lines: it is cut inside every frame header
        assert conversation.at_byte(conversation.reads[0]).endswith("in its header; read 0 ends at byte 1")


@pytest.mark.parametrize("code", [1011, 1012, 4000])
def test_close_after_message_n(recorded: tuple[Path, str, list[Any]], code: int) -> None:
    again, _ = _replay(recorded, faults=f"close:code={code},after_message=2")
    assert again == [*recorded[2][:2], ("closed", code)]


def test_drop_gives_1006(recorded: tuple[Path, str, list[Any]]) -> None:
    again, _ = _replay(recorded, faults="drop:after_message=3", chunking="bytewise")
    assert again == [*recorded[2][:3], ("closed", 1006)]


def test_handshake_refused_then_the_reconnect_is_served(recorded: tuple[Path, str, list[Any]]) -> None:
    path, url, live = recorded

    async def twice() -> list[Any]:
        with pytest.raises(InvalidStatus) as refused:
            await _session(url)
        assert refused.value.response.status_code == 429
        assert refused.value.response.headers["retry-after"] == "1"
        return await _session(url)

    with ssemock.use_cassette(
        path,
        record_mode="none",
        allowed_hosts=[],
        allow_playback_repeats=True,
        faults="sequence:handshake:status=429,retry_after=1|as_recorded",
    ):
        assert asyncio.run(twice()) == live


def test_the_realtime_error_event(recorded: tuple[Path, str, list[Any]]) -> None:
    again, _ = _replay(recorded, faults="error_event:after_message=3")
    assert again[3] == ("error", None) and again[4:] == recorded[2][3:]


@pytest.mark.parametrize("reframing", ["fragments:3", "pings", "fragments:2+pings", "deflate", "no_deflate"])
def test_reframings_given_as_transforms_leave_the_session_unchanged(
    recorded: tuple[Path, str, list[Any]], reframing: str
) -> None:
    again, player = _replay(recorded, transform=reframing, chunking="mid_utf8")
    assert again == recorded[2]
    [conversation] = player.conversations
    assert isinstance(conversation, VariedConversation) and conversation.unanswered_pings() == []
    if "pings" in reframing:
        assert conversation.pongs  # websockets answered every ping


def test_deflate_for_a_client_that_offers_none_is_refused_with_the_reason(
    recorded: tuple[Path, str, list[Any]],
) -> None:
    path, url, _ = recorded

    async def plain() -> None:
        async with websockets.connect(url, additional_headers=KEY, compression=None) as ws:
            await ws.recv()

    with pytest.raises(VariantRefused, match="offered no permessage-deflate"):
        with ssemock.use_cassette(path, record_mode="none", allowed_hosts=[], transform="deflate"):
            asyncio.run(plain())


def test_assert_text_on_the_session_names_the_message_frame_and_read(
    recorded: tuple[Path, str, list[Any]],
) -> None:
    path, url, live = recorded
    with ssemock.use_cassette(path, record_mode="none", allowed_hosts=[], chunking="mid_utf8") as player:
        seen = asyncio.run(_session(url))
        said = "".join(d for kind, d in seen[2:] if kind == "response.output_audio_transcript.delta")
        player.assert_text(said)  # what the client read is the reference text
        [result] = player.session_expected.results
        assert result.text == "Sunny." and result.complete and result.usage == {"total_tokens": 253, "input_tokens": 132, "output_tokens": 121}  # fmt: skip
        with pytest.raises(ssemock.StreamAssertionError) as failed:
            player.assert_text("Sunnx.")
    text = str(failed.value)
    assert "differs under chunking=mid_utf8, reframing=as_recorded at character 4" in text
    assert (
        "in server message 5: wire byte" in text and "(text of server message 5" in text and "; read" in text
    )


def test_the_error_event_is_in_the_reference(recorded: tuple[Path, str, list[Any]]) -> None:
    path, url, _ = recorded
    with ssemock.use_cassette(
        path, record_mode="none", allowed_hosts=[], faults="error_event:after_message=3"
    ) as player:
        asyncio.run(_session(url))
        [result] = player.session_expected.results  # the error came inside resp_1
        assert result.error is not None and result.error["message"] == "ssemock error_event"


def _sync_session(url: str) -> list[Any]:
    from websockets.sync.client import connect

    seen: list[Any] = []
    try:
        with connect(url, additional_headers=KEY) as ws:
            seen.append(json.loads(ws.recv())["type"])
            ws.send(json.dumps({"type": "session.update", "session": {"instructions": "Be brief."}}))
            seen.append(json.loads(ws.recv())["type"])
            ws.send(json.dumps({"type": "response.create"}))
            while True:
                event = json.loads(ws.recv())
                seen.append((event["type"], event.get("delta")))
                if event["type"] == "response.done":
                    return seen
    except ConnectionClosedError as closed:
        seen.append(("closed", closed.rcvd.code if closed.rcvd else 1006))
        return seen


async def _aiohttp_session(url: str) -> list[Any]:
    import aiohttp

    seen: list[Any] = []
    async with aiohttp.ClientSession() as http, http.ws_connect(url, headers=KEY) as ws:
        seen.append(json.loads(await ws.receive_str())["type"])
        await ws.send_str(json.dumps({"type": "session.update", "session": {"instructions": "Be brief."}}))
        seen.append(json.loads(await ws.receive_str())["type"])
        try:
            await ws.send_str(json.dumps({"type": "response.create"}))
        except aiohttp.ClientConnectionResetError:  # the connection was dropped: aiohttp cannot write
            seen.append(("closed", 1006))
            return seen
        while True:
            message = await ws.receive()
            if message.type != aiohttp.WSMsgType.TEXT:
                seen.append(("closed", ws.close_code))
                return seen
            event = json.loads(message.data)
            seen.append((event["type"], event.get("delta")))
            if event["type"] == "response.done":
                return seen


@pytest.mark.parametrize("stack", ["websockets.sync", "aiohttp.ws"])
@pytest.mark.parametrize(
    "options, ending",
    [
        ({"chunking": "mid_header", "transform": "fragments:3+pings"}, None),
        ({"chunking": "mid_utf8", "faults": "close:code=1011,after_message=2"}, 1011),
        ({"chunking": "coalesced", "faults": "drop:after_message=2"}, 1006),
    ],
)
def test_the_other_stacks_take_the_same_variants(
    recorded: tuple[Path, str, list[Any]], stack: str, options: dict[str, Any], ending: int | None
) -> None:
    path, url, live = recorded
    with ssemock.use_cassette(path, record_mode="none", allowed_hosts=[], **options):
        seen = _sync_session(url) if stack == "websockets.sync" else asyncio.run(_aiohttp_session(url))
    assert seen == (live if ending is None else [*live[:2], ("closed", ending)])
