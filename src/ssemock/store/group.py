"""A session that spans connections, as a cassette keeps it: each interaction of the group (a
REST call, a WebSocket session) names the group and places its parts on the group's one timeline.

On disk (the interaction's ``group`` key; absent for an interaction on its own)::

    "group": {"id": "sess_123", "order": [4, 5, 9, 12]}

``order`` holds one sequence number for the exchange itself (an HTTP response, a WebSocket
handshake's 101), then, for a WebSocket session, one for each of its messages in order: numbers
count the group's parts in the order they happened across its connections (the recorder's one
clock), so a replay releases a connection's messages only once what came before them on the
other connections of the group has been released (`ssemock.plan.session_group`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .header_text import header_text_problem

__all__ = ["Group", "dump_group", "parse_group"]

_MAX_SEQ = 1 << 53


@dataclass
class Group:
    """The group an interaction belongs to and where its parts are on the group's timeline."""

    id: str
    """The group's name: the session id its connections share (GPT-Live's ``sess_...``)."""
    order: list[int] = field(default_factory=list)
    """The exchange's sequence number, then one per WebSocket message (see the module)."""


def dump_group(group: Group) -> dict[str, Any]:
    """The ``group`` object of a cassette interaction."""
    return {"id": group.id, "order": list(group.order)}


def parse_group(value: Any, messages: int | None) -> Group:
    """The model of an interaction's ``group`` object, for an interaction with ``messages``
    WebSocket messages (None: an HTTP interaction); ``ValueError`` naming the field at fault."""
    if not isinstance(value, dict):
        raise ValueError(f"group must be an object {{'id': ..., 'order': [...]}}, got {str(value)[:80]!r}")
    name, order = value.get("id"), value.get("order")
    if not isinstance(name, str) or not name or header_text_problem(name) is not None:
        raise ValueError(f"group.id must be a non-empty string on one line, got {str(name)[:80]!r}")
    if not isinstance(order, list) or not all(type(n) is int and 0 <= n < _MAX_SEQ for n in order):
        raise ValueError(
            f"group.order must be a list of non-negative integers, got {str(order)[:80]!r}: "
            "delete the group to replay the interaction on its own"
        )
    want = 1 + (messages or 0)
    if len(order) != want:
        what = f"the handshake and its {messages} messages" if messages is not None else "the exchange"
        raise ValueError(
            f"group.order has {len(order)} numbers, but the interaction needs {want} (one for {what}): "
            "record it again, or delete the group to replay it on its own"
        )
    for k, (a, b) in enumerate(zip(order, order[1:])):
        if not a < b:
            raise ValueError(
                f"group.order[{k + 1}] ({b}) is not after group.order[{k}] ({a}): a connection's parts "
                "keep their order; record it again, or delete the group"
            )
    return Group(name, list(order))
