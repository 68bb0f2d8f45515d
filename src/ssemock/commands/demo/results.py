"""What the demo measured: one row per chunking (three clients each), the live run and the
recording, and ``as_dict()`` (what ``ssemock demo --json`` prints)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from itertools import accumulate
from pathlib import Path
from typing import Any

from ...player.explore import Failure
from .clients import Outcome, ToolCall
from .stream import TEXT, TOOL_ARGS, TOOL_ID, TOOL_NAME


@dataclass
class ChunkingResult:
    """One row of the table: one chunking, three clients."""

    chunking: str
    chunks: int
    bytes: int
    events: int
    openai_text_ok: bool
    openai_tool_args_ok: bool
    httpx_sse_ok: bool
    naive_ok: bool
    naive_got: str  # e.g. "17/17 chunks", "9/17 chunks", "UnicodeDecodeError"
    openai: Outcome
    httpx_sse: Outcome
    naive: Outcome

    @property
    def real_clients_ok(self) -> bool:
        return self.openai_text_ok and self.openai_tool_args_ok and self.httpx_sse_ok


@dataclass
class DemoResult:
    """Everything the demo measured; ``as_dict()`` is what ``ssemock demo --json`` prints."""

    cassette_path: Path  # where the demo wrote its cassette (removed afterwards unless cassette_kept)
    server_url: str
    live: Outcome
    recorded_chunks: list[bytes]
    recorded_times: list[float]  # seconds after the request was sent
    client_first_chunk_s: float  # when the SDK handed the first chunk to the caller, while recording
    stream_s: float  # the whole live stream, as the SDK consumed it
    rows: list[ChunkingResult]
    conclusion: str
    cassette_kept: bool = False  # a ``directory`` was given: the cassette is still there
    explored: Failure | None = None  # ``explore``: the naive decoder's smallest failing stream
    explore_examples: int = 0  # how many examples explore ran (0: not asked)

    @property
    def recorded_first_chunk_s(self) -> float:
        return self.recorded_times[0] if self.recorded_times else 0.0

    @property
    def live_ok(self) -> bool:
        """The live run got what the server sent."""
        return (
            self.live.error is None
            and self.live.text == TEXT
            and self.live.tool_calls == [ToolCall(TOOL_ID, TOOL_NAME, TOOL_ARGS)]
        )

    @property
    def real_clients_ok(self) -> bool:
        return all(r.real_clients_ok for r in self.rows)

    @property
    def naive_failed(self) -> list[str]:
        return [r.chunking for r in self.rows if not r.naive_ok]

    def row(self, chunking: str) -> ChunkingResult:
        return next(r for r in self.rows if r.chunking == chunking)

    def as_dict(self) -> dict[str, Any]:
        return {
            "cassette": str(self.cassette_path),
            "cassette_kept": self.cassette_kept,
            "server_url": self.server_url,
            "live": asdict(self.live),
            "live_ok": self.live_ok,
            "recorded": {
                "chunks": len(self.recorded_chunks),
                "bytes": sum(map(len, self.recorded_chunks)),
                "chunk_ends": list(accumulate(map(len, self.recorded_chunks))),
                "times_ms": [round(t * 1000, 1) for t in self.recorded_times],
                "first_chunk_ms": round(self.recorded_first_chunk_s * 1000, 1),
                "client_first_chunk_ms": round(self.client_first_chunk_s * 1000, 1),
                "stream_ms": round(self.stream_s * 1000, 1),
            },
            "rows": [asdict(r) for r in self.rows],
            "real_clients_ok": self.real_clients_ok,
            "naive_failed": self.naive_failed,
            "conclusion": self.conclusion,
            "explore": None
            if not self.explore_examples
            else {
                "examples": self.explore_examples,
                "failure": None
                if self.explored is None
                else {
                    "reproducer": self.explored.reproducer,
                    "boundaries": self.explored.boundaries,
                    "transforms": [t.name for t in self.explored.variant.transforms],
                    "error": f"{type(self.explored.error).__name__}: {self.explored.error}",
                    "examples_to_first_failure": self.explored.examples,
                },
            },
        }
