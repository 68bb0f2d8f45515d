"""WebSocket replay: what the same client (websockets' asyncio client reading a Realtime-shaped
session) pays per received message, side by side in one run (issue 35, "How much").

    python bench/websocket_replay.py [MESSAGES]

Contestants, each serving the same MESSAGES server events after the client's ``response.create``:

* ``hand-mocked socket``: the real client on one end of a ``socket.socketpair()``, the other end a
  hand-written in-process server (handshake answered, the pre-encoded frames written at once):
  the least a socket-level mock can do while keeping the client's own code;
* ``ssemock, recorded session``: ``ssemock.replay`` of the session as ssemock recorded it from the
  loopback server below at the start of the run (its reads as they came: the target's "as
  recorded");
* ``ssemock, a read per message``: ``ssemock.replay`` of the session built in code, with no wire
  recorded: each message is its own read, the most reads "as recorded" can mean (every read is a
  call into the client's frame parser; info);
* ``loopback server``: a ``websockets`` server in another process on 127.0.0.1;
* ``AsyncMock-style recv()`` (reference only): a fake whose ``recv()`` returns the next text, what
  SDK suites patch in (google-genai); no frame is parsed at all.

Median of 5 interleaved rounds (in a rotated order), garbage collector off while timing: CPU time
of this process for the in-process contestants (a busy shared machine disturbs it least), wall time
for the loopback server (its server runs in another process). Target (issue 48 item 3): ssemock's
replay of the recorded session <= 1.25x the hand-mocked socket.

Then the ``bytewise`` chunking (one byte per read, every read a call into the client's parser):
CPU time per wire byte of sessions of 50, 200 and 800 messages (linear: about equal).

Then the sync stack beside the asyncio one: a 100-message session replayed bytewise (one byte per
read, ~17,000 reads) through ``websockets.sync.client`` and through the asyncio client, CPU time
of the whole process (both of the sync client's threads), median of 9 interleaved rounds. Before
issue 35's fix the sync one never finished: the in-memory socket's doorbell took one byte per
queued chunk and the writer blocked on the full socketpair under the lock the reader needed.
"""

from __future__ import annotations

import asyncio
import base64
import gc
import hashlib
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import websockets

import ssemock
from ssemock.framing.websocket import GUID, Opcode, encode_frame, parse_frames
from ssemock.store.cassette import Cassette
from ssemock.store.model import Interaction, Request, Response
from ssemock.store.websocket import Close, Message, WebSocket

URL = "ws://127.0.0.1:9/v1/realtime?model=gpt-realtime"


def events(n: int) -> list[str]:
    first = json.dumps({"type": "session.created", "event_id": "event_0", "session": {"id": "sess_1"}})
    deltas = [
        json.dumps(
            {
                "type": "response.output_text.delta",
                "event_id": f"event_{k}",
                "response_id": "resp_1",
                "item_id": "item_1",
                "output_index": 0,
                "content_index": 0,
                "delta": f"word{k} ",
            }
        )
        for k in range(1, n)
    ]
    done = json.dumps(
        {"type": "response.done", "event_id": "event_x", "response": {"id": "resp_1", "status": "completed"}}
    )
    return [first, *deltas, done]


CREATE = json.dumps({"type": "response.create"})


def cassette(texts: list[str]) -> Cassette:
    messages = [Message("recv", 0.0, "text", texts[0]), Message("send", 0.001, "text", CREATE)]
    messages += [Message("recv", 0.002, "text", t) for t in texts[1:]]
    ws = WebSocket(messages=messages, close=Close(1000, "", "client", True, 0.01))
    return Cassette([Interaction(Request("GET", URL), Response(101, [("upgrade", "websocket")]), ws)])


async def client(connect: Callable[[], object], n: int) -> tuple[float, float]:
    """The timed region: after the handshake, send response.create and read every message; its
    (wall, CPU of this process) seconds."""
    async with connect() as ws:  # type: ignore[attr-defined]
        await ws.recv()
        start, cpu = time.perf_counter(), time.process_time()
        await ws.send(CREATE)
        for _ in range(n):
            json.loads(await ws.recv())
        return time.perf_counter() - start, time.process_time() - cpu


