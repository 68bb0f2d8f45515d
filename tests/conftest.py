"""The suite's shared fixtures: a real loopback SSE server with scripted writes and gaps, started
once per test session; a fake clock; the public corpora.

The public corpora (real vcrpy cassettes of open-source projects, not in this repository) are
read from ``--ssemock-corpora DIR`` or ``SSEMOCK_CORPORA=DIR`` (CI passes ``../shared/corpora``).
A test that reads them asks for the ``corpora`` fixture (the folder, a `Path`) or carries the
``corpora`` marker (``pytestmark = pytest.mark.corpora`` for a module); without the option
those tests are deselected, and the header says how to run them, so a fresh clone's run is
green. An option naming a missing folder is a usage error.
"""

from __future__ import annotations

import os
import resource
import sys
import tempfile
import time


def _compile_once() -> None:
    """The suite's bytecode outside the tree under PYTHONDONTWRITEBYTECODE: done by
    ``tests/boot/ssemock_suite_boot.py``, which pyproject's addopts load before any other plugin;
    again here for a run with other options (``-o addopts=...``)."""
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "boot"))
    try:
        import ssemock_suite_boot

        ssemock_suite_boot.compile_once()
    finally:
        sys.path.pop(0)


_compile_once()


def _trust_no_public_ca() -> None:
    """The suite talks to loopback servers only, so it trusts no public CA: SSL_CERT_FILE names one
    throwaway CA certificate (made once, in the temporary folder) for this process and every process
    it starts. Loading certifi's bundle for each HTTP client (httpx, httpx2, the SDKs' clients) cost
    30-40 ms of CPU a client, thousands of times a run (issue 33); a TLS test brings its own CA
    (trustme) as before, and a request that would reach a real server cannot verify it."""
    path = os.path.join(tempfile.gettempdir(), f"ssemock-suite-ca-{os.getuid()}.pem")
    if not os.path.exists(path):
        import trustme

        part = f"{path}.{os.getpid()}"
        trustme.CA().cert_pem.write_to_path(part)
        os.replace(part, path)
    os.environ["SSL_CERT_FILE"] = path
    os.environ.pop("SSL_CERT_DIR", None)


_trust_no_public_ca()


def _no_hypothesis_deadline() -> None:
    """Hypothesis' tests run with no deadline (its default fails an example that took over 200 ms
    of wall time): a wall-clock assertion, which a loaded machine fails (test_ndjson's
    test_any_chunking_of_json_lines did at load 15, issue 48 item 4). Loaded before the test
    modules are imported, so a test's own ``@settings(...)`` starts from it."""
    from hypothesis import settings

    settings.register_profile("ssemock-suite", deadline=None)
    settings.load_profile("ssemock-suite")


_no_hypothesis_deadline()

import asyncio
import socket
import threading
import zlib
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import brotli
import httpcore  # noqa: F401  imported here, not lazily inside a pytester test: pytester
import httpcore2  # noqa: F401  drops modules first imported during a test, and httpx2 caches them
import needs
import pytest
import zstandard

import ssemock


def _import_all() -> None:
    """Import every ssemock module now: ``import ssemock`` is lazy, and pytester's in-process runs
    drop the modules first imported during a test, which would leave two copies of a module (two
    patch registries, two exception classes) in one session."""
    import importlib
    import pkgutil

    for found in pkgutil.walk_packages(ssemock.__path__, "ssemock."):
        if found.name not in ("ssemock.__main__",):
            importlib.import_module(found.name)


_STARTED = pytest.StashKey[float]()  # when the run began (time.monotonic), for its cost line


def pytest_configure(config: pytest.Config) -> None:
    """Every ssemock module imported before any test runs (`_import_all`), in each process that
    runs tests; not in pytest-xdist's controller, which runs none (about 2 CPU-s a run: the demo's
    openai client, libcst, ...; issue 33)."""
    controller = (
        not hasattr(config, "workerinput")
        and config.getoption("dist", "no") != "no"
        and bool(config.getoption("tx", None))
        and not config.getoption("collectonly")
    )
    if not controller:
        _import_all()
    _deliver_sigint()
    config.addinivalue_line(
        "markers", "corpora: reads the public corpora (deselected without --ssemock-corpora)"
    )
    corpora_dir(config)  # a folder that is not there stops the run before collection
    config.stash[_STARTED] = time.monotonic()


