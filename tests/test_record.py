"""Recording from a real loopback server through httpx, httpx2 and the real SDKs, sync and async."""

from __future__ import annotations

import asyncio
import json
import warnings
from pathlib import Path
from typing import Any

import aiohttp
import anthropic
import httpx
import httpx2
import openai
import orjson
import pytest
import requests
from conftest import ACK, GATED, assert_paced
from streams import TEXT, TOOL_ARGS

import ssemock

CLIENTS = ["httpx", "httpx2"]


def _stream_raw(lib: Any, url: str, is_async: bool) -> list[bytes]:
    if is_async:

        async def run() -> list[bytes]:
            async with lib.AsyncClient() as client:
                async with client.stream("GET", url) as r:
                    return [c async for c in r.aiter_raw()]

        return asyncio.run(run())
    with lib.Client() as client:
        with client.stream("GET", url) as r:
            return list(r.iter_raw())


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("lib", [httpx, httpx2], ids=CLIENTS)
def test_records_server_boundaries_and_gaps(
    tmp_path: Path, server: str, scripts: Any, lib: Any, is_async: bool
) -> None:
    path = tmp_path / "c.json"
    with ssemock.use_cassette(path, record_mode="once") as recording:
        live = _stream_raw(lib, f"{server}/events", is_async)
        (kept,) = recording.recorded
    script = scripts["/events"]
    assert live == script.writes  # the client got the server's writes unchanged while recording
    cassette = ssemock.Cassette.load(path)
    (x,) = cassette.interactions
    # the recording's times are seconds to the nearest 0.1 ms, and the saved milliseconds are theirs
    assert [round(t, 4) for t in kept.response.times] == kept.response.times
    assert [round(t * 1000, 1) for t in kept.response.times] == [round(t * 1000, 1) for t in x.response.times]
    assert x.response.chunks == script.writes
    assert_paced(x.response.times, script.gap)
    assert x.response.complete and x.response.error is None
    assert x.request.method == "GET" and x.request.url == f"{server}/events"
    # replay, server or not, under every chunking: same bytes
    for chunking in ssemock.chunking.ALL:
        with ssemock.use_cassette(path, chunking=chunking) as player:
            got = _stream_raw(lib, f"{server}/events", is_async)
        assert b"".join(got) == b"".join(script.writes)
        assert got == chunking(x.response.body, x.response.ends)
        assert player.plays[0].stream.consumed


@pytest.mark.parametrize("lib", [httpx, httpx2], ids=CLIENTS)
def test_a_long_fast_stream_is_recorded_chunk_for_chunk(tmp_path: Path, server: str, lib: Any) -> None:
    """A stream of many KB in many small chunks (the recording holds them joined a step of its
    scan at a time): the cassette keeps every chunk the client got, in order, and saves."""
    path = tmp_path / "c.json"
    with ssemock.use_cassette(path, record_mode="once"):
        live = _stream_raw(lib, f"{server}/long", False)
    (x,) = ssemock.Cassette.load(path).interactions
    assert len(live) > 100 and sum(map(len, live)) > 200_000
    assert x.response.chunks == live and x.response.complete


def test_client_gets_each_chunk_as_it_arrives_while_recording(tmp_path: Path, server: str) -> None:
    """vcrpy makes the client wait for the whole stream; the tee hands each chunk on at once: the
    gated route sends its next write only after the client acknowledged the last one."""
    got = []
    with ssemock.use_cassette(tmp_path / "ttfc.json", record_mode="once"):
        with httpx.Client() as client, client.stream("POST", f"{server}/gated") as r:
            for chunk in r.iter_raw():
                got.append(chunk)
                ACK.release()
    assert got == GATED  # no write came late: each reached the client before the next was sent
    assert ssemock.Cassette.load(tmp_path / "ttfc.json").interactions[0].response.chunks == GATED


