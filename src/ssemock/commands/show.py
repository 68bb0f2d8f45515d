"""``ssemock show``: chunk timing, gap and size statistics, a size histogram, a terminal timeline,
the decoded events and what they accumulate to."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import Any

import orjson

from .. import protocols
from ..framing.eventstream import is_frame
from ..framing.sse import is_event
from ..redaction.rules import mask_url
from ..store.cassette import (
    Interaction,
)
from .decoding import _WHAT, _accumulate, decode_response
from .show_grpc import format_call, summarize_call
from .show_websocket import format_session, summarize_session


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
        edges = [(max(lo, 2**k), min(hi, 2 ** (k + step) - 1)) for k in range(k_lo, k_hi + 1, step)]
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
    return text if len(text) <= size else text[: size - 1] + "…"


def _event_dict(event: Any) -> Any:
    if is_event(event):
        out: dict[str, Any] = {"event": event.event, "data": event.data}
        if event.id:
            out["id"] = event.id
        if event.retry is not None:
            out["retry"] = event.retry
        return out
    if is_frame(event):  # its name and payload, as an SSE event's
        return {
            "event": event.event_type or event.exception_type or event.message_type,
            "data": event.payload.decode("utf-8", "replace"),
        }
    return event


def summarize(x: Interaction, index: int = 0, *, events: bool = False) -> dict[str, Any]:
    """Everything ``ssemock show`` tells about one interaction, as plain JSON-able data."""
    if x.websocket is not None:
        return summarize_session(x, index)
    if x.grpc is not None:
        return summarize_call(x, index)
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
        "rpc": _rpc_methods(x),
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
        "note": decoded.note,
        "protocol": protocol,
        "protocol_version": _version(x),
        "accumulate_error": problem,
        "text": result.text if result else None,
        "tool_calls": [{"name": c.name, "arguments": c.arguments} for c in result.tool_calls]
        if result
        else [],
        "finish_reason": result.finish_reason if result else None,
        "group": None if x.group is None else {"id": x.group.id, "order": list(x.group.order)},
    }
    if events:
        out["event_list"] = [_event_dict(e) for e in decoded.events]
    return out


def _version(x: Interaction) -> str | None:
    """The protocol version this exchange speaks, for protocols that have several (MCP)."""
    found = protocols.labels([x])
    return found[0] if found else None


def _rpc_methods(x: Interaction) -> list[str]:
    """The JSON-RPC methods a request calls (MCP's ``initialize``, ``tools/call``; a batch's
    each), so a session's POSTs to one URL tell apart; a reply (no method) is ``response``."""
    body = x.request.json()
    messages = body if isinstance(body, list) else [body]
    if not any(isinstance(m, dict) and m.get("jsonrpc") == "2.0" for m in messages):
        return []
    return [
        str(m["method"]) if "method" in m else "response"
        for m in messages
        if isinstance(m, dict) and m.get("jsonrpc") == "2.0"
    ]


def _num(value: float) -> str:
    return f"{value:.1f}".rstrip("0").rstrip(".") if value != int(value) else str(int(value))


def format_summary(s: dict[str, Any], width: int = 60) -> str:
    """The human form of `summarize`'s result."""
    if s.get("websocket"):
        return format_session(s)
    if s.get("grpc"):
        return format_call(s)
    rpc = f"  ({', '.join(s['rpc'])})" if s.get("rpc") else ""  # the JSON-RPC methods of an MCP POST
    lines = [f"#{s['index']}  {s['method']} {s['url']}{rpc}"]
    state = "complete" if s["complete"] else "INCOMPLETE"
    if s["error"]:
        err = s["error"]
        state += f", recorded error {err.get('type')}: {err.get('message', '')!r}"
        if "at_byte" in err:
            state += f" at byte {err['at_byte']}"
    lines.append(f"    status {s['status']}  {s['content_type'] or '(no content-type)'}  {state}")
    if s.get("group"):
        lines.append(f"    part of session {s['group']['id']} (its timeline below)")
    lines.append(f"    body {s['body_bytes']} bytes in {s['chunks']} chunk{'s' if s['chunks'] != 1 else ''}")
    if s["chunks"]:
        lines.append(
            f"    time to first chunk {_num(s['first_chunk_ms'])} ms, last chunk at {_num(s['last_chunk_ms'])} ms"
        )
    if s["gaps_ms"]:
        g = s["gaps_ms"]
        lines.append(
            f"    gaps between chunks: min {_num(g['min'])} ms, median {_num(g['median'])} ms, "
            f"max {_num(g['max'])} ms"
        )
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
            lines.append(
                f"    timeline (one column = {_num(s['last_chunk_ms'] / (width - 1))} ms; "
                "taller = more chunks):"
            )
            lines.append(f"      |{s['timeline']}|")
            right = f"{_num(s['last_chunk_ms'])} ms"
            lines.append(f"      0 ms{right:>{width + 2 - 4}}")
        else:
            lines.append("    timeline: every chunk at t=0 ms (no timing recorded)")
    what = _WHAT[s["stream"]]
    if s["stream"] == "other":
        lines.append(f"    events: none ({what})")
    else:
        spoken = s.get("protocol_version") or s["protocol"]  # with its version where it has several
        lines.append(f"    events: {s['events']} {what}; protocol {spoken or 'unknown'}")
    if s["decode_error"]:
        lines.append(f"    decode error: {s['decode_error']}")
    if s.get("note"):
        lines.append(f"    note: {s['note']}")
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
