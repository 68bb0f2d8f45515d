"""A server-push stream held until the requests it answers are made (ssemock.plan.push_replay), through every
client stack: a sync reader released by POSTs from another thread, an async reader by POSTs from
the same event loop; ids counted from when the stream opened; a clear, bounded failure when the
request never comes; chunkings, transforms and faults still applied."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import Any

import aiohttp
import httpx
import httpx2
import orjson
import pytest
import requests

import ssemock
import ssemock.plan.push_replay
from ssemock.protocols import mcp

ORIGIN = "http://127.0.0.1:8000"
STREAM = f"{ORIGIN}/sse"
POST = f"{ORIGIN}/messages/?session_id=REDACTED"
EVENTS = [
    b"event: endpoint\ndata: /messages/?session_id=REDACTED\n\n",
    mcp.message({"id": 1, "result": {"protocolVersion": "2025-06-18"}}),
    mcp.message({"method": "notifications/tools/list_changed"}),
    mcp.message({"method": "notifications/progress", "params": {"progressToken": 2, "progress": 1}}),
    mcp.message({"id": 2, "result": {"content": []}}),
]


def _cassette(events: list[bytes] = EVENTS, posts: int = 2) -> ssemock.Cassette:
    """The legacy MCP transport's shape: a GET stream written event by event 10 ms apart, and
    POSTs answered 202 (their answers come on the stream)."""
    cassette = ssemock.Cassette()
    cassette.add(
        "GET",
        STREAM,
        events,
        times=[0.01 * (k + 1) for k in range(len(events))],
        headers={"content-type": "text/event-stream"},
    )
    for k in range(posts):
        cassette.add(
            "POST",
            POST,
            [b"Accepted"],
            status=202,
            headers={"content-type": "text/plain"},
            request_json={"jsonrpc": "2.0", "id": k + 1, "method": "tools/call"},
        )
    return cassette


def _post_body(ident: int) -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", "id": ident, "method": "tools/call"})


def _label(event: ssemock.sse.ServerSentEvent) -> str:
    """What the reader logs for an event: the id it answers, else its kind."""
    if event.event == "endpoint":
        return "endpoint"
    message = orjson.loads(event.data)
    if "id" in message:
        return f"answer {message['id']}"
    return message["method"].rsplit("/", 1)[-1]


# The stacks: open the stream (chunks as they arrive) and POST, each in its library's own way.


def _httpx_like(lib: Any) -> tuple[Callable[..., Iterator[bytes]], Callable[[int], None]]:
    def read(timeout: float | None) -> Iterator[bytes]:
        with (
            lib.Client(timeout=lib.Timeout(5.0, read=timeout)) as client,
            client.stream("GET", STREAM) as response,
        ):
            yield from response.iter_bytes()

    def post(ident: int) -> None:
        with lib.Client() as client:
            assert client.post(POST, content=_post_body(ident)).status_code == 202

    return read, post


def _requests() -> tuple[Callable[..., Iterator[bytes]], Callable[[int], None]]:
    def read(timeout: float | None) -> Iterator[bytes]:
        with requests.get(STREAM, stream=True, timeout=(5.0, timeout)) as response:
            yield from response.iter_content(chunk_size=None)

    def post(ident: int) -> None:
        assert requests.post(POST, data=_post_body(ident), timeout=5).status_code == 202

    return read, post


SYNC = {"httpx": lambda: _httpx_like(httpx), "httpx2": lambda: _httpx_like(httpx2), "requests": _requests}


def _async_httpx_like(lib: Any) -> tuple[Callable[..., AsyncIterator[bytes]], Callable[[int], Any]]:
    async def read(timeout: float | None) -> AsyncIterator[bytes]:
        async with (
            lib.AsyncClient(timeout=lib.Timeout(5.0, read=timeout)) as client,
            client.stream("GET", STREAM) as response,
        ):
            async for chunk in response.aiter_bytes():
                yield chunk

    async def post(ident: int) -> None:
        async with lib.AsyncClient() as client:
            assert (await client.post(POST, content=_post_body(ident))).status_code == 202

    return read, post


def _aiohttp() -> tuple[Callable[..., AsyncIterator[bytes]], Callable[[int], Any]]:
    async def read(timeout: float | None) -> AsyncIterator[bytes]:
        async with (
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(sock_read=timeout)) as session,
            session.get(STREAM) as response,
        ):
            async for chunk in response.content.iter_any():
                yield chunk

    async def post(ident: int) -> None:
        async with aiohttp.ClientSession() as session, session.post(POST, data=_post_body(ident)) as response:
            assert response.status == 202

    return read, post


ASYNC = {
    "httpx": lambda: _async_httpx_like(httpx),
    "httpx2": lambda: _async_httpx_like(httpx2),
    "aiohttp": _aiohttp,
}
HELD_ORDER = ["endpoint", "post 1", "answer 1", "list_changed", "post 2", "progress", "answer 2"]
BEFORE_POST = {1: "endpoint", 2: "list_changed"}
"""The last event each post follows: the poster waits for it (on a loaded machine a reader may
still be working on the previous answer when a fixed pause ends)."""


@pytest.mark.parametrize("stack", SYNC)
@pytest.mark.parametrize(
    ("chunking", "timing"),
    [("as_recorded", "instant"), ("bytewise", "instant"), ("coalesced", "instant"), ("mid_utf8", "recorded")],
)
def test_a_sync_reader_gets_each_answer_after_its_post_from_another_thread(
    stack: str, chunking: str, timing: str
) -> None:
    read, post = SYNC[stack]()
    log: list[str] = []
    seen = {label: threading.Event() for label in HELD_ORDER}

    def poster() -> None:
        for ident in (1, 2):
            seen[BEFORE_POST[ident]].wait(60)  # the reader has what precedes the post
            time.sleep(0.02)  # without the hold, the stream would run ahead meanwhile
            log.append(f"post {ident}")
            post(ident)

    with ssemock.replay(_cassette(), chunking=chunking, timing=timing) as player:
        thread = threading.Thread(target=poster)
        thread.start()
        decoder = ssemock.sse.Decoder()
        for chunk in read(60.0):
            for event in decoder.feed(chunk):
                log.append(_label(event))
                seen[log[-1]].set()
        thread.join(60)
    assert log == HELD_ORDER
    assert player.unplayed() == [] and not player.unconsumed()


@pytest.mark.parametrize("stack", ASYNC)
@pytest.mark.parametrize("transform", ["none", "crlf", "keepalive"])
def test_an_async_reader_gets_each_answer_after_its_post_from_the_same_loop(
    stack: str, transform: str
) -> None:
    read, post = ASYNC[stack]()
    log: list[str] = []

    async def session() -> None:
        seen = {label: asyncio.Event() for label in HELD_ORDER}

        async def poster() -> None:
            for ident in (1, 2):
                await asyncio.wait_for(seen[BEFORE_POST[ident]].wait(), 60)
                await asyncio.sleep(0.02)  # without the hold, the stream would run ahead meanwhile
                log.append(f"post {ident}")
                await post(ident)

        task = asyncio.create_task(poster())
        decoder = ssemock.sse.Decoder()
        async for chunk in read(60.0):
            for event in decoder.feed(chunk):
                log.append(_label(event))
                seen[log[-1]].set()
        await task

    with ssemock.replay(
        _cassette(), chunking="mid_line", transform=None if transform == "none" else transform
    ):
        asyncio.run(session())
    assert log == HELD_ORDER


def test_only_requests_made_since_the_stream_opened_count() -> None:
    """A second session in the same cassette asks the same ids again: an id asked before the
    stream opened (by the first session) does not release it."""
    with ssemock.replay(_cassette()) as player:
        with httpx.Client() as client:
            assert client.post(POST, content=_post_body(1)).status_code == 202
            with (
                client.stream("GET", STREAM, timeout=httpx.Timeout(5.0, read=0.1)) as response,
                pytest.raises(
                    httpx.ReadTimeout,
                    match=r"the in-memory cassette, interaction #0 \(GET "
                    r"http://127.0.0.1:8000/sse\): the recorded stream "
                    r"answers the request with id 1 next",
                ),
            ):
                for _ in response.iter_bytes():
                    pass
    (_, play) = player.plays
    assert play.stream is not None and play.stream.failed and play.stream.delivered == len(EVENTS[0])


def test_with_no_read_timeout_the_wait_is_bounded_by_hold_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ssemock.plan.push_replay, "HOLD_LIMIT", 0.1)
    with (
        ssemock.replay(_cassette()),
        httpx.Client(timeout=None) as client,
        client.stream("GET", STREAM) as response,
    ):
        with pytest.raises(httpx.ReadTimeout, match=r"none was made within 0.1 s since the stream opened"):
            for _ in response.iter_bytes():
                pass


@pytest.mark.parametrize("sync", [True, False], ids=["sync", "async"])
def test_a_fault_still_applies_to_a_held_stream(sync: bool) -> None:
    """disconnect after the second event: the answer to 1 waits for its POST, then the stream drops."""
    faults = [ssemock.faults.sequence(ssemock.faults.disconnect(after_event=2))]  # the GET only: served first
    log: list[str] = []
    with ssemock.replay(_cassette(posts=1), faults=faults) as player:
        if sync:
            read, post = SYNC["httpx"]()
            decoder = ssemock.sse.Decoder()
            thread = threading.Thread(target=post, args=(1,))
            with pytest.raises(httpx.RemoteProtocolError):
                for chunk in read(5.0):
                    for event in decoder.feed(chunk):
                        log.append(_label(event))
                        if event.event == "endpoint":
                            thread.start()
            thread.join(5)
        else:
            aread, apost = ASYNC["httpx"]()

            async def session() -> None:
                decoder = ssemock.sse.Decoder()
                tasks = []
                async for chunk in aread(5.0):
                    for event in decoder.feed(chunk):
                        log.append(_label(event))
                        if event.event == "endpoint":
                            tasks.append(asyncio.create_task(apost(1)))
                await asyncio.gather(*tasks)

            with pytest.raises(httpx.RemoteProtocolError):
                asyncio.run(session())
    assert log == ["endpoint", "answer 1"]
    assert player.plays[0].body == b"".join(EVENTS[:2])


def test_a_stream_that_answers_no_request_is_not_held() -> None:
    """An SSE GET stream whose JSON has ids but is no JSON-RPC (an OpenAI-style chunk) is served
    at once, on the fast path; so is an MCP stream of notifications only."""
    chunks = [b'data: {"id":"chatcmpl-1","choices":[]}\n\n', b"data: [DONE]\n\n"]
    for events in (chunks, [EVENTS[0], EVENTS[2]]):
        cassette = ssemock.Cassette()
        cassette.add("GET", STREAM, events, headers={"content-type": "text/event-stream"})
        with ssemock.replay(cassette, chunking="coalesced") as player:
            assert httpx.get(STREAM).content == b"".join(events)
        (play,) = player.plays
        assert play.stream is not None and play.stream.instant and len(play.ends) == 1


@pytest.mark.parametrize("correlated", [True, False])
def test_only_a_correlated_requests_stream_is_searched_for_announcements(
    monkeypatch: pytest.MonkeyPatch, correlated: bool
) -> None:
    """A listen stream's change notifications (`protocols.follows`, which reads the whole body)
    are looked for only in the answer to a request with JSON-RPC ids: a plain POST's stream,
    even one whose text names a subscription id, is served at once without that search (a 6.7 MB
    replay searched its body each time)."""
    searched: list[bytes] = []
    follows = ssemock.protocols.follows
    monkeypatch.setattr(ssemock.protocols, "follows", lambda body: searched.append(body) or follows(body))
    meta = {"_meta": {"io.modelcontextprotocol/subscriptionId": "s1"}}
    events = [
        mcp.message({"id": 1, "result": {**meta}}),
        mcp.message({"method": "notifications/tools/list_changed", "params": {**meta}}),
    ]
    cassette = ssemock.Cassette()
    request = (
        {"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen"} if correlated else {"stream": True}
    )
    cassette.add("POST", POST, events, headers={"content-type": "text/event-stream"}, request_json=request)
    with ssemock.replay(cassette) as player:
        assert httpx.post(POST, json=request).content == b"".join(events)
    assert searched == ([b"".join(events)] if correlated else [])
    (play,) = player.plays
    assert play.stream is not None and play.stream.instant


@pytest.mark.parametrize("chunking", ["coalesced", "fixed:50", "random:7"])
def test_a_chunk_never_spans_a_wait_and_the_bytes_are_the_recorded_ones(chunking: str) -> None:
    """A boundary is added where each held message starts, the chunking's own kept elsewhere."""
    body = b"".join(EVENTS)
    starts = [offset for offset, _ in mcp.holds(body)]
    assert starts == [len(EVENTS[0]), sum(map(len, EVENTS[:3]))]  # the answer to 1; the progress of 2
    assert [sorted(ids) for _, ids in mcp.holds(body)] == [[1], [2]]  # (the answer to 2 follows it freely)
    cassette = _cassette()
    unheld = ssemock.chunking.get(chunking).ends(body, cassette.interactions[0].response.ends)
    with ssemock.replay(cassette, chunking=chunking) as player:

        def poster() -> None:
            for ident in (1, 2):
                httpx.post(POST, content=_post_body(ident))

        thread = threading.Thread(target=poster)
        with httpx.stream("GET", STREAM) as response:
            thread.start()
            got = list(response.iter_raw())
        thread.join(5)
    (play, *_) = player.plays
    assert b"".join(got) == body == play.body
    assert set(play.ends) == set(unheld) | set(starts)
    assert [len(c) for c in got] == [b - a for a, b in zip([0, *play.ends], play.ends)]


