"""Synthesize realistic provider streams in code, from the result they should spell.

Each function takes the final message a stream must accumulate to (text, tool calls, thinking,
usage, ...) and returns a one-interaction [`Cassette`][ssemock.Cassette] whose response is that
stream, event for event in the provider's documented wire format:

* [`openai_chat`][ssemock.synth.openai_chat] -- Chat Completions ``chat.completion.chunk`` objects, ``data: [DONE]``
  (n > 1 choices, parallel tool calls, refusals, ``stream_options.include_usage``, Azure's
  content filter annotations, OpenAI-compatible servers that repeat tool call ids);
* [`openai_responses`][ssemock.synth.openai_responses] -- Responses API events (``response.created`` ...
  ``response.completed``), output text and function calls;
* [`openai_responses_websocket`][ssemock.synth.openai_responses_websocket] -- the same events in
  Responses API WebSocket mode: a session of turns, each a ``response.create`` and its events;
* [`anthropic_messages`][ssemock.synth.anthropic_messages] -- Messages API events, with text, ``tool_use``, ``thinking`` +
  signature, citations, ``ping`` and a mid-stream ``event: error``;
* [`ollama_chat`][ssemock.synth.ollama_chat] -- Ollama ``/api/chat`` JSON lines (``application/x-ndjson``);
* [`openrouter_chat`][ssemock.synth.openrouter_chat] -- OpenAI format with OpenRouter's ``: OPENROUTER PROCESSING`` comments.

The body is cut into writes as a real server and network deliver it: one to three events per
write, now and then a write that ends inside the next line (seeded by ``seed``, so the same call
always gives the same bytes and boundaries). Write ``k`` arrives at ``first_token + k * gap``
seconds. The request is the matching ``POST`` (model, messages, ``stream: true``) at the
provider's real URL, so ``accumulate(decode(...))`` of the response gives back what was asked for,
and the recorded request is what the provider's SDK sends for the same parameters.

Every synthesized response carries an ``x-ssemock-source`` header saying it was synthesized.

``python -m ssemock.synth --write-library`` regenerates the cassettes shipped in
[`ssemock.cassettes`][ssemock.cassettes] by streaming each synthesized response through a real loopback HTTP
server and recording it with [`ssemock.use_cassette`][ssemock.use_cassette] (``--check`` re-records into a temporary
folder and compares the files byte for byte, times aside).
"""

import sys

from .cassettes.synth import *  # noqa: F403 (the public names, listed in its __all__)
from .cassettes.synth import __all__ as __all__

if __name__ == "__main__":
    raise SystemExit(sys.modules[f"{__package__}.cassettes.synth"].main())
# One module under both names (patching one patches both), taken from sys.modules (the package
# attribute may be a copy an earlier in-process pytest run imported and dropped); it carries this
# public docstring, which help() and doctest read.
_module = sys.modules[f"{__package__}.cassettes.synth"]
_module.__doc__ = __doc__
sys.modules[__name__] = _module