def _deliver_sigint() -> None:
    """Ctrl-C reaches the commands the tests start: a suite started with SIGINT ignored (a
    background job of a script: the shell ignores it there) would pass that on to every process it
    starts, and the tests that stop a server, a proxy or a recording with Ctrl-C would wait on it
    in vain. A handler, unlike an ignored signal, is not inherited across exec."""
    import signal

    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.hookimpl(wrapper=True)
def pytest_sessionfinish(session: pytest.Session) -> Iterator[None]:
    """An xdist worker whose tests and fixtures are done ignores SIGINT: its controller stops it
    while it is still finishing, and execnet sends the worker a SIGINT when that takes over 5 s,
    which it does on a loaded machine (pytest's unraisable-exception check runs full garbage
    collections at unconfigure, about 2 s at no load). The KeyboardInterrupt then landed in a
    garbage-collector callback (hypothesis') and printed its traceback among the progress dots
    (issue 43 item 1); ignored, the worker ends on its own, or execnet ends it 10 s later.
    The run (not a worker) fails when its CPU is over ``SSEMOCK_SUITE_CPU_MAX`` (`_over_bound`)."""
    try:
        return (yield)
    finally:
        if hasattr(session.config, "workerinput"):
            import signal

            signal.signal(signal.SIGINT, signal.SIG_IGN)
        elif _over_bound(_cost(session.config)[0]):  # the workers are ended: their CPU is counted
            session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_collection_finish(session: pytest.Session) -> None:
    """What is alive once the tests are collected (every module the suite imports, the SDKs, the
    items) stays alive to the end: frozen (gc.freeze), the cyclic collector stops walking it at
    each full collection. With the whole suite collected, test_plugin.py and test_explore_plugin.py
    (inner pytest sessions: much garbage) spent 3.3-3.4 CPU-s in full collections, 1.8-1.9 frozen;
    the process 33.1 and 28.1 CPU-s, 25.9 and 24.3 frozen (back to back; issue 33). Objects made
    later are collected as before, the youngest two generations as often as before; a full
    collection waits for 100 collections of the middle one, not 10 (set by ssemock_suite_boot,
    and here again for a run with other options): the inner pytest sessions
    and hypothesis's tests made each full one walk millions of objects (80-200 ms), about 20-35 a
    hundred tests of test_docs/test_plugin/test_fuzz. Measured on 4 files each (one process, CPU
    in the collector): test_fuzz, test_plugin, test_sse, test_library 4.1 -> 2.5 s; test_docs,
    test_explore_plugin, test_secret_forms, test_hostile 4.7-5.2 -> 2.6 s; peak RSS of test_docs
    and test_plugin 268 -> 306 MB (issue 33)."""
    import gc

    gc.collect()
    gc.freeze()
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, 100)


from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, StreamingResponse
from starlette.routing import Route
from streams import anthropic_events, openai_chat_events, writes

from ssemock.commands.loopback import running

GAP = 0.03


@dataclass
class Script:
    """What the server sends for one route: these writes, each after ``gap`` seconds."""

    writes: list[bytes]
    gap: float = GAP
    fail_after: int | None = None  # drop the connection after this many writes
    headers: dict[str, str] = field(default_factory=dict)
    encoding: str | None = None  # Content-Encoding: gzip, br or zstd, flushed write by write


SCRIPTS: dict[str, Script] = {
    "/v1/chat/completions": Script(writes(openai_chat_events())),
    "/v1/messages": Script(writes(anthropic_events())),
    "/events": Script([b"data: one\n\n", b"data: t", b"wo\n\nevent: x\ndata: \xe4\xb8", b"\x96\n\n"], 0.02),
    "/gzip": Script([b"data: one\n\n", b"data: two\n\n"], 0.02, encoding="gzip"),
    "/br": Script([b"data: one\n\n", "data: 世界\n\n".encode()], 0.02, encoding="br"),
    "/zstd": Script([b"data: one\n\n", "data: 世界\n\n".encode()], 0.02, encoding="zstd"),
    "/fail": Script([b"data: one\n\n", b"data: tw"], 0.02, fail_after=2),
    "/cookie": Script([b"data: hi\n\n"], 0.0, headers={"set-cookie": "session=s3cr3t"}),
    "/ten": Script([b"data: %d\n\n" % i for i in range(10)], 0.02),
    # ~300 KB as a model streams it fast: written as it comes, many writes to a 64 KiB of the scan's steps
    "/long": Script(writes(openai_chat_events(text=" ".join(f"word{i}" for i in range(30_000)))), 0.0),
}


