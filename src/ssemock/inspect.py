"""The logic behind ``ssemock show/validate/rechunk/redact/fix``: look at cassettes and repair them.

Everything here works on [`Cassette`][ssemock.Cassette] objects and returns plain data
(dataclasses with ``to_dict()``) or text; the command line only parses arguments and prints.

* `summarize` / `format_summary` -- what ``show`` prints: chunk timing, gap and size
  statistics, a size histogram, a terminal timeline, the decoded events and what they accumulate to.
* `validate_file` -- what ``validate`` checks: the file loads, the body decodes, spec
  oddities (BOM, CR-only line endings, an unterminated last event, events after ``[DONE]``, an
  unknown protocol), secrets left behind, incomplete recordings.
* `rechunk` -- a new boundary map (and body, with transforms) from any strategy.
* `redact` -- the default redaction rules plus secrets scrubbed out of bodies, with the
  boundary map shifted to match.
* `repair` -- load a cassette whose boundary map disagrees with a hand-edited body.
"""

from __future__ import annotations

import bisect
import math
import os
import re
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import orjson

from . import framing, sse
from .accumulate import Accumulated, ProtocolError, accumulate, detect_protocol
from .cassette import (
    MAX_T_MS,
    Cassette,
    CassetteError,
    Interaction,
    Response,
    body_ends,
    parse_interaction,
    read_document,
    read_file,
)
from .chunking import Chunking, event_ends
from .framing.eventstream import is_frame
from .redact import REDACTED, find_secrets, mask_url, redact_request, redact_response, replace_spans
from .secrets import Secret, scan, scan_body, scan_header, scan_url
from .transforms import Transform
from .transforms import apply as apply_transforms

__all__ = [
    "Decoded", "FileReport", "Finding", "Rechunked", "Repair", "decode_response", "format_events",
    "format_summary", "format_validation", "rechunk", "rechunk_response", "redact", "remap_ends", "repair",
    "repair_file", "size_histogram", "stream_kind", "summarize", "timeline", "validate_cassette",
    "validate_file",
]

_BOM = b"\xef\xbb\xbf"


# -- decoding ------------------------------------------------------------------------------------

StreamKind = Literal["sse", "ndjson", "json_array", "eventstream", "other"]
_KINDS: dict[str, StreamKind] = {"sse": "sse", "ndjson": "ndjson", "json_array": "json_array",
                                 "eventstream": "eventstream"}
_WHAT = {"sse": "SSE events", "ndjson": "JSON lines", "json_array": "JSON array elements",
         "eventstream": "eventstream frames", "other": "not a stream"}


def stream_kind(content_type: str | None, body: bytes = b"") -> StreamKind:
    """The framing a recorded body decodes in (`ssemock.framing.detect`'s name: ``sse``,
    ``ndjson``, ``json_array``, ``eventstream``), or ``other`` for a body that is no stream.

    A content type a framing claims decides (text/event-stream, the JSON-lines types, AWS
    eventstream). Else the body: an eventstream prelude whose CRC checks, or a JSON array under a
    JSON content type or none (Gemini's stream without ``alt=sse``); and without a content type, a
    body that looks like JSON lines (``{`` first, several lines) is NDJSON, one with a ``data:``
    field SSE.
    """
    media = (content_type or "").split(";")[0].strip().lower()
    found = framing.detect(content_type, body)
    if media and found.content_type(media):
        return _KINDS[found.name]
    if found.name == "eventstream" or (found.name == "json_array" and media in ("", "application/json")):
        return _KINDS[found.name]  # found by its shape (no framing claims the content type)
    if not media and body:
        head = body.lstrip()
        if head.startswith(b"{") and body.rstrip().count(b"\n") >= 1:
            return "ndjson"
        if re.search(rb"(?:^|[\r\n])data:", body):
            return "sse"
    return "other"


@dataclass
class Decoded:
    """The reference decoding of one response body."""

    kind: StreamKind
    events: list[Any] = field(default_factory=list)  # ServerSentEvents, parsed JSON values or eventstream Frames
    error: str | None = None  # where the body stops decoding (a bad JSON line, array element or frame)


