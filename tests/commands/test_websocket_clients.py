"""Real WebSocket clients against ``ssemock serve`` and ``ssemock proxy`` over real sockets: the npm
``ws`` package (tests/node/realtime.mjs; Node 20 has no global ``WebSocket``), the openai Node
SDK's Realtime client (``OpenAIRealtimeWS``, on ws) and a headless Chromium's ``WebSocket``
(tests/browser/websocket.html) speak an OpenAI Realtime-shaped session.

ws and the SDK record it through the proxy from a loopback stand-in (issue 36), ws replays it
through the proxy (record mode ``none``), and the three clients replay it through ``serve`` under
several wire chunkings and a re-framing (issue 35, item 6): each sees the messages the recording
holds, in order, and closes cleanly. A client that sends another message is closed with 1008 and a reason,
and the server's log has the diff. Node runs three times (recording, the
proxy's replays, every serve replay), Chromium once (every variant, one page)."""

from __future__ import annotations

import html
import json
import re
import subprocess
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import needs
import pytest
from chromium import settled_dom
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import Route
from test_proxy_clients import NODE_DIR, TIMEOUT
from waiting import until
from websockets.sync.server import ServerConnection
from ws_servers import running as ws_running

import ssemock
from ssemock.commands import serve
from ssemock.commands.loopback import running
from ssemock.commands.proxy import app as proxy_app

PAGE = Path(__file__).parent.parent / "browser" / "websocket.html"
PATH = "/v1/realtime?model=gpt-realtime"
CHUNKINGS = ["as_recorded", "bytewise", "mid_header", "mid_utf8", "per_event", "coalesced", "random:3"]
VARIANTS = [*((c, None) for c in CHUNKINGS), ("mid_utf8", "fragments:3+pings")]
DELTAS = ["Ça", " va", " très", " bien ☀️", " — 日本語", "."]


def stand_in(ws: ServerConnection) -> None:
    """OpenAI Realtime's shape (GA events), text with multi-byte characters, each event its own
    frame written as the server writes it (``ensure_ascii=False``: UTF-8 on the wire)."""
    n = 0

    def send(event: dict[str, Any]) -> None:
        nonlocal n
        n += 1
        ws.send(json.dumps({**event, "event_id": f"event_{n}"}, ensure_ascii=False))

    send(
        {"type": "session.created", "session": {"type": "realtime", "id": "sess_1", "model": "gpt-realtime"}}
    )
    for raw in ws:
        event = json.loads(raw)
        if event["type"] == "session.update":
            send(
                {
                    "type": "session.updated",
                    "session": {"type": "realtime", "id": "sess_1", **event["session"]},
                }
            )
        elif event["type"] == "response.create":
            send({"type": "response.created", "response": {"id": "resp_1", "status": "in_progress"}})
            for delta in DELTAS:
                send({"type": "response.output_text.delta", "response_id": "resp_1", "delta": delta})
            send({"type": "response.output_text.done", "response_id": "resp_1", "text": "".join(DELTAS)})
            send(
                {
                    "type": "response.done",
                    "response": {"id": "resp_1", "status": "completed", "usage": {"total_tokens": 42}},
                }
            )


