"""A session that spans connections on the timeline page (`ssemock.store.group`): one section per
group after its cassette's rows, one lane per connection (a REST exchange, a WebSocket session),
every part on one axis in the order it happened across them (the recording keeps the order, not
the connections' times against each other): a grey mark for an exchange or handshake, green for
what the client sent, blue for what the server sent; a tooltip on every mark and the details
table of the whole timeline. Everything shown is masked by the page and escaped here."""

from __future__ import annotations

import html
from typing import Any

from ...redaction.rules import mask_url
from ...store.model import Interaction

__all__ = ["group"]

_LANE, _GUTTER, _STEP = 22, 260, 14


def _label(x: Interaction) -> str:
    rest = mask_url(x.request.url).split("://", 1)[-1]
    path = "/" + rest.split("/", 1)[1] if "/" in rest else "/"
    kind = "WebSocket" if x.websocket is not None else x.request.method
    return f"{kind} {path}"


def group(g: dict[str, Any], interactions: list[Interaction], cassette: str) -> str:
    """The section of one group (`ssemock.commands.show_group.summarize_groups`'s result)."""
    lanes = {i: k for k, i in enumerate(g["interactions"])}
    width = _GUTTER + _STEP * (len(g["timeline"]) + 1)
    height = _LANE * len(lanes) + 6
    parts = []
    for i, k in lanes.items():
        y = 3 + k * _LANE
        parts.append(
            f'<rect class="lane {"sent" if k % 2 else "recv"}" x="0" y="{y}" width="100%" height="{_LANE}"/>'
        )
        label = html.escape(f"#{i} {_label(interactions[i])}"[:40])
        parts.append(f'<text class="lane-name" x="6" y="{y + 15}">{label}</text>')
    rows = []
    for n, p in enumerate(g["timeline"]):
        kind = {"send": "sent", "recv": "recv"}.get(p["direction"], "exchange")
        what = html.escape(p["what"])
        tip = f"part {p['seq']}: #{p['interaction']} {kind}: {what}"
        x, y = _GUTTER + _STEP * n, 3 + lanes[p["interaction"]] * _LANE
        parts.append(
            f'<rect class="part {kind}" data-seq="{p["seq"]}" data-interaction="{p["interaction"]}" '
            f'data-what="{what}" x="{x}" y="{y + 4}" width="{_STEP - 4}" height="{_LANE - 8}">'
            f"<title>{tip}</title></rect>"
        )
        arrow = {"sent": "→ sent", "recv": "← received"}.get(kind, "exchange")
        rows.append(
            f'<tr class="{kind}"><td>{p["seq"]}</td><td>#{p["interaction"]}</td><td>{arrow}</td>'
            f'<td class="what">{what}</td></tr>'
        )
    table = (
        f"<details><summary>details: {len(g['timeline'])} parts in order</summary>"
        '<table class="details"><tr><th>part</th><th>connection</th><th>direction</th>'
        f'<th class="what">what</th></tr>{"".join(rows)}</table></details>'
    )
    members = ", ".join(f"#{i}" for i in g["interactions"])
    return (
        f'<section class="interaction group" data-cassette="{html.escape(cassette)}" '
        f'data-group="{html.escape(g["id"])}" data-connections="{len(lanes)}">'
        f'<div class="req">session {html.escape(g["id"])} across {len(lanes)} connections ({members})</div>'
        '<div class="facts">one timeline: each part in the order it happened across the connections '
        "(a replay releases each server message only after what came before it on the others)</div>"
        f'<div class="strip"><svg class="group" width="{width}" height="{height}" role="img" '
        f'aria-label="the timeline of session {html.escape(g["id"])}">{"".join(parts)}</svg></div>'
        f"{table}</section>"
    )
