"""``ssemock.ndjson`` is [`ssemock.framing.ndjson`][ssemock.ndjson] (kept importable under its first name)."""

import sys

from .framing.ndjson import Decoder, NDJSONError, adecode, decode, iter_decode

__all__ = ["Decoder", "NDJSONError", "adecode", "decode", "iter_decode"]

# one module under both names (patching one patches both), taken from sys.modules: the package
# attribute may be a copy an earlier in-process pytest run imported and dropped
sys.modules[__name__] = sys.modules[f"{__package__}.framing.ndjson"]
