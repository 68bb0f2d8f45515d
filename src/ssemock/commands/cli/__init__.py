"""The ``ssemock`` command line: ``ssemock COMMAND [options]``.

Each subcommand is one ``_add_<name>(subparsers)`` function that builds its parser and sets
``handler`` (``Namespace -> exit code``); `main` parses, dispatches and turns expected
errors into a message and an exit code. Heavy imports (the demo's server and SDKs) happen inside
the handlers, so ``ssemock --help`` works without the optional extras.
"""

# One module for every command's parser and handler, on purpose: each is a short `_add_<name>`
# and a handler that only parses and prints; the commands' logic lives elsewhere (ssemock.commands,
# one module per command; demo, serve, vcr, migrate, keep).

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ..redaction.rules import escape_control, mask_text
from ..store.cassette import CassetteError
from .doctor import install_hint

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

        from .demo import run_demo
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


# -- ssemock serve -----------------------------------------------------------------------------


def _add_serve(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "serve",
        help="replay cassettes over a real HTTP server (for requests, aiohttp, curl, browsers)",
        description="Serve the cassettes' interactions on a real HTTP server: a request is matched by "
        "method, path, query (and JSON body, when recorded) and answered with the recorded "
        "status, headers and chunks, each chunk its own write, re-chunked, transformed, timed "
        "and faulted as asked. A disconnect fault really drops the connection; an "
        "EventSource GET matches a recorded SSE stream by path, and a reconnection with "
        "Last-Event-ID resumes after that event. Unmatched requests get a 404 listing the "
        "recorded requests (secrets masked). One log line per request (--quiet: none). "
        "No CORS header unless --cors. Needs the 'serve' extra.",
    )
    parser.add_argument("cassettes", nargs="+", metavar="CASSETTE", help="cassette file(s) to serve")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    parser.add_argument("--port", type=int, default=0, help="port to listen on (default: 0, any free port)")
    parser.add_argument(
        "--chunking",
        default="as_recorded",
        metavar="NAME",
        help="as_recorded (default), bytewise, mid_line, mid_utf8, coalesced, per_event, "
        "fixed:N, random:SEED",
    )
    parser.add_argument(
        "--transform",
        default=None,
        metavar="NAME",
        help="crlf, cr, mixed, no_space, keepalive[:COMMENT], comments, ids, meta, retry, pad[:N], raw_unicode, blank_lines; chain with '+'",
    )
    parser.add_argument(
        "--timing",
        default="instant",
        metavar="instant|recorded|scaled:F",
        help="when chunks are sent (default: instant)",
    )
    parser.add_argument(
        "--faults",
        default=None,
        metavar="SPEC",
        help="e.g. disconnect:after_event=3, stall:before_event=2,seconds=5, "
        "http_error:status=429; several separated by ';'",
    )
    parser.add_argument(
        "--match-on",
        default=None,
        metavar="NAMES",
        help="comma-separated matchers (default: method,path,query,body; also headers, url)",
    )
    parser.add_argument(
        "--cors",
        default=None,
        metavar="ORIGIN",
        help="allow this origin ('*' for any) and answer preflights; default: no CORS header",
    )
    parser.add_argument(
        "--max-body",
        type=int,
        default=None,
        metavar="BYTES",
        help="the largest request body accepted, larger ones get 413 (default: 8 MiB)",
    )
    parser.add_argument(
        "--header-timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="close a connection that has not sent a request's headers within SECONDS (default: 10)",
    )
    parser.add_argument(
        "--max-connections",
        type=int,
        default=None,
        metavar="N",
        help="connections open at once; one past it is closed at once (default: 256)",
    )
    parser.add_argument("--quiet", "-q", action="store_true", help="no access log line per request")
    parser.set_defaults(handler=_cmd_serve)


