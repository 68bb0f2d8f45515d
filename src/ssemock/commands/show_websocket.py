"""``ssemock show`` and ``ssemock validate`` for a WebSocket interaction: the handshake, the
session's protocol (from its URL, else its received messages) and what its responses fold to, then
the conversation (per message its direction, time, kind, size and a summary of its JSON ``type``,
or Gemini's top-level key); and the checks of a session as stored (frame order, UTF-8 of text
messages, close codes)."""

from __future__ import annotations

from typing import Any

from ..protocols.accumulate import Accumulated, ProtocolError, accumulate_session, detect_protocol
from ..redaction.rules import mask_text, mask_url
from ..store.model import Interaction
from ..store.websocket import Message, WebSocket, valid_close_code

__all__ = ["format_session", "message_what", "session_problems", "session_protocol", "summarize_session"]


def _what(value: Any) -> str:
    if isinstance(value, dict):
        kind = value.get("type")
        if isinstance(kind, str):
            return kind
        keys = [k for k in value if isinstance(k, str)]
        if keys:
            return keys[0] if len(keys) == 1 else f"{keys[0]} +{len(keys) - 1}"
    return ""


def message_what(m: Message) -> str:
    """A message's summary: its JSON ``type`` (or its one top-level key), else its kind and size."""
    what = _what(m.json())
    return what or f"<{m.type}, {len(m.payload)} B>"


def session_protocol(
    x: Interaction, protocol: str | None = None
) -> tuple[str | None, list[Accumulated], str | None]:
    """(protocol, one result per response, problem): the session's protocol, detected from its
    URL, else from its received messages (or the one given), and its received messages folded by
    it; (None, [], None) when no protocol claims the session."""
    ws = x.websocket
    assert ws is not None
    received = [m.payload for m in ws.received()]
    if protocol is None:
        try:
            protocol = detect_protocol([m.json() for m in ws.received()], url=x.request.url)
        except ProtocolError:
            return None, [], None
    try:
        return protocol, accumulate_session(received, protocol), None
    except ProtocolError as exc:
        return protocol, [], str(exc)


def summarize_session(x: Interaction, index: int = 0) -> dict[str, Any]:
    """Everything ``ssemock show`` tells about one WebSocket interaction, JSON-able."""
    ws = x.websocket
    assert ws is not None
    messages = []
    for m in ws.messages:
        messages.append(
            {
                "direction": m.direction,
                "t_ms": round(m.t * 1000, 1),
                "type": m.type,
                "bytes": len(m.payload),
                "what": _what(m.json()),
            }
        )
    protocol, results, problem = session_protocol(x)
    return {
        "index": index,
        "method": x.request.method,
        "url": mask_url(x.request.url),
        "status": x.response.status,
        "websocket": True,
        "protocol": protocol,
        "accumulate_error": problem,
        "responses": [
            {
                "text": r.text,
                "tool_calls": [
                    {"type": c.type, "name": c.name, "arguments": c.arguments} for c in r.tool_calls
                ],
                "complete": r.complete,
            }
            for r in results
        ],
        "subprotocol": ws.subprotocol,
        "extensions": ws.extensions,
        "sent": len(ws.sent()),
        "received": len(ws.received()),
        "control_frames": sum(n.kind in ("ping", "pong") for n in ws.frame_map),
        "fragmented": sum(n.kind == "fragments" for n in ws.frame_map),
        "wire_chunks": len(ws.wire.ends),
        "close": {
            "code": ws.close.code,
            "reason": mask_text(ws.close.reason),
            "by": ws.close.by,
            "clean": ws.close.clean,
        },
        "messages": messages,
        "group": None if x.group is None else {"id": x.group.id, "order": list(x.group.order)},
    }


def format_session(s: dict[str, Any]) -> str:
    """The human form of `summarize_session`'s result."""
    lines = [f"#{s['index']}  WebSocket {s['url']}"]
    extra = "".join(
        [
            f"  subprotocol {s['subprotocol']}" if s["subprotocol"] else "",
            f"  {s['extensions']}" if s["extensions"] else "",
        ]
    )
    lines.append(f"    handshake {s['status']}{extra}")
    if s.get("group"):
        lines.append(f"    part of session {s['group']['id']} (its timeline below)")
    if s["protocol"] is None:
        lines.append("    protocol unknown")
    elif s["accumulate_error"]:
        lines.append(
            f"    protocol {s['protocol']}; the reference accumulator fails: {s['accumulate_error']}"
        )
    else:
        done = sum(r["complete"] for r in s["responses"])
        count = len(s["responses"])
        lines.append(
            f"    protocol {s['protocol']}: {count} response{'s' if count != 1 else ''}, {done} complete"
        )
        for r in s["responses"]:
            calls = ", ".join(c["name"] or c["type"] for c in r["tool_calls"])
            lines.append(f"      text {r['text']!r}" + (f"; calls {calls}" if calls else ""))
    lines.append(
        f"    {s['sent']} sent, {s['received']} received, {s['control_frames']} control frames, "
        f"{s['fragmented']} fragmented, {s['wire_chunks']} wire chunks"
    )
    for m in s["messages"]:
        arrow = "->" if m["direction"] == "send" else "<-"
        lines.append(f"    {m['t_ms']:>9.1f} ms {arrow} {m['type']:<6} {m['bytes']:>7} B  {m['what']}")
    c = s["close"]
    who = f"by the {c['by']}" if c["by"] else "with no close frame"
    lines.append(f"    closed {c['code']} {c['reason']!r} {who}{', clean' if c['clean'] else ''}")
    return "\n".join(lines)


def session_problems(ws: WebSocket) -> list[str]:
    """What is wrong with a session as stored: text messages that are not UTF-8, times that go
    back, frames noted past their messages, close codes and reasons no frame may carry."""
    problems = []
    last = {"send": 0.0, "recv": 0.0}
    for k, m in enumerate(ws.messages):
        if m.t < last[m.direction]:
            problems.append(f"websocket.messages[{k}]: its time goes back (frame order)")
        last[m.direction] = m.t
        if m.type == "text" and isinstance(m.data, str):
            try:
                m.data.encode("utf-8")
            except UnicodeEncodeError:
                problems.append(f"websocket.messages[{k}]: a text message that is not valid UTF-8")
    counts = {"send": len(ws.sent()), "recv": len(ws.received())}
    for k, n in enumerate(ws.frame_map):
        if n.index > counts[n.direction]:
            problems.append(
                f"websocket.frames[{k}]: notes message {n.index}, past the {counts[n.direction]} messages"
            )
    if ws.close.by is not None and ws.close.code is not None and not valid_close_code(ws.close.code):
        if not (ws.close.code == 1005 and not ws.close.reason):  # 1005: a close frame with no code
            problems.append(f"websocket.close: code {ws.close.code} may not appear in a close frame")
    if len(ws.close.reason.encode("utf-8", "surrogatepass")) > 123:
        problems.append("websocket.close: a reason over 123 bytes, more than a close frame carries")
    return problems
