"""The network lock: in a replay nothing reaches the network that no intercepted stack sent, and
a recording warns of every connection it cannot tee."""

from __future__ import annotations

import socket
import threading
import time
import urllib.request
import warnings
from collections.abc import Callable, Iterator

import httpx
import httpx2
import pytest

import ssemock


class Listener:
    """A loopback TCP listener that counts the connections it accepts."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        self.sock = socket.create_server((host, 0))
        self.sock.settimeout(0.05)
        self.host, self.port = host, self.sock.getsockname()[1]
        self.accepted = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except (TimeoutError, OSError):
                continue
            self.accepted += 1
            conn.close()

    def settle(self) -> int:
        time.sleep(0.1)  # time for an accept, had a connection been made
        return self.accepted

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.sock.close()


@pytest.fixture
def listener() -> Iterator[Listener]:
    found = Listener()
    yield found
    found.close()


def _httpx(url: str) -> None:
    httpx.get(url)


def _httpx2(url: str) -> None:
    httpx2.get(url)


def _urllib(url: str) -> None:
    urllib.request.urlopen(url, timeout=2)


def _socket(url: str) -> None:
    host, port = url.removeprefix("http://").split(":")
    socket.create_connection((host, int(port)), timeout=2).close()


def _aiohttp(url: str) -> None:
    import asyncio

    import aiohttp

    async def get() -> None:
        async with aiohttp.ClientSession() as session, session.get(url) as response:
            await response.read()

    asyncio.run(get())


def _requests(url: str) -> None:
    import requests
    requests.get(url, timeout=2)


CLIENTS: dict[str, Callable[[str], None]] = {
    "httpx": _httpx, "httpx2": _httpx2, "aiohttp": _aiohttp, "requests": _requests, "urllib": _urllib,
    "socket": _socket,
}


@pytest.mark.parametrize("client", CLIENTS)
def test_allowed_hosts_empty_lets_nothing_reach_a_loopback_listener(client: str, listener: Listener) -> None:
    url = f"http://{listener.host}:{listener.port}"
    with ssemock.replay(ssemock.Cassette(), allowed_hosts=[]):
        with pytest.raises((ssemock.UnmatchedRequestError, ssemock.NetworkBlockedError)) as caught:
            CLIENTS[client](url)
    assert listener.settle() == 0
    if isinstance(caught.value, ssemock.NetworkBlockedError):  # a stack ssemock does not intercept
        assert f"{listener.host}:{listener.port}" in str(caught.value)
        assert "allowed_hosts" in str(caught.value)


def test_the_error_is_no_exception_so_retry_loops_do_not_swallow_it(listener: Listener) -> None:
    with ssemock.replay(ssemock.Cassette(), allowed_hosts=[]):
        try:
            _socket(f"http://{listener.host}:{listener.port}")
        except Exception:  # noqa: BLE001 - what an SDK retry loop catches
            pytest.fail("the lock raised an Exception that a retry loop would swallow")
        except ssemock.NetworkBlockedError:
            pass
        else:
            pytest.fail("the connection was not blocked")


def test_loopback_is_allowed_by_default(listener: Listener) -> None:
    with ssemock.replay(ssemock.Cassette()):
        _socket(f"http://{listener.host}:{listener.port}")
        _urllib_probe = socket.create_connection(("localhost", listener.port), timeout=2)
        _urllib_probe.close()
    assert listener.settle() == 2


def test_names_addresses_and_networks(listener: Listener) -> None:
    other = Listener("127.0.0.2")
    try:
        with ssemock.replay(ssemock.Cassette(), allowed_hosts=["127.0.0.1"]):
            _socket(f"http://127.0.0.1:{listener.port}")
            with pytest.raises(ssemock.NetworkBlockedError, match=r"127\.0\.0\.2:\d+"):
                _socket(f"http://127.0.0.2:{other.port}")
        with ssemock.replay(ssemock.Cassette(), allowed_hosts=["127.0.0.0/8"]):
            _socket(f"http://127.0.0.2:{other.port}")
        with ssemock.replay(ssemock.Cassette(), allowed_hosts=["*.allowed.invalid"]):
            with pytest.raises(ssemock.NetworkBlockedError, match=r"api\.blocked\.invalid:443"):
                socket.getaddrinfo("api.blocked.invalid", 443)
            with pytest.raises(socket.gaierror):  # allowed: the lookup itself runs (and fails here)
                socket.getaddrinfo("api.allowed.invalid", 443)
        assert listener.settle() == 1 and other.settle() == 1
    finally:
        other.close()


def test_a_string_is_refused_as_allowed_hosts() -> None:
    with pytest.raises(TypeError, match=r"\['api.x.com'\]"):
        ssemock.replay(ssemock.Cassette(), allowed_hosts="api.x.com")  # type: ignore[arg-type]


def test_a_recording_warns_of_a_connection_it_cannot_tee(tmp_path: object, listener: Listener) -> None:
    from pathlib import Path
    path = Path(str(tmp_path)) / "c.json"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with ssemock.use_cassette(path, record_mode="once", allowed_hosts=[]):
            _socket(f"http://{listener.host}:{listener.port}")
            _socket(f"http://{listener.host}:{listener.port}")
    assert listener.settle() == 2  # a recording does not block
    found = [str(w.message) for w in caught if issubclass(w.category, ssemock.SsemockWarning)]
    assert len(found) == 1 and f"{listener.host}:{listener.port} is not recorded" in found[0]


def test_the_socket_is_unpatched_after_the_last_player() -> None:
    with ssemock.replay(ssemock.Cassette()):
        with ssemock.replay(ssemock.Cassette()):
            assert "connect" in socket.socket.__dict__
        assert "connect" in socket.socket.__dict__
    assert "connect" not in socket.socket.__dict__ and socket.getaddrinfo.__module__ == "socket"


def test_a_pass_through_route_reaches_its_host_by_name_from_async_clients(server: str) -> None:
    """asyncio looks names up in a thread that does not see the pass-through's context."""
    import asyncio

    import aiohttp

    url = server.replace("127.0.0.1", "localhost") + "/echo"

    async def both() -> tuple[int, int]:
        async with httpx.AsyncClient() as client:
            first = (await client.get(url)).status_code
        async with aiohttp.ClientSession() as session, session.get(url) as response:
            return first, response.status

    with ssemock.replay(ssemock.Cassette(), allowed_hosts=[]) as player:
        player.router.route(host="localhost").pass_through()
        assert asyncio.run(both()) == (200, 200)
