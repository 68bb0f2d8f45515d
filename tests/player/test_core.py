"""A replay-only player whose cassette file does not exist: the first request it sees fails with
the path it resolved and how to record it, even to an allowed host (loopback); a host in
``ignore_hosts`` still goes to the network, as vcrpy's ignored hosts do."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

import ssemock


def test_a_missing_cassette_fails_the_first_request_even_to_an_allowed_host(
    server: str, tmp_path: Path
) -> None:
    path = tmp_path / "cassettes" / "missing.json"
    with ssemock.use_cassette(path) as player, pytest.raises(ssemock.UnmatchedRequestError) as raised:
        httpx.get(f"{server}/echo")  # loopback: allowed by default, yet never sent
    message = str(raised.value)
    assert f"GET {server}/echo: the cassette {path} does not exist" in message
    assert "record_mode='none' only replays" in message
    assert "--ssemock-record-mode=once" in message and 'record_mode="once"' in message
    assert player.plays == [] and not path.exists()


def test_an_ignored_host_still_passes_without_the_cassette(server: str, tmp_path: Path) -> None:
    with ssemock.use_cassette(tmp_path / "missing.json", ignore_hosts=["127.0.0.1"]) as player:
        response = httpx.post(f"{server}/echo", json={"x": 1})
    assert response.status_code == 200 and player.plays == []


def test_a_recording_mode_still_records_a_missing_cassette(server: str, tmp_path: Path) -> None:
    path = tmp_path / "new.json"
    with ssemock.use_cassette(path, record_mode="once"):
        assert httpx.get(f"{server}/events").status_code == 200
    assert len(ssemock.Cassette.load(path).interactions) == 1
