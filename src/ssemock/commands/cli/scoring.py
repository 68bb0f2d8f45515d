"""``ssemock conformance``: score SSE clients against the conformance corpus under every chunking
and transform (`ssemock.commands.conformance`), and render the scoreboard's docs page."""

from __future__ import annotations

import argparse
import json
import signal
from pathlib import Path
from typing import TYPE_CHECKING

from .output import _out, _UsageError

if TYPE_CHECKING:
    from .output import Subparsers


def _add_conformance(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "conformance",
        help="score SSE clients (their LaunchDarkly-protocol test services) under every chunking",
        description="Run the SSE conformance corpus (the specification's parsing rules, the WHATWG and "
        "web-platform-tests cases, the catalogue's bug shapes, reconnection, real provider streams) "
        "against each client of a clients file, each case under every chunking and transform of the "
        "registry over real sockets; write DIR/results.json (a failing case's smallest failing "
        "chunking and a reproducer each) and, with --page, the scoreboard's docs page. A case is "
        "scored under the chunkings; each transform (a stream shape: data-less blocks, comment-only "
        "blocks, line endings, ...) on the cases the client decodes without it.",
        epilog="Plugging in a client: any test service of LaunchDarkly's SSE contract tests "
        "(github.com/launchdarkly/sse-contract-tests) works unchanged. Add a [[client]] table to the "
        "clients file with name, language, call (the client call a reproducer shows, {url}: the "
        'stream) and either url = "http://127.0.0.1:8000" (a service already running) or '
        'command = "env PORT={port} ./service" ({port}: a free port; run from cwd, no shell), then '
        "run: ssemock conformance --client NAME. docs/guide/scoreboard.md, 'Adding a client', has more.",
    )
    parser.add_argument(
        "--clients",
        default="conformance/clients.toml",
        metavar="FILE",
        help="the clients file (TOML, [[client]] tables)",
    )
    parser.add_argument(
        "--client", action="append", default=[], metavar="NAME", help="score only this client (repeatable)"
    )
    parser.add_argument(
        "--group", action="append", default=[], metavar="NAME", help="only this case group (repeatable)"
    )
    parser.add_argument(
        "--case", action="append", default=[], metavar="NAME", help="only this case (repeatable)"
    )
    parser.add_argument(
        "--out",
        default="conformance/run",
        metavar="DIR",
        help="where results.json and the cases' cassettes go",
    )
    parser.add_argument(
        "--page", default=None, metavar="FILE", help="write the docs page rendered from DIR/results.json"
    )
    parser.add_argument(
        "--render-only", action="store_true", help="run nothing: render --page from DIR/results.json"
    )
    parser.add_argument(
        "--budget", type=float, default=None, metavar="SECONDS", help="fail when the run takes longer"
    )
    parser.set_defaults(handler=_conformance)


def _conformance(args: argparse.Namespace) -> int:
    from .. import conformance
    from ..conformance.cases import GROUPS
    from ..conformance.page import render

    out = Path(args.out)
    unknown = [g for g in args.group if g not in GROUPS]
    if unknown:
        raise _UsageError(f"--group {unknown[0]!r}: no such case group; the groups are {', '.join(GROUPS)}")
    if not args.render_only:
        # SIGTERM as Ctrl-C: the test services started are stopped on the way out
        signal.signal(signal.SIGTERM, signal.default_int_handler)
        clients_path = Path(args.clients)
        try:
            entries = conformance.clients_file(clients_path)
        except ValueError as exc:
            raise _UsageError(str(exc)) from None
        if args.client:
            missing = sorted(set(args.client) - {e.name for e in entries})
            if missing:
                raise _UsageError(
                    f"{clients_path}: no client {missing[0]!r}; it lists {', '.join(e.name for e in entries)}"
                )
            entries = [e for e in entries if e.name in args.client]
        names = {c.name for c in conformance.corpus()}
        if set(args.case) - names:
            raise _UsageError(f"--case {sorted(set(args.case) - names)[0]!r}: no such case")
        try:
            results = conformance.run(
                entries,
                clients_path.resolve().parent.parent,
                out,
                only=args.case,
                groups=args.group,
                progress=_out,
            )
        except RuntimeError as exc:
            raise _UsageError(str(exc)) from None
        _out(f"wrote {out / 'results.json'}: {len(results['clients'])} clients, {results['seconds']:.1f} s")
        broken = [c["name"] for c in results["clients"] if "error" in c]
        if broken:
            raise _UsageError(
                f"the test service of {', '.join(broken)} did not start (see above); the others were scored"
            )
        if args.budget is not None and results["seconds"] > args.budget:
            raise _UsageError(
                f"the run took {results['seconds']:.1f} s, over the budget of {args.budget:.0f} s"
            )
    if args.page:
        try:
            results = json.loads((out / "results.json").read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise _UsageError(f"{out / 'results.json'}: cannot read the results: {exc}") from None
        Path(args.page).write_text(render(results) + "\n", encoding="utf-8")
        _out(f"wrote {args.page}")
    return 0
