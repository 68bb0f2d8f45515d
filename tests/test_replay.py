"""Replay behaviour: single-pass lazy streams, ordering, repeats, matching, timing, both stacks."""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

import anthropic
import anyio
import httpcore
import httpx
import httpx2
import openai
import pytest
from conftest import FakeClock

import ssemock

URL = "https://api.example.test/v1/chat/completions"


def three(times: list[float] | None = None) -> ssemock.Cassette:
    c = ssemock.Cassette()
    c.add("POST", URL, [b"data: 1\n\n", b"data: 2\n\n", b"data: 3\n\n"], times=times, request_json={"n": 1})
    c.add("POST", URL, [b"data: second\n\n"], request_json={"n": 1})
    return c


@pytest.mark.parametrize("lib", [httpx, httpx2], ids=["httpx", "httpx2"])
def test_stream_is_single_pass_and_lazy(lib: object) -> None:
    with ssemock.replay(three()) as player:
        with lib.Client() as client:  # type: ignore[attr-defined]
            with client.stream("POST", URL, json={"n": 1}) as r:
                stream = player.plays[0].stream
                assert not stream.opened  # nothing read before the client reads
                it = r.iter_raw()
                assert next(it) == b"data: 1\n\n"
                assert not stream.consumed
                assert list(it) == [b"data: 2\n\n", b"data: 3\n\n"]
    assert list(stream) == []  # a second pass yields nothing, like a socket
    assert stream.consumed


def test_async_iteration_both_stacks() -> None:
    async def run(lib: object) -> list[bytes]:
        async with lib.AsyncClient() as client:  # type: ignore[attr-defined]
            async with client.stream("POST", URL, json={"n": 1}) as r:
                return [c async for c in r.aiter_raw()]

    for lib in (httpx, httpx2):
        with ssemock.replay(three(), chunking="bytewise"):
            got = asyncio.run(run(lib))
        assert b"".join(got) == b"data: 1\n\ndata: 2\n\ndata: 3\n\n" and len(got) == 27


