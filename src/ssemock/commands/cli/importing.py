"""``ssemock import-vcr``, ``ssemock migrate`` and ``ssemock accept``: bring recordings made elsewhere
in as cassettes (vcrpy's, a whole pytest-recording suite, a recording refused for a secret)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from ...redaction.rules import escape_control, mask_text
from .output import _findings, _out, _out_json, _UsageError

if TYPE_CHECKING:
    from ..import_vcr import ImportSummary
    from .output import Subparsers


# -- ssemock import-vcr ------------------------------------------------------------------------


def _add_import_vcr(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "import-vcr",
        help="convert vcrpy / pytest-recording cassettes (files, folders, globs) to ssemock cassettes",
        description="Convert vcrpy or pytest-recording cassettes (YAML, or vcrpy's JSON serializer) into "
        "ssemock cassettes: files, folders (searched recursively for .yaml, .yml, .json) and "
        "glob patterns. Each cassette is written beside its source (NAME.yaml -> NAME.json, "
        "where the ssemock plugin looks) or, with --out, into a folder mirroring the tree. "
        "vcrpy keeps neither chunk boundaries nor timing, so each response gets one chunk per "
        "event (SSE event, JSON line, JSON array element), all at t=0. Compressed bodies are "
        "decoded. Prints what was converted, skipped (already converted, up to date) and "
        "refused (why: the interaction and the field); exit 1 when anything was refused.",
    )
    parser.add_argument(
        "paths",
        metavar="PATH",
        nargs="+",
        help="a vcrpy cassette, a folder of them (recursive) or a glob pattern (** recursive)",
    )
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--out",
        metavar="FOLDER",
        default=None,
        help="write into FOLDER, mirroring the tree under each PATH (default: beside each source)",
    )
    where.add_argument(
        "-o",
        "--output",
        metavar="OUTPUT",
        default=None,
        help="with one vcrpy cassette: the ssemock cassette to write",
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="drop the fields ssemock cannot carry over (an unknown body key, a custom reason "
        "phrase, vcrpy metadata) instead of refusing the file; what was dropped is listed",
    )
    parser.add_argument(
        "--replace-json",
        action="store_true",
        help="replace a vcrpy .json cassette by its conversion (default: NAME.ssemock.json "
        "beside it, as the vcrpy file keeps its name)",
    )
    parser.add_argument(
        "--scrub-bodies",
        action="store_true",
        help="also replace secrets found in bodies and other headers with REDACTED "
        "(as `ssemock redact` does)",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="print one JSON report (converted, skipped, refused: each with every secret found)",
    )
    parser.set_defaults(handler=_cmd_import_vcr)


#: what to do about a vcrpy cassette refused for a secret
IMPORT_ADVICE = (
    "remove the secrets from the vcrpy cassette (or filter them when recording), or import with "
    "--scrub-bodies (each one replaced with REDACTED)"
)


def _cmd_import_vcr(args: argparse.Namespace) -> int:
    from ..import_vcr import NO_BOUNDARIES, import_file, import_paths

    if args.output is not None:
        if len(args.paths) != 1:
            raise _UsageError("-o/--output takes one vcrpy cassette; for several, use --out FOLDER")
        summary = import_file(args.paths[0], args.output, force=args.force, scrub_bodies=args.scrub_bodies)
    else:
        summary = import_paths(
            args.paths,
            out=args.out,
            force=args.force,
            scrub_bodies=args.scrub_bodies,
            replace_json=args.replace_json,
        )
    if args.json:
        _out_json(_report(summary))
        return 0 if summary.ok else 1
    if summary.converted:
        _out(f"ssemock: note: {NO_BOUNDARIES}", err=True)
    for c in summary.converted:
        _out(
            f"converted {c.source} -> {c.target}: {c.interactions} interaction{'s' if c.interactions != 1 else ''}"
        )
        for line in c.scrubbed:
            _out(f"  scrubbed {line}")
        for line in c.dropped:
            _out(f"  dropped {line}")
        if c.note:
            _out(f"  note: {c.note}")
    for s in summary.skipped:
        _out(f"skipped {s.source}: {s.reason}")
    for r in summary.refused:
        _out(f"ssemock: error: refused {r.source}: {r.reason}{':' if r.findings else ''}", err=True)
        if r.findings:
            for line in _findings(r.findings, IMPORT_ADVICE):
                _out(line, err=True)
    _out(f"import-vcr: {summary.counts()}")
    return 0 if summary.ok else 1


def _report(summary: ImportSummary) -> dict[str, object]:
    """``import-vcr --json``: every file and what happened to it, every finding of a refusal."""
    return {
        "converted": [
            {
                "source": str(c.source),
                "target": str(c.target),
                "interactions": c.interactions,
                "dropped": list(c.dropped),
                "scrubbed": list(c.scrubbed),
                **({"note": c.note} if c.note else {}),
            }
            for c in summary.converted
        ],
        "skipped": [{"source": str(s.source), "reason": s.reason} for s in summary.skipped],
        "refused": [
            {
                "source": str(r.source),
                "reason": r.reason,
                **({"findings": list(r.findings), "what_to_do": IMPORT_ADVICE} if r.findings else {}),
            }
            for r in summary.refused
        ],
        "counts": summary.counts(),
    }


# -- ssemock migrate ---------------------------------------------------------------------------


def _add_migrate(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "migrate",
        help="migrate a pytest-recording / vcrpy test suite to ssemock (dry run without --write)",
        description="Find the vcrpy cassettes under PATH and convert them (one ssemock cassette beside each, "
        "named as the plugin looks for it); rewrite the tests (pytest.mark.vcr, default_cassette, "
        "block_network, vcr_config, vcr_cassette_dir, vcr.use_cassette) and --record-mode in the "
        "pytest ini files. vcrpy's matchers (no body) go into ssemock_config unless --match-body. "
        "Without --write it prints a unified diff and changes nothing. A file that does not parse is "
        "reported and left alone; what cannot be converted is listed with file and line. Needs the "
        "'migrate' extra (libcst).",
    )
    parser.add_argument("path", metavar="PATH", help="the test folder (or one test file)")
    parser.add_argument("--write", action="store_true", help="apply the changes (default: show them)")
    parser.add_argument(
        "--match-body",
        action="store_true",
        help="keep ssemock's default matchers, the request body included (finds stale cassettes)",
    )
    parser.add_argument(
        "--remove-originals",
        action="store_true",
        help="with --write, delete the vcrpy cassettes that were converted",
    )
    parser.set_defaults(handler=_cmd_migrate)


def _cmd_migrate(args: argparse.Namespace) -> int:
    try:
        from ..migrate import plan

        migration = plan(args.path, match_body=args.match_body)
    except (ImportError, FileNotFoundError) as exc:
        raise _UsageError(str(exc)) from None
    diff = migration.diff()
    if diff and not args.write:
        sys.stdout.write(escape_control(mask_text(diff)))
    written = migration.write(remove_originals=args.remove_originals) if args.write else []
    for job in migration.cassettes:
        if not any(f.path in job.sources for f in migration.refused):
            _out(
                f"{'converted' if args.write else 'would convert'} "
                f"{', '.join(str(s) for s in job.sources)} -> {job.target}"
            )
    for finding in migration.refused:
        _out(f"refused   {finding}", err=True)
    for finding in migration.unparsable:
        _out(f"unparsable {finding}", err=True)
    if migration.todo:
        _out(f"not converted, or to check ({len(migration.todo)}):")
        for finding in migration.todo:
            _out(f"  {finding}")
    edits = len(migration.edits)
    if args.write:
        _out(
            f"wrote {len(written)} files ({edits} edited or new, {len(written) - edits} cassettes)"
            + (", removed the converted vcrpy cassettes" if args.remove_originals else "")
        )
    else:
        _out(
            f"dry run: {edits} files and {len(migration.cassettes)} cassettes would change; nothing written "
            "(run again with --write)"
        )
    return 1 if migration.unparsable or migration.refused else 0


# -- ssemock accept ----------------------------------------------------------------------------


def _add_accept(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "accept",
        help="make a refused recording (NAME.refused.json, secrets masked) the cassette",
        description="A recording refused for a secret is kept beside its cassette as NAME.refused.json "
        "with every secret masked (REDACTED), so the paid call need not be made again. This "
        "shows every masked field, scans the file again, and, when no secret is left, "
        "writes it as the cassette NAME.json (atomically, replacing it) and removes "
        "NAME.refused.json. With --check nothing is written.",
    )
    parser.add_argument("refused", metavar="NAME.refused.json", help="a refused recording")
    parser.add_argument("--check", action="store_true", help="only show what was masked; write nothing")
    parser.set_defaults(handler=_cmd_accept)


def _cmd_accept(args: argparse.Namespace) -> int:
    from pathlib import Path

    from ...redaction.keep import masked_fields, refused_target
    from ...redaction.rules import find_secrets
    from ...store.cassette import Cassette
    from ...store.lock import lock_for

    source = Path(args.refused)
    try:
        target = refused_target(source)
    except ValueError as exc:
        raise _UsageError(str(exc)) from None
    cassette = Cassette.load(source)
    masked = masked_fields(cassette)
    _out(
        f"{source}: {len(cassette.interactions)} interaction{'s' if len(cassette.interactions) != 1 else ''}, "
        f"{len(masked)} masked field{'s' if len(masked) != 1 else ''}"
    )
    for line in masked:
        _out(f"  masked: {line}")
    leaks = find_secrets(cassette)
    if leaks:
        for leak in leaks:
            _out(f"ssemock: error: {source}: a secret is left in it: {leak}", err=True)
        _out(
            f"ssemock: error: not accepted: run `ssemock redact {source}` (or edit it), then accept it again",
            err=True,
        )
        return 1
    if args.check:
        _out(f"would write {target}")
        return 0
    with lock_for(target):
        cassette.save(target, scan_secrets=False)  # scanned just above
        source.unlink()
    _out(f"accepted {source}: wrote {target}")
    return 0
