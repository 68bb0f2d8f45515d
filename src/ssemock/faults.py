"""Faults: what real networks, proxies and providers do to a stream, made deterministic.

A fault rewrites what one response will be ([`Served`][ssemock.faults.Served]) before it is chunked: it may cut
the body and end it with the client stack's own exception, add a stall, replace the response
with an HTTP error, or insert a provider-format error event. Every fault has a short name
(``"disconnect:after_event=3"``) so parametrized test ids say what happened.

Every fault can be aimed (``on=``: a method and URL pattern, or an interaction index; see
[`Target`][ssemock.faults.Target]). Unaimed, a stream fault applies to every interaction whose response is a stream
it has a meaning for, and ``http_error`` / ``sequence`` to the first interaction matched
([`Aim`][ssemock.faults.Aim]). A fault that has no meaning for a framing (``trailing_data:at=same_event`` on JSON
lines, ``error_event`` on a plain JSON body) says so ([`Fault.refuses`][ssemock.faults.Fault.refuses]), and aiming it at
such a response is an error before any request is served.

gRPC calls take their own: ``status:code=UNAVAILABLE,after_message=2`` (the client's ``RpcError``
with that code after two messages), ``drop:after_message=N`` (``UNAVAILABLE``), ``stall`` and
``sequence:`` of them, aimed with ``on=`` too (see [gRPC calls](../guide/grpc.md) and
`ssemock.variants.grpc.faults`).
"""

import sys

from .variants.faults import *  # noqa: F403 (the public names, listed in its __all__)
from .variants.faults import __all__ as __all__

# One module under both names (patching one patches both), taken from sys.modules (the package
# attribute may be a copy an earlier in-process pytest run imported and dropped); it carries this
# public docstring, which help() and doctest read.
_module = sys.modules[f"{__package__}.variants.faults"]
_module.__doc__ = __doc__
sys.modules[__name__] = _module
