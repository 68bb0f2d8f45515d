"""A GPT-Live session that spans connections through openai's SDK (issue 44 item 2): the REST
create (``client.live.create``), the primary socket, its sideband and a fork, and the REST hangup
(``client.live.sessions.hangup``), recorded against loopback stand-ins into one cassette as one
group, then replayed offline with the stand-ins stopped. The stand-in's sideband speaks only once
the primary was asked to close; the replay keeps that order across the connections (an order log
of what the client got, and the replay's own log of what it released), never by time."""

from __future__ import annotations

import asyncio
import base64
import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import openai
import pytest
from ws_servers import gpt_live_joined, gpt_live_rest, running

import ssemock

KEY = "sk-test-live44group0123456789ab"
PCM = bytes(range(256)) * 4


async def _session(rest: str, base: str) -> list[tuple[str, str]]:
    """The client: REST create, then the primary and its sideband at once, then a fork, then the
    REST hangup; the order log of what each connection got."""
    log: list[tuple[str, str]] = []
    client = openai.AsyncOpenAI(api_key=KEY, base_url=rest, websocket_base_url=base, max_retries=0)
    created = await client.live.create(
        session={"model": "gpt-live-1"}, transport={"type": "webrtc", "sdp": "v=0\r\n"}
    )
    sid = created.session.id
    log.append(("rest", f"created {sid}"))

    async def primary() -> None:
        async with client.live.connect() as conn:
            await conn.send({"type": "session.start", "session": {"model": "gpt-live-1"}})
            log.append(("primary", (await conn.recv()).type))
            await conn.send({"type": "session.input_audio.append", "audio": base64.b64encode(PCM).decode()})
            async for event in conn:
                log.append(("primary", event.type))
                if event.type == "session.usage.updated":
                    await conn.send({"type": "session.close"})
                if event.type == "session.closed":
                    break

    async def sideband() -> None:
        async with client.live.sideband.connect(session_id=sid) as conn:
            log.append(("sideband", (await conn.recv()).type))
            await conn.send({"type": "session.instructions.append", "content": "Mention the umbrella."})
            log.append(("sideband", (await conn.recv()).type))
            await conn.send({"type": "session.close"})
            log.append(("sideband", (await conn.recv()).type))

    await asyncio.gather(primary(), sideband())
    async with client.live.forks.connect(session_id=sid) as conn:
        await conn.send({"type": "session.start", "session": {}})
        started = await conn.recv()
        log.append(("fork", f"{started.type} {started.session.id}"))  # type: ignore[union-attr]
        await conn.send({"type": "session.close"})
        log.append(("fork", (await conn.recv()).type))
    await client.live.sessions.hangup(sid)
    log.append(("rest", "hangup"))
    return log


def _session_sync(rest: str, base: str) -> list[tuple[str, str]]:
    """`_session` through the sync client: the sideband in a thread of its own."""
    log: list[tuple[str, str]] = []
    client = openai.OpenAI(api_key=KEY, base_url=rest, websocket_base_url=base, max_retries=0)
    created = client.live.create(
        session={"model": "gpt-live-1"}, transport={"type": "webrtc", "sdp": "v=0\r\n"}
    )
    sid = created.session.id
    log.append(("rest", f"created {sid}"))
    failed: list[BaseException] = []

    def sideband() -> None:
        try:
            with client.live.sideband.connect(session_id=sid) as conn:
                log.append(("sideband", conn.recv().type))
                conn.send({"type": "session.instructions.append", "content": "Mention the umbrella."})
                log.append(("sideband", conn.recv().type))
                conn.send({"type": "session.close"})
                log.append(("sideband", conn.recv().type))
        except BaseException as exc:  # told by the main thread
            failed.append(exc)

    with client.live.connect() as conn:
        conn.send({"type": "session.start", "session": {"model": "gpt-live-1"}})
        log.append(("primary", conn.recv().type))
        other = threading.Thread(target=sideband)
        other.start()
        conn.send({"type": "session.input_audio.append", "audio": base64.b64encode(PCM).decode()})
        for event in conn:
            log.append(("primary", event.type))
            if event.type == "session.usage.updated":
                conn.send({"type": "session.close"})
            if event.type == "session.closed":
                break
    other.join(10)
    assert not failed and not other.is_alive(), failed
    with client.live.forks.connect(session_id=sid) as conn:
        conn.send({"type": "session.start", "session": {}})
        started = conn.recv()
        log.append(("fork", f"{started.type} {started.session.id}"))  # type: ignore[union-attr]
        conn.send({"type": "session.close"})
        log.append(("fork", conn.recv().type))
    client.live.sessions.hangup(sid)
    log.append(("rest", "hangup"))
    return log


