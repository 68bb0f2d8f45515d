"""The ``ssemock`` command line: ``ssemock COMMAND [options]``.

Each subcommand is one ``_add_<name>(subparsers)`` function that builds its parser and sets
``handler`` (``Namespace -> exit code``); :func:`main` parses, dispatches and turns expected
errors into a message and an exit code. Heavy imports (the demo's server and SDKs) happen inside
the handlers, so ``ssemock --help`` works without the optional extras.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from . import __version__
from .cassette import CassetteError
from .redact import escape_control, mask_text

__all__ = ["build_parser", "main"]

Handler = Callable[[argparse.Namespace], int]


def _out(text: str = "", *, err: bool = False) -> None:
    """Print a line of output: secrets masked, control characters escaped (a cassette's text never
    reaches the terminal raw). Every command prints through here."""
    stream = sys.stderr if err else sys.stdout
    stream.write(escape_control(mask_text(text)) + "\n")
    stream.flush()
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
                        help="keep the demo's cassette, in a new folder under DIR (default: a temporary folder, "
                             "removed at the end)")
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
        _out(json.dumps(result.as_dict(), indent=2))
    else:
        result = run_demo(Console(), directory=args.dir)
    return 0 if result.live_ok and result.real_clients_ok else 1


# -- ssemock serve -----------------------------------------------------------------------------

def _add_serve(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "serve", help="replay cassettes over a real HTTP server (for requests, aiohttp, curl, browsers)",
        description="Serve the cassettes' interactions on a real HTTP server: a request is matched by "
                    "method, path, query (and JSON body, when recorded) and answered with the recorded "
                    "status, headers and chunks, each chunk its own write, re-chunked, transformed, timed "
                    "and faulted as asked. A disconnect fault really drops the connection; an "
                    "EventSource GET matches a recorded SSE stream by path, and a reconnection with "
                    "Last-Event-ID resumes after that event. Unmatched requests get a 404 listing the "
                    "recorded requests (secrets masked). One log line per request (--quiet: none). "
                    "No CORS header unless --cors. Needs the 'serve' extra.")
    parser.add_argument("cassettes", nargs="+", metavar="CASSETTE", help="cassette file(s) to serve")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    parser.add_argument("--port", type=int, default=0, help="port to listen on (default: 0, any free port)")
    parser.add_argument("--chunking", default="as_recorded", metavar="NAME",
                        help="as_recorded (default), bytewise, mid_line, mid_utf8, coalesced, per_event, "
                             "fixed:N, random:SEED")
    parser.add_argument("--transform", default=None, metavar="NAME",
                        help="crlf, cr, mixed, no_space, keepalive[:COMMENT], comments, ids, meta, retry, pad[:N], raw_unicode, blank_lines; chain with '+'")
    parser.add_argument("--timing", default="instant", metavar="instant|recorded|scaled:F",
                        help="when chunks are sent (default: instant)")
    parser.add_argument("--faults", default=None, metavar="SPEC",
                        help="e.g. disconnect:after_event=3, stall:before_event=2,seconds=5, "
                             "http_error:status=429; several separated by ';'")
    parser.add_argument("--match-on", default=None, metavar="NAMES",
                        help="comma-separated matchers (default: method,path,query,body; also headers, url)")
    parser.add_argument("--cors", default=None, metavar="ORIGIN",
                        help="allow this origin ('*' for any) and answer preflights; default: no CORS header")
    parser.add_argument("--max-body", type=int, default=None, metavar="BYTES",
                        help="the largest request body accepted, larger ones get 413 (default: 8 MiB)")
    parser.add_argument("--quiet", "-q", action="store_true", help="no access log line per request")
    parser.set_defaults(handler=_cmd_serve)


def _cmd_serve(args: argparse.Namespace) -> int:
    import signal
    import threading

    try:
        import uvicorn  # noqa: F401  (run by ssemock.server.running)

        from .serve import DEFAULT_MAX_BODY, app
        from .server import running
    except ImportError as exc:
        raise _UsageError(f"serve needs the 'serve' extra ({exc.name or exc}): pip install 'ssemock[serve]'") from exc
    try:
        match_on = [m.strip() for m in args.match_on.split(",") if m.strip()] if args.match_on else None
        asgi = app(args.cassettes, chunking=args.chunking, transform=args.transform, timing=args.timing,
                   faults=args.faults, match_on=match_on, cors=args.cors,
                   max_body=DEFAULT_MAX_BODY if args.max_body is None else args.max_body,
                   log=None if args.quiet else _out)
    except CassetteError:
        raise
    except ValueError as exc:
        raise _UsageError(str(exc)) from exc
    replayer = asgi.state.ssemock

    def stop(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, stop)  # a plain `kill` stops it cleanly, as Ctrl-C does
    try:
        with running(asgi, host=args.host, port=args.port) as url:
            _out(f"ssemock: serving on {url}")
            _out(f"{len(replayer.interactions)} interaction(s) from {len(replayer.cassettes)} cassette(s):")
            for line in replayer.routes():
                _out(f"  {line}")
            _out(f"chunking={replayer.chunking} transform={'+'.join(map(str, replayer.transforms)) or None} "
                  f"timing={replayer.timing} faults={';'.join(map(str, replayer.faults)) or None}; "
                  "Ctrl-C to stop")
            threading.Event().wait()
    except OSError as exc:
        raise _UsageError(f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}") from exc
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
    return 0


# -- ssemock show ------------------------------------------------------------------------------

def _add_show(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "show", help="interactions, chunk timing and sizes, decoded events of a cassette",
        description="Show each interaction of a cassette: request, status, content type, whether it "
                    "ended normally, body size and chunk count, time to first chunk, gaps between "
                    "chunks, a chunk-size histogram, a timeline of chunk arrivals, the decoded events, "
                    "the detected protocol and the text and tool calls they accumulate to.")
    parser.add_argument("cassette", metavar="CASSETTE", help="ssemock cassette file")
    parser.add_argument("--interaction", "-i", type=int, metavar="N", default=None,
                        help="show only interaction N (0-based; negative counts from the end)")
    parser.add_argument("--events", action="store_true", help="list the decoded events")
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")
    parser.set_defaults(handler=_cmd_show)


def _cmd_show(args: argparse.Namespace) -> int:
    from . import inspect
    from .cassette import Cassette

    cassette = Cassette.load(args.cassette)
    count = len(cassette.interactions)
    indexes = list(range(count))
    if args.interaction is not None:
        if not -count <= args.interaction < count:
            _out(f"ssemock: error: {args.cassette}: no interaction {args.interaction} (the cassette has "
                  f"{count}{f': 0..{count - 1}' if count else ''})", err=True)
            return 2
        indexes = [args.interaction % count]
    summaries = [inspect.summarize(cassette.interactions[i], i, events=args.events) for i in indexes]
    if args.json:
        _out(json.dumps({"path": str(args.cassette), "interactions": count, "shown": summaries}, indent=2,
                        ensure_ascii=False))
        return 0
    _out(f"{args.cassette}: {count} interaction{'s' if count != 1 else ''}")
    for summary in summaries:
        _out()
        _out(inspect.format_summary(summary))
    return 0


# -- ssemock validate --------------------------------------------------------------------------

def _add_validate(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "validate", help="check cassettes: they load, decode, have no secrets (for pre-commit)",
        description="Check cassette files: each loads (format, version, boundary map), its bodies "
                    "decode in their framing (SSE, JSON lines, a JSON array, AWS eventstream frames), no "
                    "secret is left in it. Spec corner cases the recording exercises (BOM, CR-only line "
                    "endings, an unterminated last event, events after [DONE], an unknown protocol) are "
                    "warnings; incomplete recordings are notes. "
                    "One line per good file; exit 1 when any file has a problem (warnings don't count).")
    parser.add_argument("cassettes", nargs="+", metavar="CASSETTE", help="ssemock cassette file(s)")
    parser.add_argument("--json", action="store_true", help="print one JSON report per file, as a list")
    parser.set_defaults(handler=_cmd_validate)


def _cmd_validate(args: argparse.Namespace) -> int:
    from . import inspect

    reports = [inspect.validate_file(path) for path in args.cassettes]
    if args.json:
        _out(json.dumps([r.to_dict() for r in reports], indent=2, ensure_ascii=False))
    else:
        for report in reports:
            for line in inspect.format_validation(report):
                _out(line)
        if len(reports) > 1:
            bad = sum(not r.ok for r in reports)
            warned = sum(r.ok and bool(r.of("warning")) for r in reports)
            _out(f"{len(reports)} files: {len(reports) - bad - warned} ok, {warned} with warnings, "
                  f"{bad} with problems")
    return 0 if all(r.ok for r in reports) else 1


# -- ssemock rechunk ---------------------------------------------------------------------------

def _add_rechunk(subparsers: Subparsers) -> None:
    from . import chunking, transforms

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
        "rechunk", help="rewrite a cassette's chunk boundaries (and body, with a transform)",
        description="Rewrite the boundary map of every interaction with a chunking strategy (the "
                    "bytes stay the same), after an optional transform of SSE bodies (which changes "
                    "the bytes but not the events). A new chunk gets the recorded time of the chunk "
                    "that held its last byte. A boundary map that disagrees with a hand-edited body is "
                    "repaired first (see `ssemock fix`).")
    parser.add_argument("cassette", metavar="CASSETTE", help="ssemock cassette file")
    parser.add_argument("--chunking", required=True, type=strategy, metavar="NAME",
                        help="as_recorded, bytewise, mid_line, mid_utf8, coalesced, per_event, fixed:N, "
                             "random:SEED[:AVG:VAR]")
    parser.add_argument("--transform", type=transform_chain, default=[], metavar="NAME",
                        help="crlf, cr, mixed, no_space, keepalive[:COMMENT], comments, ids, meta, retry, pad[:N], raw_unicode, blank_lines; chain with '+'")
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--output", "-o", metavar="FILE", help="write the result to FILE")
    where.add_argument("--in-place", action="store_true", help="rewrite CASSETTE (atomically)")
    where.add_argument("--preview", action="store_true",
                       help="print the new chunk counts and the first chunks; write nothing")
    parser.set_defaults(handler=_cmd_rechunk)


def _cmd_rechunk(args: argparse.Namespace) -> int:
    from . import inspect

    cassette, repairs = inspect.repair_file(args.cassette)
    for fixed in repairs:
        if fixed.changed:
            _out(f"ssemock: {args.cassette}: interaction {fixed.interaction}: boundary map repaired first: "
                  f"{fixed.message}", err=True)
    shown = 5 if args.preview else 0
    how = args.chunking.name + "".join(f"+{t}" for t in args.transform)
    for r in inspect.rechunk(cassette, args.chunking, args.transform, keep_chunks=shown):
        size = f"{r.body_before} bytes" + (f" -> {r.body_after} bytes" if r.body_after != r.body_before else "")
        _out(f"interaction {r.index}: "
              f"{r.before} -> {r.after} chunks ({how}), {size}")
        if r.note:
            _out(f"  note: {r.note}")
        for k, (t, chunk) in enumerate(r.chunks):
            text = repr(chunk)
            _out(f"  [{k}] {t * 1000:8.1f} ms {len(chunk):6} B  {text if len(text) <= 72 else text[:71] + '…'}")
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
        "redact", help="redact secrets in cassettes, in place (--check: only report)",
        description="Apply the default redaction rules to every interaction (authorization, API-key "
                    "and cookie headers, key-like query parameters, set-cookie) and replace secrets "
                    "found anywhere else (bodies, other headers, URLs) with REDACTED, shifting the "
                    "boundary map of a body that changes length. Files are rewritten atomically. "
                    "With --check nothing is written and the exit code is 1 if anything would change.")
    parser.add_argument("cassettes", nargs="+", metavar="CASSETTE", help="ssemock cassette file(s)")
    parser.add_argument("--check", action="store_true", help="only report what would change (exit 1 if anything)")
    parser.set_defaults(handler=_cmd_redact)


def _cmd_redact(args: argparse.Namespace) -> int:
    from . import inspect
    from .cassette import Cassette
    from .redact import find_secrets

    status = 0
    for path in args.cassettes:
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
            _out(f"not written {path}: a secret is left that `ssemock redact` cannot replace where it is stored "
                 "(found decoded: base64, compressed, split across events); fix it in the file or re-record with "
                 "a before_record_response hook", err=True)
        for change in changes:
            _out(f"  {change}")
        for leak in leaks:
            _out(f"ssemock: error: {path}: a secret is left after redaction: {leak}", err=True)
            status = 1
    return status


# -- ssemock fix -------------------------------------------------------------------------------

def _add_fix(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "fix", help="repair boundary maps that disagree with a hand-edited body",
        description="Load a cassette without trusting its boundary maps and rebuild the ones that "
                    "disagree with their body: the old boundaries that still fall inside the body are "
                    "kept; when the body was edited (its length changed) the map becomes one chunk "
                    "per event with the old times taken by event order. Exit 1 when the file cannot "
                    "be repaired (not JSON, another kind of damage).")
    parser.add_argument("cassette", metavar="CASSETTE", help="ssemock cassette file")
    parser.add_argument("--output", "-o", metavar="FILE", help="write the result to FILE (default: in place)")
    parser.set_defaults(handler=_cmd_fix)


def _cmd_fix(args: argparse.Namespace) -> int:
    from . import inspect

    try:
        cassette, repairs = inspect.repair_file(args.cassette)
    except CassetteError as exc:
        _out(f"ssemock: error: {exc} (not repairable)", err=True)
        return 1
    for r in repairs:
        _out(f"{args.cassette}: interaction {r.interaction}: {'repaired: ' if r.changed else ''}{r.message}")
    if not any(r.changed for r in repairs) and args.output is None:
        _out(f"{args.cassette}: nothing to fix")
        return 0
    target = args.output if args.output is not None else args.cassette
    cassette.save(target)
    _out(f"wrote {target}")
    return 0


# -- ssemock import-vcr ------------------------------------------------------------------------

def _add_import_vcr(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "import-vcr", help="convert a vcrpy / pytest-recording cassette to an ssemock cassette",
        description="Convert a vcrpy or pytest-recording cassette (YAML, or vcrpy's JSON serializer) "
                    "into an ssemock cassette. vcrpy keeps neither chunk boundaries nor timing, so "
                    "each response gets one chunk per event, all at t=0. Compressed bodies are "
                    "decoded. The default redaction rules are applied; if a secret is left the file "
                    "is not written (exit 1) unless --scrub-bodies replaces it.")
    parser.add_argument("vcr_cassette", metavar="VCR_CASSETTE", help="vcrpy cassette (.yaml, .yml or .json)")
    parser.add_argument("-o", "--output", metavar="OUTPUT", default=None,
                        help="ssemock cassette to write (default: VCR_CASSETTE with a .json suffix, or "
                             "NAME.ssemock.json for a .json input)")
    parser.add_argument("--scrub-bodies", action="store_true",
                        help="also replace secrets found in bodies and other headers with REDACTED "
                             "(as `ssemock redact` does)")
    parser.set_defaults(handler=_cmd_import_vcr)


def _cmd_import_vcr(args: argparse.Namespace) -> int:
    from pathlib import Path

    from . import inspect
    from .redact import find_secrets
    from .vcr import NO_BOUNDARIES, import_vcr

    source = Path(args.vcr_cassette)
    cassette = import_vcr(source)
    if args.output is not None:
        target = Path(args.output)
    else:
        target = source.with_suffix(".json")
        if target == source:
            target = source.with_name(f"{source.stem}.ssemock.json")
    _out(f"ssemock: note: {NO_BOUNDARIES}", err=True)
    if args.scrub_bodies:
        for change in inspect.redact(cassette):
            _out(f"scrubbed {change}")
    leaks = find_secrets(cassette)
    if leaks:
        for leak in leaks:
            _out(f"ssemock: error: {source}: a secret is left after redaction: {leak}", err=True)
        _out(f"ssemock: error: {source}: refusing to write {target}: remove the secrets from the vcrpy "
              "cassette (or filter them when recording), or import with --scrub-bodies", err=True)
        return 1
    cassette.save(target)
    count = len(cassette.interactions)
    _out(f"wrote {target}: {count} interaction{'s' if count != 1 else ''}")
    return 0


# -- parser and dispatch -----------------------------------------------------------------------

#: One function per subcommand, in the order ``--help`` lists them.
_COMMANDS: list[Callable[[Subparsers], None]] = [
    _add_demo, _add_serve, _add_show, _add_validate, _add_rechunk, _add_redact, _add_fix, _add_import_vcr,
]


class _Parser(argparse.ArgumentParser):
    """argparse's own messages (usage errors quote the arguments) masked and escaped too."""

    def _print_message(self, message: str, file: Any = None) -> None:
        super()._print_message(escape_control(mask_text(message)) if message else message, file)


class _UsageError(Exception):
    """An expected failure: printed as ``ssemock: error: ...`` with exit code 1, no traceback."""


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="ssemock",
        description="Record and replay streaming HTTP (SSE, JSON lines) with chunk boundaries and timing kept.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    subparsers: Subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands",
                                                   parser_class=_Parser)
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
        _out(f"ssemock: error: {exc}", err=True)
        return 1
    except OSError as exc:  # writing a result: a folder that cannot be made, a full disk
        where = " ".join(getattr(exc, "__notes__", [])).removeprefix("ssemock: ") or exc.filename or ""
        print(f"ssemock: error: {exc.strerror or exc}{f' ({where})' if where else ''}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `ssemock show ... | head`: the reader left; stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    raise SystemExit(main())
