"""The aiohttp stack: plain aiohttp, the OpenAI and Anthropic SDKs' aiohttp clients, google-genai's
async client, recorded from real loopback servers and replayed offline."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import anthropic
import httpx
import httpx2
import openai
import pytest
from conftest import FakeClock, assert_paced, side_env_python
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import StreamingResponse
from starlette.routing import Route
from streams import TEXT, anthropic_events, openai_chat_events, writes

import ssemock
from ssemock.commands.loopback import running

TRANSFORMS = [None, "crlf", "cr", "keepalive", "no_space"]
GAP = 0.02


def run(coro: Awaitable[Any]) -> Any:
    return asyncio.run(coro)  # type: ignore[arg-type]


# -- a loopback server of this module's own: scripted writes, a drop, Gemini ------------------


def gemini_writes(text: str = TEXT) -> list[bytes]:
    out = []
    for i in range(0, len(text), 6):
        part = {
            "candidates": [{"content": {"parts": [{"text": text[i : i + 6]}], "role": "model"}, "index": 0}],
            "modelVersion": "gemini-test",
        }
        out.append(f"data: {json.dumps(part, ensure_ascii=False)}\r\n\r\n".encode())
    last = {
        "candidates": [
            {"content": {"parts": [{"text": ""}], "role": "model"}, "finishReason": "STOP", "index": 0}
        ],
        "usageMetadata": {"promptTokenCount": 3, "totalTokenCount": 9},
        "modelVersion": "gemini-test",
    }
    out.append(f"data: {json.dumps(last)}\r\n\r\n".encode())
    return out


OPENAI = writes(openai_chat_events())
ROUTES: dict[str, tuple[list[bytes], int | None]] = {  # path -> (writes, drop the connection after N)
    "/v1/chat/completions": (OPENAI, None),
    "/drop/v1/chat/completions": (OPENAI, 5),
    "/v1/messages": (writes(anthropic_events()), None),
    "/drop/v1/messages": (writes(anthropic_events()), 5),
    "/v1beta/models/gemini-test:streamGenerateContent": (gemini_writes(), None),
    "/events": ([b"data: one\n\n", b"data: t", b"wo\n\nevent: x\ndata: \xe4\xb8", b"\x96\n\n"], None),
    "/fail": ([b"data: one\n\n", b"data: tw"], 2),
}
RECEIVED: list[dict[str, Any]] = []


async def _stream(request: Request) -> StreamingResponse:
    script, drop = ROUTES[request.url.path]
    RECEIVED.append(
        {
            "path": request.url.path,
            "query": request.url.query,
            "body": await request.body(),
            "headers": dict(request.headers),
        }
    )

    async def body() -> AsyncIterator[bytes]:
        for i, data in enumerate(script):
            if drop is not None and i >= drop:
                raise ConnectionResetError("scripted drop")
            if i:
                await asyncio.sleep(GAP)
            yield data
        if drop is not None:
            raise ConnectionResetError("scripted drop")

    return StreamingResponse(body(), media_type="text/event-stream")


APP = Starlette(routes=[Route(path, _stream, methods=["GET", "POST"]) for path in ROUTES])


@pytest.fixture(scope="module")
def live() -> Iterator[str]:
    with running(APP) as url:
        yield url


@pytest.fixture
def connects(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every socket connection attempted (the lock's own patch wraps this one)."""
    seen: list[Any] = []
    original = socket.socket.connect

    def connect(self: socket.socket, address: Any) -> Any:
        seen.append(address)
        return original(self, address)

    monkeypatch.setattr(socket.socket, "connect", connect)
    return seen


def record(tmp_path: Path, name: str, fn: Callable[[], Awaitable[Any]], **options: Any) -> tuple[Path, Any]:
    path = tmp_path / f"{name}.json"
    with ssemock.use_cassette(path, record_mode="once", **options):
        got = run(fn())
    return path, got


