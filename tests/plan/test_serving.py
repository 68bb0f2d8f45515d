"""A multi-request session (MCP streamable HTTP): each play carries its own reference
(``Play.expected()``), and ``Player.expected`` is the last STREAM served, not the DELETE or the
empty 202 after it."""

from __future__ import annotations

import httpx

import ssemock


def test_each_play_has_its_expected_and_the_players_is_the_last_stream() -> None:
    cassette = ssemock.cassettes.load("mcp/streamable_http_session")
    with ssemock.replay(cassette) as player, httpx.Client() as client:
        for x in cassette.interactions:
            client.request(
                x.request.method,
                x.request.url,
                content=x.request.body,
                headers={"content-type": "application/json"} if x.request.body else {},
            ).read()
    assert [p.request.method for p in player.plays] == [
        "POST",
        "POST",
        "GET",
        "POST",
        "POST",
        "POST",
        "POST",
        "DELETE",
    ]
    streams = [p.expected().stream for p in player.plays]
    assert streams == [True, False, False, True, True, True, True, False]  # 202, empty GET, DELETE: none
    last = player.expected
    assert last.play is player.plays[6] and last.play.request.method == "POST"  # resources/read, not DELETE
    assert last.events == player.plays[6].expected().events and last.events
    tools = player.plays[3].expected()  # tools/list, checked on its own
    assert tools.events and tools.events != last.events
    assert b'"tools"' in tools.body


def test_an_error_after_a_stream_is_still_the_expected_one() -> None:
    """A 429 after a stream is what a test of the error checks: it is not passed over."""
    cassette = ssemock.Cassette()
    cassette.add("GET", "https://api.example.test/s", [b"data: 1\n\n"])
    cassette.add("GET", "https://api.example.test/t", [b'{"error": "slow down"}'], status=429)
    with ssemock.replay(cassette) as player, httpx.Client() as client:
        client.get("https://api.example.test/s").read()
        client.get("https://api.example.test/t").read()
    assert player.expected.play is player.plays[1] and player.expected.play.status == 429
