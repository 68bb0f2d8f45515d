"""Recording a session that spans connections: the interactions recorded in one run that share a
session id (a REST create and its socket, a GPT-Live primary, its sideband and its forks: the
protocol says which ids a connection belongs to, ``Protocol.session_ids``) are joined in one
group, each part numbered by when it happened on the recorder's one clock
(`ssemock.store.group.Group`). An interaction that shares no id with another is left alone."""

from __future__ import annotations

import heapq
from collections.abc import Iterator, Sequence
from typing import Any

import orjson

from .. import protocols
from ..store.group import Group
from ..store.model import Interaction

__all__ = ["Recorded", "join"]

Recorded = tuple[float, float, Interaction]
"""A recorded interaction with the clock's reading when its recording began (its times count from
there) and when its exchange was done (an HTTP response's last chunk, a handshake's 101)."""


def _received(x: Interaction) -> Iterator[Any]:
    """What ``x`` received, each parsed as JSON (None: not JSON), parsed only as it is read."""
    if x.websocket is not None:
        yield from (m.json() for m in x.websocket.messages if m.direction == "recv")
    elif x.response.body:
        try:
            yield orjson.loads(x.response.body)
        except orjson.JSONDecodeError:
            yield None


def _ids(x: Interaction) -> frozenset[str]:
    """The sessions ``x`` belongs to, as the protocols that know sessions spanning connections
    say (each answers for its own URLs only, before it reads what was received: a control call's
    URL may be no stream's)."""
    asking = [p.session_ids for p in protocols.all_protocols() if p.session_ids is not None]
    return frozenset().union(*(ask(x.request.url, _received(x)) for ask in asking))


def _times(t0: float, done: float, x: Interaction) -> list[float]:
    """When each part happened on the recorder's clock: the exchange, then each message."""
    messages = x.websocket.messages if x.websocket is not None else []
    return [done, *(t0 + m.t for m in messages)]


def join(recorded: Sequence[Recorded]) -> None:
    """Set ``group`` on each interaction of ``recorded`` that shares a session id with another
    (the others' ``group`` is set to None): the group's id is the first id its earliest
    interaction names, its parts numbered in the order they happened across its connections."""
    ids = [_ids(x) for _, _, x in recorded]
    parent = list(range(len(recorded)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    owner: dict[str, int] = {}
    for i, names in enumerate(ids):
        for name in sorted(names):
            j = owner.setdefault(name, i)
            parent[root(i)] = root(j)
    members: dict[int, list[int]] = {}
    for i in sorted(range(len(recorded)), key=lambda i: recorded[i][1]):
        members.setdefault(root(i), []).append(i)
    for _, _, x in recorded:
        x.group = None
    for group in members.values():
        if len(group) < 2:
            continue
        name = min(ids[group[0]]) if ids[group[0]] else min(n for i in group for n in ids[i])
        parts = [[(t, i, k) for k, t in enumerate(_times(*recorded[i]))] for i in group]
        orders: dict[int, list[int]] = {i: [] for i in group}
        for seq, (_, i, _) in enumerate(heapq.merge(*parts)):
            orders[i].append(seq)
        for i in group:
            recorded[i][2].group = Group(name, orders[i])
