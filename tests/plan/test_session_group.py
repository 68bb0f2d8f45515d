"""A session spanning connections replayed (issue 44 item 2), sans-IO: conversations of one
recorded group (`ssemock.plan.session_group`) release a server message only once every part
recorded before it on the other connections was released or happened; what another connection's
progress frees reaches the stack through ``on_release``; a connection that ended frees the rest;
an order log (what each release carried, in order), never time. And the join of a recording
(`ssemock.plan.session_join`): the interactions sharing a GPT-Live session id, numbered by when
each part happened."""

from __future__ import annotations

import json

import pytest

from ssemock.framing.websocket import FrameParser, Opcode, encode_frame
from ssemock.plan.conversation import Conversation, Release
from ssemock.plan.session_group import groups_of
from ssemock.plan.session_join import join
from ssemock.plan.websocket.variants import VariedConversation
from ssemock.store.group import Group
from ssemock.store.model import Interaction, Request, Response
from ssemock.store.websocket import Close, Message, WebSocket

HEAD = (
    b"GET /v1/live/sessions HTTP/1.1\r\nhost: api.openai.com\r\nupgrade: websocket\r\n"
    b"connection: Upgrade\r\nsec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
)


def _session(url: str, messages: list[tuple[str, str]], order: list[int]) -> Interaction:
    ws = WebSocket(
        [Message(d, 0.01 * k, "text", json.dumps({"type": what})) for k, (d, what) in enumerate(messages)],
        close=Close(1000, "", "client", True, 1.0),
    )
    return Interaction(Request("GET", url), Response(101), ws, Group("sess_1", order))


def _texts(releases: list[Release]) -> list[str]:
    data = b"".join(r.data for r in releases if r.data is not None)
    return [
        json.loads(f.payload)["type"] for f in FrameParser(masked=False).feed(data) if f.opcode == Opcode.TEXT
    ]


def _send(what: str) -> bytes:
    return encode_frame(Opcode.TEXT, json.dumps({"type": what}).encode(), mask=b"abcd")


CASSETTE = [
    # the primary: started, then (after the client's close) closed
    _session(
        "wss://api.openai.com/v1/live/sessions",
        [
            ("send", "session.start"),
            ("recv", "session.started"),
            ("send", "session.close"),
            ("recv", "session.closed"),
        ],
        [0, 1, 2, 4, 6],
    ),
    # the sideband: its first event came after the primary's close was sent
    _session(
        "wss://api.openai.com/v1/live/sessions/sess_1/attach",
        [("recv", "session.updated"), ("recv", "session.instructions.appended")],
        [3, 5, 7],
    ),
]


def test_a_message_is_held_until_what_came_before_it_on_the_others_was_released() -> None:
    groups = groups_of(CASSETTE, "the cassette")
    primary = Conversation(CASSETTE[0], 0, group=groups[0])
    sideband = Conversation(CASSETTE[1], 1, group=groups[1])
    log: list[tuple[str, list[str]]] = []
    primary.on_release = lambda rs: log.append(("primary pushed", _texts(rs)))
    sideband.on_release = lambda rs: log.append(("sideband pushed", _texts(rs)))
    primary.handshake(HEAD)
    log.append(("primary opened", _texts(primary.opening())))
    sideband.handshake(HEAD)
    log.append(("sideband opened", _texts(sideband.opening())))  # held: the primary's close not yet sent
    log.append(("primary fed", _texts(primary.feed(_send("session.start")))))
    log.append(("primary fed", _texts(primary.feed(_send("session.close")))))
    assert log == [
        ("primary opened", []),
        ("sideband opened", []),
        ("primary fed", ["session.started"]),
        # the client's close let the sideband's first event go (pushed to its stack); the
        # primary's answer, recorded after that event, went next, and let the sideband's last go
        # (pushed while the primary's feed had not returned yet: logged before it)
        ("sideband pushed", ["session.updated"]),
        ("sideband pushed", ["session.instructions.appended"]),
        ("primary fed", ["session.closed"]),
    ]
    seqs = [groups[0].orders[i][part] for i, part in groups[0].log]
    recv = {2, 5, 6, 7}  # the server messages' numbers: released in the recorded order
    assert [s for s in seqs if s in recv] == sorted(recv)