def test_gzip_is_stored_decoded(tmp_path: Path, server: str) -> None:
    path = tmp_path / "gz.json"
    with ssemock.use_cassette(path, record_mode="once"):
        with httpx.Client() as client:
            live = client.get(f"{server}/gzip").text
    doc = orjson.loads(path.read_bytes())
    resp = doc["interactions"][0]["response"]
    assert "content-encoding" not in resp["headers"]
    assert resp["body"] == ["data: one\n\n", "data: two\n\n"]
    with ssemock.use_cassette(path):
        with httpx.Client() as client:
            assert client.get(f"{server}/gzip").text == live


@pytest.mark.parametrize("lib", [httpx, httpx2], ids=CLIENTS)
def test_failure_mid_stream_is_recorded_and_replayed(tmp_path: Path, server: str, lib: Any) -> None:
    path = tmp_path / "fail.json"
    received: list[bytes] = []
    with ssemock.use_cassette(path, record_mode="once"):
        with lib.Client() as client, pytest.raises(lib.RemoteProtocolError):
            with client.stream("GET", f"{server}/fail") as r:
                for c in r.iter_raw():
                    received.append(c)
    x = ssemock.Cassette.load(path).interactions[0]
    assert not x.response.complete
    assert x.response.error is not None and x.response.error["type"] == "RemoteProtocolError"
    assert x.response.body == b"".join(received) == b"data: one\n\ndata: tw"
    for other in (httpx, httpx2):  # replays as the replaying client's own exception, same byte
        replayed: list[bytes] = []
        with ssemock.use_cassette(path, chunking="bytewise"):
            with other.Client() as client, pytest.raises(other.RemoteProtocolError):
                with client.stream("GET", f"{server}/fail") as r:
                    for c in r.iter_raw():
                        replayed.append(c)
        assert b"".join(replayed) == x.response.body


def test_abandoned_stream_is_recorded_as_incomplete_without_drain_on_close(
    tmp_path: Path, server: str
) -> None:
    path = tmp_path / "abandon.json"
    with ssemock.use_cassette(path, record_mode="once", drain_on_close=False):
        with httpx.Client() as client:
            with client.stream("POST", f"{server}/v1/chat/completions") as r:
                first = next(r.iter_raw())
    x = ssemock.Cassette.load(path).interactions[0]
    assert x.response.complete is False and x.response.error is None
    assert x.response.body.startswith(first)


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("lib", [httpx, httpx2], ids=CLIENTS)
def test_a_finished_recording_is_freed_without_waiting_for_the_garbage_collector(
    tmp_path: Path, server: str, lib: Any, is_async: bool
) -> None:
    """Dropping the Player frees what it recorded at once, even while the client keeps its
    Response (whose httpx objects form a cycle of their own): nothing of ours is in a cycle."""
    import gc
    import weakref

    async def run() -> Any:
        async with lib.AsyncClient() as client, client.stream("POST", f"{server}/v1/chat/completions") as r:
            assert [c async for c in r.aiter_raw()]
            return r

    # no full collection first: with none running only reference counts free anything (a full one
    # walked the suite's whole heap, most of this test's CPU in the suite, issue 48 item 4)
    gc.disable()
    try:
        player = ssemock.use_cassette(tmp_path / "freed.json", record_mode="all")
        with player:
            if is_async:
                response = asyncio.run(run())
            else:
                with (
                    lib.Client() as client,
                    client.stream("POST", f"{server}/v1/chat/completions") as response,
                ):
                    assert list(response.iter_raw())
        assert ssemock.Cassette.load(tmp_path / "freed.json").interactions[0].response.complete
        recorder, gone = weakref.ref(player.recorders[0]), weakref.ref(player)
        del player
        assert gone() is None and recorder() is None
        assert response.status_code == 200  # the client still holds its response
    finally:
        gc.enable()


def _openai_run(client: Any) -> tuple[str, str]:
    stream = client.chat.completions.create(
        model="gpt-test", messages=[{"role": "user", "content": "hi"}], stream=True
    )
    text, args = "", ""
    for chunk in stream:
        if not chunk.choices:
            continue
        delta = chunk.choices[0].delta
        text += delta.content or ""
        for call in delta.tool_calls or []:
            args += call.function.arguments or ""
    return text, args


