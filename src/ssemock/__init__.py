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
    from . import (cassettes, chunking, conformance, faults, held, matching, ndjson, sse, strategies, synth, timing,
                   transforms)
    from .accumulate import Accumulated, ProtocolError, accumulate, detect_protocol
    from .cassette import Cassette, CassetteError, Interaction, Request, Response, SecretError
    from .errors import NetworkBlockedError, SsemockWarning
    from .expect import Expected, StreamAssertionError
    from .record import RequestHook, ResponseHook
    from .replay import Play, Player, UnmatchedRequestError, plan_response, replay, use_cassette
    from .sse import ServerSentEvent

__version__ = "0.1.0"

#: public name -> the module that defines it (a submodule itself when the name is one)
_WHERE = {
    **{name: "accumulate" for name in ("Accumulated", "ProtocolError", "accumulate", "detect_protocol")},
    **{name: "cassette" for name in ("Cassette", "CassetteError", "Interaction", "Request", "Response", "SecretError")},
    **{name: "errors" for name in ("NetworkBlockedError", "SsemockWarning")},
    **{name: "expect" for name in ("Expected", "StreamAssertionError")},
    **{name: "record" for name in ("RequestHook", "ResponseHook")},
    **{name: "replay" for name in ("Play", "Player", "UnmatchedRequestError", "plan_response", "replay",
                                   "use_cassette")},
    "ServerSentEvent": "sse",
}
_SUBMODULES = ("cassettes", "chunking", "conformance", "faults", "held", "matching", "ndjson", "sse", "strategies",
               "synth", "timing", "transforms")
#: names that are both a function and a submodule: ``ssemock.replay`` is the function
_SHADOWED = frozenset({"accumulate", "replay"})


class _Package(types.ModuleType):
    """The package module: resolves public names on first use, and keeps ``ssemock.replay`` and
    ``ssemock.accumulate`` the functions when their submodules are imported (the import system
    would otherwise set the package attribute to the submodule)."""

    def __getattr__(self, name: str) -> Any:
        if name in _SUBMODULES:
            return importlib.import_module(f"{__name__}.{name}")
        where = _WHERE.get(name)
        if where is None:
            raise AttributeError(f"module 'ssemock' has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{__name__}.{where}"), name)
        types.ModuleType.__setattr__(self, name, value)
        return value

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _SHADOWED and isinstance(value, types.ModuleType):
            return  # the submodule stays in sys.modules; the attribute stays the function
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package

__all__ = [
    "Accumulated", "Cassette", "CassetteError", "Expected", "Interaction", "NetworkBlockedError", "Play", "Player",
    "ProtocolError", "Request", "RequestHook", "Response", "ResponseHook", "SecretError", "ServerSentEvent", "SsemockWarning",
    "StreamAssertionError", "UnmatchedRequestError", "accumulate", "cassettes", "chunking", "conformance",
    "detect_protocol", "faults", "held", "matching", "ndjson", "plan_response", "replay", "sse", "strategies", "synth",
    "timing", "transforms", "use_cassette",
]
