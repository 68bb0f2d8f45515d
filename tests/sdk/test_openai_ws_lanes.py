"""The Responses API's WebSocket lanes through openai's own client (issue 44 item 3):
``client.responses.connect()`` with ``response.create(stream_id=...)`` (two responses on one
socket, interleaved) and ``response.steer`` (accepted while its response runs, which ends
``incomplete``/``steered`` and its successor starts; failed once it ended), recorded against a
loopback stand-in (tests/ws_servers_lanes.py) that validates every event with the SDK's types,
then replayed with the stand-in stopped and every socket connection audited (none is made), under
every WebSocket variant of the registry; ``accumulate_session`` gives one result per response."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
from openai.lib.responses_websocket import AsyncResponsesWebSocketSession, ResponsesWebSocketLimits
from socket_audit import connections
from ws_servers import running
from ws_servers_lanes import lanes

import ssemock
from ssemock.accumulate import accumulate_session
from ssemock.plan.errors import SsemockWarning
from ssemock.plan.websocket.expect import SessionExpected
from ssemock.plan.websocket.variants import VariantRefused
from ssemock.variants.websocket import chunking as ws_chunking
from ssemock.variants.websocket import faults as ws_faults

KEY = "sk-test-lanes44openai0123456789"


@pytest.fixture
def audited() -> Iterator[list[Any]]:
    """The socket connections made while it is active (Python's audit hook, ``socket.connect``)."""
    with connections() as made:
        yield made


Seen = dict[str, list[Any]]
LIMITS = ResponsesWebSocketLimits(
    max_lanes=4, max_events_per_lane=64, max_events=128, max_bytes_per_lane=1 << 20, max_bytes=1 << 21
)


def _two_lanes_and_a_steer(base: str, first: str = "story") -> Seen:
    """Two lanes on one socket: a story (steered once its first words arrive) and a hello (the
    ``first`` one's create sent first); then a steer at the hello, which has ended. What each lane
    saw, in order; ``order``, the lane of each event as it came; ``raw``, each event as sent."""
    client = openai.OpenAI(api_key=KEY, websocket_base_url=base)
    seen: Seen = {"story": [], "hello": [], "order": [], "raw": []}
    creates = {"story": "Tell a story, steer me.", "hello": "Say hello."}
    with client.responses.connect() as conn:
        for stream_id in sorted(creates, key=lambda lane: lane != first):
            conn.response.create(stream_id=stream_id, model="gpt-5", input=creates[stream_id], store=False)
        ids: dict[str, str] = {}
        done = 0
        for event in conn:
            seen["raw"].append(event.to_dict())
            lane = getattr(event, "stream_id", None) or "default"
            seen[lane].append((event.type, getattr(event, "delta", None)))
            seen["order"].append(lane)
            if event.type == "response.created":
                ids.setdefault(lane, event.response.id)
            if event.type == "response.output_text.delta" and lane == "story" and event.delta == "Once":
                conn.response.steer(input="Make it a short story.", previous_response_id=ids["story"])
            if event.type == "response.incomplete":
                seen[lane].append(event.response.incomplete_details.reason)  # type: ignore[union-attr]
            if event.type == "response.completed":
                done += 1
                if done == 2:
                    conn.response.steer(input="And goodbye.", previous_response_id=ids["hello"])
            if event.type == "response.steer.failed":
                seen[lane].append(event.error.code)
                break
    return seen


async def _lanes_async(base: str, first: str) -> Seen:
    """The SDK's lane session, one task per lane, the ``first`` lane's create sent first."""
    client = openai.AsyncOpenAI(api_key=KEY, websocket_base_url=base)
    seen: Seen = {"story": [], "hello": []}
    async with (
        client.responses.connect() as conn,
        AsyncResponsesWebSocketSession(conn, limits=LIMITS) as session,
    ):
        story, hello = session.lane("story"), session.lane("hello")
        go = asyncio.Event()

        async def tell() -> None:
            if first != "story":
                await go.wait()
            await story.send({"type": "response.create", "model": "gpt-5", "input": "Tell a story, steer me.",
                              "store": False})  # fmt: skip
            go.set()
            while True:
                event = await story.recv()
                seen["story"].append((event.type, getattr(event, "delta", None)))
                if event.type == "response.created" and len(seen["story"]) == 1:
                    rid = event.response.id
                if event.type == "response.output_text.delta" and event.delta == "Once":
                    await story.send(
                        {
                            "type": "response.steer",
                            "previous_response_id": rid,
                            "input": "Make it a short story.",
                        }
                    )
                if event.type == "response.completed":
                    return

        async def greet() -> None:
            if first != "hello":
                await go.wait()
            await hello.send(
                {"type": "response.create", "model": "gpt-5", "input": "Say hello.", "store": False}
            )
            go.set()
            response = await hello.get_final_response()
            seen["hello"].append((response.status, response.output_text))

        await asyncio.gather(tell(), greet())
    return seen


def _per_lane(seen: Seen) -> Seen:
    return {lane: events for lane, events in seen.items() if lane not in ("order", "raw")}


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, Seen]:
    """The two-lane session recorded once through the sync client (the stand-in stopped after)."""
    path = tmp_path_factory.mktemp("lanes") / "lanes.json"
    with running(lanes) as server:
        base = server.url("/v1")
        with ssemock.use_cassette(path, record_mode="once"):
            live = _two_lanes_and_a_steer(base)
    assert KEY not in path.read_text()
    return path, base, live


