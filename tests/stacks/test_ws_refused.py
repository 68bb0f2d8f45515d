"""A WebSocket upgrade the server refuses (401, 403, 429 with ``retry-after``, 503) is recorded as
such and replayed as such: on every stack of the WebSocket registry (and httpx-ws), the client
raises its own library's refusal with the recorded status, headers and body, offline."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from websockets.datastructures import Headers
from websockets.http11 import Response
from ws_servers import running

import ssemock
from ssemock.stacks import WS_STACKS

REFUSALS = {
    401: (
        "Unauthorized",
        [],
        {"error": {"message": "Incorrect API key provided.", "code": "invalid_api_key"}},
    ),
    403: ("Forbidden", [], {"error": {"message": "Project does not have access.", "code": "forbidden"}}),
    429: ("Too Many Requests", [("retry-after", "7")], {"error": {"code": "rate_limit_exceeded"}}),
    503: ("Service Unavailable", [("retry-after", "30")], {"error": {"code": "overloaded"}}),
}


def _refuser(status: int) -> Callable[[Any, Any], Response]:
    reason, extra, body = REFUSALS[status]
    raw = json.dumps(body).encode()

    def process_request(connection: Any, request: Any) -> Response:
        headers = Headers([*extra, ("content-type", "application/json"), ("content-length", str(len(raw)))])
        return Response(status, reason, headers, raw)

    return process_request


def _never(ws: Any) -> None:  # the upgrade is always refused
    raise AssertionError("upgraded")


def _websockets_asyncio(url: str) -> Any:
    from websockets.asyncio.client import connect
    from websockets.exceptions import InvalidStatus

    async def run() -> None:
        async with connect(url):
            pass

    with pytest.raises(InvalidStatus) as refused:
        asyncio.run(run())
    r = refused.value.response
    return r.status_code, r.headers.get("retry-after"), bytes(r.body or b"")


def _websockets_sync(url: str) -> Any:
    from websockets.exceptions import InvalidStatus
    from websockets.sync.client import connect

    with pytest.raises(InvalidStatus) as refused, connect(url):
        pass
    r = refused.value.response
    return r.status_code, r.headers.get("retry-after"), bytes(r.body or b"")


def _websockets_legacy(url: str) -> Any:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from websockets.legacy.client import connect
        from websockets.legacy.exceptions import InvalidStatusCode

    async def run() -> None:
        async with connect(url):
            pass

    with pytest.raises(InvalidStatusCode) as refused:
        asyncio.run(run())
    return refused.value.status_code, refused.value.headers.get("retry-after")


def _aiohttp_ws(url: str) -> Any:
    import aiohttp

    async def run() -> None:
        async with aiohttp.ClientSession() as session, session.ws_connect(url):
            pass

    with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
        asyncio.run(run())
    assert refused.value.headers is not None
    return refused.value.status, refused.value.headers.get("retry-after")


def _httpx_ws(url: str) -> Any:
    import httpx
    from httpx_ws import WebSocketUpgradeError, aconnect_ws, connect_ws

    with pytest.raises(WebSocketUpgradeError) as refused, httpx.Client() as client:
        with connect_ws(url.replace("ws://", "http://"), client):
            pass

    async def run() -> None:
        async with httpx.AsyncClient() as client, aconnect_ws(url.replace("ws://", "http://"), client):
            pass

    with pytest.raises(WebSocketUpgradeError) as arefused:
        asyncio.run(run())
    r, ar = refused.value.response, arefused.value.response
    return (r.status_code, r.headers.get("retry-after")), (ar.status_code, ar.headers.get("retry-after"))


#: each WebSocket stack's client (a new member of the registry needs its line here)
CLIENTS: dict[str, Callable[[str], Any]] = {
    "websockets": _websockets_asyncio,
    "websockets.sync": _websockets_sync,
    "websockets.legacy": _websockets_legacy,
    "aiohttp.ws": _aiohttp_ws,
}


@pytest.mark.parametrize("status", sorted(REFUSALS))
@pytest.mark.parametrize("stack", [*WS_STACKS, "httpx-ws"])
def test_a_refused_upgrade_is_recorded_and_replayed_as_refused(
    tmp_path: Path, stack: str, status: int
) -> None:
    client = _httpx_ws if stack == "httpx-ws" else CLIENTS[stack]  # KeyError: a stack with no test client
    path = tmp_path / "refused.json"
    with running(_never, process_request=_refuser(status)) as server:
        url = server.url("/v1/realtime?model=gpt-realtime")
        with ssemock.use_cassette(path, record_mode="once"):
            live = client(url)
    recorded, *again_ = ssemock.Cassette.load(path).interactions  # httpx-ws: sync, then async
    assert len(again_) == (1 if stack == "httpx-ws" else 0)
    assert recorded.websocket is None and recorded.response.status == status
    assert recorded.request.url == url
    retry = dict(REFUSALS[status][1]).get("retry-after")
    assert recorded.response.header("retry-after") == retry
    if stack != "httpx-ws":  # httpx-ws closes the refusal unread: its body never arrives
        assert json.loads(recorded.response.body) == REFUSALS[status][2]
    with ssemock.use_cassette(path, record_mode="none", allowed_hosts=[]) as player:  # the server is gone
        again = client(url)
    assert again == live
    first = live[0] if stack == "httpx-ws" else live
    assert first[:2] == (status, retry)
    if stack.startswith("websockets") and stack != "websockets.legacy":
        assert json.loads(live[2]) == REFUSALS[status][2]  # the body the client got, both times
    assert len(player.conversations) == (2 if stack == "httpx-ws" else 1)


def test_every_websocket_stack_has_a_client_here() -> None:
    assert set(WS_STACKS) <= set(CLIENTS)
