"""A server-push stream recorded under a chunking that cuts each event on its own is planned one
new event at a time (ssemock.plan.push_recording): the chunking is given each recorded byte about once, not
the whole recording again at every event, and the client still gets what the replay serves."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import StreamingResponse
from starlette.routing import Route

import ssemock
from ssemock.chunking import Chunking, mid_line
from ssemock.commands.loopback import running

EVENTS = 300


async def _push(request: Request) -> StreamingResponse:
    async def body() -> AsyncIterator[bytes]:
        for n in range(EVENTS):
            yield b'data: {"n": %d, "text": "h\xc3\xa9llo"}\n\n' % n
            await asyncio.sleep(0)  # one write per event

    return StreamingResponse(body(), media_type="text/event-stream")


def test_a_push_stream_is_cut_one_new_event_at_a_time(tmp_path: Path) -> None:
    given: list[int] = []

    def split(body: bytes, recorded: Sequence[int]) -> list[int]:
        given.append(len(body))
        return mid_line.split(body, recorded)

    counting = Chunking("counting_mid_line", split, by_event=True)
    cassette = tmp_path / "push.json"
    with running(Starlette(routes=[Route("/push", _push)])) as base:
        url = f"{base}/push"
        with ssemock.use_cassette(cassette, record_mode="once", chunking=counting):
            with httpx.stream("GET", url, timeout=30) as response:
                recorded = list(response.iter_raw())
        body = b"".join(recorded)
        assert body.count(b"\n\n") == EVENTS
        # each byte cut about once (before: the whole recording so far at every event, ~EVENTS/2 times)
        assert sum(given) <= 2 * len(body), (sum(given), len(body))
        planned = len(given)
        with ssemock.use_cassette(cassette, record_mode="none", chunking=counting):
            with httpx.stream("GET", url, timeout=30) as response:
                replayed = list(response.iter_raw())
    assert len(given) == planned + 1  # the replay cut the whole body once
    assert body == b"".join(replayed)
    # the client's cuts: the replay's, or an event boundary where the next event had not arrived
    ends = {sum(map(len, recorded[: i + 1])) for i in range(len(recorded))}
    replay_ends = {sum(map(len, replayed[: i + 1])) for i in range(len(replayed))}
    event_ends = {i + 2 for i in range(len(body)) if body.startswith(b"\n\n", i)}
    assert ends <= replay_ends | event_ends
    assert len(replay_ends - ends) < len(replay_ends) // 10  # nearly every replay cut is the client's too
