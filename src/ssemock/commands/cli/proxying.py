"""``ssemock proxy``: the command that runs `ssemock.commands.proxy`'s app (one per port) until
Ctrl-C or SIGTERM; then the recordings under way are kept as partials beside their cassettes."""

from __future__ import annotations

import argparse
import tomllib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...core.extras import install_hint
from ...core.modes import RECORD_MODES
from ...store.cassette import CassetteError
from ..stopping import Stop
from .output import _out, _UsageError
from .serving import add_replay_options, add_server_limits, server_limits

if TYPE_CHECKING:
    from .output import Subparsers

_UPSTREAM_KEYS = {"url", "prefix", "cassette", "port"}


def _add_proxy(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "proxy",
        help="a recording reverse proxy: record (and replay) any client by changing its base URL",
        description="Relay requests to UPSTREAM_URL and record them into cassettes as they stream: "
        "each upstream chunk reaches the client the moment it arrives and is recorded with its "
        "arrival time. Under the record mode (as the pytest plugin's), a request a recorded "
        "interaction matches is replayed with serve's variants instead; an unmatched one the "
        "mode does not record gets a 404 with what differs. The cassette is "
        "<cassette-dir>/<name>.json: --cassette, or the client's x-ssemock-cassette header, or a "
        "/_ssemock/NAME/ path prefix. Every save is scanned for secrets (refused: kept masked "
        "beside the cassette). SIGTERM or Ctrl-C keeps the recordings under way as "
        "<name>.partial.json. Needs the 'serve' extra.",
    )
    parser.add_argument("upstream", nargs="?", metavar="UPSTREAM_URL", help="the API to relay to")
    parser.add_argument(
        "--config",
        metavar="FILE",
        help="a TOML file of upstreams, each [[upstream]] with url, and prefix (a path prefix on "
        "the proxy) or port (a port of its own), and cassette (its default cassette name)",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    parser.add_argument("--port", type=int, default=0, help="port to listen on (default: 0, any free port)")
    parser.add_argument(
        "--cassette-dir", default="cassettes", metavar="DIR", help="where cassettes are (default: cassettes)"
    )
    parser.add_argument(
        "--cassette",
        default="proxy",
        metavar="NAME",
        help="the cassette a client names none of (default: proxy)",
    )
    parser.add_argument(
        "--record-mode",
        default="once",
        choices=RECORD_MODES,
        help="none, once (default: record only into a cassette that did not exist), new_episodes, all, rewrite",
    )
    parser.add_argument(
        "--ca-bundle",
        metavar="PEM",
        help="verify TLS upstreams against these CA certificates (default: the system's)",
    )
    add_replay_options(parser)
    add_server_limits(parser)
    parser.add_argument("--quiet", "-q", action="store_true", help="no log line per request")
    parser.set_defaults(handler=_cmd_proxy)


def _upstreams(args: argparse.Namespace) -> dict[int, list[Any]]:
    """The upstreams by the port they listen on."""
    from ..proxy import Upstream

    if (args.upstream is None) == (args.config is None):
        raise _UsageError("give UPSTREAM_URL or --config FILE (one of them)")
    if args.upstream is not None:
        return {args.port: [Upstream(args.upstream, cassette=args.cassette)]}
    path = Path(args.config)
    try:
        config = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise _UsageError(f"--config {path}: {exc}") from exc
    entries = config.get("upstream")
    if not isinstance(entries, list) or not entries:
        raise _UsageError(f"--config {path}: no [[upstream]] table (each with url, and prefix or port)")
    by_port: dict[int, list[Any]] = {}
    for i, entry in enumerate(entries):
        where = f"--config {path}: upstream {i + 1}"
        unknown = set(entry) - _UPSTREAM_KEYS
        if unknown or not isinstance(entry.get("url"), str):
            raise _UsageError(
                f"{where}: {'unknown key(s) ' + ', '.join(sorted(unknown)) if unknown else 'url is missing'} "
                f"(keys: {', '.join(sorted(_UPSTREAM_KEYS))})"
            )
        prefix = str(entry.get("prefix", ""))
        if prefix and not prefix.startswith("/"):
            raise _UsageError(f"{where}: prefix {prefix!r} must start with '/'")
        port = entry.get("port", args.port)
        if not isinstance(port, int):
            raise _UsageError(f"{where}: port must be a number, got {port!r}")
        by_port.setdefault(port, []).append(
            Upstream(
                entry["url"], prefix=prefix.rstrip("/"), cassette=str(entry.get("cassette", args.cassette))
            )
        )
    for port, ups in by_port.items():
        if len([u for u in ups if not u.prefix]) > 1:
            raise _UsageError(f"--config {path}: several upstreams on port {port} without a prefix")
    return by_port


def _cmd_proxy(args: argparse.Namespace) -> int:
    from contextlib import ExitStack

    try:
        import uvicorn  # noqa: F401  (run by ssemock.commands.loopback.running)

        from ..loopback import running
        from ..proxy import app
        from ..serve import DEFAULT_MAX_BODY
    except ImportError as exc:
        raise _UsageError(
            f"proxy needs the 'serve' extra ({exc.name or exc}): {install_hint('serve')}"
        ) from exc
    by_port = _upstreams(args)
    limits = server_limits(args)
    try:
        match_on = [m.strip() for m in args.match_on.split(",") if m.strip()] if args.match_on else None
        apps = {
            port: app(
                ups,
                cassette_dir=args.cassette_dir,
                record_mode=args.record_mode,
                chunking=args.chunking,
                transform=args.transform,
                timing=args.timing,
                faults=args.faults,
                match_on=match_on,
                cors=args.cors,
                max_body=DEFAULT_MAX_BODY if args.max_body is None else args.max_body,
                ca_bundle=args.ca_bundle,
                log=None if args.quiet else _out,
            )
            for port, ups in by_port.items()
        }
    except CassetteError:
        raise
    except ValueError as exc:
        raise _UsageError(str(exc)) from exc

    proxies = [asgi.state.ssemock for asgi in apps.values()]
    # the first SIGINT or SIGTERM stops it, whichever thread the kernel gives it to
    with Stop() as stop, ExitStack() as stack:
        try:
            for port, asgi in apps.items():
                url = stack.enter_context(
                    running(asgi, host=args.host, port=port, shutdown_timeout=1, **limits)
                )
                for up in asgi.state.ssemock.upstreams:
                    _out(f"ssemock: proxying on {url}{up.prefix} -> {up.url} (cassette {up.cassette})")
        except OSError as exc:
            raise _UsageError(f"cannot listen on {args.host}: {exc.strerror or exc}") from exc
        _out(
            f"cassettes in {args.cassette_dir}, record mode {args.record_mode}; "
            "x-ssemock-cassette: NAME or /_ssemock/NAME/ picks the cassette; Ctrl-C to stop"
        )
        stop.wait()
        for proxy in proxies:  # before the servers stop: what is under way is kept
            for kept in proxy.keep_in_flight():
                _out(f"ssemock: interrupted: the recordings under way are kept in {kept}")
    return 0