# -- plain aiohttp ----------------------------------------------------------------------------


async def chunks(url: str, how: str = "any", **kwargs: Any) -> list[Any]:
    async with aiohttp.ClientSession() as session:
        async with session.get(url, **kwargs) as resp:
            resp.raise_for_status()
            if how == "any":
                return [c async for c in resp.content.iter_any()]
            if how == "lines":
                return [line async for line in resp.content]
            if how == "chunks":
                return [c async for c in resp.content.iter_chunks()]
            if how.startswith("chunked:"):
                return [c async for c in resp.content.iter_chunked(int(how[8:]))]
            if how == "readline":
                out = []
                while line := await resp.content.readline():
                    out.append(line)
                return out
            if how == "read":
                return [await resp.read()]
            if how == "text":
                return [await resp.text()]
            raise AssertionError(how)


def test_records_the_server_writes_and_replays_with_the_server_gone(
    tmp_path: Path, connects: list[Any]
) -> None:
    script = ROUTES["/events"][0]
    path = tmp_path / "events.json"
    with running(APP) as url:  # a server of its own, stopped before the replay
        with ssemock.use_cassette(path, record_mode="once"):
            got = run(chunks(f"{url}/events"))
    assert got == script  # the client got each write as it arrived while recording
    (x,) = ssemock.Cassette.load(path).interactions
    assert x.response.chunks == script and x.response.complete and x.response.error is None
    assert_paced(x.response.times, GAP)
    assert x.request.method == "GET" and x.request.url == f"{url}/events"
    connects.clear()
    for how in ("any", "lines", "readline", "read", "text", "chunks", "chunked:3"):
        with ssemock.use_cassette(path) as player:
            replayed = run(chunks(f"{url}/events", how))
        body = b"".join(script)
        if how == "text":
            assert replayed == [body.decode()]
        elif how == "chunks":
            assert [c for c, _ in replayed] == script  # one piece per planned chunk
        else:
            assert b"".join(replayed) == body, how
        assert player.plays[0].stream.consumed
    assert connects == []  # nothing was dialled in replay


@pytest.mark.parametrize("chunking", ["bytewise", "fixed:3", "fixed:7", "mid_line", "as_recorded"])
def test_reads_never_cross_a_planned_boundary(tmp_path: Path, live: str, chunking: str) -> None:
    path, _ = record(tmp_path, "b", lambda: chunks(f"{live}/events"))
    with ssemock.use_cassette(path, chunking=chunking) as player:
        got = run(chunks(f"{live}/events"))
    planned = [player.plays[0].body[a:b] for a, b in zip([0, *player.plays[0].ends], player.plays[0].ends)]
    assert got == planned
    n = 4
    with ssemock.use_cassette(path, chunking=chunking):
        pieces = run(chunks(f"{live}/events", f"chunked:{n}"))
    assert pieces == [c[i : i + n] for c in planned for i in range(0, len(c), n)]  # short reads at boundaries
    with ssemock.use_cassette(path, chunking=chunking):
        lines = run(chunks(f"{live}/events", "lines"))
    assert b"".join(lines) == player.plays[0].body and all(line.endswith(b"\n") for line in lines)


def test_a_chunk_is_pulled_only_when_a_read_needs_it(tmp_path: Path, live: str) -> None:
    path, _ = record(tmp_path, "lazy", lambda: chunks(f"{live}/events"))

    async def steps(player: ssemock.Player) -> list[tuple[bool, bool]]:
        out = []
        async with aiohttp.ClientSession() as session:
            async with session.get(f"{live}/events") as resp:
                stream = player.plays[0].stream
                out.append((stream.opened, stream.consumed))
                assert await resp.content.readany() == b"d"
                out.append((stream.opened, stream.consumed))
                assert await resp.content.read(100) == b"a"
                await resp.content.read()
                out.append((stream.opened, stream.consumed))
        return out

    with ssemock.use_cassette(path, chunking="bytewise") as player:
        assert run(steps(player)) == [(False, False), (True, False), (True, True)]


