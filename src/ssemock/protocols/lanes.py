"""Lanes: several responses multiplexed on one WebSocket, each message on one lane.

Not a protocol (no ``PROTOCOL``): a protocol that multiplexes (the Responses API's WebSocket mode,
``response.create(stream_id=...)``) declares a `Lanes` as its ``lanes``, and a replay routes each
message by it: a lane's messages keep their recorded order while lanes interleave as the client's
sends release them (`ssemock.plan.conversation`), and a fault can aim at one lane.

A message names its lane itself (``key``: the Responses API's ``stream_id``, which every server
event of a named lane echoes), or joins the lane of a response it aims at (``target``: a
``response.steer``'s ``previous_response_id``: steering never sends ``stream_id``); a server
message that starts a response (``starts``: ``response.created``) says which response runs on its
lane. A message that names none is on the default lane, `DEFAULT`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from .base import JSON

__all__ = ["DEFAULT", "Lanes"]

DEFAULT = ""
"""The default lane: messages that name no lane (a ``response.create`` with no ``stream_id``, a
connection's own errors)."""


def _none(_: JSON) -> str | None:
    return None


@dataclass(frozen=True)
class Lanes:
    """How a protocol puts its WebSocket messages on lanes (see the module)."""

    key: Callable[[JSON], str | None]
    """The lane a message names (None: it names none)."""
    target: Callable[[JSON], str | None] = _none
    """The response a client message that names no lane aims at (its lane is that response's)."""
    starts: Callable[[JSON], str | None] = _none
    """The response a server message starts on its lane."""

    def of(self, messages: Iterable[tuple[str, JSON | None]]) -> list[str]:
        """The lane of each ``(direction, message)`` of a session, in order (a message that is not
        JSON is on the default lane)."""
        owners: dict[str, str] = {}
        return [self.lane(direction, message, owners) for direction, message in messages]

    def lane(self, direction: str, message: JSON | None, owners: dict[str, str]) -> str:
        """One message's lane, ``owners`` (response id -> lane) learnt from the messages before it
        and updated by a server message that starts a response."""
        if message is None:
            return DEFAULT
        named = self.key(message)
        if named is None and direction == "send":
            aimed = self.target(message)
            named = owners.get(aimed) if aimed is not None else None
        lane = named if named is not None else DEFAULT
        started = self.starts(message) if direction == "recv" else None
        if started is not None:
            owners[started] = lane
        return lane

    @staticmethod
    def named(lanes: Iterable[str]) -> bool:
        """Whether any of ``lanes`` is a named one (a session that multiplexes)."""
        return any(lane != DEFAULT for lane in lanes)
