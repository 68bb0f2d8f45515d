"""``ssemock import-har`` and ``ssemock export-har``: trade recordings with browsers' DevTools,
Playwright and mitmproxy (HAR 1.2), each saying what the other format cannot hold."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

from ...store.cassette import Cassette, SecretError
from .output import _findings, _out, _UsageError

if TYPE_CHECKING:
    from .output import Subparsers


def _add_import_har(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "import-har",
        help="convert a HAR 1.2 file (DevTools, Playwright, mitmproxy) to a cassette",
        description="Convert a HAR 1.2 file into a cassette: every entry becomes an interaction, "
        "a WebSocket entry's _webSocketMessages (type, time, opcode, data) its session's "
        "messages. HAR keeps one body per response and no close frames: each response is one "
        "chunk at the entry's end, each session's close is unknown (1006); the command says "
        "how many were affected. Redacted as a recording is, and refused when a secret is left.",
    )
    parser.add_argument("har", metavar="HAR", help="the .har file")
    parser.add_argument("-o", "--out", required=True, metavar="CASSETTE", help="the cassette file to write")
    parser.add_argument(
        "--json", action="store_true", help="print a JSON report (a refusal: with every secret found)"
    )
    parser.set_defaults(handler=_cmd_import_har)


#: what to do about a HAR file refused for a secret
HAR_ADVICE = "remove the secrets from the HAR file (DevTools can export it sanitized) and import it again"


def _cmd_import_har(args: argparse.Namespace) -> int:
    from ..har import import_har

    cassette, notes = import_har(args.har)
    try:
        written = cassette.save(args.out)
    except SecretError as exc:
        findings = [str(f) for f in exc.findings]
        if args.json:
            _out(json.dumps({"har": args.har, "refused": {"findings": findings, "what_to_do": HAR_ADVICE}}))
            return 1
        count = f"{len(findings)} finding{'s' if len(findings) != 1 else ''}"
        _out(f"ssemock: error: {args.har}: not written to {args.out}: a secret is left ({count}):", err=True)
        for line in _findings(findings, HAR_ADVICE):
            _out(line, err=True)
        return 1
    if args.json:
        _out(
            json.dumps(
                {
                    "har": args.har,
                    "written": str(written),
                    "interactions": len(cassette.interactions),
                    "notes": notes,
                }
            )
        )
        return 0
    _out(f"{args.har}: {len(cassette.interactions)} interaction(s) written to {written}")
    for note in notes:
        _out(f"  HAR cannot hold: {note}")
    return 0


def _add_export_har(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "export-har",
        help="write a cassette as a HAR 1.2 file (for DevTools, Playwright, mitmproxy)",
        description="Write a cassette as HAR 1.2. HAR keeps one body per response: the chunk "
        "boundaries and times go into each entry's _ssemockChunks (only ssemock import-har "
        "reads it back); a WebSocket session keeps its messages, not its close code and reason, "
        "fragments, pings or wire chunks. The command says what was dropped.",
    )
    parser.add_argument("cassette", metavar="CASSETTE", help="the cassette file")
    parser.add_argument("-o", "--out", required=True, metavar="HAR", help="the .har file to write")
    parser.set_defaults(handler=_cmd_export_har)


def _cmd_export_har(args: argparse.Namespace) -> int:
    import orjson

    from ..har import export_har

    har, notes = export_har(Cassette.load(args.cassette))
    out = Path(args.out)
    tmp = out.with_name(f".{out.name}.tmp")
    try:
        tmp.write_bytes(orjson.dumps(har, option=orjson.OPT_INDENT_2))
        tmp.replace(out)
    except OSError as exc:
        raise _UsageError(f"cannot write {out}: {exc.strerror or exc}") from exc
    _out(f"{args.cassette}: {len(har['log']['entries'])} entries written to {out}")
    for note in notes:
        _out(f"  HAR cannot hold: {note}")
    return 0
