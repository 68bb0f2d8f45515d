"""The network lock: nothing escapes a replay, and nothing is silently left unrecorded.

While a player is active, every way out of the process's Python sockets that no intercepted
client stack sends for real is checked against the innermost player's ``allowed_hosts`` (and its
``ignore_hosts``, which are always let through): TCP connects, datagrams (``sendto`` /
``sendmsg``, connected or not, TCP Fast Open, asyncio datagram endpoints), every name lookup of
`socket`, and connections opened before the player started, checked when they send (through
the socket, an asyncio transport, or ``os.write`` / ``os.writev`` / ``os.sendfile`` on its file
descriptor). Loopback
is allowed by default (tests run their own local servers), ``[]`` allows nothing; entries are
names (``api.x.com``, ``*.x.com``), addresses and networks (``10.0.0.0/8``), and a name covers
every address it resolves to. A replay raises [`ssemock.NetworkBlockedError`][ssemock.NetworkBlockedError] naming host
and port before anything is sent; a recording warns that the connection is not recorded (urllib,
a C extension, a stack ssemock cannot tee). Unix sockets are not network and always pass.
"""

from __future__ import annotations

import asyncio.selector_events
import fnmatch
import functools
import ipaddress
import os
import socket
import ssl
import stat
import threading
import warnings
import weakref
from collections.abc import Iterable, Sequence
from typing import Any

from ..plan.errors import NetworkBlockedError, SsemockWarning
from ..scan.shapes import safe_message
from . import Patch, is_passing

__all__ = ["Guard", "Hosts", "blocking", "engage", "release"]

_LOOPBACK = ("localhost", "127.0.0.0/8", "::1/128")
_STACKS = "httpx, httpx2, aiohttp, urllib3 (requests, botocore)"
_resolve = socket.getaddrinfo  # the real lookup, for the names the user allowed
Address = ipaddress.IPv4Address | ipaddress.IPv6Address


