"""The ``websockets`` client stacks: a Realtime session recorded through the real client against a
loopback server, the server stopped, then replayed with the network lock on; what the client saw
is the same both ways. Every record mode; a message that matches nothing fails."""

from __future__ import annotations

import asyncio
import json
import ssl
import traceback
import warnings
from pathlib import Path
from typing import Any

import pytest
from ws_servers import realtime, running

import ssemock
from ssemock import Interaction, Request, Response
from ssemock.plan.conversation import UnmatchedMessageError
from ssemock.websocket import Close, Message, WebSocket

KEY = {"authorization": "Bearer sk-test-ws34abcdefghijklmnop"}


async def _session(url: str, message: dict[str, Any] | None = None) -> list[Any]:
    from websockets.asyncio.client import connect  # websockets.connect is the legacy client in 13.x

    async with connect(url, additional_headers=KEY) as ws:
        seen = [json.loads(await ws.recv())["type"]]
        await ws.send(
            json.dumps(
                {"type": "session.update", "event_id": "evt_local1", "session": {"instructions": "Be brief."}}
            )
        )
        seen.append(json.loads(await ws.recv())["session"]["instructions"])
        await ws.send(json.dumps(message or {"type": "response.create", "event_id": "evt_local2"}))
        while True:
            event = json.loads(await ws.recv())
            seen.append((event["type"], event.get("delta"), (event.get("response") or {}).get("usage")))
            if event["type"] == "response.done":
                return seen


def _record(path: Path, mode: str = "once") -> tuple[list[Any], str]:
    with running(realtime) as server:
        url = server.url("/v1/realtime?model=gpt-realtime")
        with ssemock.use_cassette(path, record_mode=mode):
            live = asyncio.run(_session(url))
    return live, url


@pytest.mark.parametrize("mode", ["once", "all", "new_episodes", "rewrite"])
def test_asyncio_session_records_then_replays_offline(tmp_path: Path, mode: str) -> None:
    path = tmp_path / "realtime.json"
    live, url = _record(path, mode)
    assert live[0] == "session.created" and live[-1][0] == "response.done"
    saved = json.loads(path.read_text())
    assert saved["version"] == 2 and "sk-test" not in path.read_text()
    ws = ssemock.Cassette.load(path).interactions[0].websocket
    assert ws is not None and [m.direction for m in ws.messages][:3] == ["recv", "send", "recv"]
    assert ws.close.by == "client" and ws.close.clean
    with ssemock.use_cassette(
        path, record_mode="none", timing="instant", allowed_hosts=[]
    ) as player:  # the server is gone
        again = asyncio.run(_session(url))
    assert again == live
    assert player.conversations[0].unsent() == []


def test_event_ids_differ_but_match(tmp_path: Path) -> None:
    path = tmp_path / "realtime.json"
    live, url = _record(path)
    with ssemock.use_cassette(path, record_mode="none", allowed_hosts=[]):
        again = asyncio.run(_session(url, {"type": "response.create", "event_id": "evt_other"}))
    assert again == live


def test_an_unmatched_message_fails_with_the_closest_recorded_one(tmp_path: Path) -> None:
    path = tmp_path / "realtime.json"
    _, url = _record(path)
    with pytest.raises(UnmatchedMessageError) as failed:
        with ssemock.use_cassette(path, record_mode="none", allowed_hosts=[]):
            asyncio.run(_session(url, {"type": "response.create", "response": {"instructions": "x"}}))
    text = str(failed.value)
    assert "closest recorded: client message #1" in text and "$.response: only sent" in text


def test_an_unrecorded_session_is_unmatched_and_never_connects(tmp_path: Path) -> None:
    path = tmp_path / "realtime.json"
    _, url = _record(path)
    with pytest.raises(ssemock.UnmatchedRequestError):
        with ssemock.use_cassette(path, record_mode="none", allowed_hosts=[]):
            asyncio.run(_session(url.replace("gpt-realtime", "other")))


def test_allowed_hosts_pass_an_unrecorded_session_through(tmp_path: Path) -> None:
    path = tmp_path / "realtime.json"
    live, _ = _record(path)
    with running(realtime) as server:  # a new server: the recorded URL's port is gone
        with ssemock.use_cassette(path, record_mode="none", allowed_hosts=["127.0.0.1"]) as player:
            passed = asyncio.run(_session(server.url("/v1/realtime?model=other")))
    assert passed == live and player.conversations == [] and len(player.cassette.interactions) == 1


