"""Which recorded interaction answers a request: matching, play counts and repeats, in one place.

The in-process player and ``ssemock serve`` both choose through `Selection`. Requests are
indexed by the values of the matchers that compare one value each (method, URL parts: see
`ssemock.plan.matching.KEYS`), so finding the candidates for a request costs a dict lookup and a
comparison of the few interactions in its bucket (body, headers, callables), not a scan of the
whole cassette: replaying N interactions is O(N), not O(N^2).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Literal

from ..store.cassette import Interaction, Request
from . import matching

__all__ = ["Selection"]

Repeats = Literal["never", "first", "least_played"]


class Selection:
    """Choose interactions for requests: each is played once, in recorded order, unless repeats
    are allowed (``first``: the first match again, as vcrpy's allow_playback_repeats;
    ``least_played``: the least played match, as ``serve`` answers forever)."""

    def __init__(
        self, interactions: list[Interaction], match_on: Sequence[str | matching.CustomMatcher]
    ) -> None:
        self.interactions = interactions  # not copied: stale() tells when it grew
        self.size = len(interactions)
        self.match_on = tuple(match_on)
        self.play_counts = [0] * len(self.interactions)
        self._keyed = [m for m in self.match_on if isinstance(m, str) and m in matching.KEYS]
        self._rest = [m for m in self.match_on if m not in self._keyed]
        self._index: dict[tuple[Hashable, ...], list[int]] = {}
        for i, x in enumerate(self.interactions):
            self._index.setdefault(self._key(x.request), []).append(i)

    def _key(self, request: Request) -> tuple[Hashable, ...]:
        return tuple(matching.KEYS[str(m)](request) for m in self._keyed)

    def stale(self, interactions: list[Interaction]) -> bool:
        """Whether ``interactions`` is no longer what this selection indexed (another list, or
        interactions added to it)."""
        return interactions is not self.interactions or len(interactions) != self.size

    def candidates(self, sent: Request) -> list[int]:
        """Indexes of the interactions the request matches, in recorded order."""
        bucket = self._index.get(self._key(sent), [])
        if not self._rest:
            return list(bucket)
        return [i for i in bucket if not matching.differences(sent, self.interactions[i].request, self._rest)]

    def take(
        self, sent: Request, *, repeats: Repeats = "never", among: Sequence[int] | None = None
    ) -> int | None:
        """The interaction to serve (counted as played), or None."""
        found = self.candidates(sent) if among is None else among
        if not found:
            return None
        index: int | None
        if repeats == "least_played":
            index = min(found, key=lambda i: (self.play_counts[i], i))
        else:
            index = next((i for i in found if self.play_counts[i] == 0), None)
            if index is None and repeats == "first":
                index = found[0]
        if index is not None:
            self.play_counts[index] += 1
        return index

    def take_where(
        self, sent: Request, fits: Callable[[int], bool], *, repeats: Literal["never", "first"] = "never"
    ) -> int | None:
        """The first interaction the request matches that ``fits`` accepts (counted as played):
        an unplayed one, else (``repeats="first"``) the first played one; None when none. Lazy: a
        replay that takes its calls in recorded order compares each with one interaction, not
        with every other of its bucket (a gRPC method called a thousand times)."""
        bucket = self._index.get(self._key(sent), [])
        rest, interactions = self._rest, self.interactions

        def matches(i: int) -> bool:
            return fits(i) and (not rest or not matching.differences(sent, interactions[i].request, rest))

        counts = self.play_counts
        index = next((i for i in bucket if counts[i] == 0 and matches(i)), None)
        if index is None and repeats == "first":
            index = next((i for i in bucket if matches(i)), None)
        if index is not None:
            counts[index] += 1
        return index

    def release(self, index: int) -> None:
        """Give a play back (an injected HTTP error does not use up its interaction)."""
        self.play_counts[index] -= 1

    def closest(self, sent: Request, n: int = 3) -> list[tuple[list[str], int]]:
        """The ``n`` interactions that differ least from the request, with what differs (a full
        comparison: only for explaining a request that matched nothing)."""
        ranked = sorted(
            (
                (matching.differences(sent, x.request, self.match_on), i)
                for i, x in enumerate(self.interactions)
            ),
            key=lambda d: len(d[0]),
        )
        return ranked[:n]
