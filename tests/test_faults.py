"""Faults through the real SDKs (sync and async) and httpx-sse over httpx, with the clients' own errors."""

from __future__ import annotations

import asyncio
from typing import Any

import anthropic
import httpx
import httpx2
import httpx_sse
import openai
import pytest
from conftest import FakeClock, sdk_transport_error
from streams import TEXT, anthropic_events, openai_chat_events, writes

import ssemock
from ssemock import faults

OPENAI_URL = "https://api.openai.com/v1/chat/completions"
ANTHROPIC_URL = "https://api.anthropic.com/v1/messages"


def cassette(url: str, events: list[bytes]) -> ssemock.Cassette:
    c = ssemock.Cassette()
    c.add("POST", url, writes(events), times=[0.01 * i for i in range(len(writes(events)))])
    return c


OPENAI = cassette(OPENAI_URL, openai_chat_events())
ANTHROPIC = cassette(ANTHROPIC_URL, anthropic_events())


def openai_text(is_async: bool, **client: Any) -> tuple[str, BaseException | None]:
    """Text deltas the app received, and the exception it got (if any)."""
    got: list[str] = []

    def on(chunk: Any) -> None:
        if chunk.choices:
            got.append(chunk.choices[0].delta.content or "")

    async def arun() -> None:
        c = openai.AsyncOpenAI(api_key="sk-test-faults", **client)
        async for chunk in await c.chat.completions.create(model="m", messages=[], stream=True):
            on(chunk)

    try:
        if is_async:
            asyncio.run(arun())
        else:
            c = openai.OpenAI(api_key="sk-test-faults", **client)
            for chunk in c.chat.completions.create(model="m", messages=[], stream=True):
                on(chunk)
    except Exception as exc:  # the test inspects it
        return "".join(got), exc
    return "".join(got), None


def anthropic_text(is_async: bool, **client: Any) -> tuple[str, BaseException | None]:
    async def arun() -> str:
        c = anthropic.AsyncAnthropic(api_key="sk-ant-test-faults", **client)
        async with c.messages.stream(model="m", max_tokens=8, messages=[]) as s:
            try:
                async for _ in s:
                    pass
            finally:
                partial.append(s.current_message_snapshot)
        return ""

    partial: list[Any] = []
    try:
        if is_async:
            asyncio.run(arun())
        else:
            c = anthropic.Anthropic(api_key="sk-ant-test-faults", **client)
            with c.messages.stream(model="m", max_tokens=8, messages=[]) as s:
                try:
                    for _ in s:
                        pass
                finally:
                    partial.append(s.current_message_snapshot)
    except Exception as exc:
        text = "".join(b.text for b in partial[0].content if b.type == "text") if partial else ""
        return text, exc
    return "".join(b.text for b in partial[0].content if b.type == "text"), None


SYNC_ASYNC = pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])


@SYNC_ASYNC
def test_disconnect_after_event_is_the_sdks_connection_error(is_async: bool) -> None:
    with ssemock.replay(OPENAI, faults=[faults.disconnect(after_event=3)]):
        text, exc = openai_text(is_async)
    assert isinstance(exc, openai.APIConnectionError)
    assert isinstance(exc.__cause__, httpx2.RemoteProtocolError)
    assert text == TEXT[:8]  # the two text deltas before the cut were delivered (event 0 is the role)
    with ssemock.replay(ANTHROPIC, faults=["disconnect:after_event=5"]):
        text, exc = anthropic_text(is_async)
    # the stack's own error: unwrapped by the anthropic SDK up to 2.16, its APIConnectionError's cause from 2.17
    assert isinstance(sdk_transport_error(exc, anthropic.APIConnectionError), httpx2.RemoteProtocolError)
    assert text == TEXT[:10]