def _sync_session(url: str) -> list[Any]:
    from websockets.sync.client import connect

    with connect(url, additional_headers=KEY) as ws:
        seen = [json.loads(ws.recv())["type"]]
        ws.send(
            json.dumps({"type": "session.update", "event_id": "evt_s1", "session": {"instructions": "Hi."}})
        )
        seen.append(json.loads(ws.recv())["session"]["instructions"])
        ws.send(json.dumps({"type": "response.create", "event_id": "evt_s2"}))
        while True:
            event = json.loads(ws.recv())
            seen.append((event["type"], event.get("delta")))
            if event["type"] == "response.done":
                return seen


@pytest.mark.parametrize("mode", ["once", "all"])
def test_sync_session_records_then_replays_offline(tmp_path: Path, mode: str) -> None:
    path = tmp_path / "realtime.json"
    with running(realtime) as server:
        url = server.url("/v1/realtime?model=gpt-realtime")
        with ssemock.use_cassette(path, record_mode=mode):
            live = _sync_session(url)
    assert live[-1][0] == "response.done" and "sk-test" not in path.read_text()
    assert ssemock.Cassette.load(path).interactions[0].websocket is not None
    with ssemock.use_cassette(path, record_mode="none", allowed_hosts=[]) as player:
        again = _sync_session(url)
    assert again == live and player.conversations[0].unsent() == []


async def _legacy_session(url: str) -> list[Any]:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from websockets.legacy.client import connect

    async with connect(url, extra_headers=KEY) as ws:
        seen = [json.loads(await ws.recv())["type"]]
        await ws.send(json.dumps({"type": "response.create", "event_id": "evt_l1"}))
        while True:
            event = json.loads(await ws.recv())
            seen.append((event["type"], event.get("delta")))
            if event["type"] == "response.done":
                return seen


def test_legacy_session_records_then_replays_offline(tmp_path: Path) -> None:
    path = tmp_path / "realtime.json"
    with running(realtime) as server:
        url = server.url("/v1/realtime?model=gpt-realtime")
        with ssemock.use_cassette(path, record_mode="once"):
            live = asyncio.run(_legacy_session(url))
    assert live[-1][0] == "response.done" and "sk-test" not in path.read_text()
    with ssemock.use_cassette(path, record_mode="none", allowed_hosts=[]) as player:
        again = asyncio.run(_legacy_session(url))
    assert again == live and player.conversations[0].unsent() == []


async def _aiohttp_session(url: str) -> list[Any]:
    import aiohttp

    async with aiohttp.ClientSession() as session, session.ws_connect(url, headers=KEY) as ws:
        seen = [(await ws.receive_json())["type"]]
        await ws.send_json({"type": "response.create", "event_id": "evt_a1"})
        while True:
            event = await ws.receive_json()
            seen.append((event["type"], event.get("delta")))
            if event["type"] == "response.done":
                return seen


@pytest.mark.parametrize("mode", ["once", "all"])
def test_aiohttp_ws_connect_records_then_replays_offline(tmp_path: Path, mode: str) -> None:
    path = tmp_path / "realtime.json"
    with running(realtime) as server:
        url = server.url("/v1/realtime?model=gpt-realtime")
        with ssemock.use_cassette(path, record_mode=mode):
            live = asyncio.run(_aiohttp_session(url))
    assert live[-1][0] == "response.done" and "sk-test" not in path.read_text()
    assert ssemock.Cassette.load(path).interactions[0].websocket is not None
    with ssemock.use_cassette(path, record_mode="none", allowed_hosts=[]) as player:
        again = asyncio.run(_aiohttp_session(url))
    assert again == live and player.conversations[0].unsent() == []


def _httpx_ws_sync(url: str) -> list[Any]:
    import httpx
    from httpx_ws import connect_ws

    with httpx.Client(headers=KEY) as client, connect_ws(url, client) as ws:
        seen = [ws.receive_json()["type"]]
        ws.send_json({"type": "response.create", "event_id": "evt_h1"})
        while True:
            event = ws.receive_json()
            seen.append((event["type"], event.get("delta")))
            if event["type"] == "response.done":
                return seen


async def _httpx_ws_async(url: str) -> list[Any]:
    import httpx
    from httpx_ws import aconnect_ws

    async with httpx.AsyncClient(headers=KEY) as client, aconnect_ws(url, client) as ws:
        seen = [(await ws.receive_json())["type"]]
        await ws.send_json({"type": "response.create", "event_id": "evt_h2"})
        while True:
            event = await ws.receive_json()
            seen.append((event["type"], event.get("delta")))
            if event["type"] == "response.done":
                return seen