def decode_response(response: Response) -> Decoded:
    """Decode a recorded body with the reference decoder of its framing (see `stream_kind`)."""
    kind = stream_kind(response.header("content-type"), response.body)
    if kind == "other":
        return Decoded(kind)
    try:
        return Decoded(kind, list(framing.get(kind).decode(response.body)))
    except ValueError as exc:
        return Decoded(kind, [], str(exc))


def _accumulate(x: Interaction, decoded: Decoded,
                protocol: str | None = None) -> tuple[str | None, Accumulated | None, str | None]:
    """(protocol, result, problem): the detected (or given) protocol and the accumulated message."""
    if decoded.kind == "other" or decoded.error is not None:
        return None, None, None
    content_type = x.response.header("content-type")
    if protocol is None:
        try:
            protocol = detect_protocol(decoded.events, url=x.request.url, content_type=content_type)
        except ProtocolError:
            return None, None, None
    try:
        return protocol, accumulate(decoded.events, protocol), None
    except ProtocolError as exc:
        return protocol, None, str(exc)


# -- show ------------------------------------------------------------------------------------------

def _ms(seconds: float) -> float:
    return round(seconds * 1000, 1)


def _stats(values: Sequence[float]) -> dict[str, float] | None:
    if not values:
        return None
    return {"min": min(values), "median": statistics.median(values), "max": max(values)}


def size_histogram(sizes: Sequence[int], max_buckets: int = 8) -> list[dict[str, int]]:
    """Chunk sizes in a few buckets: one per size when they span few values, else powers of 2."""
    if not sizes:
        return []
    lo, hi = min(sizes), max(sizes)
    if hi - lo < max_buckets:
        edges = [(s, s) for s in range(lo, hi + 1)]
    else:
        k_lo, k_hi = lo.bit_length() - 1, hi.bit_length() - 1  # 2**k <= size < 2**(k+1)
        step = max(1, math.ceil((k_hi - k_lo + 1) / max_buckets))
        edges = [(max(lo, 2 ** k), min(hi, 2 ** (k + step) - 1)) for k in range(k_lo, k_hi + 1, step)]
    out = []
    for a, b in edges:
        out.append({"lo": a, "hi": b, "count": sum(1 for s in sizes if a <= s <= b)})
    return out


_EIGHTHS = " ▏▎▍▌▋▊▉"


