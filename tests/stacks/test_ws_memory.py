"""The asyncio in-memory transport of a replayed WebSocket (`ssemock.stacks.websocket.memory`) takes
a group's reads as one run (`ssemock.plan.release.Reads`) and hands the client's protocol a read
at a time, as it handed the same reads released one by one: one ``data_received`` a frame, in
order, under every timing; the answer to the client's close ends the run where it came. The client
is websockets' sans-IO protocol behind a plain asyncio protocol, so every read is seen."""

from __future__ import annotations

import asyncio
import json

import pytest
from websockets.client import ClientProtocol
from websockets.frames import Opcode
from websockets.uri import parse_uri

from ssemock.framing.websocket import FrameParser
from ssemock.plan.websocket.variants import VariedConversation
from ssemock.stacks.websocket.memory import MemoryTransport
from ssemock.store.model import Interaction, Request, Response
from ssemock.store.websocket import Close, Message, WebSocket
from ssemock.variants.timing import get as get_timing

URL = "ws://127.0.0.1:9/v1/realtime?model=gpt-realtime"
CREATED = json.dumps({"type": "session.created", "session": {"id": "sess_1"}})
CREATE = json.dumps({"type": "response.create"})
DELTAS = [json.dumps({"type": "response.output_text.delta", "delta": f"word{k} "}) for k in range(5)]


def interaction() -> Interaction:
    messages = [Message("recv", 0.0, "text", CREATED), Message("send", 0.01, "text", CREATE)]
    messages += [Message("recv", 0.02 + 0.001 * k, "text", d) for k, d in enumerate(DELTAS)]
    ws = WebSocket(messages=messages, close=Close(1000, "", "client", True, 0.1))
    return Interaction(Request("GET", URL), Response(101, [("upgrade", "websocket")]), ws)


class Client(asyncio.Protocol):
    """websockets' client protocol on the transport: every read kept (None: the end of the
    stream); it closes (1000) after read number ``close_after``."""

    def __init__(self, close_after: int) -> None:
        self.ws = ClientProtocol(parse_uri(URL))
        self.reads: list[bytes | None] = []
        self.close_after = close_after
        self.ended = asyncio.get_running_loop().create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, MemoryTransport)
        self.transport = transport

    def send(self) -> None:
        out = b"".join(self.ws.data_to_send())
        if out:
            self.transport.write(out)

    def data_received(self, data: bytes) -> None:
        self.reads.append(data)
        self.ws.receive_data(data)
        if len(self.reads) == self.close_after:
            self.ws.send_close(1000)
        self.send()

    def eof_received(self) -> bool:
        self.reads.append(None)
        self.ws.receive_eof()
        if not self.ended.done():
            self.ended.set_result(None)
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        return None


async def served(close_after: int, timing: str) -> Client:
    """The session replayed to `Client` over the transport until its end."""
    client = Client(close_after)
    conversation = VariedConversation(interaction())
    transport = MemoryTransport(asyncio.get_running_loop(), client, conversation, get_timing(timing))
    client.connection_made(transport)
    client.ws.send_request(client.ws.connect())
    client.send()  # the handshake: answered with the 101 and session.created
    await asyncio.wait_for(opened(client), 10)
    client.ws.send_text(CREATE.encode())
    client.send()  # releases the deltas: one group, one run
    await asyncio.wait_for(client.ended, 10)
    return client


async def opened(client: Client) -> None:
    while len(client.reads) < 2:  # the 101, then session.created
        await asyncio.sleep(0)


def texts(reads: list[bytes | None]) -> list[str]:
    return [f.payload.decode() for r in reads if r for f in FrameParser(masked=False).feed(r)]


@pytest.mark.parametrize("timing", ["instant", "scaled:0.01"])
def test_a_run_is_handed_one_read_a_frame_in_order(timing: str) -> None:
    client = asyncio.run(served(2 + len(DELTAS), timing))
    head, *frames, echo, end = client.reads
    assert head is not None and head.startswith(b"HTTP/1.1 101 ") and end is None
    assert texts(frames) == [CREATED, *DELTAS]  # a read each: one whole frame in every read
    assert [len(FrameParser(masked=False).feed(r)) for r in frames if r] == [1] * (1 + len(DELTAS))
    assert echo is not None and FrameParser(masked=False).feed(echo)[0].opcode == Opcode.CLOSE


@pytest.mark.parametrize("timing", ["instant", "scaled:0.01"])
def test_the_answer_to_the_clients_close_ends_the_run_where_it_came(timing: str) -> None:
    client = asyncio.run(served(4, timing))  # closes after the second delta
    assert texts(client.reads[1:4]) == [CREATED, *DELTAS[:2]]
    echo, end = client.reads[4:]  # the rest of the run is never handed
    assert echo is not None and FrameParser(masked=False).feed(echo)[0].opcode == Opcode.CLOSE
    assert end is None and client.ws.close_code == 1000
