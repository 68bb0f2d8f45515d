"""The page ``ssemock serve`` and ``ssemock proxy`` answer ``GET /`` with (when no recorded
interaction answers ``/``): the cassettes, and each interaction's timeline as it was on the wire.

Every row shares one time axis (`page_axis`: ticks with labels, one scale for the whole page,
zoomed together) and one size scale (bar height: bytes, log scale, the page's biggest the
tallest), so rows compare at a glance. An HTTP response is a strip: one bar per recorded chunk
at its arrival time, a tick where each event of its framing ends, the time to the first chunk
and the longest gap marked. A WebSocket session is two lanes (`page_session`), and so is a gRPC
call, with its method path and status (`page_grpc`). Every mark has a
tooltip, every row a details table, and every figure is also in the DOM (``data-*``
attributes), for a test or a script to read. Everything shown is masked (the page goes to
whoever reaches the port) and escaped."""

from __future__ import annotations

import bisect
import html
from collections.abc import Sequence
from urllib.parse import urlsplit

from ...framing import detect
from ...protocols import labels
from ...redaction.rules import mask_text, mask_url, redact_url
from ...store.cassette import Cassette, Interaction
from ..show_group import summarize_groups
from .page_axis import Heights, Scale, fmt, mark, scale_for
from .page_group import group
from .page_grpc import call, call_end, call_sizes
from .page_session import session, session_end

__all__ = ["render"]

_STYLE = """
body{font:14px system-ui,sans-serif;margin:1.5em;color:#222}
h1{font-size:1.3em}h2{font-size:1.1em;margin-top:1.6em}
.speaks{font-size:.8em;font-weight:normal;background:#eef;border-radius:3px;padding:0 .4em;margin-left:.4em}
section.interaction{margin:.8em 0 1.2em;padding:.5em .8em;border:1px solid #ddd;border-radius:6px}
.req{font-family:ui-monospace,monospace;overflow-wrap:anywhere}.facts{color:#555;font-size:.9em}
.strip{overflow-x:auto;margin-top:.4em}svg{background:#fff;display:block}
svg text{font:11px system-ui,sans-serif;fill:#555}text.lane-name{font-weight:600;fill:#333}
line.grid{stroke:#e2e2e2}line.axis{stroke:#999}text.tick{fill:#666}
rect.chunk{fill:#3b6fd8}line.event{stroke:#e07b00;stroke-width:1.5}
line.ttfc{stroke:#2a9d3a;stroke-dasharray:3 2;stroke-width:1.5}rect.gap{fill:#f6dcdc}
rect.lane.sent{fill:#eef7f0}rect.lane.recv{fill:#eef3fc}
rect.control{fill:#777}rect.msg.sent{fill:#2a9d3a}rect.msg.recv{fill:#3b6fd8}rect.msg.binary{fill:#8e44ad}
text.what{font-size:10px;fill:#333;paint-order:stroke;stroke:#fff;stroke-width:3px}
line.close{stroke:#c0392b;stroke-width:2}line.close.none{stroke-dasharray:4 3}
text.close{fill:#c0392b;font-weight:600;paint-order:stroke;stroke:#fff;stroke-width:3px}
.legend span{margin-right:1.2em;font-size:.85em}.axis-note{color:#555;font-size:.9em}
details{margin-top:.3em;font-size:.85em}summary{cursor:pointer;color:#555}
table.details{border-collapse:collapse;margin-top:.3em}
table.details th,table.details td{padding:1px 8px;text-align:right;border-bottom:1px solid #eee}
table.details td.what,table.details th.what{text-align:left;font-family:ui-monospace,monospace}
tr.sent td{color:#1d6e2a}tr.recv td{color:#2a55aa}tr.close td{color:#c0392b;font-weight:600}
rect.part.sent{fill:#2a9d3a}rect.part.recv{fill:#3b6fd8}rect.part.exchange{fill:#777}
"""

