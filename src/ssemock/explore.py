"""Explore: search the streams a network can deliver for one your client breaks on, and shrink it.

A fixed matrix runs a test under a few chosen variants. Exploring draws many
([`ssemock.strategies.Space`][ssemock.strategies.Space]: chunk boundaries biased to where decoders break, chains of
transforms, optionally a fault; the same draw as the hypothesis strategy
[`ssemock.strategies.variants`][ssemock.strategies.variants], from a seeded ``random.Random``, so
thousands of variants run in seconds), runs the user's own code against
each through one player, and shrinks the first failure (fewest boundaries, fewest transforms,
earliest offsets, simplest fault), saying in words where each remaining boundary falls, with the
marker that reproduces it. Failing variants are kept in a hypothesis example database (by their
replay options, readable by any later version) and tried first on the next run.

The property: the code passes under every variant; under a fault whose stream the reference
rejects (cut short, data after the terminator), the client must raise (an AssertionError is the
test failing, not the client rejecting), as [`ssemock.Player.assert_rejected`][ssemock.Player.assert_rejected] checks.
"""

import sys

from .player.explore import *  # noqa: F403 (the public names, listed in its __all__)
from .player.explore import __all__ as __all__

# One module under both names (patching one patches both), taken from sys.modules (the package
# attribute may be a copy an earlier in-process pytest run imported and dropped); it carries this
# public docstring, which help() and doctest read.
_module = sys.modules[f"{__package__}.player.explore"]
_module.__doc__ = __doc__
sys.modules[__name__] = _module
