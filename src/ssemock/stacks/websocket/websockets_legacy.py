"""The ``websockets`` legacy asyncio client (``websockets.legacy.client.connect``: what
``websockets.connect`` is in 13.x; deprecated but still shipped up to 17.x).

``Connect.__init__`` builds ``functools.partial(loop.create_connection, factory, host, port, **kw)``
and ``handle_redirect`` rebuilds it from the partial's parts, so the hook wraps ``__init__`` and
swaps the partial's function for one that dispatches the handshake (the URL from the instance,
the user's ``extra_headers`` from the factory) and returns an in-memory transport (replay) or the
real one, teed (record), keeping it a partial of the same arguments.
"""

from __future__ import annotations

import asyncio
import functools
import importlib
from typing import Any

from respx.models import PassThrough

from .. import Patch, RecordSession, dispatch, intercepting, passing
from .memory import MemoryTransport, TeeTransport, Watchdog, keepalive, tee_protocol
from .websockets_asyncio import ERRORS, handshake_request, uri_text

__all__ = ["ERRORS", "hook", "patches"]


def _opener(real: Any, connect: Any) -> Any:
    async def create_connection(factory: Any, host: Any = None, port: Any = None, **kw: Any) -> Any:
        if not intercepting() or kw.get("sock") is not None:
            return await real(factory, host, port, **kw)
        uri = connect._wsuri
        headers = getattr(factory, "keywords", {}).get("extra_headers")
        try:
            answer = dispatch(handshake_request(uri_text(uri), headers, "websockets.legacy"))
        except RecordSession as rec:
            with passing(uri.host):
                transport, protocol = await real(factory, host, port, **kw)
            protocol.transport = TeeTransport(transport, rec.recorder)
            tee_protocol(protocol, rec.recorder)
            return protocol.transport, protocol
        except PassThrough:
            with passing(uri.host):
                return await real(factory, host, port, **kw)
        protocol = factory()
        loop = asyncio.get_running_loop()
        transport = MemoryTransport(
            loop, protocol, answer.extensions["ssemock.conversation"], answer.extensions["ssemock.timing"]
        )
        ends = keepalive(protocol.ping_interval, protocol.ping_timeout, transport.opened)
        transport.watchdogs.append(  # a stall past the keepalive fails as it does: 1011, at once
            Watchdog(
                "keepalive", ends, lambda: protocol.fail_connection(1011, "keepalive ping timeout"), protocol
            )
        )
        protocol.connection_made(transport)
        return transport, protocol

    return create_connection


def _init(original: Any) -> Any:
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        made = self._create_connection
        if isinstance(made, functools.partial) and made.func.__name__ == "create_connection":
            self._create_connection = functools.partial(_opener(made.func, self), *made.args, **made.keywords)

    return __init__


def patches() -> list[Patch]:
    """The hook on ``websockets.legacy.client.Connect.__init__``."""
    # sys.modules' module: `import a.b.c as c` takes the package's attribute, which may be a
    # module an in-process pytest run dropped from sys.modules (patching it patches nothing)
    client = importlib.import_module("websockets.legacy.client")

    return [Patch(client.Connect, "__init__", _init)]


def hook() -> str:
    """Where the patch goes (for ``ssemock doctor``)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import websockets.legacy.client  # noqa: F401  (ImportError: no legacy client here)

    return "websockets.legacy.client.Connect.__init__"