def test_a_read_cancelled_mid_wait_fails_the_next_read_instead_of_ending_cleanly(
    tmp_path: Path, live: str
) -> None:
    path, _ = record(tmp_path, "cancel", lambda: chunks(f"{live}/events"))

    async def read() -> list[bytes]:
        async with aiohttp.ClientSession() as session:
            async with session.get(f"{live}/events") as resp:
                got = [await resp.content.readany()]
                with pytest.raises(asyncio.TimeoutError):  # the next chunk is due 20 ms later
                    await asyncio.wait_for(resp.content.readany(), 0.001)
                got.append(await resp.content.readany())
                return got

    with ssemock.use_cassette(path, timing="recorded"):
        with pytest.raises(aiohttp.ClientPayloadError, match="cancelled"):
            run(read())


def test_disconnect_raises_aiohttps_payload_error_at_the_planned_byte(tmp_path: Path, live: str) -> None:
    path, _ = record(tmp_path, "d", lambda: chunks(f"{live}/v1/chat/completions"))
    got: list[bytes] = []

    async def read() -> None:
        async with aiohttp.ClientSession() as session:
            async with session.get(f"{live}/v1/chat/completions") as resp:
                async for c in resp.content.iter_any():
                    got.append(c)

    with ssemock.use_cassette(path, faults="disconnect:after_event=3") as player:
        with pytest.raises(aiohttp.ClientPayloadError) as info:
            run(read())
    assert b"".join(got) == b"".join(openai_chat_events()[:3]) == player.plays[0].body
    # worded as aiohttp words a chunked body the server stopped short
    assert str(info.value).startswith("Response payload is not completed: <TransferEncodingError")
    assert "disconnect:after_event=3" in info.value.__notes__[0]


def test_a_recorded_failure_replays_as_the_replaying_stacks_error_at_the_same_byte(
    tmp_path: Path, live: str
) -> None:
    got: list[bytes] = []

    async def read(sink: list[bytes]) -> None:
        async with aiohttp.ClientSession() as session:
            async with session.get(f"{live}/fail") as resp:
                async for c in resp.content.iter_any():
                    sink.append(c)

    path = tmp_path / "fail.json"
    with ssemock.use_cassette(path, record_mode="once"):
        with pytest.raises(aiohttp.ClientPayloadError) as live_error:
            run(read(got))
    x = ssemock.Cassette.load(path).interactions[0]
    assert x.response.error is not None and x.response.error["type"] == "ClientPayloadError"
    assert x.response.body == b"".join(got) == b"data: one\n\ndata: tw" and not x.response.complete
    replayed: list[bytes] = []
    with ssemock.use_cassette(path, chunking="bytewise"):
        with pytest.raises(aiohttp.ClientPayloadError) as replay_error:
            run(read(replayed))
    assert b"".join(replayed) == x.response.body
    assert str(replay_error.value) == str(live_error.value)
    with ssemock.use_cassette(path):  # and through httpx: its own error, same byte
        seen: list[bytes] = []
        with httpx.Client() as client, pytest.raises(httpx.RemoteProtocolError):
            with client.stream("GET", f"{live}/fail") as r:
                seen.extend(r.iter_raw())
    assert b"".join(seen) == x.response.body


def test_an_httpx_recorded_failure_replays_through_aiohttp(tmp_path: Path, live: str) -> None:
    path = tmp_path / "hfail.json"
    with ssemock.use_cassette(path, record_mode="once"):
        with httpx.Client() as client, pytest.raises(httpx.RemoteProtocolError):
            with client.stream("GET", f"{live}/fail") as r:
                list(r.iter_raw())
    got: list[bytes] = []

    async def read() -> None:
        async with aiohttp.ClientSession() as session:
            async with session.get(f"{live}/fail") as resp:
                async for c in resp.content.iter_any():
                    got.append(c)

    with ssemock.use_cassette(path):
        with pytest.raises(aiohttp.ClientPayloadError):
            run(read())
    assert b"".join(got) == b"data: one\n\ndata: tw"


