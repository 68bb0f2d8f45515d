"""A catalogue of small hand-written WebSocket frame readers with the bugs real clients have, and a
correct twin: each buggy reader fails under some WebSocket variant, the twin passes every one."""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest

from ssemock.framing.websocket import Opcode
from ssemock.variants.websocket import chunking as ws_chunking
from ssemock.variants.websocket import faults as ws_faults
from ssemock.variants.websocket import frames as ws_frames
from ssemock.variants.websocket.faults import Session
from ssemock.variants.websocket.frames import ServerMessage
from ssemock.variants.websocket.serve import Served, serve

SESSION = Session(
    (
        ServerMessage(Opcode.TEXT, b'{"type":"session.created"}'),
        ServerMessage(Opcode.TEXT, '{"delta":"Grüße — 東京 🌏"}'.encode(), 1),
        ServerMessage(Opcode.BINARY, bytes(range(256)) * 2, 1),
        ServerMessage(Opcode.TEXT, b'{"type":"response.done"}', 2),
    ),
    protocol="openai.realtime",
    close=(1000, ""),
)


@dataclass
class Outcome:
    messages: list[str | bytes] = field(default_factory=list)
    code: int | None = None  # the close code the reader reports
    clean: bool = False  # it saw a close frame
    pongs: list[bytes] = field(default_factory=list)


class Correct:
    """Buffers across reads; joins fragments (control frames may come between them); decodes a
    text message as UTF-8 once whole; inflates RSV1 messages; answers pings; reports the close
    code (1005 for an empty close frame, 1006 for none)."""

    def __init__(self) -> None:
        self.buffer = b""
        self.out = Outcome()
        self.parts: list[bytes] = []
        self.kind = 0
        self.compressed = False
        self.inflate = zlib.decompressobj(-15)

    def feed(self, data: bytes) -> None:
        self.buffer += data
        while (frame := self.frame()) is not None:
            self.handle(*frame)

    def frame(self) -> tuple[int, bool, bool, bytes] | None:
        b = self.buffer
        if len(b) < 2:
            return None
        length, at = b[1] & 0x7F, 2
        if length == 126:
            if len(b) < 4:
                return None
            length, at = struct.unpack("!H", b[2:4])[0], 4
        elif length == 127:
            if len(b) < 10:
                return None
            length, at = struct.unpack("!Q", b[2:10])[0], 10
        if len(b) < at + length:
            return None
        self.buffer = b[at + length :]
        return b[0] & 0x0F, bool(b[0] & 0x80), bool(b[0] & 0x40), b[at : at + length]

    def handle(self, opcode: int, fin: bool, rsv1: bool, payload: bytes) -> None:
        if opcode == Opcode.PING:
            self.out.pongs.append(payload)
        elif opcode == Opcode.CLOSE:
            self.out.clean = True
            self.out.code = struct.unpack("!H", payload[:2])[0] if payload else 1005
        elif opcode in (Opcode.TEXT, Opcode.BINARY, Opcode.CONTINUATION):
            if opcode != Opcode.CONTINUATION:
                self.kind, self.compressed, self.parts = opcode, rsv1, []
            self.parts.append(payload)
            if fin:
                self.message(b"".join(self.parts))

    def message(self, data: bytes) -> None:
        if self.compressed:
            data = self.inflate.decompress(data + b"\x00\x00\xff\xff")
        self.out.messages.append(data.decode() if self.kind == Opcode.TEXT else data)

    def eof(self) -> Outcome:
        if not self.out.clean:
            self.out.code = 1006
        return self.out


class OneFramePerRead(Correct):
    """Assumes every read is exactly one whole frame."""

    def feed(self, data: bytes) -> None:
        length, at = data[1] & 0x7F, 2
        if length == 126:
            length, at = struct.unpack("!H", data[2:4])[0], 4
        self.handle(data[0] & 0x0F, bool(data[0] & 0x80), bool(data[0] & 0x40), data[at : at + length])


class Utf8PerFragment(Correct):
    """Decodes each text fragment as UTF-8 on its own."""

    def handle(self, opcode: int, fin: bool, rsv1: bool, payload: bytes) -> None:
        if opcode == Opcode.TEXT or (opcode == Opcode.CONTINUATION and self.kind == Opcode.TEXT):
            payload = payload.decode().encode()  # "validates" each fragment
        super().handle(opcode, fin, rsv1, payload)


