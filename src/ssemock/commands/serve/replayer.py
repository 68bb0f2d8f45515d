"""The state behind `ssemock serve`'s app: the cassettes' interactions and options, how a request
picks the one it is answered with (least played first, an EventSource GET by path, a
reconnection by its stream), the Starlette endpoint that streams it, and what was served."""

from __future__ import annotations

import asyncio
import functools
import os
from collections import deque
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from starlette.requests import ClientDisconnect
from starlette.requests import Request as HTTPRequest
from starlette.responses import HTMLResponse, JSONResponse, Response, StreamingResponse

from ... import protocols as _protocols
from ...framing.sse import decode
from ...plan import matching
from ...plan import push_replay as _held
from ...plan.resume import is_sse as _is_sse
from ...plan.resume import resume_index
from ...plan.selection import Selection
from ...plan.serving import ChunkingSpec, FaultSpec, Plan, ReplayStream, TimingSpec, TransformSpec
from ...plan.session_group import SessionGroup, groups_of
from ...redaction.rules import escape_control, mask_text, mask_url, redact_request
from ...store.cassette import Cassette, Interaction, Request
from ...variants import chunking as _chunking
from ...variants import faults as _faults
from ...variants import timing as _timing
from ...variants import transforms as _transforms
from .page import render
from .prepare import ConnectionDropped, prepare

DEFAULT_MATCH_ON: tuple[str, ...] = ("method", "path", "query", "body")
"""What the server matches a request on by default: the server cannot see the recorded scheme,
host and port, so it matches on the rest."""
DEFAULT_MAX_BODY = 8 << 20
"""The largest request body read (8 MiB, ``--max-body``), a larger one answered ``413``; and the
largest WebSocket message a client sends, reassembled and inflated (a larger one: close ``1009``)."""
MAX_EXCHANGES = 10_000
"""How many exchanges ``Replayer.exchanges`` keeps, the latest (the server runs for ever)."""
CassetteSource = Cassette | str | os.PathLike[str]


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