async def _openai_arun(client: Any) -> tuple[str, str]:
    stream = await client.chat.completions.create(
        model="gpt-test", messages=[{"role": "user", "content": "hi"}], stream=True
    )
    text, args = "", ""
    async for chunk in stream:
        delta = chunk.choices[0].delta
        text += delta.content or ""
        for call in delta.tool_calls or []:
            args += call.function.arguments or ""
    return text, args


def _anthropic_run(client: Any) -> tuple[str, str]:
    with client.messages.stream(
        model="claude-test", max_tokens=64, messages=[{"role": "user", "content": "hi"}]
    ) as stream:
        message = stream.get_final_message()
    text = "".join(b.text for b in message.content if b.type == "text")
    tool = next(b for b in message.content if b.type == "tool_use")
    return text, json.dumps(tool.input, ensure_ascii=False)


async def _anthropic_arun(client: Any) -> tuple[str, str]:
    async with client.messages.stream(
        model="claude-test", max_tokens=64, messages=[{"role": "user", "content": "hi"}]
    ) as stream:
        message = await stream.get_final_message()
    text = "".join(b.text for b in message.content if b.type == "text")
    tool = next(b for b in message.content if b.type == "tool_use")
    return text, json.dumps(tool.input, ensure_ascii=False)


SDKS = {
    "openai-sync": lambda url: _openai_run(
        openai.OpenAI(base_url=f"{url}/v1", api_key="sk-test-openai-key-123456")
    ),
    "openai-async": lambda url: asyncio.run(
        _openai_arun(openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="sk-test-openai-key-123456"))
    ),
    "anthropic-sync": lambda url: _anthropic_run(
        anthropic.Anthropic(base_url=url, api_key="sk-ant-test-key-123456")
    ),
    "anthropic-async": lambda url: asyncio.run(
        _anthropic_arun(anthropic.AsyncAnthropic(base_url=url, api_key="sk-ant-test-key-123456"))
    ),
}


@pytest.mark.parametrize("sdk", list(SDKS))
def test_sdk_record_then_replay_every_chunking(tmp_path: Path, server: str, scripts: Any, sdk: str) -> None:
    path = tmp_path / f"{sdk}.json"
    with ssemock.use_cassette(path, record_mode="once"):
        live = SDKS[sdk](server)
    expected_args = (
        TOOL_ARGS if sdk.startswith("openai") else json.dumps(json.loads(TOOL_ARGS), ensure_ascii=False)
    )
    assert live == (TEXT, expected_args)
    raw = path.read_text()
    assert "sk-test-openai-key" not in raw and "sk-ant-test-key" not in raw  # redacted
    x = ssemock.Cassette.load(path).interactions[0]
    route = "/v1/messages" if sdk.startswith("anthropic") else "/v1/chat/completions"
    assert x.response.chunks == scripts[route].writes
    assert x.request.json()["stream"] is True
    dead = "http://127.0.0.1:9"  # nothing listens: replay must never touch the network
    for chunking in ssemock.chunking.ALL:
        with ssemock.use_cassette(path, chunking=chunking, match_on=["method", "path", "body"]) as player:
            assert SDKS[sdk](dead) == live, chunking
        assert len(player.plays) == 1


