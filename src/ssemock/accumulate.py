"""Reference accumulators: fold a decoded stream into the final message it spells.

The result is the expectation a test compares a client's own accumulation against, so each protocol
is folded the way its provider documents it and nothing is guessed. Unknown event and delta types
are skipped (forward compatibility); structurally impossible input (a delta for a content block that
never started, a tool-call delta without an index, data that is not JSON) raises
[`ProtocolError`][ssemock.accumulate.ProtocolError] naming the protocol and the event's position in the stream.

Each protocol's fold lives in its module under `ssemock.protocols` (``"openai.chat"``,
``"openai.responses"``, ``"anthropic.messages"`` and ``"gemini.generate_content"`` and
``"cohere.chat"`` fold [`ServerSentEvent`][ssemock.ServerSentEvent] events; ``"ollama.chat"`` folds the
parsed JSON lines, and Gemini's JSON array form its parsed elements); this module is the entry.
"""

import sys

from .protocols.accumulate import *  # noqa: F403 (the public names, listed in its __all__)
from .protocols.accumulate import __all__ as __all__

# One module under both names (patching one patches both), taken from sys.modules (the package
# attribute may be a copy an earlier in-process pytest run imported and dropped); it carries this
# public docstring, which help() and doctest read.
_module = sys.modules[f"{__package__}.protocols.accumulate"]
_module.__doc__ = __doc__
sys.modules[__name__] = _module
