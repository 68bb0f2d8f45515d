"""``chunking="all"`` on a cassette that mixes HTTP and WebSocket interactions (issue 35, item 1):
each interaction is cut by the chunking of its transport's name, and the test ids say which where
the names differ (``ssemock-http=mid_line,ws=mid_header``); a session-only cassette's ids name
the wire chunking; a cassette not recorded yet keeps the HTTP names. Driven as users drive it: an
inner pytest (in-process), an HTTP call for a session token, then the socket."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import ws_frame_client as client

from ssemock import cassettes
from ssemock.store.cassette import Cassette
from ssemock.store.model import Interaction, Request, Response

TOKEN = "https://api.openai.com/v1/realtime/client_secrets"

INNER = f"""
import httpx, pytest, ws_frame_client as client

@pytest.mark.ssemock(chunking="all", match_on=["method", "path"])
def test_session(ssemock, request):
    token = httpx.post({TOKEN!r}, json={{"session": {{"type": "realtime"}}}}).json()
    text, calls, events = client.session(client.Correct)
    ssemock.assert_text(text)
    ssemock.assert_tool_calls(calls)
    http, ws = ssemock.plays[0].chunking.name, ssemock.conversations[0].chunking.name
    print("RAN", request.node.callspec.id, "http", http, "ws", ws, token["id"])
"""


def _write(folder: Path, *, http: bool) -> None:
    session = cassettes.load(client.NAME).interactions[0]
    token = Interaction(
        Request("POST", TOKEN, [("content-type", "application/json")], b'{"session":{"type":"realtime"}}'),
        Response(
            200, [("content-type", "application/json")], b'{"id":"sess_tok1","expires_at":1}', [33], [0.1]
        ),
    )
    Cassette([token, session] if http else [session]).save(folder / "test_session.json")


def _ran(pytester: pytest.Pytester) -> list[tuple[str, ...]]:
    result = pytester.runpytest_inprocess("-p", "no:randomly", "-s", "-v")
    result.assert_outcomes(passed=7)
    return [
        tuple(m.group(1).split()) for line in result.stdout.lines if (m := re.search(r"\bRAN (.*)", line))
    ]


def test_a_mixed_cassette_gives_each_transport_its_chunking_and_the_ids_say_which(
    pytester: pytest.Pytester,
) -> None:
    folder = pytester.mkdir("cassettes") / "test_mixed"
    folder.mkdir()
    _write(folder, http=True)
    pytester.makepyfile(test_mixed=INNER)
    ran = {r[0]: (r[2], r[4]) for r in _ran(pytester)}
    assert ran == {
        "ssemock-as_recorded": ("as_recorded", "as_recorded"),
        "ssemock-bytewise": ("bytewise", "bytewise"),
        "ssemock-http=mid_line,ws=mid_header": ("mid_line", "mid_header"),
        "ssemock-mid_utf8": ("mid_utf8", "mid_utf8"),
        "ssemock-coalesced": ("coalesced", "coalesced"),
        "ssemock-per_event": ("per_event", "per_event"),
        "ssemock-random:7": ("random:7", "random:7"),
    }


def test_a_session_only_cassette_names_the_wire_chunking(pytester: pytest.Pytester) -> None:
    folder = pytester.mkdir("cassettes") / "test_sessions"
    folder.mkdir()
    _write(folder, http=False)
    pytester.makepyfile(
        test_sessions=INNER.replace("    token = httpx.post", "    token = {'id': '-'}  # ").replace(
            "ssemock.plays[0].chunking.name", "'-'"
        )
    )
    ids = [r[0] for r in _ran(pytester)]
    assert "ssemock-mid_header" in ids and not any(re.search("mid_line|http=", i) for i in ids)


def test_before_the_cassette_exists_the_ids_are_the_http_names(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_new=INNER)
    result = pytester.runpytest_inprocess("--collect-only", "-q")
    ids = re.findall(r"test_session\[(.*)\]", result.stdout.str())
    assert "ssemock-mid_line" in ids and len(ids) == 7
