"""The optional C accelerator, as the other layers use it: the compiled module and its functions,
or None each where the install built none (no C compiler then; the pure code gives the same
results, only slower). The SSE decoder in this package uses it directly."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from types import ModuleType

__all__ = [
    "MODULE",
    "array_spans",
    "b64_decode",
    "b64_findall",
    "b64_run",
    "b64_runs",
    "chunk_map",
    "data_lines",
    "escaped",
    "holds",
    "longest_gap",
    "members",
    "plain",
    "plan_match",
    "ready",
    "seam_stretches",
    "slices",
    "unfit",
    "values",
    "words",
]

MODULE: ModuleType | None
try:
    from . import _speedups as MODULE
except ImportError:  # not built
    MODULE = None

array_spans: (
    Callable[
        [bytes | bytearray, int, int, int, int, int, int], tuple[list[int], int, int, int, int, int, int]
    ]
    | None
) = getattr(MODULE, "array_spans", None)
"""A JSON array stream's elements from a state, in one pass (`ssemock.framing.json_array.Elements`)."""
escaped: Callable[[bytes, bytes, bytes], bytes | None] | None = getattr(MODULE, "escaped", None)
"""A cassette body window laid out as JSON strings in one pass (`ssemock.store.layout`)."""
holds: Callable[[bytes, bytes], bool] | None = getattr(MODULE, "holds", None)
"""Whether bytes hold any of a few bytes, in one pass (`ssemock.scan.credential_shapes`)."""
plain: Callable[[list[bytes | memoryview], bytes], bool] | None = getattr(MODULE, "plain", None)
"""Whether a window's parts are ASCII without some bytes, unjoined (`ssemock.scan.large_streams`)."""
plan_match: Callable[[tuple[str | bool, ...], list[str]], object] | None = getattr(MODULE, "plan_match", None)
"""The string values of a run of events read by a plan, or None (one does not match), or
NotImplemented (a text the regex reads), in one pass (`ssemock.scan.event_plans`)."""
seam_stretches: Callable[[list[bytes | memoryview], list[int], int], bytes | None] | None = getattr(
    MODULE, "seam_stretches", None
)
"""The bytes around a window's seams, cut from its parts unjoined, in one pass (`ssemock.scan.seams`)."""
unfit: Callable[[str], bool] | None = getattr(MODULE, "unfit", None)
"""Whether a str holds a control character or a surrogate, in one pass (`ssemock.scan.event_plans`)."""
values: Callable[[bytes], int] | None = getattr(MODULE, "values", None)
"""The count of JSON values in a document, in one pass (`ssemock.store.size_guard`)."""
data_lines: Callable[[bytes], list[bytes | memoryview]] | None = getattr(MODULE, "data_lines", None)
"""The data of a segment's non-JSON SSE data lines, in one pass, a long one as a view of the segment
(`ssemock.scan.large_streams`)."""
b64_run: Callable[[bytes | str, int], bool] | None = getattr(MODULE, "b64_run", None)
"""Whether bytes, or a str of ASCII, hold a base64 run (`ssemock.scan.credential_shapes.has_b64_run`)."""
b64_decode: Callable[[bytes], bytes | None] | None = getattr(MODULE, "b64_decode", None)
"""A base64 / base64url run with no '=' decoded, in one pass (`ssemock.scan.credential_shapes.base64_bytes`)."""
b64_findall: Callable[[str, int], list[str]] | None = getattr(MODULE, "b64_findall", None)
"""The base64 runs of ASCII text as `B64_RUN.findall` gives them (`ssemock.scan.credential_shapes.b64_findall`)."""
b64_runs: Callable[[bytes, int], set[bytes]] | None = getattr(MODULE, "b64_runs", None)
"""The distinct base64 runs of a segment that mix cases, in one pass (`ssemock.scan.large_streams`)."""
members: Callable[[bytes], dict[bytes, list[bytes | memoryview]]] | None = getattr(MODULE, "members", None)
"""A segment's string members per name, in one pass, a long value as a view of the segment
(`ssemock.scan.large_streams`)."""
words: Callable[[bytes, tuple[bytes, ...]], list[tuple[int, int]]] | None = getattr(MODULE, "words", None)
"""Where lower-case words stand in data, any case, in one pass (`ssemock.scan.fields.word_hits`)."""
chunk_map: Callable[[list[int], list[float], list[int], int, bytes | None], bytes | None] | None = getattr(
    MODULE, "chunk_map", None
)
"""A recording's chunk map checked and laid out in one pass, or None (`ssemock.store.dumping`)."""
longest_gap: Callable[[list[float]], tuple[float, int] | None] | None = getattr(MODULE, "longest_gap", None)
"""A replay's longest recorded silence, in one pass (`ssemock.variants.timing.longest_silence`)."""
slices: Callable[..., Iterator[bytes]] | None = getattr(MODULE, "slices", None)
"""A replay's chunks cut from its body between a list's ends, or ``step`` bytes at a time up to
``size``, one C step a chunk (`ssemock.variants.chunking.Slices.iterate`)."""
ready: Callable[[Iterator[bytes]], AsyncIterator[bytes]] | None = getattr(MODULE, "ready", None)
"""An async iterator over an iterator, every step ready at once, no generator step a chunk
(`ssemock.plan.serving.ReplayStream`'s fast path)."""