def test_the_lanes_interleave_and_replay_offline_as_recorded(
    recorded: tuple[Path, str, Seen], audited: list[Any]
) -> None:
    path, base, live = recorded
    switches = sum(a != b for a, b in zip(live["order"], live["order"][1:]))
    assert set(live["order"]) == {"story", "hello"} and switches >= 2  # the lanes interleave
    assert live["story"][-1] != "steered" and "steered" in live["story"]
    assert live["hello"][-1] == "response_not_active"
    with ssemock.use_cassette(path, record_mode="none", allowed_hosts=[]) as player:
        again = _two_lanes_and_a_steer(base)
    assert _per_lane(again) == _per_lane(live)
    assert player.conversations[0].unsent() == []
    assert audited == []


def test_accumulate_session_gives_one_result_per_response(recorded: tuple[Path, str, Seen]) -> None:
    path, _, _ = recorded
    (x,) = ssemock.Cassette.load(path).interactions
    assert x.websocket is not None
    results = accumulate_session([m.payload for m in x.websocket.received()], url=x.request.url)
    got = sorted((r.id, r.text, r.complete, r.finish_reason) for r in results)
    assert got == [
        ("resp_L1", "Once", True, "steered"),
        ("resp_L2", "Hello there.", True, "completed"),
        ("resp_L3", "The fox ran home.", True, "completed"),
    ]


def test_expected_holds_one_result_per_response(recorded: tuple[Path, str, Seen]) -> None:
    """The replay's reference: a response picked by its id, each lane's own text."""
    path, base, _ = recorded
    with ssemock.use_cassette(path, allowed_hosts=[]) as player:
        _two_lanes_and_a_steer(base)
        expected = player.expected
        assert isinstance(expected, SessionExpected)
        expected.assert_text("Hello there.", response="resp_L2")
        expected.assert_accumulates({"text": "Once", "finish_reason": "steered"}, response="resp_L1")
        with pytest.raises(
            ssemock.StreamAssertionError, match=r"at character 4.*\n.*expected: 'The fox ran home\.'"
        ):
            expected.assert_text("The cat ran home.", response="resp_L3")
        with pytest.raises(
            ssemock.StreamAssertionError,
            match="no response 'resp_X'; its responses: resp_L1, resp_L2, resp_L3",
        ):
            expected.assert_text("", response="resp_X")


def test_assert_events_compares_each_lane_in_its_order(recorded: tuple[Path, str, Seen]) -> None:
    """The hello's create sent first: the events come in another order than recorded across the
    lanes, each lane's in its own; ``assert_events`` takes them, and fails a swap within a lane."""
    path, base, live = recorded
    with ssemock.use_cassette(path, record_mode="none", allowed_hosts=[]) as player:
        again = _two_lanes_and_a_steer(base, first="hello")
        expected = player.expected
        assert isinstance(expected, SessionExpected)
        assert _per_lane(again) == _per_lane(live)
        assert again["raw"] != expected.events  # not the recorded order across the lanes
        expected.assert_events(again["raw"])
        hello = [p for p, lane in enumerate(again["order"]) if lane == "hello"]
        swapped = list(again["raw"])
        swapped[hello[1]], swapped[hello[2]] = swapped[hello[2]], swapped[hello[1]]
        server = [k for k, e in enumerate(expected.events) if e.get("stream_id") == "hello"]
        with pytest.raises(
            ssemock.StreamAssertionError,
            match=rf"server message {server[1]} of the WebSocket session differs on lane 'hello' "
            r"\(the lane's message 1\)",
        ):
            expected.assert_events(swapped)
        with pytest.raises(
            ssemock.StreamAssertionError,
            match=rf"expected {len(server)} server messages on lane 'hello' .* got {len(server) - 1}; "
            rf"the first missing is server message {server[-1]}: ",
        ):
            expected.assert_events([e for p, e in enumerate(again["raw"]) if p != hello[-1]])


