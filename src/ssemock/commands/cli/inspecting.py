"""``ssemock show`` and ``ssemock validate``: look at cassettes (their logic is `ssemock.commands.show`
and `ssemock.commands.validate`; these parse arguments and print)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from .output import _out, _out_json, _UsageError

if TYPE_CHECKING:
    from .output import Subparsers


# -- ssemock show ------------------------------------------------------------------------------


def _add_show(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "show",
        help="interactions, chunk timing and sizes, decoded events of a cassette",
        description="Show each interaction of a cassette: request, status, content type, whether it "
        "ended normally, body size and chunk count, time to first chunk, gaps between "
        "chunks, a chunk-size histogram, a timeline of chunk arrivals, the decoded events, "
        "the detected protocol and the text and tool calls they accumulate to.",
    )
    parser.add_argument("cassette", metavar="CASSETTE", help="ssemock cassette file")
    parser.add_argument(
        "--interaction",
        "-i",
        type=int,
        metavar="N",
        default=None,
        help="show only interaction N (0-based; negative counts from the end)",
    )
    parser.add_argument("--events", action="store_true", help="list the decoded events")
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")
    parser.set_defaults(handler=_cmd_show)


def _cmd_show(args: argparse.Namespace) -> int:
    from ... import commands as inspect
    from ...protocols import versions
    from ...store.cassette import Cassette
    from ..show_group import format_group, summarize_groups
    from ..show_stdio import format_stdio, summarize_stdio

    cassette = Cassette.load(args.cassette)
    count = len(cassette.interactions)
    indexes = list(range(count))
    if args.interaction is not None:
        if not -count <= args.interaction < count:
            _out(
                f"ssemock: error: {args.cassette}: no interaction {args.interaction} (the cassette has "
                f"{count}{f': 0..{count - 1}' if count else ''})",
                err=True,
            )
            return 2
        indexes = [args.interaction % count]
    summaries = [inspect.summarize(cassette.interactions[i], i, events=args.events) for i in indexes]
    groups = summarize_groups(cassette.interactions, indexes)  # sessions spanning connections
    children = summarize_stdio(cassette) if args.interaction is None else []
    speaks = versions(cassette.interactions)
    if args.json:
        shown = {
            "path": str(args.cassette),
            "interactions": count,
            "versions": speaks,
            "shown": summaries,
            "groups": groups,
        }
        _out_json({**shown, "stdio": children} if children else shown)
        return 0
    spoken = "; ".join(f"{name} {', '.join(seen)}" for name, seen in speaks.items())
    _out(
        f"{args.cassette}: {count} interaction{'s' if count != 1 else ''}"
        + (f" ({spoken})" if spoken else "")
    )
    for summary in summaries:
        _out()
        _out(inspect.format_summary(summary))
    for group in groups:
        _out()
        _out(format_group(group))
    for child in children:
        _out()
        _out(format_stdio(child))
    return 0


# -- ssemock validate --------------------------------------------------------------------------


def _add_validate(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "validate",
        help="check cassettes: they load, decode, have no secrets (for pre-commit)",
        description="Check cassette files: each loads (format, version, boundary map), its bodies "
        "decode in their framing (SSE, JSON lines, a JSON array, AWS eventstream frames), no "
        "secret is left in it. Spec corner cases the recording exercises (BOM, CR-only line "
        "endings, an unterminated last event, events after [DONE], an unknown protocol) are "
        "warnings; incomplete recordings are notes. "
        "One line per good file; exit 1 when any file has a problem (warnings don't count).",
    )
    parser.add_argument(
        "cassettes",
        nargs="+",
        metavar="CASSETTE",
        help="ssemock cassette file(s), or folders (searched recursively for *.json)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON report per file, as a list")
    parser.add_argument(
        "--protocol",
        default=None,
        metavar="NAME",
        help="accumulate every stream as this protocol (e.g. openai.chat) instead of detecting it",
    )
    parser.add_argument(
        "--verbose",
        "-v",
        action="store_true",
        help="also print the details: each stream's protocol, or that it is plain SSE / JSON lines",
    )
    parser.set_defaults(handler=_cmd_validate)


def _cmd_validate(args: argparse.Namespace) -> int:
    from ... import commands as inspect
    from ...protocols import names

    if args.protocol is not None and args.protocol not in names():
        raise _UsageError(f"unknown protocol {args.protocol!r}; known: {', '.join(names())}")
    files = inspect.cassette_files(args.cassettes)
    if not files:
        raise _UsageError(f"no cassette (*.json) in {', '.join(map(str, args.cassettes))}")
    reports = [inspect.validate_file(path, protocol=args.protocol) for path in files]
    bad = sum(not r.ok for r in reports)
    if args.json:
        _out_json([r.to_dict() for r in reports])
    else:
        for report in reports:
            for line in inspect.format_validation(report, verbose=args.verbose):
                _out(line)
        if len(reports) > 1:
            warned = sum(r.ok and bool(r.of("warning")) for r in reports)
            _out(
                f"{len(reports)} files: {len(reports) - bad - warned} ok, {warned} with warnings, "
                f"{bad} with problems"
            )
    return min(bad, 100)  # the exit code counts the files with problems (0: all good)