def _bar(value: float, scale: float, width: int) -> str:
    """A horizontal bar of ``value / scale * width`` cells, in eighths of a cell."""
    if scale <= 0 or value <= 0:
        return ""
    eighths = max(1, round(value / scale * width * 8))
    return "█" * (eighths // 8) + (_EIGHTHS[eighths % 8] if eighths % 8 else "")


_LEVELS = "▁▂▃▄▅▆▇█"


def timeline(times: Sequence[float], width: int = 60) -> str:
    """One row of marks positioned by arrival time; taller marks where more chunks arrived."""
    if not times:
        return ""
    end = max(times)
    if end <= 0:
        return _LEVELS[-1]
    counts = [0] * width
    for t in times:
        counts[min(width - 1, int(t / end * (width - 1) + 0.5))] += 1
    top = max(counts)
    return "".join(_LEVELS[max(0, math.ceil(c / top * len(_LEVELS)) - 1)] if c else "·" for c in counts)


def _short(text: str, size: int = 160) -> str:
    return text if len(text) <= size else text[:size - 1] + "…"


def _event_dict(event: Any) -> Any:
    if sse.is_event(event):
        out: dict[str, Any] = {"event": event.event, "data": event.data}
        if event.id:
            out["id"] = event.id
        if event.retry is not None:
            out["retry"] = event.retry
        return out
    if is_frame(event):  # its name and payload, as an SSE event's
        return {"event": event.event_type or event.exception_type or event.message_type,
                "data": event.payload.decode("utf-8", "replace")}
    return event


def summarize(x: Interaction, index: int = 0, *, events: bool = False) -> dict[str, Any]:
    """Everything ``ssemock show`` tells about one interaction, as plain JSON-able data."""
    resp = x.response
    sizes = [len(c) for c in resp.chunks]
    times = resp.times
    gaps = [_ms(b - a) for a, b in zip(times, times[1:])]
    decoded = decode_response(resp)
    protocol, result, problem = _accumulate(x, decoded)
    out: dict[str, Any] = {
        "index": index,
        "method": x.request.method,
        "url": mask_url(x.request.url),
        "status": resp.status,
        "content_type": resp.header("content-type"),
        "complete": resp.complete,
        "error": resp.error,
        "body_bytes": len(resp.body),
        "chunks": len(sizes),
        "first_chunk_ms": _ms(times[0]) if times else None,
        "last_chunk_ms": _ms(times[-1]) if times else None,
        "gaps_ms": _stats(gaps),
        "chunk_bytes": _stats(sizes),
        "histogram": size_histogram(sizes),
        "timeline": timeline(times),
        "stream": decoded.kind,
        "events": len(decoded.events),
        "decode_error": decoded.error,
        "protocol": protocol,
        "accumulate_error": problem,
        "text": result.text if result else None,
        "tool_calls": [{"name": c.name, "arguments": c.arguments} for c in result.tool_calls] if result else [],
        "finish_reason": result.finish_reason if result else None,
    }
    if events:
        out["event_list"] = [_event_dict(e) for e in decoded.events]
    return out


def _num(value: float) -> str:
    return f"{value:.1f}".rstrip("0").rstrip(".") if value != int(value) else str(int(value))


def format_summary(s: dict[str, Any], width: int = 60) -> str:
    """The human form of `summarize`'s result."""
    lines = [f"#{s['index']}  {s['method']} {s['url']}"]
    state = "complete" if s["complete"] else "INCOMPLETE"
    if s["error"]:
        err = s["error"]
        state += f", recorded error {err.get('type')}: {err.get('message', '')!r}"
        if "at_byte" in err:
            state += f" at byte {err['at_byte']}"
    lines.append(f"    status {s['status']}  {s['content_type'] or '(no content-type)'}  {state}")
    lines.append(f"    body {s['body_bytes']} bytes in {s['chunks']} chunk{'s' if s['chunks'] != 1 else ''}")
    if s["chunks"]:
        lines.append(f"    time to first chunk {_num(s['first_chunk_ms'])} ms, last chunk at {_num(s['last_chunk_ms'])} ms")
    if s["gaps_ms"]:
        g = s["gaps_ms"]
        lines.append(f"    gaps between chunks: min {_num(g['min'])} ms, median {_num(g['median'])} ms, "
                     f"max {_num(g['max'])} ms")
    if s["histogram"]:
        c = s["chunk_bytes"]
        lines.append(f"    chunk sizes (min {c['min']}, median {_num(c['median'])}, max {c['max']} bytes):")
        top = max(b["count"] for b in s["histogram"])
        labels = [f"{b['lo']}" if b["lo"] == b["hi"] else f"{b['lo']}-{b['hi']}" for b in s["histogram"]]
        pad = max(len(label) for label in labels)
        for label, b in zip(labels, s["histogram"]):
            lines.append(f"      {label:>{pad}} B  {_bar(b['count'], top, 30):<30} {b['count']}")
    if s["chunks"]:
        if s["last_chunk_ms"]:
            lines.append(f"    timeline (one column = {_num(s['last_chunk_ms'] / (width - 1))} ms; "
                         "taller = more chunks):")
            lines.append(f"      |{s['timeline']}|")
            right = f"{_num(s['last_chunk_ms'])} ms"
            lines.append(f"      0 ms{right:>{width + 2 - 4}}")
        else:
            lines.append("    timeline: every chunk at t=0 ms (no timing recorded)")
    what = _WHAT[s["stream"]]
    if s["stream"] == "other":
        lines.append(f"    events: none ({what})")
    else:
        lines.append(f"    events: {s['events']} {what}; protocol {s['protocol'] or 'unknown'}")
    if s["decode_error"]:
        lines.append(f"    decode error: {s['decode_error']}")
    if s["accumulate_error"]:
        lines.append(f"    accumulate error: {s['accumulate_error']}")
    if s["text"] is not None:
        lines.append(f"    text ({len(s['text'])} chars): {_short(s['text'])!r}")
    for call in s["tool_calls"]:
        lines.append(f"    tool call: {call['name']}({_short(call['arguments'], 100)})")
    if s["finish_reason"]:
        lines.append(f"    finish reason: {s['finish_reason']}")
    if "event_list" in s:
        lines.extend(format_events(s["event_list"]))
    return "\n".join(lines)


def format_events(events: Sequence[Any]) -> list[str]:
    """One line per decoded event: ``[k] type  data`` (JSON lines as JSON)."""
    lines = []
    for k, e in enumerate(events):
        if isinstance(e, dict) and set(e) <= {"event", "data", "id", "retry"} and "data" in e:
            extra = "".join(f" {name}={e[name]!r}" for name in ("id", "retry") if name in e)
            lines.append(f"      [{k}] {e['event']}{extra}  {_short(e['data'], 140)}")
        else:
            lines.append(f"      [{k}] {_short(orjson.dumps(e).decode(), 140)}")
    return lines


# -- validate --------------------------------------------------------------------------------------

Level = Literal["problem", "warning", "note", "detail"]  # detail: shown with -v only


@dataclass
class Finding:
    level: Level
    message: str
    interaction: int | None = None

    def where(self) -> str:
        return "" if self.interaction is None else f"interaction {self.interaction}: "

    def to_dict(self) -> dict[str, Any]:
        return {"level": self.level, "interaction": self.interaction, "message": self.message}


@dataclass
class FileReport:
    """What ``ssemock validate`` found in one file."""

    path: str
    interactions: int = 0
    events: int = 0
    findings: list[Finding] = field(default_factory=list)

    def of(self, level: Level) -> list[Finding]:
        return [f for f in self.findings if f.level == level]

    @property
    def ok(self) -> bool:
        """No problems (warnings and notes allowed)."""
        return not self.of("problem")

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "ok": self.ok, "interactions": self.interactions, "events": self.events,
                "problems": [f.to_dict() for f in self.of("problem")],
                "warnings": [f.to_dict() for f in self.of("warning")],
                "notes": [f.to_dict() for f in self.of("note")]}


