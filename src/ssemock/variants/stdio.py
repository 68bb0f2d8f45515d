"""What the variants mean on a child's pipes: the steps a replayed ``stdio`` session's relay runs
(`ssemock.stacks.stdio_relay`), pure values from the recorded lines.

The recording is a conversation: the stdout lines the child wrote after the client's stdin line
k are written once the client has sent line k (its stdin is checked against the recording's, in
order). The stdout bytes between two stdin lines are cut into writes by the chunking (the reads
the child made under ``as_recorded``, a JSON-RPC line across writes under ``mid_line``, the lines
coalesced into one write, ``bytewise``...; the lines are JSON lines, so ``per_event`` writes one
line a write); ``timing`` sleeps the recorded
gaps (``recorded``, ``scaled:F``). Faults, counted over the session's stdout lines (its events):

* ``disconnect:after_event=N`` / ``after_byte=N``: the child exits (status 1) after N lines /
  bytes of stdout, mid-stream;
* ``stall:before_event=N,seconds=S``: no stdout for S seconds before line N (the client's own
  read timeout ends its wait when it is shorter; the client closing stdin ends the stall);
* ``trailing_data:at=garbage``: garbage glued to the last stdout line (not JSON any more);
  ``trailing_data``: a JSON line after the last;
* ``truncate``: the last stdout line left out; ``truncate:at=mid_event``: cut halfway, then the
  child exits (status 1).

Other faults (an HTTP status, a provider's error event, WebSocket closes) have no meaning on a
pipe and leave the session as recorded.
"""

from __future__ import annotations

import base64
import bisect
from collections.abc import Sequence
from typing import Any

from ..store.stdio import StdioSession
from .chunking import Chunking
from .fault_model import Fault
from .stream_faults import _Disconnect, _Stall, _TrailingData, _Truncate
from .timing import Timing

__all__ = ["EXIT_MID_STREAM", "steps"]

EXIT_MID_STREAM = 1
"""The status of a child a ``disconnect`` or ``truncate:at=mid_event`` fault ends."""

_NDJSON = "application/x-ndjson"
_GARBAGE = b"garbage"
_TRAILING = b'{"ssemock": "data after the terminator"}\n'


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


class _Steps:
    """The steps as they are built: stdout bytes held until the next stdin line, stderr or end."""

    def __init__(self, chunking: Chunking, timing: Timing) -> None:
        self.out: list[list[Any]] = []
        self.chunking, self.factor = chunking, timing.factor
        self.pending: list[
            tuple[bytes, float, tuple[int, ...] | None]
        ] = []  # (stdout line, its time, its reads)
        self.last_t = 0.0

    def flush(self) -> None:
        if not self.pending:
            return
        body = b"".join(line for line, _, _ in self.pending)
        line_ends, read_ends = [0], []
        for line, _, reads in self.pending:
            read_ends += [line_ends[-1] + r for r in (reads if reads is not None else (len(line),))]
            line_ends.append(line_ends[-1] + len(line))
        recorded = line_ends[1:]
        if self.chunking.name == "as_recorded":  # the child's own reads (the last one ends here)
            recorded = [e for e in read_ends if e < len(body)] + [len(body)]
        start = 0
        for end in self.chunking.ends(body, recorded, content_type=_NDJSON):
            if self.factor is not None:  # the chunk is due when the line it ends in arrived
                t = self.pending[min(bisect.bisect_left(line_ends, end) - 1, len(self.pending) - 1)][1]
                if t > self.last_t:
                    self.out.append(["sleep", (t - self.last_t) * self.factor])
                    self.last_t = t
            self.out.append(["write", 1, _b64(body[start:end])])
            start = end
        self.pending = []

    def at(self, t: float) -> None:
        """A step not timed by the chunking (stdin, stderr) happens at recorded time ``t``."""
        if self.factor is not None and t > self.last_t:
            self.out.append(["sleep", (t - self.last_t) * self.factor])
        self.last_t = max(self.last_t, t)


def _stdout_faults(
    lines: list[bytes], faults: Sequence[Fault]
) -> tuple[list[bytes], int | None, dict[int, float], int | None]:
    """The stdout lines as the faults leave them, after how many of them the child exits
    mid-stream (None: as recorded), the stalls before line N (seconds), and the first line a
    fault changed, left out or held back (None: none did)."""
    lines, exit_after, stalls, changed = list(lines), None, {}, []
    for fault in faults:
        if fault.on is not None:  # aimed at HTTP interactions
            continue
        if isinstance(fault, _Disconnect):
            if fault.after_event is not None:
                exit_after = min(fault.after_event, len(lines))
                lines = lines[:exit_after]
            else:
                size, kept = fault.after_byte or 0, []
                for line in lines:
                    if size <= 0:
                        break
                    kept.append(line[:size])
                    size -= len(line)
                lines, exit_after = kept, len(kept)
            changed.append(exit_after)
        elif isinstance(fault, _Stall):
            stalls[fault.before_event] = fault.seconds
            changed.append(fault.before_event)
        elif isinstance(fault, _TrailingData) and lines:
            if fault.at == "garbage":
                last = lines[-1]
                body = last.rstrip(b"\r\n")
                lines[-1] = body + _GARBAGE + last[len(body) :]
                changed.append(len(lines) - 1)
            else:
                lines.append(_TRAILING)
                changed.append(len(lines) - 1)
        elif isinstance(fault, _Truncate) and lines:
            if fault.at == "mid_event":
                lines[-1] = lines[-1][: max(1, len(lines[-1]) // 2)]
                exit_after = len(lines)
            else:
                lines.pop()
            changed.append(len(lines) - 1 if fault.at == "mid_event" else len(lines))
    return lines, exit_after, stalls, min(changed, default=None)


def steps(
    session: StdioSession, chunking: Chunking, timing: Timing, faults: Sequence[Fault] = ()
) -> list[list[Any]]:
    """The relay's steps that replay ``session`` under these variants. From the first stdout
    line a fault changes on, the client's stdin is no longer compared (``["lenient"]``): a client
    answers a fault in its own way (a cancellation after its timeout, a retry)."""
    recorded = [x for x in session.lines if x.stream == "stdout" and x.data is not None]
    faulted, exit_after, stalls, changed = _stdout_faults(
        [x.data for x in recorded if x.data is not None], faults
    )
    plan = _Steps(chunking, timing)
    k = written = 0
    for x in session.lines:
        if x.stream == "stdout":
            if changed == written:
                plan.flush()
                plan.out.append(["lenient"])
                changed = None
            if written == exit_after or written >= len(faulted):
                continue
            if written in stalls:
                plan.flush()
                plan.out.append(["stall", stalls[written]])
            line = faulted[written]
            plan.pending.append((line, x.t, x.reads if line == x.data else None))  # a changed line: one read
            written += 1
            if written == len(recorded):  # a line a fault adds after the last
                if changed == written:
                    plan.flush()
                    plan.out.append(["lenient"])
                    changed = None
                plan.pending += [(line, x.t, None) for line in faulted[written:]]
            if written == exit_after:
                plan.flush()
                plan.out.append(["exit", EXIT_MID_STREAM])
                return plan.out
            continue
        plan.flush()
        plan.at(x.t)
        if x.stream == "stderr" and x.data is not None:
            plan.out.append(["write", 2, _b64(x.data)])
        elif x.data is None:
            plan.out.append(["end"])
        else:
            plan.out.append(["expect", k, _b64(x.data)])
            k += 1
    plan.flush()
    return plan.out
