"""WebSocket upgrades through the proxy: the client's session is relayed to the upstream's
(the ``websockets`` library, TLS verified as the proxy's HTTP requests are), each message
forwarded the moment it arrives, both ways, and recorded with its time by the WebSocket recorder
(`ssemock.plan.websocket.record.WsRecorder`) into the cassette the request names.

The proxy sees messages, not the upstream's wire: each is recorded as the one frame the relay
writes (client frames masked), so the session's messages, times, subprotocol and close are the
real ones, while the wire chunk map is one chunk per message, and fragments and pings are not
seen. permessage-deflate is not asked of the upstream (the recording holds the messages).

A handshake the record mode replays (``none``, ``once`` with the cassette there,
``new_episodes`` when a session matches) never reaches the relay: `replaying` answers it with
``ssemock serve``'s WebSocket replay (`ssemock.commands.serve.websocket`), on the raw connection,
under the proxy's variants; one no session matches and the mode does not record gets serve's 404
with what differs."""

from __future__ import annotations

import os
import ssl
from collections.abc import Sequence
from typing import Any, Protocol
from urllib.parse import urlsplit

import anyio
from starlette.responses import JSONResponse
from starlette.websockets import WebSocket, WebSocketDisconnect

from ...framing.websocket import Opcode, close_payload, encode_frame
from ...plan.websocket.record import WsRecorder
from ...redaction.rules import mask_url, redact_request
from ...store.cassette import Interaction, Request
from ..serve.websocket import Refusal, Replay, Resolve
from .book import Book
from .routing import Routed, raw_target


class Relaying(Protocol):
    """What the relay needs of the proxy (`ssemock.commands.proxy.Proxy`)."""

    def route(self, path: str, query: str, headers: Any, *, websocket: bool = False) -> Routed: ...
    def book(self, name: str) -> Book: ...
    def log(self, line: str) -> None: ...
    def ssl_context(self) -> ssl.SSLContext: ...


__all__ = ["Relaying", "relay_websocket", "replaying"]

_NOT_FORWARDED = frozenset(
    {
        "host",
        "connection",
        "upgrade",
        "sec-websocket-key",
        "sec-websocket-version",
        "sec-websocket-extensions",
        "sec-websocket-protocol",
        "content-length",
        "keep-alive",
        "te",
        "proxy-authorization",
        "proxy-connection",
    }
)


def _head(first: str, headers: list[tuple[str, str]]) -> bytes:
    return (first + "\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers) + "\r\n").encode(
        "latin-1", "replace"
    )


