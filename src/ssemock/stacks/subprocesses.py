"""``block_subprocesses=True``: child processes started during a replay get no way out through
an HTTP proxy-aware client.

The network lock lives in the test process's sockets; a child process has its own. With the
option on, every child started while the player is active -- ``subprocess.Popen``
(``subprocess.run``, ``check_output``, ``asyncio.create_subprocess_exec``, ``os.popen``),
``os.system``, ``os.posix_spawn``, ``os.spawn*`` and ``os.exec*`` -- gets an environment whose proxy variables (``HTTP_PROXY``, ``HTTPS_PROXY``,
``ALL_PROXY`` and their lower-case forms) point at a loopback port that refuses every connection,
and whose ``NO_PROXY`` lists the allowed and ignored hosts. The test process's own environment is
left unchanged. A child that ignores proxy variables (a raw socket, a client told to use no proxy)
is not stopped: see the network lock guide.
"""

from __future__ import annotations

import inspect
import os
import socket
import subprocess
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from . import Patch

__all__ = ["child_environment", "engage", "release"]

_PROXIES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")
_LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")

_state = threading.Lock()
_active: list[Sequence[str]] = []  # the no-proxy hosts of each player that blocks children
_refuser: socket.socket | None = None  # bound, never listening: every connection to it is refused


def _no_proxy(hosts: Sequence[str]) -> str:
    """``NO_PROXY`` for these entries: ``*.x.com`` as ``.x.com``; loopback networks also as the
    addresses and name most clients compare literally."""
    out: list[str] = []
    for host in hosts:
        entry = host[1:] if host.startswith("*.") else host
        out.append(entry)
        if host in ("127.0.0.0/8", "::1/128", "localhost"):
            out.extend(_LOOPBACK_NAMES)
    return ",".join(dict.fromkeys(out))


def child_environment(env: Mapping[str, str] | None) -> dict[str, str]:
    """The environment a child started now gets: ``env`` (default: this process's) with the proxy
    variables pointing at the refusing port, while a player blocks subprocesses."""
    out = dict(os.environ if env is None else env)
    if not _active or _refuser is None:
        return out
    port = _refuser.getsockname()[1]
    for name in _PROXIES:
        out[name] = f"http://127.0.0.1:{port}"
    out["NO_PROXY"] = out["no_proxy"] = _no_proxy(_active[-1])
    return out


def _popen_init(original: Any) -> Any:
    signature = inspect.signature(original)

    def __init__(self: subprocess.Popen[Any], *args: Any, **kwargs: Any) -> None:
        if _active:
            bound = signature.bind(self, *args, **kwargs)
            bound.arguments["env"] = child_environment(bound.arguments.get("env"))
            args, kwargs = bound.args[1:], bound.kwargs
        original(self, *args, **kwargs)

    return __init__


def _posix_spawn(original: Any) -> Any:
    def posix_spawn(path: Any, argv: Any, env: Any, *args: Any, **kwargs: Any) -> int:
        spawned: int = original(path, argv, child_environment(env) if _active else env, *args, **kwargs)
        return spawned

    return posix_spawn


def _execve(original: Any) -> Any:
    def execve(path: Any, args: Any, env: Any) -> None:
        original(path, args, child_environment(env) if _active else env)

    return execve


def _execv(original: Any) -> Any:
    """``os.execv`` (under ``os.execl``, ``os.execvp`` and every ``os.spawn*`` without an
    environment) as ``os.execve`` with the child's environment."""

    def execv(path: Any, args: Any) -> None:
        if _active:
            os.execve(path, args, child_environment(None))
        original(path, args)

    return execv


def _system(original: Any) -> Any:
    """``os.system`` through ``subprocess`` (which takes an environment), its wait status kept."""

    def system(command: Any) -> int:
        if not _active:
            return int(original(command))
        code = subprocess.call(command, shell=True, env=child_environment(None))
        return code << 8 if code >= 0 else -code

    return system


_PATCHES = [Patch(subprocess.Popen, "__init__", _popen_init)]
_PATCHES += [Patch(os, "system", _system), Patch(os, "execv", _execv), Patch(os, "execve", _execve)]
_PATCHES += [Patch(os, name, _posix_spawn) for name in ("posix_spawn", "posix_spawnp") if hasattr(os, name)]


def engage(hosts: Sequence[str]) -> None:
    """A player that blocks subprocesses starts; children may reach ``hosts`` directly."""
    global _refuser
    with _state:
        if _refuser is None:
            _refuser = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            _refuser.bind(("127.0.0.1", 0))
        _active.append(hosts)
        for patch in _PATCHES:
            patch.install()


def release(hosts: Sequence[str]) -> None:
    """That player stops; the last one out closes the port and removes the patches."""
    global _refuser
    with _state:
        for i in range(len(_active) - 1, -1, -1):
            if _active[i] is hosts:
                del _active[i]
                break
        if not _active:
            for patch in _PATCHES:
                patch.uninstall()
            if _refuser is not None:
                _refuser.close()
                _refuser = None