async def read_body(request: HTTPRequest, max_body: int) -> bytes | None:
    """The request body, or None when it is larger than ``max_body`` bytes: refused on its
    declared length, else read part by part and given up past the cap (a chunked body is never
    read whole past it). ``ssemock serve``'s and ``ssemock proxy``'s (413 for None). Raises
    ClientDisconnect when the client leaves while sending it."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > max_body:
        return None
    parts, size = [], 0
    async for part in request.stream():
        size += len(part)
        if size > max_body:
            return None
        parts.append(part)
    return b"".join(parts)


def _header_bytes(text: str) -> bytes:
    """Header text as recorded (latin-1, as HTTP/1.1 carries it); UTF-8 for text edited beyond it."""
    try:
        return text.encode("latin-1")
    except UnicodeEncodeError:
        return text.encode("utf-8")


def is_upgrade(interaction: Interaction) -> bool:
    """Whether ``interaction`` answers a WebSocket handshake: a recorded session, or a handshake
    the server refused (its request a ``ws://`` or ``wss://`` URL)."""
    return interaction.websocket is not None or interaction.request.url.startswith(("ws://", "wss://"))


def _load(source: CassetteSource) -> Cassette:
    return source if isinstance(source, Cassette) else Cassette.load(source)


def _holds(body: bytes) -> tuple[tuple[int, frozenset[Any]], ...]:
    """`ssemock.protocols.holds` as a tuple (for a cache of them per server)."""
    return tuple(_protocols.holds(body))


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
        self.upgrades = [is_upgrade(x) for x in self.interactions]
        """Per interaction: whether it answers a WebSocket handshake (a session, or a refusal)."""
        self.sessions: deque[Any] = deque(maxlen=MAX_EXCHANGES)
        """The WebSocket sessions served (`ssemock.plan.websocket.variants.VariedConversation`), oldest first."""
        self._ws_attempts: dict[int, int] = {}
        self.call_attempts: dict[tuple[int, int], int] = {}
        """A gRPC ``sequence`` fault's attempts so far (`ssemock.variants.grpc.faults.for_call`)."""
        # each cassette's sessions spanning connections, by the index of a member there (issue 44 item 2)
        self._groups = {
            id(c): groups_of(c.interactions, str(c.path or "an in-memory cassette")) for c in self.cassettes
        }

    def stop(self) -> None:
        """The server stops: a stream still held, or kept open after its last chunk, ends now
        (a later start begins afresh)."""
        self._requests.close()
        self._requests = _held.Requests(only_wanted=True)

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

    def candidates(self, sent: Request, *, websocket: bool = False) -> list[int]:
        """Interactions the request matches; for an EventSource GET, also SSE streams by path and
        query. ``websocket``: the handshakes it matches (else only HTTP interactions; a gRPC call
        is answered over HTTP/2 only, `ssemock.commands.serve.grpc`)."""
        found = [
            i
            for i in self.selection.candidates(sent)
            if self.upgrades[i] == websocket and self.interactions[i].grpc is None  # gRPC: over h2c only
        ]
        if websocket:
            return found
        accept = next((v for k, v in sent.headers if k == "accept"), "")
        if not found and sent.method == "GET" and "text/event-stream" in accept:
            found = self._streams_at(sent)
        return found

    def _streams_at(self, sent: Request) -> list[int]:
        """The SSE streams recorded at ``sent``'s URL, whatever their method and body (an
        EventSource's GET, or a reconnection to a stream a POST opened)."""
        loose = [m for m in self.match_on if m not in ("method", "body")]
        return [
            i
            for i, x in enumerate(self.interactions)
            if _is_sse(x.response) and not matching.differences(sent, x.request, loose)
        ]

    def take(self, sent: Request, last_event_id: str | None) -> int | None:
        """The interaction to serve (least played first: the server answers forever), counted as
        played; a reconnection gets the stream it was reading when that can be told."""
        found = self.candidates(sent)
        if last_event_id:  # a reconnection: the stream it was reading, if we can tell (a POST's too:
            streams = [*found, *self._streams_at(sent)]  # MCP 2025-11-25 resumes one with a GET)
            for i in reversed(self._last_served):
                if i in streams and last_event_id in self._resume[i]:
                    return self.selection.take(sent, repeats="least_played", among=[i])
        return self.selection.take(sent, repeats="least_played", among=found)

    def take_websocket(self, sent: Request) -> int | None:
        """The recorded WebSocket handshake answering ``sent`` (least played first), counted as played."""
        return self.selection.take(sent, repeats="least_played", among=self.candidates(sent, websocket=True))

    def websocket_attempt(self, index: int) -> int:
        """How many times the session at ``index`` was opened before (a reconnect is the next
        attempt: a ``sequence`` fault's steps)."""
        attempt = self._ws_attempts.get(index, 0)
        self._ws_attempts[index] = attempt + 1
        return attempt

    def session_group(self, index: int) -> SessionGroup | None:
        """The session spanning connections that interaction ``index`` belongs to, keyed by the
        member's index in its own cassette (``sources[index][1]``), or None: it is on its own. One
        progress for the server's life: the first replay of a group keeps its recorded order
        across connections; once every part of it was served, later ones are not held."""
        cassette, at = self.sources[index]
        return self._groups[id(cassette)].get(at)

    # -- serving ----------------------------------------------------------------------------

    def log(self, line: str) -> None:
        """One line of the access log (masked), if a ``log`` was given."""
        if self._log is not None:
            self._log(escape_control(mask_text(line)))

    async def handle(self, request: HTTPRequest) -> Response:
        """The Starlette endpoint: match, prepare, stream."""
        t0 = _timing.clock.now()
        target = mask_url(request.url.path + (f"?{request.url.query}" if request.url.query else ""))
        try:
            body = await read_body(request, self.max_body)
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
            if request.method == "GET" and request.url.path == "/":  # nothing recorded at /: the page
                self.log("GET / -> 200 the cassettes' timelines")
                return HTMLResponse(render(self.cassettes, title="ssemock serve"))
            sessions = self.candidates(sent, websocket=True)
            if sessions:  # a WebSocket session asked for without an upgrade
                self.exchanges.append(Exchange(request.method, request.url.path, 426, None))
                self.log(f"{request.method} {target} -> 426 #{sessions[0]} is a WebSocket session")
                return JSONResponse(
                    {
                        "error": f"ssemock: {request.method} {target} is a recorded WebSocket session "
                        f"(#{sessions[0]}): open it with a WebSocket client (ws://)"
                    },
                    status_code=426,
                    headers={**self._cors_headers(), "upgrade": "websocket"},
                )
            self.exchanges.append(Exchange(request.method, request.url.path, 404, None, last_event_id))
            answer = self.unmatched(sent)
            self.log(
                f"{request.method} {target} -> 404 no recorded interaction matches "
                f"(matching on {', '.join(map(str, answer['matching_on']))})"
            )
            for line in unmatched_lines(answer):  # what the 404's body says, in the log too
                self.log(line)
            return JSONResponse(answer, status_code=404, headers=self._cors_headers())
        attempt, self.attempts = self.attempts, self.attempts + 1
        interaction = self.interactions[index]
        pushes = (sent.method == "GET" and _is_sse(interaction.response)) or _held.announces(
            interaction  # an MCP listen stream's changes
        )
        prepared = prepare(
            interaction,
            url=sent.url,
            chunking=self.chunking,
            transforms=self.transforms,
            timing=self.timing,
            faults=self._faults(index, last_event_id),
            attempt=attempt,
            last_event_id=last_event_id,
            cors=self.cors,
            holds=_held.holds_for(self.interactions, index, found=self._holds) if pushes else None,
            resume=self._resume[index],
            sent=sent.body,
            stays_open=_protocols.stays_open(interaction),
        )
        plan = prepared.plan
        wanted = [i for ids in plan.holds.values() for i in ids]
        since = self._requests.want(wanted)  # (no await since the match: no request came in between)
        # the ids sent, and the recorded ones a held stream may name (a client's own ids differ)
        self._requests.add(
            [*_protocols.request_ids(sent.body), *_protocols.request_ids(interaction.request.body)]
        )
        gate = (
            _held.Gate(self._requests, since, _held.HOLD_LIMIT, self._never_requested(index, target))
            if plan.holds or plan.idles  # (an idle stream ends when the client leaves or the server stops)
            else None
        )
        if not plan.consumes:
            self.selection.release(index)
        self._last_served = [i for i in self._last_served if i != index] + [index]
        group = self.session_group(index)
        if group is not None:  # a REST call of a session spanning connections: its answer was released
            group.done(self.sources[index][1], [0])
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

    def _faults(self, index: int, last_event_id: str | None) -> list[Any]:
        """The faults serving ``interactions[index]`` goes through; a reconnection that resumes it
        is served without the ``resume`` fault that dropped it (the rest comes whole, once)."""
        picked = self.aim.pick(index, self.interactions[index])
        if last_event_id and last_event_id in self._resume[index]:
            return [f for f in picked if not str(f).startswith("resume")]
        return picked

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
            if not ended and plan.idles and sent == len(plan.chunks):
                self.log(
                    f"{request.method} {target}: the client closed the stream kept open after its last chunk"
                )
            elif not ended:
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


#: the most recorded requests an unmatched request's log lines list (the 404's body lists them all)
_LOGGED = 10


def unmatched_lines(answer: dict[str, Any]) -> list[str]:
    """The 404 body of an unmatched request (`Replayer.unmatched`) as log lines: each recorded
    request with what differs, the first ten of them."""
    lines = []
    for rec in answer["recorded"][:_LOGGED]:
        lines.append(f"  #{rec['index']} {rec['method']} {rec['path']}")
        lines.extend(f"      {d}" for d in rec["differs"])
    if len(answer["recorded"]) > _LOGGED:
        lines.append(f"  ... {len(answer['recorded']) - _LOGGED} more recorded requests: in the 404's body")
    return lines


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
        if x.websocket is not None:
            kind = "WebSocket"
            what = f"{len(x.websocket.received())} message(s) received, {len(x.websocket.sent())} sent"
        if x.grpc is not None:
            kind = "gRPC"
            what = f"{len(x.grpc.received())} message(s) received, {len(x.grpc.sent())} sent, {x.grpc.status.code}"
        span = f", {resp.times[-1]:.2f} s" if resp.times and resp.times[-1] else ""
        where = Path(cassette.path).name if cassette.path else "(memory)"
        lines.append(
            f"#{i} {x.request.method} {mask_url(target)} -> {resp.status} {kind}, {what}{span} ({where} #{at})"
        )
    return lines
