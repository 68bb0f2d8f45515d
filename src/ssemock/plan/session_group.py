"""Replaying a session that spans connections: `SessionGroup` holds the progress of each
connection of a recorded group (`ssemock.store.group.Group`) and tells a connection whether a
part of it may be released now: only once every part recorded before it on the other connections
of the group has been released (a server message, an HTTP response served, a handshake answered)
or has happened (a client message matched). Never earlier; a connection waits, as it would live,
for what the others have still to do. Only server messages are held: a handshake and an HTTP
answer are served when the client asks for them, and count as done then.

A connection that has ended (closed, dropped by a fault, its handshake refused) counts as done:
what it recorded after its end can no longer hold the others back. Each connection's conversation
joins with a ``wake`` callable, called (under the group's lock, which serializes every member's
progress across threads) when another connection's progress may let its held parts go."""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ..store.model import Interaction

__all__ = ["SessionGroup", "groups_of"]


@dataclass
class _Member:
    order: list[int]
    done: list[bool]
    next: int = 0  # the first part not done
    wake: Callable[[], None] | None = None

    def frontier(self) -> float:
        return self.order[self.next] if self.next < len(self.order) else math.inf


@dataclass
class SessionGroup:
    """The replay's progress through one recorded group (see the module): ``orders`` maps each
    member interaction's index to its parts' sequence numbers."""

    name: str
    orders: dict[int, list[int]]
    lock: threading.RLock = field(default_factory=threading.RLock, repr=False)
    log: list[tuple[int, int]] = field(default_factory=list)
    """Every part done, in the order it was done: ``(interaction index, part)`` (part 0: the
    exchange; part k: the WebSocket message k-1)."""

    def __post_init__(self) -> None:
        self._members = {i: _Member(list(o), [False] * len(o)) for i, o in self.orders.items()}

    def join(self, index: int, wake: Callable[[], None]) -> None:
        """Member ``index``'s conversation: ``wake()`` when the others' progress may free its parts."""
        with self.lock:
            self._members[index].wake = wake

    def allows(self, index: int, part: int) -> bool:
        """Whether part ``part`` of member ``index`` may be released now: every part recorded
        before it on the other members is done."""
        with self.lock:
            seq = self._members[index].order[part]
            return all(m.frontier() > seq for i, m in self._members.items() if i != index)

    def done(self, index: int, parts: Sequence[int]) -> None:
        """Parts ``parts`` of member ``index`` were released or happened: the others are woken
        when the member's first part not done moved."""
        with self.lock:
            member = self._members[index]
            for part in parts:
                if 0 <= part < len(member.done) and not member.done[part]:
                    member.done[part] = True
                    self.log.append((index, part))
            before = member.next
            while member.next < len(member.done) and member.done[member.next]:
                member.next += 1
            if member.next == before:
                return
            for i, other in self._members.items():
                if i != index and other.wake is not None:
                    other.wake()

    def end(self, index: int) -> None:
        """Member ``index`` ended: its parts not done never will be, and hold nothing back."""
        with self.lock:
            member = self._members[index]
            self.done(index, [k for k, d in enumerate(member.done) if not d])


def groups_of(interactions: Sequence[Interaction], where: str) -> dict[int, SessionGroup]:
    """Each grouped interaction's `SessionGroup` (one per group name, shared by its members);
    ``ValueError`` naming the cassette (``where``), the interactions and the number when two
    parts of a group have the same sequence number."""
    orders: dict[str, dict[int, list[int]]] = {}
    for i, x in enumerate(interactions):
        if x.group is not None:
            orders.setdefault(x.group.id, {})[i] = x.group.order
    out: dict[int, SessionGroup] = {}
    for name, members in orders.items():
        seen: dict[int, int] = {}
        for i, order in members.items():
            for seq in order:
                j = seen.setdefault(seq, i)
                if j != i:
                    raise ValueError(
                        f"ssemock: {where}: interactions #{j} and #{i} of the group {name!r} both hold "
                        f"part {seq} of its order: record them again, or delete their groups"
                    )
        group = SessionGroup(name, members)
        out.update(dict.fromkeys(members, group))
    return out
