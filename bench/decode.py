"""Benchmark: ssemock.sse vs httpx-sse vs openai's SSEDecoder on an OpenAI-style chat stream.

Plain script: ``python bench/decode.py``. Each peer is fed the way its library feeds it:

* httpx-sse: ``Response.iter_text()`` (httpx's incremental UTF-8 ``TextDecoder``), then
  ``SSELineDecoder.decode``, ``line.rstrip("\\n")`` and ``SSEDecoder.decode(line)`` per line;
* openai: ``SSEDecoder().iter_bytes(chunks)`` (its byte-level ``_SSELineDecoder``, then one
  ``bytes.decode("utf-8")`` and ``decode(line)`` per line), as ``Stream._iter_events`` does;
* ssemock: the public ``ssemock.sse.decode`` (``Decoder.feed(chunk)`` per chunk, then ``close()``).

Three chunkings: one chunk per event, 1-byte chunks over the first 1 MB, one single chunk.
Prints microseconds per event (best of a few interleaved rounds) and the ratio
peer / ssemock, then a linearity check: one event of 1x/10x/100x the size, fed in 4 KiB
chunks, time per byte next to the floor (joining and decoding the bytes once).
"""

from __future__ import annotations

import gc
import json
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from httpx._decoders import TextDecoder  # noqa: E402
from httpx_sse._decoders import SSEDecoder as HttpxSSEDecoder  # noqa: E402
from httpx_sse._decoders import SSELineDecoder  # noqa: E402
from openai._streaming import SSEDecoder as OpenAISSEDecoder  # noqa: E402

from ssemock.sse import decode  # noqa: E402

N_EVENTS = 100_000
BYTEWISE_LIMIT = 1_000_000
WORDS = ["Hello", " wörld", ",", " naïve", " café", " 東京", " へようこそ", " 🙂", " Ωmega", " —", " ok", "."]


def build_events(n: int) -> list[bytes]:
    """``n`` OpenAI chat-completion chunks as SSE events, then ``data: [DONE]``."""
    events = []
    for i in range(n):
        chunk = {
            "id": "chatcmpl-9Q8x7f3kLmN2pQrStUvWxYz",
            "object": "chat.completion.chunk",
            "created": 1718000000 + i // 50,
            "model": "gpt-4o-mini-2024-07-18",
            "system_fingerprint": "fp_0123456789",
            "choices": [{
                "index": 0,
                "delta": {"content": WORDS[i % len(WORDS)] + WORDS[(i * 7) % len(WORDS)]},
                "logprobs": None,
                "finish_reason": None,
            }],
        }
        events.append(b"data: " + json.dumps(chunk, ensure_ascii=False, separators=(",", ":")).encode() + b"\n\n")
    events.append(b"data: [DONE]\n\n")
    return events


def run_ssemock(chunks: Iterable[bytes]) -> list[Any]:
    """The public ``ssemock.sse.decode`` (``Decoder.feed`` per chunk, then ``close``)."""
    return decode(chunks)


def _httpx_sse_iter(chunks: Iterable[bytes]) -> Iterator[Any]:
    text_decoder = TextDecoder("utf-8")
    lines = SSELineDecoder()
    sse = HttpxSSEDecoder()

    def texts() -> Iterator[str]:
        for chunk in chunks:
            text = text_decoder.decode(chunk)
            if text:
                yield text
        text = text_decoder.flush()
        if text:
            yield text

    for text in texts():
        for line in lines.decode(text):
            event = sse.decode(line.rstrip("\n"))
            if event is not None:
                yield event
    for line in lines.flush():
        event = sse.decode(line.rstrip("\n"))
        if event is not None:
            yield event


def run_httpx_sse(chunks: Iterable[bytes]) -> list[Any]:
    return list(_httpx_sse_iter(chunks))


def run_openai(chunks: Iterable[bytes]) -> list[Any]:
    return list(OpenAISSEDecoder().iter_bytes(iter(chunks)))