def _compressor(encoding: str | None) -> Callable[[bytes, bool], bytes]:
    """Compress one write and flush it, so each write reaches the client on its own; the last
    write also ends the compressed stream."""
    if encoding == "gzip":
        z = zlib.compressobj(6, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
        return lambda data, last: z.compress(data) + z.flush(zlib.Z_FINISH if last else zlib.Z_SYNC_FLUSH)
    if encoding == "br":
        b = brotli.Compressor()
        return lambda data, last: b.process(data) + (b.finish() if last else b.flush())
    if encoding == "zstd":
        zs = zstandard.ZstdCompressor().compressobj()
        return lambda data, last: (
            zs.compress(data)
            + zs.flush(zstandard.COMPRESSOBJ_FLUSH_FINISH if last else zstandard.COMPRESSOBJ_FLUSH_BLOCK)
        )
    return lambda data, last: data


GATED = [b"data: 0\n\n", b"data: 1\n\n", b"data: 2\n\n", b"data: 3\n\n"]
ACK = threading.Semaphore(0)


async def gated(request: Request) -> StreamingResponse:
    """Sends write k+1 only once the client has acknowledged write k (``ACK.release()``), and
    ``data: late`` instead if no acknowledgement comes within 10 s: a client that gets each chunk
    as it arrives while recording acknowledges every one; a recorder that holds chunks back until
    the stream ends makes the route say late. An ordering test, not a timed one."""
    await request.body()
    while ACK.acquire(blocking=False):  # a previous test's leftover acknowledgements
        pass

    async def body() -> AsyncIterator[bytes]:
        for i, data in enumerate(GATED):
            if i and not await asyncio.to_thread(ACK.acquire, True, 10):
                yield b"data: late\n\n"
                return
            yield data

    return StreamingResponse(body(), media_type="text/event-stream")


async def _stream(request: Request) -> StreamingResponse:
    script = SCRIPTS[request.url.path]
    await request.body()
    compress = _compressor(script.encoding)

    async def body() -> AsyncIterator[bytes]:
        for i, data in enumerate(script.writes):
            if script.fail_after is not None and i >= script.fail_after:
                raise ConnectionResetError("scripted failure")
            if i:
                await asyncio.sleep(script.gap)
            yield compress(data, i == len(script.writes) - 1)
        if script.fail_after is not None:
            raise ConnectionResetError("scripted failure")

    headers = {"cache-control": "no-cache", **script.headers}
    if script.encoding:
        headers["content-encoding"] = script.encoding
    return StreamingResponse(body(), media_type="text/event-stream", headers=headers)


async def _forever(request: Request) -> StreamingResponse:
    """An endless stream, one event every 10 ms, until the client goes away."""

    async def body() -> AsyncIterator[bytes]:
        i = 0
        while True:
            yield b"data: %d\n\n" % i
            i += 1
            await asyncio.sleep(0.01)

    return StreamingResponse(body(), media_type="text/event-stream")


async def _echo(request: Request) -> JSONResponse:
    return JSONResponse({"headers": dict(request.headers), "query": str(request.url.query)})


APP = Starlette(
    routes=[Route(path, _stream, methods=["GET", "POST"]) for path in SCRIPTS]
    + [
        Route("/echo", _echo, methods=["GET", "POST"]),
        Route("/forever", _forever),
        Route("/gated", gated, methods=["GET", "POST"]),
    ]
)


@pytest.fixture(scope="session")
def server() -> Iterator[str]:
    """Base URL of the loopback server."""
    with running(APP) as url:
        yield url


@pytest.fixture
def scripts() -> dict[str, Script]:
    return SCRIPTS


pytest_plugins = ["pytester"]


def side_env_python(name: str) -> Path:
    """The Python of side environment ``name`` (a library pinning versions the dev environment
    cannot hold), built before the run from ``requirements/NAME.lock`` by ``bash .ci/side-env
    NAME`` into ``.venv-NAME`` (CI does; ``SSEMOCK_<NAME>_PYTHON`` names another one). The test
    never installs anything itself: when it is missing the test fails in CI, else skips saying
    how to build it."""
    variable = f"SSEMOCK_{name.upper()}_PYTHON"
    python = Path(
        os.environ.get(variable) or Path(__file__).resolve().parents[1] / f".venv-{name}" / "bin" / "python"
    )
    if not python.exists():
        needs.missing(
            f"{python} is missing: build the side environment with `bash .ci/side-env {name}` "
            f"(or set {variable} to a Python that has requirements/{name}.lock and this checkout)"
        )
    return python


# -- the public corpora ------------------------------------------------------------------------

CORPORA_ENV = "SSEMOCK_CORPORA"
HOW_TO_RUN_CORPORA = f"--ssemock-corpora DIR or {CORPORA_ENV}=DIR (a checkout of the public corpora; CI passes ../shared/corpora)"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--ssemock-corpora",
        metavar="DIR",
        default=None,
        help=f"the public corpora's folder: runs the tests that read them (default: ${CORPORA_ENV}; "
        "without either they are deselected)",
    )