CLIENTS: dict[str, Callable[[str, str], list[tuple[str, str]]]] = {
    "async": lambda rest, base: asyncio.run(_session(rest, base)),
    "sync": _session_sync,
}


def _lane(log: list[tuple[str, str]], who: str) -> list[str]:
    return [what for name, what in log if name == who]


def _never_earlier(group: Any, interactions: list[ssemock.Interaction]) -> None:
    """Every server message the replay released came after every part recorded before it on the
    other connections of its group was released or happened (the client's own messages,
    handshakes and REST calls happen when the client makes them: the replay answers at once)."""
    at = {part: k for k, part in enumerate(group.log)}
    for (i, part), k in at.items():
        ws = interactions[i].websocket
        if part == 0 or ws is None or ws.messages[part - 1].direction != "recv":
            continue
        seq = group.orders[i][part]
        for j, order in group.orders.items():
            for q, other in enumerate(order):
                if j != i and other < seq:
                    assert at[j, q] < k, (f"#{i} part {part}", f"#{j} part {q}")


@pytest.mark.parametrize("client", list(CLIENTS))
def test_a_live_session_spanning_connections_records_as_one_group_and_replays_in_its_order(
    tmp_path: Path, client: str
) -> None:
    run = CLIENTS[client]
    path = tmp_path / "joined.json"
    with gpt_live_rest() as rest, running(gpt_live_joined()) as server:
        base = server.url("/v1")
        with ssemock.use_cassette(path, record_mode="once"):
            live = run(rest, base)
    recorded = ssemock.Cassette.load(path).interactions
    kinds = [(x.request.method, x.request.url.rsplit("/v1", 1)[1]) for x in recorded]
    assert kinds == [
        ("POST", "/live/sessions"),
        ("GET", "/live/sessions"),
        ("GET", "/live/sessions/sess_L1/attach"),
        ("GET", "/live/sessions/sess_L1/fork"),
        ("POST", "/live/sessions/sess_L1/hangup"),
    ]
    assert {x.group.id for x in recorded if x.group is not None} == {"sess_L1"}
    assert all(x.group is not None for x in recorded)
    everything = sorted(n for x in recorded for n in x.group.order)  # type: ignore[union-attr]
    assert everything == list(range(len(everything)))  # one timeline, every part on it once
    assert KEY not in path.read_text()
    said = _lane(live, "primary")
    assert live.index(("sideband", "session.updated")) > live.index(("primary", "session.usage.updated"))

    with ssemock.use_cassette(path, record_mode="none", allowed_hosts=[]) as player:
        again = run(rest, base)
        groups = {id(g): g for i in range(len(recorded)) if (g := player.session_group(i)) is not None}
    assert [_lane(again, who) for who in ("rest", "primary", "sideband", "fork")] == [
        _lane(live, who) for who in ("rest", "primary", "sideband", "fork")
    ]
    assert said[-1] == "session.closed" and "session.output_transcript.delta" in said
    # the sideband's first event was recorded after the primary's close: released after it
    assert again.index(("sideband", "session.updated")) > again.index(("primary", "session.usage.updated"))
    (group,) = groups.values()
    assert len(group.log) == len(everything)  # every part of every connection was released or seen
    _never_earlier(group, recorded)


@pytest.fixture(scope="module")
def joined(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str, list[tuple[str, str]]]:
    """The async client's session recorded once (the stand-ins stopped after): the cassette,
    the REST and WebSocket base URLs, the order log."""
    path = tmp_path_factory.mktemp("joined") / "joined.json"
    with gpt_live_rest() as rest, running(gpt_live_joined()) as server:
        base = server.url("/v1")
        with ssemock.use_cassette(path, record_mode="once"):
            live = asyncio.run(_session(rest, base))
    return path, rest, base, live


