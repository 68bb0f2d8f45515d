"""A gRPC call on the timeline page: its method path, then two lanes on the page's shared axis as a
WebSocket session has (`page_session`), the client's messages above the middle line and the
server's below it, one bar per message at its time (height: its size on the page's size scale),
and the status as a line where it arrived (red unless ``OK``); a tooltip on every mark, and the
details table of every message and the status. Everything shown is masked by the page and escaped
here (a status's details may hold anything the server wrote)."""

from __future__ import annotations

import html

from ...redaction.rules import mask_text, mask_url
from ...store.model import Interaction
from ..show_grpc import summarize_call
from .page_axis import LANES, Heights, Scale, fmt, mark, two_lanes

__all__ = ["call", "call_end", "call_sizes"]

_TOP, _LANE, _MID, _BOTTOM = LANES


def call_end(x: Interaction) -> float:
    """The latest time in the call: its last message or its status."""
    c = x.grpc
    assert c is not None
    return max([*(m.t for m in c.messages), c.status.t or 0.0])


def call_sizes(x: Interaction) -> list[int]:
    """Each message's size in bytes, both ways (the page's size scale takes them in)."""
    assert x.grpc is not None
    return [len(m.data) for m in x.grpc.messages]


def call(x: Interaction, cassette: str, index: int, scale: Scale, heights: Heights) -> str:
    """The section of one gRPC interaction: facts, the two lanes, the details table."""
    c = x.grpc
    assert c is not None
    s = summarize_call(x, index)
    parts = two_lanes(scale)
    counts = {"send": 0, "recv": 0}
    rows = []
    for m in s["message_list"]:
        d, t = m["direction"], (m["t_ms"] or 0.0) / 1000
        lane = "sent" if d == "send" else "recv"
        k = counts[d]
        counts[d] += 1
        h = heights(m["bytes"]) * _LANE / (heights.tallest + 4)
        excerpt = html.escape(m["excerpt"])
        parts.append(
            mark(
                "rect",
                t,
                scale,
                f'class="msg {lane}" data-size="{m["bytes"]}" '
                f'y="{(_MID - h if d == "send" else _MID):.1f}" width="3" height="{h:.1f}"',
                f"<title>{lane} #{k} at {fmt(t)}: {m['bytes']} bytes</title>",
                dx=-1.5,
            )
        )
        rows.append(
            f'<tr class="{lane}"><td>{k}</td><td>{fmt(t)}</td><td>{"→ sent" if d == "send" else "← received"}</td>'
            f'<td>{m["bytes"]}</td><td class="what">{excerpt}</td></tr>'
        )
    status = s["status"]
    words = f"status {status['code']}" + (
        f" {html.escape(repr(status['details']))}" if status["details"] else ""
    )
    end_t = c.status.t if c.status.t is not None else call_end(x)
    near_end = scale.x(end_t) > scale.x(scale.end) * 0.75
    failed = "" if status["code"] == "OK" else " none"  # a failed status: dashed, as a close without a frame
    parts.append(
        mark(
            "line",
            end_t,
            scale,
            f'class="close status{failed}" data-code="{status["code"]}" y1="{_TOP - 2:g}" y2="{_BOTTOM + 2:g}"',
            f"<title>{words} at {fmt(end_t)}</title>",
        )
        + mark(
            "text",
            end_t,
            scale,
            f'class="close" y="{_MID - 8:g}" text-anchor="{"end" if near_end else "start"}"',
            words,
            dx=-5 if near_end else 5,
        )
    )
    rows.append(
        f'<tr class="close"><td></td><td>{fmt(end_t)}</td><td colspan="3" class="what">{words}</td></tr>'
    )
    table = (
        f"<details><summary>details: {len(c.messages)} message(s) and the status</summary>"
        '<table class="details"><tr><th>#</th><th>at</th><th>direction</th><th>bytes</th>'
        f'<th class="what">excerpt</th></tr>{"".join(rows)}</table></details>'
    )
    facts = [
        c.kind,
        f"{s['messages']} message(s): {s['sent']} sent, {s['received']} received",
        f"first response at {fmt(s['first_response_ms'] / 1000)}"
        if s["first_response_ms"] is not None
        else "",
        words,
    ]
    data = (
        f'data-cassette="{html.escape(cassette)}" data-index="{index}" data-method="{html.escape(c.method)}" '
        f'data-kind="{c.kind}" data-sent="{s["sent"]}" data-received="{s["received"]}" '
        f'data-status="{status["code"]}"'
    )
    return (
        f'<section class="interaction grpc" {data}><div class="req">#{index} gRPC '
        f"{html.escape(mask_text(c.method))} <small>{html.escape(mask_url(x.request.url))}</small></div>"
        f'<div class="facts">{" · ".join(f for f in facts if f)}</div>'
        f"{scale.svg(_BOTTOM + 18, index, ''.join(parts))}{table}</section>"
    )
