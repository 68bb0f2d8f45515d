"""Finding the chunk boundaries a decoder breaks on: a hypothesis strategy and a split minimiser.

* [`chunkings`][ssemock.strategies.chunkings] draws arbitrary sets of chunk boundaries for one body (hypothesis is
  imported lazily, so ``ssemock`` imports without it); it shrinks toward FEWER boundaries, and
  each drawn [`At`][ssemock.strategies.At] chunking is named by its boundaries (``"at:17,1043"``) so a failing
  example tells exactly how to reproduce it ([`get`][ssemock.strategies.get] parses that name back).
* [`variants`][ssemock.strategies.variants] draws whole variants of a cassette's streams (an [`At`][ssemock.strategies.At] chunking, a chain
  of transforms, optionally a fault), each a [`Variant`][ssemock.strategies.Variant] that is a set of replay options
  (``ssemock.replay(cassette, **variant.options())``) and prints as a marker to paste.
* [`hazards`][ssemock.strategies.hazards] names the offsets of a body where decoders break, by class; the draws favour them.
* [`minimal_failing_split`][ssemock.strategies.minimal_failing_split] takes a split under which a check fails and removes boundaries
  (delta debugging) until every remaining one is needed, then says in words where each falls:
  inside which multi-byte character, CRLF, field name or ``data:`` prefix, in which event.
"""

import sys

from .variants.strategies import *  # noqa: F403 (the public names, listed in its __all__)
from .variants.strategies import __all__ as __all__

# One module under both names (patching one patches both), taken from sys.modules (the package
# attribute may be a copy an earlier in-process pytest run imported and dropped); it carries this
# public docstring, which help() and doctest read.
_module = sys.modules[f"{__package__}.variants.strategies"]
_module.__doc__ = __doc__
sys.modules[__name__] = _module
