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
  each such message until the request it answers has come ([`ssemock.plan.held`][ssemock.plan.held]), as the Player
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

A request body larger than ``max_body`` bytes (``--max-body``, default 8 MiB) is answered
``413`` without being read further. An unmatched request gets a 404 that lists the recorded
requests (method, path and query, what differs) with every secret masked and no file paths.
``log`` (``ssemock serve`` prints it; ``--quiet`` silences it) gets one line per request, and one
when a client leaves mid-stream; a client that leaves stops the stream at once, quietly.

Several interactions matching the same request are served in turn (the least-played first),
so recorded retries replay in order and the server keeps answering after the last one; an
``http_error`` (or a ``sequence`` step) does not use up its interaction, as in the Player.

[`app`][ssemock.commands.serve.app] needs the ``serve`` extra (``pip install -e ".[serve]"`` in a clone): Starlette, and uvicorn
to run it ([`ssemock.commands.server.running`][ssemock.commands.server.running], or ``ssemock serve``).
"""

from __future__ import annotations

import asyncio
import bisect
import functools
import logging
import os
from collections import deque
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpcore

from .. import protocols as _protocols
from ..framing.sse import Decoder, decode
from ..plan import held as _held
from ..plan import matching
from ..plan.selection import Selection
from ..plan.serving import (
    ChunkingSpec,
    FaultSpec,
    Plan,
    ReplayStream,
    TimingSpec,
    TransformSpec,
    plan_response,
)
from ..redaction.rules import escape_control, mask_text, mask_url, redact_request
from ..store.cassette import Cassette, Interaction, Request
from ..store.cassette import Response as CassetteResponse
from ..variants import chunking as _chunking
from ..variants import faults as _faults
from ..variants import timing as _timing
from ..variants import transforms as _transforms
from ..variants.chunking import event_ends

try:
    from starlette.applications import Starlette
    from starlette.requests import ClientDisconnect
    from starlette.requests import Request as HTTPRequest
    from starlette.responses import JSONResponse, Response, StreamingResponse
    from starlette.routing import Route
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    from .doctor import install_hint

    raise ImportError(
        f"ssemock serve needs the 'serve' extra ({exc.name} is missing): {install_hint('serve')}"
    ) from exc

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
    "resume_index",
    "resume_offset",
    "routes",
]

DEFAULT_MATCH_ON: tuple[str, ...] = ("method", "path", "query", "body")
"""What the server matches a request on by default: the server cannot see the recorded scheme,
host and port, so it matches on the rest."""
DEFAULT_MAX_BODY = 8 << 20
"""The largest request body read (8 MiB, ``--max-body``); a larger one is answered ``413``."""
MAX_EXCHANGES = 10_000
"""How many exchanges ``Replayer.exchanges`` keeps, the latest (the server runs for ever)."""
DEFAULT_HEADER_TIMEOUT = 10.0
"""``ssemock serve``'s default: the seconds a client has to send a request's headers."""
DEFAULT_MAX_CONNECTIONS = 256
"""``ssemock serve``'s default: how many connections are open at once (past it a new one is
closed at once)."""
_METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]
_DROP_HEADERS = frozenset(
    {"content-length", "content-encoding", "transfer-encoding", "connection", "keep-alive"}
)
CassetteSource = Cassette | str | os.PathLike[str]


class ConnectionDropped(Exception):
    """Raised inside a response body to make the server close the connection mid-body."""


class _QuietDrops(logging.Filter):
    """Keep uvicorn from logging our deliberate drops as application errors (only those)."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not isinstance(exc, ConnectionDropped)


def _quiet_drops() -> None:
    logger = logging.getLogger("uvicorn.error")
    if not any(isinstance(f, _QuietDrops) for f in logger.filters):
        logger.addFilter(_QuietDrops())


@dataclass
class Prepared:
    """One replayed response, ready to send: the plan (status, headers, timed chunks, how it ends)."""

    plan: Plan
    resumed_at: int | None = None  # byte offset of the recorded body the stream resumed at


