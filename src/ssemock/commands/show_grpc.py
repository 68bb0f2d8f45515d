"""``ssemock show`` and ``ssemock validate`` for a gRPC call: the method path, its shape, how many
messages went each way ("7 messages"), when the first response and the status arrived, the
metadata and trailers by name, then each message (direction, time, size, an excerpt); and the
checks of a call as stored."""

from __future__ import annotations

from typing import Any, Literal

from ..redaction.rules import mask_text, mask_url
from ..store.model import Interaction

__all__ = ["call_problems", "format_call", "summarize_call"]


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1000, 1)


def _excerpt(data: bytes, most: int = 60) -> str:
    text = data.decode("utf-8", "replace")
    return mask_text(text if len(text) <= most else text[:most] + "...")


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def summarize_call(x: Interaction, index: int = 0) -> dict[str, Any]:
    """Everything ``ssemock show`` tells about one gRPC call, JSON-able."""
    call = x.grpc
    assert call is not None
    received = call.received()
    return {
        "index": index,
        "grpc": True,
        "method": call.method,
        "url": mask_url(x.request.url),
        "kind": call.kind,
        "messages": len(call.messages),
        "sent": len(call.sent()),
        "received": len(received),
        "first_response_ms": _ms(received[0].t) if received else None,
        "status": {
            "code": call.status.code,
            "details": mask_text(call.status.details),
            "t_ms": _ms(call.status.t),
        },
        "metadata": sorted({k for k, _ in x.response.headers}),
        "trailers": sorted({k for k, _ in call.trailers}),
        "wire_chunks": len(call.wire.ends),
        "message_list": [
            {"direction": m.direction, "t_ms": _ms(m.t), "bytes": len(m.data), "excerpt": _excerpt(m.data)}
            for m in call.messages
        ],
    }


def format_call(s: dict[str, Any]) -> str:
    """The human form of `summarize_call`'s result."""
    lines = [f"#{s['index']}  gRPC {s['method']}  {s['kind']}  ({s['url']})"]
    status = s["status"]
    ended = f"status {status['code']}" + (f" {status['details']!r}" if status["details"] else "")
    if status["t_ms"] is not None:
        ended += f" at {status['t_ms']} ms"
    first = "" if s["first_response_ms"] is None else f", first response at {s['first_response_ms']} ms"
    lines.append(
        f"    {_plural(s['messages'], 'message')} ({s['sent']} sent, {s['received']} received){first}; {ended}"
    )
    if s["metadata"] or s["trailers"]:
        lines.append(
            f"    metadata: {', '.join(s['metadata']) or 'none'}; trailers: {', '.join(s['trailers']) or 'none'}"
        )
    if s["wire_chunks"]:
        lines.append(f"    {_plural(s['wire_chunks'], 'DATA frame')} received")
    for m in s["message_list"]:
        arrow = "->" if m["direction"] == "send" else "<-"
        lines.append(f"    {m['t_ms']:>9.1f} ms {arrow} {m['bytes']:>7} B  {m['excerpt']!r}")
    return "\n".join(lines)


def call_problems(x: Interaction) -> list[tuple[Literal["problem", "detail"], str]]:
    """What a call as stored tells a user: ``(severity, message)``: a failed status (a detail: a
    recording of an error is often what a test wants), a unary call that ended OK without its
    response (a problem: a client gets nothing to return)."""
    call = x.grpc
    assert call is not None
    found: list[tuple[Literal["problem", "detail"], str]] = []
    if call.status.code != "OK":
        found.append(
            ("detail", f"the call ended with {call.status.code}: {mask_text(call.status.details)!r}")
        )
    elif call.kind.endswith("_unary") and not call.received():
        found.append(("problem", f"a {call.kind} call that ended OK has no response message"))
    return found
