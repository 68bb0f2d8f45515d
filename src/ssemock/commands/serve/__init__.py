"""``ssemock serve``: replay cassettes over a real HTTP server, for clients that are not httpx.

requests, aiohttp, curl and browsers cannot be intercepted through respx, so this module turns
cassettes into a Starlette (ASGI) app: an incoming request is matched to a recorded interaction
(method, path, query and, when recorded, the JSON body, with [`ssemock.matching`][ssemock.matching]), and the
response is replayed through the same pipeline as [`ssemock.Player`][ssemock.Player] -- transforms,
faults, re-chunking, timing -- with every chunk sent as its own HTTP write:

* a ``disconnect`` fault (or a failure recorded mid-stream) really drops the TCP connection in
  the middle of the body, so the client's own stack raises (``requests``'
  ChunkedEncodingError, aiohttp's ClientPayloadError, curl's exit code 18);
* a ``stall`` fault really sends nothing for its seconds (scaled by ``scaled:F`` timing);
* ``http_error`` answers with the error status and the provider's error body;
* a GET event stream whose messages answer other requests (the legacy MCP transport's) holds
  each such message until the request it answers has come ([`ssemock.plan.push_replay`][ssemock.plan.push_replay]), as the Player
  does; when it never comes, the connection drops after ``held.HOLD_LIMIT`` with a log line.

Browsers: ``EventSource`` can only send GET, so a GET with ``Accept: text/event-stream`` that
matches no interaction exactly is matched on path and query alone against the recorded SSE
streams (an OpenAI-style POST stream can be opened from a page). A reconnection carrying
``Last-Event-ID`` resumes the stream after the first event block whose dispatch set the last
event ID string to that ID (blocks are framed at blank lines and read with the reference
decoder, so a block cut off by the end of the recording never counts); the faults then apply to
what remains, so a dropped connection followed by the browser's automatic reconnection delivers
every event exactly once. When no event with another ID follows, the client cannot tell the
server whether it read the rest (it would reconnect with the same ID forever), so the
resumption answers ``204 No Content``, which tells an ``EventSource`` to stop reconnecting;
events without an ``id`` after the last one (such as ``data: [DONE]``) are then not served again. No response carries a CORS header unless ``cors=ORIGIN``
(``--cors``) asks for it; then every response allows that origin and a preflight ``OPTIONS`` is
answered unless one was recorded. Responses also carry
``x-ssemock-interaction: N`` (the ``#N`` that `routes` prints) and, when resumed,
``x-ssemock-resumed-after: ID``.

A cassette's gRPC calls are answered over HTTP/2 cleartext on the same port (h2c with prior
knowledge, told from HTTP/1.1 by the connection's preface: `ssemock.commands.preface`), matched by
method path and request messages, their DATA frames cut by the gRPC wire chunkings
(`ssemock.commands.serve.grpc`; the ``grpc`` extra).

A request body larger than ``max_body`` bytes (``--max-body``, default 8 MiB) is answered
``413`` without being read further; a WebSocket message, close ``1009``. An unmatched request gets a 404 that lists the recorded
requests (method, path and query, what differs) with every secret masked and no file paths.
``log`` (``ssemock serve`` prints it; ``--quiet`` silences it) gets one line per request, and one
when a client leaves mid-stream; a client that leaves stops the stream at once, quietly.

Several interactions matching the same request are served in turn (the least-played first),
so recorded retries replay in order and the server keeps answering after the last one; an
``http_error`` (or a ``sequence`` step) does not use up its interaction, as in the Player.

[`app`][ssemock.commands.serve.app] needs the ``serve`` extra (``pip install -e ".[serve]"`` in a clone): Starlette, and uvicorn
to run it ([`ssemock.commands.loopback.running`][ssemock.commands.loopback.running], or ``ssemock serve``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

try:
    from starlette.applications import Starlette
    from starlette.routing import Route
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    from ..doctor import install_hint

    raise ImportError(
        f"ssemock serve needs the 'serve' extra ({exc.name} is missing): {install_hint('serve')}"
    ) from exc

from ...core.packages import fresh
from ...plan import matching
from ...plan.resume import Resume, resume_index, resume_offset
from ...plan.serving import ChunkingSpec, FaultSpec, TimingSpec, TransformSpec
from . import websocket as _websocket
from .prepare import ConnectionDropped, Prepared, prepare
from .replayer import (
    DEFAULT_MATCH_ON,
    DEFAULT_MAX_BODY,
    MAX_EXCHANGES,
    CassetteSource,
    Exchange,
    Replayer,
    routes,
)

__all__ = [
    "DEFAULT_HEADER_TIMEOUT",
    "DEFAULT_MATCH_ON",
    "DEFAULT_MAX_BODY",
    "DEFAULT_MAX_CONNECTIONS",
    "MAX_EXCHANGES",
    "Exchange",
    "Prepared",
    "Replayer",
    "Resume",
    "app",
    "prepare",
    "quiet_drops",
    "resume_index",
    "resume_offset",
    "routes",
]

DEFAULT_HEADER_TIMEOUT = 10.0
"""``ssemock serve``'s default: the seconds a client has to send a request's headers."""
DEFAULT_MAX_CONNECTIONS = 256
"""``ssemock serve``'s default: how many connections are open at once (past it a new one is
closed at once)."""
_METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]


class _QuietDrops(logging.Filter):
    """Keep uvicorn from logging our deliberate drops as application errors (only those)."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not isinstance(exc, ConnectionDropped)