def _has_data_field(block: bytes) -> bool:
    return any(line == b"data" or line.startswith(b"data:") for line in re.split(rb"\r\n|\r|\n", block))


def _sse_oddities(body: bytes, events: Sequence[Any]) -> list[str]:
    """Spec corner cases a recorded SSE body exercises (worth knowing, not wrong)."""
    found = []
    if body.startswith(_BOM):
        found.append("the body starts with a UTF-8 BOM (a conforming decoder strips it; a naive one "
                     "sees it in the first field name)")
    bare_cr = len(re.findall(rb"\r(?!\n)", body))
    if bare_cr:
        found.append(f"CR-only line endings ({bare_cr} bare CR): many hand-written decoders split on LF only")
    try:
        body.decode("utf-8")
    except UnicodeDecodeError as exc:
        found.append(f"not valid UTF-8 at byte {exc.start}: a decoder sees U+FFFD there")
    ends = event_ends(body, sse=True)
    tail = body[ends[-1] if ends else 0:]
    if tail.strip(b"\r\n") and _has_data_field(tail.lstrip(b"\r\n")):
        found.append(f"unterminated last event: the last {len(tail)} bytes ({_short(repr(tail), 60)}) have "
                     "no blank line after them, so a conforming decoder drops that event")
    done = next((k for k, e in enumerate(events) if sse.is_event(e) and e.data == "[DONE]"), None)
    if done is not None and done < len(events) - 1:
        found.append(f"{len(events) - 1 - done} event(s) after [DONE] (event {done}); clients stop reading there")
    return found