@pytest.mark.parametrize("accelerated", [True, False], ids=["accelerator", "pure"])
@pytest.mark.parametrize("traced", [False, True], ids=["untraced", "traced"])
@pytest.mark.parametrize("lib", [httpx, httpx2], ids=["httpx", "httpx2"])
def test_the_async_fast_path_hands_out_and_counts_each_chunk(
    lib: object, accelerated: bool, traced: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``async for`` over a stream with nothing to wait for: the accelerator's async iterator
    (or, without it, an async generator) hands out the chunks lazily, one at a time, and the
    stream counts what it handed out, as the sync path does; also under a trace function (a
    debugger, coverage), where the interpreter steps it through ``__next__``."""
    from ssemock.plan import serving

    if not accelerated:
        monkeypatch.setattr(serving, "_c_ready", None)

    async def run() -> tuple[list[bytes], list[int]]:
        got, handed = [], []
        async with lib.AsyncClient() as client:  # type: ignore[attr-defined]
            async with client.stream("POST", URL, json={"n": 1}) as r:
                stream = player.plays[-1].stream
                assert not stream.opened
                async for chunk in r.aiter_raw():
                    got.append(chunk)
                    handed.append(stream.handed)
                    if len(got) == 11:
                        break
        assert stream.opened and not stream.consumed
        return got, handed

    before = sys.gettrace()  # (coverage's, if it runs)
    with ssemock.replay(three(), chunking="fixed:2") as player:
        if traced:
            sys.settrace(lambda *args: None)
        try:
            got, handed = asyncio.run(run())
        finally:
            sys.settrace(before)
    assert got == [b"da", b"ta", b": ", b"1\n", b"\nd", b"at", b"a:", b" 2", b"\n\n", b"da", b"ta"]
    assert handed == list(range(1, 12))


def test_identical_requests_get_interactions_in_order_then_fail() -> None:
    with ssemock.replay(three()) as player, httpx.Client() as client:
        assert client.post(URL, json={"n": 1}).text.startswith("data: 1")
        assert client.post(URL, json={"n": 1}).text == "data: second\n\n"
        with pytest.raises(ssemock.UnmatchedRequestError, match="already played 1 time"):
            client.post(URL, json={"n": 1})
    assert [p.index for p in player.plays] == [0, 1]


def test_allow_playback_repeats() -> None:
    with ssemock.replay(three(), allow_playback_repeats=True) as player, httpx.Client() as client:
        for _ in range(4):
            client.post(URL, json={"n": 1})
    assert [p.index for p in player.plays] == [0, 1, 0, 0]


def test_match_on() -> None:
    with ssemock.replay(three(), match_on=["method", "path"]) as player, httpx.Client() as client:
        client.post("https://other.test/v1/chat/completions?x=1", json={"n": 99})
    assert len(player.plays) == 1
    with pytest.raises(ValueError, match="unknown matcher"):
        ssemock.replay(three(), match_on=["nope"])


def test_interaction_without_recorded_body_matches_any_body() -> None:
    c = ssemock.Cassette()
    c.add("POST", URL, [b"data: x\n\n"])
    with ssemock.replay(c), httpx.Client() as client:
        assert client.post(URL, json={"anything": True}).text == "data: x\n\n"


def test_recorded_timing_is_reproduced_and_scaled(fake_clock: FakeClock) -> None:
    c = three(times=[0.0, 0.15, 0.3])
    for timing, due in (
        ("recorded", [0.0, 0.15, 0.3]),
        ("scaled:0.5", [0.0, 0.075, 0.15]),
        ("instant", [0.0] * 3),
    ):
        arrivals = []
        start = fake_clock.at
        with ssemock.replay(c, timing=timing), httpx.Client() as client:
            with client.stream("POST", URL, json={"n": 1}) as r:
                for _ in r.iter_raw():
                    arrivals.append(fake_clock.at - start)
        assert arrivals == pytest.approx(due), timing  # each chunk handed over when it was due


def test_recorded_gap_longer_than_read_timeout_times_out(fake_clock: FakeClock) -> None:
    c = three(times=[0.0, 5.0, 5.1])
    with ssemock.replay(c, timing="recorded"), httpx.Client(timeout=0.5) as client:
        with pytest.raises(httpx.ReadTimeout), client.stream("POST", URL, json={"n": 1}) as r:
            r.read()
    assert fake_clock.slept == []  # raised at once, no sleeping


@pytest.mark.parametrize("backend", ["asyncio"])
def test_anyio_backend(backend: str) -> None:
    async def main() -> str:
        async with httpx.AsyncClient() as client:
            return (await client.post(URL, json={"n": 1})).text

    with ssemock.replay(three(times=[0.0, 0.01, 0.02]), timing="recorded"):
        assert anyio.run(main, backend=backend).startswith("data: 1")


def test_unmatched_is_not_swallowed_by_sdk_retry_loops(monkeypatch: pytest.MonkeyPatch) -> None:
    """A BaseException: neither SDK wraps it into a connection error and retries with back-off."""
    backoffs: list[float] = []
    monkeypatch.setattr(time, "sleep", backoffs.append)  # the SDKs' sync retry loops sleep here
    with ssemock.replay(ssemock.Cassette()):
        with pytest.raises(ssemock.UnmatchedRequestError):
            anthropic.Anthropic(api_key="sk-ant-test-x", max_retries=3).messages.create(
                model="m", max_tokens=1, messages=[{"role": "user", "content": "hi"}]
            )
        with pytest.raises(ssemock.UnmatchedRequestError):
            openai.OpenAI(api_key="sk-test-x", max_retries=3).chat.completions.create(model="m", messages=[])
    assert backoffs == []  # no retry back-off happened


def test_players_are_independent_and_restore_the_network() -> None:
    c = three()
    with ssemock.replay(c) as outer:
        with httpx.Client() as client:
            client.post(URL, json={"n": 1})
    assert len(outer.plays) == 1
    # after exit nothing is intercepted: the request goes to the real transport (and fails to resolve)
    with httpx.Client() as client, pytest.raises(httpx.ConnectError):
        client.post("http://127.0.0.1:9/", json={"n": 1})


def test_async_context_manager() -> None:
    async def main() -> str:
        async with ssemock.replay(three()):
            async with httpx2.AsyncClient() as client:
                return (await client.post(URL, json={"n": 1})).text

    assert asyncio.run(main()).startswith("data: 1")


# -- per-byte chunkings replay lazily ---------------------------------------------------------

# ~44 KB in 3 recorded chunks: a per-byte plan of the old kind held ~50x it (~2.2 MB), a copy of
# the body or of a recorded chunk 1x or 0.37x; a lazy one holds 2-4 KB whatever the body's size (as
# at 110 and 300 KB before), so 0.25x (11 KB) tells them apart. (Larger, the bytewise tests spent
# their CPU in tracemalloc and per-byte reads proving the same bound, issue 48 item 4.)
BIG = b'data: {"choices": [{"delta": {"content": "h\xc3\xa9llo"}}]}\n\n' * 800


def _big() -> ssemock.Cassette:
    c = ssemock.Cassette()
    c.add(
        "GET",
        URL,
        [BIG[i : i + 16384] for i in range(0, len(BIG), 16384)],
        times=[0.0] * -(-len(BIG) // 16384),
    )
    return c


@pytest.mark.parametrize("chunking", ["bytewise", "fixed:1", "fixed:3"])
@pytest.mark.parametrize("timing", ["instant", "scaled:0"])
def test_per_byte_chunkings_replay_in_memory_bounded_by_the_body(chunking: str, timing: str) -> None:
    """A plan for a body cut byte by byte holds no list per byte (it held ~50x the body: a list
    of ends and a list of chunks), on the fast path and on the timed one."""
    import tracemalloc

    from ssemock.player.replay import ReplayStream, plan_response

    response = _big().interactions[0].response
    strategy, pace = ssemock.chunking.get(chunking), ssemock.timing.get(timing)
    tracemalloc.start()
    try:
        plan = plan_response(response, url=URL, core=httpcore, chunking=strategy, timing=pace)
        stream = ReplayStream(plan, time.monotonic())
        count = size = 0
        for chunk in stream:
            count += 1
            size += len(chunk)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert size == len(BIG) and count == len(plan.chunks) == -(-len(BIG) // strategy.step)  # type: ignore[operator]
    assert stream.consumed and stream.finished
    assert peak < 0.25 * len(BIG), f"{peak / len(BIG):.2f}x the body"


def test_lazy_plans_equal_the_lists_they_stand_for() -> None:
    from ssemock.player.replay import plan_response

    body = b"data: 1\n\ndata: 2\n\n"
    c = ssemock.Cassette()
    c.add("GET", URL, [body[:5], body[5:]], times=[0.0, 0.5])
    for name in ("bytewise", "fixed:4"):
        strategy = ssemock.chunking.get(name)
        plan = plan_response(
            c.interactions[0].response,
            url=URL,
            core=httpcore,
            chunking=strategy,
            timing=ssemock.timing.get("recorded"),
        )
        assert plan.ends == strategy.ends(body) and strategy.ends(body) == plan.ends
        assert plan.chunks == strategy(body) and list(plan.chunks) == strategy(body)
        assert plan.chunks[-1] == strategy(body)[-1] and plan.chunks[1:3] == strategy(body)[1:3]
        assert plan.due is not None
        assert list(plan.due) == [0.0 if e <= 5 else 0.5 for e in strategy.ends(body)]


@pytest.mark.parametrize("lib", [httpx, httpx2], ids=["httpx", "httpx2"])
def test_bytewise_with_a_stall_and_a_fault_through_the_client(lib: object) -> None:
    with ssemock.replay(
        three(), chunking="fixed:2", faults="stall:before_event=1,seconds=0.01;disconnect:after_event=2"
    ) as player:
        got: list[bytes] = []
        with lib.Client() as client, pytest.raises(lib.RemoteProtocolError):  # type: ignore[attr-defined]
            with client.stream("POST", URL, json={"n": 1}) as r:
                got.extend(r.iter_raw())
    assert b"".join(got) == b"data: 1\n\ndata: 2\n\n"
    assert all(len(c) <= 2 for c in got) and len(got) == 10  # fixed:2, and a boundary at byte 9 for the stall
    assert b"".join(got[:5]) == b"data: 1\n\n"
    assert player.plays[0].stream.failed


@pytest.mark.parametrize("timing", ["instant", "scaled:0"])
def test_bytewise_async_replay_is_lazy_and_complete(timing: str) -> None:
    async def main(stop: int | None) -> list[bytes]:
        got = []
        async with httpx.AsyncClient() as client:
            async with client.stream("GET", URL) as r:
                async for chunk in r.aiter_raw():
                    got.append(chunk)
                    if len(got) == stop:
                        break
        return got

    with ssemock.replay(_big(), chunking="bytewise", timing=timing, allow_playback_repeats=True) as player:
        part = anyio.run(main, 1000)
        assert len(part) == 1000 and set(map(len, part)) == {1} and not player.plays[0].stream.consumed
        assert b"".join(anyio.run(main, None)) == BIG and player.plays[1].stream.consumed


def test_check_keeps_only_the_runs_of_the_test_and_names_transform_and_faults() -> None:
    """The search's own runs are no plays of the test: one unconsumed stream to warn of, not one per attempt."""
    cassette = ssemock.Cassette()
    cassette.add("GET", URL, [b"data: \xe4\xb8\x96\n\n", b"data: 2\n\n", b"data: 3\n\n"])

    def half_read_then_fail() -> None:
        with httpx.Client() as client, client.stream("GET", URL) as r:
            first = next(r.iter_raw())
            first.decode("utf-8")  # a client that decodes each chunk on its own

    with ssemock.replay(
        cassette, chunking="mid_utf8", transform="crlf", faults=["stall:before_event=2,seconds=0.001"]
    ) as player:
        with pytest.raises(ssemock.StreamAssertionError) as info:
            player.check(half_read_then_fail)
    assert len(player.plays) == 1 and len(player.unconsumed()) == 1
    message = str(info.value)
    assert 'transform="crlf"' in message and "faults=['stall:before_event=2,seconds=0.001']" in message


def test_a_misspelt_option_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="chunkng"):
        ssemock.replay(ssemock.Cassette(), chunkng="mid_line")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="recod_mode"):
        ssemock.use_cassette("x.json", recod_mode="once")  # type: ignore[call-arg]


