"""mkdocs hook: the fault x framing table of ``docs/guide/faults.md``, generated at build time.

The page holds the marker ``<!-- ssemock-fault-matrix -->``; this hook replaces it with one row
per fault variant (:data:`ssemock.faults.VARIANTS`) and one column per framing (each registered
framing's ``example`` body), every cell what the fault really does to that body: it runs
:func:`ssemock.plan_response` on it, or shows the refusal. ``tests/test_fault_matrix.py``
checks the same cells byte for byte through every client stack, and imports :func:`render` to
check the table covers them.
"""

from __future__ import annotations

from typing import Any

MARKER = "<!-- ssemock-fault-matrix -->"
WS_MARKER = "<!-- ssemock-ws-fault-matrix -->"
# which clients offer permessage-deflate as they connect by default (the deflate re-framing needs it)
OFFERS_DEFLATE = {
    "websockets": True,
    "websockets.sync": True,
    "websockets.legacy": True,
    "aiohttp.ws": False,  # ws_connect(compress=0) by default; compress=15 offers it
    "openai SDK": False,  # realtime.connect / responses.connect pass compression=None
    "google-genai": True,  # websockets' default
}


def _show(data: bytes, most: int = 48) -> str:
    """Bytes as readable escaped text in a code span (binary as a byte count)."""
    if any(b < 9 or 13 < b < 32 for b in data):
        return f"{len(data)} binary bytes"
    text = repr(data[:most])[2:-1] + ("…" if len(data) > most else "")
    return "`" + text.replace("|", "\\|").replace("`", "'") + "`"


def cell(variant: str, name: str) -> str:
    """What ``variant`` does to the example body of framing ``name`` (or why it is refused)."""
    import httpcore

    from ssemock import Response, faults, framing, plan_response

    fault = faults.get(variant)
    why = fault.refuses(name)
    if why is not None:
        return f"**refused**: {why}"
    example = framing.get(name).example
    assert example is not None
    content_type, body = example
    response = Response(200, [("content-type", content_type)], body, [len(body)], [0.0])
    plan = plan_response(
        response, url="https://api.example.test/v1/stream", core=httpcore, faults=[fault], read_timeout=5.0
    )
    said = []
    if plan.status != 200:
        said.append(f"HTTP {plan.status} with {_show(plan.body)}")
    else:
        same = next(
            (i for i, (a, b) in enumerate(zip(body, plan.body)) if a != b), min(len(body), len(plan.body))
        )
        ends = framing.get(name).event_ends(body)
        if plan.body == body[: len(plan.body)] and len(plan.body) < len(body):
            whole = sum(1 for e in ends if e <= len(plan.body))
            inside = "" if len(plan.body) in (0, *ends) else f", inside event {whole + 1}"
            said.append(f"cut after byte {len(plan.body)} of {len(body)} ({whole} whole events{inside})")
        elif plan.body != body:
            same = max(e for e in (0, *ends) if e <= same)  # from the start of the event that changed
            said.append(
                f"from byte {same}: {_show(body[same:]) if same < len(body) else 'nothing'} "
                f"→ {_show(plan.body[same:])}"
            )
        for index, seconds in plan.stalls.items():
            offset = plan.ends[index - 1] if index else 0
            said.append(
                f"{seconds:g} s of silence after byte {offset} (past the read timeout: the client's "
                f"ReadTimeout there)"
            )
        if plan.error is not None:
            said.append(
                ("the whole body, " if plan.body == body else "")
                + "then the connection drops (the client's RemoteProtocolError)"
            )
    return "; ".join(said) or "unchanged"


