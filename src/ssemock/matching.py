"""Request matching with vcrpy's matcher names, and the "closest recorded request" diagnosis.

``match_on`` takes vcrpy's names (``method``, ``uri``/``url``, ``scheme``, ``host``, ``port``,
``path``, ``query``, ``body``, ``raw_body``, ``headers``) and callables in vcrpy's convention:
``matcher(sent, recorded)`` (two [`ssemock.Request`][ssemock.Request]) returns None or True when they match,
False or raises AssertionError (its message says why) when they do not.

Both sides are compared in their redacted form (`ssemock.redact`): a sent request is redacted
before matching, and so is the recorded one here, so a cassette recorded under older, narrower
rules still matches a request whose credentials the current rules replace.
"""

import sys

from .plan.matching import *  # noqa: F403 (the public names, listed in its __all__)
from .plan.matching import __all__ as __all__

# One module under both names (patching one patches both), taken from sys.modules (the package
# attribute may be a copy an earlier in-process pytest run imported and dropped); it carries this
# public docstring, which help() and doctest read.
_module = sys.modules[f"{__package__}.plan.matching"]
_module.__doc__ = __doc__
sys.modules[__name__] = _module
