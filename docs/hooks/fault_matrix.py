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


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Replace the marker with the table."""
    if MARKER not in markdown:
        return markdown
    return markdown.replace(MARKER, render())
