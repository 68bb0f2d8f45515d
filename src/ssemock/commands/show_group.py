"""``ssemock show`` for a session that spans connections (`ssemock.store.group`): the group's
connections and its one timeline, every part (a REST exchange, a handshake, a message) in the
order it happened across them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..redaction.rules import mask_url
from ..store.model import Interaction
from .show_websocket import message_what

__all__ = ["format_group", "summarize_groups"]


def _path(url: str) -> str:
    rest = url.split("://", 1)[-1]
    return "/" + rest.split("/", 1)[1] if "/" in rest else "/"


def _part(x: Interaction, part: int) -> dict[str, Any]:
    if part == 0:
        kind = "handshake" if x.websocket is not None else "exchange"
        return {
            "direction": None,
            "what": f"{kind} {x.request.method} {_path(mask_url(x.request.url))} -> {x.response.status}",
        }
    assert x.websocket is not None
    m = x.websocket.messages[part - 1]
    return {"direction": m.direction, "what": message_what(m)}


def summarize_groups(interactions: Sequence[Interaction], shown: Sequence[int]) -> list[dict[str, Any]]:
    """Each group holding one of the ``shown`` interactions, JSON-able: its id, its connections
    (interaction indexes), and its timeline (``seq``, ``interaction``, ``part``, ``direction``
    None for an exchange, ``what``)."""
    names = list(dict.fromkeys(g.id for i in shown if (g := interactions[i].group) is not None))
    out = []
    for name in names:
        members = [i for i, x in enumerate(interactions) if x.group is not None and x.group.id == name]
        timeline = sorted(
            (seq, i, part)
            for i in members
            for part, seq in enumerate(interactions[i].group.order)  # type: ignore[union-attr]
        )
        out.append(
            {
                "id": name,
                "interactions": members,
                "timeline": [
                    {"seq": seq, "interaction": i, "part": part, **_part(interactions[i], part)}
                    for seq, i, part in timeline
                ],
            }
        )
    return out


def format_group(g: dict[str, Any]) -> str:
    """The human form of one of `summarize_groups`' results: one line per part, in order."""
    members = ", ".join(f"#{i}" for i in g["interactions"])
    lines = [f"session {g['id']} across {len(g['interactions'])} connections ({members}), as it happened:"]
    for p in g["timeline"]:
        arrow = {"send": "->", "recv": "<-"}.get(p["direction"], "  ")
        lines.append(f"    {p['seq']:>5}  #{p['interaction']:<3} {arrow} {p['what']}")
    return "\n".join(lines)
