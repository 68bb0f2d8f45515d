"""The proxy's endpoint: a request is answered from its cassette when the record mode replays and
an interaction matches (through `ssemock serve`'s Replayer, with its variants), else relayed to
the upstream and recorded as it streams: each upstream chunk goes to the client the moment it
arrives, and into a `Recorder` with its arrival time; the recording is saved when it ends."""

from __future__ import annotations

import html
import os
import ssl
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import anyio
import httpx
from starlette.requests import ClientDisconnect
from starlette.requests import Request as HTTPRequest
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.types import Receive, Scope, Send
from starlette.websockets import WebSocket

from ...core.modes import RECORD_MODES, RecordMode
from ...plan import matching
from ...plan.record import Recorder, request_from_httpx
from ...plan.serving import ChunkingSpec, FaultSpec, TimingSpec, TransformSpec
from ...redaction.rules import escape_control, mask_text, mask_url
from ...store.cassette import Cassette, CassetteError, Interaction, Request
from ..serve import DEFAULT_MATCH_ON, DEFAULT_MAX_BODY, Replayer
from ..serve.page import render
from ..serve.replayer import read_body
from .book import Book, cassette_name
from .routing import Routed, Upstream, check_upstream_url, forward_url, pick, raw_target

__all__ = ["CASSETTE_HEADER", "HOP_BY_HOP", "PATH_PREFIX", "Proxy", "Upstream"]

CASSETTE_HEADER = "x-ssemock-cassette"
"""The request header naming the cassette a request records into (never forwarded)."""
PATH_PREFIX = "/_ssemock/"
"""A base URL ``http://proxy/_ssemock/NAME/v1`` records into cassette NAME (the prefix is not forwarded)."""
HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "trailers",
        "transfer-encoding",
        "upgrade",
    }
)
"""Headers of one connection (RFC 9110 7.6.1), never forwarded either way."""
_NOT_FORWARDED = HOP_BY_HOP | {"host", "content-length"}  # httpx writes its own


def _http2() -> bool:
    try:
        import h2  # noqa: F401  (httpx speaks HTTP/2 only with it)
    except ImportError:
        return False
    return True