@dataclass
class Exchange:
    """What the server did with one request (``Replayer.exchanges``)."""

    method: str
    """The request method."""
    path: str
    """The request path."""
    status: int
    """The status code answered."""
    index: int | None
    """The interaction served, None when unmatched."""
    last_event_id: str | None = None
    """The `Last-Event-ID` header of a reconnecting client."""
    resumed_at: int | None = None
    """Where a resumed stream started (the index of its first event), if it was resumed."""
    faults: list[str] = field(default_factory=list)
    """The faults applied."""
    chunks: int = 0
    """How many chunks were sent."""
    dropped: bool = False
    """The connection was closed mid-body on purpose."""
    left: bool = False
    """The client closed the connection before the end."""


def resume_offset(body: bytes, last_event_id: str) -> int | None:
    """Byte offset just after the first event block whose dispatch sets the last event ID string to
    ``last_event_id``.

    Blocks end at a blank line; the reference decoder reads them, so ``id`` fields follow the
    WHATWG rules (an ``id`` with NUL is ignored, the ID persists across blocks, a block cut off by
    the end of the body never sets it). None: no such block.
    """
    if not last_event_id:
        return None
    decoder = Decoder()
    start = 0
    for end in event_ends(body, sse=True):
        decoder.feed(body[start:end])
        start = end
        if decoder.last_event_id == last_event_id:
            return end
    return None


@dataclass(frozen=True)
class Resume:
    """Where a reconnection carrying an ID resumes a recorded SSE stream: the offset after the
    first block that set that last event ID (`resume_offset`), and whether the rest moves
    the ID on (else the answer is ``204``)."""

    offset: int
    moves_on: bool


def resume_index(body: bytes) -> dict[str, Resume]:
    """Every last event ID a stream sets, with where a reconnection carrying it resumes: one
    pass of the reference decoder over the body, so the server answers any ``Last-Event-ID`` with
    a dictionary look-up (built once per interaction, never per request)."""
    decoder = Decoder()
    blocks: list[tuple[int, str, list[str]]] = []  # (end, last event ID after it, ids of its events)
    start = 0
    for end in event_ends(body, sse=True):
        events = decoder.feed(body[start:end])
        blocks.append((end, decoder.last_event_id, [e.id for e in events]))
        start = end
    final = decoder.last_event_id
    # after block k: the one ID every later event carries ("" and no events: None; several: _MIXED)
    uniform: list[object] = [None] * (len(blocks) + 1)
    for k in range(len(blocks) - 1, -1, -1):
        seen = uniform[k + 1]
        for ident in blocks[k][2]:
            seen = ident if seen is None or seen == ident else _MIXED
        uniform[k] = seen
    index: dict[str, Resume] = {}
    for k, (end, ident, _) in enumerate(blocks):
        if ident and ident not in index:
            after = uniform[k + 1]
            index[ident] = Resume(end, final != ident or (after is not None and after != ident))
    return index


_MIXED = object()


def _resumed(response: CassetteResponse, offset: int) -> CassetteResponse:
    """The response from byte ``offset`` on; chunk times restart from when that byte arrived."""
    k = bisect.bisect_left(response.ends, offset)
    since = response.times[k] if k < len(response.times) else (response.times[-1] if response.times else 0.0)
    kept = [(e - offset, t) for e, t in zip(response.ends, response.times) if e > offset]
    return CassetteResponse(
        response.status,
        list(response.headers),
        response.body[offset:],
        [e for e, _ in kept],
        [max(t - since, 0.0) for _, t in kept],
        response.complete,
        response.error,
    )


