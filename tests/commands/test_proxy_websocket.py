"""``ssemock proxy`` with WebSocket sessions under each record mode (`ssemock.commands.proxy.websocket`):
a session the mode replays is answered from the cassette the way ``ssemock serve`` answers it
(the upstream never reached), one it records is relayed and saved, one it does neither gets a
404 with what differs. The ``websockets`` sync client; a loopback Realtime stand-in that counts
the sessions it serves."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from waiting import until
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect
from websockets.sync.server import ServerConnection
from ws_frame_client import close_after, server_log
from ws_servers import realtime
from ws_servers import running as ws_running

import ssemock
from ssemock.commands.loopback import running
from ssemock.commands.proxy import app as proxy_app
from ssemock.framing.websocket import Deflater, Opcode, encode_frame

PATH = "/v1/realtime?model=gpt-realtime"


def session(url: str) -> list[str]:
    """A Realtime client's session: session.update, response.create, until response.done."""
    got = []
    with connect(url) as ws:
        got.append(str(ws.recv(timeout=30)))
        ws.send(json.dumps({"type": "session.update", "session": {"type": "realtime", "instructions": "hi"}}))
        got.append(str(ws.recv(timeout=30)))
        ws.send(json.dumps({"type": "response.create"}))
        while json.loads(got[-1])["type"] != "response.done":
            got.append(str(ws.recv(timeout=30)))
    return got


@pytest.fixture
def upstream() -> Iterator[tuple[str, list[str]]]:
    """The stand-in's base URL, and the paths of the sessions it served."""
    served: list[str] = []

    def handler(ws: ServerConnection) -> None:
        assert ws.request is not None
        served.append(ws.request.path)
        realtime(ws)

    with ws_running(handler) as server:
        yield f"http://127.0.0.1:{server.port}", served


def _saved(folder: Path, count: int) -> ssemock.Cassette:
    path = folder / "proxy.json"
    until(lambda: path.exists() and len(ssemock.Cassette.load(path).interactions) == count, f"{count} saved")
    return ssemock.Cassette.load(path)


def test_once_records_then_replays_with_the_variants(upstream: tuple[str, list[str]], tmp_path: Path) -> None:
    base, served = upstream
    with running(proxy_app(base, cassette_dir=tmp_path)) as proxy:
        live = session(proxy.replace("http://", "ws://") + PATH)
        _saved(tmp_path, 1)
    log: list[str] = []
    options: dict[str, Any] = {"chunking": "mid_header", "transform": "fragments:2"}
    with running(proxy_app(base, cassette_dir=tmp_path, log=log.append, **options)) as proxy:
        again = session(proxy.replace("http://", "ws://") + PATH)
    assert again == live and len(live) == 9
    assert served == [PATH]  # the replay never reached the upstream
    assert any(
        "-> 101 #0" in line and "chunking=mid_header, reframing=fragments:2" in line for line in log
    ), log


def test_new_episodes_replays_what_matches_and_records_the_rest(
    upstream: tuple[str, list[str]], tmp_path: Path
) -> None:
    base, served = upstream
    with running(proxy_app(base, cassette_dir=tmp_path)) as proxy:
        session(proxy.replace("http://", "ws://") + PATH)
        _saved(tmp_path, 1)
    other = "/v1/realtime?model=gpt-realtime-mini"
    with running(proxy_app(base, cassette_dir=tmp_path, record_mode="new_episodes")) as proxy:
        url = proxy.replace("http://", "ws://")
        session(url + PATH)  # replayed
        session(url + other)  # recorded
        cassette = _saved(tmp_path, 2)
    assert served == [PATH, other]
    assert [x.request.url.split("/", 3)[-1] for x in cassette.interactions] == [PATH[1:], other[1:]]


def test_none_answers_an_unrecorded_session_with_404_and_the_diff(
    upstream: tuple[str, list[str]], tmp_path: Path
) -> None:
    base, served = upstream
    with running(proxy_app(base, cassette_dir=tmp_path)) as proxy:
        session(proxy.replace("http://", "ws://") + PATH)
        _saved(tmp_path, 1)
    log: list[str] = []
    with running(proxy_app(base, cassette_dir=tmp_path, record_mode="none", log=log.append)) as proxy:
        with pytest.raises(InvalidStatus) as refused:
            connect(proxy.replace("http://", "ws://") + "/v1/realtime?model=other")
    assert refused.value.response.status_code == 404
    body = json.loads(refused.value.response.body or b"{}")
    assert "record mode 'none' records nothing new" in body["error"]
    assert body["recorded"][0]["differs"] == [
        "query: [('model', 'gpt-realtime')] recorded, [('model', 'other')] sent"
    ]
    assert served == [PATH]
    assert any("model=other" in line and "-> 404" in line for line in log), log


def test_the_log_lines_of_a_session_mask_the_secrets_in_its_url(
    upstream: tuple[str, list[str]], tmp_path: Path
) -> None:
    """As the HTTP lines do: ``?sig=`` (by its name, whatever its shape) recorded, then replayed."""
    base, served = upstream
    secret = "s3cr3tSigNoKnownShape42"
    target = PATH + f"&sig={secret}"
    log: list[str] = []
    for mode in ("once", "none"):  # recorded (the relay's lines), then replayed (serve's)
        with running(proxy_app(base, cassette_dir=tmp_path, record_mode=mode, log=log.append)) as proxy:
            session(proxy.replace("http://", "ws://") + target)
            if mode == "once":
                _saved(tmp_path, 1)
    assert len(served) == 1 and secret in served[0]  # the upstream got it; the log did not
    assert any("recording into" in line for line in log) and any("-> 101 #0" in line for line in log), log
    assert all(secret not in line for line in log), log
    assert any("sig=REDACTED" in line for line in log), log
    assert secret not in (tmp_path / "proxy.json").read_text()