@SYNC_ASYNC
def test_stall_past_read_timeout_raises_at_once(is_async: bool, fake_clock: FakeClock) -> None:
    with ssemock.replay(OPENAI, faults=[faults.stall(before_event=3, seconds=30)]):
        text, exc = openai_text(is_async, timeout=1.0, max_retries=0)
    assert isinstance(exc, openai.APITimeoutError)
    assert text == TEXT[:8]
    with ssemock.replay(ANTHROPIC, faults=[faults.stall(before_event=4, seconds=30)]):
        _, exc = anthropic_text(is_async, timeout=1.0, max_retries=0)
    assert isinstance(sdk_transport_error(exc, anthropic.APITimeoutError), httpx2.ReadTimeout)  # (as above)
    assert fake_clock.slept == []  # no sleeping: the timeouts were raised at once


def test_short_stall_is_skipped_when_instant_and_slept_when_recorded(fake_clock: FakeClock) -> None:
    with ssemock.replay(OPENAI, faults=["stall:before_event=2,seconds=0.3"]):
        assert openai_text(False, timeout=1.0) == (TEXT, None)
    assert fake_clock.slept == []  # instant: the stall is skipped
    with ssemock.replay(OPENAI, faults=["stall:before_event=2,seconds=0.3"], timing="scaled:1"):
        assert openai_text(False, timeout=1.0) == (TEXT, None)
    gaps = OPENAI.interactions[0].response.times[-1]
    # the stall and the recorded gaps were really waited for
    assert sum(fake_clock.slept) == pytest.approx(0.3 + gaps)


@SYNC_ASYNC
def test_429_then_success_retries_once(is_async: bool) -> None:
    fault = faults.sequence(faults.http_error(429, retry_after=0.01), None)
    with ssemock.replay(OPENAI, faults=[fault]) as player:
        assert openai_text(is_async, max_retries=2) == (TEXT, None)
    assert player.attempts == 2 and len(player.plays) == 2
    assert [p.interaction is OPENAI.interactions[0] for p in player.plays] == [True, True]
    assert player.unplayed() == []
    with ssemock.replay(
        ANTHROPIC, faults=["sequence:http_error:status=529,retry_after=0.01|as_recorded"]
    ) as player:
        assert anthropic_text(is_async, max_retries=2) == (TEXT, None)
    assert player.attempts == 2


def test_http_error_beyond_max_retries_is_the_sdks_error() -> None:
    with ssemock.replay(OPENAI, faults=[faults.http_error(429, retry_after=0.01)]) as player:
        _, exc = openai_text(False, max_retries=1)
    assert isinstance(exc, openai.RateLimitError) and player.attempts == 2
    assert exc.code == "rate_limit_exceeded"
    with ssemock.replay(ANTHROPIC, faults=[faults.http_error(529, retry_after=0.01)]) as player:
        _, exc = anthropic_text(False, max_retries=0)
    assert isinstance(exc, anthropic.InternalServerError) and exc.status_code == 529
    assert exc.body["error"]["type"] == "overloaded_error"  # type: ignore[index]


@SYNC_ASYNC
def test_anthropic_overloaded_error_event_mid_stream(is_async: bool) -> None:
    with ssemock.replay(ANTHROPIC, faults=[faults.error_event("overloaded_error", after_event=5)]):
        text, exc = anthropic_text(is_async)
    assert isinstance(exc, anthropic.APIStatusError)
    assert exc.body["error"]["type"] == "overloaded_error"  # type: ignore[index]
    assert text == TEXT[:10]  # the partial text is there


def test_openai_error_event_mid_stream() -> None:
    with ssemock.replay(OPENAI, faults=["error_event:kind=server_error,after_event=3"]):
        text, exc = openai_text(False)
    assert isinstance(exc, openai.APIError) and "server had an error" in str(exc)
    assert text == TEXT[:8]