def run_node(runs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """tests/node/realtime.mjs once for all ``runs``; the results by label."""
    proc = subprocess.run(
        [needs.node(), str(NODE_DIR / "realtime.mjs"), json.dumps(runs)],
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=TIMEOUT,
        cwd=NODE_DIR,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return {r["label"]: r for r in json.loads(proc.stdout)}


def _ws(url: str) -> str:
    return url.replace("http://", "ws://", 1)


@pytest.fixture(scope="module")
def recorded(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[Path, dict[str, dict[str, Any]], list[str]]]:
    """Node records the session through the proxy, with ws (cassette ``realtime``) and with the
    openai SDK's OpenAIRealtimeWS (cassette ``sdk``): the first cassette, what each client saw
    live (by label: ``live``, ``sdk``), and the proxy's log."""
    if not (NODE_DIR / "node_modules" / "ws").is_dir():
        needs.node()  # (the same skip, or CI failure, as the other Node tests)
        pytest.fail("tests/node/node_modules/ws is missing: npm ci --prefix tests/node")
    folder = tmp_path_factory.mktemp("ws-clients")
    log: list[str] = []
    with (
        ws_running(stand_in) as up,
        running(proxy_app(f"http://127.0.0.1:{up.port}", cassette_dir=folder, log=log.append)) as proxy,
    ):
        live = run_node(
            [
                {"url": _ws(proxy) + "/_ssemock/realtime" + PATH, "label": "live"},
                {"client": "openai", "base": proxy + "/_ssemock/sdk/v1", "label": "sdk"},
            ]
        )
        until((folder / "realtime.json").exists, "the proxy's save of the session")
        until((folder / "sdk.json").exists, "the proxy's save of the SDK's session")
    yield folder / "realtime.json", live, log


def received(path: Path) -> list[str]:
    session = ssemock.Cassette.load(path).interactions[0].websocket
    assert session is not None
    return [str(m.data) for m in session.received()]


def test_node_records_through_the_proxy_and_replays_through_it(
    recorded: tuple[Path, dict[str, dict[str, Any]], list[str]],
) -> None:
    path, clients, log = recorded
    live, sdk = clients["live"], clients["sdk"]
    assert (live["error"], live["close"]) == (None, 1000), live
    want = received(path)
    assert live["messages"] == want and len(want) == 11
    # the SDK recorded the same session (its events parsed), its key never written
    assert (sdk["error"], sdk["close"]) == (None, 1000), sdk
    assert received(path.parent / "sdk.json") == want
    assert [json.loads(m) for m in sdk["messages"]] == [json.loads(m) for m in want]
    assert "sk-test-node" not in (path.parent / "sdk.json").read_text(encoding="utf-8")
    assert "".join(json.loads(m).get("delta", "") for m in want) == "".join(DELTAS)
    session = ssemock.Cassette.load(path).interactions[0].websocket
    assert session is not None and session.close.code == 1000
    assert [json.loads(str(m.data))["type"] for m in session.sent()] == ["session.update", "response.create"]
    assert any("recording into realtime" in line for line in log)
    # replayed by the proxy (record mode none: nothing reaches an upstream, port 9 has none)
    replay_log: list[str] = []
    folder = path.parent
    with running(
        proxy_app("http://127.0.0.1:9", cassette_dir=folder, record_mode="none", log=replay_log.append)
    ) as proxy:
        base = _ws(proxy) + "/_ssemock/realtime"
        got = run_node(
            [
                {"url": base + PATH, "label": "replay"},
                {"url": base + PATH, "label": "other", "instructions": "Answer in English"},
                {"url": base + "/v1/realtime?model=other", "label": "unrecorded"},
            ]
        )
    assert (got["replay"]["messages"], got["replay"]["close"], got["replay"]["error"]) == (want, 1000, None)
    other = got["other"]
    assert other["close"] == 1008 and other["messages"] == want[:1], other
    assert other["reason"].startswith("ssemock: unmatched message, differs at $.session.instructions")
    assert any("closest recorded: client message #0" in line for line in replay_log), replay_log
    assert any("differs at $.session.instructions" in line for line in replay_log)
    assert got["unrecorded"]["error"] == "Unexpected server response: 404", got["unrecorded"]
    assert any("records nothing new" in line and "model=other" in line for line in replay_log), replay_log


def _page_lists(dom: str) -> dict[str, tuple[list[str], str | None]]:
    status = re.search(r'<p id="status">([^<]*)</p>', dom)
    assert status and status.group(1) == "done", dom[-3000:]
    out = {}
    for src, close, items in re.findall(
        r'<ol data-src="([^"]*)"(?: data-close="(\d+)")?>(.*?)</ol>', dom, re.S
    ):
        out[html.unescape(src)] = ([html.unescape(t) for t in re.findall(r"<li>([^<]*)</li>", items)], close)
    return out


async def _page(request: Request) -> HTMLResponse:
    return HTMLResponse(PAGE.read_text(encoding="utf-8"))


def test_node_and_chromium_replay_through_serve_under_every_wire_chunking(
    recorded: tuple[Path, dict[str, dict[str, Any]], list[str]], tmp_path: Path
) -> None:
    path, _, _ = recorded
    want = received(path)
    with ExitStack() as stack:
        apps = {
            (chunking, transform): serve.app(path, chunking=chunking, transform=transform)
            for chunking, transform in VARIANTS
        }
        http = {v: stack.enter_context(running(a)) for v, a in apps.items()}
        bases = {v: _ws(url) + PATH for v, url in http.items()}
        results = run_node(
            [{"url": url, "label": f"{v}"} for v, url in bases.items()]
            + [{"client": "openai", "base": f"{url}/v1", "label": f"sdk {v}"} for v, url in http.items()]
        )
        pages = stack.enter_context(running(Starlette(routes=[Route("/websocket.html", _page)])))
        sources = "&".join(f"src={url}" for url in bases.values())
        browser = _page_lists(
            settled_dom(f"{pages}/websocket.html?{sources}", tmp_path / "profile", "window.finished")
        )
        replayers = {v: a.state.ssemock for v, a in apps.items()}
    for variant, url in bases.items():
        node = results[f"{variant}"]
        assert (node["messages"], node["close"], node["error"]) == (want, 1000, None), (variant, node)
        sdk = results[f"sdk {variant}"]
        assert (sdk["close"], sdk["error"]) == (1000, None), (variant, sdk)
        assert [json.loads(m) for m in sdk["messages"]] == [json.loads(m) for m in want], variant
        assert browser[url] == (want, "1000"), (variant, browser[url])
        sessions = list(replayers[variant].sessions)
        assert len(sessions) == 3 and all(not s.mismatches and not s.unsent() for s in sessions), variant
    # the wire was cut as asked: bytewise wrote every byte on its own (the same bytes, in order)
    wire = sum(len(u.data) for u in replayers[("as_recorded", None)].sessions[0].units)
    bytewise = replayers[("bytewise", None)].sessions[0]
    assert bytewise.reads == list(range(1, wire + 1))
