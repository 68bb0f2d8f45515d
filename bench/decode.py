"""Benchmark: ssemock.sse against every Python SSE parser on the package index, shape by shape.

Plain script: ``python bench/decode.py [--quick] [--cpu]``. Peers (``pip install launchdarkly-eventsource
httpx-sse httpx2 openai sseclient-py assel``; a missing one is left out and said so), each fed
the way its own library feeds it:

* ld-eventsource: ``_SSEReader(_BufferedLineReader.lines_from(chunks)).events_and_comments()``,
  as its ``SSEClient`` does (comments dropped);
* httpx-sse: httpx's incremental UTF-8 ``TextDecoder`` (``Response.iter_text``), then
  ``SSELineDecoder.decode`` and ``SSEDecoder.decode(line)`` per line, as ``EventSource.iter_sse``;
* httpx2: httpx2's ``TextDecoder``, then its built-in ``_SSEParser`` (as ``httpx2.EventSource``;
  ``max_event_size=None``, or it refuses the 10 MB event);
* openai: ``SSEDecoder().iter_bytes(chunks)``, as ``Stream._iter_events``;
* sseclient-py: ``SSEClient(chunks).events()``;
* assel: ``assel.parse(chunks)``;
* ssemock: the public ``ssemock.sse.decode`` (it parses the joined chunks in one go: the events
  never depend on the chunking); ``ssemock.iter``: the incremental API, ``iter_decode``, each
  event as soon as its chunk is in (the peers are all incremental); and ``ssemock.feed``:
  ``Decoder.feed`` called by hand once per chunk, shown beside them.

Every contestant gets the same list of chunks, with the garbage collector off while it runs;
rounds are interleaved (each round runs every contestant once, in a rotated order) and the
median round counts. Printed per shape: time per event (per byte for the 10 MB event) and the
same-run ratio "fastest peer / ssemock" (>= 2 is the target of issue 16), for decode(),
iter_decode() and Decoder.feed per chunk. Before timing, every
contestant's events are checked against ssemock's on each shape.
"""

from __future__ import annotations

import importlib
import json
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path[:0] = [str(Path(__file__).resolve().parents[1] / "src"), str(Path(__file__).resolve().parent)]

from timer import median_interleaved  # noqa: E402

from ssemock.sse import Decoder, decode, iter_decode  # noqa: E402

WORDS = ["Hello", " wörld", ",", " naïve", " café", " 東京", " へようこそ", " 🙂", " Ωmega", " —", " ok", "."]
N_EVENTS = 20_000
BIG = 10_000_000  # the "10 MB" shapes
BYTEWISE = 200_000  # bytes of the 1-byte-chunk shape
BIG_EVENT_CHUNK = 65_536  # the 10 MB event arrives in reads of this size (httpx's default)


# -- the shapes ----------------------------------------------------------------------------------


def _text(i: int) -> str:
    return WORDS[i % len(WORDS)] + WORDS[(i * 7) % len(WORDS)]


def _dumps(obj: Any) -> bytes:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode()


def openai_event(i: int, eol: bytes = b"\n") -> bytes:
    """One OpenAI chat-completion chunk as an SSE event."""
    chunk = {
        "id": "chatcmpl-9Q8x7f3kLmN2pQrStUvWxYz",
        "object": "chat.completion.chunk",
        "created": 1718000000 + i // 50,
        "model": "gpt-4o-mini-2024-07-18",
        "system_fingerprint": "fp_0123456789",
        "choices": [{"index": 0, "delta": {"content": _text(i)}, "logprobs": None, "finish_reason": None}],
    }
    return b"data: " + _dumps(chunk) + eol + eol


