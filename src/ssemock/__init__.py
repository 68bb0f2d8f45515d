"""ssemock: record and replay streaming HTTP responses with their chunk boundaries and timing.

Record once against the real service; replay offline through every client stack (httpx, httpx2,
aiohttp, urllib3), re-chunked (mid-line, mid-UTF-8, byte by byte, ...), transformed, timed and
faulted; compare what the client got with the reference decoder and accumulators.

Names are imported on first use, so the pytest plugin costs nothing in a session that never uses
it (``import ssemock`` loads no HTTP library).
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from . import (
        cassettes,
        chunking,
        conformance,
        faults,
        matching,
        ndjson,
        serve,
        sse,
        strategies,
        synth,
        timing,
        transforms,
        websocket,
    )
    from .framing.sse import ServerSentEvent
    from .plan import push_replay as held
    from .plan.errors import NetworkBlockedError, RecordingVariantError, SsemockWarning
    from .plan.expect import Expected, StreamAssertionError
    from .plan.record import RequestHook, ResponseHook
    from .plan.stdio import StdioMismatchError
    from .player.explore import explore
    from .player.replay import (
        Options,
        Play,
        Player,
        UnmatchedRequestError,
        plan_response,
        replay,
        use_cassette,
    )
    from .protocols.accumulate import Accumulated, ProtocolError, accumulate, detect_protocol
    from .store.cassette import Cassette, CassetteError, Interaction, Request, Response, SecretError

from .core import __version__ as __version__
from .core.packages import FreshPackage

#: public name -> the module that defines it (a submodule itself when the name is one)
_WHERE = {
    **dict.fromkeys(
        ("Accumulated", "ProtocolError", "accumulate", "detect_protocol"), "protocols.accumulate"
    ),
    **dict.fromkeys(
        ("Cassette", "CassetteError", "Interaction", "Request", "Response", "SecretError"), "store.cassette"
    ),
    **dict.fromkeys(("NetworkBlockedError", "RecordingVariantError", "SsemockWarning"), "plan.errors"),
    **dict.fromkeys(("Expected", "StreamAssertionError"), "plan.expect"),
    **dict.fromkeys(("RequestHook", "ResponseHook"), "plan.record"),
    **dict.fromkeys(
        ("Options", "Play", "Player", "UnmatchedRequestError", "plan_response", "replay", "use_cassette"),
        "player.replay",
    ),
    "ServerSentEvent": "framing.sse",
    "StdioMismatchError": "plan.stdio",
    "explore": "player.explore",
}
#: public submodule name -> the module it is (a front door at the top, or a module of a layer)
_SUBMODULES = {
    **{
        name: name for name in ("cassettes", "chunking", "conformance", "faults", "matching", "ndjson", "sse")
    },
    **{
        name: name
        for name in ("serve", "strategies", "synth", "timing", "transforms", "vcr_compat", "websocket")
    },
    "held": "plan.push_replay",
}


class _Package(FreshPackage):
    """The package module: resolves public names on use, and keeps ``ssemock.replay`` and
    ``ssemock.accumulate`` the functions when their submodules are imported (the import system
    would otherwise set the package attribute to the submodule). Its other submodules (``stacks``,
    ``player``, ...) are read from ``sys.modules`` as well: ``from .. import stacks`` in a module
    imported after an inner run must not bind the inner run's dropped copy, whose players no
    stack's patch asks.

    A name is looked up in the defining module as ``sys.modules`` holds it now, never kept on the
    package: pytester's in-process runs drop the modules a run imported, and the next run imports
    them again; a name kept from the first run would be the first run's class (an exception that
    ``pytest.raises`` would no longer catch, an event another module would not know)."""

    def __getattribute__(self, name: str) -> Any:
        where = _LAZY.get(name)
        if where is None:
            return super().__getattribute__(name)
        if name in _SET:
            return _SET[name]
        # importlib's own module locks: a module another thread is still importing is waited for
        # (``sys.modules`` holds it half-imported until then), never read half-imported
        module = importlib.import_module(where)
        return module if name in _SUBMODULES else getattr(module, name)

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(f"module 'ssemock' has no attribute {name!r}")

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in _LAZY:
            super().__setattr__(name, value)
        elif isinstance(value, types.ModuleType) and name not in _SUBMODULES:
            return  # the import system setting ``ssemock.replay`` to the submodule: it stays the function
        else:  # kept only when set by hand (a test's monkeypatch.setattr) to something else
            _SET.pop(name, None)
            if value is not self.__getattribute__(name):
                _SET[name] = value

    def __delattr__(self, name: str) -> None:
        if name in _LAZY:
            _SET.pop(name, None)
        else:
            super().__delattr__(name)


#: public name -> the full name of the module it is read from (the submodule itself for one)
_LAZY = {
    **{name: f"{__name__}.{where}" for name, where in _WHERE.items()},
    **{name: f"{__name__}.{where}" for name, where in _SUBMODULES.items()},
}
_SET: dict[str, Any] = {}  # public names set by hand (a test's monkeypatch), until set back or deleted
sys.modules[__name__].__class__ = _Package

__all__ = [
    "Accumulated",
    "Cassette",
    "CassetteError",
    "Expected",
    "Interaction",
    "NetworkBlockedError",
    "Options",
    "Play",
    "Player",
    "ProtocolError",
    "RecordingVariantError",
    "Request",
    "RequestHook",
    "Response",
    "ResponseHook",
    "SecretError",
    "ServerSentEvent",
    "SsemockWarning",
    "StdioMismatchError",
    "StreamAssertionError",
    "UnmatchedRequestError",
    "accumulate",
    "cassettes",
    "chunking",
    "conformance",
    "detect_protocol",
    "explore",
    "faults",
    "held",
    "matching",
    "ndjson",
    "plan_response",
    "replay",
    "serve",
    "sse",
    "strategies",
    "synth",
    "timing",
    "transforms",
    "use_cassette",
    "websocket",
]