async def relay_websocket(proxy: Relaying, ws: WebSocket) -> None:
    """Relay and record one WebSocket session (the proxy's WebSocket endpoint)."""
    path, query = raw_target(ws.scope)
    try:
        routed = proxy.route(path, query, ws.headers, websocket=True)
    except ValueError as exc:  # (under another ASGI server: `replaying` refuses it under uvicorn)
        refusal = _off_route(proxy, path, exc)
        if "websocket.http.response" in ws.scope.get("extensions", {}):
            await ws.send_denial_response(JSONResponse({"error": refusal.error}, refusal.status))
        else:  # (an ASGI server without the denial extension answers 403)
            await ws.close(1008, f"ssemock proxy: {exc}"[:120])
        return
    url, name = routed.url, routed.cassette
    headers = [
        (k.decode("latin-1").lower(), v.decode("latin-1"))
        for k, v in ws.scope["headers"]
        if k.decode("latin-1").lower() not in _NOT_FORWARDED and not k.startswith(b"x-ssemock-")
    ]
    offered = [p.strip() for p in ws.headers.get("sec-websocket-protocol", "").split(",") if p.strip()]
    book = proxy.book(name)
    target = f"WebSocket {mask_url(url)}"
    if not book.records:  # (replays are answered before the relay, by `replaying`)
        proxy.log(f"{target} -> refused: record mode {book.record_mode!r} records nothing new into {name}")
        await ws.close(1008, f"ssemock proxy: record mode {book.record_mode} records nothing new")
        return
    try:
        from websockets.asyncio.client import connect
        from websockets.exceptions import ConnectionClosed
    except ImportError:  # pragma: no cover - depends on the installed extras
        await ws.close(1011, "ssemock proxy: WebSocket relay needs the websockets package")
        return
    sent_headers = [*headers, *([("sec-websocket-protocol", ", ".join(offered))] if offered else [])]
    recorder = WsRecorder(redact_request(Request("GET", url, sent_headers, None)))
    try:
        live = await connect(
            url,
            additional_headers=headers,
            subprotocols=offered or None,  # type: ignore[arg-type]
            compression=None,
            proxy=None,
            ssl=proxy.ssl_context() if url.startswith("wss://") else None,
            max_size=None,
            ping_interval=None,
            user_agent_header=None,
        )
    except Exception as exc:
        proxy.log(f"{target} -> the upstream refused: {type(exc).__name__}: {exc}")
        await ws.close(1011, "ssemock proxy: the upstream refused the WebSocket")
        return
    host = live.request.headers.get("host", "") if live.request is not None else ""
    recorder.sent(_head(f"GET {urlsplit(url).path} HTTP/1.1", [("host", host), *sent_headers]))
    answer = live.response
    assert answer is not None  # connect() returns once the upstream answered 101
    recorder.received(
        _head(f"HTTP/1.1 {answer.status_code} {answer.reason_phrase}", list(answer.headers.raw_items()))
    )
    key = id(recorder)
    book.begin(key, lambda: _snapshot(recorder))
    await ws.accept(subprotocol=live.subprotocol)
    proxy.log(f"{target} -> 101 recording into {name}")
    failed: BaseException | None = None

    async def client_to_upstream(group: Any) -> None:
        try:
            while True:
                message = await ws.receive()
                if message["type"] == "websocket.disconnect":
                    code = int(message.get("code", 1000))
                    if code not in (1006, 1015):  # those say no close frame came: none is recorded
                        recorder.sent(encode_frame(Opcode.CLOSE, close_payload(code), mask=os.urandom(4)))
                    await live.close(code if code not in (1005, 1006) else 1000)
                    break
                text, data = message.get("text"), message.get("bytes")
                if text is not None:
                    recorder.sent(encode_frame(Opcode.TEXT, text.encode("utf-8"), mask=os.urandom(4)))
                    await live.send(text)
                elif data is not None:
                    recorder.sent(encode_frame(Opcode.BINARY, data, mask=os.urandom(4)))
                    await live.send(data)
        except (WebSocketDisconnect, ConnectionClosed):
            pass
        group.cancel_scope.cancel()

    async def upstream_to_client(group: Any) -> None:
        try:
            async for message in live:
                if isinstance(message, str):
                    recorder.received(encode_frame(Opcode.TEXT, message.encode("utf-8")))
                    await ws.send_text(message)
                else:
                    recorder.received(encode_frame(Opcode.BINARY, bytes(message)))
                    await ws.send_bytes(bytes(message))
        except ConnectionClosed:
            pass
        code, reason = live.close_code, live.close_reason or ""
        if code is not None and live.protocol.close_rcvd is not None:  # the upstream closed
            recorder.received(encode_frame(Opcode.CLOSE, close_payload(code, reason)))
            try:
                await ws.close(code if code not in (1005, 1006) else 1000, reason)
            except RuntimeError:  # the client had closed already
                pass
        group.cancel_scope.cancel()

    try:
        async with anyio.create_task_group() as group:
            group.start_soon(client_to_upstream, group)
            group.start_soon(upstream_to_client, group)
    except Exception as exc:  # a relay that broke: kept, marked as such
        failed = exc
    finally:
        with anyio.CancelScope(shield=True):
            await live.close()
            recorder.finish(failed)
            with book.ending(key) as ours:
                interaction = recorder.interaction() if ours else None
                if interaction is not None:
                    refused = await anyio.to_thread.run_sync(book.save, interaction)
                    closed = interaction.websocket.close if interaction.websocket else None
                    proxy.log(
                        f"{target}: NOT saved into {name}: {refused}"
                        if refused
                        else f"{target}: saved into {name}, {len(interaction.websocket.messages) if interaction.websocket else 0} "
                        f"message(s), closed {closed.code if closed else None}"
                    )


def replaying(proxy: Relaying) -> Resolve:
    """The proxy's answer to a handshake (`ssemock.commands.serve.websocket.Resolve`): a 400
    when its routing refuses the target, a replay from its cassette when the record mode replays
    and a session matches, the relay (None) when the mode records, else a replay that answers
    404 with what differs and why nothing is recorded. The cassette is the request's (``x-ssemock-cassette``, ``/_ssemock/NAME/``), neither
    matched on."""

    def resolve(target: str, headers: Sequence[tuple[str, str]]) -> Replay | Refusal | None:
        path, _, query = target.partition("?")
        try:
            routed = proxy.route(path, query, dict(headers), websocket=True)
        except ValueError as exc:
            return _off_route(proxy, path, exc)
        book: Book = proxy.book(routed.cassette)
        url, name = routed.url, routed.cassette
        kept = [(k, v) for k, v in headers if not k.startswith("x-ssemock-")]
        sent = redact_request(Request("GET", url, kept, None))
        replayer = book.replayer()
        shown = f"{mask_url(url)} ({name})"
        if book.replays and replayer.candidates(sent, websocket=True):
            return Replay(replayer, sent, shown)
        if book.records:
            return None
        why = (
            f" in cassette {name!r} (record mode {book.record_mode!r}"
            + (" and the cassette existed" if book.record_mode == "once" else "")
            + " records nothing new)"
        )
        return Replay(replayer, sent, shown, why)

    return resolve


def _off_route(proxy: Relaying, path: str, exc: ValueError) -> Refusal:
    """A handshake the proxy's routing refuses, as it refuses an HTTP request: 400 and one log
    line (answered on the raw connection: uvicorn's own protocol logs an error after a denial)."""
    proxy.log(f"WebSocket {mask_url(path)} -> 400 {exc}")
    return Refusal(400, f"ssemock proxy: {exc}")


def _snapshot(recorder: WsRecorder) -> Interaction:
    found = recorder.interaction()
    if found is None:  # (not before the 101: the relay begins after it)
        raise RuntimeError("no WebSocket handshake recorded")
    return found
