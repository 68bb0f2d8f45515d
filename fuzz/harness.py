"""Coverage-guided fuzzing with atheris (``pip install atheris``) of the same contracts that
tests/test_fuzz.py checks with hypothesis:

    python fuzz/harness.py cassette   -atheris_runs=200000   # Cassette.loads: Cassette or CassetteError
    python fuzz/harness.py sse        -max_total_time=60     # any chunking == whole body; never raises
    python fuzz/harness.py ndjson     -max_total_time=60     # any chunking: same values or same NDJSONError
    python fuzz/harness.py accumulate -max_total_time=60     # a result or ProtocolError naming the event

Any other arguments go to libFuzzer (``-max_total_time=S``, ``-runs=N``...). Unless a corpus
folder is given, the run starts from seeds written to a temporary folder (valid cassettes, real
SSE and JSON-lines streams), so the fuzzer mutates plausible input instead of rediscovering JSON.
A contract violation raises, and atheris prints the input and writes it as ``crash-*``.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import atheris

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

with atheris.instrument_imports():
    import orjson

    from ssemock import Cassette, CassetteError, ndjson, sse
    from ssemock.accumulate import PROTOCOLS, ProtocolError, accumulate
    from ssemock.sse import ServerSentEvent


def _chunks(fdp: atheris.FuzzedDataProvider) -> tuple[bytes, list[bytes]]:
    cuts = sorted(set(fdp.ConsumeIntListInRange(fdp.ConsumeIntInRange(0, 8), 0, 512)))
    body = fdp.ConsumeBytes(fdp.remaining_bytes())
    ends = sorted({c for c in cuts if c < len(body)} | {len(body)})
    return body, [body[a:b] for a, b in zip([0, *ends], ends)]


def fuzz_cassette(data: bytes) -> None:
    try:
        cassette = Cassette.loads(data)
    except CassetteError:
        return
    raw = cassette.dumps()
    if Cassette.loads(raw).dumps() != raw:
        raise AssertionError("a loaded cassette does not save the same way twice")


def _events(events: list[ServerSentEvent]) -> list[tuple[str, str, str, int | None]]:
    return [(e.event, e.data, e.id, e.retry) for e in events]


def fuzz_sse(data: bytes) -> None:
    body, chunks = _chunks(atheris.FuzzedDataProvider(data))
    whole = _events(sse.decode([body]))
    if _events(sse.decode(chunks)) != whole:
        raise AssertionError(f"chunking changed the events: {chunks!r}")


def _ndjson(chunks: list[bytes]) -> object:
    try:
        return ndjson.decode(chunks)
    except ndjson.NDJSONError as exc:
        return ("NDJSONError", exc.lineno)


def fuzz_ndjson(data: bytes) -> None:
    body, chunks = _chunks(atheris.FuzzedDataProvider(data))
    whole = _ndjson([body])
    if _ndjson(chunks) != whole:
        raise AssertionError(f"chunking changed the outcome: {chunks!r}")


def fuzz_accumulate(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    protocol = PROTOCOLS[fdp.ConsumeIntInRange(0, len(PROTOCOLS) - 1)]
    body = fdp.ConsumeBytes(fdp.remaining_bytes())
    if protocol == "ollama.chat":
        events: list[object] = []
        for line in body.split(b"\n"):
            try:
                events.append(orjson.loads(line))
            except orjson.JSONDecodeError:
                pass
    else:
        events = list(sse.decode([body]))
    try:
        accumulate(events, protocol).to_dict()  # type: ignore[arg-type]
    except ProtocolError as exc:
        if exc.index is None or f"event {exc.index}" not in str(exc):
            raise AssertionError(f"ProtocolError without its event index: {exc}") from exc


TARGETS = {"cassette": fuzz_cassette, "sse": fuzz_sse, "ndjson": fuzz_ndjson, "accumulate": fuzz_accumulate}


_SSE = (b"event: message_start\ndata: {\"type\": \"message_start\", \"message\": {\"id\": \"m\"}}\n\n"
        b"data: {\"choices\": [{\"index\": 0, \"delta\": {\"content\": \"\xe4\xb8\x96\"}}]}\r\n\r\n"
        b": ping\n\nid: 7\nretry: 100\ndata: a\ndata: b\n\ndata: [DONE]\n\n")
_NDJSON = (b'{"model": "m", "message": {"role": "assistant", "content": "hi"}, "done": false}\n'
           b'{"message": {"tool_calls": [{"function": {"name": "f", "arguments": {"a": 1}}}]}, "done": false}\r\n'
           b'{"done": true, "done_reason": "stop", "eval_count": 3}\n')


def seeds(target: str) -> list[bytes]:
    """Plausible inputs for ``target``, for libFuzzer to start from."""
    if target == "cassette":
        out = []
        for chunks, ctype in (([_SSE[:40], _SSE[40:]], "text/event-stream"), ([_NDJSON], "application/x-ndjson"),
                              ([b"\xff\xfe", b"x"], "application/octet-stream")):
            cassette = Cassette()
            cassette.add("POST", "https://api.example.test/v1/chat/completions", chunks, times=[0.1] * len(chunks),
                         headers={"content-type": ctype}, request_json={"model": "m", "stream": True},
                         complete=False, error={"type": "RemoteProtocolError", "message": "x"})
            out.append(cassette.dumps())
        return out
    prefix = b"\x03\x00\x00\x00\x10\x00\x00\x00\x40"  # a few chunk cuts for FuzzedDataProvider
    if target == "accumulate":
        return [b"\x00" + _SSE, b"\x02" + _SSE, b"\x03" + _NDJSON]
    return [prefix + (_SSE if target == "sse" else _NDJSON)]


def main() -> None:
    if len(sys.argv) < 2 or sys.argv[1] not in TARGETS:
        sys.exit(f"usage: python fuzz/harness.py {{{','.join(TARGETS)}}} [libFuzzer options] [corpus folder]")
    name, args = sys.argv[1], sys.argv[2:]
    if not any(not a.startswith("-") for a in args):
        corpus = tempfile.mkdtemp(prefix=f"ssemock-fuzz-{name}-")
        for i, seed in enumerate(seeds(name)):
            Path(corpus, f"seed{i}").write_bytes(seed)
        args.append(corpus)
    atheris.Setup([sys.argv[0], *args], TARGETS[name])
    atheris.Fuzz()


if __name__ == "__main__":
    main()
