"""``ssemock demo`` and ``ssemock doctor``: ssemock itself, what it does (a live recording replayed
under every chunking through real clients) and how it is installed (for a bug report)."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

from ...core.extras import install_hint
from .output import _out, _UsageError

if TYPE_CHECKING:
    from .output import Subparsers


# -- ssemock demo ------------------------------------------------------------------------------


def _add_demo(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "demo",
        help="record a loopback SSE server, replay it under every chunking through real clients",
        description="Start a loopback OpenAI-style SSE server, record one streamed chat completion "
        "through the real openai SDK into a cassette, then replay the cassette with the "
        "network blocked under every chunking through the openai SDK, httpx-sse and a "
        "naive hand-written decoder, and print which of them got the live result.",
    )
    parser.add_argument("--json", action="store_true", help="print the results as JSON instead of the table")
    parser.add_argument(
        "--dir",
        metavar="DIR",
        default=None,
        help="keep the demo's cassette, in a new folder under DIR (default: a temporary folder, "
        "removed at the end)",
    )
    parser.add_argument(
        "--explore",
        metavar="N",
        nargs="?",
        type=int,
        const=200,
        default=0,
        help="then explore up to N streams a network can deliver (default 200) and show the naive "
        "decoder's smallest failing one beside the matrix",
    )
    parser.set_defaults(handler=_cmd_demo)


def _cmd_demo(args: argparse.Namespace) -> int:
    try:
        from rich.console import Console

        from ..demo import run_demo
    except ImportError as exc:
        raise _UsageError(
            f"the demo needs the 'demo' extra ({exc.name} is missing): {install_hint('demo')}"
        ) from exc
    if args.json:
        result = run_demo(Console(quiet=True), directory=args.dir, explore=args.explore)
        _out(json.dumps(result.as_dict(), indent=2))
    else:
        result = run_demo(Console(), directory=args.dir, explore=args.explore)
    return 0 if result.live_ok and result.real_clients_ok else 1


# -- ssemock doctor ----------------------------------------------------------------------------


def _add_doctor(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "doctor",
        help="what a bug report needs: version, accelerator, stacks, extras, library versions",
        description="Print ssemock's version, whether the C accelerator is in use (and why not), which "
        "optional stacks and extras are importable, and the versions of Python and the "
        "libraries ssemock works with: paste it into a bug report.",
    )
    parser.set_defaults(handler=_doctor)


def _doctor(args: argparse.Namespace) -> int:
    from ..doctor import report

    for line in report():
        _out(line)
    return 0
