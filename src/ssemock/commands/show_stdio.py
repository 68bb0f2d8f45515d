"""``ssemock show`` for a cassette's child processes (``stdio``): per session its entry, its
command line (secrets masked), how many lines each pipe carried, whether the client closed stdin,
and its exit status."""

from __future__ import annotations

from typing import Any

from ..redaction.rules import mask_text
from ..store.cassette import Cassette

__all__ = ["format_stdio", "summarize_stdio"]


def summarize_stdio(cassette: Cassette) -> list[dict[str, Any]]:
    """One summary per child process, as ``show --json`` prints them."""
    return [
        {
            "stdio": k,
            "match": session.match,
            "argv": [mask_text(a) for a in session.argv],
            "lines": {stream: len(session.of(stream)) for stream in ("stdin", "stdout", "stderr")},
            "stdin_closed": any(x.stream == "stdin" and x.data is None for x in session.lines),
            "exit": session.exit,
        }
        for k, session in enumerate(cassette.stdio)
    ]


def format_stdio(summary: dict[str, Any]) -> str:
    """One line of ``show``'s text for a child process."""
    lines, status = summary["lines"], summary["exit"]
    ended = "still running when recorded" if status is None else f"exit {status}"
    return (
        f"stdio session {summary['stdio']} ({summary['match']}): {' '.join(summary['argv'])}\n"
        f"  {lines['stdin']} lines in{', stdin closed' if summary['stdin_closed'] else ''}, "
        f"{lines['stdout']} out, {lines['stderr']} on stderr; {ended}"
    )