def quiet_drops() -> None:
    """uvicorn logs a fault's deliberate drop as one line (the replayer's), not an ASGI traceback."""
    logger = logging.getLogger("uvicorn.error")
    if not any(isinstance(f, _QuietDrops) for f in logger.filters):
        logger.addFilter(_QuietDrops())


def app(
    cassettes: CassetteSource | Sequence[CassetteSource],
    *,
    chunking: ChunkingSpec = "as_recorded",
    transform: TransformSpec = None,
    timing: TimingSpec = "instant",
    faults: FaultSpec = (),
    match_on: matching.MatchOn | None = None,
    cors: str | None = None,
    max_body: int = DEFAULT_MAX_BODY,
    log: Callable[[str], None] | None = None,
) -> Starlette:
    """An ASGI app replaying ``cassettes`` (Cassette objects or paths) to any HTTP client.

    ``cors``: the origin to allow (``"*"`` for any; default none); ``max_body``: the largest
    request body accepted (413 past it) and WebSocket message (close 1009 past it); ``log``:
    called with one masked line per request.

    Run it with ``ssemock.commands.loopback.running(app)`` (loopback, in a thread) or any ASGI server.
    ``app.state.ssemock`` is the [`Replayer`][ssemock.commands.serve.Replayer] (``.exchanges`` lists what was served).
    """
    replayer = Replayer(
        cassettes,
        chunking=chunking,
        transform=transform,
        timing=timing,
        faults=faults,
        match_on=match_on,
        cors=cors,
        max_body=max_body,
        log=log,
    )
    quiet_drops()
    starlette = Starlette(routes=[Route("/{path:path}", replayer.handle, methods=_METHODS)])
    starlette.state.ssemock = replayer
    starlette.state.on_stop = replayer.stop  # (running() calls it as the server stops)
    # WebSocket upgrades: answered on the raw connection (uvicorn's ws= option, see .websocket)
    starlette.state.ws_protocol = _websocket.protocol(_websocket.serving(replayer))
    if any(x.grpc is not None for x in replayer.interactions):  # gRPC calls: h2c on the same port
        starlette.state.h2c_protocol = _grpc_serving(replayer)
    return starlette


def _grpc_serving(replayer: Replayer) -> Callable[[], Any]:
    """The h2c protocol answering the replayer's gRPC calls (`.grpc`); it needs h2 (the ``grpc`` extra)."""
    try:
        from .grpc import serving
    except ImportError as exc:  # pragma: no cover - depends on the installed extras
        from ..doctor import install_hint

        raise ImportError(
            f"serving gRPC calls needs the 'grpc' extra ({exc.name} is missing): {install_hint('grpc')}"
        ) from exc
    return serving(replayer)


fresh(__name__)  # submodules read from sys.modules (pytester's in-process reruns drop them)