class Proxy:
    """The state behind the proxy's app: its upstreams, cassettes and options."""

    def __init__(
        self,
        upstreams: Sequence[Upstream],
        *,
        cassette_dir: str | os.PathLike[str],
        record_mode: RecordMode = "once",
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
    ) -> None:
        if record_mode not in RECORD_MODES:
            raise ValueError(f"unknown record mode {record_mode!r}: use one of {', '.join(RECORD_MODES)}")
        if not upstreams:
            raise ValueError("the proxy needs at least one upstream URL")
        for up in upstreams:
            check_upstream_url(up.url)
            cassette_name(up.cassette, where=f"the upstream {up.url}")
        # the longest prefix first: /openai/v2 before /openai
        self.upstreams = sorted(upstreams, key=lambda u: len(u.prefix), reverse=True)
        self.cassette_dir = Path(cassette_dir)
        self.record_mode: RecordMode = record_mode
        self.match_on = matching.resolve(match_on if match_on is not None else DEFAULT_MATCH_ON)
        self.max_body = max_body
        self._variants: dict[str, Any] = {
            "chunking": chunking,
            "transform": transform,
            "timing": timing,
            "faults": faults,
            "cors": cors,
        }
        # the variants are checked now, not at the first replay
        Replayer(Cassette(), match_on=self.match_on, max_body=max_body, **self._variants)
        self._log = log
        self.books: dict[str, Book] = {}
        """The cassettes used so far, by name."""
        self.http2 = _http2() if http2 is None else http2
        """Whether the upstream is asked for HTTP/2 (when the ``h2`` package is installed)."""
        if ca_bundle is not None and not Path(ca_bundle).is_file():
            raise ValueError(f"--ca-bundle {ca_bundle}: no such file (a PEM file of CA certificates)")
        self._verify: Any = (
            ssl.create_default_context(cafile=str(ca_bundle)) if ca_bundle is not None else True
        )
        self._client: httpx.AsyncClient | None = None
        self._recordings = 0

    # -- state ------------------------------------------------------------------------------

    def log(self, line: str) -> None:
        if self._log is not None:
            self._log(escape_control(mask_text(line)))

    def book(self, name: str) -> Book:
        """The cassette ``name`` (``<cassette_dir>/<name>.json``), loaded at its first use."""
        found = self.books.get(name)
        if found is None:
            found = self.books[name] = Book(
                self.cassette_dir / f"{name}.json",
                record_mode=self.record_mode,
                match_on=self.match_on,
                replayer=self._replayer,
            )
        return found

    def _replayer(self, cassette: Cassette) -> Replayer:
        return Replayer(
            cassette, match_on=self.match_on, max_body=self.max_body, log=self._log, **self._variants
        )

    def client(self) -> httpx.AsyncClient:
        """The upstream client (made in the server's event loop at the first request)."""
        if self._client is None:
            self._client = httpx.AsyncClient(
                http2=self.http2,
                verify=self._verify,
                timeout=httpx.Timeout(60.0, connect=10.0),
                trust_env=False,
            )
        return self._client

    async def aclose(self) -> None:
        """Close the upstream connections: the server stopped, after its last relay (an idle
        pooled connection left open held the upstream's own stop: a TLS one waited 30 s there
        for the closing handshake the proxy's gone event loop never sent)."""
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()

    def prefixes(self) -> str:
        """The path prefixes routed, for a message."""
        return ", ".join(u.prefix or "/" for u in self.upstreams)

    def ssl_context(self) -> ssl.SSLContext:
        """How TLS upstreams are verified (``ca_bundle``, else the system's CAs)."""
        return self._verify if isinstance(self._verify, ssl.SSLContext) else ssl.create_default_context()

    async def handle_websocket(self, ws: WebSocket) -> None:
        """A WebSocket upgrade: relayed and recorded (`ssemock.commands.proxy.websocket`)."""
        from .websocket import relay_websocket

        await relay_websocket(self, ws)

    def keep_in_flight(self) -> list[Path]:
        """The recordings under way (an interruption), kept as partials beside their cassettes;
        those whose end had arrived saved into them (and logged). Returns once the saves under
        way have ended and logged."""
        partials = []
        for book in list(self.books.values()):
            saved, partial = book.keep_in_flight()
            if saved:
                self.log(f"interrupted: {saved} recording(s) whose end had arrived saved into {book.path}")
            partials += [partial] if partial is not None else []
        return partials

    def page(self) -> Response:
        """The cassettes in the folder and their timelines (``GET /`` from a browser, or ``/_ssemock/``)."""
        cassettes, broken = [], []
        for path in sorted(self.cassette_dir.glob("*.json")):
            try:
                cassettes.append(Cassette.load(path))
            except CassetteError as exc:
                broken.append(str(exc))
        page = render(cassettes, title=f"ssemock proxy: {self.cassette_dir}")
        if broken:
            items = "".join(f"<li>{html.escape(mask_text(b))}</li>" for b in broken)
            page = page.replace("</body>", f'<ul class="unreadable">{items}</ul></body>')
        return HTMLResponse(page)

    # -- routing ----------------------------------------------------------------------------

    def route(self, path: str, query: str, headers: Any, *, websocket: bool = False) -> Routed:
        """Where a request goes (`ssemock.commands.proxy.routing`): ``path`` and ``query`` as
        the client sent them (raw, latin-1). A ValueError says why it goes nowhere (no prefix
        matches, a cassette name not allowed, `OffUpstream`)."""
        found = pick(self.upstreams, path)
        if found is None:
            raise ValueError(f"no upstream for this path (prefixes: {self.prefixes()})")
        upstream, rest = found
        name = upstream.cassette
        if rest.startswith(PATH_PREFIX):
            name, _, tail = rest[len(PATH_PREFIX) :].partition("/")
            name = cassette_name(unquote(name, "latin-1"), where=f"the path prefix {PATH_PREFIX}")
            rest = "/" + tail
        chosen = headers.get(CASSETTE_HEADER)
        if chosen:
            name = cassette_name(chosen, where=f"the {CASSETTE_HEADER} header")
        return Routed(upstream, forward_url(upstream.url, rest, query, websocket=websocket), name)

    # -- the endpoint -----------------------------------------------------------------------

    async def handle(self, request: HTTPRequest) -> Response:
        """Replay, record or refuse one request."""
        path = request.url.path
        if request.method == "GET" and (
            path.rstrip("/") == PATH_PREFIX.rstrip("/")
            or (path == "/" and "text/html" in request.headers.get("accept", ""))
        ):
            return self.page()
        raw_path, query = raw_target(request.scope)
        try:
            routed = self.route(raw_path, query, request.headers)
        except ValueError as exc:
            self.log(f"{request.method} {mask_url(raw_path)} -> 400 {exc}")
            return JSONResponse({"error": f"ssemock proxy: {exc}"}, 400)
        try:
            body = await read_body(request, self.max_body)
        except ClientDisconnect:
            self.log(
                f"{request.method} {mask_url(routed.url)}: the client left while sending its request body"
            )
            return Response(status_code=499)
        if body is None:
            self.log(f"{request.method} {mask_url(routed.url)} -> 413 body larger than {self.max_body} bytes")
            return JSONResponse(
                {
                    "error": f"ssemock proxy: the request body is larger than --max-body ({self.max_body} bytes)"
                },
                413,
            )
        url, name = routed.url, routed.cassette
        forwarded = [
            (k.decode("latin-1"), v.decode("latin-1"))
            for k, v in request.headers.raw
            if k.decode("latin-1").lower() not in _NOT_FORWARDED
            and not k.decode("latin-1").lower().startswith("x-ssemock-")
        ]
        up = self.client().build_request(request.method, url, headers=forwarded, content=body)
        sent = request_from_httpx(up)
        book = self.book(name)
        target = f"{request.method} {mask_url(url)}"
        if book.matches(sent):
            return await self._replay(book, request, url, body)
        if not book.records:
            return self._unmatched(book, sent, target, name)
        return await self._record(book, up, sent, target, name)

    async def _replay(self, book: Book, request: HTTPRequest, url: str, body: bytes) -> Response:
        """Served by the cassette's Replayer (variants, faults, resumption), as ``ssemock serve``:
        it sees the forwarded URL's path and query, as they were recorded (percent-encoding
        kept, so the URL it matches is the one recorded)."""
        scope = dict(request.scope)
        parts = urlsplit(url)
        scope["path"], scope["raw_path"] = parts.path, parts.path.encode("latin-1")
        scope["query_string"] = parts.query.encode("latin-1")
        scope["headers"] = [(k, v) for k, v in request.scope["headers"] if not k.startswith(b"x-ssemock-")]
        inner = HTTPRequest(scope, request.receive)
        inner._body = body  # read once already (Starlette's own cache of it)
        return await book.replayer().handle(inner)

    def _unmatched(self, book: Book, sent: Request, target: str, name: str) -> Response:
        """No interaction answers and the mode records nothing: a 404 with the diff, logged."""
        answer = book.replayer().unmatched(sent)
        why = (
            f"record mode {book.record_mode!r}"
            + (" and the cassette existed" if book.record_mode == "once" else "")
            + " records nothing new"
        )
        answer["error"] += f" in cassette {name!r} ({why})"
        closest = sorted(answer["recorded"], key=lambda r: len(r["differs"]))[:3]
        diff = "; ".join(
            f"#{r['index']} {r['method']} {r['path']}: {', '.join(r['differs'])}" for r in closest
        )
        self.log(
            f"{target} -> 404 {name}: no recorded interaction matches ({why})"
            + (f"; closest: {diff}" if diff else "")
        )
        return JSONResponse(answer, status_code=404)

    async def _record(self, book: Book, up: httpx.Request, sent: Request, target: str, name: str) -> Response:
        recorder = Recorder(up, sent, on_response=lambda _: None, drain=None)
        try:
            live = await self.client().send(up, stream=True)
        except httpx.HTTPError as exc:
            self.log(f"{target} -> 502 the upstream failed: {type(exc).__name__}: {exc}")
            return JSONResponse(
                {"error": f"ssemock proxy: the upstream failed: {type(exc).__name__}: {mask_text(str(exc))}"},
                502,
            )
        headers = [(k.decode("latin-1").lower(), v.decode("latin-1")) for k, v in live.headers.raw]
        recorder.begin(live.status_code, headers)
        self._recordings += 1
        key = self._recordings

        def snapshot() -> Interaction:  # what an interruption keeps: whole once its end arrived
            found = recorder.interaction(hooked=False)
            if not recorder.ended:
                found.response.complete = recorder.saw_terminator()
            return found

        book.begin(key, snapshot)
        self.log(
            f"{target} -> {live.status_code} recording into {name} (HTTP/{live.http_version.split('/')[-1]})"
        )
        return _Relay(self, book, key, recorder, live, target, name, headers)


