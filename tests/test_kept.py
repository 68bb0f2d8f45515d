"""store.kept: a cassette replayed again is parsed only when its bytes changed, and each load
hands interactions that share nothing mutable with the kept ones."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import httpx

import ssemock
from ssemock.store import kept
from ssemock.store.cassette import Cassette, Interaction, Request, Response


def _cassette() -> Cassette:
    body = b'data: {"a": 1}\n\ndata: [DONE]\n\n'
    return Cassette(
        [
            Interaction(
                Request(
                    "POST", "https://example.test/v1/chat?x=1", [("content-type", "application/json")], b"{}"
                ),
                Response(
                    200,
                    [("content-type", "text/event-stream"), ("x-request-id", "req_1")],
                    body,
                    [16, len(body)],
                    [0.25, 0.5],
                    False,
                    {"type": "ReadError", "detail": {"at": [1, 2]}},
                ),
            ),
            Interaction(
                Request("GET", "https://example.test/s"), Response(body=b"data: 2\n\n", ends=[9], times=[0.0])
            ),
        ]
    )


def test_a_kept_load_is_what_the_file_parses_to_every_time(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    _cassette().save(path)
    first, second = kept.load(path), kept.load(path)
    assert first.interactions == second.interactions == Cassette.load(path).interactions
    assert first.path == second.path == Cassette.load(path).path
    assert first.interactions[0].response.error == {"type": "ReadError", "detail": {"at": [1, 2]}}
    assert not first.interactions[0].response.complete


def test_what_a_load_hands_out_shares_nothing_mutable(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    _cassette().save(path)
    handed = kept.load(path)
    x = handed.interactions[0]
    x.request.headers.append(("authorization", "changed"))
    x.response.headers.clear()
    x.response.ends.append(99)
    x.response.times[0] = 9.0
    assert x.response.error is not None
    x.response.error["detail"]["at"].append(3)
    handed.interactions.append(handed.interactions[1])
    assert kept.load(path).interactions == Cassette.load(path).interactions


def test_a_rewritten_file_is_parsed_again_even_with_its_size_and_times(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    _cassette().save(path)
    assert kept.load(path).interactions[1].request.url == "https://example.test/s"
    before = os.stat(path)
    path.write_bytes(path.read_bytes().replace(b"example.test/s", b"example.test/t"))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert os.stat(path).st_size == before.st_size
    assert kept.load(path).interactions[1].request.url == "https://example.test/t"


def test_the_copy_knows_every_field() -> None:
    # a field added to the model must be copied by kept._fresh (and this test told); _cut and
    # _tenths are a replay's cache and a recorder's times, which a parsed cassette never holds
    assert [f.name for f in dataclasses.fields(Request)] == ["method", "url", "headers", "body"]
    assert [f.name for f in dataclasses.fields(Response)] == [
        *("status", "headers", "body", "ends", "times", "complete", "error", "_cut", "_tenths")
    ]
    assert [f.name for f in dataclasses.fields(Interaction)] == [
        "request",
        "response",
        "websocket",
        "group",
        "grpc",
    ]


def test_replays_of_one_cassette_each_start_unplayed(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    _cassette().save(path)
    for _ in range(2):
        with ssemock.use_cassette(path) as player, httpx.Client() as client:
            assert client.get("https://example.test/s").text == "data: 2\n\n"
            player.cassette.interactions[1].response.ends.clear()  # a test's change stays its own
        assert [p.index for p in player.plays] == [1]


def test_only_the_latest_cassettes_are_kept(tmp_path: Path) -> None:
    paths = [tmp_path / f"c{i}.json" for i in range(kept._MOST + 2)]
    for path in paths:
        _cassette().save(path)
        kept.load(path)
    assert len(kept._KEPT) == kept._MOST
    assert os.fspath(paths[-1]) in kept._KEPT and os.fspath(paths[0]) not in kept._KEPT
    assert kept.load(paths[0]).interactions == Cassette.load(paths[0]).interactions