@pytest.mark.parametrize("given", ["cassettes/chat.json", Path("cassettes/chat.json")])
def test_a_file_path_given_to_replay_says_what_to_use_instead(given: object) -> None:
    with pytest.raises(TypeError, match=r"Cassette object.*chat\.json.*use_cassette\(path\).*Cassette\.load"):
        ssemock.replay(given)  # type: ignore[arg-type]


def test_a_play_prints_as_one_short_line() -> None:
    """``print(player.plays)``: the request, what it went through and how it ended, no bodies."""
    c = ssemock.Cassette()
    c.add("GET", "https://api.test/s", [b"data: 1\n\n" * 300, b"data: 2\n\n"])
    with ssemock.replay(c, chunking="bytewise", faults="disconnect:after_event=2") as player:
        with pytest.raises(httpx.RemoteProtocolError), httpx.Client() as client:
            with client.stream("GET", "https://api.test/s") as r:
                r.read()
    (play,) = player.plays
    assert repr(play) == (
        "<Play #0 GET https://api.test/s chunking bytewise, faults disconnect:after_event=2, "
        "18/18 bytes served, failed>"
    )
    assert len(repr(player.plays)) < 200  # the 2.7 KB body is not in it


def test_an_unmatched_request_to_another_host_never_suggests_dropping_the_host() -> None:
    c = ssemock.Cassette()
    c.add("GET", "https://api.openai.com/v1/models?x=1", [b"{}"])
    with ssemock.replay(c), pytest.raises(ssemock.UnmatchedRequestError) as info:
        httpx.get("https://other.example.com/v1/models?x=2")
    message = str(info.value)
    assert "(1 interaction, " in message
    assert "the request goes to other.example.com, a host the cassette never saw" in message
    assert "matching less" not in message


def test_the_unmatched_request_message_never_drives_the_terminal() -> None:
    """A cassette's text (a recorded URL with an OSC window-title sequence) is shown with its
    control characters escaped: pytest prints the message to the terminal."""
    cassette = ssemock.Cassette()
    cassette.add("GET", "https://api.example.com/v1/x?q=\x1b]0;pwned\x07", [b"data: x\n\n"])  # a hostile file
    with ssemock.replay(cassette):
        with pytest.raises(ssemock.UnmatchedRequestError) as caught:
            httpx.get("https://api.example.com/v1/x?q=1")
    message = str(caught.value)
    assert "\x1b" not in message and "\x07" not in message
    assert "\\u001b]0;pwned\\u0007" in message  # shown, visibly