class _Relay(Response):
    """The live upstream response streamed to the client chunk by chunk as it arrives, and recorded."""

    def __init__(
        self,
        proxy: Proxy,
        book: Book,
        key: int,
        recorder: Recorder,
        live: httpx.Response,
        target: str,
        name: str,
        headers: list[tuple[str, str]],
    ) -> None:
        self.proxy, self.book, self.key, self.recorder, self.live = proxy, book, key, recorder, live
        self.target, self.name = target, name
        self.status_code = live.status_code
        self.raw_headers = [
            (k.encode("latin-1"), v.encode("latin-1")) for k, v in headers if k not in HOP_BY_HOP
        ]
        self.background = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        chunks, failed, left, whole = 0, None, False, False
        try:
            await send(
                {"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers}
            )
            async with anyio.create_task_group() as group:

                async def watch() -> None:  # the client leaving cancels the upstream read at once
                    nonlocal left
                    while (await receive())["type"] != "http.disconnect":
                        pass
                    left = not whole  # (after the last byte, a disconnect is no leaving)
                    group.cancel_scope.cancel()

                group.start_soon(watch)
                try:
                    async for data in self.live.aiter_raw():
                        self.recorder.chunk(data)  # its arrival time, before the client's write
                        await send({"type": "http.response.body", "body": data, "more_body": True})
                        chunks += 1
                    whole = True
                    self.recorder.finish(None)  # whole now: an interruption from here saves it complete
                    await send({"type": "http.response.body", "body": b"", "more_body": False})
                except httpx.HTTPError as exc:
                    failed = exc
                group.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                await self.live.aclose()
                # a client that left after the protocol's terminator left nothing missing
                self.recorder.finish(failed or GeneratorExit())  # (nothing once it ended whole)
                if failed is not None:
                    self.recorder.complete = False
                with self.book.ending(self.key) as ours:
                    if ours:  # (not: an interruption kept it as a partial already)
                        await self._save(chunks, left, failed)

    async def _save(self, chunks: int, left: bool, failed: BaseException | None) -> None:
        interaction = self.recorder.interaction(hooked=False)
        refused = await anyio.to_thread.run_sync(self.book.save, interaction)
        how = (
            "complete"
            if self.recorder.complete
            else f"the upstream failed ({type(failed).__name__}): recorded as incomplete"
            if failed is not None
            else "the client left: recorded as incomplete"
            if left
            else "cut before its end: recorded as incomplete"
        )
        if refused:
            self.proxy.log(f"{self.target}: NOT saved into {self.name}: {refused}")
        else:
            self.proxy.log(f"{self.target}: saved into {self.name} after {chunks} chunk(s), {how}")
