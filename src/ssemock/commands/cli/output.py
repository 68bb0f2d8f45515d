"""What every ``ssemock`` command shares: `_out` (each line printed masked and escaped), the
lines that list a refusal's findings (`_findings`), the `_UsageError` an expected failure raises, and the types of a subcommand's handler and of the
object its parser is added to."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from ...redaction.rules import escape_control, mask_text

Handler = Callable[[argparse.Namespace], int]


def _out(text: str = "", *, err: bool = False) -> None:
    """Print a line of output: secrets masked, control characters escaped (a cassette's text never
    reaches the terminal raw). Every command prints through here."""
    stream = sys.stderr if err else sys.stdout
    stream.write(escape_control(mask_text(text)) + "\n")
    stream.flush()


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
