"""Loopback WebSocket servers for the WebSocket tests, written with the ``websockets`` sync server:
each speaks one protocol as its API reference documents it (a minimal, realistic subset)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from websockets.sync.server import ServerConnection, serve

__all__ = ["Server", "realtime", "running"]


def realtime(ws: ServerConnection) -> None:
    """OpenAI Realtime (GA): session.created on open; a response per ``response.create``, with a
    base64 audio delta, transcript and function-call argument deltas, and ``response.done`` usage."""
    n = 0

    def send(event: dict[str, Any]) -> None:
        nonlocal n
        n += 1
        ws.send(json.dumps({**event, "event_id": f"event_{n}"}))

    send(
        {"type": "session.created", "session": {"type": "realtime", "id": "sess_1", "model": "gpt-realtime"}}
    )
    for raw in ws:
        event = json.loads(raw)
        kind = event.get("type")
        if kind == "session.update":
            send(
                {
                    "type": "session.updated",
                    "session": {"type": "realtime", "id": "sess_1", **event["session"]},
                }
            )
        elif kind == "input_audio_buffer.append":
            continue
        elif kind == "response.create":
            send(
                {
                    "type": "response.created",
                    "response": {"id": "resp_1", "status": "in_progress", "output": []},
                }
            )
            send(
                {
                    "type": "response.output_audio.delta",
                    "response_id": "resp_1",
                    "item_id": "item_1",
                    "output_index": 0,
                    "content_index": 0,
                    "delta": "AAAA//8BAP7/",
                }
            )
            for word in ("Sun", "ny."):
                send(
                    {
                        "type": "response.output_audio_transcript.delta",
                        "response_id": "resp_1",
                        "item_id": "item_1",
                        "output_index": 0,
                        "content_index": 0,
                        "delta": word,
                    }
                )
            send(
                {
                    "type": "response.function_call_arguments.delta",
                    "response_id": "resp_1",
                    "item_id": "item_2",
                    "output_index": 1,
                    "call_id": "call_1",
                    "delta": '{"city":',
                }
            )
            send(
                {
                    "type": "response.function_call_arguments.done",
                    "response_id": "resp_1",
                    "item_id": "item_2",
                    "output_index": 1,
                    "call_id": "call_1",
                    "name": "get_weather",
                    "arguments": '{"city":"Paris"}',
                }
            )
            send(
                {
                    "type": "response.done",
                    "response": {
                        "id": "resp_1",
                        "status": "completed",
                        "output": [],
                        "usage": {"total_tokens": 253, "input_tokens": 132, "output_tokens": 121},
                    },
                }
            )


class Server:
    """A running loopback server: ``url(path)``; ``stop()`` shuts it down (the replay's proof)."""

    def __init__(self, handler: Callable[[ServerConnection], None], **options: Any) -> None:
        self._server = serve(handler, "127.0.0.1", 0, **options)
        self.port = self._server.socket.getsockname()[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def url(self, path: str = "/", scheme: str = "ws") -> str:
        return f"{scheme}://127.0.0.1:{self.port}{path}"

    def stop(self) -> None:
        self._server.shutdown()
        self._thread.join(5)


@contextmanager
def running(handler: Callable[[ServerConnection], None], **options: Any) -> Iterator[Server]:
    server = Server(handler, **options)
    try:
        yield server
    finally:
        server.stop()


def responses(ws: ServerConnection) -> None:
    """OpenAI Responses WebSocket mode: each ``response.create`` answered with the SSE stream's
    event objects, one per text message, ``sequence_number`` included; several per socket."""
    count = 0
    for raw in ws:
        event = json.loads(raw)
        if event.get("type") != "response.create":
            ws.send(
                json.dumps(
                    {
                        "type": "error",
                        "status": 400,
                        "error": {
                            "type": "invalid_request_error",
                            "code": "unknown_event",
                            "message": "Unknown event.",
                            "param": "type",
                        },
                    }
                )
            )
            continue
        count += 1
        rid, seq = f"resp_C{count}", 0

        def send(body: dict[str, Any]) -> None:
            nonlocal seq
            ws.send(json.dumps({**body, "sequence_number": seq}))
            seq += 1

        send(
            {
                "type": "response.created",
                "response": {
                    "id": rid,
                    "object": "response",
                    "status": "in_progress",
                    "model": event.get("model", "gpt-5"),
                    "output": [],
                },
            }
        )
        for piece in ("Hel", "lo."):
            send(
                {
                    "type": "response.output_text.delta",
                    "item_id": "msg_C1",
                    "output_index": 0,
                    "content_index": 0,
                    "delta": piece,
                    "logprobs": [],
                }
            )
        send(
            {
                "type": "response.completed",
                "response": {
                    "id": rid,
                    "object": "response",
                    "status": "completed",
                    "model": event.get("model", "gpt-5"),
                    "output": [
                        {
                            "id": "msg_C1",
                            "type": "message",
                            "role": "assistant",
                            "status": "completed",
                            "content": [{"type": "output_text", "text": "Hello.", "annotations": []}],
                        }
                    ],
                    "usage": {
                        "input_tokens": 9,
                        "input_tokens_details": {"cached_tokens": 0},
                        "output_tokens": 3,
                        "output_tokens_details": {"reasoning_tokens": 0},
                        "total_tokens": 12,
                    },
                },
            }
        )


def gemini_live(ws: ServerConnection) -> None:
    """Gemini Live: ``setup`` then turns (``clientContent``/``client_content``) and tool responses;
    the server answers in binary frames of JSON (``setupComplete``, ``serverContent`` with the
    model's parts, ``toolCall``, ``turnComplete`` with ``usageMetadata``)."""

    def send(body: dict[str, Any]) -> None:
        ws.send(json.dumps(body).encode())

    for raw in ws:
        event = json.loads(raw)
        if "setup" in event:
            send({"setupComplete": {}})
        elif "client_content" in event or "clientContent" in event:
            send({"serverContent": {"modelTurn": {"role": "model", "parts": [{"text": "Let me check"}]}}})
            send(
                {
                    "toolCall": {
                        "functionCalls": [{"id": "fc_1", "name": "get_weather", "args": {"city": "Paris"}}]
                    }
                }
            )
        elif "tool_response" in event or "toolResponse" in event:
            for piece in ("Sun", "ny."):
                send({"serverContent": {"modelTurn": {"role": "model", "parts": [{"text": piece}]}}})
            send(
                {
                    "serverContent": {"turnComplete": True},
                    "usageMetadata": {"promptTokenCount": 9, "responseTokenCount": 2, "totalTokenCount": 11},
                }
            )


def assemblyai_v3(ws: ServerConnection) -> None:
    """AssemblyAI's v3 streaming API: ``Begin`` on open; binary PCM from the client; on
    ``Terminate``, the last ``Turn``, ``Termination``, and the server closes."""
    ws.send(json.dumps({"type": "Begin", "id": "sess-1", "expires_at": 1767225600}))
    audio = 0
    for raw in ws:
        if isinstance(raw, bytes):
            audio += len(raw)
            continue
        if json.loads(raw).get("type") == "Terminate":
            ws.send(
                json.dumps(
                    {
                        "type": "Turn",
                        "turn_order": 0,
                        "turn_is_formatted": True,
                        "end_of_turn": True,
                        "transcript": f"Hello ({audio} bytes).",
                        "end_of_turn_confidence": 0.9,
                        "words": [],
                    }
                )
            )
            ws.send(
                json.dumps(
                    {"type": "Termination", "audio_duration_seconds": 1, "session_duration_seconds": 1}
                )
            )
            ws.close(1000)
            return


@contextmanager
def eager(greeting: str, *, delay: float = 0.0) -> Iterator[int]:
    """A raw asyncio server (wsproto speaking the protocol) that answers the handshake, after
    ``delay`` seconds, with the 101 and its first message (``greeting``) in ONE write, as a
    server may (the client then reads frames in the 101's read); then echoes each text message
    but ``bye``, which it answers by closing (1000, "done"), and answers a close. Yields its port."""
    import asyncio

    from wsproto import ConnectionType, WSConnection
    from wsproto.connection import ConnectionState
    from wsproto.events import AcceptConnection, CloseConnection, Request, TextMessage

    async def session(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        ws = WSConnection(ConnectionType.SERVER)
        try:
            while data := await reader.read(65536):
                ws.receive_data(data)
                out = b""
                for event in ws.events():
                    if isinstance(event, Request):
                        await asyncio.sleep(delay)
                        out += ws.send(AcceptConnection()) + ws.send(TextMessage(greeting))
                    elif isinstance(event, TextMessage) and event.data == "bye":
                        out += ws.send(CloseConnection(1000, "done"))  # the server closes first
                    elif isinstance(event, TextMessage) and event.message_finished:
                        out += ws.send(TextMessage(event.data))
                    elif isinstance(event, CloseConnection):
                        answer = (
                            ws.send(event.response()) if ws.state is ConnectionState.REMOTE_CLOSING else b""
                        )
                        writer.write(out + answer)
                        return  # the server closes the TCP connection first (RFC 6455 7.1.1)
                if out:
                    writer.write(out)  # one write: one TCP segment on loopback
                    await writer.drain()
        finally:
            writer.close()

    ready: list[Any] = []
    started = threading.Event()

    def serve_forever() -> None:
        async def main() -> None:
            server = await asyncio.start_server(session, "127.0.0.1", 0)
            stop = asyncio.Event()
            ready.extend([server.sockets[0].getsockname()[1], asyncio.get_running_loop(), stop])
            started.set()
            async with server:
                await stop.wait()

        asyncio.run(main())

    thread = threading.Thread(target=serve_forever, daemon=True)
    thread.start()
    started.wait(5)
    port, loop, stop = ready
    try:
        yield port
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(5)


def gpt_live(ws: ServerConnection, closing: threading.Event | None = None) -> None:
    """OpenAI GPT-Live, as openai's ``types.live`` describe it, on its three paths: the primary
    ``/live/sessions`` and a fork ``/live/sessions/{id}/fork`` (``session.start`` answered with
    ``session.started``; the first ``session.input_audio.append`` with its input transcript, a
    Responses delegation whose function call arrives in ``response.event``, then the model's
    speech as audio and transcript deltas and the usage), and a sideband
    ``/live/sessions/{id}/attach`` (``session.updated`` on open; ``session.instructions.append``
    answered with ``session.instructions.appended``). ``session.close``: ``session.closed``.
    Every event it sends, and every one it receives, validates as the SDK's own pydantic types.
    ``closing`` (`gpt_live_joined`): a sideband says ``session.updated`` only once the primary
    was asked to close (the sessions of one group depend on each other, as live)."""
    from openai._models import validate_type
    from openai.types.live import ConnectClientEvent, ConnectServerEvent, ForkClientEvent, ForkServerEvent
    from openai.types.live.client_event import ClientEvent
    from openai.types.live.server_event import ServerEvent

    path = (ws.request.path if ws.request else "").split("?")[0]
    sideband, fork = path.endswith("/attach"), path.endswith("/fork")
    server_type: Any = ConnectServerEvent if sideband else ForkServerEvent if fork else ServerEvent
    client_type: Any = ConnectClientEvent if sideband else ForkClientEvent if fork else ClientEvent
    session = {"id": "sess_F1" if fork else "sess_L1", "expires_at": 1767229200, "model": "gpt-live-1",
               "status": "active", "audio": {"format": {"type": "audio/pcm", "rate": 24000}}}  # fmt: skip
    n = 0

    def send(event: dict[str, Any], event_id: bool = True) -> None:
        nonlocal n
        n += 1
        body = {**event, "event_id": f"event_{n}"} if event_id else event
        validate_type(type_=server_type, value=body)
        ws.send(json.dumps(body))

    if sideband:
        if closing is not None:
            closing.wait(5)
        send({"type": "session.updated", "session": session})
    heard = False
    for raw in ws:
        event = json.loads(raw)
        validate_type(type_=client_type, value=event)
        kind = event["type"]
        if kind == "session.start":
            send({"type": "session.started", "session": session})
        elif kind == "session.instructions.append":
            send({"type": "session.instructions.appended", "start_ms": 900, "end_ms": 900})
        elif kind == "session.input_audio.append" and not heard:
            heard = True
            send(
                {"type": "session.input_transcript.delta", "delta": "Weather?", "start_ms": 0, "end_ms": 800}
            )
            send({"type": "session.delegation.created", "offset_ms": 850,
                  "delegation": {"id": "dlg_1", "target": "responses", "type": "delegation", "response_id": "resp_1"}})  # fmt: skip
            call = {"id": "fc_1", "type": "function_call", "call_id": "call_1", "name": "get_weather"}
            for nested in (
                {"type": "response.output_item.added", "output_index": 0, "item": {**call, "arguments": ""}},
                {"type": "response.function_call_arguments.delta", "item_id": "fc_1", "output_index": 0, "delta": '{"city":'},
                {"type": "response.function_call_arguments.delta", "item_id": "fc_1", "output_index": 0, "delta": '"Paris"}'},
                {"type": "response.output_item.done", "output_index": 0, "item": {**call, "arguments": '{"city":"Paris"}'}},
            ):  # fmt: skip
                send({"type": "response.event", "delegation_id": "dlg_1", "event": nested})
            for at, word in enumerate(("Sun", "ny.")):
                send({"type": "session.output_audio.delta", "delta": "AAAA//8BAP7/"}, event_id=False)
                send({"type": "session.output_transcript.delta", "delta": word,
                      "start_ms": 1000 + 100 * at, "end_ms": 1100 + 100 * at})  # fmt: skip
            send({"type": "session.usage.updated", "usage": {"seconds": 1.2}})
        elif kind == "session.close":
            if closing is not None and not sideband and not fork:
                closing.set()
            send({"type": "session.closed", "reason": "close_requested", "session": session,
                  "usage": {"seconds": 1.5}})  # fmt: skip


def gpt_live_joined() -> Callable[[ServerConnection], None]:
    """`gpt_live` whose sideband waits for the primary's ``session.close`` before it speaks."""
    closing = threading.Event()
    return lambda ws: gpt_live(ws, closing)


@contextmanager
def gpt_live_rest() -> Iterator[str]:
    """GPT-Live's REST calls on a loopback HTTP server (its base URL, ``.../v1``): ``POST
    /v1/live/sessions`` answers openai's ``LiveCreateResponse`` (session ``sess_L1``, an SDP
    answer); ``POST /v1/live/sessions/{id}/hangup`` answers 200 with no body."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from openai._models import validate_type
    from openai.types.live import LiveCreateResponse

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length") or 0))
            if self.path == "/v1/live/sessions":
                body = {"session": {"id": "sess_L1"}, "transport": {"type": "webrtc", "sdp": "v=0\r\n"}}
                validate_type(type_=LiveCreateResponse, value=body)
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
            else:
                data = b""
                self.send_response(200 if self.path.endswith("/hangup") else 404)
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
