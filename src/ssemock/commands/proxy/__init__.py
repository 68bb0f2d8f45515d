"""``ssemock proxy``: a recording reverse proxy, so a client in any language records and replays
the way a Python test does. The client only changes its base URL.

A request is routed to an upstream (by path prefix, at a segment boundary, when there are
several; its path joined as a path onto the upstream's URL, and refused with 400 when it would
leave it: `ssemock.commands.proxy.routing`), and to a cassette
(``<cassette_dir>/<name>.json``: the upstream's default name, or the one the client chooses with
the ``x-ssemock-cassette`` header or a ``/_ssemock/NAME/`` path prefix, neither forwarded).
Then, as the plugin does under the same record mode (``none``, ``once``, ``new_episodes``,
``all``, ``rewrite``):

* a request body past ``max_body`` gets 413 (read part by part, never whole past it, as
  ``ssemock serve`` reads it);
* a request a recorded interaction matches is replayed through `ssemock serve`'s
  [`Replayer`][ssemock.commands.serve.Replayer], with its variants (chunking, transform, timing,
  faults);
* else, when the mode records, it is relayed to the upstream (httpx, HTTP/2 when ``h2`` is
  installed, TLS verified against ``ca_bundle`` when given): each upstream chunk is written to the
  client the moment it arrives, undecoded (a compressed body goes to the client as it asked for
  it), and recorded decoded with its arrival time. When the response ends, the recording is
  merged into the cassette and saved atomically under the cassette's lock (a concurrent writer's
  interactions kept), after the same secret scan as every write: refused, it is kept masked as
  ``<name>.refused.json``. A client that leaves mid-stream cancels the upstream request; what
  arrived is saved, marked incomplete unless the protocol's end event (``[DONE]``) had arrived.
  Hop-by-hop headers and ``x-ssemock-*`` headers are not
  forwarded;
* else the answer is a 404 listing the recorded requests with what differs (secrets masked),
  and the log line names the closest ones and what differs.

A WebSocket upgrade is replayed or relayed and recorded the same way, message by message
(`ssemock.commands.proxy.websocket`); the replay is ``ssemock serve``'s
(`ssemock.commands.serve.websocket`), on the raw connection, under the same variants. A gRPC
call (HTTP/2 cleartext on the same port, told by its preface) is relayed to an h2 or h2c
upstream and recorded call by call (`ssemock.commands.proxy.grpc`; needs h2, the ``grpc`` extra).

An interruption (`Proxy.keep_in_flight`, which ``ssemock proxy`` calls on SIGTERM or Ctrl-C)
keeps the recordings still under way as ``<name>.partial.json`` beside the cassette, masked;
everything that ended before is in the cassette already, and so is a stream whose end had
arrived (EOF or its end event) though the upstream had not closed it yet. A fault a replay
injects is one log line, as under ``ssemock serve`` (no ASGI traceback).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Callable, Sequence
from importlib.util import find_spec

from starlette.applications import Starlette
from starlette.routing import Route, WebSocketRoute, request_response
from starlette.types import ASGIApp, Receive, Scope, Send
from starlette.websockets import WebSocket

from ...core.modes import RecordMode
from ...core.packages import fresh
from ...plan import matching
from ...plan.serving import ChunkingSpec, FaultSpec, TimingSpec, TransformSpec
from ..serve import DEFAULT_MAX_BODY, quiet_drops
from ..serve.websocket import protocol
from .book import Book, cassette_name
from .relay import CASSETTE_HEADER, HOP_BY_HOP, PATH_PREFIX, Proxy, Upstream
from .relay_protocol import relay_protocol
from .websocket import replaying

__all__ = [
    "CASSETTE_HEADER",
    "HOP_BY_HOP",
    "PATH_PREFIX",
    "Book",
    "Proxy",
    "Upstream",
    "app",
    "cassette_name",
]

_METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]


def app(
    upstream: str | Upstream | Sequence[Upstream],
    *,
    cassette_dir: str | os.PathLike[str],
    record_mode: RecordMode = "once",
    cassette: str = "proxy",
    chunking: ChunkingSpec = "as_recorded",
    transform: TransformSpec = None,
    timing: TimingSpec = "instant",
    faults: FaultSpec = (),
    match_on: matching.MatchOn | None = None,
    cors: str | None = None,
    max_body: int = DEFAULT_MAX_BODY,
    ca_bundle: str | os.PathLike[str] | None = None,
    http2: bool | None = None,
    log: Callable[[str], None] | None = None,
) -> Starlette:
    """An ASGI app proxying to ``upstream`` (a URL, or `Upstream`s by path prefix) and recording
    into ``cassette_dir``; ``app.state.ssemock`` is the [`Proxy`][ssemock.commands.proxy.Proxy].
    Run it with ``ssemock.commands.loopback.running(app)`` or any ASGI server."""
    ups = (
        [Upstream(upstream, cassette=cassette)]
        if isinstance(upstream, str)
        else [upstream]
        if isinstance(upstream, Upstream)
        else list(upstream)
    )
    proxy = Proxy(
        ups,
        cassette_dir=cassette_dir,
        record_mode=record_mode,
        chunking=chunking,
        transform=transform,
        timing=timing,
        faults=faults,
        match_on=match_on,
        cors=cors,
        max_body=max_body,
        ca_bundle=ca_bundle,
        http2=http2,
        log=log,
    )
    quiet_drops()  # a replayed fault's drop: one log line, as serve's

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        yield
        await proxy.aclose()  # the server stopped: its upstream connections are closed with it

    starlette = Starlette(
        routes=[
            Route("/{path:path}", proxy.handle, methods=_METHODS),
            WebSocketRoute("/{path:path}", proxy.handle_websocket),
        ],
        lifespan=lifespan,
    )
    starlette.router.default = _not_a_path(proxy)
    starlette.state.ssemock = proxy
    # a handshake the mode replays is answered on the raw connection, as ssemock serve does; one
    # it records goes to uvicorn's own WebSocket protocol, then the relay above
    starlette.state.ws_protocol = protocol(replaying(proxy), fallback=relay_protocol())
    starlette.state.ws_max_size = max_body  # a client's message, relayed or replayed: 1009 past it
    if find_spec("h2") is not None:  # gRPC (h2c with prior knowledge) on the same port: the grpc extra's h2
        from .grpc import relaying

        starlette.state.h2c_protocol = relaying(proxy)
    return starlette


def _not_a_path(proxy: Proxy) -> ASGIApp:
    """What answers a request target no route takes (one not starting with "/": absolute-form,
    authority-form): the proxy's endpoints, whose routing refuses it (400, one log line)."""
    http = request_response(proxy.handle)

    async def answer(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            await proxy.handle_websocket(WebSocket(scope, receive, send))
        else:
            await http(scope, receive, send)

    return answer


fresh(__name__)  # submodules read from sys.modules (pytester's in-process reruns drop them)