def corpora_dir(config: pytest.Config) -> Path | None:
    """The corpora folder ``--ssemock-corpora`` or ``SSEMOCK_CORPORA`` names (relative to where
    pytest was started), or None when neither is given; a usage error if it is not a folder."""
    given = config.getoption("ssemock_corpora") or os.environ.get(CORPORA_ENV)
    if not given:
        return None
    path = (config.invocation_params.dir / given).resolve()
    if not path.is_dir():
        source = "--ssemock-corpora" if config.getoption("ssemock_corpora") else CORPORA_ENV
        raise pytest.UsageError(
            f"{source}={given}: {path} is not a folder; give the public corpora's folder "
            f"(CI clones them to ../shared/corpora) or unset {source} to deselect the corpus tests"
        )
    return path


def _reads_corpora(item: pytest.Item) -> bool:
    return item.get_closest_marker("corpora") is not None or "corpora" in getattr(item, "fixturenames", ())


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Without a corpora folder, the tests that read it are deselected (not failed, not skipped)."""
    if corpora_dir(config) is not None:
        return
    deselected = [item for item in items if _reads_corpora(item)]
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = [item for item in items if not _reads_corpora(item)]


def _corpora_line(config: pytest.Config) -> str:
    found = corpora_dir(config)
    if found is None:
        return f"corpora: none given, the tests that read them are deselected; run them with {HOW_TO_RUN_CORPORA}"
    return f"corpora: {found}"


def pytest_report_header(config: pytest.Config) -> str:
    return _corpora_line(config)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    """Under ``-q`` there is no header (nor, under xdist, a count of the deselected): the same line
    at the end instead, when the corpus tests did not run. Then what the run cost, as the README
    states it (issue 43 item 1, issue 48 item 4): the CPU of pytest and of every process it ran
    (xdist's workers are ended by now, and each waited for what it started), and the wall time."""
    if config.option.verbose < 0 and corpora_dir(config) is None:
        terminalreporter.write_line(_corpora_line(config))
    if not hasattr(config, "workerinput"):
        cpu, wall = _cost(config)
        load = os.getloadavg()[0]
        terminalreporter.write_line(
            f"suite: {cpu:.0f} CPU-s, {wall:.0f} s wall (load average {load:.1f} at the end)"
        )
        if _over_bound(cpu):
            terminalreporter.write_line(
                f"suite: over the README's bound of {_over_bound(cpu)} CPU-s", red=True
            )


def _cost(config: pytest.Config) -> tuple[float, float]:
    """The CPU seconds of this process and of every process it waited for (xdist's workers, once
    ended: each waited for what it started), and the seconds since the run began."""
    mine, theirs = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return mine.ru_utime + mine.ru_stime + theirs.ru_utime + theirs.ru_stime, time.monotonic() - config.stash[
        _STARTED
    ]


def _over_bound(cpu: float) -> str:
    """The bound ``SSEMOCK_SUITE_CPU_MAX`` sets (.ci/run: the README's) when ``cpu`` is over it."""
    bound = os.environ.get("SSEMOCK_SUITE_CPU_MAX", "")
    return bound if bound and cpu > float(bound) else ""


@pytest.fixture(scope="session")
def corpora(pytestconfig: pytest.Config) -> Path:
    """The public corpora's folder (``--ssemock-corpora`` / ``SSEMOCK_CORPORA``): a test asking
    for it is deselected when none is given, so it always gets a folder."""
    found = corpora_dir(pytestconfig)
    assert found is not None, "deselected by pytest_collection_modifyitems without a corpora folder"
    return found


def import_vcr_once(
    tmp_path_factory: pytest.TempPathFactory, name: str, folder: Path, *options: str
) -> tuple[Path, int, str, str]:
    """``ssemock import-vcr . --out OUT OPTIONS`` run in ``folder`` (the command line's ``main``, in
    this process) once a run, however many xdist workers ask for it: the first to ask imports under
    a file lock in the run's temporary folder (the workers share it), the others read what it
    wrote. (OUT, exit code, stdout, stderr). xdist hands a module's tests to both workers, so each
    imported every corpus itself: realtraffic3 (5.7 CPU-s), realtraffic2 and the migration corpus
    (issue 48 item 4). Nothing writes into OUT after the import."""
    import contextlib
    import io
    import json

    from filelock import FileLock

    from ssemock.commands.cli import main

    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent  # the run's folder, above each worker's own
    out, said = shared / f"import-vcr-{name}", shared / f"import-vcr-{name}.json"
    with FileLock(str(shared / f"import-vcr-{name}.lock")):
        if not said.exists():
            stdout, stderr = io.StringIO(), io.StringIO()
            here = Path.cwd()
            os.chdir(folder)
            try:
                with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
                    code = main(["import-vcr", ".", "--out", str(out), *options])
            finally:
                os.chdir(here)
            said.write_text(json.dumps([code, stdout.getvalue(), stderr.getvalue()]))
        code, printed, errors = json.loads(said.read_text())
    return out, code, printed, errors


@pytest.fixture(scope="session")
def realtraffic3_vcr(corpora: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """realtraffic3's vcrpy files imported once a run (`import_vcr_once`), by ``ssemock import-vcr
    . --out OUT --json`` run in its ``corpus/``: (OUT, the report). test_import_refusals_corpora
    reads its refusals, test_import_vcr_corpora the streams it wrote: each imported the 482 files
    itself (5.7 CPU-s more a run, issue 48 item 4)."""
    import json

    out, code, stdout, _ = import_vcr_once(
        tmp_path_factory, "realtraffic3", corpora / "realtraffic3" / "corpus", "--json"
    )
    report: dict[str, Any] = json.loads(stdout)
    assert code == (1 if report["refused"] else 0)
    return out, report


def sdk_transport_error(exc: BaseException | None, wrapper: type[BaseException]) -> BaseException | None:
    """The stack's own transport error behind an SDK's: ``exc`` itself, or its cause where the SDK
    wrapped it in ``wrapper``. The anthropic SDK lets a mid-stream one through unwrapped up to 2.16
    (the lock's 2.14) and wraps it from 2.17, as openai does: a fresh install gets the newest."""
    return exc.__cause__ if isinstance(exc, wrapper) else exc


class FakeClock(ssemock.timing.Clock):
    """Time that moves only when replay sleeps: a timing test asserts what replay slept (and in
    what order chunks came), never how long the test took, so a loaded machine cannot fail it."""

    def __init__(self) -> None:
        self.at = 1000.0
        self.slept: list[float] = []

    def now(self) -> float:
        return self.at

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.at += seconds

    async def asleep(self, seconds: float) -> None:
        self.sleep(seconds)


@pytest.fixture
def fake_clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    """Replay paces by a fake clock for this test (``ssemock.timing.clock``)."""
    clock = FakeClock()
    monkeypatch.setattr(ssemock.timing, "clock", clock)
    return clock


def assert_paced(times: list[float], gap: float) -> None:
    """Recorded arrival times of a server that sleeps ``gap`` before each write after the first:
    in order, and write k no earlier than k gaps after the request (a lower bound only: a loaded
    machine delivers late, never early)."""
    assert times == sorted(times), times
    assert all(t >= k * gap - 0.002 for k, t in enumerate(times)), (times, gap)


# What the inner runs' test files (the docs pages', the plugin tests') import. Imported once, before
# pytester's snapshot of sys.modules, they stay; otherwise every inner run imported them again
# (pytester drops the modules a run imported first): about a second of CPU a run (issue 33). The
# SDKs' resources and uvicorn's loop and protocol are imported lazily, on a client's first use and
# at a server's start: named too (0.1-0.2 CPU-s an inner run that was the first to use them), and
# the plugins that the suite's addopts leave unloaded but an inner run loads (pytest-randomly,
# pytest-recording, respx's, anyio's, platformdirs', xdist's controller).
INNER_RUN_IMPORTS = (
    "pydantic",
    "openai",
    "openai.pagination",
    "openai.resources.chat.chat",
    "openai.resources.chat.completions.completions",
    "openai.resources.chat.completions.messages",
    "openai.resources.responses",
    "openai.lib.streaming.chat",
    "openai.types.chat.completions",
    "anthropic",
    "google.genai",
    "mcp",
    "starlette.applications",
    "sse_starlette",
    "uvicorn",
    "uvicorn.lifespan.off",
    "uvicorn.loops.auto",
    "uvicorn.loops.asyncio",
    "uvicorn.protocols.http.auto",
    "uvicorn.protocols.http.h11_impl",
    "websockets",
    "httpx_sse",
    "hypothesis",
    "pytest_randomly",
    "pytest_recording.plugin",
    "respx.plugin",
    "anyio.pytest_plugin",
    "platformdirs.pytest_plugin",
    "xdist.dsession",
    "xdist.remote",
)


def fill_the_disk(monkeypatch: pytest.MonkeyPatch, error: OSError, *, after: int = 0) -> None:
    """A disk that fills up during a save: each file ``os.fdopen`` opens (the atomic save's temp
    file) raises ``error`` at every write after its first ``after``."""
    fdopen = os.fdopen

    class Full:
        def __init__(self, fd: int, *args: Any, **kwargs: Any) -> None:
            self._file, self._writes = fdopen(fd, *args, **kwargs), 0

        def write(self, data: bytes) -> int:
            self._writes += 1
            if self._writes > after:
                raise error
            return int(self._file.write(data))

        def __getattr__(self, name: str) -> Any:
            return getattr(self._file, name)

        def __enter__(self) -> Full:
            return self

        def __exit__(self, *exc: object) -> None:
            self._file.close()

    monkeypatch.setattr(os, "fdopen", Full)


# The plugins an in-process inner run under pytest-xdist loads, in its workers too: each worker is a
# Python process of its own, and loading every plugin of this suite's environment (hypothesis,
# respx, anyio, pytest-recording, ...) cost each ~0.3 CPU-s at its start for nothing
# (issue 33). ssemock_suite_boot (tests/boot, on the sys.path xdist hands its workers) ends each
# worker without the interpreter's teardown once its results went to the controller, as it does
# the suite's own: a worker that imported an SDK spent ~0.3-0.9 CPU-s freeing it (issue 48).
XDIST_PLUGINS = ("-p", "xdist", "-p", "ssemock", "-p", "asyncio", "-p", "ssemock_suite_boot")


def run_xdist_inprocess(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """``pytester.runpytest_inprocess(*args)`` (``-n`` among them) with plugin autoload off: the
    run and its workers load `XDIST_PLUGINS` and the plugins ``args`` name, no other."""
    with pytest.MonkeyPatch.context() as only:
        only.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
        return pytester.runpytest_inprocess(*XDIST_PLUGINS, *args)


def _import_what_inner_runs_use() -> None:
    import importlib

    for name in INNER_RUN_IMPORTS:
        importlib.import_module(name)


@pytest.fixture(autouse=True)
def _inner_runs_import_their_own_test_files(request: pytest.FixtureRequest) -> Iterator[None]:
    """An in-process inner run (pytester) imports its test files by basename: an outer test module
    of the same name (tests/test_cli.py, imported by this xdist worker) must not answer for the
    inner test_cli.py ("import file mismatch", depending on which worker ran what). The outer
    test modules leave sys.modules for the test (they are collected already) and come back after."""
    if "pytester" not in request.fixturenames:
        yield
        return
    _import_what_inner_runs_use()

    here = str(Path(__file__).resolve().parent)
    outer = {
        name: module
        for name, module in list(sys.modules.items())
        if "." not in name
        and name.startswith(("test_", "conftest"))
        and str(getattr(module, "__file__", "") or "").startswith(here)
    }
    for name in outer:
        del sys.modules[name]
    # pytest-recording's network block, run in an inner session, "unblocks" by setting the
    # methods it wrapped on socket.socket, where they were inherited: put the class back as it was
    patched = {name: socket.socket.__dict__.get(name) for name in ("connect", "connect_ex")}
    socketpair = socket.socketpair
    yield
    sys.modules.update(outer)
    for name, method in patched.items():
        if method is not None:
            setattr(socket.socket, name, method)
        elif name in socket.socket.__dict__:
            delattr(socket.socket, name)
    socket.socketpair = socketpair