def render() -> str:
    """The markdown table: a row per fault variant, a column per framing."""
    from ssemock import faults, framing

    names = [f.name for f in framing.all_framings()]
    lines = ["| fault | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    for variant in faults.VARIANTS:
        cells = " | ".join(cell(variant, name) for name in names)
        lines.append(f"| `{variant.replace('|', '&#124;')}` | {cells} |")
    examples = [
        f"- **{f.name}** (`{f.example[0]}`): {_show(f.example[1], 120)}"
        for f in framing.all_framings()
        if f.example is not None
    ]
    return "\n".join(lines) + "\n\nThe example bodies:\n\n" + "\n".join(examples) + "\n"


def seen(variant: str) -> str:
    """What websockets' own client (its sans-IO protocol) meets when a short Realtime session is
    served under ``variant`` (a WebSocket fault, re-framing or wire chunking)."""
    from websockets.client import ClientProtocol
    from websockets.extensions.permessage_deflate import PerMessageDeflate
    from websockets.frames import Opcode as WsOpcode
    from websockets.protocol import State
    from websockets.uri import parse_uri

    from ssemock.framing.websocket import Opcode
    from ssemock.variants.websocket import chunking as ws_chunking
    from ssemock.variants.websocket import faults as ws_faults
    from ssemock.variants.websocket import frames as ws_frames
    from ssemock.variants.websocket.serve import serve

    texts = [b'{"type":"session.created"}', b'{"type":"response.output_text.delta","delta":"Gr\xc3\xbc\xc3\x9fe"}',
             b'{"type":"response.done"}']  # fmt: skip
    session = ws_faults.Session(
        tuple(ws_frames.ServerMessage(Opcode.TEXT, t, min(i, 1)) for i, t in enumerate(texts)),
        "openai.realtime",
        (1000, ""),
    )
    kind = (
        "chunking"
        if variant in ws_chunking.names()
        else "fault"
        if ws_faults.is_websocket_fault(variant)
        else "reframing"
    )
    served = serve(session, **{kind: variant}, agreed_deflate=False)  # type: ignore[arg-type]
    if served.refused is not None:
        retry = dict(served.refused.headers).get("retry-after")
        return f"HTTP {served.refused.status}" + (f" (retry-after {retry})" if retry else "") + ", no session"
    client = ClientProtocol(parse_uri("ws://127.0.0.1/"), state=State.OPEN)
    if variant == "deflate":
        client.extensions = [PerMessageDeflate(False, False, 15, 15)]
    for read in served.reads:
        client.receive_data(read.data)
    if served.ending == "eof":
        client.receive_eof()
    frames = client.events_received()
    messages = sum(1 for f in frames if f.fin and f.opcode in (WsOpcode.TEXT, WsOpcode.BINARY, WsOpcode.CONT))
    stalls = [r.wait for r in served.reads if r.wait]
    said = [
        f"{messages} of {len(texts)} messages"
        + (" (+ the provider's error message)" if messages > len(texts) else "")
    ]
    said.append(f"{len(served.reads)} reads")
    if served.pings:
        said.append(f"{len(served.pings)} pings to answer")
    if stalls:
        said.append(f"{stalls[0]:g} s of silence before a message")
    code = client.close_rcvd.code if client.close_rcvd is not None else client.close_code
    said.append(f"close {code}" if code is not None else "open")
    return ", ".join(said)


def render_websocket() -> str:
    """The WebSocket table: a row per wire chunking, re-framing and fault; what websockets' own
    client meets; then a column per WebSocket stack (and SDK): served, or refused and why."""
    from ssemock import stacks
    from ssemock.variants.websocket import chunking as ws_chunking
    from ssemock.variants.websocket import faults as ws_faults
    from ssemock.variants.websocket import frames as ws_frames

    clients = [*stacks.WS_STACKS, "openai SDK", "google-genai"]
    rows = [*ws_chunking.names(), *(r.name for r in ws_frames.ALL[1:]), *ws_faults.VARIANTS]
    lines = [
        "| variant | what websockets' client meets | " + " | ".join(clients) + " |",
        "|---|---|" + "---|" * len(clients),
    ]
    for variant in rows:
        cells = []
        for client in clients:
            why = ws_frames.get(variant).refuses(OFFERS_DEFLATE[client]) if variant in ("deflate",) else None
            cells.append(f"**refused**: {why.split(' (')[0]}" if why else "served")
        lines.append(f"| `{variant.replace('|', '&#124;')}` | {seen(variant)} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Replace the markers with the tables."""
    if MARKER in markdown:
        markdown = markdown.replace(MARKER, render())
    if WS_MARKER in markdown:
        markdown = markdown.replace(WS_MARKER, render_websocket())
    return markdown
