"""The ``ssemock_proxy`` fixture: `ssemock proxy` for one test, so a Python test suite records and
replays the clients it runs in subprocesses (a Node script, a CLI, a Go binary): the test hands
the proxy's URL to the client as its base URL; the cassette is named after the test, in the
test's cassette folder, and the record mode is the plugin's (``--ssemock-record-mode``, the
``ssemock_config`` fixture, the ini file; ``none`` by default, as for the ``ssemock`` fixture)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import pytest

from .naming import cassette_name
from .settings import _setting

if TYPE_CHECKING:
    from ..core.modes import RecordMode

__all__ = ["ProxyRun", "ssemock_proxy"]


@dataclass
class ProxyRun:
    """One proxy a test started (``ssemock_proxy(upstream)``)."""

    url: str
    """The base URL to give the client (``http://127.0.0.1:PORT``; add the upstream's path, ``/v1``)."""
    cassette: Path
    """The test's cassette file."""
    proxy: Any
    """The [`Proxy`][ssemock.commands.proxy.Proxy] (``.books``: the cassettes it used)."""
    log: list[str] = field(default_factory=list)
    """The proxy's log lines (masked)."""


@pytest.fixture
def ssemock_proxy(
    request: pytest.FixtureRequest, ssemock_config: dict[str, Any], ssemock_cassette_dir: Path
) -> Iterator[Callable[..., ProxyRun]]:
    """Start `ssemock proxy` in front of ``upstream`` for this test: ``ssemock_proxy(upstream,
    record_mode=None, **options)`` (``options``: those of `ssemock.commands.proxy.app`, such as
    ``chunking`` or ``faults`` for the replay) returns a [`ProxyRun`][ssemock.plugin.proxy.ProxyRun]. Each
    proxy stops after the test; a response still streaming then is saved marked incomplete."""
    from ..commands.loopback import running
    from ..commands.proxy import app

    stem = cassette_name(request.node).removesuffix(".json")
    default_mode = _setting("record_mode", {}, ssemock_config, request.config) or "none"
    with ExitStack() as stack:

        def start(upstream: str, *, record_mode: str | None = None, **options: Any) -> ProxyRun:
            lines: list[str] = []
            asgi = app(
                upstream,
                cassette_dir=ssemock_cassette_dir,
                cassette=stem,
                record_mode=cast("RecordMode", record_mode or default_mode),
                log=lines.append,
                **options,
            )
            url = stack.enter_context(running(asgi, shutdown_timeout=1))
            return ProxyRun(url, Path(ssemock_cassette_dir) / f"{stem}.json", asgi.state.ssemock, lines)

        yield start
