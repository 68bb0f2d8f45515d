"""``ssemock serve`` over WebSocket: an upgrade is answered from a recorded session (an
interaction with ``.websocket``) on the raw bytes of the connection, so the wire chunkings, the
re-framings and the faults reach the client's own frame parser, as the in-process replays do.

Why not uvicorn's own WebSocket support: its implementations (``websockets``, ``wsproto``) take
messages from the ASGI app and write their own frames, one write a message; a read cut inside a
frame header, frames joined in one read, a fragmented message, a ping between fragments, a drop
in the middle of a frame cannot pass through them. uvicorn's ``ws=`` option takes an asyncio
protocol class, and its HTTP parser hands an upgrading connection to that class, head and
transport, before any frame is read: `protocol` makes that class. From then on it owns the
connection's bytes both ways; every other request stays with the HTTP app.
`ssemock.commands.loopback.running` gives uvicorn the class an app carries as
``app.state.ws_protocol`` (``serve.app`` and ``proxy.app`` set it).

The session is served by the replay conversation the in-process stacks use
(`ssemock.plan.websocket.variants.VariedConversation`): the handshake answered with the client's own
``Sec-WebSocket-Accept`` and the recorded subprotocol, the server's frames released once the
client has sent what preceded them in the recording, text messages matched as JSON; the 101 and
the opening come from `Conversation.answer`, as on the in-process stacks (the frames recorded in
the 101's read come in that read again, under the recorded reads). Each read
of the chunking is its own ``send()`` on the connection (asyncio sockets are ``TCP_NODELAY``), so it
leaves as its own TCP segment; a client that has not read yet may still get two in one read, as
on any network. A message that matches nothing closes the connection with 1008 and a reason
naming where it differs; the log gets the whole diff, as an unmatched HTTP request's 404 does.
What the client sends is read as RFC 6455 asks (`ssemock.framing.websocket.MessageReader`), a
message at most the replayer's ``max_body`` bytes once reassembled and inflated: a client that
breaks a rule gets the close code it calls for (1002, 1007, 1009) with the reason, and the log one
line; the server reads nothing more from it.
"""

from __future__ import annotations

import asyncio
import json
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ...framing.websocket import FrameError, Opcode, close_payload, encode_frame
from ...plan.conversation import HandshakeMismatch, Release, UnmatchedMessageError, handshake_head
from ...plan.websocket.variants import VariantRefused, VariedConversation
from ...redaction.rules import mask_text, mask_url, redact_request
from ...store.cassette import Request
from ...variants.transforms import WEBSOCKET
from ...variants.websocket import chunking as ws_chunking
from ...variants.websocket import faults as ws_faults
from .replayer import Exchange, Replayer, unmatched_lines

__all__ = ["Refusal", "Replay", "Resolve", "protocol", "serving"]

_HEAD_END = b"\r\n\r\n"
_MAX_HEAD = 64 << 10
_LINGER = 5.0  # seconds a client gets to close its side after the server's end before it is cut
_REASONS = {400: "Bad Request", 404: "Not Found", 426: "Upgrade Required"}
_HOP = frozenset({"connection", "keep-alive", "transfer-encoding", "content-length", "upgrade"})


@dataclass
class Replay:
    """How a handshake is answered: from ``replayer``'s WebSocket sessions, matched on ``sent``
    (the handshake as a cassette request, redacted); ``target``: how the log names it; ``why``:
    what an unmatched answer adds to its error (the proxy's record mode)."""

    replayer: Replayer
    sent: Request
    target: str
    why: str = ""


@dataclass(frozen=True)
class Refusal:
    """A handshake refused before any session is looked for (the proxy's routing): answered
    ``status`` with ``error`` as its JSON body, on the raw connection; whoever refused it logged
    why."""

    status: int
    error: str


Resolve = Callable[[str, Sequence[tuple[str, str]]], Replay | Refusal | None]
"""What a server does with a handshake (its request target and headers, names lower-case): a
`Replay`, a `Refusal`, or None to hand the connection to the fallback protocol (the proxy's
relay)."""


def parse_head(head: bytes) -> tuple[str, str, list[tuple[str, str]]]:
    """The method, the target and the headers (names lower-case) of a request head."""
    lines = head.decode("latin-1").split("\r\n")
    method, _, rest = lines[0].partition(" ")
    target = rest.rpartition(" ")[0] or rest
    headers = []
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if sep:
            headers.append((name.strip().lower(), value.strip()))
    return method, target, headers


