"""The page ``ssemock serve`` and ``ssemock proxy`` answer ``GET /`` with (when no recorded
interaction answers ``/``): the cassettes, and each interaction's timeline as it was on the wire.

Each response is drawn as an SVG strip: one bar per recorded chunk at its arrival time, as tall
as its size (log scale, so a 10-byte keep-alive and a 4 KiB chunk both show), a tick where each
event of its framing ends, the time to the first chunk and the longest gap marked. Every figure
is also in the DOM (``data-*`` attributes), for a test or a script to read. Everything shown is
masked (the page goes to whoever reaches the port) and escaped."""

from __future__ import annotations

import bisect
import html
import math
from collections.abc import Sequence
from urllib.parse import urlsplit

from ...framing import detect
from ...redaction.rules import mask_text, mask_url, redact_url
from ...store.cassette import Cassette, Interaction

__all__ = ["render"]

_WIDTH, _HEIGHT = 720, 64

_STYLE = """
body{font:14px system-ui,sans-serif;margin:1.5em;color:#222}
h1{font-size:1.3em}h2{font-size:1.1em;margin-top:1.6em}
section.interaction{margin:.8em 0 1.2em;padding:.5em .8em;border:1px solid #ddd;border-radius:6px}
.req{font-family:ui-monospace,monospace}.facts{color:#555;font-size:.9em}
svg{background:#fafafa;border:1px solid #eee;display:block;margin-top:.4em}
rect.chunk{fill:#3b6fd8}line.event{stroke:#e07b00;stroke-width:1}
line.ttfc{stroke:#2a9d3a;stroke-dasharray:3 2}rect.gap{fill:#f4d9d9}
.legend span{margin-right:1em;font-size:.85em}
"""


def _fmt(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms" if seconds < 1 else f"{seconds:.2f} s"


def _timeline(x: Interaction, cassette: str, index: int) -> str:
    resp = x.response
    ends, times = list(resp.ends), list(resp.times) or [0.0] * len(resp.ends)
    sizes = [e - s for s, e in zip([0, *ends], ends, strict=False)]
    content_type = resp.header("content-type")
    try:
        event_ends = detect(content_type, resp.body).event_ends(resp.body) if resp.body else []
    except ValueError:
        event_ends = []
    span = max(times[-1] if times else 0.0, 1e-3)
    gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
    longest = max(range(len(gaps)), key=gaps.__getitem__) if gaps else None
    ttfc = times[0] if times else None

    def at(t: float) -> float:
        return 10 + (_WIDTH - 20) * t / span

    biggest = max(sizes, default=1)
    parts = []
    if longest is not None and gaps[longest] > 0:
        a, b = at(times[longest]), at(times[longest + 1])
        parts.append(
            f'<rect class="gap" x="{a:.1f}" y="0" width="{max(b - a, 1):.1f}" height="{_HEIGHT}">'
            f"<title>longest gap {_fmt(gaps[longest])}</title></rect>"
        )
    if ttfc is not None:
        parts.append(f'<line class="ttfc" x1="{at(ttfc):.1f}" x2="{at(ttfc):.1f}" y1="0" y2="{_HEIGHT}"/>')
    for k, (t, size) in enumerate(zip(times, sizes, strict=False)):
        h = 4 + (_HEIGHT - 14) * math.log1p(size) / math.log1p(biggest)
        parts.append(
            f'<rect class="chunk" data-t="{t:.4f}" data-size="{size}" x="{at(t) - 1.5:.1f}" '
            f'y="{_HEIGHT - h:.1f}" width="3" height="{h:.1f}"><title>chunk {k}: {size} bytes at '
            f"{_fmt(t)}</title></rect>"
        )
    for end in event_ends:  # an event ends in the chunk that holds its last byte
        k = min(bisect.bisect_left(ends, end), len(times) - 1) if times else 0
        t = times[k] if times else 0.0
        parts.append(
            f'<line class="event" data-end="{end}" x1="{at(t):.1f}" x2="{at(t):.1f}" y1="0" y2="6"/>'
        )
    url = urlsplit(redact_url(x.request.url))  # its userinfo password too
    target = mask_url(url.path + (f"?{url.query}" if url.query else ""))
    facts = [
        f"{resp.status} {html.escape((content_type or 'no content-type').split(';')[0])}",
        f"{len(ends)} chunk(s), {len(resp.body)} bytes, {len(event_ends)} event(s)",
        f"first chunk at {_fmt(ttfc)}" if ttfc is not None else "no body",
        f"longest gap {_fmt(gaps[longest])} (after chunk {longest})" if longest is not None else "",
        "" if resp.complete else "INCOMPLETE (the stream broke off while recording)",
    ]
    data = (
        f'data-cassette="{html.escape(cassette)}" data-index="{index}" data-chunks="{len(ends)}" '
        f'data-events="{len(event_ends)}" data-ttfc="{"" if ttfc is None else f"{ttfc:.4f}"}" '
        f'data-longest-gap="{"" if longest is None else f"{gaps[longest]:.4f}"}" '
        f'data-complete="{str(resp.complete).lower()}"'
    )
    return (
        f'<section class="interaction" {data}><div class="req">#{index} {html.escape(x.request.method)} '
        f"{html.escape(url.netloc)}{html.escape(target)}</div>"
        f'<div class="facts">{" · ".join(f for f in facts if f)}</div>'
        f'<svg width="{_WIDTH}" height="{_HEIGHT}" role="img" aria-label="timeline of #{index}">'
        f"{''.join(parts)}</svg></section>"
    )


def render(cassettes: Sequence[Cassette], *, title: str = "ssemock") -> str:
    """The HTML page of ``cassettes`` and their interactions' timelines."""
    body = []
    for cassette in cassettes:
        name = cassette.path.name if cassette.path is not None else "(in memory)"
        body.append(
            f'<h2 class="cassette">{html.escape(name)} <small>({len(cassette.interactions)})</small></h2>'
        )
        for i, x in enumerate(cassette.interactions):
            if x.websocket is not None:
                body.append(
                    f'<section class="interaction websocket" data-cassette="{html.escape(name)}" data-index="{i}">'
                    f"#{i} WebSocket {html.escape(mask_url(x.request.url))}: {len(x.websocket.messages)} message(s)</section>"
                )
            else:
                body.append(_timeline(x, name, i))
    if not cassettes:
        body.append("<p>No cassettes yet.</p>")
    legend = (
        '<p class="legend"><span style="color:#3b6fd8">▮ chunk (height: size, log)</span>'
        '<span style="color:#e07b00">| event end</span><span style="color:#2a9d3a">┆ first chunk</span>'
        '<span style="color:#c77">▭ longest gap</span></p>'
    )
    return mask_text(
        f'<!doctype html><html><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
        f"<style>{_STYLE}</style></head><body><h1>{html.escape(title)}</h1>{legend}{''.join(body)}</body></html>"
    )
