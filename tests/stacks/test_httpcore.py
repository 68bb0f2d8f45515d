"""The httpx and httpx2 stacks: nesting, respx beside ssemock, respx idioms on cassette-served
requests, and patches that come and go with the players."""

from __future__ import annotations

import subprocess
import sys

import httpcore
import httpcore2
import httpx
import httpx2
import pytest
import respx

import ssemock

A = "https://a.example.test/v1/stream"
B = "https://b.example.test/v1/stream"


def cassette(*urls: str, body: bytes = b"data: x\n\n") -> ssemock.Cassette:
    c = ssemock.Cassette()
    for url in urls:
        c.add("GET", url, [body])
    return c


def _patched() -> bool:
    return any(
        "handle_request" in cls.__dict__ and cls.__dict__["handle_request"].__module__.startswith("ssemock")
        for cls in (httpcore.ConnectionPool, httpcore2.ConnectionPool)
    )


@pytest.mark.parametrize("lib", [httpx, httpx2], ids=["httpx", "httpx2"])
def test_nested_players_innermost_answers_first_and_the_outer_one_the_rest(lib: object) -> None:
    get = lib.get  # type: ignore[attr-defined]
    with ssemock.replay(cassette(A, B, body=b"data: outer\n\n")) as outer:
        with ssemock.replay(cassette(A, body=b"data: inner\n\n")) as inner:
            assert get(A).text == "data: inner\n\n"
            assert get(B).text == "data: outer\n\n"  # the inner player has no B: the outer one answers
            assert len(inner.plays) == 1 and len(outer.plays) == 1
        assert get(A).text == "data: outer\n\n"  # the inner player is gone


def test_nested_unmatched_request_names_the_innermost_cassette() -> None:
    with ssemock.replay(cassette(A)), ssemock.replay(cassette(B)):
        with pytest.raises(ssemock.UnmatchedRequestError) as caught:
            httpx.get("https://c.example.test/")
    message = str(caught.value)
    assert "https://c.example.test/" in message and B in message and caught.value.__cause__ is None
    assert caught.value.__context__ is None  # no respx AllMockedAssertionError chained to it


def test_a_player_cannot_be_entered_twice() -> None:
    player = ssemock.replay(cassette(A))
    with player, pytest.raises(RuntimeError, match="already active"):
        player.start()


@pytest.mark.parametrize("order", ["player-first", "respx-first"])
def test_interleaved_exits_with_respx_mock_leave_nothing_patched(order: str, server: str) -> None:
    player = ssemock.replay(cassette(A))
    mock = respx.mock(assert_all_called=False)
    mock.get("https://r.example.test/").respond(200, text="respx")
    player.router.get("https://r.example.test/").respond(200, text="player")
    first, second = (player, mock) if order == "player-first" else (mock, player)
    first.start()
    second.start()
    # the one started last sits on top and answers first
    assert httpx.get("https://r.example.test/").text == ("respx" if second is mock else "player")
    player.stop()  # exits interleaved with respx's
    mock.stop()
    with httpx.Client() as client:  # neither intercepts any more: the real loopback server answers
        assert client.get(f"{server}/echo").status_code == 200
    assert not _patched()  # an inert patch left beneath respx's removed itself on that first use
    assert httpcore.ConnectionPool.handle_request.__module__ == "httpcore._sync.connection_pool"
    with respx.mock() as again:  # and respx still works on its own
        again.get(A).respond(200, text="again")
        assert httpx.get(A).text == "again"


def test_router_calls_see_cassette_served_requests_and_user_routes() -> None:
    with ssemock.replay(cassette(A, A)) as player:
        route = player.router.get("https://mine.example.test/").respond(200, text="mine")
        assert httpx.get(A).text == "data: x\n\n"
        assert httpx2.get(A).text == "data: x\n\n"
        assert httpx.get("https://mine.example.test/").text == "mine"
        assert route.called and route.call_count == 1
        assert player.router.calls.call_count == 3
        assert [str(call.request.url) for call in player.router.calls][:2] == [A, A]
        assert player.router.calls[0].response.status_code == 200
        assert len(player.plays) == 2  # the user's route is not a play of the cassette


def test_a_library_imported_while_a_player_is_active_is_intercepted() -> None:
    code = (
        "import sys, ssemock\n"
        "assert 'httpcore2' not in sys.modules\n"
        "c = ssemock.Cassette(); c.add('GET', 'https://a.example.test/', [b'data: late\\n\\n'])\n"
        "with ssemock.replay(c):\n"
        "    import httpcore2\n"
        "    pool = httpcore2.ConnectionPool()\n"
        "    r = pool.request('GET', 'https://a.example.test/')\n"
        "    print(r.content.decode())\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "data: late"


def test_no_patch_is_left_after_an_error_inside_the_player() -> None:
    with pytest.raises(ssemock.UnmatchedRequestError), ssemock.replay(cassette(A)):
        httpx.get(B)
    assert not _patched() and "connect" not in __import__("socket").socket.__dict__


@pytest.mark.parametrize(
    "recorded", ["ReadTimeoutError", "SocketTimeoutError", "TimeoutError", "ReadTimeout"]
)
@pytest.mark.parametrize("lib", [httpx, httpx2], ids=["httpx", "httpx2"])
def test_a_timeout_recorded_through_any_stack_replays_as_this_stacks_timeout(
    recorded: str, lib: object
) -> None:
    c = ssemock.Cassette()
    c.add("GET", A, [b"data: 1\n\n"])
    c.interactions[0].response.complete = False
    c.interactions[0].response.error = {"type": recorded, "message": "timed out", "at_byte": 9}
    with ssemock.replay(c), lib.Client() as client:  # type: ignore[attr-defined]
        with client.stream("GET", A) as r, pytest.raises(lib.ReadTimeout):  # type: ignore[attr-defined]
            list(r.iter_raw())
