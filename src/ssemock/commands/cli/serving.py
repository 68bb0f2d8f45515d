"""``ssemock serve``: the command that runs `ssemock.commands.serve`'s app on a real server until
Ctrl-C (or SIGTERM), and prints what it serves."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from ...core.extras import install_hint
from ...store.cassette import CassetteError
from ..stopping import Stop
from .output import _out, _UsageError

if TYPE_CHECKING:
    from .output import Subparsers


def add_replay_options(parser: argparse.ArgumentParser) -> None:
    """The options of a replay (``serve``'s, and the proxy's when it replays): chunking,
    transform, timing, faults, matching, CORS, the largest request body."""
    parser.add_argument(
        "--chunking",
        default="as_recorded",
        metavar="NAME",
        help="as_recorded (default), bytewise, mid_line, mid_utf8, coalesced, per_event, "
        "fixed:N, random:SEED; WebSocket sessions also mid_header; gRPC calls (DATA frames) "
        "per_message and mid_header",
    )
    parser.add_argument(
        "--transform",
        default=None,
        metavar="NAME",
        help="crlf, cr, mixed, no_space, keepalive[:COMMENT], comments, ids, meta, retry, pad[:N], raw_unicode, "
        "blank_lines; WebSocket sessions: fragments:N, pings, deflate, no_deflate; chain with '+'",
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
        "http_error:status=429; WebSocket: close:code=1011,after_message=3, drop:after_message=2, "
        "handshake:status=429; gRPC: status:code=UNAVAILABLE,after_message=2, drop:after_message=2; "
        "several separated by ';'",
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
        help="the largest request body accepted, larger ones get 413, and the largest WebSocket message, "
        "larger ones get close 1009 (default: 8 MiB)",
    )


def add_server_limits(parser: argparse.ArgumentParser) -> None:
    """The limits of a server anyone who reaches its port can talk to (``serve``'s and the
    proxy's): the seconds a request's headers may take, the connections open at once."""
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


def server_limits(args: argparse.Namespace) -> dict[str, Any]:
    """``--header-timeout`` and ``--max-connections`` (their defaults when not given), checked,
    as the keyword arguments of `ssemock.commands.loopback.running`."""
    from ..serve import DEFAULT_HEADER_TIMEOUT, DEFAULT_MAX_CONNECTIONS

    header_timeout: float = DEFAULT_HEADER_TIMEOUT if args.header_timeout is None else args.header_timeout
    max_connections: int = DEFAULT_MAX_CONNECTIONS if args.max_connections is None else args.max_connections
    if not header_timeout > 0 or max_connections < 1:
        raise _UsageError(
            f"--header-timeout must be > 0 seconds and --max-connections >= 1, got "
            f"{header_timeout:g} and {max_connections}"
        )
    return {"header_timeout": header_timeout, "max_connections": max_connections}


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
        "Last-Event-ID resumes after that event. A WebSocket upgrade is answered from a recorded "
        "session on the raw connection (the client's messages matched, the wire re-cut, re-framed "
        "and faulted by the same options). gRPC calls are answered over HTTP/2 cleartext (h2c) on "
        "the same port, told by the connection's preface (the 'grpc' extra). Unmatched requests get a 404 listing the "
        "recorded requests (secrets masked). One log line per request (--quiet: none). "
        "No CORS header unless --cors. Needs the 'serve' extra.",
    )
    parser.add_argument("cassettes", nargs="+", metavar="CASSETTE", help="cassette file(s) to serve")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    parser.add_argument("--port", type=int, default=0, help="port to listen on (default: 0, any free port)")
    add_replay_options(parser)
    add_server_limits(parser)
    parser.add_argument("--quiet", "-q", action="store_true", help="no access log line per request")
    parser.set_defaults(handler=_cmd_serve)


def _cmd_serve(args: argparse.Namespace) -> int:
    try:
        import uvicorn  # noqa: F401  (run by ssemock.commands.loopback.running)

        from ..loopback import running
        from ..serve import DEFAULT_MAX_BODY, app
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
    limits = server_limits(args)

    try:
        # the first SIGINT or SIGTERM stops it, whichever thread the kernel gives it to
        with Stop() as stop, running(asgi, host=args.host, port=args.port, **limits) as url:
            _out(f"ssemock: serving on {url}")
            _out(f"{len(replayer.interactions)} interaction(s) from {len(replayer.cassettes)} cassette(s):")
            for line in replayer.routes():
                _out(f"  {line}")
            _out(
                f"chunking={replayer.chunking} transform={'+'.join(map(str, replayer.transforms)) or None} "
                f"timing={replayer.timing} faults={';'.join(map(str, replayer.faults)) or None}; "
                "Ctrl-C to stop"
            )
            stop.wait()
    except OSError as exc:
        raise _UsageError(f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}") from exc
    return 0