DECODERS: dict[str, Callable[[Iterable[bytes]], list[Any]]] = {
    "ssemock": run_ssemock,
    "httpx-sse": run_httpx_sse,
    "openai": run_openai,
}


def timed(fn: Callable[[Iterable[bytes]], list[Any]], chunks: list[bytes]) -> tuple[float, int]:
    gc.collect()
    gc.disable()
    try:
        start = time.perf_counter()
        events = fn(chunks)
        return time.perf_counter() - start, len(events)
    finally:
        gc.enable()


def bench_chunking(label: str, chunks: list[bytes], repeat: int) -> None:
    """Best of ``repeat`` rounds; each round runs every decoder once, so drift hits all alike."""
    best = {name: float("inf") for name in DECODERS}
    counts = {}
    for _ in range(repeat):
        for name, fn in DECODERS.items():
            secs, counts[name] = timed(fn, chunks)
            best[name] = min(best[name], secs)
    assert len(set(counts.values())) == 1, f"decoders disagree on the event count: {counts}"
    n = counts["ssemock"]
    mine = best["ssemock"]
    print(f"\n{label}: {len(chunks):,} chunks, {sum(map(len, chunks)):,} bytes, {n:,} events")
    for name, secs in best.items():
        ratio = "" if name == "ssemock" else f"   peer/ssemock = {secs / mine:5.2f}x"
        print(f"  {name:<10} {secs * 1e6 / n:8.3f} us/event  ({secs:6.3f} s){ratio}")


def check_agreement(events: list[bytes]) -> None:
    sample = events[:2000]
    mine = [(e.event, e.data, e.id) for e in run_ssemock(sample)]
    theirs = [(e.event, e.data, e.id) for e in run_httpx_sse(sample)]
    openai = [(e.event or "message", e.data, e.id or "") for e in run_openai(sample)]
    assert mine == theirs == openai, "decoders disagree on an ordinary stream"


def linearity() -> None:
    print("\nlinearity: one event, one data line of 1x/10x/100x 256 KiB, fed in 4 KiB chunks")
    print("  (floor = b''.join(chunks).decode(): the copy + decode any decoder must do)")
    per_byte = []
    for factor in (1, 10, 100):
        payload = "x" * 60 + "é€🙂"
        size = 256 * 1024 * factor
        body = b"data: " + (payload * (size // len(payload.encode()))).encode() + b"\n\n"
        chunks = [body[i:i + 4096] for i in range(0, len(body), 4096)]
        mine = floor = float("inf")
        for _ in range(3 if factor < 100 else 2):
            secs, count = timed(run_ssemock, chunks)
            assert count == 1
            mine = min(mine, secs)
            start = time.perf_counter()
            b"".join(chunks).decode()
            floor = min(floor, time.perf_counter() - start)
        per_byte.append(mine / len(body))
        print(f"  {factor:>3}x {len(body) / 1e6:7.2f} MB  ssemock {mine * 1e3:8.2f} ms = "
              f"{mine * 1e9 / len(body):5.2f} ns/byte   floor {floor * 1e9 / len(body):5.2f} ns/byte")
    print(f"  ssemock ns/byte, 100x / 1x = {per_byte[-1] / per_byte[0]:.2f} "
          "(1 = linear; re-scanning a growing buffer would give ~100)")


def main() -> None:
    t0 = time.perf_counter()
    events = build_events(N_EVENTS)
    body = b"".join(events)
    check_agreement(events)
    print(f"python {sys.version.split()[0]}; stream: {len(events):,} events, {len(body) / 1e6:.1f} MB")

    bench_chunking("per-event chunks", events, repeat=3)
    head = body[:BYTEWISE_LIMIT]
    bench_chunking("1-byte chunks (first 1 MB)", [head[i:i + 1] for i in range(len(head))], repeat=2)
    bench_chunking("one single chunk", [body], repeat=3)
    linearity()
    print(f"\ntotal {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
