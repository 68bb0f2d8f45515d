"""The demo's WebSocket line: the shipped Realtime session replayed under every wire chunking,
read by websockets' own client (its sans-IO protocol: the frame parser the SDKs use) and by a
naive hand-written frame reader that assumes one frame per read."""

from __future__ import annotations

import struct
from dataclasses import dataclass

from ...cassettes import load
from ...plan.websocket.variants import VariedConversation
from ...variants.websocket import chunking as ws_chunking

__all__ = ["WsRow", "naive_frames", "websocket_rows"]

SESSION = "realtime/openai_realtime_audio"


@dataclass
class WsRow:
    """One wire chunking: reads served, and whether each reader got every message."""

    chunking: str
    reads: int
    websockets_ok: bool
    naive_ok: bool
    naive_got: str


def naive_frames(reads: list[bytes]) -> list[bytes]:
    """A reader that takes every read as one whole frame (what hand-written clients often do)."""
    out = []
    for data in reads:
        length, at = data[1] & 0x7F, 2
        if length == 126:
            length, at = struct.unpack("!H", data[2:4])[0], 4
        elif length == 127:
            length, at = struct.unpack("!Q", data[2:10])[0], 10
        out.append(data[at : at + length])
    return out


def websocket_rows() -> list[WsRow]:
    """Every wire chunking of ``chunking="all"`` on the shipped Realtime session."""
    from websockets.client import ClientProtocol
    from websockets.frames import Frame, Opcode
    from websockets.uri import parse_uri

    (x,) = load(SESSION).interactions
    assert x.websocket is not None
    want = [m.payload for m in x.websocket.received()]
    rows = []
    for chunking in ws_chunking.ALL:
        conv = VariedConversation(x, chunking=chunking)
        client = ClientProtocol(parse_uri("ws://127.0.0.1/v1/realtime"))
        client.send_request(client.connect())
        client.receive_data(conv.handshake(b"".join(client.data_to_send())))
        reads = [r.data for r in conv.opening() if r.data is not None]
        for m in x.websocket.sent():
            client.send_text(m.payload)
            reads += [r.data for r in conv.feed(b"".join(client.data_to_send())) if r.data is not None]
        for data in reads:
            client.receive_data(data)
        got = [
            bytes(f.data)
            for f in client.events_received()
            if isinstance(f, Frame) and f.opcode == Opcode.TEXT
        ]
        try:
            naive = naive_frames(reads)
            naive_ok, detail = (
                naive == want,
                f"{sum(a == b for a, b in zip(naive, want))}/{len(want)} messages",
            )
        except (IndexError, struct.error) as exc:
            naive_ok, detail = False, f"{type(exc).__name__}"
        rows.append(WsRow(chunking.name, len(reads), got == want, naive_ok, "" if naive_ok else detail))
    return rows


def print_websocket_rows(console: object) -> list[WsRow]:
    """Print the WebSocket line of the demo (a table), or why it cannot run; the rows."""
    from rich import box
    from rich.console import Console
    from rich.table import Table

    assert isinstance(console, Console)
    try:
        rows = websocket_rows()
    except ImportError as exc:  # the websockets package is not installed
        console.print(f"(the WebSocket line needs the websockets package: {exc.name} is missing)")
        return []
    console.print(
        f"3. A WebSocket session ({SESSION}) replayed under every wire chunking, read by websockets' "
        "own client and by a naive frame reader that takes each read as one frame (✓ = every message)",
        soft_wrap=True,
        markup=False,
        highlight=False,
    )
    table = Table(
        box=box.SIMPLE_HEAD,
        show_edge=False,
        padding=(0, 1, 0, 0),
    )
    for name in ("chunking", "reads", "websockets", "naive frame reader"):
        table.add_column(name, no_wrap=True)
    for r in rows:
        table.add_row(
            r.chunking,
            str(r.reads),
            "✓" if r.websockets_ok else "✗",
            "✓" if r.naive_ok else f"✗ {r.naive_got}",
        )
    console.print(table)
    return rows
