"""anthropic.sessions, a long-lived event stream (issue 45 item 4): an Anthropic managed-agents
session's events (``GET /v1/sessions/{id}/events/stream``) through the anthropic SDK's
``client.beta.sessions.events.stream``, recorded from a loopback stand-in and replayed, labelled
and folded as the SDK's own types read it; a recorded idle minute kept alive by pings replays
under ``recorded`` and ``scaled:F`` timing with the client's read timeout honoured at once (a
fake clock: nothing really waits), and ``instant`` says what it skipped."""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import pytest
from conftest import FakeClock, sdk_transport_error

import ssemock
from ssemock.commands.cli import main
from ssemock.commands.loopback import running
from ssemock.commands.serve import app
from ssemock.protocols import anthropic_sessions as sessions
from ssemock.sse import decode

TEXT = "Done: the tests pass — 合格."
CALLS = [{"name": "bash", "arguments": {"command": "pytest -q"}}]


def _stream(idle: float = 60.0) -> ssemock.Cassette:
    """A turn with an idle minute kept alive by a ping every 15 s."""
    return sessions.synthesize(TEXT, tool_calls=CALLS, idle=idle, keepalive=15.0)


def _client(base: str = "https://api.anthropic.com", read: float = 30.0) -> anthropic.Anthropic:
    timeout = httpx2.Timeout(5.0, read=read)
    return anthropic.Anthropic(api_key="sk-ant-test-0000", base_url=base, timeout=timeout, max_retries=0)


def _read(client: anthropic.Anthropic) -> list[Any]:
    """The session's events as the SDK types them, until the turn ends (the stream stays open)."""
    got = []
    with client.beta.sessions.events.stream("sesn_test") as stream:
        for event in stream:
            got.append(event)
            if event.type == "session.status_idle":
                break
    return got


def _as_anthropic(request: ssemock.Request) -> ssemock.Request:
    """Recorded as sent to Anthropic's API (the stand-in's port varies)."""
    path = request.url.split("/", 3)[3]
    headers = [(k, v) for k, v in request.headers if k not in ("host", "user-agent")]
    return ssemock.Request(request.method, f"https://api.anthropic.com/{path}", headers, request.body)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, list[Any]]]:
    """The stream recorded through the SDK from a loopback stand-in (ssemock serve of the synthesized turn)."""
    path = tmp_path_factory.mktemp("sessions") / "turn.json"
    with running(app(_stream(idle=0.0))) as base:
        with ssemock.use_cassette(path, record_mode="all", before_record_request=_as_anthropic):
            live = _read(_client(base))
    yield path, live