@pytest.mark.parametrize("where", ["request", "session", "total"])
def test_a_stall_past_sock_read_times_out_at_once(
    tmp_path: Path, live: str, where: str, fake_clock: FakeClock
) -> None:
    path, _ = record(tmp_path, "s", lambda: chunks(f"{live}/events"))
    timeout = aiohttp.ClientTimeout(total=1) if where == "total" else aiohttp.ClientTimeout(sock_read=1)

    async def read() -> list[bytes]:
        got = []
        session_timeout = timeout if where != "request" else aiohttp.ClientTimeout(total=None)
        async with aiohttp.ClientSession(timeout=session_timeout) as session:
            kwargs = {"timeout": timeout} if where == "request" else {}
            async with session.get(f"{live}/events", **kwargs) as resp:
                async for c in resp.content.iter_any():
                    got.append(c)
        return got

    with ssemock.use_cassette(path, faults="stall:before_event=1,seconds=30"):
        with pytest.raises(aiohttp.SocketTimeoutError) as info:
            run(read())
    assert fake_clock.slept == []  # raised at once, no sleeping
    assert str(info.value) == "Timeout on reading data from socket"
    with ssemock.use_cassette(path, faults="stall:before_event=1,seconds=0.3", timing="recorded"):
        assert b"".join(run(read())) == b"".join(ROUTES["/events"][0])  # shorter than the timeout: served


def test_http_error_status_and_raise_for_status(tmp_path: Path, live: str) -> None:
    path, _ = record(tmp_path, "e", lambda: chunks(f"{live}/events"))

    async def status(**kwargs: Any) -> int:
        async with aiohttp.ClientSession(**kwargs) as session:
            async with session.get(f"{live}/events") as resp:
                return resp.status

    with ssemock.use_cassette(path, faults="http_error:status=429"):
        assert run(status()) == 429
    with ssemock.use_cassette(path, faults="http_error:status=429"):
        with pytest.raises(aiohttp.ClientResponseError) as info:
            run(status(raise_for_status=True))
    assert info.value.status == 429


def test_early_release_is_recorded_as_abandoned_without_drain_on_close_and_replays_release_cleanly(
    tmp_path: Path, live: str
) -> None:
    async def first(release: bool) -> bytes:
        async with aiohttp.ClientSession() as session:
            resp = await session.get(f"{live}/v1/chat/completions")
            data = await resp.content.readany()
            if release:
                resp.release()
            else:
                resp.close()
            assert resp.closed
            return data

    path, got = record(tmp_path, "abandoned", lambda: first(True), drain_on_close=False)
    x = ssemock.Cassette.load(path).interactions[0]
    assert not x.response.complete and x.response.error is None and x.response.body == got
    path, _ = record(tmp_path, "whole", lambda: chunks(f"{live}/v1/chat/completions"))
    for release in (True, False):
        with ssemock.use_cassette(path) as player:
            assert run(first(release)) == OPENAI[0]
        assert player.unconsumed() == [player.plays[0]]
        assert player.plays[0].stream.closed


@pytest.mark.parametrize("how", ["release", "close"])
def test_a_response_released_early_is_drained_in_a_task(tmp_path: Path, server: str, how: str) -> None:
    """release() and close() are not coroutines: the rest is drained by a task while the loop runs."""

    async def first_then(stop: str) -> bytes:
        async with aiohttp.ClientSession() as session:
            resp = await session.get(f"{server}/ten")
            line = await resp.content.readline()
            getattr(resp, stop)()
            assert resp.closed  # the client sees its release at once
            with pytest.raises(aiohttp.ClientConnectionError):
                await resp.content.read()
            for _ in range(200):  # the loop runs on; the task reads the rest meanwhile
                await asyncio.sleep(0.01)
                if player.recorders[0].ended:
                    break
            return line

    with ssemock.use_cassette(tmp_path / "released.json", record_mode="once") as player:
        assert run(first_then(how)) == b"data: 0\n"
    (x,) = player.recorded
    assert x.response.complete and x.response.body == b"".join(b"data: %d\n\n" % i for i in range(10))


