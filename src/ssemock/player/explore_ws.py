"""Explore and ``check()`` on WebSocket sessions (issue 35): the variants drawn from a cassette's
sessions (boundaries in the server's wire, re-framings, faults when asked), the shrink of a
failing one to the fewest boundaries, re-framings and the simplest fault, and each boundary in
words (the frame, the part of it, the read).

A variant is the same [`Variant`][ssemock.strategies.Variant] as for HTTP: its ``at:`` chunking's
offsets count from the first byte of a session's wire after the 101 head (each group, what the
server sends before the client's next message, still ends its read: ``at:`` with no offset is
the ``coalesced`` wire chunking), its transforms are re-framings (``fragments:N``, ``pings``), its
fault a WebSocket fault; so the reproducer is the same marker to paste."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from ..plan.expect import StreamAssertionError
from ..plan.websocket.expect import served_wire
from ..plan.websocket.variants import VariedConversation
from ..variants import transforms as _transforms
from ..variants.chunking import at
from ..variants.strategies import Variant, minimal_failing_split
from ..variants.websocket.draws import (
    HAZARDS,
    REFRAMINGS,
    WS_FAULTS,
    WsSpace,
    WsTables,
    has_websocket,
    wire_hazards,
)

if TYPE_CHECKING:
    from .state import PlayerState as Player

__all__ = [
    "HAZARDS",
    "REFRAMINGS",
    "WS_FAULTS",
    "WsSpace",
    "check_session",
    "WsTables",
    "describe",
    "has_websocket",
    "last_session",
    "minimal_cuts",
    "shrink",
    "wire_hazards",
]


def last_session(player: Player) -> VariedConversation | None:
    """The last WebSocket session the player served under a variant (None: none)."""
    with player.lock:
        found = [c for c in player.conversations if isinstance(c, VariedConversation)]
    return found[-1] if found else None


def minimal_cuts(
    wire: bytes, cuts: Sequence[int], fails: Callable[[tuple[int, ...]], bool]
) -> tuple[int, ...]:
    """A 1-minimal subset of ``cuts`` (offsets in ``wire``) under which ``fails`` still holds
    (delta debugging: each one left is needed)."""
    kept = sorted({c for c in cuts if 0 < c < len(wire)})
    if not kept:
        return ()

    def chunked(chunks: list[bytes]) -> bool:
        return fails(tuple(itertools.accumulate(len(c) for c in chunks[:-1])))

    try:
        return tuple(minimal_failing_split(wire, chunked, [*kept, len(wire)]).boundaries)
    except ValueError:  # the cuts alone do not reproduce it: keep them all
        return tuple(kept)


def shrink(
    player: Player, space: WsSpace, variant: Variant, attempt: Callable[[Variant], BaseException | None]
) -> Variant:
    """Make a failing WebSocket variant as small as still fails: fewest boundaries (each one left
    needed), fewest re-framings, each boundary moved to the earliest offset of its hazard class
    that still fails, the simplest fault."""
    if attempt(variant) is None:  # flaky: keep it as found
        return variant
    for t in reversed(variant.transforms):
        fewer = Variant(variant.chunking, tuple(x for x in variant.transforms if x is not t), variant.fault)
        if attempt(fewer) is not None:
            variant = fewer
        elif t.name.startswith("fragments:") and t.name != "fragments:2":  # the fewest fragments
            two = tuple(_transforms.get("fragments:2") if x is t else x for x in variant.transforms)
            if attempt(Variant(variant.chunking, two, variant.fault)) is not None:
                variant = Variant(variant.chunking, two, variant.fault)
    if variant.fault is not None:
        for fault in space.faults:
            if fault.name == variant.fault.name:
                break
            if attempt(Variant(variant.chunking, variant.transforms, fault)) is not None:
                variant = Variant(variant.chunking, variant.transforms, fault)
                break
    session = last_session(player)
    if variant.chunking.boundaries and session is not None:
        attempt(variant)
        wire = served_wire(session)
        cuts = minimal_cuts(
            wire,
            variant.chunking.boundaries,
            lambda c: attempt(Variant(at(*c), variant.transforms, variant.fault)) is not None,
        )
        variant = Variant(at(*cuts), variant.transforms, variant.fault)
        found = space.tables.of(variant.transforms)[1]
        moved_any = False
        for b in variant.chunking.boundaries:
            others = [c for c in variant.chunking.boundaries if c != b]
            same = {o for offsets in found.values() if b in offsets for o in offsets if o < b}
            firsts = {
                o for offsets in found.values() for o in offsets[:3] if o < b
            }  # the earliest of any class
            for o in sorted(firsts | set(sorted(same)[:8]))[:16]:
                moved = Variant(at(*others, o), variant.transforms, variant.fault)
                if o not in others and attempt(moved) is not None:
                    variant, moved_any = moved, True
                    break
        if moved_any and len(variant.chunking.boundaries) > 1:  # a moved boundary may make another unneeded
            attempt(variant)
            cuts = minimal_cuts(
                served_wire(last_session(player) or session),
                variant.chunking.boundaries,
                lambda c: attempt(Variant(at(*c), variant.transforms, variant.fault)) is not None,
            )
            variant = Variant(at(*cuts), variant.transforms, variant.fault)
    return variant


def describe(player: Player, boundaries: Sequence[int]) -> list[str]:
    """Each boundary in the last session served: the frame it falls in, the part of it, the read."""
    session = last_session(player)
    if session is None:
        return [str(b) for b in boundaries]
    return [
        f"{b} ({session.at_byte(b).partition(': ')[2] or 'past the end of the wire'})" for b in boundaries
    ]


def check_session(
    player: Player, run: Callable[[], object], original: Exception, start: tuple[list[int], int]
) -> None:
    """``check()`` after ``run`` failed on a WebSocket session: the smallest set of read
    boundaries in the session's wire (from the reads it was served in) that still makes ``run``
    fail, replayed from the test's start; raise StreamAssertionError naming each boundary's frame
    and read, and the marker that reproduces it (``original`` as its cause). ``start``: the play
    counts and the attempts before ``run``."""
    __tracebackhide__ = True
    session = last_session(player)
    if session is None:
        raise original
    wire, reads = served_wire(session), list(session.reads)
    chunking = player.chunking
    with player.lock:
        kept = (
            list(player.plays),
            list(player.conversations),
            list(player.play_counts),
            player.attempts,
            player.latest,
        )

    def fails(cuts: tuple[int, ...]) -> bool:
        player.chunking = at(*cuts)
        player.play_counts[:], player.attempts = start[0], start[1]
        with player.lock:
            del player.conversations[len(kept[1]) - 1 :]
        try:
            run()
        except Exception:
            return True
        finally:
            player.chunking = chunking
        return False

    try:
        if not fails(tuple(reads)):  # not a matter of where the reads end
            raise original
        cuts = minimal_cuts(wire, reads, fails)
        fails(cuts)  # the boundaries described as the minimal run served them
        words = describe(player, cuts)
    finally:  # the search's own runs are not plays of the test
        with player.lock:
            player.plays[:], player.conversations[:] = kept[0], kept[1]
            player.latest = kept[4]
        player.play_counts[:], player.attempts = kept[2], kept[3]
    variant = Variant(at(*cuts), tuple(player.transforms), next(iter(player.faults), None))
    where = "\n".join(f"  a read boundary at wire byte {w}" for w in words) or (
        "  no read boundary inside a group (each group of frames in one read): it does not depend on the wire's cuts"
    )
    raise StreamAssertionError(
        f"ssemock: the client fails on the WebSocket session of interaction #{session.index} "
        f"({session.interaction.request.url}) under chunking={chunking}; the fewest read boundaries "
        f"in the server's wire that still fail it:\n{where}\n"
        f"the error under it: {type(original).__name__}: {original}\nreproduce with: {variant.marker()}"
    ) from original