def serving(replayer: Replayer) -> Resolve:
    """``ssemock serve``'s answer to every handshake: its cassettes' sessions (the log names the
    target with its URL's secrets masked, as the HTTP lines do)."""

    def resolve(target: str, headers: Sequence[tuple[str, str]]) -> Replay:
        host = next((v for k, v in headers if k == "host"), "127.0.0.1")
        sent = redact_request(Request("GET", f"ws://{host}{target}", list(headers), None))
        return Replay(replayer, sent, mask_url(target))

    return resolve


def protocol(resolve: Resolve, fallback: type[asyncio.Protocol] | None = None) -> type[asyncio.Protocol]:
    """The asyncio protocol class uvicorn hands upgrading connections to (its ``ws=`` option):
    each session replayed as ``resolve`` says; None from it hands the connection to
    ``fallback`` (made as uvicorn makes its own WebSocket protocols)."""

    class Bound(ReplaySocket):
        def __init__(self, **uvicorn: Any) -> None:
            super().__init__(resolve, fallback, **uvicorn)

    return Bound


class ReplaySocket(asyncio.Protocol):
    """One upgraded connection: the handshake, then the conversation on the raw bytes."""

    def __init__(
        self,
        resolve: Resolve,
        fallback: type[asyncio.Protocol] | None,
        *,
        config: Any = None,
        server_state: Any = None,
        app_state: Any = None,
    ) -> None:
        self._resolve, self._fallback = resolve, fallback
        self._uvicorn = {"config": config, "server_state": server_state, "app_state": app_state}
        self._connections: set[Any] = server_state.connections if server_state is not None else set()
        self.transport: asyncio.Transport | None = None
        self._loop = asyncio.get_running_loop()  # (made by uvicorn inside its loop)
        self._head = b""
        self._delegate: asyncio.Protocol | None = None
        self.conversation: VariedConversation | None = None
        self._replay: Replay | None = None
        self._exchange: Exchange | None = None
        self._queue: deque[tuple[float, bytes | None]] = deque()
        self._due = 0.0
        self._timer: asyncio.TimerHandle | None = None
        self._ended = False  # the server's side is over (EOF written): what comes in is dropped
        self._linger: asyncio.TimerHandle | None = None
        self.writes = 0
        """How many writes (reads of the chunking) were sent."""
        self._head_alone = True  # the 101 went in a write of its own

    # -- asyncio.Protocol ---------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self._connections.add(self)

    def data_received(self, data: bytes) -> None:
        if self._delegate is not None:
            self._delegate.data_received(data)
        elif self.conversation is None:
            self._head += data
            at = self._head.find(_HEAD_END)
            if at < 0:
                if len(self._head) > _MAX_HEAD:
                    self._refuse(400, {"error": "ssemock: the handshake's head is too large"})
                return
            head, rest = self._head[: at + 4], self._head[at + 4 :]
            self._head = b""
            self._open(head)
            if rest and self.conversation is not None and not self._ended:
                self._feed(rest)
        elif not self._ended:
            self._feed(data)

    def eof_received(self) -> bool | None:
        if self._delegate is not None:
            return self._delegate.eof_received()
        return False  # the transport closes: the client has gone

    def connection_lost(self, exc: Exception | None) -> None:
        self._connections.discard(self)
        for handle in (self._timer, self._linger):
            if handle is not None:
                handle.cancel()
        if self._delegate is not None:
            self._delegate.connection_lost(exc)
            return
        self._finish()

    def pause_writing(self) -> None:
        if self._delegate is not None:
            self._delegate.pause_writing()

    def resume_writing(self) -> None:
        if self._delegate is not None:
            self._delegate.resume_writing()

    def shutdown(self) -> None:
        """uvicorn stops: the session ends now (1001, going away)."""
        if self._delegate is not None:
            getattr(self._delegate, "shutdown", lambda: None)()
            return
        if self.transport is not None and not self.transport.is_closing():
            if self.conversation is not None and not self._ended:
                self.transport.write(
                    encode_frame(Opcode.CLOSE, close_payload(1001, "ssemock: server stopped"))
                )
            self.transport.close()

    # -- the handshake --------------------------------------------------------------------------

    def _open(self, head: bytes) -> None:
        method, target, headers = parse_head(head)
        replay = self._resolve(target, headers)
        if replay is None:
            self._hand_over(head)
            return
        if isinstance(replay, Refusal):
            self._refuse(replay.status, {"error": replay.error})
            return
        self._replay = replay
        replayer, sent = replay.replayer, replay.sent
        where = f"WebSocket {replay.target}"
        if method != "GET" or not any(k == "sec-websocket-key" for k, _ in headers):
            self._refuse(400, {"error": "ssemock: not a WebSocket handshake (a GET with Sec-WebSocket-Key)"})
            replayer.log(f"{where} -> 400 not a WebSocket handshake")
            return
        index = replayer.take_websocket(sent)
        if index is None:
            answer = replayer.unmatched(sent)
            answer["error"] += replay.why
            replayer.exchanges.append(Exchange("GET", _path(replay.target), 404, None))
            replayer.log(
                f"{where} -> 404 no recorded WebSocket session matches{replay.why} "
                f"(matching on {', '.join(map(str, answer['matching_on']))})"
            )
            for line in unmatched_lines(answer):
                replayer.log(line)
            self._refuse(404, answer)
            return
        interaction = replayer.interactions[index]
        cassette, at = replayer.sources[index]
        group = replayer.session_group(index)  # a session spanning connections (issue 44 item 2)
        if interaction.websocket is None:  # a handshake the recording's server refused: as recorded
            if group is not None:  # its answer is all it had: released now
                group.done(at, [0])
            self._recorded_refusal(index)
            return
        fault = ws_faults.aimed(replayer.faults, index, interaction.request)
        name = cassette.path.name if cassette.path else "an in-memory cassette"
        conversation = VariedConversation(
            interaction,
            at,
            f"cassette {name}",
            chunking=ws_chunking.for_http(replayer.chunking),
            reframing="+".join(t.name for t in replayer.transforms if WEBSOCKET in t.kinds) or "as_recorded",
            fault=fault,
            attempt=replayer.websocket_attempt(index),
            max_size=replayer.max_body,
            group=group,
        )
        if group is not None:  # what another connection's progress lets go, sent from the loop
            conversation.on_release = self._elsewhere
        try:  # the 101 and the opening as the in-process stacks serve them: one core
            releases = conversation.answer(head)
        except (HandshakeMismatch, VariantRefused) as exc:
            replayer.exchanges.append(Exchange("GET", _path(replay.target), 400, index))
            replayer.log(f"{where} -> 400 #{index}: {str(exc).splitlines()[0]}")
            self._refuse(400, {"error": mask_text(str(exc))})
            return
        self.conversation = conversation
        replayer.sessions.append(conversation)
        first = releases[0].data or b""
        status = int(first.split(b" ", 2)[1])
        # the frames the recording received with the 101 come in its read again (wire.head)
        self._head_alone = len(first) == first.find(_HEAD_END) + len(_HEAD_END) or status != 101
        self._exchange = Exchange(
            "GET", _path(replay.target), status, index, faults=[fault.name] if fault else []
        )
        replayer.exchanges.append(self._exchange)
        variant = [
            f"chunking={conversation.chunking}",
            *([f"reframing={conversation.reframing}"] if conversation.reframing != "as_recorded" else []),
            *([f"fault {fault.name}"] if fault is not None else []),
        ]
        replayer.log(
            f"{where} -> {status} #{index}, {len(conversation.ws.received())} server message(s), {', '.join(variant)}"
        )
        self._deliver(releases)

    def _hand_over(self, head: bytes) -> None:
        """Not ours to replay: the fallback protocol gets the connection (the proxy's recording relay)."""
        assert self.transport is not None
        if self._fallback is None:
            self._refuse(404, {"error": "ssemock: no WebSocket session here"})
            return
        self._delegate = self._fallback(**self._uvicorn)
        self._connections.discard(self)  # the delegate keeps its own place among them
        self._delegate.connection_made(self.transport)
        self._delegate.data_received(head)

    def _refuse(self, status: int, body: dict[str, Any]) -> None:
        payload = json.dumps(body, indent=1).encode("utf-8")
        head = handshake_head(
            status,
            _REASONS.get(status, "Error"),
            [
                ("content-type", "application/json"),
                ("content-length", str(len(payload))),
                ("connection", "close"),
            ],
        )
        self._ended = True
        self._write(head + payload)
        self._end()

    def _recorded_refusal(self, index: int) -> None:
        assert self._replay is not None
        response = self._replay.replayer.interactions[index].response
        headers = [(k, v) for k, v in response.headers if k not in _HOP]
        headers += [("content-length", str(len(response.body))), ("connection", "close")]
        self._replay.replayer.exchanges.append(
            Exchange("GET", _path(self._replay.target), response.status, index)
        )
        self._replay.replayer.log(
            f"WebSocket {self._replay.target} -> {response.status} #{index}, the handshake refused as recorded"
        )
        self._ended = True
        self._write(
            handshake_head(response.status, _REASONS.get(response.status, "Refused"), headers) + response.body
        )
        self._end()

    # -- the conversation -----------------------------------------------------------------------

    def _feed(self, data: bytes) -> None:
        assert self.conversation is not None and self._replay is not None
        try:
            releases = self.conversation.feed(data)
        except FrameError as exc:  # the client broke the protocol: one line, the close it calls for, at once
            self._replay.replayer.log(
                f"WebSocket {self._replay.target}: closed {exc.code}: {mask_text(str(exc))}"
            )
            self._queue.clear()
            self._write(encode_frame(Opcode.CLOSE, close_payload(exc.code, _reason(f"ssemock: {exc}"))))
            self._ended = True
            self._end()
            return
        except UnmatchedMessageError as exc:
            lines = str(exc).splitlines()
            for line in lines:
                self._replay.replayer.log(line)
            differs = next((x.strip() for x in lines if x.strip().startswith("differs at")), "")
            reason = _reason(
                f"ssemock: unmatched message{', ' + differs if differs else ''}; see the server log"
            )
            self._deliver(
                [
                    Release(0.0, encode_frame(Opcode.CLOSE, close_payload(1008, reason)), True),
                    Release(0.0, None),
                ]
            )
            return
        self._deliver(releases)

    def _elsewhere(self, releases: list[Release]) -> None:
        """What another connection of its group let go: delivered from the loop (the group calls
        it under its lock, from whichever connection moved)."""
        self._loop.call_soon_threadsafe(self._deliver, releases)

    def _deliver(self, releases: Sequence[Release]) -> None:
        """Each release at its due time (the replayer's timing), in order, one write each; a
        stall is waited for real under every timing (scaled under a scaling one), as HTTP
        ``serve`` waits it: the client's own timers end it."""
        assert self._replay is not None
        now = self._loop.time()
        if any(r.ends_pending for r in releases):
            self._queue.clear()
            self._due = 0.0
        timing = self._replay.replayer.timing
        for r in releases:
            self._due = max(self._due, now + r.due_in(timing))
            self._queue.append((self._due, r.data))
        if self._queue and self._timer is None:
            self._timer = self._loop.call_at(self._queue[0][0], self._pump)

    def _pump(self) -> None:
        self._timer = None
        now = self._loop.time()
        while self._queue and self._queue[0][0] <= now and not self._ended:
            data = self._queue.popleft()[1]
            if data is None:
                self._ended = True
                self._end()
            else:
                self._write(data)
        if self._queue and not self._ended:
            self._timer = self._loop.call_at(self._queue[0][0], self._pump)

    def _write(self, data: bytes) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(data)
            self.writes += 1

    def _end(self) -> None:
        """The server's side is over: FIN after what is written, then the client closes its side
        (or is cut after a while): closing at once could lose the last frames to a reset."""
        transport = self.transport
        if transport is None or transport.is_closing():
            return
        if transport.can_write_eof():
            transport.write_eof()
            self._linger = self._loop.call_later(_LINGER, transport.abort)
        else:
            transport.close()

    def _finish(self) -> None:
        """The connection is gone: what the session did, in the log."""
        conversation, replay, exchange = self.conversation, self._replay, self._exchange
        if conversation is None or replay is None or exchange is None:
            return
        conversation.gone()  # what it never got to holds the rest of its group back no more
        exchange.chunks = self.writes - int(self._head_alone)  # the 101 aside, unless frames came with it
        exchange.left = not self._ended
        unsent = conversation.unsent()
        pings = conversation.unanswered_pings()
        replay.replayer.log(
            f"WebSocket {replay.target}: "
            + ("the client left" if exchange.left else "ended")
            + f" after {exchange.chunks} read(s)"
            + (
                f"; {len(unsent)} recorded client message(s) never sent"
                if unsent and not conversation.mismatches
                else ""
            )
            + (
                f"; {len(pings)} ping(s) of {conversation.reframing} never answered with a pong, "
                f"the first: {pings[0][:120]!r}"
                if pings
                else ""
            )
        )


def _reason(text: str) -> str:
    """A close reason: at most 123 bytes of UTF-8."""
    data = mask_text(text).encode("utf-8")
    return data[:123].decode("utf-8", "ignore") if len(data) > 123 else data.decode("utf-8")


def _path(target: str) -> str:
    return target.partition("?")[0]
