"""``ssemock rechunk``, ``ssemock redact`` and ``ssemock fix``: rewrite cassettes (new chunk
boundaries, secrets replaced, boundary maps repaired), atomically."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from ...store.cassette import CassetteError
from .output import _out, _UsageError

if TYPE_CHECKING:
    from .output import Subparsers


# -- ssemock rechunk ---------------------------------------------------------------------------


def _add_rechunk(subparsers: Subparsers) -> None:
    from ...variants import chunking, transforms

    def strategy(name: str) -> chunking.Chunking:
        try:
            return chunking.get(name)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    def transform_chain(name: str) -> list[transforms.Transform]:
        try:
            return transforms.resolve(name)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    parser = subparsers.add_parser(
        "rechunk",
        help="rewrite a cassette's chunk boundaries (and body, with a transform)",
        description="Rewrite the boundary map of every interaction with a chunking strategy (the "
        "bytes stay the same), after an optional transform of SSE bodies (which changes "
        "the bytes but not the events). A new chunk gets the recorded time of the chunk "
        "that held its last byte. A boundary map that disagrees with a hand-edited body is "
        "repaired first (see `ssemock fix`).",
    )
    parser.add_argument("cassette", metavar="CASSETTE", help="ssemock cassette file")
    parser.add_argument(
        "--chunking",
        required=True,
        type=strategy,
        metavar="NAME",
        help="as_recorded, bytewise, mid_line, mid_utf8, coalesced, per_event, fixed:N, "
        "random:SEED[:AVG:VAR]",
    )
    parser.add_argument(
        "--transform",
        type=transform_chain,
        default=[],
        metavar="NAME",
        help="crlf, cr, mixed, no_space, keepalive[:COMMENT], comments, ids, meta, retry, pad[:N], raw_unicode, blank_lines; chain with '+'",
    )
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--output", "-o", metavar="FILE", help="write the result to FILE")
    where.add_argument("--in-place", action="store_true", help="rewrite CASSETTE (atomically)")
    where.add_argument(
        "--preview",
        action="store_true",
        help="print the new chunk counts and the first chunks; write nothing",
    )
    parser.set_defaults(handler=_cmd_rechunk)


def _cmd_rechunk(args: argparse.Namespace) -> int:
    from ... import commands as inspect

    cassette, repairs = inspect.repair_file(args.cassette)
    for fixed in repairs:
        if fixed.changed:
            _out(
                f"ssemock: {args.cassette}: interaction {fixed.interaction}: boundary map repaired first: "
                f"{fixed.message}",
                err=True,
            )
    shown = 5 if args.preview else 0
    how = args.chunking.name + "".join(f"+{t}" for t in args.transform)
    for r in inspect.rechunk(cassette, args.chunking, args.transform, keep_chunks=shown):
        size = f"{r.body_before} bytes" + (
            f" -> {r.body_after} bytes" if r.body_after != r.body_before else ""
        )
        _out(f"interaction {r.index}: {r.before} -> {r.after} chunks ({how}), {size}")
        if r.note:
            _out(f"  note: {r.note}")
        for k, (t, chunk) in enumerate(r.chunks):
            text = repr(chunk)
            _out(
                f"  [{k}] {t * 1000:8.1f} ms {len(chunk):6} B  {text if len(text) <= 72 else text[:71] + '…'}"
            )
        if shown and r.after > len(r.chunks):
            _out(f"  ... {r.after - len(r.chunks)} more")
    if args.preview:
        return 0
    target = args.output if args.output is not None else args.cassette
    cassette.save(target)
    _out(f"wrote {target}")
    return 0


# -- ssemock redact ----------------------------------------------------------------------------


def _add_redact(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "redact",
        help="redact secrets in cassettes, in place (--check: only report)",
        description="Apply the default redaction rules to every interaction (authorization, API-key "
        "and cookie headers, key-like query parameters, set-cookie) and replace secrets "
        "found anywhere else (bodies, other headers, URLs) with REDACTED, shifting the "
        "boundary map of a body that changes length. Files are rewritten atomically. "
        "With --check nothing is written and the exit code is 1 if anything would change.",
    )
    parser.add_argument(
        "cassettes",
        nargs="+",
        metavar="CASSETTE",
        help="ssemock cassette file(s), or folders (searched recursively for *.json)",
    )
    parser.add_argument(
        "--check", action="store_true", help="only report what would change (exit 1 if anything)"
    )
    parser.set_defaults(handler=_cmd_redact)


def _cmd_redact(args: argparse.Namespace) -> int:
    from ... import commands as inspect
    from ...redaction.rules import find_secrets
    from ...store.cassette import Cassette

    files = inspect.cassette_files(args.cassettes)
    if not files:
        raise _UsageError(f"no cassette (*.json) in {', '.join(map(str, args.cassettes))}")
    status = 0
    for path in files:
        try:
            cassette = Cassette.load(path)
        except CassetteError as exc:
            _out(f"ssemock: error: {exc}", err=True)
            status = 1
            continue
        changes = inspect.redact(cassette)
        if not changes:
            _out(f"ok    {path}: nothing to redact")
        elif args.check:
            _out(f"would redact {path}: {len(changes)} change{'s' if len(changes) != 1 else ''}")
            status = 1
        leaks = find_secrets(cassette)
        if changes and not args.check and not leaks:
            cassette.save(path, scan_secrets=False)  # scanned just above
            _out(f"redacted {path}: {len(changes)} change{'s' if len(changes) != 1 else ''}")
        elif changes and not args.check:
            _out(
                f"not written {path}: a secret is left that `ssemock redact` cannot replace where it is stored "
                "(found decoded: base64, compressed, split across events); fix it in the file or re-record with "
                "a before_record_response hook",
                err=True,
            )
        for change in changes:
            _out(f"  {change}")
        for leak in leaks:
            _out(f"ssemock: error: {path}: a secret is left after redaction: {leak}", err=True)
            status = 1
    return status


# -- ssemock fix -------------------------------------------------------------------------------


def _add_fix(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "fix",
        help="repair boundary maps that disagree with a hand-edited body",
        description="Load a cassette without trusting its boundary maps and rebuild the ones that "
        "disagree with their body: the old boundaries that still fall inside the body are "
        "kept; when the body was edited (its length changed) the map becomes one chunk "
        "per event with the old times taken by event order. Exit 1 when the file cannot "
        "be repaired (not JSON, another kind of damage). --reformat also rewrites a file "
        "that needs no repair but is not in ssemock's current layout (one written before "
        "chunk maps took a line per [t_ms, end] pair, or laid out by hand).",
    )
    parser.add_argument("cassette", metavar="CASSETTE", help="ssemock cassette file")
    parser.add_argument("--output", "-o", metavar="FILE", help="write the result to FILE (default: in place)")
    parser.add_argument(
        "--reformat",
        action="store_true",
        help="rewrite the file in ssemock's current layout even when nothing needs repair",
    )
    parser.set_defaults(handler=_cmd_fix)


def _cmd_fix(args: argparse.Namespace) -> int:
    from ... import commands as inspect
    from ...store.cassette import read_file

    try:
        raw = read_file(args.cassette)
        cassette, repairs = inspect.repair(raw, args.cassette)
    except CassetteError as exc:
        _out(f"ssemock: error: {exc} (not repairable)", err=True)
        return 1
    for r in repairs:
        _out(f"{args.cassette}: interaction {r.interaction}: {'repaired: ' if r.changed else ''}{r.message}")
    repaired = any(r.changed for r in repairs)
    # saving would change its layout (not asked when it is written elsewhere anyway)
    relaid = not repaired and (args.output is None or args.reformat) and cassette.dumps() != raw
    del raw
    if not repaired and args.output is None and not (relaid and args.reformat):
        _out(
            f"{args.cassette}: nothing to fix"
            + (
                " (its layout is not ssemock's current one: `ssemock fix --reformat` rewrites it, "
                "a chunk map pair a line)"
                if relaid
                else ""
            )
        )
        return 0
    if relaid and args.reformat:
        _out(f"{args.cassette}: reformatted in ssemock's current layout")
    target = args.output if args.output is not None else args.cassette
    cassette.save(target)
    _out(f"wrote {target}")
    return 0