def prepare(
    interaction: Interaction,
    *,
    url: str = "",
    chunking: _chunking.Chunking = _chunking.as_recorded,
    transforms: Sequence[_transforms.Transform] = (),
    timing: _timing.Timing = _timing.instant,
    faults: Sequence[_faults.Fault] = (),
    attempt: int = 0,
    last_event_id: str | None = None,
    cors: str | None = None,
    holds: Callable[[bytes], Sequence[tuple[int, frozenset[Any]]]] | None = None,
    resume: dict[str, Resume] | None = None,
) -> Prepared:
    """What to send for a recorded interaction: [`ssemock.player.replay.plan_response`][ssemock.plan_response] (transforms,
    faults, chunking, timing, as the Player serves respx), after resuming past ``last_event_id``.

    For a real server: stalls really wait (scaled by the timing's factor, if any), and a fault
    that ends the stream, or a failure recorded mid-stream, makes the plan end with
    `ConnectionDropped`. A resumption after which no event carries another ID is a
    ``204 No Content``. ``holds``: where a server-push stream waits for requests (see
    [`ssemock.plan.held`][ssemock.plan.held]). ``resume``: the interaction's `resume_index`, when built already.
    """
    response = interaction.response
    resumed_at = None
    if last_event_id and _is_sse(response):
        found = (resume if resume is not None else resume_index(response.body)).get(last_event_id)
        if found is not None:
            resumed_at = found.offset
            if not found.moves_on:  # tell an EventSource to stop
                return Prepared(
                    Plan(204, _response_headers(response.headers, cors), b"", [], [], None), resumed_at
                )
            response = _resumed(response, resumed_at)
    plan = plan_response(
        response,
        url=url,
        core=httpcore,
        chunking=chunking,
        transforms=transforms,
        timing=timing,
        faults=faults,
        attempt=attempt,
        holds=holds,
    )
    error = plan.error
    if error is not None and not isinstance(error, ConnectionDropped):
        error = ConnectionDropped(str(error))
    plan = replace(
        plan,
        headers=_response_headers(plan.headers, cors),
        error=error,
        stall_factor=1.0 if timing.factor is None else timing.factor,
    )
    return Prepared(plan, resumed_at)


def _response_headers(headers: Sequence[tuple[str, str]], cors: str | None) -> list[tuple[str, str]]:
    out = [(k, v) for k, v in headers if k not in _DROP_HEADERS]
    if cors is not None and not any(k == "access-control-allow-origin" for k, _ in out):
        out.append(("access-control-allow-origin", cors))
    return out


def _header_bytes(text: str) -> bytes:
    """Header text as recorded (latin-1, as HTTP/1.1 carries it); UTF-8 for text edited beyond it."""
    try:
        return text.encode("latin-1")
    except UnicodeEncodeError:
        return text.encode("utf-8")


def _load(source: CassetteSource) -> Cassette:
    return source if isinstance(source, Cassette) else Cassette.load(source)


def _holds(body: bytes) -> tuple[tuple[int, frozenset[Any]], ...]:
    """`ssemock.protocols.holds` as a tuple (for a cache of them per server)."""
    return tuple(_protocols.holds(body))


def _is_sse(response: CassetteResponse) -> bool:
    return "event-stream" in (response.header("content-type") or "")