async def hand_mocked(texts: list[str]) -> tuple[float, float]:
    a, b = socket.socketpair()
    loop = asyncio.get_running_loop()
    frames = b"".join(encode_frame(Opcode.TEXT, t.encode()) for t in texts[1:])

    async def server() -> None:
        b.setblocking(False)
        head = b""
        while b"\r\n\r\n" not in head:
            head += await loop.sock_recv(b, 4096)
        key = next(
            line.split(b":", 1)[1].strip()
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"sec-websocket-key")
        )
        accept = base64.b64encode(hashlib.sha1(key + GUID).digest())
        await loop.sock_sendall(
            b,
            b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: "
            + accept
            + b"\r\n\r\n",
        )
        await loop.sock_sendall(b, encode_frame(Opcode.TEXT, texts[0].encode()))
        got = b""
        while not parse_frames(got, masked=True) if got else True:
            got += await loop.sock_recv(b, 4096)
        await loop.sock_sendall(b, frames)
        while await loop.sock_recv(b, 4096):
            pass

    task = asyncio.create_task(server())
    try:
        # close_timeout: this server never answers the client's close, which comes after the timing
        # (each round waited websockets' default 10 s for it, ~50 s a run)
        return await client(
            lambda: websockets.connect(URL, sock=a, compression=None, close_timeout=0.05), len(texts) - 1
        )
    finally:
        task.cancel()
        a.close()
        b.close()


async def replayed(session: Cassette, n: int, chunking: str = "as_recorded") -> tuple[float, float]:
    """The timed region of a replay of ``session`` (built in code: `cassette`; or recorded:
    `recorded_session`) under ``chunking``, reading ``n`` messages."""
    url = session.interactions[0].request.url
    with ssemock.replay(session, chunking=chunking, allowed_hosts=[]):
        return await client(lambda: websockets.connect(url, compression=None), n)


def recorded_session(port: int, n: int) -> Cassette:
    """The session of ``n`` server messages recorded by ssemock from the loopback server on ``port``
    (its wire reads as they came), loaded from the file it saved."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "session.json"
        url = f"ws://127.0.0.1:{port}/v1/realtime"

        async def record() -> None:
            with ssemock.use_cassette(path, record_mode="all"):
                await client(lambda: websockets.connect(url, compression=None), n)

        asyncio.run(record())
        return Cassette.load(path)


def reads(session: Cassette) -> int:
    """The server's reads the recorded ``session`` holds (one per message without a wire)."""
    ws = session.interactions[0].websocket
    assert ws is not None
    return len(ws.wire.ends) if ws.wire is not None else sum(m.direction == "recv" for m in ws.messages)


SERVER = textwrap.dedent(
    """
    import json, sys
    from websockets.sync.server import serve
    texts = json.load(sys.stdin)
    def handler(ws):
        ws.send(texts[0])
        ws.recv()
        for t in texts[1:]:
            ws.send(t)
        try:
            ws.recv()
        except Exception:
            pass
    with serve(handler, "127.0.0.1", 0, compression=None) as server:
        print(server.socket.getsockname()[1], flush=True)
        server.serve_forever()
    """
)


async def loopback(port: int, texts: list[str]) -> tuple[float, float]:
    url = f"ws://127.0.0.1:{port}/v1/realtime"
    return await client(lambda: websockets.connect(url, compression=None), len(texts) - 1)


class _Mocked:
    def __init__(self, texts: list[str]) -> None:
        self.texts = iter(texts)

    async def __aenter__(self) -> _Mocked:
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None

    async def recv(self) -> str:
        return next(self.texts)

    async def send(self, data: str) -> None:
        return None


async def mocked(texts: list[str]) -> tuple[float, float]:
    return await client(lambda: _Mocked(texts), len(texts) - 1)


def _sync_bytewise(texts: list[str]) -> float:
    from websockets.sync.client import connect as sync_connect

    with ssemock.replay(cassette(texts), chunking="bytewise", allowed_hosts=[]):
        start = time.process_time()
        with sync_connect(URL, compression=None) as ws:
            ws.recv()
            ws.send(CREATE)
            for _ in range(len(texts) - 1):
                json.loads(ws.recv())
        return time.process_time() - start


