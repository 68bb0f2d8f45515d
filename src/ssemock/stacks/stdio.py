"""``stdio=[...]``: a child process whose command line matches is started as ssemock's relay
(`ssemock.stacks.stdio_relay`) on the same pipes, which records the real child or replays it
without starting it.

Every way Python starts a child ends at ``subprocess.Popen`` (``subprocess.run``, asyncio's
subprocesses and so anyio's ``open_process`` and the mcp SDK's ``stdio_client``), so one patch
of ``Popen.__init__`` serves them all: the innermost active player whose ``stdio`` entries match
the command line is asked for the relay's command line (``launch``), which replaces it. The
child's pipes, environment and working folder are left as the caller gave them; a shell command
line (``shell=True``) is never matched.
"""

from __future__ import annotations

import inspect
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from . import Patch

__all__ = ["RELAY", "Launcher", "engage", "relay_argv", "release"]

RELAY = Path(__file__).with_name("stdio_relay.py")
"""The relay program, run by path."""

#: a player's answer to a command line, its ``executable=`` and its environment (None: this
#: process's): the relay spec file to run instead, or None (not its child)
Launcher = Callable[[list[str], str | None, Mapping[str, str] | None], str | None]

_state = threading.Lock()
_launchers: list[Launcher] = []  # the active players' launchers, outermost first


def relay_argv(spec: str) -> list[str]:
    """The command line that runs the relay on ``spec`` (isolated: no site, no ``PYTHON*``)."""
    return [sys.executable, "-I", "-S", str(RELAY), spec]


def _argv(args: Any) -> list[str] | None:
    """The command line as a list of strings, or None when it is none (bytes, a shell string)."""
    if isinstance(args, (str, os.PathLike)):
        args = [args]
    try:
        out = [os.fspath(a) for a in args]
    except TypeError:
        return None
    return out if out and all(isinstance(a, str) for a in out) else None


def _popen_init(original: Any) -> Any:
    signature = inspect.signature(original)

    def __init__(self: subprocess.Popen[Any], *args: Any, **kwargs: Any) -> None:
        if _launchers:
            bound = signature.bind(self, *args, **kwargs)
            argv = None if bound.arguments.get("shell") else _argv(bound.arguments.get("args"))
            executable = bound.arguments.get("executable")
            spec = None
            for launch in reversed(_launchers):
                if argv is None:
                    break
                program = None if executable is None else os.fspath(executable)
                spec = launch(argv, program, bound.arguments.get("env"))
                if spec is not None:
                    break
            if spec is not None:
                bound.arguments["args"] = relay_argv(spec)
                bound.arguments["executable"] = None
                args, kwargs = bound.args[1:], bound.kwargs
        original(self, *args, **kwargs)

    return __init__


_PATCH = Patch(subprocess.Popen, "__init__", _popen_init)


def engage(launch: Launcher) -> None:
    """A player with ``stdio`` entries starts: its ``launch`` is asked first from now on."""
    with _state:
        _launchers.append(launch)
        _PATCH.install()


def release(launch: Launcher) -> None:
    """That player stops; the last one out removes the patch."""
    with _state:
        for i in range(len(_launchers) - 1, -1, -1):
            if _launchers[i] is launch:
                del _launchers[i]
                break
        if not _launchers:
            _PATCH.uninstall()
