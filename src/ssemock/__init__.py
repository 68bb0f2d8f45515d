"""ssemock: record and replay streaming HTTP responses with their chunk boundaries and timing.

Record once against the real service; replay offline through respx for httpx and httpx2 clients,
re-chunked (mid-line, mid-UTF-8, byte by byte, ...), transformed, timed and faulted; compare what
the client got with the reference decoder and accumulators.
"""

import importlib

from . import cassettes, chunking, conformance, faults, matching, ndjson, sse, strategies, timing, transforms
from .accumulate import Accumulated, ProtocolError, accumulate, detect_protocol
from .cassette import Cassette, CassetteError, Interaction, Request, Response
from .errors import NetworkBlockedError, SsemockWarning
from .expect import Expected, StreamAssertionError
from .record import RequestHook, ResponseHook
from .replay import Play, Player, UnmatchedRequestError, plan_response, replay, use_cassette
from .sse import ServerSentEvent

__version__ = "0.1.0"


def __getattr__(name: str) -> object:
    """``ssemock.synth`` is imported on first use (it is also run as ``python -m ssemock.synth``)."""
    if name == "synth":
        return importlib.import_module(f"{__name__}.synth")
    raise AttributeError(f"module 'ssemock' has no attribute {name!r}")

__all__ = [
    "Accumulated", "Cassette", "CassetteError", "Expected", "Interaction", "NetworkBlockedError", "Play", "Player", "ProtocolError",
    "Request", "RequestHook", "Response", "ResponseHook", "ServerSentEvent", "SsemockWarning", "StreamAssertionError", "UnmatchedRequestError", "accumulate",
    "cassettes", "chunking", "conformance", "detect_protocol", "faults", "matching", "ndjson", "plan_response", "replay",
    "sse", "strategies", "synth", "timing", "transforms", "use_cassette",
]
