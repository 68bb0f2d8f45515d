"""A LaunchDarkly-protocol test service for a Python SSE client: give `serving` a function that
opens the stream it is handed and yields what the client delivers (`Event`, `Comment`), and it
answers the harness (``GET /`` capabilities, ``POST /`` a stream, ``DELETE`` its end), running
each stream in a thread that posts the numbered callbacks; when the client's iteration ends or
raises, it posts one ``error`` message saying so. `reference` is ssemock's own decoder as such a
client (the scoreboard's all-green baseline)."""

from __future__ import annotations

import functools
import itertools
import json
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx

from ...framing.sse import Decoder

__all__ = ["Comment", "Event", "Opened", "reference", "serving"]


@dataclass(frozen=True)
class Event:
    """An event the client delivered (``id`` None: the client does not report IDs)."""

    type: str
    data: str
    id: str | None = None


@dataclass(frozen=True)
class Comment:
    """A comment the client reported."""

    text: str


@dataclass
class Opened:
    """A stream the harness asked for: its URL, headers, initial ``Last-Event-ID``, the initial
    reconnection delay; ``closers`` are called when the harness closes it, ``stopped`` is set."""

    url: str
    headers: dict[str, str]
    last_event_id: str | None
    initial_delay_ms: int
    closers: list[Callable[[], None]] = field(default_factory=list)
    stopped: threading.Event = field(default_factory=threading.Event)


Client = Callable[[Opened], Iterable[Event | Comment]]
"""A client under test: opens ``Opened.url`` and yields what it delivers."""


@functools.cache
def loopback() -> httpx.Client:
    """One HTTP client for every stream and callback (thread-safe; a client each would cost
    more than the stream: building one loads the CA bundle). Loopback and plain HTTP only."""
    return httpx.Client(timeout=30.0, verify=False, trust_env=False)


def reference(opened: Opened) -> Iterator[Event]:
    """ssemock's reference decoder (`ssemock.sse.Decoder`) reading the stream through httpx, and
    reconnecting as an EventSource does: after the stream ends or drops, once the reconnection
    time has passed, with ``Last-Event-ID``; a status other than 200 ends it (204 among them)."""
    decoder = Decoder(last_event_id=opened.last_event_id or "")
    while not opened.stopped.is_set():
        headers = dict(opened.headers)
        if decoder.last_event_id:
            headers["last-event-id"] = decoder.last_event_id
        try:
            with loopback().stream("GET", opened.url, headers=headers) as answer:
                if answer.status_code != 200:
                    return
                for chunk in answer.iter_raw():
                    for ev in decoder.feed(chunk):
                        yield Event(ev.event, ev.data, ev.id)
        except httpx.TransportError:
            pass
        decoder.close()
        time.sleep((opened.initial_delay_ms if decoder.retry is None else decoder.retry) / 1000)


def _message(item: Event | Comment) -> dict[str, Any]:
    if isinstance(item, Comment):
        return {"kind": "comment", "comment": item.text}
    event: dict[str, Any] = {"type": item.type, "data": item.data}
    if item.id is not None:
        event["id"] = item.id
    return {"kind": "event", "event": event}


def _run(client: Client, opened: Opened, callback: str) -> None:
    """Run the client; post each delivery, then one error message when it ends."""
    counter = itertools.count(1)

    def post(message: dict[str, Any]) -> None:
        if not opened.stopped.is_set():
            loopback().post(f"{callback}/{next(counter)}", json=message)

    try:
        for item in client(opened):
            if opened.stopped.is_set():
                break
            post(_message(item))
        post({"kind": "error", "comment": "end of stream"})
    except Exception as exc:  # the client's own failure is what the harness must hear
        try:
            post({"kind": "error", "comment": f"{type(exc).__name__}: {exc}"})
        except httpx.HTTPError:
            pass


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the harness reports."""

    def _answer(self, status: int, body: dict[str, Any] | None = None, location: str = "") -> None:
        raw = json.dumps(body).encode() if body is not None else b""
        self.send_response(status)
        self.send_header("content-length", str(len(raw)))
        if body is not None:
            self.send_header("content-type", "application/json")
        if location:
            self.send_header("location", location)
        self.end_headers()
        self.wfile.write(raw)

    def _body(self) -> dict[str, Any]:
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        found = json.loads(raw) if raw else {}
        return found if isinstance(found, dict) else {}

    def do_GET(self) -> None:
        if self.path != "/":
            return self._answer(404)
        status = {"capabilities": list(self.server.capabilities), **self.server.about}
        self._answer(200, status)

    def do_POST(self) -> None:
        try:
            body = self._body()
        except ValueError:
            return self._answer(400)
        if self.path == "/":
            url, callback = body.get("streamUrl"), body.get("callbackUrl")
            if not isinstance(url, str) or not isinstance(callback, str):
                return self._answer(400)
            headers = {str(k): str(v) for k, v in (body.get("headers") or {}).items()}
            last = body.get("lastEventId")
            if isinstance(last, str) and last:
                headers["last-event-id"] = last
            opened = Opened(
                url, headers, last if isinstance(last, str) else None, int(body.get("initialDelayMs") or 0)
            )
            ident = self.server.add(opened)
            threading.Thread(target=_run, args=(self.server.client, opened, callback), daemon=True).start()
            return self._answer(201, location=f"/streams/{ident}")
        if self.server.streams.get(self.path) is None:
            return self._answer(404)
        self._answer(200 if body.get("command") == "listen" else 400)

    def do_DELETE(self) -> None:
        opened = self.server.streams.pop(self.path, None)
        if opened is None:
            return self._answer(404)
        opened.stopped.set()
        for close in opened.closers:
            try:
                close()
            except Exception:  # a client that fails to close still counts as closed
                pass
        self._answer(204)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, port: int, client: Client, capabilities: Iterable[str], about: dict[str, str]) -> None:
        super().__init__(("127.0.0.1", port), _Handler)
        self.client, self.capabilities, self.about = client, tuple(capabilities), about
        self.streams: dict[str, Opened] = {}
        self._ids = itertools.count(1)

    def add(self, opened: Opened) -> int:
        ident = next(self._ids)
        self.streams[f"/streams/{ident}"] = opened
        return ident


@contextmanager
def serving(
    client: Client, *, name: str, version: str, capabilities: Iterable[str] = (), port: int = 0
) -> Iterator[str]:
    """Serve ``client``'s test service on loopback for the block (in a thread); yields its URL."""
    server = _Server(port, client, capabilities, {"name": name, "version": version})
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