@pytest.mark.parametrize("first", ["story", "hello"])
def test_the_sdk_lane_session_replays_whichever_lane_sends_first(
    tmp_path: Path, audited: list[Any], first: str
) -> None:
    """Recorded with the story's create first; replayed with either first: each lane's events
    come in its recorded order, released by that lane's own sends."""
    path = tmp_path / "session.json"
    with running(lanes) as server:
        base = server.url("/v1")
        with ssemock.use_cassette(path, record_mode="once"):
            live = asyncio.run(_lanes_async(base, "story"))
    assert live["hello"] == [("completed", "Hello there.")]
    assert ("response.incomplete", None) in live["story"] and live["story"][-1] == (
        "response.completed",
        None,
    )
    audited.clear()
    with ssemock.use_cassette(path, record_mode="none", allowed_hosts=[]) as player:
        again = asyncio.run(_lanes_async(base, first))
    assert again == live
    assert player.conversations[0].unsent() == []
    assert audited == []


@pytest.mark.parametrize("transform", [None, "fragments:3", "pings"])
@pytest.mark.parametrize("chunking", ws_chunking.names())
def test_the_lanes_replay_under_every_variant(
    recorded: tuple[Path, str, Seen], chunking: str, transform: str | None
) -> None:
    path, base, live = recorded
    with ssemock.use_cassette(
        path, record_mode="none", allowed_hosts=[], chunking=chunking, transform=transform
    ):
        assert _per_lane(_two_lanes_and_a_steer(base)) == _per_lane(live)


def test_an_error_event_aimed_at_a_lane_is_that_lane_s_own(recorded: tuple[Path, str, Seen]) -> None:
    """The error comes on the lane, after its second event, parsed by the SDK as the mode's
    error event; the lanes go on as recorded."""
    path, base, live = recorded
    with ssemock.use_cassette(path, allowed_hosts=[], faults="error_event:after_message=2,lane=hello"):
        again = _two_lanes_and_a_steer(base)
    assert again["hello"] == [*live["hello"][:2], ("error", None), *live["hello"][2:]]
    assert again["story"] == live["story"]


def test_a_drop_aimed_at_a_lane_cuts_that_lane_only(recorded: tuple[Path, str, Seen]) -> None:
    path, base, live = recorded
    client = openai.OpenAI(api_key=KEY, websocket_base_url=base)
    with (
        pytest.warns(SsemockWarning, match="never sent in this replay"),  # (the steer at the hello)
        ssemock.use_cassette(path, allowed_hosts=[], faults="drop:after_message=2,lane=hello"),
    ):
        with client.responses.connect() as conn:
            conn.response.create(
                stream_id="story", model="gpt-5", input="Tell a story, steer me.", store=False
            )
            conn.response.create(stream_id="hello", model="gpt-5", input="Say hello.", store=False)
            got: Seen = {"story": [], "hello": []}
            for event in conn:
                got[str(event.stream_id)].append((event.type, getattr(event, "delta", None)))
                if event.type == "response.output_text.delta" and event.delta == "Once":
                    conn.response.steer(input="Make it a short story.", previous_response_id="resp_L1")
                if event.type == "response.completed":
                    break
    assert got["hello"] == live["hello"][:2]  # the lane's first two events, then nothing
    assert got["story"] == [e for e in live["story"] if isinstance(e, tuple)]  # the other lane, whole


def test_lane_names_a_lane_the_session_has(recorded: tuple[Path, str, Seen]) -> None:
    assert str(ws_faults.get("drop:after_message=2,lane=hello")) == "drop:after_message=2,lane=hello"
    with pytest.raises(ValueError, match="lane= takes after_message"):
        ws_faults.get("drop:after_byte=9,lane=hello")
    path, base, _ = recorded
    with pytest.raises(VariantRefused, match=r"interaction #0 .*: .*no lane 'nope'; its lanes: hello, story"):
        with ssemock.use_cassette(path, allowed_hosts=[], faults="error_event:after_message=1,lane=nope"):
            _two_lanes_and_a_steer(base)