_SCRIPT = """
(() => {
  const pick = document.getElementById('zoom'); if (!pick) return;
  const strips = [...document.querySelectorAll('.strip')];
  function zoom(z) {
    for (const svg of document.querySelectorAll('svg.timeline')) {
      const g = +svg.dataset.gutter, px = +svg.dataset.perSecond * z;
      svg.setAttribute('width', g + +svg.dataset.end * px + +svg.dataset.right);
      for (const el of svg.querySelectorAll('[data-t]')) {
        const x = g + +el.dataset.t * px + +(el.dataset.dx || 0);
        if (el.dataset.t2 !== undefined) {
          const w = Math.max((+el.dataset.t2 - +el.dataset.t) * px, 1);
          el.tagName === 'line' ? el.setAttribute('x2', x + w) : el.setAttribute('width', w);
          el.setAttribute(el.tagName === 'line' ? 'x1' : 'x', x);
        } else if (el.tagName === 'line') { el.setAttribute('x1', x); el.setAttribute('x2', x); }
        else el.setAttribute('x', x);
      }
    }
    document.body.dataset.zoom = z;
  }
  function place() {  // a label where it fits in one of its lane's two rows; a run named once
    for (const svg of document.querySelectorAll('svg.timeline')) {
      const ends = {}, last = {};
      for (const el of svg.querySelectorAll('text.what')) {
        const lane = el.dataset.lane, x = +el.getAttribute('x'), rows = el.dataset.rows.split(' ');
        ends[lane] ||= rows.map(() => -Infinity);
        const row = el.textContent === last[lane] ? -1 : ends[lane].findIndex(e => x >= e);
        el.setAttribute('visibility', row < 0 ? 'hidden' : 'visible');
        if (row < 0) continue;
        el.setAttribute('y', rows[row]);
        ends[lane][row] = x + el.getComputedTextLength() + 8;
        last[lane] = el.textContent;
      }
    }
  }
  pick.addEventListener('change', () => { zoom(+pick.value); place(); });
  place();
  for (const s of strips) s.addEventListener('scroll', () => {
    for (const o of strips) if (o !== s && o.scrollLeft !== s.scrollLeft) o.scrollLeft = s.scrollLeft;
  });
  window.ssemockZoom = z => { zoom(z); place(); };
})();
"""

_LEGEND = (
    '<p class="legend"><span style="color:#3b6fd8">▮ chunk / message received</span>'
    '<span style="color:#2a9d3a">▮ message sent</span><span style="color:#8e44ad">▮ binary message</span>'
    '<span style="color:#e07b00">| event end</span><span style="color:#2a9d3a">┆ first chunk</span>'
    '<span style="color:#d88">▭ longest gap</span><span style="color:#c0392b">┃ close</span></p>'
)

_TOP, _BOTTOM = 6.0, 70.0  # an HTTP row's plot, the bars standing on its bottom


def _end(x: Interaction) -> float:
    if x.websocket is not None:
        return session_end(x)
    if x.grpc is not None:
        return call_end(x)
    return max(x.response.times, default=0.0)


def _sizes(x: Interaction) -> list[int]:
    if x.websocket is not None:
        return [len(m.payload) for m in x.websocket.messages]
    if x.grpc is not None:
        return call_sizes(x)
    ends = list(x.response.ends)
    return [e - s for s, e in zip([0, *ends], ends, strict=False)]


