"""AssemblyAI's v3 streaming client through ssemock (issue 34): the hard case, a module-level
alias of ``websockets.sync.client.connect`` bound at import, with its own TLS context, read and
write threads, binary audio (counted by bytes on replay, not compared) and a session the server
closes. Recorded against a loopback server, the server stopped, replayed with the lock on."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ws_servers import assemblyai_v3, running

import ssemock


def _transcribe(host: str, chunks: list[bytes]) -> list[Any]:
    # imported by the test before any player starts (its alias is bound then), here only read
    from assemblyai.streaming.v3 import (
        StreamingClient,
        StreamingClientOptions,
        StreamingEvents,
        StreamingParameters,
    )

    seen: list[Any] = []
    client = StreamingClient(StreamingClientOptions(api_key="test-assemblyai-key", api_host=host))
    client.on(StreamingEvents.Begin, lambda _, e: seen.append(("Begin", e.id)))
    client.on(StreamingEvents.Turn, lambda _, e: seen.append(("Turn", e.transcript)))
    client.on(
        StreamingEvents.Termination, lambda _, e: seen.append(("Termination", e.audio_duration_seconds))
    )
    client.on(StreamingEvents.Error, lambda _, e: seen.append(("Error", str(e))))
    client.connect(StreamingParameters(sample_rate=16000))
    for chunk in chunks:
        client.stream(chunk)
    client.disconnect(terminate=True)
    return seen


def test_assemblyai_streaming_records_then_replays_offline(tmp_path: Path) -> None:
    # imported here, before any player starts, as an application imports it: not at collection,
    # where every xdist worker paid its ~0.4 CPU-s import for this one test (issue 33)
    import assemblyai.streaming.v3  # noqa: F401

    path = tmp_path / "aai.json"
    with running(assemblyai_v3) as server:
        host = server.url("")
        with ssemock.use_cassette(path, record_mode="once"):
            live = _transcribe(host, [b"\x00\x01" * 800] * 2)
    assert live == [("Begin", "sess-1"), ("Turn", "Hello (3200 bytes)."), ("Termination", 1)]
    ws = ssemock.Cassette.load(path).interactions[0].websocket
    assert ws is not None and "test-assemblyai-key" not in path.read_text()
    # The server closes right after Termination while the client tears down on it: either close
    # frame can cross first on a real network, and the cassette keeps whichever did.
    assert (ws.close.code, ws.close.clean) == (1000, True) and ws.close.by in ("server", "client")
    assert [m.type for m in ws.sent()] == ["binary", "binary", "text"]
    with ssemock.use_cassette(path, record_mode="none", allowed_hosts=[]) as player:
        again = _transcribe(host, [b"\x00\x01" * 1600])  # the same audio in one chunk: counted by bytes
    assert again == live and player.conversations[0].unsent() == []
