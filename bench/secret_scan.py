"""The secret scan before a save, per byte, on recordings of 1 and 20 MB (and the write beside it).

    python bench/secret_scan.py [MB ...]      # default: 1 20

``Player.save`` runs ``ssemock.redaction.rules.find_secrets`` (every field, every shape, decoded forms)
before ``Cassette.save``. Target (issue 33): at most 25 ns a byte at 1 MB and at 20 MB. Up to 2 MiB
a stream is walked event by event; past it, ``ssemock.scan.large_streams`` reads it a segment at a
time. Three bodies:

* ``chat``: bench/decode.py's OpenAI-style chat stream (268-byte events, ~400-byte chunks);
* ``filler``: bench/run.py's recording body (16 KB ``data: xxx...`` events, 16 KB chunks);
* ``escaped``: the chat stream with a ``50%`` and a Go-style ``\\u003c`` escape in every event,
  so the scan also decodes and scans a second form.

Each is measured with the multi-literal search of ahocorasick-rs when it is installed and with
the plain ``re`` alternation ssemock falls back to without it.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent / "src"), str(HERE)]

from decode import build_events  # noqa: E402
from timer import best  # noqa: E402

import ssemock  # noqa: E402
import ssemock.scan.credential_shapes as scanner  # noqa: E402
from ssemock.redaction.rules import find_secrets  # noqa: E402


def bodies(size: int) -> dict[str, tuple[bytes, int]]:
    """name -> (body of ``size`` bytes, average chunk size)."""
    chat = b"".join(build_events(min(200_000, size // 250 + 10)))
    escaped = chat.replace(b'"delta":{', b'"delta":{"note":"50% \\u003c",')
    filler = b"data: " + b"x" * 16_376 + b"\n\n"

    def fill(unit: bytes) -> bytes:
        return (unit * (size // len(unit) + 1))[:size]

    return {"chat": (fill(chat), 400), "filler": (fill(filler), 16384), "escaped": (fill(escaped), 400)}


def cassette(body: bytes, chunk: int) -> ssemock.Cassette:
    c = ssemock.Cassette()
    if chunk == 16384:
        ends = list(range(chunk, len(body), chunk)) + [len(body)]
    else:
        ends = ssemock.chunking.random(1, average_size=chunk, size_variation=300).ends(body)
    c.add(
        "POST",
        "https://api.openai.com/v1/chat/completions",
        [body[a:b] for a, b in zip([0, *ends], ends)],
        request_json={
            "model": "gpt-4o-mini",
            "stream": True,
            "messages": [{"role": "user", "content": "hi"}],
        },
        request_headers={"content-type": "application/json", "authorization": "REDACTED"},
    )
    return c


def measure(sizes: list[int], repeat: int = 3) -> list[dict[str, object]]:
    """One row per (body, size): save seconds, scan seconds with and without ahocorasick-rs."""
    rows: list[dict[str, object]] = []
    fast, plain = scanner._finders(True), scanner._finders(False)
    with tempfile.TemporaryDirectory() as tmp:
        for size in sizes:
            for name, (body, chunk) in bodies(size).items():
                c = cassette(body, chunk)
                assert find_secrets(c) == [], "the benchmark bodies hold no secret"
                save = best(
                    lambda: c.save(Path(tmp) / "c.json", scan_secrets=False), repeat
                )  # the write alone
                scanner._find_anchors, scanner._find_escapes = fast
                scan = best(lambda: find_secrets(c), repeat)
                scanner._find_anchors, scanner._find_escapes = plain
                scan_re = best(lambda: find_secrets(c), 1 if size > 10_000_000 else repeat)
                scanner._find_anchors, scanner._find_escapes = fast
                rows.append(
                    {"body": name, "bytes": len(body), "save": save, "scan": scan, "scan_re": scan_re}
                )
    return rows


def main() -> None:
    sizes = [int(float(a) * 1e6) for a in sys.argv[1:]] or [1_000_000, 20_000_000]
    try:
        import ahocorasick_rs  # noqa: F401

        accel = "installed"
    except ImportError:
        accel = "NOT installed: both columns use re"
    print(f"ahocorasick-rs {accel}")
    rows = measure(sizes)
    print(f"{'body':8} {'size':>8} {'write':>9} {'scan':>9} {'ns/B':>6} {'scan (re)':>10} {'ns/B':>6}")
    for r in rows:
        n, save, scan, scan_re = r["bytes"], r["save"], r["scan"], r["scan_re"]
        assert isinstance(n, int) and isinstance(save, float) and isinstance(scan, float)
        assert isinstance(scan_re, float)
        print(
            f"{r['body']:8} {n / 1e6:6.1f}MB {save * 1e3:7.1f}ms {scan * 1e3:7.1f}ms {scan / n * 1e9:6.1f} "
            f"{scan_re * 1e3:8.1f}ms {scan_re / n * 1e9:6.1f}"
        )
    for r in rows:
        per_byte = float(r["scan"]) / int(r["bytes"]) * 1e9  # type: ignore[arg-type]
        print(
            f"target {r['body']} {int(r['bytes']) / 1e6:g} MB: {per_byte:.1f} ns/byte "  # type: ignore[arg-type]
            f"({'met' if per_byte <= 25 else 'MISSED'}, target <= 25)"
        )


if __name__ == "__main__":
    main()
