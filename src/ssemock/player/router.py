"""The respx router a player serves through: the user's own routes answer first, the cassette
the rest; and the weak callbacks that let a finished player be freed at once."""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any
from unittest import mock

import httpx
import respx
from respx.patterns import M, parse_url_patterns

__all__ = ["CallList", "Router", "weakly"]


class CallList(respx.models.CallList):
    """respx's call list (a list and a ``NonCallableMock``), its mock part made on first use.

    respx's makes a new class and a mock's dozen attributes at every creation (~18 µs; a player
    makes two, a tenth of a marked test's own cost) though most are only appended to and read
    as a list. ``called``, ``call_count``, ``last`` and ``record`` need no mock; any other
    attribute (``assert_called_once``, ``call_args``...) first makes the mock as respx would,
    in a class of the call list's own."""

    def __new__(cls, *args: Any, **kwargs: Any) -> CallList:
        return list.__new__(cls)

    def __init__(self, *args: Any, name: Any = "respx") -> None:
        list.__init__(self, *args)
        self.__dict__["_lazy_name"] = name

    def __getattr__(self, attr: str) -> Any:
        state = self.__dict__
        if "_lazy_name" not in state:
            return super().__getattr__(attr)
        if attr.startswith("__") and attr.endswith("__"):
            raise AttributeError(attr)
        cls = type(self)
        object.__dict__["__class__"].__set__(self, type(cls.__name__, (cls,), {"__doc__": cls.__doc__}))
        mock.NonCallableMock.__init__(self, name=state.pop("_lazy_name"))
        return getattr(self, attr)


class _CassetteRoute(respx.Route):
    """The route the cassette's answers are recorded on. It is never in the router's route list,
    so nothing rolls it back: it keeps no snapshot. respx's ``Route.__init__``, but with a lazy
    call list (see Router)."""

    def __init__(self) -> None:
        self._pattern = M()
        self._return_value: httpx.Response | None = None
        self._side_effect: Any = None
        self._pass_through = False
        self._name: str | None = None
        self._snapshots: list[tuple[Any, ...]] = []
        self.calls = CallList(name=self)

    def snapshot(self) -> None:
        return None


class Router(respx.MockRouter):
    """A respx router whose unmatched requests fall through to the cassette player.

    The user's own routes answer first; every request the cassette serves is recorded in
    ``calls`` as well (on the ``cassette`` route), so respx idioms (``router.calls``,
    ``call_count``, ``route.called``) see everything the player served.
    """

    def __init__(self, fallback: Callable[[httpx.Request], httpx.Response]) -> None:
        # respx's MockRouter.__init__ (tests/player/test_router.py: the same attributes), but
        # with a lazy call list: respx's is a mock made anew each time, ~18 µs, though most
        # players' calls are only appended to
        self._assert_all_called = False
        self._assert_all_mocked = False
        self._bases = parse_url_patterns(None, exact=False)
        self.routes = respx.models.RouteList()
        self.calls = CallList()
        self._snapshots: list[tuple[Any, ...]] = []
        self.snapshot()
        self.Mocker = None
        self._using = None
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
