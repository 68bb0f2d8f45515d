"""``ssemock.ndjson`` is [`ssemock.framing.ndjson`][ssemock.ndjson] (kept importable under its first name)."""

import sys

from .framing.ndjson import *  # noqa: F403 (the public names, listed in its __all__)
from .framing.ndjson import __all__ as __all__

# One module under both names (patching one patches both), taken from sys.modules (the package
# attribute may be a copy an earlier in-process pytest run imported and dropped).
_module = sys.modules[f"{__package__}.framing.ndjson"]
sys.modules[__name__] = _module
