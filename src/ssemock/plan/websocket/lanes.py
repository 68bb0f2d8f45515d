"""The lanes of a replayed WebSocket session (a protocol that multiplexes responses on one socket,
`ssemock.protocols.lanes`): which recorded client message a sent one matches, and which server
messages its sends release.

A session whose recording names no lane is replayed as a tape (`Conversation`'s prefix rule).
One that does: the client's message is matched against the next recorded message of ITS lane
(lanes may be sent in another order than recorded). While the client sends in the recorded
order, the server's messages go as on a tape (each once every client message recorded before it
was sent): the lanes interleave as recorded. Once it sends out of that order (the other lane
first), a server message of a named lane goes once its own lane has sent what it had sent before
it in the recording, after its lane's earlier messages (and the default lane's earlier ones): the
lanes interleave as the client's sends release them. A message of the default lane (a
connection's error, a response created with no ``stream_id``, the close) always waits for every
client message and every server message recorded before it. A lane's own order never changes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol as Shape

import orjson

from ...protocols.lanes import DEFAULT, Lanes
from ...store.websocket import Message

__all__ = ["LaneRoutes", "Routed"]


class Routed(Shape):
    """A server unit as the routing reads it: its lane (None: the default lane, a barrier), the
    client messages sent before it in the recording, and those of its own lane."""

    gate: int
    lane: str | None
    lane_gate: int


def _json(m: Message) -> dict[str, object] | None:
    value = m.json()
    return value if isinstance(value, dict) else None


@dataclass
class LaneRoutes:
    """The lanes of one recorded session (`of`), and which client messages were matched."""

    lanes: Lanes
    sent_lanes: list[str]
    """The lane of each recorded client message, in order."""
    received: list[tuple[str | None, int]]
    """Each recorded server message's lane (None: the default lane) and how many client messages
    its lane had sent before it."""
    owners: dict[str, str]
    """Response id -> lane, as the recording's server messages started them (where a live
    ``response.steer`` aiming at a recorded response goes)."""
    matched: list[bool] = field(default_factory=list)
    reordered: bool = False
    """Whether the client sent a message before one recorded earlier (lanes then go by lane)."""

    @classmethod
    def of(cls, lanes: Lanes | None, messages: Sequence[Message]) -> LaneRoutes | None:
        """The routes of a recorded session, or None when its protocol has no lanes or the
        recording names none (then it replays as a tape)."""
        if lanes is None:
            return None
        owners: dict[str, str] = {}
        each = [lanes.lane(m.direction, _json(m), owners) for m in messages]
        if not Lanes.named(each):
            return None
        sent_lanes, received, counts = [], [], dict[str, int]()
        for m, lane in zip(messages, each):
            if m.direction == "send":
                sent_lanes.append(lane)
                counts[lane] = counts.get(lane, 0) + 1
            else:
                received.append((None if lane == DEFAULT else lane, counts.get(lane, 0)))
        return cls(lanes, sent_lanes, received, owners, [False] * len(sent_lanes))

    def lane_of(self, payload: bytes) -> str:
        """The lane of a message the replaying client sent (its text, JSON or not)."""
        try:
            value = orjson.loads(payload)
        except orjson.JSONDecodeError:
            return DEFAULT
        return self.lanes.lane("send", value if isinstance(value, dict) else None, dict(self.owners))

    def next_on(self, lane: str) -> int | None:
        """The first recorded client message of ``lane`` not matched yet."""
        return next(
            (k for k, (on, done) in enumerate(zip(self.sent_lanes, self.matched)) if on == lane and not done),
            None,
        )

    def match(self, k: int) -> int:
        """Recorded client message ``k`` was sent now: the first one not matched yet after it."""
        self.reordered = self.reordered or k != self.first_unmatched()
        self.matched[k] = True
        return self.first_unmatched()

    def first_unmatched(self) -> int:
        """The first recorded client message not matched yet (their count when all are)."""
        return next((k for k, done in enumerate(self.matched) if not done), len(self.matched))

    def _sent_on(self, lane: str) -> int:
        return sum(1 for on, done in zip(self.sent_lanes, self.matched) if on == lane and done)

    def due(self, units: Sequence[Routed], released: set[int]) -> list[int]:
        """The units not yet ``released`` that go now, in recorded order (see the module)."""
        out: list[int] = []
        waiting, waiting_lanes, barrier = False, set[str](), False
        for k, u in enumerate(units):
            if k in released:
                continue
            if u.lane is None:
                if not waiting and all(self.matched[: u.gate]):
                    out.append(k)
                else:
                    waiting = barrier = True
            elif (
                not barrier
                and u.lane not in waiting_lanes
                and self._sent_on(u.lane) >= u.lane_gate
                and (self.reordered or all(self.matched[: u.gate]))
            ):
                out.append(k)
            else:
                waiting = True
                waiting_lanes.add(u.lane)
        return out
