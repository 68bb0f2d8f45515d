"""ssemock: record and replay streaming HTTP responses with their chunk boundaries and timing.

Record once against the real service; replay offline through respx for httpx and httpx2 clients,
re-chunked (mid-line, mid-UTF-8, byte by byte, ...), transformed, timed and faulted.
"""

from . import chunking, faults, matching, timing, transforms
from .cassette import Cassette, CassetteError, Interaction, Request, Response
from .replay import Play, Player, UnmatchedRequestError, replay, use_cassette

__version__ = "0.1.0"

__all__ = [
    "Cassette", "CassetteError", "Interaction", "Play", "Player", "Request", "Response",
    "UnmatchedRequestError", "chunking", "faults", "matching", "replay", "timing", "transforms", "use_cassette",
]