def test_a_stream_still_held_when_the_player_stops_gives_up_at_once() -> None:
    """A reader in another thread, held when the test's player stops, fails then (its request can
    no longer come) instead of waiting out HOLD_LIMIT."""
    errors: list[Exception] = []
    opened = threading.Event()

    def reader() -> None:
        try:
            with httpx.Client(timeout=None) as client, client.stream("GET", STREAM) as response:
                for _ in response.iter_bytes():
                    opened.set()
        except httpx.ReadTimeout as exc:
            errors.append(exc)

    player = ssemock.replay(_cassette())
    player.start()
    thread = threading.Thread(target=reader)
    thread.start()
    assert opened.wait(5)
    player.stop()
    thread.join(5)
    assert not thread.is_alive()
    (error,) = errors
    assert (
        "answers the request with id 1 next, and replay holds it until that request is made; the player "
        "stopped before it was made" in str(error)
    )


def _stream_only(
    events: list[bytes], before: Sequence[int] = (), after: Sequence[int] = ()
) -> ssemock.Cassette:
    """A GET stream with POSTs recorded before it (ids ``before``) and after it (ids ``after``)."""
    cassette = ssemock.Cassette()
    for ident in before:
        cassette.add(
            "POST",
            POST,
            [b"Accepted"],
            status=202,
            request_json={"jsonrpc": "2.0", "id": ident, "method": "tools/call"},
        )
    cassette.add("GET", STREAM, events, headers={"content-type": "text/event-stream"})
    for ident in after:
        cassette.add(
            "POST",
            POST,
            [b"Accepted"],
            status=202,
            request_json={"jsonrpc": "2.0", "id": ident, "method": "tools/call"},
        )
    return cassette