def test_recorded_through_the_sdk_it_is_labelled_and_folds_to_what_the_sdk_read(
    recorded: tuple[Path, list[Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    path, live = recorded
    assert [e.type for e in live] == [
        "session.status_running",
        "agent.message",
        "agent.tool_use",
        "session.usage",
        "session.status_idle",
    ]
    (x,) = ssemock.Cassette.load(path).interactions
    folded = ssemock.accumulate(decode([x.response.body]), "anthropic.sessions")
    assert isinstance(folded, sessions.SessionResult)
    assert folded.types == [e.type for e in live]
    assert folded.text == "".join(b.text for e in live if e.type == "agent.message" for b in e.content)
    assert [(c.name, json.loads(c.arguments)) for c in folded.tool_calls] == [
        (e.name, e.input) for e in live if e.type == "agent.tool_use"
    ]
    (usage,) = [e.usage for e in live if e.type == "session.usage"]
    assert folded.usage == usage.model_dump(exclude_none=True)
    assert (folded.status, folded.stop_reason, folded.complete) == ("idle", "end_turn", True)
    assert main(["show", str(path), "--json"]) == 0
    (shown,) = json.loads(capsys.readouterr().out)["shown"]
    assert (shown["protocol"], shown["text"]) == ("anthropic.sessions", TEXT)


@pytest.mark.parametrize("chunking", ssemock.chunking.ALL, ids=str)
def test_replayed_through_the_sdk_under_every_chunking(
    recorded: tuple[Path, list[Any]], chunking: Any
) -> None:
    path, live = recorded
    with ssemock.use_cassette(path, chunking=chunking, transform="keepalive") as player:
        got = _read(_client())
    assert got == live
    assert player.expected.result.text == TEXT


def test_recorded_timing_waits_the_idle_minute_and_its_pings(fake_clock: FakeClock) -> None:
    """Pings every 15 s keep a 30 s read timeout alive: the SDK gets the whole turn, and replay
    slept the recorded minute (on the fake clock)."""
    with ssemock.replay(_stream(), timing="recorded"):
        got = _read(_client(read=30.0))
    assert got[-1].type == "session.status_idle" and got[1].content[0].text == TEXT
    assert sum(fake_clock.slept) == pytest.approx(60.17, abs=0.01)
    assert max(fake_clock.slept) == pytest.approx(15.0, abs=0.01)


@pytest.mark.parametrize(("timing", "read"), [("recorded", 10.0), ("scaled:2", 25.0)])
def test_a_gap_past_the_read_timeout_raises_the_sdks_timeout_at_once(
    fake_clock: FakeClock, timing: str, read: float
) -> None:
    """A keep-alive every 15 s (30 s scaled by 2) is too seldom for this read timeout: the SDK's
    own stack's timeout (httpx2's, mid-stream; the SDK's APITimeoutError's cause from anthropic
    2.17) comes at the first such gap, without waiting it out."""
    with ssemock.replay(_stream(), timing=timing) as player:
        with pytest.raises((httpx2.ReadTimeout, anthropic.APITimeoutError)) as raised:
            _read(_client(read=read))
    assert isinstance(sdk_transport_error(raised.value, anthropic.APITimeoutError), httpx2.ReadTimeout)
    assert sum(fake_clock.slept) < 1.0  # only the first chunk's 50 ms (scaled) was waited
    assert player.plays[0].stream is not None and player.plays[0].stream.failed


def test_scaled_timing_keeps_the_gaps_meaning(fake_clock: FakeClock) -> None:
    with ssemock.replay(_stream(), timing="scaled:0.5"):
        got = _read(_client(read=10.0))  # 15 s pings at half speed: 7.5 s apart, within 10 s
    assert got[-1].type == "session.status_idle"
    assert sum(fake_clock.slept) == pytest.approx(30.085, abs=0.01)


def test_instant_says_what_it_skipped(fake_clock: FakeClock) -> None:
    with pytest.warns(
        ssemock.SsemockWarning, match=r"skipped a recorded silence of 15 s \(before chunk 2 of 9\)"
    ):
        with ssemock.replay(_stream()) as player:
            got = _read(_client(read=10.0))
    assert got[-1].type == "session.status_idle" and fake_clock.slept == []
    assert player.plays[0].skipped == (15.0, 1)
    with warnings.catch_warnings():  # a read timeout the gaps fit in: nothing to say
        warnings.simplefilter("error", ssemock.SsemockWarning)
        with ssemock.replay(_stream()) as player:
            _read(_client(read=30.0))
    assert player.plays[0].skipped == (15.0, 1)


def test_detection_and_the_fold_of_previews_and_errors() -> None:
    protocol = ssemock.protocols.detect(url="https://api.anthropic.com/v1/sessions/sesn_1/events/stream")
    assert protocol is not None and protocol.name == "anthropic.sessions"
    assert ssemock.protocols.detect(url="https://api.anthropic.com/v1/messages").name == "anthropic.messages"  # type: ignore[union-attr]
    body = b"".join(
        [
            b'event: event_start\ndata: {"type":"event_start","event":{"type":"agent.message","id":"e1"}}\n\n',
            b'event: event_delta\ndata: {"type":"event_delta","event_id":"e1",'
            b'"delta":{"type":"content_delta","index":0,"content":{"type":"text","text":"Hel"}}}\n\n',
            b"event: ping\ndata: {}\n\n",
            b'event: event_delta\ndata: {"type":"event_delta","event_id":"e1",'
            b'"delta":{"type":"content_delta","index":0,"content":{"type":"text","text":"lo"}}}\n\n',
            sessions.error_event(ssemock.protocols.StreamError("overloaded_error", "busy")),
        ]
    )
    folded = ssemock.accumulate(decode([body]), "anthropic.sessions")
    assert folded.previews == {"e1": "Hello"} and folded.text == ""  # no event concluded the preview
    assert folded.error == {"type": "overloaded_error", "message": "busy"} and not folded.complete
    assert folded.types == ["event_start", "event_delta", "event_delta"]  # the ping left out