def test_secrets_in_headers_and_query_never_reach_the_file(tmp_path: Path, server: str) -> None:
    path = tmp_path / "secret.json"
    key = "sk-test-0123456789abcdefSECRET"
    headers = {
        "authorization": f"Bearer {key}",
        "x-api-key": key,
        "api-key": key,
        "cookie": f"s={key}",
        "x-goog-api-key": "AIzaTESTTESTTESTTESTTESTTESTTEST",
        "openai-organization": "org-secret",
        "openai-project": "proj-secret",
        "proxy-authorization": f"Basic {key}",
    }
    url = f"{server}/cookie?api_key={key}&key={key}&access_token={key}&keep=1"
    with ssemock.use_cassette(path, record_mode="once"):
        with httpx.Client() as client:
            live = client.get(url, headers=headers)
    assert live.headers["set-cookie"] == "session=s3cr3t"
    raw = path.read_text()
    for secret in (key, "AIzaTEST", "org-secret", "proj-secret", "s3cr3t"):
        assert secret not in raw
    doc = orjson.loads(raw)["interactions"][0]
    assert all(doc["request"]["headers"][h] == "REDACTED" for h in headers)
    assert doc["response"]["headers"]["set-cookie"] == "REDACTED"
    assert "keep=1" in doc["request"]["url"] and "api_key=REDACTED" in doc["request"]["url"]
    # matching uses the redacted form: the same request (with the real key) replays
    with ssemock.use_cassette(path) as player:
        with httpx.Client() as client:
            assert client.get(url, headers=headers).text == live.text
    assert len(player.plays) == 1


def test_secret_left_in_a_body_refuses_to_save(tmp_path: Path, server: str) -> None:
    path = tmp_path / "leak.json"
    with pytest.raises(ssemock.CassetteError) as info:
        with ssemock.use_cassette(path, record_mode="once"):
            with httpx.Client() as client:
                client.post(f"{server}/events", json={"note": "my key is sk-test-LEAKED0123456789"})
    message = str(info.value)
    assert str(path) in message and "interaction 0 request.body" in message and "OpenAI-style key" in message
    # the cassette is not written; the recording is kept beside it, masked, for `ssemock accept`
    assert not path.exists() and list(tmp_path.iterdir()) == [tmp_path / "leak.refused.json"]
    assert b"LEAKED0123456789" not in (tmp_path / "leak.refused.json").read_bytes()


def test_record_hooks_change_or_drop_what_is_recorded(tmp_path: Path, server: str) -> None:
    path = tmp_path / "hooks.json"

    def scrub(request: ssemock.Request) -> ssemock.Request | None:
        if request.url.endswith("/gzip"):
            return None  # not recorded
        request.headers = [(k, v) for k, v in request.headers if k != "user-agent"]
        return request

    def tag(response: ssemock.Response) -> ssemock.Response:
        response.headers.append(("x-recorded-by", "test"))
        return response

    with ssemock.use_cassette(
        path, record_mode="once", before_record_request=scrub, before_record_response=tag
    ):
        with httpx.Client() as client:
            client.get(f"{server}/events")
            client.get(f"{server}/gzip")
    (x,) = ssemock.Cassette.load(path).interactions
    assert x.request.url.endswith("/events")
    assert "user-agent" not in dict(x.request.headers)
    assert x.response.header("x-recorded-by") == "test"


def test_new_episodes_records_only_what_is_missing(tmp_path: Path, server: str) -> None:
    path = tmp_path / "episodes.json"
    with ssemock.use_cassette(path, record_mode="once"), httpx.Client() as client:
        client.get(f"{server}/events")
    before = path.read_bytes()
    with ssemock.use_cassette(path, record_mode="new_episodes") as player, httpx.Client() as client:
        client.get(f"{server}/events")  # replayed
        client.get(f"{server}/gzip")  # recorded
    assert [p.index for p in player.plays] == [0]
    after = ssemock.Cassette.load(path)
    assert [x.request.url.rsplit("/", 1)[1] for x in after.interactions] == ["events", "gzip"]
    assert path.read_bytes().startswith(before[: before.index(b'"interactions"')])


