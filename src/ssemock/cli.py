"""The ``ssemock`` command line: ``ssemock COMMAND [options]``.

Each subcommand is one ``_add_<name>(subparsers)`` function that builds its parser and sets
``handler`` (``Namespace -> exit code``); :func:`main` parses, dispatches and turns expected
errors into a message and an exit code. Heavy imports (the demo's server and SDKs) happen inside
the handlers, so ``ssemock --help`` works without the optional extras.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from . import __version__
from .cassette import CassetteError

__all__ = ["build_parser", "main"]

Handler = Callable[[argparse.Namespace], int]
if TYPE_CHECKING:  # the object add_subparsers() returns
    Subparsers = argparse._SubParsersAction[argparse.ArgumentParser]


# -- ssemock demo ------------------------------------------------------------------------------

def _add_demo(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "demo", help="record a loopback SSE server, replay it under every chunking through real clients",
        description="Start a loopback OpenAI-style SSE server, record one streamed chat completion "
                    "through the real openai SDK into a cassette, then replay the cassette with the "
                    "network blocked under every chunking through the openai SDK, httpx-sse and a "
                    "naive hand-written decoder, and print which of them got the live result.")
    parser.add_argument("--json", action="store_true", help="print the results as JSON instead of the table")
    parser.add_argument("--dir", metavar="DIR", default=None,
                        help="make the demo's cassette folder under DIR (default: the system temp dir)")
    parser.set_defaults(handler=_cmd_demo)


def _cmd_demo(args: argparse.Namespace) -> int:
    try:
        from rich.console import Console

        from .demo import run_demo
    except ImportError as exc:
        raise _UsageError(f"the demo needs the 'demo' extra ({exc.name} is missing): "
                          "pip install 'ssemock[demo]'") from exc
    if args.json:
        result = run_demo(Console(quiet=True), directory=args.dir)
        json.dump(result.as_dict(), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        result = run_demo(Console(), directory=args.dir)
    return 0 if result.live_ok and result.real_clients_ok else 1


# -- parser and dispatch -----------------------------------------------------------------------

#: One function per subcommand, in the order ``--help`` lists them.
_COMMANDS: list[Callable[[Subparsers], None]] = [_add_demo]


class _UsageError(Exception):
    """An expected failure: printed as ``ssemock: error: ...`` with exit code 1, no traceback."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ssemock",
        description="Record and replay streaming HTTP (SSE, JSON lines) with chunk boundaries and timing kept.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands")
    for add in _COMMANDS:
        add(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code (2 for usage errors, as argparse)."""
    parser = build_parser()
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
        print(f"ssemock: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