def test_truncate_is_silent_for_the_sdk() -> None:
    """The SDK notices nothing: a stream without [DONE] looks complete to it."""
    with ssemock.replay(OPENAI, faults=[faults.truncate()]) as player:
        assert openai_text(False) == (TEXT, None)
    assert not player.plays[0].body.endswith(b"data: [DONE]\n\n")
    with ssemock.replay(OPENAI, faults=[faults.truncate("mid_event")]) as player:
        assert openai_text(False) == (TEXT, None)  # the cut event was the finish_reason one
    body = OPENAI.interactions[0].response.body
    cut = player.plays[0].body
    assert body.startswith(cut) and not cut.endswith(b"\n\n")
    assert len(cut) < len(body) - len(b"data: [DONE]\n\n")


@pytest.mark.parametrize("chunking", ["as_recorded", "bytewise", "mid_utf8"])
def test_faults_through_httpx_sse(chunking: str) -> None:
    events: list[str] = []
    with ssemock.replay(OPENAI, chunking=chunking, faults=["disconnect:after_event=4"]):
        with httpx.Client() as client, pytest.raises(httpx.RemoteProtocolError):
            with httpx_sse.connect_sse(client, "POST", OPENAI_URL) as source:
                for sse in source.iter_sse():
                    events.append(sse.data)
    assert len(events) == 4
    with ssemock.replay(OPENAI, chunking=chunking, faults=["stall:before_event=2,seconds=9"]):
        with httpx.Client(timeout=2.0) as client, pytest.raises(httpx.ReadTimeout):
            with httpx_sse.connect_sse(client, "POST", OPENAI_URL) as source:
                list(source.iter_sse())


def test_disconnect_after_byte_lands_on_that_byte() -> None:
    body = OPENAI.interactions[0].response.body
    with ssemock.replay(OPENAI, chunking="fixed:7", faults=[faults.disconnect(after_byte=100)]):
        got: list[bytes] = []
        with httpx2.Client() as client, pytest.raises(httpx2.RemoteProtocolError):
            with client.stream("POST", OPENAI_URL) as r:
                for c in r.iter_raw():
                    got.append(c)
    assert b"".join(got) == body[:100]


@pytest.mark.parametrize(
    "spec, name",
    [
        (faults.disconnect(after_event=3), "disconnect:after_event=3"),
        (faults.stall(before_event=2, seconds=5), "stall:before_event=2,seconds=5"),
        (faults.truncate(), "truncate"),
        (faults.truncate("mid_event"), "truncate:at=mid_event"),
        (faults.http_error(429, retry_after=0), "http_error:status=429,retry_after=0"),
        (
            faults.error_event("overloaded_error", after_event=2),
            "error_event:kind=overloaded_error,after_event=2",
        ),
        (faults.sequence(faults.http_error(500), None), "sequence:http_error:status=500|as_recorded"),
    ],
)
def test_fault_names_round_trip(spec: faults.Fault, name: str) -> None:
    assert str(spec) == name
    assert str(faults.get(name)) == name


def test_bad_fault_specs() -> None:
    with pytest.raises(ValueError, match="unknown fault"):
        faults.get("explode")
    with pytest.raises(ValueError, match="exactly one"):
        faults.disconnect()
    with pytest.raises(ValueError, match="4xx/5xx"):
        faults.http_error(200)
    with pytest.raises(ValueError, match="bad fault"):
        faults.get("stall:seconds=1")


def test_faults_from_marker_and_command_line(pytester: pytest.Pytester) -> None:
    c = ssemock.Cassette()
    c.add("GET", "https://example.test/s", [b"data: 1\n\n", b"data: 2\n\n", b"data: 3\n\n"])
    c.save(pytester.path / "cassettes" / "test_f" / "test_marker.json")
    c.save(pytester.path / "cassettes" / "test_f" / "test_cli.json")
    pytester.makepyfile(
        test_f="""
import httpx, pytest

@pytest.mark.ssemock(faults=["disconnect:after_event=1"])
def test_marker():
    with httpx.Client() as client, pytest.raises(httpx.RemoteProtocolError):
        with client.stream("GET", "https://example.test/s") as r:
            r.read()

def test_cli(ssemock):
    with httpx.Client() as client, pytest.raises(httpx.RemoteProtocolError):
        client.get("https://example.test/s")
"""
    )
    pytester.runpytest_inprocess("--ssemock-faults=disconnect:after_event=2").assert_outcomes(passed=2)