def test_a_message_past_max_body_is_closed_with_1009_relayed_or_replayed(
    upstream: tuple[str, list[str]], tmp_path: Path
) -> None:
    """The proxy caps a client's message at ``max_body`` (1 MiB here) once inflated, on both of
    its WebSocket paths: the relay of a session it records (uvicorn's protocol, whose own cap of
    16 MiB let it through before) and the replay of one it has (serve's reader); a 4 MiB deflate
    bomb gets 1009, and the next session is served."""
    base, _ = upstream
    bomb = bytes([0xC2]) + encode_frame(Opcode.BINARY, Deflater().compress(bytes(4 << 20)), mask=b"abcd")[1:]
    log: list[str] = []
    with running(
        proxy_app(base, cassette_dir=tmp_path, record_mode="all", max_body=1 << 20, log=log.append)
    ) as proxy:
        relayed = close_after(proxy.replace("http://", "ws://") + PATH, bomb, deflate=True)
        live = session(proxy.replace("http://", "ws://") + PATH)  # recorded over the one cut short
        until(lambda: sum(": saved into proxy" in line for line in log) == 2, "both sessions saved")
    # (the relay asks the upstream for no permessage-deflate: the deflate re-framing agrees to it)
    replaying = proxy_app(
        base, cassette_dir=tmp_path, record_mode="none", max_body=1 << 20, transform="deflate"
    )
    with running(replaying) as proxy:
        replayed = close_after(proxy.replace("http://", "ws://") + PATH, bomb, deflate=True)
        again = session(proxy.replace("http://", "ws://") + PATH)
    assert (relayed[0], replayed[0]) == (1009, 1009)
    assert again == live


def test_a_client_gone_without_a_close_frame_is_recorded_as_such(
    upstream: tuple[str, list[str]], tmp_path: Path
) -> None:
    """A client that drops its connection mid-session (no close frame: 1006) leaves the messages
    exchanged so far recorded, with no close frame of the client's in them (1006 never goes on
    the wire), and the proxy's log with no error."""
    base, _ = upstream
    log: list[str] = []
    with running(proxy_app(base, cassette_dir=tmp_path, log=log.append)) as proxy:
        ws = connect(proxy.replace("http://", "ws://") + PATH)
        first = str(ws.recv(timeout=30))
        ws.send(json.dumps({"type": "session.update", "session": {"type": "realtime", "instructions": "hi"}}))
        ws.recv(timeout=30)
        ws.socket.close()  # gone: no close frame
        cassette = _saved(tmp_path, 1)
    session_ = cassette.interactions[0].websocket
    assert session_ is not None
    assert [m.json()["type"] for m in session_.sent()] == ["session.update"]
    assert session_.received()[0].json() == json.loads(first)
    assert not any("Traceback" in line or "ValueError" in line for line in log), log


def test_a_replayed_stall_is_waited_for_real_under_instant_timing(tmp_path: Path) -> None:
    """As ``ssemock serve`` (and HTTP) waits it (issue 43 item 7): the proxy's replay is silent for
    the stall, so the client's own shorter timeout ends its read; a longer one gets the message."""
    shipped = Path(ssemock.__file__).parent / "cassettes" / "realtime" / "openai_realtime_text_tool_call.json"
    shutil.copy(shipped, tmp_path / "proxy.json")
    want = ssemock.Cassette.load(shipped).interactions[0].websocket
    assert want is not None
    options: dict[str, Any] = {"record_mode": "none", "faults": "stall:before_message=1,seconds=2"}
    with running(proxy_app("http://127.0.0.1:9", cassette_dir=tmp_path, **options)) as proxy:
        with connect(proxy.replace("http://", "ws://") + PATH) as ws:
            with pytest.raises(TimeoutError):
                ws.recv(timeout=0.05)  # nothing for 2 s (room for a loaded machine)
            assert str(ws.recv(timeout=30)) == str(want.received()[0].data)


def test_a_relayed_text_message_that_is_not_utf8_is_closed_1007_without_a_traceback(
    upstream: tuple[str, list[str]], tmp_path: Path
) -> None:
    """The relay of a session the proxy records (uvicorn's protocol) answers a text message that
    is not UTF-8 with 1007 and its reason, as the replays do; the server logs nothing (uvicorn
    printed a traceback), the relay's line says it closed 1007, and the next session is served."""
    base, _ = upstream
    log: list[str] = []
    with running(proxy_app(base, cassette_dir=tmp_path, record_mode="all", log=log.append)) as proxy:
        with server_log() as server_lines:
            url = proxy.replace("http://", "ws://") + PATH
            code, reason = close_after(url, encode_frame(Opcode.TEXT, b"\xff\xfehello", mask=b"abcd"))
            live = session(url)
    assert (code, reason) == (1007, "ssemock proxy: a text message that is not UTF-8")
    assert server_lines == []
    assert any("closed 1007" in line for line in log), log
    assert live