@pytest.mark.parametrize("encoding", ["br", "zstd"])
def test_brotli_and_zstd_are_stored_decoded(tmp_path: Path, server: str, encoding: str) -> None:
    path = tmp_path / f"{encoding}.json"
    with ssemock.use_cassette(path, record_mode="once"), httpx.Client() as client:
        with client.stream("GET", f"{server}/{encoding}") as r:
            assert r.headers["content-encoding"] == encoding  # httpx asked for it and decoded it
            live = r.read()
    resp = orjson.loads(path.read_bytes())["interactions"][0]["response"]
    assert "content-encoding" not in resp["headers"]
    assert "".join(resp["body"]).encode() == live == "data: one\n\ndata: 世界\n\n".encode()
    with ssemock.use_cassette(path, chunking="mid_utf8"), httpx.Client() as client:
        assert client.get(f"{server}/{encoding}").content == live


def test_the_new_default_rules_redact_and_the_recording_still_replays(tmp_path: Path, server: str) -> None:
    """Credential-named request headers, the issue's query parameters and response headers are
    replaced; matching uses the redacted form, so the same request (real values) replays."""
    path = tmp_path / "rules.json"
    key = "sk-test-0123456789abcdefRULES"
    headers = {
        "x-amz-security-token": "FwoGZXIvYXdzEJr//////////wEaDTESTFAKE",
        "ocp-apim-subscription-key": "abc123",
        "x-auth-token": "short",
        "private-token": "glpat-TESTFAKE",
        "anthropic-api-key": key,
        "x-session-affinity": "node-7",
        "x-keep": "visible",
    }
    query = (
        "sig=0a1b2c&signature=3d4e&X-Amz-Signature=5f6a&X-Amz-Credential=AKIATESTFAKE%2F20240101"
        "&X-Amz-Security-Token=tok&auth=a1&client_secret=cs1&code=oauthcode&refresh_token=rt1&token=t1"
        "&password=p1&keep=1"
    )
    url = f"{server}/events?{query}"  # (/echo would echo the key into the body: refused)
    with ssemock.use_cassette(path, record_mode="once"):
        with httpx.Client() as client:
            live = client.get(url, headers=headers)
    doc = orjson.loads(path.read_text())["interactions"][0]
    stored = doc["request"]["headers"]
    assert all(stored[h] == "REDACTED" for h in headers if h != "x-keep") and stored["x-keep"] == "visible"
    names = [part.split("=")[0] for part in query.split("&")]
    stored_query = dict(p.split("=", 1) for p in doc["request"]["url"].split("?", 1)[1].split("&"))
    assert all(stored_query[n] == "REDACTED" for n in names if n != "keep") and stored_query["keep"] == "1"
    with ssemock.use_cassette(path) as player:
        with httpx.Client() as client:
            assert client.get(url, headers=headers).text == live.text
    assert len(player.plays) == 1


def test_a_cassette_recorded_under_older_rules_still_replays(tmp_path: Path) -> None:
    """A query value the old rules kept (code=...) is redacted now on the sent side only:
    matching redacts the recorded side too."""
    path = tmp_path / "old.json"
    cassette = ssemock.Cassette()
    cassette.add("GET", "https://api.example.com/oauth?code=abc123&state=1", [b"data: ok\n\n"])
    cassette.save(path)
    with ssemock.use_cassette(path, match_on=["method", "host", "path", "query"]) as player:
        with httpx.Client() as client:
            assert client.get("https://api.example.com/oauth?code=abc123&state=1").text == "data: ok\n\n"
    assert len(player.plays) == 1


def test_response_credential_headers_are_redacted() -> None:
    response = ssemock.Response(
        200,
        [
            ("openai-organization", "org-x"),
            ("anthropic-organization-id", "o1"),
            ("set-cookie", "a=1"),
            ("x-amz-security-token", "t"),
            ("x-ratelimit-remaining-tokens", "149984"),
        ],
        b"",
        [],
        [],
    )
    headers = dict(ssemock.redaction.rules.redact_response(response).headers)
    assert headers == {
        "openai-organization": "REDACTED",
        "anthropic-organization-id": "REDACTED",
        "set-cookie": "REDACTED",
        "x-amz-security-token": "REDACTED",
        "x-ratelimit-remaining-tokens": "149984",
    }


# -- a client that closes the stream before its end (drain_on_close) ---------------------------


