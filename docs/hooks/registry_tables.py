"""mkdocs hook: the protocol and fault tables, generated from the registries when the docs are built.

``docs/guide/protocols.md`` holds ``<!-- ssemock-protocol-table -->``: a row per registered
protocol (`ssemock.protocols.all_protocols`), what its module says it is, its framings and
endpoints, whether it speaks over a WebSocket (and multiplexes lanes), and the bytes of its
``error_event`` and ``http_error`` as the faults write them. ``docs/guide/faults.md`` holds
``<!-- ssemock-fault-table -->`` and ``<!-- ssemock-ws-fault-table -->``: a row per fault of
`ssemock.faults` and of WebSocket sessions (`ssemock.variants.websocket.faults`), its name and
parameters from the factory's signature and what it does from its docstring. A new member shows
up without editing a page; ``tests/test_registry_tables.py`` checks every member is a row.
"""

from __future__ import annotations

import inspect
import re
import sys
from collections.abc import Callable, Mapping
from typing import Any

PROTOCOLS = "<!-- ssemock-protocol-table -->"
FAULTS = "<!-- ssemock-fault-table -->"
WS_FAULTS = "<!-- ssemock-ws-fault-table -->"


def _md(text: str) -> str:
    """A docstring's reST-ish markup as markdown for a table cell."""
    text = re.sub(r"``([^`]+)``", r"`\1`", " ".join(text.split()))
    return text.replace("|", "\\|")


def _first(doc: str | None) -> str:
    """The first paragraph of a docstring."""
    return _md((inspect.cleandoc(doc or "")).split("\n\n")[0])


def _show(data: bytes, most: int = 90) -> str:
    """Bytes as text in a code span (binary, an eventstream frame: its size)."""
    if any(b < 9 or 13 < b < 32 for b in data):
        return f"{len(data)} binary bytes"
    text = data.decode("utf-8", "replace").strip()
    text = text if len(text) <= most else text[: most - 1] + "…"
    return "`" + text.replace("|", "\\|").replace("`", "'").replace("\r", "\\r").replace("\n", "\\n") + "`"


def _endpoints(module: Any) -> str:
    urls = [
        getattr(module, name)
        for name in ("URL", "WEBSOCKET_URL")
        if isinstance(getattr(module, name, None), str)
    ]
    return "<br>".join(f"`{u}`" for u in urls) or "(from the events)"


def protocol_rows() -> list[tuple[str, ...]]:
    """One row per registered protocol: name, what, framings, endpoints, WebSocket, error event,
    HTTP error body."""
    from ssemock import protocols
    from ssemock.protocols.base import StreamError

    rows = []
    for p in protocols.all_protocols():
        module = sys.modules[p.fold.__module__]
        framings = ", ".join((p.framing, *p.framings))
        websocket = "no"
        if p.responses is not None:
            websocket = "yes: several responses a socket" + (
                "; lanes (`stream_id`), `lane=` faults" if p.lanes else ""
            )
        error = p.error_event(StreamError("server_error", "Overloaded.", framing=p.framing))
        http = p.http_error(429, None)
        rows.append(
            (
                f"`{p.name}`",
                _first(module.__doc__),
                framings,
                _endpoints(module),
                websocket,
                _show(error),
                f"{_show(http.body)} ({http.content_type})",
            )
        )
    return rows


def _syntax(name: str, factory: Callable[..., Any]) -> tuple[str, str]:
    """The fault's name with its parameters (``name:a=,b=``) and its Python call."""
    params = [p for p in inspect.signature(factory).parameters.values() if p.kind is p.POSITIONAL_OR_KEYWORD]
    named = ",".join(f"{p.name}=" for p in params)
    call = ", ".join(p.name if p.default is p.empty else f"{p.name}={p.default!r}" for p in params)
    return (f"`{name}:{named}`" if named else f"`{name}`"), f"`{name}({call})`"


def fault_rows(
    factories: Mapping[str, Callable[..., Any]], sequence: Callable[..., Any]
) -> list[tuple[str, ...]]:
    """One row per fault factory (and ``sequence``): the name and parameters, the Python call,
    what it does."""
    rows = [(*_syntax(name, f), _first(f.__doc__)) for name, f in factories.items()]
    rows.append(
        ("`sequence:F1|F2|...`".replace("|", "&#124;"), "`sequence(*per_attempt)`", _first(sequence.__doc__))
    )
    return rows


def _table(head: tuple[str, ...], rows: list[tuple[str, ...]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def render_protocols() -> str:
    head = ("protocol", "what", "framing", "endpoint", "over a WebSocket", "error event (`error_event`)",
            "HTTP error body (`http_error:status=429`)")  # fmt: skip
    return _table(head, protocol_rows())


def render_faults() -> str:
    from ssemock.variants import faults

    return _table(
        ("fault", "Python (`ssemock.faults`)", "what it does"),
        fault_rows(faults.factories(), faults.sequence),
    )


def render_ws_faults() -> str:
    from ssemock.variants.websocket import faults as ws_faults

    head = ("fault", "Python (`ssemock.variants.websocket.faults`)", "what it does")
    return _table(head, fault_rows(ws_faults.factories(), ws_faults.sequence))


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Replace the markers with the tables."""
    for marker, render in (
        (PROTOCOLS, render_protocols),
        (FAULTS, render_faults),
        (WS_FAULTS, render_ws_faults),
    ):
        if marker in markdown:
            markdown = markdown.replace(marker, render())
    return markdown