def _stream(x: Interaction, cassette: str, index: int, scale: Scale, heights: Heights) -> str:
    resp = x.response
    ends, times = list(resp.ends), list(resp.times) or [0.0] * len(resp.ends)
    sizes = _sizes(x)
    content_type = resp.header("content-type")
    try:
        event_ends = detect(content_type, resp.body).event_ends(resp.body) if resp.body else []
    except ValueError:
        event_ends = []
    gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
    longest = max(range(len(gaps)), key=gaps.__getitem__) if gaps else None
    ttfc = times[0] if times else None
    events_in = [0] * len(times)
    for end in event_ends:  # an event ends in the chunk that holds its last byte
        events_in[min(bisect.bisect_left(ends, end), len(times) - 1)] += 1

    parts = [
        f'<rect class="lane recv" x="0" y="{_TOP:g}" width="100%" height="{_BOTTOM - _TOP:g}"/>',
        scale.grid(_TOP, _BOTTOM),
        f'<text class="lane-name" x="8" y="{(_TOP + _BOTTOM) / 2 + 4:g}">chunks</text>',
    ]
    if longest is not None and gaps[longest] > 0:
        a, b = times[longest], times[longest + 1]
        parts.append(
            mark(
                "rect",
                a,
                scale,
                f'data-t2="{b:.4f}" class="gap" y="{_TOP}" width="{max((b - a) * scale.per_second, 1):.1f}" '
                f'height="{_BOTTOM - _TOP}"',
                f"<title>longest gap {fmt(gaps[longest])}</title>",
            )
        )
    if ttfc is not None:
        parts.append(
            mark(
                "line",
                ttfc,
                scale,
                f'class="ttfc" y1="{_TOP}" y2="{_BOTTOM}"',
                f"<title>first chunk at {fmt(ttfc)}</title>",
            )
        )
    for k, (t, size) in enumerate(zip(times, sizes, strict=False)):
        h = heights(size)
        parts.append(
            mark(
                "rect",
                t,
                scale,
                f'class="chunk" data-size="{size}" y="{_BOTTOM - h:.1f}" width="3" height="{h:.1f}"',
                f"<title>chunk {k}: {size} bytes at {fmt(t)}"
                f"{f', {events_in[k]} event(s) end' if events_in[k] else ''}</title>",
                dx=-1.5,
            )
        )
    for end in event_ends:
        k = min(bisect.bisect_left(ends, end), len(times) - 1) if times else 0
        t = times[k] if times else 0.0
        parts.append(mark("line", t, scale, f'class="event" data-end="{end}" y1="{_TOP}" y2="{_TOP + 7}"'))

    url = urlsplit(redact_url(x.request.url))  # its userinfo password too
    target = mask_url(url.path + (f"?{url.query}" if url.query else ""))
    facts = [
        f"{resp.status} {html.escape((content_type or 'no content-type').split(';')[0])}",
        f"{len(ends)} chunk(s), {len(resp.body)} bytes, {len(event_ends)} event(s)",
        f"first chunk at {fmt(ttfc)}" if ttfc is not None else "no body",
        f"longest gap {fmt(gaps[longest])} (after chunk {longest})" if longest is not None else "",
        "" if resp.complete else "INCOMPLETE (the stream broke off while recording)",
    ]
    rows = "".join(
        f"<tr><td>{k}</td><td>{fmt(t)}</td><td>{'' if k == 0 else fmt(t - times[k - 1])}</td>"
        f"<td>{size}</td><td>{events_in[k]}</td></tr>"
        for k, (t, size) in enumerate(zip(times, sizes, strict=False))
    )
    table = (
        f'<details><summary>details: {len(ends)} chunk(s)</summary><table class="details">'
        "<tr><th>chunk</th><th>at</th><th>after the previous</th><th>bytes</th><th>events ending</th></tr>"
        f"{rows}</table></details>"
    )
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
        f"{scale.svg(_BOTTOM + 18, index, ''.join(parts))}{table}</section>"
    )


def render(cassettes: Sequence[Cassette], *, title: str = "ssemock") -> str:
    """The HTML page of ``cassettes`` and their interactions' timelines."""
    every = [x for c in cassettes for x in c.interactions]
    scale = scale_for(max((_end(x) for x in every), default=0.0))
    heights = Heights(max((s for x in every for s in _sizes(x)), default=1))
    body = []
    for cassette in cassettes:
        name = cassette.path.name if cassette.path is not None else "(in memory)"
        spoken = "".join(
            f' <span class="speaks" data-protocol="{html.escape(label)}">{html.escape(label)}</span>'
            for label in labels(cassette.interactions)
        )
        body.append(
            f'<h2 class="cassette">{html.escape(name)} <small>({len(cassette.interactions)})</small>{spoken}</h2>'
        )
        for i, x in enumerate(cassette.interactions):
            if x.websocket is not None:
                body.append(session(x, name, i, scale, heights))
            elif x.grpc is not None:
                body.append(call(x, name, i, scale, heights))
            else:
                body.append(_stream(x, name, i, scale, heights))
        everything = range(len(cassette.interactions))  # sessions spanning connections: one timeline each
        body.extend(
            group(g, cassette.interactions, name) for g in summarize_groups(cassette.interactions, everything)
        )
    if not cassettes:
        body.append("<p>No cassettes yet.</p>")
    head = (
        f'<p class="axis-note">{scale.meaning()} Bar height: bytes (log scale; the tallest is '
        f'{heights.biggest} bytes). <label>zoom <select id="zoom">'
        + "".join(f'<option value="{z}">{z}×</option>' for z in (1, 2, 5, 10, 20))
        + "</select></label></p>"
    )
    return mask_text(
        f'<!doctype html><html><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
        f"<style>{_STYLE}</style></head><body><h1>{html.escape(title)}</h1>{_LEGEND}{head}"
        f"{''.join(body)}<script>{_SCRIPT}</script></body></html>"
    )
