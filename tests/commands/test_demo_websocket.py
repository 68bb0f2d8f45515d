"""The demo's WebSocket line: the shipped Realtime session under every wire chunking, websockets'
own client right under each, the naive one-frame-per-read reader wrong wherever reads split or
join frames."""

from __future__ import annotations

import io

from rich.console import Console

from ssemock.commands.demo.websocket import print_websocket_rows, websocket_rows
from ssemock.variants.websocket import chunking as ws_chunking


def test_websockets_reads_every_chunking_and_the_naive_reader_fails_where_reads_cut_frames() -> None:
    rows = {r.chunking: r for r in websocket_rows()}
    assert list(rows) == list(ws_chunking.names())
    assert all(r.websockets_ok for r in rows.values())
    assert {name for name, r in rows.items() if r.naive_ok} == {"as_recorded", "per_event"}
    assert (
        rows["bytewise"].reads
        > rows["mid_header"].reads
        > rows["as_recorded"].reads
        > rows["coalesced"].reads
    )


def test_the_printed_table() -> None:
    out = io.StringIO()
    rows = print_websocket_rows(Console(file=out, width=120))
    text = out.getvalue()
    assert (
        "3. A WebSocket session (realtime/openai_realtime_audio) replayed under every wire chunking" in text
    )
    assert len(rows) == len(ws_chunking.ALL) and "✗ IndexError" in text and "mid_header" in text