def test_an_unread_error_response_is_not_an_unconsumed_stream() -> None:
    fault = faults.sequence(faults.http_error(429, retry_after=0.01), None)
    with ssemock.replay(OPENAI, faults=[fault]) as player:
        assert openai_text(False, max_retries=1) == (TEXT, None)
    assert len(player.plays) == 2 and player.unconsumed() == []


@pytest.mark.parametrize(
    "spec, says",
    [
        ("disconnect:after_event=x", "after_event must be a whole number >= 0, got 'x'"),
        ("disconnect:after_event=1.5", "after_event must be a whole number >= 0, got 1.5"),
        ("disconnect:after_event=true", "after_event must be a whole number >= 0, got True"),
        ("disconnect:after_byte=-1", "after_byte must be a whole number >= 0, got -1"),
        ("stall:before_event=1,seconds=-2", "seconds must be a number of seconds from 0 to 86400, got -2"),
        ("stall:before_event=1,seconds=1e308", "seconds must be a number of seconds from 0 to 86400"),
        ("stall:before_event=1,seconds=1e400", "seconds must be a number of seconds"),
        ("stall:before_event=-1,seconds=1", "before_event must be a whole number >= 0"),
        ("stall:seconds=1", "stall needs before_event="),
        ("http_error:status=200", "status must be a 4xx/5xx status code, got 200"),
        ("http_error:status=429.0", "status must be a 4xx/5xx status code, got 429.0"),
        ("http_error:status=429,retry_after=soon", "retry_after must be a number of seconds"),
        ("http_error:429", "write its parameters as key=value"),
        ("truncate:at=mid-event", "did you mean 'mid_event'?"),
        ("error_event:kind=", "kind must be an error type name"),
        ("error_event:after_event=x", "after_event must be a whole number >= 0, got 'x'"),
        (
            "disconnect:after_evnt=1",
            "unknown parameter of disconnect 'after_evnt': did you mean 'after_event'?",
        ),
        ("disconnect:after_event=1,after_event=2", "after_event is given twice"),
        (
            "disconect:after_event=1",
            "unknown fault 'disconect:after_event=1': did you mean 'disconnect:after_event=1'?",
        ),
        ("sequence:http_error:status=429|disconect:after_byte=1", "did you mean 'disconnect:after_byte=1'?"),
    ],
)
def test_bad_fault_values_are_one_value_error_when_parsed(spec: str, says: str) -> None:
    """Every bad fault spec fails in faults.get (at collection, when the plugin parses it), not on
    each request served; the message names the spec and what is wrong."""
    with pytest.raises(ValueError) as info:
        faults.resolve(spec)
    assert says in str(info.value)
    assert spec.split("|")[-1].split(":")[0] in str(info.value)


@pytest.mark.parametrize(
    "make, says",
    [
        (lambda: faults.disconnect(after_event="3"), "whole number"),  # type: ignore[arg-type]
        (lambda: faults.disconnect(after_byte=-5), "whole number >= 0"),
        (lambda: faults.stall(2, float("nan")), "number of seconds"),
        (lambda: faults.stall(2, float("inf")), "number of seconds"),
        (lambda: faults.http_error(429, retry_after=-1), "retry_after"),
        (lambda: faults.http_error(429, headers={"x": "a\r\nb"}), "one-line"),
        (lambda: faults.http_error(True), "4xx/5xx"),  # type: ignore[arg-type]
        (lambda: faults.sequence(5), "a fault is a name"),  # type: ignore[arg-type]
        (lambda: faults.resolve(5), "a fault is a name"),  # type: ignore[arg-type]
    ],
)
def test_bad_fault_values_from_python_too(make: Any, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        make()


def test_a_bad_fault_fails_the_player_before_any_request() -> None:
    with pytest.raises(ValueError, match="after_event must be a whole number"):
        ssemock.replay(OPENAI, faults="disconnect:after_event=x")