@pytest.mark.parametrize("auto_decompress", [True, False])
def test_a_compressed_body_is_stored_decoded_once(tmp_path: Path, server: str, auto_decompress: bool) -> None:
    """aiohttp decodes gzip itself (auto_decompress, the default) or hands the raw bytes on (the
    SDKs' aiohttp transports): either way the cassette holds the decoded body."""

    async def read() -> bytes:
        async with aiohttp.ClientSession(auto_decompress=auto_decompress) as session:
            async with session.get(f"{server}/gzip") as resp:
                return await resp.read()

    path, got = record(tmp_path, "gzip", read)
    x = ssemock.Cassette.load(path).interactions[0]
    assert x.response.body == b"data: one\n\ndata: two\n\n" and x.response.complete
    assert "content-encoding" not in dict(x.response.headers)
    assert (got == x.response.body) is auto_decompress
    with ssemock.use_cassette(path):
        assert run(read()) == x.response.body


def test_the_request_is_built_as_aiohttp_sends_it(tmp_path: Path, live: str) -> None:
    async def post(payload: dict[str, Any], **kwargs: Any) -> str:
        async with aiohttp.ClientSession(base_url=live, headers={"x-app": "demo"}) as session:
            async with session.post(
                "/events", params={"q": "1"}, json=payload, auth=aiohttp.BasicAuth("user", "pass"), **kwargs
            ) as resp:
                return await resp.text()

    RECEIVED.clear()
    path, text = record(tmp_path, "req", lambda: post({"a": 1}))
    sent = RECEIVED[-1]
    (x,) = ssemock.Cassette.load(path).interactions
    assert x.request.url == f"{live}/events?q=1" and sent["query"] == "q=1"
    assert sent["body"] == b'{"a": 1}' and json.loads(x.request.body or b"") == {"a": 1}
    headers = dict(x.request.headers)
    assert headers["x-app"] == sent["headers"]["x-app"] == "demo"
    assert headers["content-type"] == sent["headers"]["content-type"] == "application/json"
    assert "authorization" in headers and "pass" not in json.dumps(headers)  # redacted in the cassette
    with ssemock.use_cassette(path) as player:
        assert run(post({"a": 1})) == text
    assert player.plays[0].request.content == sent["body"]  # what the replayed request would send
    with ssemock.use_cassette(path, allowed_hosts=[]), pytest.raises(ssemock.UnmatchedRequestError):
        run(post({"a": 2}))  # (loopback is allowed by default: an unmatched request would reach it)


def test_form_and_streamed_bodies_are_sent_and_matched(tmp_path: Path, live: str) -> None:
    async def gen() -> AsyncIterator[bytes]:
        yield b"part one, "
        yield b"part two"

    async def post(data: Any) -> str:
        async with aiohttp.ClientSession() as session:
            async with session.post(f"{live}/events", data=data) as resp:
                return await resp.text()

    RECEIVED.clear()
    path, _ = record(tmp_path, "form", lambda: post({"k": "v w"}))
    assert RECEIVED[-1]["body"] == ssemock.Cassette.load(path).interactions[0].request.body == b"k=v+w"
    path, _ = record(tmp_path, "gen", lambda: post(gen()))
    assert (
        RECEIVED[-1]["body"]
        == ssemock.Cassette.load(path).interactions[0].request.body
        == b"part one, part two"
    )
    with ssemock.use_cassette(path):
        assert run(post(gen())) == b"".join(ROUTES["/events"][0]).decode()