async def _async_bytewise(texts: list[str]) -> float:
    with ssemock.replay(cassette(texts), chunking="bytewise", allowed_hosts=[]):
        start = time.process_time()
        async with websockets.connect(URL, compression=None) as ws:
            await ws.recv()
            await ws.send(CREATE)
            for _ in range(len(texts) - 1):
                json.loads(await ws.recv())
        return time.process_time() - start


def sync_versus_async(n: int = 100, rounds: int = 9) -> tuple[float, float]:
    """Median CPU seconds of an ``n``-message session replayed bytewise: (sync client, asyncio client)."""
    texts = events(n)
    sync, asynchronous = [], []
    for _ in range(rounds):
        gc.collect()
        asynchronous.append(asyncio.run(_async_bytewise(texts)))
        gc.collect()
        sync.append(_sync_bytewise(texts))
    return statistics.median(sync), statistics.median(asynchronous)


def measure(n: int = 2000, rounds: int = 5) -> tuple[dict[str, float], int]:
    """Microseconds per received message of every contestant, median of ``rounds`` interleaved
    rounds (garbage collector off while timing): CPU time of this process for the in-process
    contestants (the hand-mocked socket's server included: it runs on the same loop), wall time
    for the loopback server (its server is another process); and the reads of the recorded
    session."""
    texts = events(n)
    proc = subprocess.Popen(
        [sys.executable, "-c", SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(json.dumps(texts))
    proc.stdin.close()
    port = int(proc.stdout.readline())
    session = recorded_session(port, len(texts) - 1)
    contestants: dict[str, Callable[[], Awaitable[tuple[float, float]]]] = {
        "hand-mocked socket": lambda: hand_mocked(texts),
        "ssemock, recorded session": lambda: replayed(session, len(texts) - 1),
        "ssemock, a read per message": lambda: replayed(cassette(texts), len(texts) - 1),
        "loopback server": lambda: loopback(port, texts),
        "AsyncMock-style recv()": lambda: mocked(texts),
    }
    times: dict[str, list[float]] = {name: [] for name in contestants}
    names = list(contestants)
    try:
        for r in range(rounds):
            for name in names[r % len(names) :] + names[: r % len(names)]:
                gc.collect()
                gc.disable()
                try:
                    wall, cpu = asyncio.run(contestants[name]())
                finally:
                    gc.enable()
                times[name].append(wall if name == "loopback server" else cpu)
    finally:
        proc.kill()
        proc.wait()
    return {name: statistics.median(t) / (n - 1) * 1e6 for name, t in times.items()}, reads(session)


def bytewise(sizes: tuple[int, ...] = (50, 200, 800), rounds: int = 3) -> list[tuple[int, float]]:
    """The ``bytewise`` chunking (one byte per read): (wire bytes, CPU nanoseconds per byte) of a
    session of each size in messages, median of ``rounds`` interleaved rounds: the cost per byte
    is about equal at every size when it is linear."""
    sessions = {m: events(m) for m in sizes}
    wire = {
        m: sum(len(encode_frame(Opcode.TEXT, t.encode())) for t in texts[1:]) for m, texts in sessions.items()
    }
    times: dict[int, list[float]] = {m: [] for m in sizes}
    for _ in range(rounds):
        for m, texts in sessions.items():
            gc.collect()
            gc.disable()
            try:
                times[m].append(asyncio.run(replayed(cassette(texts), len(texts) - 1, "bytewise"))[1])
            finally:
                gc.enable()
    return [(wire[m], statistics.median(times[m]) / wire[m] * 1e9) for m in sizes]


TARGET = (
    1.25  # issue 48 item 3: ssemock's replay of a recorded session per message / the hand-mocked socket's
)


async def _recording(port: int, n: int, path: Path | None) -> float:
    """Wall seconds to read a session of ``n`` server messages from the loopback server, recorded
    into ``path`` (None: no recorder); the save at exit is not timed."""
    url = f"ws://127.0.0.1:{port}/v1/realtime"
    if path is None:
        return (await client(lambda: websockets.connect(url, compression=None), n))[0]
    player = ssemock.use_cassette(path, record_mode="all")
    player.start()
    try:
        return (await client(lambda: websockets.connect(url, compression=None), n))[0]
    finally:
        player.stop(save=False)


_PROSE = "the model streams its answer back to the client one delta at a time, each one new".split()


def _deltas(n: int, size: int, distinct: bool) -> list[str]:
    """``n`` text deltas of ``size`` bytes: all alike, or each a different stretch of prose (the
    recorder reads a message alike an earlier clean one only once)."""
    if not distinct:
        return [json.dumps({"type": "response.output_text.delta", "delta": "x" * (size - 50)})] * n
    prose = " ".join(_PROSE[k % len(_PROSE)] for k in range(size // 4))
    return [
        json.dumps({"type": "response.output_text.delta", "delta": f"{k}: {prose[k % 64 :]}"[: size - 50]})
        for k in range(n)
    ]


def record_throughput(
    n: int = 1000, size: int = 16_000, rounds: int = 9, distinct: bool = False
) -> tuple[float, float]:
    """MB/s reading ``n`` JSON text messages of ``size`` bytes (all alike, or ``distinct``) from a
    loopback ``websockets`` server (another process), with no recorder and recorded by ssemock:
    the median of ``rounds`` interleaved (a best of a few read one lucky round on a busy machine)."""
    texts = _deltas(n + 1, size, distinct)
    proc = subprocess.Popen(
        [sys.executable, "-c", SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(json.dumps(texts))
    proc.stdin.close()
    port = int(proc.stdout.readline())
    rates: dict[str, list[float]] = {"live": [], "recording": []}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for r in range(rounds):
                for name in ("live", "recording") if r % 2 == 0 else ("recording", "live"):
                    gc.collect()
                    path = Path(tmp) / f"ws{r}.json" if name == "recording" else None
                    wall = asyncio.run(_recording(port, n, path))
                    rates[name].append(n * len(texts[0]) / wall / 1e6)
    finally:
        proc.kill()
        proc.wait()
    return statistics.median(rates["live"]), statistics.median(rates["recording"])


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    per, got = measure(n)
    base = per["hand-mocked socket"]
    print(f"WebSocket replay, {n - 1} received messages per session, load {os.getloadavg()[0]:.2f}")
    for name, us in per.items():
        print(f"  {name:28s} {us:8.2f} us/message  {us / base:5.2f}x the hand-mocked socket")
    print(f"  (the recorded session holds {got:,} reads of the server's {n:,} messages)")
    met = per["ssemock, recorded session"] <= TARGET * base
    print(f"  target: ssemock, recorded session <= {TARGET:.2f}x: {'met' if met else 'NOT met'}")
    live, rec = record_throughput()
    print(
        f"recording 1,000 messages of 16 KB from a loopback server: no recorder {live:.0f} MB/s, "
        f"recording {rec:.0f} MB/s ({rec / live:.2f}x; target >= 0.5x)"
    )
    live, rec = record_throughput(distinct=True)
    print(
        f"  the same, each message a different text: no recorder {live:.0f} MB/s, "
        f"recording {rec:.0f} MB/s ({rec / live:.2f}x)"
    )
    print("bytewise (one byte per read), CPU time per wire byte:")
    for size, ns in bytewise():
        print(f"  {size:8,d} bytes  {ns:8.0f} ns/byte")
    sync, asynchronous = sync_versus_async()
    wire = sum(len(encode_frame(Opcode.TEXT, t.encode())) for t in events(100))
    print(f"bytewise, a 100-message session ({wire} bytes, one per read), CPU time of the process:")
    print(f"  websockets asyncio client   {asynchronous * 1e3:8.1f} ms")
    print(
        f"  websockets sync client      {sync * 1e3:8.1f} ms  {sync / asynchronous:5.2f}x the asyncio client"
    )


if __name__ == "__main__":
    main()