@pytest.mark.parametrize("flavour", ["sync", "async"])
def test_httpx_ws_records_then_replays_offline(tmp_path: Path, flavour: str) -> None:
    path = tmp_path / "realtime.json"

    def run(url: str) -> list[Any]:
        return _httpx_ws_sync(url) if flavour == "sync" else asyncio.run(_httpx_ws_async(url))

    with running(realtime) as server:
        url = server.url("/v1/realtime?model=gpt-realtime", scheme="http")
        with ssemock.use_cassette(path, record_mode="once"):
            live = run(url)
    assert live[-1][0] == "response.done" and "sk-test" not in path.read_text()
    recorded = ssemock.Cassette.load(path).interactions[0]
    assert recorded.websocket is not None and recorded.request.url.startswith("ws://")
    with ssemock.use_cassette(path, record_mode="none", allowed_hosts=[]) as player:
        again = run(url)
    assert again == live and player.conversations[0].unsent() == []


def _timed_cassette(path: Path) -> str:
    from ssemock.store.model import Interaction, Request, Response
    from ssemock.store.websocket import Close, Message, WebSocket

    url = "wss://api.example/v1/realtime?model=gpt-realtime"
    session = WebSocket(
        [
            Message("recv", 0.010, "text", json.dumps({"type": "session.created"})),
            Message("send", 0.020, "text", json.dumps({"type": "response.create"})),
            Message("recv", 0.150, "text", json.dumps({"type": "response.output_text.delta", "delta": "Hi"})),
            Message("recv", 0.200, "text", json.dumps({"type": "response.done"})),
        ],
        close=Close(1000, "", "client", True),
    )
    ssemock.Cassette([Interaction(Request("GET", url), Response(101), session)]).save(path)
    return url


@pytest.mark.parametrize(("timing", "factor"), [("recorded", 1.0), ("scaled:0.5", 0.5)])
def test_timing_paces_received_messages_from_the_message_that_released_them(
    tmp_path: Path, fake_clock: Any, timing: str, factor: float
) -> None:
    from websockets.sync.client import connect

    url = _timed_cassette(tmp_path / "timed.json")
    with ssemock.use_cassette(tmp_path / "timed.json", record_mode="none", timing=timing):
        with connect(url) as ws:
            first = json.loads(ws.recv())["type"]
            ws.send(json.dumps({"type": "response.create"}))
            rest = [json.loads(ws.recv())["type"] for _ in range(2)]
    assert [first, *rest] == ["session.created", "response.output_text.delta", "response.done"]
    # on open: 10 ms; then 130 ms after the client's message (recorded 20 -> 150), then 50 more
    assert [round(s, 4) for s in fake_clock.slept] == [round(x * factor, 4) for x in (0.010, 0.130, 0.050)]


def test_instant_timing_never_sleeps(tmp_path: Path, fake_clock: Any) -> None:
    from websockets.sync.client import connect

    url = _timed_cassette(tmp_path / "timed.json")
    with ssemock.use_cassette(tmp_path / "timed.json", record_mode="none", timing="instant"):
        with connect(url) as ws:
            ws.recv()
            ws.send(json.dumps({"type": "response.create"}))
            assert json.loads(ws.recv())["delta"] == "Hi"
            ws.recv()
    assert fake_clock.slept == []


def test_each_reconnect_is_a_new_interaction_replayed_in_order(tmp_path: Path) -> None:
    path = tmp_path / "realtime.json"
    with running(realtime) as server:
        url = server.url("/v1/realtime?model=gpt-realtime")
        with ssemock.use_cassette(path, record_mode="once"):
            live = [asyncio.run(_session(url)), _sync_session(url)]
    assert len(ssemock.Cassette.load(path).interactions) == 2
    with ssemock.use_cassette(path, record_mode="none", allowed_hosts=[]) as player:
        again = [asyncio.run(_session(url)), _sync_session(url)]
        with pytest.raises(ssemock.UnmatchedRequestError):  # both were played: no third session
            asyncio.run(_session(url))
    assert again == live and [c.index for c in player.conversations] == [0, 1]
    with ssemock.use_cassette(path, record_mode="none", allowed_hosts=[], allow_playback_repeats=True):
        repeated = [asyncio.run(_session(url)), _sync_session(url), asyncio.run(_session(url))]
    assert repeated == [*live, live[0]]  # the unplayed first, then a repeat of the first that matches


def test_a_stall_longer_than_recv_timeout_times_out_at_once(tmp_path: Path) -> None:
    from websockets.sync.client import connect

    url = _timed_cassette(tmp_path / "timed.json")
    with ssemock.use_cassette(tmp_path / "timed.json", record_mode="none", timing="scaled:6000"):
        with connect(url) as ws:  # the first message is due a minute after open (10 ms x 6000)
            with pytest.raises(TimeoutError, match=r"timed out in 2\.0s"):
                ws.recv(timeout=2)  # ends as the client's own timeout ends, without waiting for it