def test_a_connection_that_ended_holds_the_others_back_no_more() -> None:
    groups = groups_of(CASSETTE, "the cassette")
    primary = Conversation(CASSETTE[0], 0, group=groups[0])
    sideband = Conversation(CASSETTE[1], 1, group=groups[1])
    pushed: list[str] = []
    sideband.on_release = lambda rs: pushed.extend(_texts(rs))
    primary.handshake(HEAD)
    primary.opening()
    sideband.handshake(HEAD)
    assert _texts(sideband.opening()) == []
    primary.feed(_send("session.start"))
    assert pushed == []
    primary.close_for_mismatch()  # the primary ended before its close: nothing more to wait for
    assert pushed == ["session.updated", "session.instructions.appended"]


def test_a_conversation_on_its_own_is_released_as_before() -> None:
    alone = Interaction(CASSETTE[1].request, CASSETTE[1].response, CASSETTE[1].websocket)
    conversation = Conversation(alone, 0)
    conversation.handshake(HEAD)
    assert _texts(conversation.opening()) == ["session.updated", "session.instructions.appended"]


def test_two_parts_of_a_group_with_one_number_are_refused_naming_them() -> None:
    twice = [CASSETTE[0], _session(CASSETTE[1].request.url, [("recv", "a"), ("recv", "b")], [3, 4, 7])]
    with pytest.raises(
        ValueError, match=r"x\.json: interactions #0 and #1 of the group 'sess_1' both hold part 4"
    ):
        groups_of(twice, "x.json")


def _http(url: str, body: bytes, times: list[float]) -> Interaction:
    return Interaction(
        Request("POST", url), Response(200, [("content-type", "application/json")], body, [len(body)], times)
    )


def test_join_groups_the_connections_of_one_session_in_the_order_they_happened() -> None:
    create = _http("https://api.openai.com/v1/live/sessions", b'{"session":{"id":"sess_9"}}', [0.05])
    primary = Interaction(
        Request("GET", "wss://api.openai.com/v1/live/sessions"),
        Response(101),
        WebSocket([Message("send", 0.01, "text", '{"type":"session.start"}'),
                   Message("recv", 0.3, "text", '{"type":"session.started","session":{"id":"sess_9"}}')]),
    )  # fmt: skip
    sideband = Interaction(
        Request("GET", "wss://api.openai.com/v1/live/sessions/sess_9/attach"),
        Response(101),
        WebSocket([Message("recv", 0.02, "text", '{"type":"session.updated"}')]),
    )
    other = _http("https://api.openai.com/v1/chat/completions", b'{"session":{"id":"sess_9"}}', [0.01])
    recorded = [(10.0, 10.05, create), (10.1, 10.12, primary), (10.2, 10.21, sideband), (10.3, 10.31, other)]
    join(recorded)
    assert other.group is None  # not GPT-Live's: its answer's id joins nothing
    assert [x.group for x in (create, primary, sideband)] == [
        Group("sess_9", [0]),
        Group("sess_9", [1, 2, 5]),  # the handshake at 10.12, start at 10.11 kept after it, started at 10.4
        Group("sess_9", [3, 4]),  # the handshake at 10.21, updated at 10.22
    ]


def test_join_leaves_a_connection_that_shares_no_session_alone() -> None:
    alone = Interaction(
        Request("GET", "wss://api.openai.com/v1/live/sessions"),
        Response(101),
        WebSocket([Message("recv", 0.3, "text", '{"type":"session.started","session":{"id":"sess_2"}}')]),
        Group("stale", [0, 1]),
    )
    join([(1.0, 1.1, alone)])
    assert alone.group is None


def test_a_connection_whose_handshake_a_fault_refuses_holds_the_others_back_no_more() -> None:
    """A ``handshake:`` fault aimed at the sideband: the refusal is all it serves (a stack may
    never ask for its opening), and the primary's answer recorded after the sideband's first
    event goes when the client's close is matched."""
    groups = groups_of(CASSETTE, "the cassette")
    primary = Conversation(CASSETTE[0], 0, group=groups[0])
    sideband = VariedConversation(CASSETTE[1], 1, group=groups[1], fault="handshake:status=503")
    primary.handshake(HEAD)
    primary.opening()
    assert sideband.handshake(HEAD).startswith(b"HTTP/1.1 503 ")
    assert _texts(primary.feed(_send("session.start"))) == ["session.started"]
    assert _texts(primary.feed(_send("session.close"))) == ["session.closed"]
