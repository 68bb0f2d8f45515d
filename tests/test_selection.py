"""The matching core shared by the player and serve: the index finds exactly what a full scan finds."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ssemock import Interaction, Request, Response, matching
from ssemock.plan.selection import Selection

_methods = st.sampled_from(["GET", "POST"])
_urls = st.builds(
    lambda host, path, q: f"https://{host}/{path}" + (f"?a={q}" if q else ""),
    st.sampled_from(["a.test", "b.test"]),
    st.sampled_from(["x", "y", "v1/z"]),
    st.sampled_from(["", "1", "2"]),
)
_bodies = st.sampled_from([None, b'{"m": 1}', b'{"m": 2}', b"raw"])
_requests = st.builds(lambda m, u, b: Request(m, u, [], b), _methods, _urls, _bodies)
_match_on = st.lists(
    st.sampled_from(
        ["method", "scheme", "host", "port", "path", "query", "url", "uri", "body", "raw_body", "headers"]
    ),
    unique=True,
    max_size=5,
)


def _x(request: Request) -> Interaction:
    return Interaction(request, Response(200, [], b"data: x\n\n", [9], [0.0], True, None))


@settings(max_examples=150, deadline=None)
@given(st.lists(_requests, max_size=12), _requests, _match_on)
def test_candidates_equal_a_full_scan(recorded: list[Request], sent: Request, match_on: list[str]) -> None:
    selection = Selection([_x(r) for r in recorded], matching.resolve(match_on))
    scan = [
        i for i, r in enumerate(recorded) if not matching.differences(sent, r, matching.resolve(match_on))
    ]
    assert selection.candidates(sent) == scan


def test_take_release_and_repeats() -> None:
    req = Request("GET", "https://a.test/x", [], None)
    selection = Selection([_x(req), _x(req)], matching.DEFAULT)
    assert [selection.take(req), selection.take(req), selection.take(req)] == [0, 1, None]
    selection.release(1)
    assert selection.take(req) == 1
    assert selection.take(req, repeats="first") == 0
    assert selection.take(req, repeats="least_played") == 1 and selection.play_counts == [2, 2]


def test_a_callable_matcher_is_applied_within_the_bucket() -> None:
    a = Request("GET", "https://a.test/x", [("x-t", "1")], None)
    b = Request("GET", "https://a.test/x", [("x-t", "2")], None)

    def tenant(sent: Request, rec: Request) -> bool:
        return dict(sent.headers) == dict(rec.headers)

    selection = Selection([_x(a), _x(b)], matching.resolve(["method", "url", tenant]))
    assert selection.candidates(b) == [1]