def validate_cassette(cassette: Cassette, path: str, *, protocol: str | None = None) -> FileReport:
    """Check a loaded cassette: decodability, spec oddities, secrets, incomplete recordings.

    ``protocol``: accumulate every stream with this protocol instead of detecting one. A stream
    of no known protocol is plain SSE or JSON lines, which is fine: a detail (``-v``), not a warning."""
    report = FileReport(path, len(cassette.interactions))
    add = report.findings.append
    if not cassette.interactions:
        add(Finding("warning", "no interactions"))
    for i, x in enumerate(cassette.interactions):
        resp = x.response
        decoded = decode_response(resp)
        report.events += len(decoded.events)
        if decoded.error is not None:
            add(Finding("problem", f"the body does not decode as {_WHAT[decoded.kind]}: {decoded.error}", i))
        if decoded.kind == "sse":
            for oddity in _sse_oddities(resp.body, decoded.events):
                add(Finding("warning", oddity, i))
            if resp.body.strip() and not decoded.events and resp.complete:
                add(Finding("problem", f"no SSE event decodes from the {len(resp.body)}-byte body "
                                       "(no data field followed by a blank line)", i))
        if decoded.kind != "other" and decoded.events and 200 <= resp.status < 300:
            found, _, problem = _accumulate(x, decoded, protocol)
            if found is None:
                add(Finding("detail", f"plain {_WHAT[decoded.kind]}: no known protocol in the URL, content "
                                      "type or events (--protocol NAME accumulates it as one)", i))
            elif problem:
                add(Finding("warning", f"the reference accumulator ({found}) fails: {problem}", i))
            else:
                add(Finding("detail", f"protocol {found}", i))
        elif decoded.kind == "other" and resp.body:
            add(Finding("note", f"status {resp.status}, {resp.header('content-type') or 'no content type'}: "
                                "not a stream, not decoded", i))
        if not resp.complete:
            add(Finding("note", "recorded incomplete (the stream did not end normally)", i))
        if resp.error is not None:
            at = f" at byte {resp.error['at_byte']}" if "at_byte" in resp.error else ""
            add(Finding("note", f"recorded error {resp.error.get('type')}: "
                                f"{resp.error.get('message', '')!r}{at} (replays at the same byte)", i))
    for leak in find_secrets(cassette):
        m = re.match(r"interaction (\d+) (.*)", leak, re.DOTALL)
        add(Finding("problem", "secret left: " + (m.group(2) if m else leak) + " (run `ssemock redact`)",
                    int(m.group(1)) if m else None))
    return report


def validate_file(path: str | os.PathLike[str], *, protocol: str | None = None) -> FileReport:
    """Load and check one cassette file; a load failure is a problem of the report."""
    try:
        cassette = Cassette.load(path)
    except CassetteError as exc:
        return FileReport(str(path), findings=[Finding("problem", exc.reason, exc.interaction)])
    return validate_cassette(cassette, str(path), protocol=protocol)


def cassette_files(paths: Sequence[str | os.PathLike[str]]) -> list[Path]:
    """The cassette files named: files as given, folders searched recursively for ``*.json``
    (sorted; the ``.refused.json`` and ``.partial.json`` files ssemock keeps beside a cassette are
    not cassettes of the suite and are left out of a folder)."""
    found: list[Path] = []
    for given in paths:
        path = Path(given)
        if path.is_dir():
            found.extend(sorted(p for p in path.rglob("*.json")
                                if p.is_file() and not p.name.endswith((".refused.json", ".partial.json"))))
        else:
            found.append(path)
    return found


def format_validation(report: FileReport, *, verbose: bool = False) -> list[str]:
    """One line for a file without problems or warnings; else a header and one line per finding
    (``verbose``: the details too, such as each stream's protocol)."""
    size = f"{report.interactions} interaction{'s' if report.interactions != 1 else ''}, {report.events} events"
    notes = report.of("note") + (report.of("detail") if verbose else [])
    if report.ok and not report.of("warning"):
        tail = "; ".join(f"{n.where()}{n.message}" for n in notes)
        return [f"ok    {report.path} ({size})" + (f" — note: {tail}" if tail else "")]
    head = "FAIL " if not report.ok else "warn "
    lines = [f"{head} {report.path}" + (f" ({size})" if report.interactions else "")]
    levels: tuple[Level, ...] = ("problem", "warning", "note", "detail") if verbose else ("problem", "warning", "note")
    for level in levels:
        for f in report.of(level):
            lines.append(f"  {report.path}: {f.where()}{level}: {f.message}")
    return lines


# -- rechunk ---------------------------------------------------------------------------------------

@dataclass
class Rechunked:
    """How one interaction was re-chunked."""

    index: int
    before: int  # chunks before
    after: int  # chunks after
    body_before: int
    body_after: int
    transformed: bool
    note: str | None = None
    chunks: list[tuple[float, bytes]] = field(default_factory=list)  # (time s, bytes), for --preview


