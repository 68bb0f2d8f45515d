"""What a replayed WebSocket server hands its client: a `Release` is one read (or the end of the
stream); `Reads` is a run of reads in one object, for the stack that takes runs (the asyncio
transport, `ssemock.plan.conversation.Conversation.runs`): a group of a thousand messages is one
object and one queue entry there, not a thousand, and the client still gets one read each."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..variants.timing import Timing

__all__ = ["Reads", "Release", "each_read"]


@dataclass(slots=True)
class Release:
    """Server bytes a replay hands the client: ``delay`` seconds (recorded time, before timing)
    after the moment they were released; ``data=None`` ends the stream (EOF)."""

    delay: float
    data: bytes | None
    ends_pending: bool = False
    """Whether what is still pending (not yet handed to the client) is dropped first: the
    answer to the client's close frame, which a server sends at once, and after which it sends
    nothing more."""
    stall: float = 0.0
    """Seconds of silence a ``stall`` fault adds before it (recorded time, as ``delay``)."""

    def due_in(self, timing: Timing) -> float:
        """Seconds after its release it is due: its delay and stall under a scaling timing; under
        ``instant`` its stall alone, in real seconds (a stack waits it, ends it with a timeout of
        the client's it can see, or skips it with a warning: `skipped_stall`)."""
        factor = timing.factor
        return self.stall if factor is None else (self.delay + self.stall) * factor


@dataclass(slots=True)
class Reads(Release):
    """A run of reads, in order: ``pieces[i]`` is a read of its own, due ``delays[i]`` after the
    release (no stall before any, nothing pending ended). ``data`` is the pieces joined and
    ``delay`` the first one's, so a stack that read it as one `Release` would hand the right
    bytes; the stacks that take runs hand each piece in its own read (`each_read` makes them
    `Release` items)."""

    pieces: list[bytes] = field(default_factory=list)
    delays: list[float] = field(default_factory=list)


def each_read(releases: Iterable[Release]) -> list[Release]:
    """``releases`` with every `Reads` run made one `Release` a read."""
    out: list[Release] = []
    for r in releases:
        if type(r) is Reads:
            out.extend(map(Release, r.delays, r.pieces))
        else:
            out.append(r)
    return out
