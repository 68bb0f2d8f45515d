"""``ssemock.vcr_compat``: vcrpy-style hooks and matchers under ssemock, unchanged (what ``ssemock
migrate`` writes into a migrated suite's conftest: ``from ssemock import vcr_compat``). The public
front door of [`ssemock.player.vcr_hooks`][ssemock.player.vcr_hooks]."""

import sys

from .player.vcr_hooks import *  # noqa: F403 (the public names, listed in its __all__)
from .player.vcr_hooks import __all__ as __all__

# One module under both names (patching one patches both), taken from sys.modules (the package
# attribute may be a copy an earlier in-process pytest run imported and dropped).
_module = sys.modules[f"{__package__}.player.vcr_hooks"]
sys.modules[__name__] = _module