def rechunk_response(response: Response, chunking: Chunking,
                     transforms: Sequence[Transform] = ()) -> tuple[Response, str | None]:
    """A new response cut by ``chunking`` (after ``transforms``, for SSE bodies).

    A new chunk's time is the recorded time of the chunk that held its last byte.
    """
    body, ends, times = response.body, list(response.ends), list(response.times)
    note = None
    if transforms:
        if stream_kind(response.header("content-type"), body) == "sse":
            body, ends = apply_transforms(transforms, body, ends)
        else:
            note = "transforms apply to text/event-stream bodies only: left as it is"
    recorded = sorted({e for e in ends if 0 < e <= len(body)})
    new_ends = chunking.ends(body, recorded, content_type=response.header("content-type"))
    new_times = []
    for e in new_ends:
        k = bisect.bisect_left(ends, e)  # the first old chunk whose (carried) end covers byte e-1
        new_times.append(times[min(k, len(times) - 1)] if times else 0.0)
    return Response(response.status, list(response.headers), body, new_ends, new_times, response.complete,
                    response.error), note


def rechunk(cassette: Cassette, chunking: Chunking, transforms: Sequence[Transform] = (),
            *, keep_chunks: int = 0) -> list[Rechunked]:
    """Re-chunk every interaction in place; ``keep_chunks``: how many new chunks to report."""
    out = []
    for i, x in enumerate(cassette.interactions):
        old = x.response
        new, note = rechunk_response(old, chunking, transforms)
        x.response = new
        shown = list(zip(new.times, new.chunks))[:keep_chunks] if keep_chunks else []
        out.append(Rechunked(i, len(old.ends), len(new.ends), len(old.body), len(new.body),
                             bool(transforms) and note is None, note, shown))
    return out


# -- redact ----------------------------------------------------------------------------------------

Edit = tuple[int, int, int]  # old start, old end, new length


_TOKEN_TAIL = re.compile(rb"[A-Za-z0-9]+")
_TOKEN_TAIL_TEXT = re.compile(r"[A-Za-z0-9]+")


def _spans(data: bytes | str, found: list[Secret]) -> list[tuple[int, int, str]]:
    """The spans to replace, sorted and apart (overlapping finds become one); each swallows the
    letters and digits right after it (what is left of a token that a percent-escape cut short),
    so no ``REDACTEDA`` remains for the next scan to take for a token again."""
    merged: list[tuple[int, int, str]] = []
    for s in sorted(found, key=lambda s: s.start):
        tail = _TOKEN_TAIL.match(data, s.end) if isinstance(data, bytes) else _TOKEN_TAIL_TEXT.match(data, s.end)
        end = tail.end() if tail else s.end
        if merged and s.start < merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]), merged[-1][2])
        else:
            merged.append((s.start, end, s.what))
    return merged


def _scrub(data: bytes, found: list[Secret]) -> tuple[bytes, list[Edit], list[str]]:
    """Replace every secret ``found`` in ``data`` with REDACTED: the new bytes, the edits, what
    was found (overlapping finds become one edit)."""
    if not found:
        return data, [], []
    merged = _spans(data, found)
    pieces, edits, what, pos = [], [], [], 0
    for a, b, kind in merged:
        pieces += [data[pos:a], REDACTED.encode()]
        edits.append((a, b, len(REDACTED)))
        what.append(f"{kind} at byte {a}")
        pos = b
    pieces.append(data[pos:])
    return b"".join(pieces), edits, what


def _remap_offset(offset: int, edits: Sequence[Edit]) -> int:
    """Where ``offset`` (in the original) lands after ``edits`` (sorted, not overlapping)."""
    shift = 0
    for a, b, n in edits:
        if offset >= b:
            shift += n - (b - a)
        elif offset > a:
            return a + shift + min(offset - a, n)
        else:
            break
    return offset + shift