def _two_sync(lib: Any) -> Any:
    def read(url: str) -> list[str]:
        with lib.Client() as client, client.stream("GET", url) as r:
            return _first_two(r.iter_lines())

    return read


def _two_async(lib: Any) -> Any:
    def read(url: str) -> list[str]:
        async def run() -> list[str]:
            async with lib.AsyncClient() as client, client.stream("GET", url) as r:
                got = []
                async for line in r.aiter_lines():
                    got += [line] if line.startswith("data:") else []
                    if len(got) == 2:
                        return got
            return got

        return asyncio.run(run())

    return read


def _two_aiohttp(url: str) -> list[str]:
    async def run() -> list[str]:
        async with aiohttp.ClientSession() as session, session.get(url) as resp:
            got: list[str] = []
            while len(got) < 2:
                line = (await resp.content.readline()).decode().strip()
                got += [line] if line.startswith("data:") else []
            return got  # leaving `async with` releases the response before its end

    return asyncio.run(run())


def _two_requests(url: str) -> list[str]:
    with requests.get(url, stream=True, timeout=5) as r:
        return _first_two(r.iter_lines(decode_unicode=True))


def _first_two(lines: Any) -> list[str]:
    got = []
    for line in lines:
        got += [line] if line.startswith("data:") else []
        if len(got) == 2:
            break
    return got


#: each stack's client reading two events and closing the response
READ_TWO = {
    "httpx-sync": _two_sync(httpx),
    "httpx-async": _two_async(httpx),
    "httpx2-sync": _two_sync(httpx2),
    "httpx2-async": _two_async(httpx2),
    "aiohttp": _two_aiohttp,
    "requests": _two_requests,
}


def _data(body: bytes) -> list[str]:
    return [e.data for e in ssemock.sse.decode([body])]


@pytest.mark.parametrize("stack", list(READ_TWO))
def test_a_stream_closed_early_is_drained_to_its_end(
    tmp_path: Path, server: str, scripts: Any, stack: str
) -> None:
    path = tmp_path / "drained.json"
    with ssemock.use_cassette(path, record_mode="once"):  # drain_on_close is on by default
        got = READ_TWO[stack](f"{server}/ten")
    assert got == ["data: 0", "data: 1"]  # the client stopped after two events
    (x,) = ssemock.Cassette.load(path).interactions
    assert x.response.complete and x.response.error is None
    assert _data(x.response.body) == [str(i) for i in range(10)]
    assert x.response.body == b"".join(scripts["/ten"].writes)
    times = x.response.times  # the drained chunks keep their arrival times
    assert times == sorted(times) and times[-1] - times[0] >= 0.8 * 9 * scripts["/ten"].gap, times
    with ssemock.use_cassette(path):  # the replay has it all, for a client that reads it all
        with httpx.Client() as client:
            assert _data(client.get(f"{server}/ten").content) == [str(i) for i in range(10)]


@pytest.mark.parametrize("stack", list(READ_TWO))
def test_a_stream_closed_early_is_incomplete_without_drain_on_close(
    tmp_path: Path, server: str, stack: str
) -> None:
    path = tmp_path / "cut.json"
    with ssemock.use_cassette(path, record_mode="once", drain_on_close=False):
        got = READ_TWO[stack](f"{server}/ten")
    assert got == ["data: 0", "data: 1"]
    (x,) = ssemock.Cassette.load(path).interactions
    assert not x.response.complete and x.response.error is None
    assert _data(x.response.body)[:2] == ["0", "1"] and len(_data(x.response.body)) < 10


