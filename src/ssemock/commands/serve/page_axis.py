"""The timeline page's shared time axis: one scale (pixels per second) for every row of the
page, so a chunk at 1.3 s in one stream and a message at 1.3 s in a session line up; ticks at a
round step (1, 2, 2.5 or 5 times a power of ten) with their labels, and the SVG bits every row
draws (grid lines, tick labels, a mark at a time); and the shared size scale (`Heights`). Every positioned element carries its time
(``data-t``, seconds) so the page's zoom moves it without knowing what it is."""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["GUTTER", "LANES", "Heights", "Scale", "fmt", "mark", "scale_for", "two_lanes"]

GUTTER = 86
"""Pixels left of time 0: the row's lane names."""
_PLOT = 780
"""Pixels from time 0 to the axis end at zoom 1."""
_RIGHT = 24


def fmt(seconds: float) -> str:
    """A duration as people read it: ``250.0 ms`` below a second, ``1.35 s`` above."""
    return f"{seconds * 1000:.1f} ms" if seconds < 1 else f"{seconds:.2f} s"


def _step(span: float) -> float:
    """The round tick step that gives 5 to 10 ticks over ``span`` seconds."""
    base = 10.0 ** math.floor(math.log10(span / 10))
    return next(base * f for f in (1, 2, 2.5, 5, 10) if span / (base * f) <= 10)


@dataclass(frozen=True)
class Scale:
    """Time 0 to ``end`` seconds over the plot width, ticks every ``step`` seconds."""

    end: float
    step: float

    @property
    def per_second(self) -> float:
        """Pixels per second at zoom 1."""
        return _PLOT / self.end

    @property
    def width(self) -> int:
        """The SVG width of a row at zoom 1."""
        return GUTTER + _PLOT + _RIGHT

    def x(self, t: float) -> float:
        """The x of time ``t``."""
        return GUTTER + t * self.per_second

    def ticks(self) -> list[float]:
        """The tick times, 0 to ``end``."""
        return [k * self.step for k in range(round(self.end / self.step) + 1)]

    def label(self, t: float) -> str:
        """A tick's label: milliseconds when the axis ends within 2 s, else seconds."""
        if self.end <= 2:
            return f"{round(t * 1000, 3):g} ms"
        return f"{round(t, 3):g} s"

    def grid(self, top: float, bottom: float) -> str:
        """The row's grid lines from ``top`` to ``bottom`` and the tick labels under them."""
        parts = [
            f'<line class="axis" x1="{GUTTER}" x2="{self.x(self.end):.1f}" y1="{bottom}" '
            f'y2="{bottom}" data-t="0" data-t2="{self.end:.4f}"/>'
        ]
        for t in self.ticks():
            parts.append(mark("line", t, self, f'class="grid" y1="{top}" y2="{bottom + 3}"'))
            parts.append(
                mark("text", t, self, f'class="tick" y="{bottom + 14}" text-anchor="middle"', self.label(t))
            )
        return "".join(parts)

    def svg(self, height: float, index: int, inner: str) -> str:
        """A row's SVG (in its scrolling strip), with what the zoom needs to redraw it."""
        return (
            f'<div class="strip"><svg class="timeline" width="{self.width}" height="{height:g}" '
            f'data-gutter="{GUTTER}" data-per-second="{self.per_second:.6f}" data-end="{self.end:.4f}" '
            f'data-right="{_RIGHT}" role="img" aria-label="timeline of #{index}">{inner}</svg></div>'
        )

    def meaning(self) -> str:
        """One sentence saying what the axis is, for the page's head."""
        return (
            f"Time since each request was written; every row shares one scale: 0 to "
            f"{self.label(self.end)}, a tick every {self.label(self.step)}."
        )


def scale_for(last: float) -> Scale:
    """The scale whose axis holds ``last`` (seconds, the latest time on the page)."""
    span = max(last, 1e-3)
    step = _step(span)
    return Scale(math.ceil(span / step - 1e-9) * step, step)


@dataclass(frozen=True)
class Heights:
    """The page's size scale: a bar's height for a chunk or message of ``size`` bytes, log
    scale (a 10-byte keep-alive and a 4 KiB chunk both show), the page's ``biggest`` the tallest."""

    biggest: int
    tallest: float = 56.0

    def __call__(self, size: int) -> float:
        return 3 + (self.tallest - 3) * math.log1p(size) / math.log1p(max(self.biggest, 1))


def mark(tag: str, t: float, scale: Scale, attrs: str, inner: str = "", *, dx: float = 0.0) -> str:
    """An SVG element at time ``t`` (``x``, or ``x1``/``x2`` for a line), ``dx`` pixels off, its
    time and offset kept for the zoom; ``inner`` is markup (escaped by the caller)."""
    x = scale.x(t) + dx
    where = f'x1="{x:.1f}" x2="{x:.1f}"' if tag == "line" else f'x="{x:.1f}"'
    keep = f'data-t="{t:.4f}"' + (f' data-dx="{dx:g}"' if dx else "")
    return f"<{tag} {keep} {where} {attrs}>{inner}</{tag}>"


LANES = (6.0, 60.0, 66.0, 126.0)
"""A two-lane row (a WebSocket session, a gRPC call): its top, a lane's height, the axis between
the lanes, its bottom, in pixels."""


def two_lanes(scale: Scale) -> list[str]:
    """The background of a two-lane row: the sent lane above the axis, the received one below,
    the time grid over both and each lane's name."""
    top, lane, mid, bottom = LANES
    return [
        f'<rect class="lane sent" x="0" y="{top:g}" width="100%" height="{lane:g}"/>',
        f'<rect class="lane recv" x="0" y="{mid:g}" width="100%" height="{lane:g}"/>',
        scale.grid(top, bottom),
        f'<text class="lane-name" x="8" y="{top + lane / 2 + 4:g}">sent ↑</text>',
        f'<text class="lane-name" x="8" y="{mid + lane / 2 + 4:g}">received ↓</text>',
        f'<line class="axis" x1="0" x2="100%" y1="{mid:g}" y2="{mid:g}"/>',
    ]