class Replayer:
    """The state behind [`app`][ssemock.commands.serve.app]: interactions, options, and what was served so far."""

    def __init__(
        self,
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
    ) -> None:
        sources = [cassettes] if isinstance(cassettes, (Cassette, str, os.PathLike)) else list(cassettes)
        self.cassettes = [_load(s) for s in sources]
        """The cassettes served."""
        self.interactions: list[Interaction] = []
        """Every interaction of every cassette, in order."""
        self.sources: list[tuple[Cassette, int]] = []
        """Per interaction: its cassette and index there."""
        for cassette in self.cassettes:
            for i, interaction in enumerate(cassette.interactions):
                self.interactions.append(interaction)
                self.sources.append((cassette, i))
        self.chunking = _chunking.get(chunking)
        """How replayed bodies are cut into chunks."""
        self.transforms = _transforms.resolve(transform)
        """The wire transforms applied to every body, in order."""
        self.timing = _timing.get(timing)
        """When chunks are sent."""
        self.faults = _faults.resolve(faults)
        """The faults injected, in order."""
        self.aim = _faults.Aim(self.faults)
        """Which faults apply to which interaction."""
        self.aim.check(
            self.interactions, ", ".join(str(c.path or "an in-memory cassette") for c in self.cassettes)
        )
        self.match_on = matching.resolve(match_on if match_on is not None else DEFAULT_MATCH_ON)
        """The request parts that pick the interaction served."""
        if max_body < 0:
            raise ValueError(f"max_body must be >= 0 bytes, got {max_body}")
        self.cors, self.max_body, self._log = cors, max_body, log
        self.selection = Selection(self.interactions, self.match_on)  # the Player's matching core
        """Picks the interaction that answers a request (the same matching as the Player's)."""
        self.attempts = 0
        """How many requests the server has answered, faulted ones included."""
        self.exchanges: deque[Exchange] = deque(maxlen=MAX_EXCHANGES)
        """The latest exchanges (what the server did with each request), oldest first."""
        self._last_served: list[int] = []  # interaction indexes, most recent last
        # the correlation ids of the requests matched, kept only while a held stream waits for them
        self._requests = _held.Requests(only_wanted=True)
        # where a GET stream waits for requests, remembered per body served (not decoded per request)
        self._holds = functools.lru_cache(maxsize=32)(_holds)
        # per interaction, where each Last-Event-ID resumes it: built here, once, not per request
        self._resume = [
            resume_index(x.response.body) if _is_sse(x.response) else {} for x in self.interactions
        ]

    @property
    def held_ids(self) -> int:
        """How many request ids the server keeps for held streams: only those an open held
        stream still waits for (bounded by the cassettes, whatever the clients send)."""
        return len(self._requests)

    # -- matching ---------------------------------------------------------------------------

    @property
    def play_counts(self) -> list[int]:
        """How many times each interaction was served."""
        return self.selection.play_counts

    def candidates(self, sent: Request) -> list[int]:
        """Interactions the request matches; for an EventSource GET, also SSE streams by path and query."""
        found = self.selection.candidates(sent)
        accept = next((v for k, v in sent.headers if k == "accept"), "")
        if not found and sent.method == "GET" and "text/event-stream" in accept:
            loose = [m for m in self.match_on if m not in ("method", "body")]
            found = [
                i
                for i, x in enumerate(self.interactions)
                if _is_sse(x.response) and not matching.differences(sent, x.request, loose)
            ]
        return found

    def take(self, sent: Request, last_event_id: str | None) -> int | None:
        """The interaction to serve (least played first: the server answers forever), counted as
        played; a reconnection gets the stream it was reading when that can be told."""
        found = self.candidates(sent)
        if last_event_id:  # a reconnection: the stream it was reading, if we can tell
            for i in reversed(self._last_served):
                if i in found and last_event_id in self._resume[i]:
                    return self.selection.take(sent, repeats="least_played", among=[i])
        return self.selection.take(sent, repeats="least_played", among=found)

    # -- serving ----------------------------------------------------------------------------

    def log(self, line: str) -> None:
        """One line of the access log (masked), if a ``log`` was given."""
        if self._log is not None:
            self._log(escape_control(mask_text(line)))

    async def _read_body(self, request: HTTPRequest) -> bytes | None:
        """The request body, or None when it is larger than ``max_body`` (read no further)."""
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self.max_body:
            return None
        parts, size = [], 0
        async for part in request.stream():
            size += len(part)
            if size > self.max_body:
                return None
            parts.append(part)
        return b"".join(parts)

    async def handle(self, request: HTTPRequest) -> Response:
        """The Starlette endpoint: match, prepare, stream."""
        t0 = _timing.clock.now()
        target = mask_url(request.url.path + (f"?{request.url.query}" if request.url.query else ""))
        try:
            body = await self._read_body(request)
        except ClientDisconnect:  # left while sending its body: one line, no traceback
            self.exchanges.append(Exchange(request.method, request.url.path, 499, None, left=True))
            self.log(f"{request.method} {target}: the client left while sending its request body")
            return Response(status_code=499)
        if body is None:
            self.exchanges.append(Exchange(request.method, request.url.path, 413, None))
            self.log(f"{request.method} {target} -> 413 body larger than {self.max_body} bytes")
            return JSONResponse(
                {"error": f"ssemock: the request body is larger than --max-body ({self.max_body} bytes)"},
                status_code=413,
                headers=self._cors_headers(),
            )
        sent = redact_request(
            Request(
                request.method,
                str(request.url),
                [(k.decode("latin-1").lower(), v.decode("latin-1")) for k, v in request.headers.raw],
                body if body or request.method not in ("GET", "HEAD") else None,
            )
        )
        last_event_id = request.headers.get("last-event-id")
        index = self.take(sent, last_event_id)
        if index is None:
            if (
                self.cors is not None
                and request.method == "OPTIONS"
                and "access-control-request-method" in request.headers
            ):
                self.log(f"OPTIONS {target} -> 204 preflight")
                return self._preflight(request)
            self.exchanges.append(Exchange(request.method, request.url.path, 404, None, last_event_id))
            self.log(f"{request.method} {target} -> 404 no recorded interaction matches")
            return JSONResponse(self.unmatched(sent), status_code=404, headers=self._cors_headers())
        attempt, self.attempts = self.attempts, self.attempts + 1
        interaction = self.interactions[index]
        pushes = sent.method == "GET" and _is_sse(interaction.response)
        prepared = prepare(
            interaction,
            url=sent.url,
            chunking=self.chunking,
            transforms=self.transforms,
            timing=self.timing,
            faults=self.aim.pick(index, interaction),
            attempt=attempt,
            last_event_id=last_event_id,
            cors=self.cors,
            holds=_held.holds_for(self.interactions, index, found=self._holds) if pushes else None,
            resume=self._resume[index],
        )
        plan = prepared.plan
        wanted = [i for ids in plan.holds.values() for i in ids]
        since = self._requests.want(wanted)  # (no await since the match: no request came in between)
        self._requests.add(_protocols.request_ids(sent.body))
        gate = (
            _held.Gate(self._requests, since, _held.HOLD_LIMIT, self._never_requested(index, target))
            if plan.holds
            else None
        )
        if not plan.consumes:
            self.selection.release(index)
        self._last_served = [i for i in self._last_served if i != index] + [index]
        exchange = Exchange(
            request.method,
            request.url.path,
            plan.status,
            index,
            last_event_id,
            prepared.resumed_at,
            plan.faults,
            len(plan.chunks),
        )
        self.exchanges.append(exchange)
        headers = [*plan.headers, ("x-ssemock-interaction", str(index))]  # the "#N" of routes()
        if prepared.resumed_at is not None:
            headers.append(("x-ssemock-resumed-after", last_event_id or ""))
        self.log(
            f"{request.method} {target} -> {plan.status} #{index}, {len(plan.chunks)} chunk(s)"
            + (f" resumed after id {last_event_id!r}" if prepared.resumed_at is not None else "")
            + (f", faults {';'.join(exchange.faults)}" if exchange.faults else "")
        )
        response = StreamingResponse(
            self._body(plan, t0, exchange, request, target, gate, wanted), status_code=plan.status
        )
        response.raw_headers = [(_header_bytes(k), _header_bytes(v)) for k, v in headers]
        return response

    def _never_requested(self, index: int, target: str) -> Callable[[list[Any], str], BaseException]:
        """What a held stream ends with when the requests it answers never come: a dropped
        connection, and a log line naming the interaction and the ids."""

        def error(missing: list[Any], why: str) -> BaseException:
            ids = ", ".join(sorted(map(repr, missing)))
            message = (
                f"GET {target}: #{index} answers the request with id {ids} next, and replay holds it until "
                f"that request is made; {why}: connection dropped"
            )
            self.log(message)
            return ConnectionDropped(message)

        return error

    async def _body(
        self,
        plan: Plan,
        t0: float,
        exchange: Exchange,
        request: HTTPRequest,
        target: str,
        gate: _held.Gate | None = None,
        wanted: Sequence[Any] = (),
    ) -> AsyncIterator[bytes]:
        """The planned chunks. Every few chunks it lets the event loop run, so a client that left is
        seen at once (Starlette then cancels the stream) instead of after thousands of writes to a
        closed socket, each logged as ``socket.send() raised exception.``; one log line says so."""
        sent, ended = 0, False
        try:
            async for chunk in ReplayStream(plan, t0, gate):
                if not chunk:
                    continue
                yield chunk
                sent += 1
                if sent % 4 == 0 and sent < len(plan.chunks):
                    await asyncio.sleep(0)
            ended = True
        except ConnectionDropped:
            exchange.dropped = ended = True
            raise
        finally:
            self._requests.unwant(wanted)
            if not ended:
                exchange.left = True
                self.log(
                    f"{request.method} {target}: the client left after {sent} of {len(plan.chunks)} chunk(s)"
                )

    def _cors_headers(self) -> dict[str, str]:
        return {} if self.cors is None else {"access-control-allow-origin": self.cors}

    def _preflight(self, request: HTTPRequest) -> Response:
        headers = {
            **self._cors_headers(),
            "access-control-allow-methods": request.headers.get("access-control-request-method", "GET"),
            "access-control-max-age": "600",
        }
        wanted = request.headers.get("access-control-request-headers")
        if wanted:
            headers["access-control-allow-headers"] = wanted
        return Response(status_code=204, headers=headers)

    def unmatched(self, sent: Request) -> dict[str, Any]:
        """The 404 body: what was asked, and every recorded request (``#N`` of [`routes`][ssemock.commands.serve.Replayer.routes]) with
        what differs; secrets masked, no file paths (anyone who can reach the port reads it)."""
        parts = urlsplit(sent.url)
        recorded = []
        for i, x in enumerate(self.interactions):
            rec = urlsplit(x.request.url)
            recorded.append(
                {
                    "index": i,
                    "method": x.request.method,
                    "path": mask_url(rec.path + (f"?{rec.query}" if rec.query else "")),
                    "differs": [mask_text(d) for d in matching.differences(sent, x.request, self.match_on)],
                }
            )
        asked = mask_url(parts.path + (f"?{parts.query}" if parts.query else ""))
        return {
            "error": f"ssemock: no recorded interaction matches {sent.method} {asked}",
            "matching_on": list(self.match_on),
            "recorded": recorded,
        }

    def routes(self) -> list[str]:
        """One line per interaction: ``#0 POST /v1/chat/completions -> 200 text/event-stream, 12 events``."""
        return routes(self)


