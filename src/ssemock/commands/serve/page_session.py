"""A WebSocket session on the timeline page: two lanes on the page's shared axis, what the
client sent above the middle line and what the server sent below it, one bar per message at its
time (height: its size on the page's size scale; green sent, blue received, purple binary), its
JSON ``type`` written by it where there is room (two rows a lane; a run of one type named once),
pings and pongs as small grey marks on the middle line, and the close as a red line (dashed: no
close frame was seen); a tooltip on every mark, and the details table of every message and the
close. Everything shown is masked by the page and escaped here; the subprotocol is redacted as a
cassette stores it."""

from __future__ import annotations

import html
from typing import Any

from ...redaction.rules import mask_text, mask_url, redact_subprotocol
from ...store.model import Interaction
from ..show_websocket import summarize_session
from .page_axis import LANES, Heights, Scale, fmt, mark, two_lanes

__all__ = ["session", "session_end"]

_TOP, _LANE, _MID, _BOTTOM = LANES


def session_end(x: Interaction) -> float:
    """The latest time in the session: its last message, control frame or close."""
    ws = x.websocket
    assert ws is not None
    times = [m.t for m in ws.messages] + [n.t for n in ws.frame_map if n.kind != "fragments"]
    return max([*times, ws.close.t or 0.0])


def _close(s: dict[str, Any], t: float, scale: Scale) -> tuple[str, str]:
    """The close's mark and its words."""
    c = s["close"]
    if c["by"] is None:
        words = f"no close frame ({c['code']})"
    else:
        reason = f" {html.escape(repr(c['reason']))}" if c["reason"] else ""
        words = f"close {c['code']}{reason} by the {c['by']}{', clean' if c['clean'] else ''}"
    near_end = scale.x(t) > scale.x(scale.end) * 0.75
    label = mark(
        "text",
        t,
        scale,
        f'class="close" y="{_MID - 8:g}" text-anchor="{"end" if near_end else "start"}"',
        words,
        dx=-5 if near_end else 5,
    )
    line = mark(
        "line",
        t,
        scale,
        f'class="close{" none" if c["by"] is None else ""}" data-code="{c["code"]}" '
        f'y1="{_TOP - 2:g}" y2="{_BOTTOM + 2:g}"',
        f"<title>{words} at {fmt(t)}</title>",
    )
    return line + label, words


def session(x: Interaction, cassette: str, index: int, scale: Scale, heights: Heights) -> str:
    """The section of one WebSocket interaction: facts, the two lanes, the details table."""
    ws = x.websocket
    assert ws is not None
    s = summarize_session(x, index)
    parts = two_lanes(scale)
    counts = {"send": 0, "recv": 0}
    rows = []
    for m in s["messages"]:
        d, t = m["direction"], m["t_ms"] / 1000
        lane = "sent" if d == "send" else "recv"
        k = counts[d]
        counts[d] += 1
        h = heights(m["bytes"]) * _LANE / (heights.tallest + 4)
        what = html.escape(m["what"])
        tip = f"{lane} #{k} at {fmt(t)}: {m['type']}, {m['bytes']} bytes{f', {what}' if what else ''}"
        parts.append(
            mark(
                "rect",
                t,
                scale,
                f'class="msg {lane} {m["type"]}" data-size="{m["bytes"]}" data-type="{m["type"]}" '
                f'data-what="{what}" y="{(_MID - h if d == "send" else _MID):.1f}" width="3" height="{h:.1f}"',
                f"<title>{tip}</title>",
                dx=-1.5,
            )
        )
        if what:  # the page's script shows the labels that fit (`page._SCRIPT`: place)
            rows_y = f"{_TOP + 11:g} {_TOP + 23:g}" if d == "send" else f"{_BOTTOM - 4:g} {_BOTTOM - 16:g}"
            parts.append(
                mark("text", t, scale, f'class="what" data-lane="{lane}" data-rows="{rows_y}"', what, dx=3)
            )
        rows.append(
            f'<tr class="{lane}"><td>{k}</td><td>{fmt(t)}</td><td>{"→ sent" if d == "send" else "← received"}</td>'
            f'<td>{m["type"]}</td><td>{m["bytes"]}</td><td class="what">{what}</td></tr>'
        )
    for n in ws.frame_map:  # pings and pongs: a small grey mark on the middle line
        if n.kind in ("ping", "pong"):
            lane = "sent" if n.direction == "send" else "recv"
            parts.append(
                mark(
                    "rect",
                    n.t,
                    scale,
                    f'class="control {lane}" data-kind="{n.kind}" y="{_MID - 5 if lane == "sent" else _MID:g}" '
                    'width="5" height="5"',
                    f"<title>{lane} {n.kind} at {fmt(n.t)}, {len(n.data)} bytes</title>",
                    dx=-2.5,
                )
            )
    close_t = ws.close.t if ws.close.t is not None else (ws.messages[-1].t if ws.messages else 0.0)
    close_mark, words = _close(s, close_t, scale)
    parts.append(close_mark)
    rows.append(
        f'<tr class="close"><td></td><td>{fmt(close_t)}</td><td colspan="4" class="what">{words}</td></tr>'
    )
    table = (
        f"<details><summary>details: {len(ws.messages)} message(s) and the close</summary>"
        '<table class="details"><tr><th>#</th><th>at</th><th>direction</th><th>type</th><th>bytes</th>'
        f'<th class="what">what (JSON type)</th></tr>{"".join(rows)}</table></details>'
    )
    agreed = ws.subprotocol
    facts = [
        f"{x.response.status}",
        f"subprotocol {html.escape(mask_text(redact_subprotocol(agreed)))}" if agreed else "",
        f"{s['sent']} sent, {s['received']} received"
        + (f", {s['control_frames']} ping/pong" if s["control_frames"] else ""),
        words,
    ]
    data = (
        f'data-cassette="{html.escape(cassette)}" data-index="{index}" data-sent="{s["sent"]}" '
        f'data-received="{s["received"]}" data-close="{s["close"]["code"]}"'
    )
    return (
        f'<section class="interaction websocket" {data}><div class="req">#{index} WebSocket '
        f"{html.escape(mask_url(x.request.url))}</div>"
        f'<div class="facts">{" · ".join(f for f in facts if f)}</div>'
        f"{scale.svg(_BOTTOM + 18, index, ''.join(parts))}{table}</section>"
    )