def remap_ends(ends: Sequence[int], times: Sequence[float], edits: Sequence[Edit],
               size: int) -> tuple[list[int], list[float]]:
    """Carry a boundary map over ``edits``: later ends shift by the length difference.

    Two chunks whose ends fall together (a boundary inside a secret that got shorter) merge; the
    merged chunk keeps the later time (the time its last byte arrived).
    """
    new_ends: list[int] = []
    new_times: list[float] = []
    for e, t in zip(ends, times):
        ne = min(size, _remap_offset(e, edits))
        if new_ends and ne <= new_ends[-1]:
            new_times[-1] = max(new_times[-1], t)
            continue
        if ne <= 0:
            continue
        new_ends.append(ne)
        new_times.append(t)
    if size and (not new_ends or new_ends[-1] != size):
        new_ends.append(size)
        new_times.append(new_times[-1] if new_times else 0.0)
    return new_ends, new_times


def _scrub_text(text: str, found: list[Secret]) -> tuple[str, list[str]]:
    spans = [(a, b) for a, b, _ in _spans(text, found)]
    return replace_spans(text, spans, REDACTED), [f"{f.what} at character {f.start}" for f in found]


def _scrub_json(value: Any) -> tuple[Any, list[str]]:
    if isinstance(value, str):
        return _scrub_text(value, scan(value))
    if isinstance(value, dict):
        found: list[str] = []
        out = {}
        for k, v in value.items():
            out[k], f = _scrub_json(v)
            found += f
        return out, found
    if isinstance(value, list):
        items = [_scrub_json(v) for v in value]
        return [v for v, _ in items], [f for _, fs in items for f in fs]
    return value, []


def redact(cassette: Cassette) -> list[str]:
    """Apply the default redaction rules and scrub secrets out of bodies, in place.

    Returns what changed, one line each (``interaction 0 response.body: ...``). A response body
    that changes length gets its boundary map shifted to match.
    """
    changes: list[str] = []
    for i, x in enumerate(cassette.interactions):
        req = x.request
        red = redact_request(req)
        if red.url != req.url:
            changes.append(f"interaction {i} request.url: query parameters named like keys")
        for (k, v), (_, rv) in zip(req.headers, red.headers):
            if v != rv:
                changes.append(f"interaction {i} request.headers[{k!r}]")
        url, found = _scrub_text(red.url, scan_url(red.url))
        changes += [f"interaction {i} request.url: {f}" for f in found]
        headers = []
        for k, v in red.headers:
            v, found = _scrub_text(v, scan_header(k, v))
            changes += [f"interaction {i} request.headers[{k!r}]: {f}" for f in found]
            headers.append((k, v))
        body = red.body
        if body:
            body, _, found = _scrub(body, scan_body(body))
            changes += [f"interaction {i} request.body: {f}" for f in found]
        red.url, red.headers, red.body = url, headers, body
        x.request = red

        resp = x.response
        before = list(resp.headers)
        resp = redact_response(resp)
        for (k, v), (_, rv) in zip(before, resp.headers):
            if v != rv:
                changes.append(f"interaction {i} response.headers[{k!r}]")
        rheaders = []
        for k, v in resp.headers:
            v, found = _scrub_text(v, scan_header(k, v))
            changes += [f"interaction {i} response.headers[{k!r}]: {f}" for f in found]
            rheaders.append((k, v))
        new_body, edits, found = _scrub(resp.body, scan(resp.body))
        if found:
            changes += [f"interaction {i} response.body: {f}" for f in found]
            ends, times = remap_ends(resp.ends, resp.times, edits, len(new_body))
            error = resp.error
            if error is not None and isinstance(error.get("at_byte"), int):
                error = {**error, "at_byte": _remap_offset(error["at_byte"], edits)}
            resp = Response(resp.status, rheaders, new_body, ends, times, resp.complete, error)
        else:
            resp.headers = rheaders
        if resp.error is not None:
            error, found = _scrub_json(resp.error)
            changes += [f"interaction {i} response.error: {f}" for f in found]
            resp.error = error
        x.response = resp
    return changes


# -- fix -------------------------------------------------------------------------------------------

@dataclass
class Repair:
    """What `repair` did to one interaction (``changed`` False: it was fine)."""

    interaction: int
    changed: bool
    message: str


