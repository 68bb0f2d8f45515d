"""Timing policies: when each replayed chunk is delivered."""

import sys

from .variants.timing import (
    Clock,
    Timing,
    clock,
    get,
    instant,
    recorded,
    scaled,
)

__all__ = [
    "Clock",
    "Timing",
    "clock",
    "get",
    "instant",
    "recorded",
    "scaled",
]

# one module under both names (patching one patches both), taken from sys.modules: the package
# attribute may be a copy an earlier in-process pytest run imported and dropped
sys.modules[__name__] = sys.modules[f"{__package__}.variants.timing"]