def routes(replayer: Replayer) -> list[str]:
    """Human-readable lines describing the interactions a [`Replayer`][ssemock.commands.serve.Replayer] serves."""
    lines = []
    for i, x in enumerate(replayer.interactions):
        cassette, at = replayer.sources[i]
        rec = urlsplit(x.request.url)
        target = rec.path + (f"?{rec.query}" if rec.query else "")
        resp = x.response
        kind = (resp.header("content-type") or "no content-type").split(";")[0]
        # events as a decoder dispatches them (a comment block is none), as show and validate count
        what = f"{len(decode([resp.body]))} events" if _is_sse(resp) else f"{len(resp.body)} bytes"
        span = f", {resp.times[-1]:.2f} s" if resp.times and resp.times[-1] else ""
        where = Path(cassette.path).name if cassette.path else "(memory)"
        lines.append(
            f"#{i} {x.request.method} {mask_url(target)} -> {resp.status} {kind}, {what}{span} ({where} #{at})"
        )
    return lines


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
    request body accepted (413 past it); ``log``: called with one masked line per request.

    Run it with ``ssemock.commands.server.running(app)`` (loopback, in a thread) or any ASGI server.
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
    _quiet_drops()
    starlette = Starlette(routes=[Route("/{path:path}", replayer.handle, methods=_METHODS)])
    starlette.state.ssemock = replayer
    return starlette
