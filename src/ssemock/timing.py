"""Timing policies: when each replayed chunk is delivered."""

import sys

from .variants.timing import *  # noqa: F403 (the public names, listed in its __all__)
from .variants.timing import __all__ as __all__

# One module under both names (patching one patches both), taken from sys.modules (the package
# attribute may be a copy an earlier in-process pytest run imported and dropped); it carries this
# public docstring, which help() and doctest read.
_module = sys.modules[f"{__package__}.variants.timing"]
_module.__doc__ = __doc__
sys.modules[__name__] = _module