@functools.lru_cache(maxsize=512)
def _parse(entry: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network | str:
    """An allowed_hosts entry as a network, else as a lower-case name (parsed once per entry:
    every player, so every marked test, builds a Guard)."""
    try:
        return ipaddress.ip_network(entry.strip("[]"), strict=False)
    except ValueError:
        return entry.lower().rstrip(".")


def _address(host: str) -> Address | None:
    name = host.lower().rstrip(".").strip("[]").split("%", 1)[0]
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def _listed(hosts: Sequence[str] | None, what: str) -> list[str]:
    if isinstance(hosts, str):
        raise TypeError(f"{what} must be a list of hosts, got the string {hosts!r} (write [{hosts!r}])")
    return list(hosts or ())


class Hosts:
    """A list of hosts: names (``*`` wildcards), addresses and networks. An address is in it when
    a network holds it or a listed name resolves to it (looked up once, when first needed)."""

    def __init__(self, entries: Iterable[str]) -> None:
        self.entries = list(entries)
        parsed = [_parse(entry) for entry in self.entries]
        self._networks = [p for p in parsed if not isinstance(p, str)]
        self._names = [p for p in parsed if isinstance(p, str)]
        self._learned: set[Address] = set()  # what listed names resolved to in this process
        self._resolved = False

    def __contains__(self, host: str) -> bool:
        address = _address(host)
        if address is None:
            name = host.lower().rstrip(".")
            return any(fnmatch.fnmatchcase(name, pattern) for pattern in self._names)
        if any(address in network for network in self._networks) or address in self._learned:
            return True
        if not self._resolved:  # e.g. allowed_hosts=["localhost"] covers ::1 as well as 127.0.0.1
            self._resolved = True
            for name in self._names:
                if not any(c in name for c in "*?["):
                    self.learn(_lookup(name))
        return address in self._learned

    def learn(self, found: Iterable[Any]) -> None:
        """Remember the addresses a listed name resolved to (``getaddrinfo`` or ``gethostbyname``
        results): a connection to them is a connection to the name."""
        for item in found:
            host = item[4][0] if isinstance(item, tuple) and len(item) == 5 else item
            address = _address(str(host))
            if address is not None:
                self._learned.add(address)

    @property
    def resolvable(self) -> bool:
        """Whether every entry can be judged from a name alone (no network beyond loopback that a
        name could resolve into)."""
        return all(network.is_loopback for network in self._networks)


def _lookup(name: str) -> list[Any]:
    try:
        return list(_resolve(name, None))
    except OSError:
        return []


class Guard:
    """One player's policy: which hosts may be reached, and whether others fail or warn."""

    def __init__(
        self,
        *,
        allowed_hosts: Sequence[str] | None,
        blocks: bool,
        where: str,
        ignore_hosts: Sequence[str] | None = None,
        ignore_localhost: bool = False,
    ) -> None:
        entries = list(_LOOPBACK) if allowed_hosts is None else _listed(allowed_hosts, "allowed_hosts")
        self.allowed_hosts = entries
        self.ignore_hosts = [*_listed(ignore_hosts, "ignore_hosts"), *(_LOOPBACK if ignore_localhost else ())]
        self.blocks = blocks
        self.where = where
        self._allowed = Hosts([*entries, *self.ignore_hosts])
        self._ignored = Hosts(self.ignore_hosts)
        self._seen: dict[str, bool] = {}
        self._warned: set[tuple[str, int]] = set()
        self.known: weakref.WeakSet[socket.socket] = weakref.WeakSet()  # sockets checked at connect or accept

    def allows(self, host: str) -> bool:
        """Whether a connection to ``host`` (a name or an address) may go out."""
        known = self._seen.get(host)
        if known is None:
            known = self._seen[host] = host in self._allowed
        return known

    def ignores(self, host: str) -> bool:
        """Whether requests to ``host`` are never recorded nor served (``ignore_hosts``)."""
        return bool(self.ignore_hosts) and host in self._ignored

    def learn(self, name: str, found: Iterable[Any]) -> None:
        """A lookup of an allowed ``name`` returned ``found``: its addresses are allowed too."""
        found = list(found)
        self._allowed.learn(found)
        if name in self._ignored:
            self._ignored.learn(found)
        self._seen = {}

    def decides_names(self) -> bool:
        """Whether a name lookup can be judged by the name alone (no network entries that a name
        could resolve into)."""
        return self._allowed.resolvable

    def refuse(self, host: str, port: Any, what: str = "a connection to") -> None:
        if self.blocks:
            raise NetworkBlockedError(
                safe_message(
                    f"ssemock: blocked {what} {host if port is None else f'{host}:{port}'} during a replay ({self.where}): no client "
                    f"stack that ssemock intercepts ({_STACKS}) sent it, so it would reach the network. "
                    f"Allowed hosts: {self.allowed_hosts or 'none'}. To allow it: allowed_hosts=[{host!r}] "
                    f"(a keyword of replay()/use_cassette(), the marker, ssemock_config, "
                    f"--ssemock-allowed-hosts or the ini key ssemock_allowed_hosts)."
                )
            )
        with _warn_lock:
            if (host, port) in self._warned:
                return
            self._warned.add((host, port))
        warnings.warn(
            safe_message(
                f"ssemock: a connection to {host}:{port} is not recorded ({self.where}): no client stack "
                f"that ssemock intercepts ({_STACKS}) sent it. Send it through one of those, or run the "
                f"client against `ssemock serve`."
            ),
            SsemockWarning,
            stacklevel=4,
        )


_guards: list[Guard] = []  # active players' guards, outermost first
_warn_lock = threading.Lock()
_state = threading.Lock()


def _check(address: Any, what: str = "a connection to") -> Guard | None:
    """Refuse (or warn of) a connection or datagram to ``address``; the guard that let it pass."""
    if not _guards or not isinstance(address, tuple) or len(address) < 2:
        return None
    guard = _guards[-1]
    host = str(address[0])
    if not is_passing() and not guard.allows(host):
        guard.refuse(host, address[1], what)
    return guard


def _check_peer(sock: socket.socket) -> None:
    """Refuse a send on a socket the lock has not seen connect (one opened before the player
    started, a keep-alive connection reused) to a host that is not allowed."""
    if not _guards or is_passing():
        return
    guard = _guards[-1]
    if not guard.blocks or sock in guard.known:
        return
    try:
        peer = sock.getpeername()
    except OSError:  # not connected: the send raises its own error
        return
    if isinstance(peer, tuple) and not (guard.allows(str(peer[0])) or is_passing(str(peer[0]))):
        guard.refuse(str(peer[0]), peer[1], "a send on a connection opened before the replay, to")
    guard.known.add(sock)


def _check_fd(fd: Any) -> None:
    """Refuse a write on a file descriptor that is a socket connected to a host that is not
    allowed (``os.write`` / ``os.writev`` / ``os.sendfile`` on a connection opened before the
    replay). Anything else passes after one ``fstat``: files, pipes, terminals (pytest's own
    output capture writes to file descriptors too), Unix sockets, a socket not connected."""
    if not _guards or is_passing() or not isinstance(fd, int):
        return
    guard = _guards[-1]
    if not guard.blocks:
        return
    try:
        if not stat.S_ISSOCK(os.fstat(fd).st_mode):
            return
        with socket.socket(fileno=os.dup(fd)) as sock:  # a copy: the caller's descriptor stays theirs
            peer = sock.getpeername()
    except (OSError, ValueError):  # closed, not connected, a family Python cannot name: its own error
        return
    if not isinstance(peer, tuple) or guard.allows(str(peer[0])) or is_passing(str(peer[0])):
        return
    if any(_fileno(known) == fd for known in list(guard.known)):  # seen connect or accept in the replay
        return
    guard.refuse(str(peer[0]), peer[1], "a write on a connection opened before the replay, to")


def _fileno(sock: socket.socket) -> int:
    try:
        return sock.fileno()
    except OSError:
        return -1


def _fd_write(original: Any) -> Any:
    def write(fd: Any, *args: Any, **kwargs: Any) -> Any:  # os.write, os.writev, os.sendfile(out_fd, ...)
        _check_fd(fd)
        return original(fd, *args, **kwargs)

    return write


def _connect(original: Any) -> Any:
    def connect(self: socket.socket, address: Any) -> Any:
        guard = _check(address)
        if guard is not None:  # its sends need no check of their own
            guard.known.add(self)
        return original(self, address)

    return connect


def _accept(original: Any) -> Any:
    def accept(self: socket.socket) -> tuple[socket.socket, Any]:
        conn, peer = original(self)
        if _guards:  # a connection made to us (a local server of the test): not a way out
            _guards[-1].known.add(conn)
        return conn, peer

    return accept


def _send(original: Any) -> Any:
    def send(self: socket.socket, *args: Any, **kwargs: Any) -> Any:
        _check_peer(self)
        return original(self, *args, **kwargs)

    return send


def _sendto(original: Any) -> Any:
    def sendto(
        self: socket.socket, data: Any, *rest: Any
    ) -> Any:  # (data, address) or (data, flags, address)
        if rest:
            _check(rest[-1], "a send to")
        return original(self, data, *rest)

    return sendto


def _sendmsg(original: Any) -> Any:
    def sendmsg(self: socket.socket, buffers: Any, *rest: Any) -> Any:  # ancdata, flags, address
        if len(rest) >= 3 and rest[2] is not None:
            _check(rest[2], "a send to")
        else:
            _check_peer(self)
        return original(self, buffers, *rest)

    return sendmsg


def _datagram_sendto(original: Any) -> Any:
    """asyncio's datagram transport turns any error of the socket into a logged fatal error:
    the lock refuses before it, so the caller of ``transport.sendto`` gets the error."""

    def sendto(self: Any, data: Any, addr: Any = None) -> None:
        _check(addr if addr is not None else getattr(self, "_address", None), "a datagram to")
        original(self, data, addr)

    return sendto


def _transport_write(original: Any) -> Any:
    """asyncio's socket transport turns an error of its socket's send into a logged fatal error
    (a traceback) and hands its caller a ``ConnectionResetError``: the lock checks the peer
    before it, so the code that writes (``StreamWriter.write``, through a TLS transport too) gets
    the lock's error."""

    def write(self: Any, data: Any) -> None:
        sock = getattr(self, "_sock", None)
        if isinstance(sock, socket.socket):
            _check_peer(sock)
        original(self, data)

    return write


def _lookup_check(name: Any, port: Any, learn: bool) -> tuple[Guard | None, str]:
    """Refuse a lookup of a name that is not allowed; the guard to teach the answer to."""
    if not _guards or name is None:
        return None, ""
    guard = _guards[-1]
    text = name.decode("idna") if isinstance(name, bytes) else str(name)
    if is_passing(text):
        return None, text
    if guard.blocks and guard.decides_names() and not guard.allows(text):
        guard.refuse(text, port, "a name lookup of")
    return (guard if learn and guard.allows(text) else None), text


def _getaddrinfo(original: Any) -> Any:
    def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        guard, name = _lookup_check(host, port, learn=True)
        found = original(host, port, *args, **kwargs)
        if guard is not None and _address(name) is None:
            guard.learn(name, found)
        return found

    return getaddrinfo


def _gethostbyname(original: Any) -> Any:
    def gethostbyname(host: Any) -> Any:
        guard, name = _lookup_check(host, None, learn=True)
        found = original(host)
        if guard is not None and _address(name) is None:
            guard.learn(name, found[2] if isinstance(found, tuple) else [found])
        return found

    return gethostbyname


def _gethostbyaddr(original: Any) -> Any:
    def gethostbyaddr(host: Any) -> Any:
        _lookup_check(host, None, learn=False)
        return original(host)

    return gethostbyaddr


def _getnameinfo(original: Any) -> Any:
    def getnameinfo(sockaddr: Any, flags: Any) -> Any:
        if isinstance(sockaddr, tuple) and sockaddr:
            _lookup_check(sockaddr[0], None, learn=False)
        return original(sockaddr, flags)

    return getnameinfo


_PATCHES = [
    Patch(socket.socket, "connect", _connect),
    Patch(socket.socket, "connect_ex", _connect),
    Patch(socket.socket, "accept", _accept),
    *(Patch(socket.socket, name, _send) for name in ("send", "sendall", "sendfile")),
    Patch(ssl.SSLSocket, "send", _send),
    Patch(socket.socket, "sendto", _sendto),
    Patch(socket.socket, "sendmsg", _sendmsg),
    Patch(
        getattr(asyncio.selector_events, "_SelectorDatagramTransport"),  # noqa: B009  (private: not in the stubs)
        "sendto",
        _datagram_sendto,
    ),
    *(
        Patch(getattr(asyncio.selector_events, "_SelectorSocketTransport"), name, _transport_write)  # noqa: B009
        for name in ("write", "writelines")
    ),
    *(Patch(os, name, _fd_write) for name in ("write", "writev", "sendfile") if hasattr(os, name)),
    Patch(socket, "getaddrinfo", _getaddrinfo),
    Patch(socket, "gethostbyname", _gethostbyname),
    Patch(socket, "gethostbyname_ex", _gethostbyname),
    Patch(socket, "gethostbyaddr", _gethostbyaddr),
    Patch(socket, "getnameinfo", _getnameinfo),
]


def blocking() -> bool:
    """Whether the innermost player replays with the lock on (its guard refuses, not warns)."""
    return bool(_guards) and _guards[-1].blocks


def engage(guard: Guard) -> None:
    """A player starts: its guard decides from now on."""
    with _state:
        _guards.append(guard)
        for patch in _PATCHES:
            patch.install()


def release(guard: Guard) -> None:
    """A player stops; the last one out removes the socket patches."""
    with _state:
        if guard in _guards:
            _guards.remove(guard)
        if not _guards:
            for patch in _PATCHES:
                patch.uninstall()
