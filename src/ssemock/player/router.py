"""The respx router a player serves through: the user's own routes answer first, the cassette
the rest; and the weak callbacks that let a finished player be freed at once."""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import respx

__all__ = ["Router", "weakly"]


class _CassetteRoute(respx.Route):
    """The route the cassette's answers are recorded on. It is never in the router's route list,
    so nothing rolls it back: it keeps no snapshot (respx's copies its call list, a mock, at
    every creation: a few percent of a marked test)."""

    def snapshot(self) -> None:
        return None


class Router(respx.MockRouter):
    """A respx router whose unmatched requests fall through to the cassette player.

    The user's own routes answer first; every request the cassette serves is recorded in
    ``calls`` as well (on the ``cassette`` route), so respx idioms (``router.calls``,
    ``call_count``, ``route.called``) see everything the player served.
    """

    def __init__(self, fallback: Callable[[httpx.Request], httpx.Response]) -> None:
        super().__init__(assert_all_called=False, assert_all_mocked=False, using=None)
        self._fallback = fallback
        self.cassette: respx.Route = _CassetteRoute()

    def snapshot(self) -> None:
        """respx's snapshot, the calls kept as a plain list: respx copies them into a new call
        list, a mock (~50 µs to make, a tenth of a short replay; every player takes one when it
        is made). ``rollback`` puts them back into ``calls`` the same way."""
        self._snapshots.append((respx.models.RouteList(self.routes), list(self.calls)))
        for route in self.routes:
            route.snapshot()

    @contextmanager
    def resolver(self, request: httpx.Request) -> Iterator[Any]:
        __tracebackhide__ = True
        with super().resolver(request) as resolved:
            yield resolved
            if resolved.route is None:
                resolved.response = self._fallback(request)
                resolved.route = self.cassette


def weakly(method: Callable[..., Any]) -> Callable[..., Any]:
    """A bound method that does not keep its object alive: the router and the recorders call
    back into their Player without a reference cycle, so a finished Player and the recordings it
    holds are freed as soon as it is dropped, not at the next garbage collection."""
    ref = weakref.WeakMethod(method)

    def call(*args: Any) -> Any:
        __tracebackhide__ = True
        bound = ref()
        if bound is None:
            raise RuntimeError("ssemock: the Player this router or recording belonged to is gone")
        return bound(*args)

    return call
