"""Re-chunking strategies: where chunk boundaries fall. The bytes never change.

A strategy maps a body and its recorded chunk ends to new chunk ends (strictly increasing byte
offsets, the last one ``len(body)``). Every strategy is deterministic and has a short name
(``"mid_utf8"``, ``"fixed:3"``, ``"random:7"``) so a failing test id tells how to reproduce it.
"""

import sys

from .variants.chunking import (
    ALL,
    At,
    Chunking,
    Regular,
    Slices,
    as_recorded,
    at,
    bytewise,
    coalesced,
    event_ends,
    fixed,
    framed_event_ends,
    get,
    mid_line,
    mid_utf8,
    per_event,
    random,
)

__all__ = [
    "ALL",
    "At",
    "Chunking",
    "Regular",
    "Slices",
    "at",
    "as_recorded",
    "bytewise",
    "coalesced",
    "event_ends",
    "fixed",
    "framed_event_ends",
    "get",
    "mid_line",
    "mid_utf8",
    "per_event",
    "random",
]

# one module under both names (patching one patches both), taken from sys.modules: the package
# attribute may be a copy an earlier in-process pytest run imported and dropped
sys.modules[__name__] = sys.modules[f"{__package__}.variants.chunking"]
