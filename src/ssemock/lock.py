"""The network lock: nothing escapes a replay, and nothing is silently left unrecorded.

While a player is active, every socket connection (and name lookup) that no intercepted client
stack sends for real is checked against the innermost player's ``allowed_hosts``: loopback by
default (tests run their own local servers), ``[]`` for nothing, or names (``api.x.com``,
``*.x.com``), addresses and networks (``10.0.0.0/8``). A replay raises
:class:`ssemock.NetworkBlockedError` naming host and port at once; a recording warns that the
connection is not recorded (urllib, a C extension, a stack ssemock cannot tee). Unix sockets are
not network and always pass.
"""

from __future__ import annotations

import fnmatch
import functools
import ipaddress
import socket
import threading
import warnings
from collections.abc import Sequence
from typing import Any

from .errors import NetworkBlockedError, SsemockWarning
from .stacks import Patch, is_passing

__all__ = ["Guard", "engage", "release"]

_LOOPBACK = ("localhost", "127.0.0.0/8", "::1/128")
_STACKS = "httpx, httpx2, aiohttp, urllib3 (requests, botocore)"


@functools.lru_cache(maxsize=512)
def _parse(entry: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network | str:
    """An allowed_hosts entry as a network, else as a lower-case name (parsed once per entry:
    every player, so every marked test, builds a Guard)."""
    try:
        return ipaddress.ip_network(entry.strip("[]"), strict=False)
    except ValueError:
        return entry.lower().rstrip(".")


class Guard:
    """One player's policy: which hosts may be reached, and whether others fail or warn."""

    def __init__(self, *, allowed_hosts: Sequence[str] | None, blocks: bool, where: str) -> None:
        if isinstance(allowed_hosts, str):
            raise TypeError(f"allowed_hosts must be a list of hosts, got the string {allowed_hosts!r} "
                            f"(write [{allowed_hosts!r}])")
        entries = list(_LOOPBACK if allowed_hosts is None else allowed_hosts)
        self.allowed_hosts = entries
        self.blocks = blocks
        self.where = where
        parsed = [_parse(entry) for entry in entries]
        self._networks = [p for p in parsed if not isinstance(p, str)]
        self._names = [p for p in parsed if isinstance(p, str)]
        self._seen: dict[str, bool] = {}
        self._warned: set[tuple[str, int]] = set()

    def allows(self, host: str) -> bool:
        known = self._seen.get(host)
        if known is None:
            known = self._seen[host] = self._decide(host)
        return known

    def _decide(self, host: str) -> bool:
        name = host.lower().rstrip(".").strip("[]").split("%", 1)[0]
        try:
            address = ipaddress.ip_address(name)
        except ValueError:
            return any(fnmatch.fnmatchcase(name, pattern) for pattern in self._names)
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            address = address.ipv4_mapped
        return any(address in network for network in self._networks)

    def decides_names(self) -> bool:
        """Whether a name lookup can be judged by the name alone (no network entries that a name
        could resolve into)."""
        return not any(not network.is_loopback for network in self._networks)

    def refuse(self, host: str, port: Any) -> None:
        if self.blocks:
            raise NetworkBlockedError(
                f"ssemock: blocked a connection to {host}:{port} during a replay ({self.where}): no client "
                f"stack that ssemock intercepts ({_STACKS}) sent it, so it would reach the network. "
                f"Allowed hosts: {self.allowed_hosts or 'none'}. To allow it: allowed_hosts=[{host!r}] "
                f"(a keyword of replay()/use_cassette(), the marker, ssemock_config, "
                f"--ssemock-allowed-hosts or the ini key ssemock_allowed_hosts).")
        with _warn_lock:
            if (host, port) in self._warned:
                return
            self._warned.add((host, port))
        warnings.warn(
            f"ssemock: a connection to {host}:{port} is not recorded ({self.where}): no client stack that "
            f"ssemock intercepts ({_STACKS}) sent it. Send it through one of those, or run the client "
            f"against `ssemock serve`.", SsemockWarning, stacklevel=3)


_guards: list[Guard] = []  # active players' guards, outermost first
_warn_lock = threading.Lock()
_state = threading.Lock()


def _check(address: Any) -> None:
    if not _guards or is_passing() or not isinstance(address, tuple) or len(address) < 2:
        return
    guard = _guards[-1]
    host = str(address[0])
    if not guard.allows(host):
        guard.refuse(host, address[1])


def _connect(original: Any) -> Any:
    def connect(self: socket.socket, address: Any) -> None:
        _check(address)
        return original(self, address)  # type: ignore[no-any-return]
    return connect


def _connect_ex(original: Any) -> Any:
    def connect_ex(self: socket.socket, address: Any) -> int:
        _check(address)
        return original(self, address)  # type: ignore[no-any-return]
    return connect_ex


def _getaddrinfo(original: Any) -> Any:
    def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if _guards and host is not None:
            guard = _guards[-1]
            name = host.decode("idna") if isinstance(host, bytes) else str(host)
            if not is_passing(name) and guard.blocks and guard.decides_names() and not guard.allows(name):
                guard.refuse(name, port)
        return original(host, port, *args, **kwargs)
    return getaddrinfo


_PATCHES = [Patch(socket.socket, "connect", _connect), Patch(socket.socket, "connect_ex", _connect_ex),
            Patch(socket, "getaddrinfo", _getaddrinfo)]


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
