"""Timing policies: when each replayed chunk is delivered."""

import sys

from .variants import timing as _module
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

sys.modules[__name__] = _module  # one module under both names: patching one patches both
