"""A recorded Realtime session replayed under every WebSocket variant, to websockets' own client
(its sans-IO protocol: the real handshake, frame parser, deflate, pongs and close handling): the
messages are unchanged under every chunking and re-framing, each fault ends the session the way
it says, and the reference accumulator reads the same responses."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pytest
from websockets.client import ClientProtocol
from websockets.extensions.permessage_deflate import ClientPerMessageDeflateFactory
from websockets.frames import Opcode as WsOpcode
from websockets.http11 import Response
from websockets.uri import parse_uri

from ssemock.accumulate import accumulate_session
from ssemock.plan.release import Reads, Release, each_read
from ssemock.plan.websocket.variants import VariantRefused, VariedConversation
from ssemock.store.model import Interaction, Request
from ssemock.store.model import Response as StoredResponse
from ssemock.store.websocket import Close, Message, WebSocket
from ssemock.variants.chunking import at
from ssemock.variants.websocket import chunking as ws_chunking

URL = "ws://127.0.0.1:9/v1/realtime?model=gpt-realtime"


def _ev(kind: str, **fields: object) -> str:
    return json.dumps({"type": kind, "event_id": f"event_{kind}", **fields}, ensure_ascii=False)


SENT = [_ev("session.update", session={"type": "realtime"}), _ev("response.create")]
RECEIVED = [
    _ev("session.created", session={"id": "sess_1"}),
    _ev("session.updated", session={"id": "sess_1"}),
    _ev("response.created", response={"id": "resp_1", "status": "in_progress", "output": []}),
    *(
        _ev("response.output_text.delta", response_id="resp_1", item_id="i", output_index=0, content_index=0, delta=d)
        for d in ("Grüße ", "aus ", "東京 🌏")
    ),
    _ev("response.done", response={"id": "resp_1", "status": "completed", "output": [], "usage": {"total_tokens": 9}}),
]  # fmt: skip


def interaction(close: Close | None = None) -> Interaction:
    order = [("recv", RECEIVED[0]), ("send", SENT[0]), ("recv", RECEIVED[1]), ("send", SENT[1])]
    order += [("recv", r) for r in RECEIVED[2:]]
    messages = [Message(d, 0.01 * k, "text", text) for k, (d, text) in enumerate(order)]
    ws = WebSocket(messages=messages, close=close or Close(1000, "", "client", True, 1.0))
    return Interaction(Request("GET", URL), StoredResponse(101, [("upgrade", "websocket")]), ws)


@dataclass
class Seen:
    messages: list[str] = field(default_factory=list)
    reads: int = 0
    served: list[tuple[float, bytes | None, float, bool]] = field(default_factory=list)
    """Each read served (a run's one by one): its delay, bytes, stall and whether it ended what was pending."""
    close_code: int | None = None
    status: int = 101


def drive(conv: VariedConversation, *, deflate: bool = False, answer_pings: bool = True) -> Seen:
    """The client's side: handshake, every recorded message sent in turn, then a close."""
    client = ClientProtocol(
        parse_uri(URL), extensions=[ClientPerMessageDeflateFactory()] if deflate else None
    )
    client.send_request(client.connect())
    seen = Seen()

    def deliver(releases: list) -> None:  # type: ignore[type-arg]
        for r in each_read(releases):
            seen.served.append((r.delay, r.data, r.stall, r.ends_pending))
            if r.data is None:
                client.receive_eof()
                continue
            seen.reads += 1
            client.receive_data(r.data)
            answer = b"".join(client.data_to_send())
            if answer and answer_pings:  # its pongs (and close echo) go back to the server
                deliver(conv.feed(answer))

    client.receive_data(conv.handshake(b"".join(client.data_to_send())))
    deliver(conv.opening())
    for text in SENT:
        if client.state.name != "OPEN":
            break
        client.send_text(text.encode())
        deliver(conv.feed(b"".join(client.data_to_send())))
    if client.state.name == "OPEN":
        client.send_close(1000)
        deliver(conv.feed(b"".join(client.data_to_send())))
    parts: list[bytes] = []
    for event in client.events_received():  # frames, inflated: join each message's
        if isinstance(event, Response):
            seen.status = event.status_code
        elif event.opcode in (WsOpcode.TEXT, WsOpcode.CONT):
            parts.append(bytes(event.data))
            if event.fin:
                seen.messages.append(b"".join(parts).decode())
                parts = []
    seen.close_code = client.close_code
    return seen


@pytest.mark.parametrize("chunking", ws_chunking.names())
@pytest.mark.parametrize("reframing", ["as_recorded", "fragments:3", "pings", "no_deflate"])
def test_every_chunking_and_reframing_leaves_the_session_unchanged(chunking: str, reframing: str) -> None:
    conv = VariedConversation(interaction(), chunking=chunking, reframing=reframing)
    seen = drive(conv)
    assert seen.messages == RECEIVED and seen.close_code == 1000 and not conv.mismatches
    assert conv.unanswered_pings() == [] and conv.unsent() == []
    if chunking == "bytewise":
        assert seen.reads >= sum(len(m.encode()) for m in RECEIVED)
    [result] = accumulate_session(seen.messages, url=URL)
    assert result.text == "Grüße aus 東京 🌏" and result.complete


def test_deflate_is_agreed_when_the_client_offers_it_and_refused_with_the_reason_otherwise() -> None:
    conv = VariedConversation(interaction(), chunking="mid_header", reframing="deflate")
    assert drive(conv, deflate=True).messages == RECEIVED
    with pytest.raises(VariantRefused, match="offered no permessage-deflate.*openai SDK offers none"):
        drive(VariedConversation(interaction(), reframing="deflate"))


def test_an_unanswered_ping_is_reported() -> None:
    conv = VariedConversation(interaction(), reframing="pings")
    drive(conv, answer_pings=False)
    assert conv.unanswered_pings() and all(p.startswith(b"ssemock-ping-") for p in conv.unanswered_pings())


@pytest.mark.parametrize("code", [1000, 1001, 1011, 1012, 1013, 4000])
def test_close_after_message_n(code: int) -> None:
    seen = drive(VariedConversation(interaction(), fault=f"close:code={code},after_message=3"))
    assert seen.messages == RECEIVED[:3] and seen.close_code == code


@pytest.mark.parametrize("fault, count", [("drop:after_message=4", 4), ("drop:after_byte=120", 1)])
def test_drop_is_1006(fault: str, count: int) -> None:
    seen = drive(VariedConversation(interaction(), fault=fault, chunking="bytewise"))
    assert seen.messages == RECEIVED[:count] and seen.close_code == 1006


def test_handshake_refused_and_the_reconnect_sequence() -> None:
    fault = "sequence:handshake:status=429,retry_after=1|as_recorded"
    first = drive(VariedConversation(interaction(), fault=fault, attempt=0))
    assert first.status == 429 and first.messages == []
    second = drive(VariedConversation(interaction(), fault=fault, attempt=1))
    assert second.messages == RECEIVED


def test_the_provider_s_error_event_and_a_stall() -> None:
    conv = VariedConversation(interaction(), fault="error_event:after_message=3")
    seen = drive(conv)
    assert json.loads(seen.messages[3])["type"] == "error" and seen.messages[4:] == RECEIVED[3:]
    first, error = accumulate_session(seen.messages[:4] + [], url=URL)[:1] + [None]  # the error joins resp_1
    assert first.error is not None and first.error["code"] == "server_error"
    stalled = VariedConversation(
        interaction(), fault="stall:before_message=4,seconds=30", chunking="coalesced"
    )
    releases = stalled.opening()
    assert [r.delay for r in releases] == [0.0]
    assert stalled.at_byte(0).startswith("wire byte 0: frame 0 (text of server message 0")


def test_a_recorded_read_map_is_kept_as_recorded() -> None:
    x = interaction()
    frames = VariedConversation(x)._wire  # the re-encoded wire: one frame per message
    assert x.websocket is not None
    # two messages came in one read twice (never across the client's message: a read cannot)
    x.websocket.wire.ends = [f.end for k, f in enumerate(frames.frames) if k not in (2, 4)]
    conv = VariedConversation(x)
    seen = drive(conv)
    assert seen.messages == RECEIVED and conv.reads == x.websocket.wire.ends


@pytest.mark.parametrize(
    "variant",
    [
        *({"chunking": c} for c in ws_chunking.names()),
        *({"reframing": r} for r in ("fragments:3", "pings")),
        {"chunking": at(5, 90, 91, 400)},
        {"fault": "close:code=1011,after_message=3"},
        {"fault": "drop:after_byte=120", "chunking": "bytewise"},
        {"fault": "error_event:after_message=3"},
        {"fault": "stall:before_message=4,seconds=30"},
    ],
)
def test_a_stack_that_takes_runs_is_served_the_same_reads(variant: dict[str, Any]) -> None:
    """A conversation whose stack takes runs of reads (`Conversation.runs`, the asyncio
    transport) serves, read for read, what one released a read at a time serves: the same bytes,
    delays and stalls, in the same order."""
    one_by_one = drive(VariedConversation(interaction(), **variant))
    runs = VariedConversation(interaction(), runs=True, **variant)
    taken: list[Release] = []
    feed = runs.feed

    def kept(data: bytes) -> list[Release]:
        out = feed(data)
        taken.extend(out)
        return out

    runs.feed = kept  # type: ignore[method-assign]
    assert drive(runs).served == one_by_one.served and one_by_one.served
    several = [r for r in taken if isinstance(r, Reads) and len(r.pieces) > 1]
    assert several or variant.get("chunking") not in ("as_recorded", "bytewise")  # a group's reads: one run