# -- the SDKs' aiohttp clients ----------------------------------------------------------------


async def openai_text(base: str, **kwargs: Any) -> str:
    async with openai.AsyncOpenAI(
        base_url=f"{base}/v1",
        api_key="sk-test-aiohttp",
        max_retries=0,
        http_client=openai.DefaultAioHttpClient(),
        **kwargs,
    ) as client:
        stream = await client.chat.completions.create(
            model="gpt-test", messages=[{"role": "user", "content": "hi"}], stream=True
        )
        text = ""
        async for chunk in stream:
            if chunk.choices and chunk.choices[0].delta.content:
                text += chunk.choices[0].delta.content
        return text


async def anthropic_text(base: str, **kwargs: Any) -> str:
    async with anthropic.AsyncAnthropic(
        base_url=base,
        api_key="sk-ant-test-aiohttp",
        max_retries=0,
        http_client=anthropic.DefaultAioHttpClient(),
        **kwargs,
    ) as client:
        async with client.messages.stream(
            model="claude-test", max_tokens=10, messages=[{"role": "user", "content": "hi"}]
        ) as stream:
            return "".join([text async for text in stream.text_stream])


SDKS = {"openai": openai_text, "anthropic": anthropic_text}


@pytest.mark.parametrize("sdk", SDKS)
def test_sdk_aiohttp_client_records_and_replays_under_every_chunking_and_transform(
    tmp_path: Path, live: str, sdk: str, connects: list[Any]
) -> None:
    fn = SDKS[sdk]
    path, text = record(tmp_path, sdk, lambda: fn(live))
    assert text == TEXT
    (x,) = ssemock.Cassette.load(path).interactions  # the httpx2 client over aiohttp: recorded once
    assert x.response.complete
    connects.clear()
    for chunking in ssemock.chunking.ALL:
        for transform in TRANSFORMS:
            with ssemock.use_cassette(path, chunking=chunking, transform=transform) as player:
                got = run(fn(live))
            assert len(player.plays) == 1  # intercepted once, by the aiohttp stack
            assert got == player.expected.text == TEXT, (chunking, transform)
    assert connects == []


@pytest.mark.parametrize("sdk", SDKS)
def test_sdk_aiohttp_client_disconnect_raises_what_a_live_drop_raises(
    tmp_path: Path, live: str, sdk: str
) -> None:
    fn = SDKS[sdk]
    with pytest.raises(Exception) as dropped:  # a real server dropping the connection mid-stream
        run(fn(f"{live}/drop"))
    path, _ = record(tmp_path, sdk, lambda: fn(live))
    with ssemock.use_cassette(path, faults="disconnect:after_event=4"):
        with pytest.raises(Exception) as replayed:
            run(fn(live))
    assert type(replayed.value) is type(dropped.value)
    assert isinstance(replayed.value, (httpx2.ReadError, openai.APIError, anthropic.APIError))


@pytest.mark.parametrize("sdk", SDKS)
def test_sdk_aiohttp_client_stall_past_its_timeout_raises_at_once(
    tmp_path: Path, live: str, sdk: str, fake_clock: FakeClock
) -> None:
    fn = SDKS[sdk]
    path, _ = record(tmp_path, sdk, lambda: fn(live))
    with ssemock.use_cassette(path, faults="stall:before_event=3,seconds=30"):
        with pytest.raises((httpx2.ReadTimeout, openai.APITimeoutError, anthropic.APITimeoutError)):
            run(fn(live, timeout=1.0))
    assert fake_clock.slept == []  # raised at once, no sleeping


# -- google-genai's async client --------------------------------------------------------------

# Findings, pinned: google-genai's async reader splits SSE on "\n" only, strips a literal "data: "
# and takes every other non-blank line for JSON, so a CR-only stream, a keep-alive comment
# (": ping") and "data:" without its optional space all break it (all valid SSE).
GENAI_BREAKS = {"cr", "keepalive", "no_space"}


