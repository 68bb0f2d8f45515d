"""The player's respx router: built without respx's constructors (whose call lists are mocks made
anew), yet the same attributes as a respx MockRouter, and call lists that behave as respx's."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
import respx

import ssemock
from ssemock.player.router import CallList, Router, _CassetteRoute


def _fallback(request: httpx.Request) -> httpx.Response:
    return httpx.Response(200)


def test_the_router_has_a_respx_mock_routers_attributes() -> None:
    ours, theirs = (
        vars(Router(_fallback)),
        vars(respx.MockRouter(assert_all_called=False, assert_all_mocked=False, using=None)),
    )
    assert set(ours) - set(theirs) == {"_fallback", "cassette"}
    for key, value in theirs.items():
        if key == "calls":
            assert isinstance(ours[key], CallList) and list(ours[key]) == list(value) == []
        elif key == "routes":
            assert type(ours[key]) is type(value) and list(ours[key]) == list(value) == []
        elif key == "_snapshots":
            assert len(ours[key]) == len(value) == 1 and list(ours[key][0][1]) == list(value[0][1])
        else:
            assert ours[key] == value, key


def test_the_cassette_route_has_a_respx_routes_attributes() -> None:
    ours, theirs = vars(_CassetteRoute()), vars(respx.Route())
    assert set(ours) == set(theirs)
    for key in set(theirs) - {"calls", "_snapshots"}:
        assert ours[key] == theirs[key], key
    assert ours["_snapshots"] == [] and isinstance(ours["calls"], respx.models.CallList)


def _outcomes(calls: Any) -> list[Any]:
    """What respx's call list idioms give: the list part, then each assertion's message."""
    seen: list[Any] = [calls.called, calls.call_count, list(calls), calls.last if calls else None]
    for assertion in ("assert_called", "assert_called_once", "assert_not_called"):
        try:
            getattr(calls, assertion)()
            seen.append(None)
        except AssertionError as exc:
            seen.append(str(exc))
    return seen


@pytest.mark.parametrize("n", [0, 1, 2])
@pytest.mark.parametrize("name", ["respx", "route"])
def test_a_lazy_call_list_behaves_as_respxs(n: int, name: str) -> None:
    ours, theirs = CallList(name=name), respx.models.CallList(name=name)
    for i in range(n):
        ours.append(i)
        theirs.append(i)
    assert _outcomes(ours) == _outcomes(theirs)
    with pytest.raises(AttributeError, match="is not a valid assertion"):
        ours.assert_callled()  # a mock's guard against misspelt assertions, as respx's
    ours.append("more")  # still a list after the mock is made
    theirs.append("more")
    assert _outcomes(ours) == _outcomes(theirs)


def test_a_magic_method_set_on_one_call_list_is_its_own() -> None:
    a, b = CallList(), CallList()
    a.__len__ = lambda self: 7  # a mock sets it on the instance's class: it must be its own
    assert (len(a), len(b), type(a).__name__) == (7, 0, "CallList")
    b.append(1)
    b.__len__ = lambda self: 5
    assert (len(a), len(b), len(CallList())) == (7, 5, 0)


def test_a_replays_calls_are_recorded_for_respx_idioms() -> None:
    cassette = ssemock.Cassette()
    cassette.add("GET", "https://example.test/stream", [b"data: 1\n\n"])
    with ssemock.replay(cassette) as player, httpx.Client() as client:
        client.get("https://example.test/stream")
    player.router.calls.assert_called_once()
    player.router.cassette.calls.assert_called_once()
    assert player.router.calls.last.request.url == "https://example.test/stream"
    assert player.router.cassette.called and player.router.cassette.call_count == 1
