"""The openai SDK's WebSocket reconnect path against a recording (issue 35, item 3): Responses
WebSocket mode (``client.beta.responses.connect``) recorded once against a loopback server, then
replayed under a close-fault sequence. openai reconnects only when the user passes
``on_reconnecting``, only on a close code it takes for recoverable (1012 and 1013 are, 1008 is not),
and replays its send queue (what was sent while it reconnected) on the new connection.

(The loopback server's Responses events are the short shape the SDK parses, without the
``output_item.added`` the reference accumulator wants, so what the user sees is asserted here.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import openai
import pytest
from websockets.exceptions import ConnectionClosedError
from ws_servers import responses, running

import ssemock

KEY = "sk-test-ws35reconnect0123456789"
URL = "ws://127.0.0.1:9/v1"  # replayed with the network lock on: nothing listens there


@pytest.fixture(scope="module")
def cassette(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("reconnect") / "responses_ws.json"
    with running(responses) as server:
        base = server.url("/v1")
        with ssemock.use_cassette(path, record_mode="once", match_on=["method", "path"]):
            client = openai.OpenAI(api_key=KEY, websocket_base_url=base)
            with client.beta.responses.connect() as conn:
                conn.response.create(model="gpt-5", input="Say hello.", store=False)
                for event in conn:
                    if event.type == "response.completed":
                        break
    return path


def _session(on_reconnecting: Any = None) -> list[Any]:
    client = openai.OpenAI(api_key=KEY, websocket_base_url=URL)
    seen: list[Any] = []
    with client.beta.responses.connect(on_reconnecting=on_reconnecting, initial_delay=0.001) as conn:
        conn.response.create(model="gpt-5", input="Say hello.", store=False)
        for event in conn:
            seen.append((event.type, getattr(event, "delta", None)))
            if event.type == "response.completed":
                break
    return seen


def _replay(cassette: Path, fault: str) -> Any:
    return ssemock.use_cassette(
        cassette,
        record_mode="none",
        allowed_hosts=[],
        match_on=["method", "path"],
        allow_playback_repeats=True,
        faults=fault,
    )


def test_a_recoverable_close_reconnects_and_the_send_queue_is_replayed(cassette: Path) -> None:
    reconnects: list[tuple[int, int]] = []
    conn_holder: list[Any] = []

    def on_reconnecting(event: Any) -> None:
        reconnects.append((event.attempt, event.close_code))
        # sent while reconnecting: queued by the SDK, sent on the new connection
        conn_holder[0].response.create(model="gpt-5", input="Say hello.", store=False)

    client = openai.OpenAI(api_key=KEY, websocket_base_url=URL)
    seen: list[Any] = []
    with _replay(cassette, "sequence:close:code=1012,after_message=1|as_recorded") as player:
        with client.beta.responses.connect(on_reconnecting=on_reconnecting, initial_delay=0.001) as conn:
            conn_holder.append(conn)
            conn.response.create(model="gpt-5", input="Say hello.", store=False)
            for event in conn:
                seen.append((event.type, getattr(event, "delta", None)))
                if event.type == "response.completed":
                    break
        assert reconnects == [(1, 1012)]
        assert len(player.conversations) == 2  # the first connection, closed with 1012; the reconnect
        first, second = player.conversations
        assert (
            first.served_messages() and len(first.served_messages()) == 1
        )  # response.created, then the close
        assert second.unsent() == []  # the queued response.create was sent, and matched, on the new socket
        assert len(second.served_messages()) == 4  # the whole recorded response
    assert seen == [
        ("response.created", None),  # from the first connection
        ("response.created", None),
        ("response.output_text.delta", "Hel"),
        ("response.output_text.delta", "lo."),
        ("response.completed", None),
    ]


def test_an_unrecoverable_close_or_no_handler_does_not_reconnect(cassette: Path) -> None:
    called: list[Any] = []
    with _replay(cassette, "sequence:close:code=1008,after_message=1|as_recorded") as player:
        with pytest.raises(ConnectionClosedError, match="1008"):
            _session(on_reconnecting=called.append)
        assert called == [] and len(player.conversations) == 1
    with _replay(cassette, "sequence:close:code=1012,after_message=1|as_recorded") as player:
        with pytest.raises(ConnectionClosedError, match="1012"):
            _session()
        assert len(player.conversations) == 1