@pytest.mark.parametrize("stack", list(READ_TWO))
def test_draining_an_endless_stream_stops_at_the_time_bound(tmp_path: Path, server: str, stack: str) -> None:
    path = tmp_path / "endless.json"
    # not endless: the time bound ended the drain, and says so
    with pytest.warns(ssemock.SsemockWarning, match="did not arrive within drain_on_close=0.3 s"):
        with ssemock.use_cassette(path, record_mode="once", drain_on_close=0.3):
            got = READ_TWO[stack](f"{server}/forever")
    assert got == ["data: 0", "data: 1"]
    (x,) = ssemock.Cassette.load(path).interactions
    events = _data(x.response.body)
    assert not x.response.complete and x.response.error is None
    assert len(events) > 5 and events == [str(i) for i in range(len(events))]  # drained for a while, in order


@pytest.mark.parametrize("stack", ["httpx-sync", "httpx2-async", "aiohttp", "requests"])
def test_draining_stops_at_max_body_bytes(tmp_path: Path, server: str, stack: str) -> None:
    path = tmp_path / "capped.json"
    # the cap ended the drain (its warning), not the 30 s bound (whose warning never comes)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with ssemock.use_cassette(path, record_mode="once", max_body_bytes=200):  # drain up to 30 s
            READ_TWO[stack](f"{server}/forever")
    said = [str(w.message) for w in caught if issubclass(w.category, ssemock.SsemockWarning)]
    assert any("cut at max_body_bytes=200" in m for m in said), said
    assert not any("drain_on_close" in m for m in said), said
    (x,) = ssemock.Cassette.load(path).interactions
    assert len(x.response.body) == 200 and x.response.error["type"] == "RecordingTruncated"


def _cancelled_while_reading(url: str, stack: str) -> None:
    async def read() -> None:
        if stack == "aiohttp":
            async with aiohttp.ClientSession() as session, session.get(url) as resp:
                async for _ in resp.content.iter_any():
                    pass
        else:
            async with httpx.AsyncClient() as client, client.stream("GET", url) as r:
                async for _ in r.aiter_raw():
                    pass

    async def run() -> None:
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(read(), 0.2)

    asyncio.run(run())


def _interrupted_while_reading(url: str) -> None:
    with pytest.raises(KeyboardInterrupt):
        with httpx.Client() as client, client.stream("GET", url) as r:
            for i, _ in enumerate(r.iter_raw()):
                if i == 3:
                    raise KeyboardInterrupt


@pytest.mark.parametrize("stack", ["httpx-sync", "httpx-async", "aiohttp"])
def test_an_interrupt_or_a_cancelled_task_never_drains(tmp_path: Path, server: str, stack: str) -> None:
    path = tmp_path / "stopped.json"
    player = ssemock.use_cassette(path, record_mode="once")  # drain_on_close: up to 30 s
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with player:
            if stack == "httpx-sync":
                _interrupted_while_reading(f"{server}/forever")
            else:
                _cancelled_while_reading(f"{server}/forever", stack)
    # stopped at once: a drain of the endless stream would have run into its 30 s bound and said so
    assert not any("drain_on_close" in str(w.message) for w in caught)
    (recorder,) = player.recorders
    assert recorder.ended and not recorder.complete


def test_a_generator_closed_while_it_holds_the_stream_drains_it(tmp_path: Path, server: str) -> None:
    """What a streaming wrapper does when its caller stops iterating (GeneratorExit is no interrupt)."""

    def lines() -> Any:
        with httpx.Client() as client, client.stream("GET", f"{server}/ten") as r:
            yield from r.iter_lines()

    path = tmp_path / "wrapped.json"
    with ssemock.use_cassette(path, record_mode="once"):
        wrapper = lines()
        assert next(wrapper) == "data: 0"
        wrapper.close()
    (x,) = ssemock.Cassette.load(path).interactions
    assert x.response.complete and len(_data(x.response.body)) == 10


def test_a_stream_closed_after_its_terminator_is_complete_without_waiting(
    tmp_path: Path, server: str
) -> None:
    """The openai SDK closes right after [DONE]: complete as it is, nothing to drain."""
    path = tmp_path / "done.json"
    with ssemock.use_cassette(path, record_mode="once", drain_on_close=0.001) as player:
        with httpx.Client() as client, client.stream("POST", f"{server}/v1/chat/completions") as r:
            for line in r.iter_lines():
                if line == "data: [DONE]":
                    break
    (x,) = ssemock.Cassette.load(path).interactions
    assert x.response.complete and _data(x.response.body)[-1] == "[DONE]"
    assert player.drain_on_close == 0.001


