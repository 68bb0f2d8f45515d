"""Request matching with vcrpy's matcher names, and the "closest recorded request" diagnosis.

``match_on`` takes vcrpy's names (``method``, ``uri``/``url``, ``scheme``, ``host``, ``port``,
``path``, ``query``, ``body``, ``raw_body``, ``headers``) and callables in vcrpy's convention:
``matcher(sent, recorded)`` (two [`ssemock.Request`][ssemock.Request]) returns None or True when they match,
False or raises AssertionError (its message says why) when they do not.

Both sides are compared in their redacted form (`ssemock.redaction.rules`): a sent request is redacted
before matching, and so is the recorded one here, so a cassette recorded under older, narrower
rules still matches a request whose credentials the current rules replace.
"""

import sys

from .plan.matching import (
    DEFAULT,
    MATCHERS,
    differences,
    resolve,
)

__all__ = [
    "DEFAULT",
    "MATCHERS",
    "differences",
    "resolve",
]

# one module under both names (patching one patches both), taken from sys.modules: the package
# attribute may be a copy an earlier in-process pytest run imported and dropped
sys.modules[__name__] = sys.modules[f"{__package__}.plan.matching"]
