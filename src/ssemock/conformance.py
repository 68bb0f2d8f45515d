"""A conformance corpus for Server-Sent Events client authors.

Each [`Case`][ssemock.conformance.Case] is a small ``text/event-stream`` body, the events the WHATWG "event stream
interpretation" yields for it (computed by the reference decoder [`ssemock.sse.decode`][ssemock.sse.decode]),
and a note on what it tests -- which bug it catches. [`Case.check`][ssemock.conformance.Case.check] runs a decoder under
every re-chunking in [`ssemock.chunking.ALL`][ssemock.chunking.ALL] plus ``fixed:1``..``fixed:3`` and raises
[`ConformanceError`][ssemock.conformance.ConformanceError] naming the case, the chunking, the first differing event and where
the chunk boundaries fell around it::

    from ssemock import conformance

    def my_decode(chunks: list[bytes]) -> list[MyEvent]: ...

    for case in conformance.cases():
        case.check(my_decode)

``decode_fn(chunks)`` may return [`ssemock.sse.ServerSentEvent`][ssemock.ServerSentEvent] objects, any objects with
``.event``/``.data``/``.id`` (and optionally ``.retry``) attributes such as
``httpx_sse.ServerSentEvent`` (an empty or ``None`` event type counts as ``"message"``),
``(event, data)`` tuples, or plain data strings -- only the fields it returns are compared.
"""

import sys

from .cassettes.conformance import *  # noqa: F403 (the public names, listed in its __all__)
from .cassettes.conformance import __all__ as __all__

# One module under both names (patching one patches both), taken from sys.modules (the package
# attribute may be a copy an earlier in-process pytest run imported and dropped); it carries this
# public docstring, which help() and doctest read.
_module = sys.modules[f"{__package__}.cassettes.conformance"]
_module.__doc__ = __doc__
sys.modules[__name__] = _module
