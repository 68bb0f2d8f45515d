"""``ssemock.ndjson`` is [`ssemock.framing.ndjson`][ssemock.ndjson] (kept importable under its first name)."""

import sys

from .framing import ndjson as _module
from .framing.ndjson import Decoder, NDJSONError, adecode, decode, iter_decode

__all__ = ["Decoder", "NDJSONError", "adecode", "decode", "iter_decode"]

sys.modules[__name__] = _module  # one module under both names: patching one patches both
