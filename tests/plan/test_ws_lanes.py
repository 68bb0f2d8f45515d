"""The lanes of a replayed Responses WebSocket session (issue 44 item 3), sans-IO: a recorded
two-lane session fed the client's frames in the recorded order and in another; the order log of
what the replay releases shows each lane in its recorded order, lanes interleaved as recorded or
as the sends release them, a steer released on its response's lane, the default lane waiting for
everything before it, and a session with no lane replayed as a tape (a property, with hypothesis)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ssemock.framing.websocket import FrameParser, Opcode, encode_frame
from ssemock.plan.conversation import Conversation, Release, UnmatchedMessageError
from ssemock.plan.websocket.variants import VariedConversation
from ssemock.store.model import Interaction, Request, Response
from ssemock.store.websocket import Close, Message, WebSocket

URL = "wss://api.openai.com/v1/responses"


def _ev(lane: str | None, kind: str, **fields: object) -> tuple[str, str]:
    body = {"type": kind, **fields, **({"stream_id": lane} if lane else {})}
    return ("recv", json.dumps(body))


def _created(lane: str | None, rid: str) -> tuple[str, str]:
    return _ev(lane, "response.created", response={"id": rid, "status": "in_progress", "output": []})


def _create(lane: str | None, prompt: str) -> tuple[str, str]:
    body = {
        "type": "response.create",
        "model": "gpt-5",
        "input": prompt,
        **({"stream_id": lane} if lane else {}),
    }
    return ("send", json.dumps(body))


def _steer(rid: str) -> tuple[str, str]:
    return ("send", json.dumps({"type": "response.steer", "previous_response_id": rid, "input": "Shorter."}))


def _delta(lane: str | None, text: str) -> tuple[str, str]:
    return _ev(lane, "response.output_text.delta", output_index=0, content_index=0, delta=text)


def _added(lane: str | None) -> tuple[str, str]:
    return _ev(lane, "response.output_item.added", output_index=0, item={"type": "message"})


def _done(lane: str | None, rid: str, status: str = "completed") -> tuple[str, str]:
    kind = "response.completed" if status == "completed" else "response.incomplete"
    why = {"reason": "steered"} if status != "completed" else None
    return _ev(lane, kind, response={"id": rid, "status": status, "output": [], "incomplete_details": why})


# a: created, added, delta; b's create; b: created ...; the steer at a; a's successor; b ends
RECORDED = [
    _create("a", "Tell a story."),
    _created("a", "resp_1"),
    _added("a"),
    _create("b", "Say hi."),
    _delta("a", "Once"),
    _created("b", "resp_2"),
    _steer("resp_1"),
    _added("b"),
    _ev("a", "response.steer.accepted", steer={"id": "st_1", "previous_response_id": "resp_1"}),
    _delta("b", "Hi"),
    _done("a", "resp_1", "incomplete"),
    _created("a", "resp_3"),
    _done("b", "resp_2"),
    _added("a"),
    _delta("a", "Short."),
    _done("a", "resp_3"),
]


def _interaction(order: list[tuple[str, str]]) -> Interaction:
    messages = [Message(d, 0.01 * k, "text", text) for k, (d, text) in enumerate(order)]
    ws = WebSocket(messages=messages, close=Close(1000, "", "client", True, 1.0))
    return Interaction(Request("GET", URL), Response(101, [("upgrade", "websocket")]), ws)


def _frame(text: str) -> bytes:
    return encode_frame(Opcode.TEXT, text.encode(), mask=b"\x01\x02\x03\x04")


def _said(releases: list[Release]) -> list[tuple[str, str]]:
    """The order log: (lane, type) of each server message released."""
    out = []
    for r in releases:
        for f in FrameParser(masked=False).feed(r.data or b""):
            if f.opcode == Opcode.TEXT:
                body = json.loads(f.payload)
                out.append((body.get("stream_id", "-"), body["type"]))
    return out


def _log(order: list[tuple[str, str]]) -> list[tuple[str, str]]:
    return [(json.loads(t).get("stream_id", "-"), json.loads(t)["type"]) for d, t in order if d == "recv"]


def _replay(conversation: Conversation, sends: list[str]) -> list[tuple[str, str]]:
    log = _said(conversation.opening())
    for text in sends:
        log += _said(conversation.feed(_frame(text)))
    return log


SENT = [t for d, t in RECORDED if d == "send"]


@pytest.mark.parametrize("kind", [Conversation, VariedConversation])
def test_sends_in_the_recorded_order_release_the_recorded_interleaving(kind: type[Conversation]) -> None:
    conversation = kind(_interaction(RECORDED))
    assert conversation.routes is not None
    assert _replay(conversation, SENT) == _log(RECORDED)
    assert conversation.unsent() == []


def test_the_other_lane_sent_first_goes_first_and_each_lane_keeps_its_order() -> None:
    conversation = Conversation(_interaction(RECORDED))
    log = _replay(conversation, [SENT[1], SENT[0], SENT[2]])
    assert log[:4] == [("b", "response.created"), ("b", "response.output_item.added"), ("b", "response.output_text.delta"),
                       ("b", "response.completed")]  # fmt: skip
    for lane in ("a", "b"):
        assert [e for e in log if e[0] == lane] == [e for e in _log(RECORDED) if e[0] == lane]
    assert conversation.unsent() == []


def test_in_the_recorded_order_what_came_after_the_steer_waits_for_it() -> None:
    conversation = Conversation(_interaction(RECORDED))
    log = _replay(conversation, SENT[:2])
    assert log == _log(RECORDED[: RECORDED.index(_steer("resp_1"))])  # the other lane's too
    assert _said(conversation.feed(_frame(SENT[2])))[:2] == [("b", "response.output_item.added"),
                                                            ("a", "response.steer.accepted")]  # fmt: skip


def test_out_of_order_a_steer_releases_its_response_s_lane() -> None:
    conversation = Conversation(_interaction(RECORDED))
    log = _replay(conversation, [SENT[1], SENT[0]])
    assert ("a", "response.steer.accepted") not in log and ("b", "response.completed") in log
    assert _said(conversation.feed(_frame(SENT[2])))[0] == ("a", "response.steer.accepted")


def test_a_message_is_matched_against_its_own_lane_s_next() -> None:
    conversation = Conversation(_interaction(RECORDED))
    conversation.opening()
    with pytest.raises(
        UnmatchedMessageError,
        match=r"(?s)closest recorded: client message #1: .*Say hi.*differs at \$\.input",
    ):
        conversation.feed(_frame(_create("b", "Say bye.")[1]))


def test_the_default_lane_waits_for_everything_before_it() -> None:
    order = [
        _create("a", "Tell a story."),
        _create(None, "Say hi."),
        _created(None, "resp_9"),
        _created("a", "resp_1"),
    ]
    conversation = Conversation(_interaction(order))
    sent = [t for d, t in order if d == "send"]
    assert _replay(conversation, [sent[1]]) == []  # the default lane's waits for a's create
    assert _said(conversation.feed(_frame(sent[0]))) == [("-", "response.created"), ("a", "response.created")]


@settings(deadline=None)  # (a loaded machine must not fail it: no wall clock)
@given(st.lists(st.sampled_from(["created", "delta", "send"]), max_size=12))
def test_a_session_with_no_lane_replays_as_a_tape(steps: list[str]) -> None:
    order = [_create(None, f"prompt {k}") if s == "send" else _delta(None, s) for k, s in enumerate(steps)]
    conversation = Conversation(_interaction(order))
    assert conversation.routes is None
    log, sent = _said(conversation.opening()), 0
    expected_prefix = []
    for d, t in order:
        if d == "send":
            break
        expected_prefix.append(t)
    assert len(log) == len(expected_prefix)
    for d, t in order:
        if d == "send":
            sent += 1
            log += _said(conversation.feed(_frame(t)))
    assert log == _log(order)


@settings(deadline=None)
@given(st.permutations(range(4)))
def test_any_send_order_keeps_each_lane_s_order_and_releases_everything(order: list[int]) -> None:
    """Four lanes, each a create and its response: whatever order the creates come in, every lane
    gets its events in its recorded order, and nothing is left unsent or unreleased."""
    lanes = [f"l{n}" for n in range(4)]
    recorded = [_create(lane, f"prompt {lane}") for lane in lanes]
    for k, lane in enumerate(lanes):  # interleaved: created, delta, done per lane, round-robin
        recorded += [_created(lane, f"resp_{k}")]
    recorded += [_delta(lane, lane) for lane in lanes] + [
        _done(lane, f"resp_{k}") for k, lane in enumerate(lanes)
    ]
    conversation = Conversation(_interaction(recorded))
    sends = [t for d, t in recorded if d == "send"]
    log = _replay(conversation, [sends[k] for k in order])
    for lane in lanes:
        assert [e for e in log if e[0] == lane] == [e for e in _log(recorded) if e[0] == lane]
    assert sorted(log) == sorted(_log(recorded)) and conversation.unsent() == []
    first = lanes[order[0]]
    assert log[0] == (first, "response.created")  # the lane sent first goes first