def _old_map(value: Any) -> list[tuple[float, int]]:
    """The well-formed ``[t_ms, end]`` pairs of a (possibly broken) boundary map (a time past
    ``MAX_T_MS`` is not one: the save would refuse it)."""
    if not isinstance(value, list):
        return []
    out = []
    for pair in value:
        if (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[1], int)
                and not isinstance(pair[1], bool) and isinstance(pair[0], (int, float))
                and not isinstance(pair[0], bool) and math.isfinite(pair[0]) and pair[0] <= MAX_T_MS):
            out.append((float(pair[0]), pair[1]))
    return out


def _repair_map(old: list[tuple[float, int]], body: bytes,
                content_type: str | None) -> tuple[list[int], list[float], str]:
    """A boundary map for ``body`` from a broken ``old`` one: (ends, times in s, what was done)."""
    size = len(body)
    times_ms: list[float] = []
    for t, _ in old:  # made non-decreasing and >= 0
        times_ms.append(max(0.0, t, times_ms[-1] if times_ms else 0.0))
    old_size = old[-1][1] if old else None
    if not size:
        return [], [], "the body is empty: the map is now empty"
    if old_size is not None and old_size != size:
        ends = body_ends(body, content_type)
        n, count = len(times_ms), len(ends)
        times = [times_ms[math.ceil((k + 1) * n / count) - 1] / 1000 for k in range(count)]
        # the load error before it already says where the map and the body disagree: said once
        return ends, times, (f"the body was edited: rebuilt the map with one chunk per event ({count} chunks, "
                             f"was {len(old)}), "
                             "times taken from the old map by event order")
    ends, times = [], []
    for (_, e), t_ms in zip(old, times_ms):
        if 0 < e <= size and (not ends or e > ends[-1]):
            ends.append(e)
            times.append(t_ms / 1000)
    dropped = len(old) - len(ends)
    added = ""
    if not ends or ends[-1] != size:
        ends.append(size)
        times.append(times[-1] if times else 0.0)
        added = f", added a last boundary at byte {size}"
    if not old:
        return ends, times, f"no usable boundary map: one chunk of {size} bytes at t=0"
    return ends, times, (f"kept {len(ends) - bool(added)} of {len(old)} boundaries (dropped {dropped} that did "
                         f"not increase or fell outside the {size}-byte body{added})")


def repair(raw: bytes | str, path: str | os.PathLike[str] | None = None) -> tuple[Cassette, list[Repair]]:
    """Load cassette JSON without trusting its boundary maps, rebuilding the ones that are wrong.

    Raises [`CassetteError`][ssemock.CassetteError] when the file cannot be repaired (not JSON, unknown version, an
    interaction broken in a way other than its boundary map).
    """
    items = read_document(raw, path=path)
    interactions: list[Interaction] = []
    repairs: list[Repair] = []

    one = parse_interaction
    for i, item in enumerate(items):
        try:
            interactions.append(one(item))
            repairs.append(Repair(i, False, "ok"))
            continue
        except CassetteError as exc:
            first = exc.reason
        if not isinstance(item, dict) or not isinstance(item.get("response"), dict):
            raise CassetteError(first, path=path, interaction=i)
        response = item["response"]
        stripped = {**item, "response": {k: v for k, v in response.items() if k != "chunks"}}
        try:
            x = one(stripped)
        except CassetteError as exc:
            raise CassetteError(f"{exc.reason} (not a boundary-map problem: fix it by hand)",
                                path=path, interaction=i) from None
        ends, times, what = _repair_map(_old_map(response.get("chunks")), x.response.body,
                                        x.response.header("content-type"))
        x.response.ends, x.response.times = ends, times
        error = x.response.error
        if error is not None and isinstance(error.get("at_byte"), int) and error["at_byte"] > len(x.response.body):
            x.response.error = {**error, "at_byte": len(x.response.body)}
        interactions.append(x)
        repairs.append(Repair(i, True, f"{first.split(' — ')[0]}; {what}"))
    return Cassette(interactions, path=path), repairs


def repair_file(path: str | os.PathLike[str]) -> tuple[Cassette, list[Repair]]:
    """`repair` on a file (CassetteError when it cannot be read)."""
    return repair(read_file(path), path)

