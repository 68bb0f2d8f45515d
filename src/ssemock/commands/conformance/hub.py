"""The harness's side of the wire, on one loopback server: each stream a client opens
(``/s/TOKEN``) is answered by `ssemock serve`'s app for that one case and variant, and each
message a test service posts back (``/cb/TOKEN/N``, LaunchDarkly's numbered callbacks) is kept
with its stream. A stream request waits until the harness releases it (after its ``listen``
commands), as LaunchDarkly's stream server sends nothing until told to; a client that connects
again to a stream that is not a reconnection case gets ``204 No Content`` (an EventSource stops)."""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Hub", "Track"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

_HOLD = 10.0  # seconds a stream request waits to be released before it is answered 503


@dataclass
class Track:
    """One stream run: the serve app answering it, what the client sent and posted back."""

    app: ASGIApp
    path: str  # the case's path in the app's cassette
    reconnects: bool  # a reconnection case: later connections resume; else they get 204
    released: threading.Event = field(default_factory=threading.Event)
    done: threading.Event = field(default_factory=threading.Event)
    messages: dict[int, dict[str, Any]] = field(default_factory=dict)
    last_event_ids: list[str | None] = field(default_factory=list)  # one per connection
    statuses: list[int] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def posted(self) -> list[dict[str, Any]]:
        """The callback messages so far, in their counter's order."""
        with self._lock:
            return [self.messages[n] for n in sorted(self.messages)]

    def _keep(self, n: int, message: dict[str, Any]) -> None:
        with self._lock:
            self.messages[n] = message
            ended = [k for k, m in self.messages.items() if m.get("kind") == "error"]
            # the first report of an error (the end of the first connection) with every message before it
            if not self.reconnects and ended and all(k in self.messages for k in range(1, min(ended))):
                self.done.set()


class Hub:
    """The ASGI app of the harness's loopback server (run it with `running`)."""

    def __init__(self) -> None:
        self._tracks: dict[str, Track] = {}
        self._ids = itertools.count(1)

    def open(self, track: Track) -> str:
        """Register a stream run; its token (``/s/TOKEN`` and ``/cb/TOKEN``)."""
        token = f"t{next(self._ids)}"
        self._tracks[token] = track
        return token

    def drop(self, token: str) -> None:
        """Forget a run: its late requests get 404."""
        self._tracks.pop(token, None)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        parts = scope["path"].strip("/").split("/")
        track = self._tracks.get(parts[1]) if len(parts) >= 2 else None
        if track is None:
            await _answer(send, 404)
        elif parts[0] == "s" and len(parts) == 2:
            await self._stream(track, scope, receive, send)
        elif parts[0] == "cb" and len(parts) == 3 and parts[2].isdigit() and scope["method"] == "POST":
            body = await _read(receive)
            try:
                message = json.loads(body)
            except ValueError:
                await _answer(send, 400)
                return
            track._keep(int(parts[2]), message if isinstance(message, dict) else {"kind": "?"})
            await _answer(send, 200)
        else:
            await _answer(send, 404)

    async def _stream(self, track: Track, scope: Scope, receive: Receive, send: Send) -> None:
        if not await asyncio.to_thread(track.released.wait, _HOLD):
            await _answer(send, 503, cors=True)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        track.last_event_ids.append(headers.get("last-event-id"))
        if len(track.last_event_ids) > 1 and not track.reconnects:
            track.statuses.append(204)
            await _answer(send, 204, cors=True)
            track.done.set()
            return
        inner = dict(scope, path=track.path, raw_path=track.path.encode(), query_string=b"")

        async def watched(message: Message) -> None:
            if message["type"] == "http.response.start":
                track.statuses.append(int(message["status"]))
            await send(message)
            if message["type"] == "http.response.body" and not message.get("more_body"):
                if track.reconnects and track.statuses and track.statuses[-1] == 204:
                    track.done.set()

        await track.app(inner, receive, watched)


async def _read(receive: Receive) -> bytes:
    body = b""
    while True:
        message = await receive()
        body += bytes(message.get("body", b""))
        if not message.get("more_body"):
            return body


async def _answer(send: Send, status: int, *, cors: bool = False) -> None:
    headers = [(b"content-length", b"0")]
    if cors:
        headers += [(b"access-control-allow-origin", b"*"), (b"access-control-allow-headers", b"*")]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": b""})
