"""What every ``ssemock`` command shares: `_out` (each line printed masked and escaped), `_out_json`
(a ``--json`` answer, each string in it masked), the lines that list a refusal's findings
(`_findings`), the `_UsageError` an expected failure raises, and the types of a subcommand's
handler and of the object its parser is added to."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ...redaction.rules import escape_control, mask_text
from ...scan.fields import credential_name, credential_value

Handler = Callable[[argparse.Namespace], int]


def _out(text: str = "", *, err: bool = False, masked: bool = False) -> None:
    """Print a line of output: secrets masked (``masked``: they already are), control characters
    escaped (a cassette's text never reaches the terminal raw). Every command prints through here."""
    stream = sys.stderr if err else sys.stdout
    stream.write(escape_control(text if masked else mask_text(text)) + "\n")
    stream.flush()


def _out_json(value: Any) -> None:
    """Print a ``--json`` answer, indented: every string in it masked on its own (and the value of
    a credential-named key whatever it looks like), never the JSON text line by line, where a
    value masked to its line's end (``password: ...``) took the closing quote and left no JSON."""
    _out(json.dumps(_masked(value), indent=2, ensure_ascii=False), masked=True)


def _masked(value: Any, key: str = "") -> Any:
    if isinstance(value, dict):
        return {k: _masked(v, str(k)) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_masked(v, key) for v in value]
    if isinstance(value, str):
        return "***" if credential_name(key) and credential_value(value) else mask_text(value)
    return value


SCREENFUL = 20
"""A refusal lists this many findings at most (the rest: ``and N more``, all of them in ``--json``)."""


def _findings(findings: Sequence[str], advice: str) -> list[str]:
    """The lines under a refusal for a secret: each finding (a screenful; past it, how many more
    and where they all are), then what to do."""
    shown = findings if len(findings) <= SCREENFUL else findings[: SCREENFUL - 1]
    lines = [f"  {f}" for f in shown]
    if len(shown) < len(findings):
        lines.append(f"  and {len(findings) - len(shown)} more (--json lists them all)")
    return [*lines, f"  what to do: {advice}"]


class _UsageError(Exception):
    """An expected failure: printed as ``ssemock: error: ...`` with exit code 1, no traceback."""


if TYPE_CHECKING:  # the object add_subparsers() returns
    Subparsers = argparse._SubParsersAction[argparse.ArgumentParser]
