"""The network lock: in a replay nothing reaches the network that no intercepted stack sent, and
a recording warns of every connection it cannot tee."""

from __future__ import annotations

import logging
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
    "httpx": _httpx,
    "httpx2": _httpx2,
    "aiohttp": _aiohttp,
    "requests": _requests,
    "urllib": _urllib,
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
        except Exception:
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


def test_every_patch_is_removed_after_the_last_player() -> None:
    import asyncio.selector_events
    import ssl
    import subprocess

    owners = [
        socket.socket,
        ssl.SSLSocket,
        socket,
        subprocess.Popen,
        asyncio.selector_events._SelectorDatagramTransport,
        asyncio.selector_events._SelectorSocketTransport,
    ]
    before = [dict(vars(owner)) for owner in owners]
    with ssemock.replay(ssemock.Cassette(), block_subprocesses=True):
        assert [dict(vars(owner)) for owner in owners] != before
    assert [dict(vars(owner)) for owner in owners] == before


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


# -- every way out of the process's sockets ---------------------------------------------------

BLOCKED = "192.0.2.1"  # TEST-NET-1 (documentation only): refused before any packet leaves


class Datagrams:
    """A UDP socket on loopback that counts what arrives."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.address = self.sock.getsockname()

    def received(self) -> list[bytes]:
        got = []
        while True:
            try:
                got.append(self.sock.recv(100))
            except (TimeoutError, OSError):
                return got


@pytest.fixture
def datagrams() -> Iterator[Datagrams]:
    found = Datagrams()
    yield found
    found.sock.close()


def _udp() -> socket.socket:
    return socket.socket(socket.AF_INET, socket.SOCK_DGRAM)


def _sendto(address: tuple[str, int]) -> None:
    with _udp() as sock:
        sock.sendto(b"sendto", address)


def _sendto_flags(address: tuple[str, int]) -> None:
    with _udp() as sock:
        sock.sendto(b"sendto-flags", 0, address)


def _sendmsg(address: tuple[str, int]) -> None:
    with _udp() as sock:
        sock.sendmsg([b"sendmsg"], [], 0, address)


def _connected(address: tuple[str, int]) -> None:
    with _udp() as sock:
        sock.connect(address)
        sock.send(b"connected")


def _asyncio_connected(address: tuple[str, int]) -> None:
    import asyncio

    async def run() -> None:
        transport, _ = await asyncio.get_running_loop().create_datagram_endpoint(
            asyncio.DatagramProtocol, remote_addr=address
        )
        transport.sendto(b"asyncio-connected")
        transport.close()

    asyncio.run(run())


def _asyncio_unconnected(address: tuple[str, int]) -> None:
    import asyncio

    async def run() -> None:
        transport, _ = await asyncio.get_running_loop().create_datagram_endpoint(
            asyncio.DatagramProtocol, local_addr=("127.0.0.1", 0)
        )
        try:
            transport.sendto(b"asyncio-unconnected", address)
        finally:
            transport.close()

    asyncio.run(run())


def _asyncio_sock_sendto(address: tuple[str, int]) -> None:
    import asyncio

    async def run() -> None:
        with _udp() as sock:
            sock.setblocking(False)
            await asyncio.get_running_loop().sock_sendto(sock, b"sock_sendto", address)

    asyncio.run(run())


DATAGRAM_ROUTES: dict[str, Callable[[tuple[str, int]], None]] = {
    "sendto": _sendto,
    "sendto_flags": _sendto_flags,
    "sendmsg": _sendmsg,
    "connected": _connected,
    "asyncio_connected": _asyncio_connected,
    "asyncio_unconnected": _asyncio_unconnected,
    "asyncio_sock_sendto": _asyncio_sock_sendto,
}


@pytest.mark.parametrize("route", DATAGRAM_ROUTES)
def test_a_datagram_is_refused_before_it_is_sent(route: str, datagrams: Datagrams) -> None:
    send = DATAGRAM_ROUTES[route]
    with ssemock.replay(ssemock.Cassette(), allowed_hosts=[]):
        with pytest.raises(ssemock.NetworkBlockedError, match=rf"127\.0\.0\.1:{datagrams.address[1]}"):
            send(datagrams.address)
        with pytest.raises(ssemock.NetworkBlockedError, match=rf"{BLOCKED}:9\b"):
            send((BLOCKED, 9))
    assert datagrams.received() == []
    with ssemock.replay(ssemock.Cassette()):  # loopback allowed: the same route does deliver
        send(datagrams.address)
    assert len(datagrams.received()) == 1


@pytest.mark.parametrize("connected", [False, True])
def test_a_udp_socket_opened_before_the_replay_is_checked_when_it_sends(
    connected: bool, datagrams: Datagrams
) -> None:
    with _udp() as sock:
        sock.connect(datagrams.address)
        with ssemock.replay(ssemock.Cassette(), allowed_hosts=[]):
            with pytest.raises(ssemock.NetworkBlockedError):
                sock.sendmsg([b"old"]) if connected else sock.send(b"old")
        sock.send(b"after")  # the player is gone: the socket works again
    assert datagrams.received() == [b"after"]


def test_tcp_fast_open_is_refused_before_the_syn(listener: Listener) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        with ssemock.replay(ssemock.Cassette(), allowed_hosts=[]):
            with pytest.raises(ssemock.NetworkBlockedError, match=rf"{BLOCKED}:80"):
                sock.sendto(
                    b"GET / HTTP/1.1\r\n\r\n", getattr(socket, "MSG_FASTOPEN", 0x20000000), (BLOCKED, 80)
                )
            with pytest.raises(ssemock.NetworkBlockedError):
                sock.sendto(
                    b"GET", getattr(socket, "MSG_FASTOPEN", 0x20000000), (listener.host, listener.port)
                )
    assert listener.settle() == 0


LOOKUPS: dict[str, Callable[[], object]] = {
    "getaddrinfo": lambda: socket.getaddrinfo("api.blocked.invalid", 443),
    "gethostbyname": lambda: socket.gethostbyname("api.blocked.invalid"),
    "gethostbyname_ex": lambda: socket.gethostbyname_ex("api.blocked.invalid"),
    "gethostbyaddr": lambda: socket.gethostbyaddr(BLOCKED),
    "getnameinfo": lambda: socket.getnameinfo((BLOCKED, 80), 0),
    "getfqdn": lambda: socket.getfqdn("api.blocked.invalid"),
}


@pytest.mark.parametrize("lookup", LOOKUPS)
def test_every_name_lookup_is_refused(lookup: str) -> None:
    with ssemock.replay(ssemock.Cassette()):
        with pytest.raises(ssemock.NetworkBlockedError, match=r"api\.blocked\.invalid|192\.0\.2\.1"):
            LOOKUPS[lookup]()


def test_lookups_of_allowed_hosts_run() -> None:
    with ssemock.replay(ssemock.Cassette()):
        assert socket.gethostbyname("localhost").startswith("127.")
        assert socket.gethostbyname_ex("localhost")[2]
        assert socket.getnameinfo(("127.0.0.1", 80), socket.NI_NUMERICHOST | socket.NI_NUMERICSERV) == (
            "127.0.0.1",
            "80",
        )
        socket.gethostbyaddr("127.0.0.1")


def test_a_keep_alive_connection_opened_before_the_replay_is_checked_when_it_sends(server: str) -> None:
    import http.client

    host, port = server.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=5)
    try:
        conn.request("GET", "/echo")
        assert conn.getresponse().read()
        with ssemock.replay(ssemock.Cassette()):  # allowed: the same connection goes on
            conn.request("GET", "/echo?allowed")
            assert b"allowed" in conn.getresponse().read()
        with ssemock.replay(ssemock.Cassette(), allowed_hosts=[]):
            with pytest.raises(ssemock.NetworkBlockedError, match=rf"127\.0\.0\.1:{port}"):
                conn.request("GET", "/echo?inside")
    finally:
        conn.close()


def test_a_host_name_covers_every_address_it_resolves_to() -> None:
    """allowed_hosts=["localhost"] allows ::1 as well as 127.0.0.1 (where localhost names both)."""
    names = {info[4][0] for info in socket.getaddrinfo("localhost", None)}
    listeners = []
    for address in names:
        try:
            listeners.append(Listener(address))
        except OSError:
            continue
    assert listeners
    try:
        with ssemock.replay(ssemock.Cassette(), allowed_hosts=["localhost"]):
            for found in listeners:
                socket.create_connection((found.host, found.port), timeout=2).close()
        with ssemock.replay(ssemock.Cassette(), allowed_hosts=["localhost"]):  # learned from the lookup too
            for found in listeners:
                for *_, address in socket.getaddrinfo("localhost", found.port, type=socket.SOCK_STREAM):
                    if address[0] == found.host:
                        socket.create_connection(address[:2], timeout=2).close()
        assert all(found.settle() == 2 for found in listeners)
    finally:
        for found in listeners:
            found.close()


def test_a_server_of_the_test_answers_during_a_replay_that_allows_nothing(server: str) -> None:
    """A connection accepted by a local server is not a way out: the server answers a client that
    was let through (an ignored host here)."""
    with ssemock.replay(ssemock.Cassette(), allowed_hosts=[], ignore_hosts=["127.0.0.1"]):
        assert httpx.get(f"{server}/echo").status_code == 200


def test_a_tls_connection_opened_before_the_replay_is_checked_when_it_sends(tmp_path: object) -> None:
    import ssl
    import subprocess
    from pathlib import Path

    folder = Path(str(tmp_path))
    key, cert = folder / "key.pem", folder / "cert.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            str(key),
            "-out",
            str(cert),
            "-days",
            "1",
            "-subj",
            "/CN=localhost",
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_context.load_cert_chain(cert, key)
    received: list[bytes] = []
    listening = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        conn, _ = listening.accept()
        with server_context.wrap_socket(conn, server_side=True) as tls:
            while data := tls.recv(100):
                received.append(data)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    client_context = ssl.create_default_context(cafile=str(cert))
    client_context.check_hostname = False
    with client_context.wrap_socket(socket.create_connection(listening.getsockname())) as tls:
        tls.sendall(b"before")
        with ssemock.replay(ssemock.Cassette(), allowed_hosts=[]):
            with pytest.raises(ssemock.NetworkBlockedError, match=r"127\.0\.0\.1"):
                tls.sendall(b"inside")
        tls.sendall(b"after")
    thread.join(10)
    listening.close()
    assert b"".join(received) == b"beforeafter"


def test_a_host_name_with_terminal_escapes_never_drives_the_terminal() -> None:
    """The refusal names the host as text: an escape in it shows as ``\\u001b``."""
    with ssemock.replay(ssemock.Cassette(), allowed_hosts=[]):
        with pytest.raises(ssemock.NetworkBlockedError) as info:
            socket.getaddrinfo("evil\x1b]0;owned\x07.invalid", 443)
    message = str(info.value)
    assert "\x1b" not in message and "\x07" not in message and "\\u001b" in message


def _tcp_pair() -> tuple[socket.socket, socket.socket, socket.socket]:
    """A loopback TCP listener, a client connected to it and the accepted connection."""
    listening = socket.create_server(("127.0.0.1", 0))
    client = socket.create_connection(listening.getsockname()[:2], timeout=5)
    accepted, _ = listening.accept()
    accepted.settimeout(5)
    return listening, client, accepted


@pytest.mark.parametrize("how", ["write", "writev", "sendfile"])
def test_a_write_on_the_descriptor_of_a_connection_opened_before_the_replay_is_refused(
    how: str, tmp_path: object
) -> None:
    import os
    from pathlib import Path

    payload = Path(str(tmp_path)) / "payload"
    payload.write_bytes(b"old")
    listening, client, accepted = _tcp_pair()
    with listening, client, accepted, payload.open("rb") as source:
        writes: dict[str, Callable[[], object]] = {
            "write": lambda: os.write(client.fileno(), b"old"),
            "writev": lambda: os.writev(client.fileno(), [b"o", b"ld"]),
            "sendfile": lambda: os.sendfile(client.fileno(), source.fileno(), 0, 3),
        }
        with ssemock.replay(ssemock.Cassette(), allowed_hosts=[]):
            with pytest.raises(
                ssemock.NetworkBlockedError, match=rf"127\.0\.0\.1:{listening.getsockname()[1]}"
            ):
                writes[how]()
        writes[how]()  # the player is gone: the descriptor works again
        client.shutdown(socket.SHUT_WR)
        received = b""
        while chunk := accepted.recv(64):
            received += chunk
    assert received == b"old"  # only the write after the replay arrived


def test_descriptor_writes_that_are_not_a_way_out_pass_during_a_replay_that_allows_nothing(
    tmp_path: object, capfd: pytest.CaptureFixture[str]
) -> None:
    import os
    from pathlib import Path

    read_end, write_end = os.pipe()
    left, right = socket.socketpair()  # a Unix socket: not network
    listening = socket.create_server(("127.0.0.1", 0))
    client = socket.create_connection(listening.getsockname()[:2], timeout=5)
    with open(Path(str(tmp_path)) / "log", "wb") as log, left, right, listening, client:
        with ssemock.replay(ssemock.Cassette(), allowed_hosts=[]):
            os.write(1, b"to pytest's capture\n")  # pytest's own output capture writes to descriptors
            os.write(write_end, b"pipe")
            os.write(log.fileno(), b"file")
            os.write(left.fileno(), b"unix")
            accepted, _ = listening.accept()  # a server of the test answering during the replay
            with accepted:
                os.write(accepted.fileno(), b"answer")
        assert client.recv(16) == b"answer"
        assert os.read(read_end, 16) == b"pipe"
        assert right.recv(16) == b"unix"
    os.close(read_end)
    os.close(write_end)
    assert (Path(str(tmp_path)) / "log").read_bytes() == b"file"
    assert "to pytest's capture" in capfd.readouterr().out


@pytest.mark.parametrize("tls", [False, True])
def test_an_asyncio_connection_opened_before_the_replay_raises_the_lock_error_where_it_writes(
    tls: bool, caplog: pytest.LogCaptureFixture
) -> None:
    """An asyncio stream (plain or TLS) opened before a replay that allows nothing: the code that
    writes on it gets `NetworkBlockedError` from ``write``, not a ``ConnectionResetError`` later
    with asyncio's "Fatal write error" traceback in the log."""
    import asyncio
    import ssl

    import trustme

    ca = trustme.CA()
    server_ssl = client_ssl = None
    if tls:
        server_ssl = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ca.issue_cert("127.0.0.1").configure_cert(server_ssl)
        client_ssl = ssl.create_default_context()
        ca.configure_trust(client_ssl)

    async def run() -> None:
        held: list[asyncio.StreamWriter] = []

        async def hold(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            held.append(writer)  # the connection stays open, no task waits on it

        server = await asyncio.start_server(hold, "127.0.0.1", 0, ssl=server_ssl)
        port = server.sockets[0].getsockname()[1]
        _, writer = await asyncio.open_connection("127.0.0.1", port, ssl=client_ssl)
        try:
            with ssemock.replay(ssemock.Cassette(), allowed_hosts=[]):
                with pytest.raises(
                    ssemock.NetworkBlockedError, match=rf"opened before the replay, to 127\.0\.0\.1:{port}"
                ):
                    writer.write(b"GET / HTTP/1.1\r\n\r\n")
        finally:
            for each in (writer, *held):
                each.close()
            server.close()
            await server.wait_closed()

    asyncio.run(run())
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
