"""Re-chunking strategies: where chunk boundaries fall. The bytes never change.

A strategy maps a body and its recorded chunk ends to new chunk ends (strictly increasing byte
offsets, the last one ``len(body)``). Every strategy is deterministic and has a short name
(``"mid_utf8"``, ``"fixed:3"``, ``"random:7"``) so a failing test id tells how to reproduce it.
"""

import sys

from .variants.chunking import *  # noqa: F403 (the public names, listed in its __all__)
from .variants.chunking import __all__ as __all__

# One module under both names (patching one patches both), taken from sys.modules (the package
# attribute may be a copy an earlier in-process pytest run imported and dropped); it carries this
# public docstring, which help() and doctest read.
_module = sys.modules[f"{__package__}.variants.chunking"]
_module.__doc__ = __doc__
sys.modules[__name__] = _module