async def gemini_text(base: str) -> str:
    from google import genai
    from google.genai import types

    client = genai.Client(
        api_key="AIzaTESTFAKE-ssemock-sk-test",
        http_options=types.HttpOptions(base_url=base, api_version="v1beta"),
    )
    text = ""
    async for chunk in await client.aio.models.generate_content_stream(model="gemini-test", contents="hi"):
        text += chunk.text or ""
    await client.aio.aclose()
    return text


def test_google_genai_async_records_and_replays_through_aiohttp(
    tmp_path: Path, live: str, connects: list[Any]
) -> None:
    from google.genai.errors import UnknownApiResponseError

    path, text = record(tmp_path, "gemini", lambda: gemini_text(live))
    assert text == TEXT
    (x,) = ssemock.Cassette.load(path).interactions
    assert x.response.chunks == gemini_writes() and "alt=sse" in x.request.url
    assert "AIzaTESTFAKE" not in json.dumps([list(h) for h in x.request.headers])
    connects.clear()
    for chunking in ssemock.chunking.ALL:
        for transform in TRANSFORMS:
            with ssemock.use_cassette(path, chunking=chunking, transform=transform) as player:
                if transform in GENAI_BREAKS:
                    with pytest.raises(UnknownApiResponseError):
                        run(gemini_text(live))
                else:
                    assert run(gemini_text(live)) == text, (chunking, transform)
            assert len(player.plays) == 1
    assert connects == []
    with ssemock.use_cassette(path, faults="disconnect:after_event=2"):
        with pytest.raises(aiohttp.ClientPayloadError):
            run(gemini_text(live))


# -- litellm's async path (its own venv: litellm needs openai < 3, the suite openai >= 3) ---------


@pytest.fixture(scope="session")
def litellm_python() -> Path:
    """The litellm side environment's Python (``bash .ci/litellm-env`` builds it; see
    `conftest.side_env_python`)."""
    return side_env_python("litellm")


def test_litellm_acompletion_stream_records_and_replays_through_aiohttp(
    tmp_path: Path, live: str, litellm_python: Path
) -> None:
    script = Path(__file__).with_name("litellm_aiohttp.py")
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}  # no model-price fetch at import
    done = subprocess.run(
        [str(litellm_python), str(script), live, str(tmp_path / "litellm.json")],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["live"] == TEXT and out["recorded"] == 1
    assert len(out["replays"]) == 35
    for name, (text, expected, plays, stack) in out["replays"].items():
        assert text == expected == TEXT and plays == 1 and stack == "aiohttp", name
    # a drop replays as what litellm raises for a live drop: the same exception type
    assert out["disconnect"] is not None and out["disconnect"][:2] == out["live_drop"][:2]


def test_nothing_aiohttp_sends_in_replay_reaches_a_listener(tmp_path: Path) -> None:
    """An unmatched request fails as unmatched; so does a WebSocket handshake (intercepted since
    issue 34, by ssemock.stacks.websocket.aiohttp); the loopback listener accepts nothing either way."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.setblocking(False)
    base = f"127.0.0.1:{listener.getsockname()[1]}"

    async def get() -> None:
        async with aiohttp.ClientSession() as session:
            async with session.get(f"http://{base}/v1/chat/completions"):
                pass

    async def ws() -> None:
        async with aiohttp.ClientSession() as session:
            await session.ws_connect(f"ws://{base}/socket")

    try:
        with ssemock.replay(ssemock.Cassette(), allowed_hosts=[]):
            with pytest.raises(ssemock.UnmatchedRequestError):
                run(get())
            with pytest.raises(ssemock.UnmatchedRequestError, match=f"GET ws://{base}/socket"):
                run(ws())
        with pytest.raises(BlockingIOError):
            listener.accept()
    finally:
        listener.close()
