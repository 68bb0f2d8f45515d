"""The WebSocket scenarios, run in a side environment's Python by tests/stacks/test_ws_side_envs.py
(websockets 13.1 and 15.0.1 cannot share the dev environment): each records a session through the
real client against a loopback server, stops the server, replays it with the network lock on, and
again with a proxy in the environment (``HTTPS_PROXY`` and the like, as on many CI machines: a
loopback listener that must get no connection), and prints one JSON line per scenario:
{"name", "websockets", "live", "replay", "proxied", "proxy_reached"}.

Usage: python tests/stacks/ws_matrix.py (with this checkout's tests/ on sys.path: it adds them)."""

from __future__ import annotations

import asyncio
import gc
import json
import os
import socket
import ssl
import sys
import tempfile
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE), str(HERE.parent / "sdk")]
warnings.simplefilter("ignore", DeprecationWarning)
# Full garbage collections after 100 middle-generation ones, not 10, as in the suite's own
# processes (tests/boot/ssemock_suite_boot.py): importing the SDKs (pydantic models) ran 3 full
# collections of a growing heap, 0.15 CPU-s (issue 48 item 4).
gc.set_threshold(*gc.get_threshold()[:2], 100)

import websockets  # noqa: E402
from ws_servers import gemini_live, realtime, running  # noqa: E402

import ssemock  # noqa: E402


@contextmanager
def proxy_in_the_environment() -> Iterator[Callable[[], int]]:
    """A loopback listener named by every proxy variable; yields how many connections reached it."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.setblocking(False)
    url = f"http://127.0.0.1:{listener.getsockname()[1]}"
    names = [f"{s}_PROXY" for s in ("HTTPS", "HTTP", "WSS", "WS", "ALL")]
    saved = {n: os.environ.get(n) for n in [*names, *map(str.lower, names), "NO_PROXY", "no_proxy"]}
    os.environ.update(dict.fromkeys([*names, *map(str.lower, names)], url))
    os.environ.pop("NO_PROXY", None)
    os.environ.pop("no_proxy", None)
    reached = 0

    def count() -> int:
        nonlocal reached
        while True:
            try:
                listener.accept()[0].close()
            except BlockingIOError:
                return reached
            reached += 1

    try:
        yield count
    finally:
        listener.close()
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def scenario(name: str, handler: Any, run: Callable[[Any], Any], **server: Any) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "session.json"
        with running(handler, **server) as srv:
            with ssemock.use_cassette(path, record_mode="once"):
                live = run(srv)
        with ssemock.use_cassette(path, record_mode="none", allowed_hosts=[]):
            replay = run(srv)
        with proxy_in_the_environment() as reached:  # (the proxy's address is allowed: loopback)
            with ssemock.use_cassette(path, record_mode="none"):
                proxied = run(srv)
            proxy_reached = reached()
    return {
        "name": name,
        "websockets": websockets.__version__,
        "live": live,
        "replay": replay,
        "proxied": proxied,
        "proxy_reached": proxy_reached,
    }


def main() -> None:
    from test_websockets import _legacy_session, _session, _sync_session

    realtime_url = "/v1/realtime?model=gpt-realtime"
    cases: list[tuple[str, Any, Callable[[Any], Any], dict[str, Any]]] = [
        ("websockets.asyncio", realtime, lambda s: asyncio.run(_session(s.url(realtime_url))), {}),
        ("websockets.sync", realtime, lambda s: _sync_session(s.url(realtime_url)), {}),
        ("websockets.legacy", realtime, lambda s: asyncio.run(_legacy_session(s.url(realtime_url))), {}),
    ]
    try:  # an environment without the SDKs (ws130) runs the websockets clients' scenarios only
        from test_openai_ws import _realtime_async, _realtime_sync
    except ImportError:
        pass
    else:
        cases += [
            ("openai.realtime.async", realtime, lambda s: asyncio.run(_realtime_async(s.url("/v1"))), {}),
            ("openai.realtime.sync", realtime, lambda s: _realtime_sync(s.url("/v1")), {}),
        ]
    try:
        import trustme
        from test_gemini_live_sdk import _session as live_session
    except ImportError:
        pass
    else:
        ca = trustme.CA()
        served = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ca.issue_cert("127.0.0.1").configure_cert(served)
        trusted = ssl.create_default_context()
        ca.configure_trust(trusted)
        cases.append(
            (
                "google-genai.live",
                gemini_live,
                lambda s: asyncio.run(live_session(s.port, trusted)),
                {"ssl": served},
            )
        )
    for name, handler, run, server in cases:
        try:
            out = scenario(name, handler, run, **server)
        except BaseException as exc:  # reported, the next scenario still runs
            out = {
                "name": name,
                "websockets": websockets.__version__,
                "error": f"{type(exc).__name__}: {exc}",
            }
        print(json.dumps(out, default=repr), flush=True)


if __name__ == "__main__":
    main()
    # ended without the interpreter's teardown (every line is printed, nothing is left to write):
    # freeing the SDKs' heap object by object cost 0.5 of the process's 2.5 CPU-s (issue 48 item 4)
    sys.stderr.flush()
    os._exit(0)