class IgnoresContinuation(Correct):
    """Takes every text or binary frame as a whole message and skips continuation frames."""

    def handle(self, opcode: int, fin: bool, rsv1: bool, payload: bytes) -> None:
        if opcode == Opcode.CONTINUATION:
            return
        super().handle(opcode, True, rsv1, payload)


class AnyCloseIsClean(Correct):
    """Treats any end of the connection as a normal closure."""

    def eof(self) -> Outcome:
        self.out.code, self.out.clean = 1000, True
        return self.out


class IgnoresPings(Correct):
    """Never answers a ping."""

    def handle(self, opcode: int, fin: bool, rsv1: bool, payload: bytes) -> None:
        if opcode != Opcode.PING:
            super().handle(opcode, fin, rsv1, payload)


def run(reader: Callable[[], Correct], served: Served) -> Outcome:
    r = reader()
    for read in served.reads:
        r.feed(read.data)
    return r.eof()


def expected(fault: str | None, served: Served) -> Outcome:
    """What a conforming client reports: the messages whose frames all arrived, the close code."""
    session = SESSION if fault is None else ws_faults.get(fault).apply(SESSION)
    arrived = sum(len(r.data) for r in served.reads)
    ends = served.wire.message_ends
    messages: list[str | bytes] = [
        m.data.decode() if m.opcode == Opcode.TEXT else m.data
        for m, end in zip(session.messages, ends)
        if end <= arrived
    ]
    if session.drop:
        return Outcome(messages, 1006, False, served.pings)
    code = session.close[0] if session.close else None
    return Outcome(messages, 1005 if code is None else code, True, served.pings)


# as recorded, every frame came in a read of its own (a server writing each event as it is ready)
RECORDED = [f.end for f in ws_frames.encode(SESSION.messages, close=SESSION.close).frames]
FAULTS = [f for f in ws_faults.VARIANTS if not f.startswith(("handshake", "sequence"))]
VARIANTS = (
    [(c, "as_recorded", None) for c in ws_chunking.names()]
    + [
        (c, r, None)
        for c in ("bytewise", "per_event", "coalesced")
        for r in ("fragments:3", "pings", "deflate")
    ]
    + [("mid_header", "fragments:2+pings", None)]
    + [(c, "as_recorded", f) for c in ("per_event", "mid_utf8") for f in FAULTS]
)
BUGGY = [OneFramePerRead, Utf8PerFragment, IgnoresContinuation, AnyCloseIsClean, IgnoresPings]


def _outcome(
    reader: Callable[[], Correct], variant: tuple[str, str, str | None]
) -> tuple[Outcome | str, Outcome]:
    chunking, reframing, fault = variant
    served = serve(
        SESSION, chunking=chunking, reframing=reframing, fault=fault, agreed_deflate=False, recorded=RECORDED
    )
    want = expected(fault, served)
    try:
        return run(reader, served), want
    except Exception as exc:  # a buggy reader may crash: that is its failure
        return f"{type(exc).__name__}: {exc}", want


def test_the_correct_twin_passes_every_variant() -> None:
    for variant in VARIANTS:
        got, want = _outcome(Correct, variant)
        assert got == want, variant


@pytest.mark.parametrize("reader", BUGGY, ids=lambda r: r.__name__)
def test_each_buggy_reader_fails_under_some_variant_and_not_as_recorded(reader: type[Correct]) -> None:
    failing = [v for v in VARIANTS if (lambda o: o[0] != o[1])(_outcome(reader, v))]
    assert failing, f"{reader.__name__} passed every variant"
    assert ("as_recorded", "as_recorded", None) not in failing  # the recording alone hides the bug
    # the variants that catch it, by name (what a test id would say)
    names = {"+".join(p for p in v if p and p != "as_recorded") for v in failing}
    catches = {
        OneFramePerRead: "bytewise",
        Utf8PerFragment: "bytewise+fragments:3",
        IgnoresContinuation: "per_event+fragments:3",
        AnyCloseIsClean: "per_event+drop:after_message=1",
        IgnoresPings: "per_event+pings",
    }
    assert catches[reader] in names, sorted(names)
