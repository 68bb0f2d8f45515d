"""The ``ssemock`` command line: ``ssemock COMMAND [options]``.

Each subcommand is one ``_add_<name>(subparsers)`` function that builds its parser and sets
``handler`` (``Namespace -> exit code``); `main` parses, dispatches and turns expected
errors into a message and an exit code. Heavy imports (the demo's server and SDKs) happen inside
the handlers, so ``ssemock --help`` works without the optional extras.
"""

# The commands' parsers and handlers live in one module per family (inspecting, repairing,
# serving, importing, about); each handler only parses and prints: the commands' logic lives
# elsewhere in ssemock.commands (one module per command; demo, serve, import_vcr, migrate...).

from __future__ import annotations

import argparse
import functools
import os
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ...core.packages import fresh
from ...redaction.rules import escape_control, mask_text
from ...store.cassette import CassetteError
from .about import _add_demo, _add_doctor
from .importing import _add_accept, _add_import_vcr, _add_migrate
from .inspecting import _add_show, _add_validate
from .output import Handler, _out, _UsageError
from .proxying import _add_proxy
from .repairing import _add_fix, _add_rechunk, _add_redact
from .scoring import _add_conformance
from .serving import _add_serve
from .trading import _add_export_har, _add_import_har

if TYPE_CHECKING:
    from .output import Subparsers

__all__ = ["build_parser", "main"]

#: One function per subcommand, in the order ``--help`` lists them.
_COMMANDS: list[Callable[[Subparsers], None]] = [
    _add_demo,
    _add_serve,
    _add_proxy,
    _add_show,
    _add_validate,
    _add_rechunk,
    _add_redact,
    _add_accept,
    _add_fix,
    _add_import_vcr,
    _add_import_har,
    _add_export_har,
    _add_migrate,
    _add_conformance,
    _add_doctor,
]


class _Parser(argparse.ArgumentParser):
    """argparse's own messages (usage errors quote the arguments) masked and escaped too."""

    def _print_message(self, message: str, file: Any = None) -> None:
        super()._print_message(escape_control(mask_text(message)) if message else message, file)


class _Version(argparse.Action):
    """``--version``: what a bug report starts with (``ssemock doctor`` has the rest)."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        from ..doctor import report

        for line in report(full=False):
            _out(line)
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="ssemock",
        description="Record and replay streaming HTTP (SSE, JSON lines) with chunk boundaries and timing kept.",
    )
    parser.add_argument(
        "--version",
        action=_Version,
        nargs=0,
        help="the version, whether the C accelerator is in use, and the Python (doctor: more)",
    )
    subparsers: Subparsers = parser.add_subparsers(
        dest="command", metavar="COMMAND", title="commands", parser_class=_Parser
    )
    for add in _COMMANDS:
        add(subparsers)
    return parser


@functools.cache
def _parser() -> argparse.ArgumentParser:
    """The parser `main` parses with, built once a process: building it (every command's
    subparser) cost ~6.4 ms a call, where a program or a test suite runs many commands in one
    process (a hypothesis property of the suite ran rechunk, fix and validate 300 times). Parsing
    leaves a parser as it was; a handler never changes a default its arguments were given (the
    ``append`` options' lists are copied by argparse before it appends)."""
    return build_parser()


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code (2 for usage errors, as argparse)."""
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, usage errors: keep argparse's code, don't exit
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    handler: Handler | None = getattr(args, "handler", None)
    if handler is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        return handler(args)
    except (_UsageError, CassetteError) as exc:
        _out(f"ssemock: error: {exc}", err=True)
        return 1
    except (
        BrokenPipeError
    ):  # `ssemock show ... | head`: the reader left; stop quietly (before OSError, its base)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as exc:  # writing a result: a folder that cannot be made, a full disk
        where = " ".join(getattr(exc, "__notes__", [])).removeprefix("ssemock: ") or exc.filename or ""
        print(f"ssemock: error: {exc.strerror or exc}{f' ({where})' if where else ''}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


fresh(__name__)  # submodules read from sys.modules (pytester's in-process reruns drop them)