LEGACY = [
    b"event: endpoint\ndata: /messages/\n\n",
    b'event: message\ndata: {"jsonrpc":"2.0","id":1,"result":{}}\n\n',
]


@pytest.mark.parametrize("before", [[], [1]], ids=["no-request", "request-before-the-stream"])
def test_a_message_answering_no_request_recorded_after_the_stream_plays_at_once(before: list[int]) -> None:
    """A hand-made legacy-MCP-like stream read on its own: no recorded request after the stream
    carries id 1, so none can ever be matched: the message is served straight away (the stream is
    on the fast path: nothing waits), not held until the read timeout."""
    with (
        ssemock.replay(_stream_only(LEGACY, before=before), allow_playback_repeats=True) as player,
        httpx.Client(timeout=httpx.Timeout(5.0, read=0.5)) as client,
    ):
        with client.stream("GET", STREAM) as response:
            got = b"".join(response.iter_bytes())
    assert got == b"".join(LEGACY)
    (play,) = player.plays
    assert play.stream is not None and play.stream.instant


def test_only_messages_answering_recorded_requests_are_held() -> None:
    """Ids 1 and 2 answered on the stream, only a POST with id 2 recorded after it: the answer to
    1 plays at once, the answer to 2 waits for its POST; the recorded order is kept."""
    events = [
        LEGACY[0],
        mcp.message({"id": 1, "result": {}}),
        mcp.message({"method": "notifications/x"}),
        mcp.message({"id": 2, "result": {}}),
    ]
    log: list[str] = []
    with (
        ssemock.replay(_stream_only(events, after=[2])),
        httpx.Client(timeout=httpx.Timeout(5.0, read=5.0)) as client,
    ):
        decoder = ssemock.sse.Decoder()
        with client.stream("GET", STREAM) as response:
            for chunk in response.iter_bytes():
                for event in decoder.feed(chunk):
                    log.append(_label(event))
                    if log[-1] == "x":
                        log.append("post 2")
                        assert client.post(POST, content=_post_body(2)).status_code == 202
    assert log == ["endpoint", "answer 1", "x", "post 2", "answer 2"]
    with (
        ssemock.replay(_stream_only(events, after=[2])),
        httpx.Client(timeout=httpx.Timeout(5.0, read=0.2)) as client,
        client.stream("GET", STREAM) as response,
    ):
        with pytest.raises(httpx.ReadTimeout, match="answers the request with id 2 next"):
            for _ in response.iter_bytes():
                pass