def test_a_cassette_without_groups_replays_as_before(
    tmp_path: Path, joined: tuple[Path, str, str, list[tuple[str, str]]]
) -> None:
    """The same recording with its groups deleted (a cassette written before them) loads and
    replays, each connection on its own."""
    recorded, rest, base, live = joined
    doc = json.loads(recorded.read_text())
    for item in doc["interactions"]:
        del item["group"]
    path = tmp_path / "plain.json"
    path.write_text(json.dumps(doc))
    with ssemock.use_cassette(path, record_mode="none", allowed_hosts=[]) as player:
        again = asyncio.run(_session(rest, base))
        assert player.session_group(1) is None
    assert sorted(again) == sorted(live)


def test_a_fault_aimed_at_one_connection_of_the_group_breaks_that_one_alone(
    joined: tuple[Path, str, str, list[tuple[str, str]]],
) -> None:
    """``on=`` aims a WebSocket fault at the fork (its URL): the fork gets GPT-Live's error event
    where the recording had its close; the primary and the sideband replay as recorded."""
    path, rest, base, live = joined
    with ssemock.use_cassette(
        path, record_mode="none", allowed_hosts=[], faults="error_event:after_message=1,on=*/fork"
    ):
        again = asyncio.run(_session(rest, base))
    assert _lane(again, "fork") == ["session.started sess_F1", "error"]
    for who in ("rest", "primary", "sideband"):
        assert _lane(again, who) == _lane(live, who)


def test_a_websocket_fault_aimed_at_a_rest_call_is_refused_naming_it(
    joined: tuple[Path, str, str, list[tuple[str, str]]],
) -> None:
    path, rest, base, _ = joined
    with pytest.raises(ValueError, match=r"interaction #0 \(POST .*/live/sessions\).* no WebSocket session"):
        with ssemock.use_cassette(
            path, record_mode="none", allowed_hosts=[], faults="drop:after_message=1,on=POST */live/sessions"
        ):
            asyncio.run(_session(rest, base))


MARKED = """
import openai
import pytest

REST, BASE = {rest!r}, {base!r}


@pytest.mark.ssemock
def test_live_session():
    client = openai.OpenAI(api_key="sk-test-live44marker0123456789", base_url=REST, websocket_base_url=BASE, max_retries=0)
    sid = client.live.create(session={{"model": "gpt-live-1"}}, transport={{"type": "webrtc", "sdp": "v=0"}}).session.id
    with client.live.connect() as conn:
        conn.send({{"type": "session.start", "session": {{"model": "gpt-live-1"}}}})
        assert conn.recv().type == "session.started"
        conn.send({{"type": "session.close"}})
        assert conn.recv().type == "session.closed"
    with client.live.sideband.connect(session_id=sid) as conn:
        assert conn.recv().type == "session.updated"
        conn.send({{"type": "session.close"}})
        assert conn.recv().type == "session.closed"
    client.live.sessions.hangup(sid)
"""


def test_the_marker_records_and_replays_the_rest_calls_and_sockets_of_one_session(
    pytester: pytest.Pytester,
) -> None:
    """Under the marker: recorded once against the stand-ins (REST over openai's httpx2 stack,
    the sockets over websockets; in a pytest of its own), then replayed offline with them
    stopped, as one group."""
    with gpt_live_rest() as rest, running(gpt_live_joined()) as server:
        pytester.makepyfile(test_marked=MARKED.format(rest=rest, base=server.url("/v1")))
        # the environment's plugins this run does not use, off: ~0.3 CPU-s of the subprocess's start
        # and end (hypothesis's imports hypothesis whole at the session's end)
        off = ("-p", "no:hypothesispytest", "-p", "no:xdist", "-p", "no:timeout")
        recorded = pytester.runpytest_subprocess("-p", "no:randomly", *off, "--ssemock-record-mode=once")
        recorded.assert_outcomes(passed=1)
    (path,) = (pytester.path / "cassettes").rglob("*.json")
    interactions = ssemock.Cassette.load(path).interactions
    assert [x.request.method for x in interactions] == ["POST", "GET", "GET", "POST"]
    assert {x.group.id if x.group else None for x in interactions} == {"sess_L1"}
    replayed = pytester.runpytest_inprocess("-p", "no:randomly")
    replayed.assert_outcomes(passed=1)