def test_sdk_streams_closed_after_the_first_event_record_the_whole_stream(
    tmp_path: Path, server: str
) -> None:
    path = tmp_path / "sdks.json"
    with ssemock.use_cassette(path, record_mode="once"):
        client = anthropic.Anthropic(base_url=server, api_key="sk-ant-test-key-123456")
        with client.messages.stream(
            model="claude-test", max_tokens=64, messages=[{"role": "user", "content": "Hi"}]
        ) as stream:
            first = next(iter(stream))
        assert first.type == "message_start"

        async def openai_first() -> str:
            oa = openai.AsyncOpenAI(base_url=f"{server}/v1", api_key="sk-test-openai-key-123456")
            chunks = await oa.chat.completions.create(
                model="gpt-test", messages=[{"role": "user", "content": "Hi"}], stream=True
            )
            async for chunk in chunks:
                await chunks.close()
                return chunk.choices[0].delta.role or ""
            return ""

        assert asyncio.run(openai_first()) == "assistant"
    messages, chat = ssemock.Cassette.load(path).interactions
    for x, protocol in ((messages, "anthropic.messages"), (chat, "openai.chat")):
        assert x.response.complete
        result = ssemock.accumulate(ssemock.sse.decode([x.response.body]), protocol=protocol)
        assert result.complete and result.text == TEXT


@pytest.mark.parametrize("value", ["soon", -1, float("nan"), None])
def test_a_bad_drain_on_close_is_one_error_naming_it(tmp_path: Path, value: Any) -> None:
    with pytest.raises(
        ValueError, match=r"drain_on_close must be True, False or a number of seconds >= 0, got"
    ):
        ssemock.use_cassette(tmp_path / "c.json", record_mode="once", drain_on_close=value)


def test_drain_on_close_zero_is_off(tmp_path: Path, server: str) -> None:
    path = tmp_path / "zero.json"
    with ssemock.use_cassette(path, record_mode="once", drain_on_close=0):
        assert READ_TWO["httpx-sync"](f"{server}/ten") == ["data: 0", "data: 1"]
    assert not ssemock.Cassette.load(path).interactions[0].response.complete


def test_a_compressed_bomb_is_recorded_up_to_max_body_bytes_never_inflated_whole(tmp_path: Path) -> None:
    """32 MiB of zeros gzip-compressed (under 150 KiB on the wire): the recording inflates it a
    bounded piece at a time (`ssemock.framing.content_coding`) and stops at max_body_bytes."""
    import gzip
    import tracemalloc

    from starlette.applications import Starlette
    from starlette.responses import Response
    from starlette.routing import Route

    from ssemock.commands.loopback import running

    bomb = gzip.compress(b"\0" * (32 << 20), 1)

    async def serve_bomb(request: Any) -> Response:
        return Response(bomb, media_type="text/event-stream", headers={"content-encoding": "gzip"})

    path = tmp_path / "bomb.json"
    with running(Starlette(routes=[Route("/bomb", serve_bomb)])) as url:
        tracemalloc.start()
        try:
            with pytest.warns(ssemock.SsemockWarning, match="cut at max_body_bytes=1048576"):
                with ssemock.use_cassette(path, record_mode="once", max_body_bytes=1 << 20):
                    with httpx.Client() as client, client.stream("GET", url + "/bomb") as resp:
                        raw = b"".join(resp.iter_raw())
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert raw == bomb  # the client got every byte, as sent
    (x,) = ssemock.Cassette.load(path).interactions
    assert x.response.body == b"\0" * (1 << 20) and x.response.error["type"] == "RecordingTruncated"
    assert peak < 12 << 20  # the bomb, the limit and a few pieces; never the 32 MiB