def anthropic_event(i: int) -> bytes:
    """One Anthropic ``content_block_delta`` event (``event:`` + ``data:``)."""
    data = {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": _text(i)}}
    return b"event: content_block_delta\ndata: " + _dumps(data) + b"\n\n"


def id_event(i: int) -> bytes:
    """One event with ``id:``, ``event:`` and ``data:`` (an OpenAI Responses-style delta with an ID)."""
    data = {
        "type": "response.output_text.delta",
        "item_id": "msg_0123",
        "output_index": 0,
        "content_index": 0,
        "delta": _text(i),
        "sequence_number": i,
    }
    return f"id: {i}\nevent: response.output_text.delta\ndata: ".encode() + _dumps(data) + b"\n\n"


def build_events(n: int) -> list[bytes]:
    """``n`` OpenAI chat-completion chunks as SSE events, then ``data: [DONE]``."""
    return [openai_event(i) for i in range(n)] + [b"data: [DONE]\n\n"]


@dataclass
class Shape:
    name: str
    chunks: list[bytes]
    unit: str = "event"  # "event": time per event; "byte": time per byte


def shapes(n: int = N_EVENTS, big: int = BIG, bytewise: int = BYTEWISE) -> list[Shape]:
    """The shapes of issue 16, in its order."""
    openai = build_events(n)
    pairs = [openai[i] + openai[i + 1] for i in range(0, len(openai) - 1, 2)]
    many = build_events(big // len(openai[0]) + 1)
    head = b"".join(openai)[:bytewise]
    payload = "x" * 60 + "é€🙂"
    one = b"data: " + (payload * (big // len(payload.encode()))).encode() + b"\n\n"
    return [
        Shape("OpenAI, per-event chunks", openai),
        Shape("Anthropic (event+data), per-event chunks", [anthropic_event(i) for i in range(n)]),
        Shape("id+event+data, per-event chunks", [id_event(i) for i in range(n)]),
        Shape("CRLF line endings, per-event chunks", [openai_event(i, b"\r\n") for i in range(n)]),
        Shape("two events per chunk", pairs),
        Shape(f"1-byte chunks (first {bytewise // 1000} KB)", [head[i : i + 1] for i in range(len(head))]),
        Shape(f"one {len(b''.join(many)) / 1e6:.0f} MB chunk of events", [b"".join(many)]),
        Shape(
            f"one {len(one) / 1e6:.0f} MB event ({BIG_EVENT_CHUNK // 1024} KiB reads)",
            [one[i : i + BIG_EVENT_CHUNK] for i in range(0, len(one), BIG_EVENT_CHUNK)],
            "byte",
        ),
    ]


# -- the contestants -------------------------------------------------------------------------------

Run = Callable[[list[bytes]], list[tuple[str, str, str]]]  # chunks -> (event, data, id) per event


def run_ssemock(chunks: Iterable[bytes]) -> list[Any]:
    """The public ``ssemock.sse.decode`` (``Decoder.feed`` per chunk, then ``close``)."""
    return decode(chunks)


def run_ssemock_iter(chunks: Iterable[bytes]) -> list[Any]:
    """The incremental API: ``iter_decode``, each event as soon as the chunk that completes it is
    in (it feeds a chunk without a line ending together with the next)."""
    return list(iter_decode(chunks))


def run_ssemock_feed(chunks: Iterable[bytes]) -> list[Any]:
    """The decoder's own step, called by hand: ``Decoder.feed`` once per chunk."""
    decoder = Decoder()
    feed = decoder.feed
    events: list[Any] = []
    for chunk in chunks:
        got = feed(chunk)
        if got:
            events += got
    return events + decoder.close()


def _ld() -> Callable[[list[bytes]], list[Any]]:
    from ld_eventsource.actions import Event
    from ld_eventsource.reader import _BufferedLineReader, _SSEReader

    def run(chunks: list[bytes]) -> list[Any]:
        reader = _SSEReader(_BufferedLineReader.lines_from(chunks))
        return [x for x in reader.events_and_comments() if type(x) is Event]

    return run


def _texts(decoder: Any, chunks: Iterable[bytes]) -> Iterator[str]:
    for chunk in chunks:
        text = decoder.decode(chunk)
        if text:
            yield text
    text = decoder.flush()
    if text:
        yield text


def _httpx_sse() -> Callable[[list[bytes]], list[Any]]:
    from httpx._decoders import TextDecoder
    from httpx_sse._decoders import SSEDecoder, SSELineDecoder

    def run(chunks: list[bytes]) -> list[Any]:
        lines, sse, out = SSELineDecoder(), SSEDecoder(), []
        for text in _texts(TextDecoder("utf-8"), chunks):
            for line in lines.decode(text):
                event = sse.decode(line.rstrip("\n"))
                if event is not None:
                    out.append(event)
        for line in lines.flush():
            event = sse.decode(line.rstrip("\n"))
            if event is not None:
                out.append(event)
        return out

    return run


def _httpx2() -> Callable[[list[bytes]], list[Any]]:
    from httpx2._decoders import TextDecoder
    from httpx2._sse import _SSEParser

    def run(chunks: list[bytes]) -> list[Any]:
        parser, out = _SSEParser(max_event_size=None), []
        for text in _texts(TextDecoder("utf-8"), chunks):
            out += parser.decode(text)
        out += parser.flush()
        return out

    return run


def _openai() -> Callable[[list[bytes]], list[Any]]:
    from openai._streaming import SSEDecoder

    def run(chunks: list[bytes]) -> list[Any]:
        return list(SSEDecoder().iter_bytes(iter(chunks)))

    return run


def _sseclient() -> Callable[[list[bytes]], list[Any]]:
    from sseclient import SSEClient

    def run(chunks: list[bytes]) -> list[Any]:
        return list(SSEClient(iter(chunks)).events())

    return run


def _assel() -> Callable[[list[bytes]], list[Any]]:
    import assel

    def run(chunks: list[bytes]) -> list[Any]:
        return list(assel.parse(chunks))

    return run


PEERS: dict[str, tuple[str, Callable[[], Callable[[list[bytes]], list[Any]]]]] = {
    "ld-eventsource": ("ld_eventsource", _ld),
    "httpx-sse": ("httpx_sse", _httpx_sse),
    "httpx2": ("httpx2", _httpx2),
    "openai": ("openai", _openai),
    "sseclient-py": ("sseclient", _sseclient),
    "assel": ("assel", _assel),
}


def contestants() -> tuple[dict[str, Callable[[list[bytes]], list[Any]]], list[str]]:
    """ssemock and every installed peer; and the names of the peers that are not installed."""
    found: dict[str, Callable[[list[bytes]], list[Any]]] = {
        "ssemock": run_ssemock,
        "ssemock.iter": run_ssemock_iter,
        "ssemock.feed": run_ssemock_feed,
    }
    missing = []
    for name, (module, make) in PEERS.items():
        try:
            importlib.import_module(module)
        except ImportError:
            missing.append(name)
            continue
        found[name] = make()
    return found, missing


def normalized(events: Iterable[Any]) -> list[tuple[str, str, str]]:
    """(type, data, id) of each event, whatever the library calls them (None -> default)."""
    out = []
    for e in events:
        last_id = getattr(e, "last_event_id", None)  # ld-eventsource: .id is the event's own field
        ident = last_id if last_id is not None else getattr(e, "id", None)
        out.append((getattr(e, "event", None) or "message", e.data, ident or ""))
    return out


def agreeing(
    fns: dict[str, Callable[[list[bytes]], list[Any]]], shape: Shape
) -> tuple[dict[str, Any], list[str]]:
    """The contestants that yield ssemock's events on (a sample of) the shape; and what the others did."""
    chunks = shape.chunks if len(shape.chunks) > 1 else [shape.chunks[0][:200_000]]
    want = normalized(run_ssemock(chunks[:2000]))
    ok, notes = {}, []
    for name, fn in fns.items():
        try:
            got = normalized(fn(chunks[:2000]))
        except Exception as exc:  # a peer that cannot read the shape is left out of it, and said so
            notes.append(f"{name} raised {type(exc).__name__}: {exc}"[:160])
            continue
        if got != want:
            notes.append(f"{name} gives other events")
            continue
        ok[name] = fn
    assert "ssemock" in ok
    return ok, notes


# -- timing ------------------------------------------------------------------------------------------

CLOCK = time.process_time if "--cpu" in sys.argv else time.perf_counter  # --cpu: steadier on a shared machine


@dataclass
class Result:
    shape: Shape
    count: int  # events (or bytes, for a "byte" shape)
    seconds: dict[str, float]

    @property
    def fastest_peer(self) -> str:
        peers = {k: v for k, v in self.seconds.items() if not k.startswith("ssemock")}
        return min(peers, key=peers.__getitem__)

    @property
    def ratio(self) -> float:
        """Fastest peer's time / ssemock's (``decode``): how many times faster ssemock is."""
        return self.seconds[self.fastest_peer] / self.seconds["ssemock"]

    @property
    def iter_ratio(self) -> float:
        """The same for the incremental API (``iter_decode``)."""
        return self.seconds[self.fastest_peer] / self.seconds["ssemock.iter"]

    @property
    def feed_ratio(self) -> float:
        """The same for ``Decoder.feed`` called by hand once per chunk."""
        return self.seconds[self.fastest_peer] / self.seconds["ssemock.feed"]

    def per_unit(self, name: str) -> str:
        value = self.seconds[name] / self.count
        return f"{value * 1e9:.2f} ns/byte" if self.shape.unit == "byte" else f"{value * 1e6:.3f} us/event"


def measure(shape: Shape, fns: dict[str, Callable[[list[bytes]], list[Any]]], rounds: int) -> Result:
    chunks = shape.chunks
    count = len(b"".join(chunks)) if shape.unit == "byte" else len(run_ssemock(chunks))
    seconds = median_interleaved(
        {name: (lambda fn=fn: fn(chunks)) for name, fn in fns.items()}, rounds, CLOCK
    )
    return Result(shape, count, seconds)


def report(result: Result) -> str:
    lines = [
        f"{result.shape.name}: {result.count:,} {result.shape.unit}s, {len(result.shape.chunks):,} chunks"
    ]
    mine = result.seconds["ssemock"]
    for name, secs in sorted(result.seconds.items(), key=lambda kv: kv[1]):
        ratio = "" if name == "ssemock" else f"   {secs / mine:6.2f}x ssemock's time"
        lines.append(f"  {name:<15} {result.per_unit(name):>18}{ratio}")
    lines.append(
        f"  => ssemock.sse.decode is {result.ratio:.2f}x faster than the fastest peer ({result.fastest_peer})"
        + ("" if result.ratio >= 2 else "   BELOW the 2x target")
        + f"; iter_decode {result.iter_ratio:.2f}x; Decoder.feed per chunk {result.feed_ratio:.2f}x"
    )
    return "\n".join(lines)


def linearity(rounds: int = 3) -> list[float]:
    """ns/byte for one event of 1x/10x/100x 100 KB fed in 4 KiB reads (1 = linear)."""
    out = []
    for factor in (1, 10, 100):
        payload = "x" * 60 + "é€🙂"
        body = b"data: " + (payload * (100_000 * factor // len(payload.encode()))).encode() + b"\n\n"
        chunks = [body[i : i + 4096] for i in range(0, len(body), 4096)]
        out.append(
            median_interleaved({"x": lambda: run_ssemock(chunks)}, rounds, CLOCK)["x"] / len(body) * 1e9
        )
    return out


def main() -> None:
    quick = "--quick" in sys.argv
    t0 = time.perf_counter()
    fns, missing = contestants()
    print(
        f"python {sys.version.split()[0]}; {'CPU' if CLOCK is time.process_time else 'wall'} time; contestants: {', '.join(fns)}"
        + (f"; not installed: {', '.join(missing)}" if missing else "")
    )
    results = []
    for shape in shapes(N_EVENTS // 4 if quick else N_EVENTS, BIG // 10 if quick else BIG):
        ok, notes = agreeing(fns, shape)
        result = measure(shape, ok, rounds=3 if quick or shape.unit == "byte" or "MB" in shape.name else 7)
        results.append(result)
        print("\n" + report(result) + "".join(f"\n  (left out: {note})" for note in notes), flush=True)
    print(
        "\nsummary (fastest peer's time / ssemock's, same run):   decode()   iter_decode()   feed per chunk"
    )
    for r in results:
        print(
            f"  {r.shape.name:<46} {r.ratio:8.2f}x {r.iter_ratio:12.2f}x {r.feed_ratio:12.2f}x   vs {r.fastest_peer}"
        )
    per_byte = linearity()
    print(
        "\nlinearity, one event of 0.1/1/10 MB in 4 KiB reads: "
        + " / ".join(f"{v:.2f}" for v in per_byte)
        + f" ns/byte (10 MB / 0.1 MB = {per_byte[-1] / per_byte[0]:.2f})"
    )
    print(f"\ntotal {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