def _cmd_serve(args: argparse.Namespace) -> int:
    import signal
    import threading

    try:
        import uvicorn  # noqa: F401  (run by ssemock.commands.server.running)

        from .serve import DEFAULT_HEADER_TIMEOUT, DEFAULT_MAX_BODY, DEFAULT_MAX_CONNECTIONS, app
        from .server import running
    except ImportError as exc:
        raise _UsageError(
            f"serve needs the 'serve' extra ({exc.name or exc}): {install_hint('serve')}"
        ) from exc
    try:
        match_on = [m.strip() for m in args.match_on.split(",") if m.strip()] if args.match_on else None
        asgi = app(
            args.cassettes,
            chunking=args.chunking,
            transform=args.transform,
            timing=args.timing,
            faults=args.faults,
            match_on=match_on,
            cors=args.cors,
            max_body=DEFAULT_MAX_BODY if args.max_body is None else args.max_body,
            log=None if args.quiet else _out,
        )
    except CassetteError:
        raise
    except ValueError as exc:
        raise _UsageError(str(exc)) from exc
    replayer = asgi.state.ssemock
    header_timeout: float = DEFAULT_HEADER_TIMEOUT if args.header_timeout is None else args.header_timeout
    max_connections: int = DEFAULT_MAX_CONNECTIONS if args.max_connections is None else args.max_connections
    if not header_timeout > 0 or max_connections < 1:
        raise _UsageError(
            f"--header-timeout must be > 0 seconds and --max-connections >= 1, got "
            f"{header_timeout:g} and {max_connections}"
        )

    def stop(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, stop)  # a plain `kill` stops it cleanly, as Ctrl-C does
    try:
        with running(
            asgi,
            host=args.host,
            port=args.port,
            header_timeout=header_timeout,
            max_connections=max_connections,
        ) as url:
            _out(f"ssemock: serving on {url}")
            _out(f"{len(replayer.interactions)} interaction(s) from {len(replayer.cassettes)} cassette(s):")
            for line in replayer.routes():
                _out(f"  {line}")
            _out(
                f"chunking={replayer.chunking} transform={'+'.join(map(str, replayer.transforms)) or None} "
                f"timing={replayer.timing} faults={';'.join(map(str, replayer.faults)) or None}; "
                "Ctrl-C to stop"
            )
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
    from .. import commands as inspect
    from ..store.cassette import Cassette

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
    if args.json:
        _out(
            json.dumps(
                {"path": str(args.cassette), "interactions": count, "shown": summaries},
                indent=2,
                ensure_ascii=False,
            )
        )
        return 0
    _out(f"{args.cassette}: {count} interaction{'s' if count != 1 else ''}")
    for summary in summaries:
        _out()
        _out(inspect.format_summary(summary))
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
    from .. import commands as inspect
    from ..protocols import names

    if args.protocol is not None and args.protocol not in names():
        raise _UsageError(f"unknown protocol {args.protocol!r}; known: {', '.join(names())}")
    files = inspect.cassette_files(args.cassettes)
    if not files:
        raise _UsageError(f"no cassette (*.json) in {', '.join(map(str, args.cassettes))}")
    reports = [inspect.validate_file(path, protocol=args.protocol) for path in files]
    bad = sum(not r.ok for r in reports)
    if args.json:
        _out(json.dumps([r.to_dict() for r in reports], indent=2, ensure_ascii=False))
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


# -- ssemock rechunk ---------------------------------------------------------------------------


def _add_rechunk(subparsers: Subparsers) -> None:
    from ..variants import chunking, transforms

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
    from .. import commands as inspect

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
    from .. import commands as inspect
    from ..redaction.rules import find_secrets
    from ..store.cassette import Cassette

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

    from ..redaction.keep import masked_fields, refused_target
    from ..redaction.rules import find_secrets
    from ..store.cassette import Cassette
    from ..store.lock import lock_for

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
    from .. import commands as inspect
    from ..store.cassette import read_file

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
    parser.set_defaults(handler=_cmd_import_vcr)


def _cmd_import_vcr(args: argparse.Namespace) -> int:
    from .import_vcr import NO_BOUNDARIES, import_file, import_paths

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
        _out(f"ssemock: error: refused {r.source}: {r.reason}", err=True)
    _out(f"import-vcr: {summary.counts()}")
    return 0 if summary.ok else 1


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
        from .migrate import plan

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


# -- parser and dispatch -----------------------------------------------------------------------

#: One function per subcommand, in the order ``--help`` lists them.
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
    from .doctor import report

    for line in report():
        _out(line)
    return 0


_COMMANDS: list[Callable[[Subparsers], None]] = [
    _add_demo,
    _add_serve,
    _add_show,
    _add_validate,
    _add_rechunk,
    _add_redact,
    _add_accept,
    _add_fix,
    _add_import_vcr,
    _add_migrate,
    _add_doctor,
]


class _Parser(argparse.ArgumentParser):
    """argparse's own messages (usage errors quote the arguments) masked and escaped too."""

    def _print_message(self, message: str, file: Any = None) -> None:
        super()._print_message(escape_control(mask_text(message)) if message else message, file)


class _UsageError(Exception):
    """An expected failure: printed as ``ssemock: error: ...`` with exit code 1, no traceback."""


class _Version(argparse.Action):
    """``--version``: what a bug report starts with (``ssemock doctor`` has the rest)."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        from .doctor import report

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


if __name__ == "__main__":
    raise SystemExit(main())
