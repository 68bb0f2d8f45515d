"""mkdocs hook: render ``ssemock``'s argparse parser as the CLI reference, at build time.

``docs/reference/cli.md`` holds the marker ``<!-- ssemock-cli-reference -->``; this hook replaces
it with one section per subcommand (usage, description, arguments and options with their help),
read from :func:`ssemock.commands.cli.build_parser`. The reference cannot drift from the parser: it *is*
the parser. ``tests/test_docs.py`` imports :func:`render` to check that every subcommand and
option is listed.
"""

from __future__ import annotations

import argparse
from typing import Any

MARKER = "<!-- ssemock-cli-reference -->"


def _subcommands(parser: argparse.ArgumentParser) -> list[tuple[str, str, argparse.ArgumentParser]]:
    """(name, one-line help, parser) of each subcommand, in the order ``--help`` lists them."""
    out = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
            for name, sub in action.choices.items():
                out.append((name, helps.get(name, ""), sub))
    return out


def _usage(parser: argparse.ArgumentParser) -> str:
    return " ".join(parser.format_usage().removeprefix("usage:").split())


def _escape(text: str) -> str:
    return text.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def _argument_rows(parser: argparse.ArgumentParser) -> list[str]:
    rows = []
    for action in parser._actions:
        if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
            continue
        if action.option_strings:
            names = ", ".join(f"`{s}`" for s in action.option_strings)
            if action.nargs != 0:
                metavar = action.metavar or action.dest.upper()
                names += f" `{metavar}`"
        else:
            names = f"`{action.metavar or action.dest}`" + (" ..." if action.nargs in ("+", "*") else "")
        details = []
        if action.required and action.option_strings:
            details.append("required")
        if action.choices is not None and not isinstance(action, argparse._SubParsersAction):
            details.append("one of " + ", ".join(f"`{c}`" for c in action.choices))
        help_text = (action.help or "").replace("%(prog)s", parser.prog)
        if (
            action.default not in (None, False, [], argparse.SUPPRESS)
            and action.nargs != 0
            and "default" not in help_text
        ):
            details.append(f"default: `{action.default}`")
        if details:
            help_text = f"{help_text} ({'; '.join(details)})" if help_text else "; ".join(details)
        rows.append(f"| {names} | {_escape(help_text)} |")
    return rows


def _exclusive_groups(parser: argparse.ArgumentParser) -> list[str]:
    notes = []
    for group in parser._mutually_exclusive_groups:
        names = " / ".join(f"`{a.option_strings[0]}`" for a in group._group_actions if a.option_strings)
        notes.append(f"{'Exactly' if group.required else 'At most'} one of {names}.")
    return notes


def render(parser: argparse.ArgumentParser) -> str:
    """The whole reference as markdown: the main command, then one section per subcommand."""
    lines = [f"```text\n{_usage(parser)}\n```", "", parser.description or "", ""]
    lines += ["| option | what it does |", "|---|---|", *_argument_rows(parser), ""]
    commands = _subcommands(parser)
    lines += ["| command | what it does |", "|---|---|"]
    lines += [
        f"| [`{parser.prog} {name}`](#{parser.prog}-{name}) | {_escape(short)} |"
        for name, short, _ in commands
    ]
    lines.append("")
    for name, short, sub in commands:
        lines += [
            f"## {parser.prog} {name}",
            "",
            f"```text\n{_usage(sub)}\n```",
            "",
            _escape(sub.description or short),
            "",
        ]
        rows = _argument_rows(sub)
        if rows:
            lines += ["| argument | what it does |", "|---|---|", *rows, ""]
        lines += [*_exclusive_groups(sub), ""]
    return "\n".join(lines)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Replace the marker with the rendered reference (other pages pass through unchanged)."""
    if MARKER not in markdown:
        return markdown
    from ssemock.commands.cli import build_parser

    return markdown.replace(MARKER, render(build_parser()))