def _closes_without_a_code(ws: Any) -> None:
    """Sends one message, then a close frame with no code (its payload empty)."""
    ws.send('{"type": "bye"}')
    with ws.protocol_mutex:
        ws.protocol.send_close()  # no code: an empty payload
        ws.send_data()
    ws.recv_events_thread.join(5)  # until the client's close answers it


async def _until_closed(url: str) -> tuple[list[str], int | None]:
    from websockets.asyncio.client import connect
    from websockets.exceptions import ConnectionClosed

    seen = []
    async with connect(url) as ws:
        try:
            while True:
                seen.append(str(await ws.recv()))
        except ConnectionClosed as closed:
            return seen, closed.rcvd.code if closed.rcvd is not None else None
    return seen, None


def test_a_server_close_without_a_code_records_loads_and_replays(tmp_path: Path) -> None:
    """The recorder keeps an empty close frame as 1005 (what the client reports): the cassette
    loads, and the replay sends the same empty close frame."""
    path = tmp_path / "closed.json"
    with running(_closes_without_a_code) as server:
        url = server.url("/v1/x")
        with ssemock.use_cassette(path, record_mode="once"):
            live = asyncio.run(_until_closed(url))
    assert live == (['{"type": "bye"}'], 1005)
    close = ssemock.Cassette.load(path).interactions[0].websocket.close  # type: ignore[union-attr]
    assert (close.code, close.by) == (1005, "server")
    with ssemock.use_cassette(path, record_mode="none", allowed_hosts=[]):
        assert asyncio.run(_until_closed(url)) == live


def test_a_handshake_header_beyond_latin_1_replays(tmp_path: Path) -> None:
    """A handshake header edited (or imported from a HAR) beyond latin-1 is written in UTF-8, as
    serve writes one, not a UnicodeEncodeError in the replay."""
    path = tmp_path / "realtime.json"
    live, url = _record(path)
    doc = json.loads(path.read_text())
    doc["interactions"][0]["response"]["headers"]["x-note"] = "sunny \u2600"
    path.write_text(json.dumps(doc))
    with ssemock.use_cassette(path, record_mode="none", allowed_hosts=[]):
        assert asyncio.run(_session(url)) == live


def test_a_tls_failure_while_recording_is_the_clients_own_error_first(tmp_path: Path) -> None:
    """A certificate the client does not trust, while recording: the user's traceback shows the
    client's own ``SSLCertVerificationError`` and where it was raised, with none of ssemock's
    control flow (``RecordSession``) above it (issue 43 item 9); nothing is recorded."""
    import trustme  # (here: tests/stacks/ws_matrix.py imports this module where trustme is not)
    from websockets.asyncio.client import connect as aconnect
    from websockets.sync.client import connect

    server_side = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    trustme.CA().issue_cert("127.0.0.1").configure_cert(server_side)  # a CA no client trusts

    async def main() -> list[BaseException]:
        async def refuse(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            writer.close()

        server = await asyncio.start_server(refuse, "127.0.0.1", 0, ssl=server_side)
        url = f"wss://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1/realtime"
        failures = []
        async with server:
            with ssemock.use_cassette(tmp_path / "realtime.json", record_mode="all"):
                with pytest.raises(ssl.SSLCertVerificationError) as failed:
                    async with aconnect(url):
                        pass
                failures.append(failed.value)
                # the sync client, in a thread: its TLS handshake runs when its WebSocket
                # handshake is sent, which websockets reports as a closed connection caused by it
                with pytest.raises(Exception) as failed:
                    await asyncio.to_thread(connect, url)
                assert isinstance(failed.value.__cause__, ssl.SSLCertVerificationError)
                failures.append(failed.value)
        return failures

    for failure in asyncio.run(main()):
        shown = "".join(traceback.format_exception(failure))
        assert "RecordSession" not in shown and "PassThrough" not in shown, shown
        assert "During handling of the above exception" not in shown, shown
    assert not (tmp_path / "realtime.json").exists()


def test_the_clients_own_warning_points_at_its_caller_not_at_ssemock() -> None:
    """websockets 17.1+ warns a ``connect()`` used without ``with`` (as the openai SDK uses it) at
    its first call: through ssemock's ``recv`` it still names the line that called ``recv``."""
    from websockets.sync.client import connect

    url = "wss://api.openai.com/v1/realtime?model=gpt-realtime"
    created = '{"type": "session.created"}'
    session = WebSocket([Message("recv", 0.0, "text", created)], close=Close(1000, by="server", clean=True))
    with ssemock.replay(ssemock.Cassette([Interaction(Request("GET", url), Response(101), session)])):
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            ws = connect(url)
            assert ws.recv() == created
        ws.close()
    assert {w.filename for w in seen if issubclass(w.category, DeprecationWarning)} <= {__file__}
