"""Loaded first by the suite's pytest (``-p ssemock_suite_boot`` in pyproject's addopts, from
``pythonpath``), before the plugins installed in the environment: under PYTHONDONTWRITEBYTECODE
the suite keeps its bytecode outside the tree from the start (issue 33).

Every Python process the suite starts (the xdist workers, the CLI and pytest subprocesses)
compiled ssemock, the test modules and the plugins' modules that pytest rewrites again: about
half of the suite's CPU. The suite then keeps its bytecode in the temporary folder instead
(PYTHONPYCACHEPREFIX, or where that variable already points): still nothing written into the
checkout or the environment. Set here, not in tests/conftest.py, so the plugins pytest loads
before the conftest (pytest-recording, respx, xdist, anyio, ... rewritten for their asserts) read
their rewritten bytecode from there too instead of rewriting it in every process (~0.5 CPU-s each).
It also makes the garbage collector's full collections rarer from the start
(``fewer_full_collections``), lets an xdist worker end without the interpreter's teardown
(``workers_skip_the_interpreter_teardown``), and has xdist's controller compile the test modules
and ssemock once before its workers start (``pytest_sessionstart``)."""

from __future__ import annotations

import fnmatch
import gc
import importlib.util
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from _pytest.assertion import rewrite


def compile_once() -> None:
    """Bytecode written and read under a prefix in the temporary folder, if this process was
    told not to write any (PYTHONDONTWRITEBYTECODE); the processes it starts inherit it."""
    if not sys.dont_write_bytecode:
        return
    prefix = os.environ.get("PYTHONPYCACHEPREFIX") or os.path.join(
        tempfile.gettempdir(), f"ssemock-suite-pycache-{os.getuid()}"
    )
    os.environ["PYTHONPYCACHEPREFIX"] = prefix
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    sys.pycache_prefix = prefix
    sys.dont_write_bytecode = False


def fewer_full_collections() -> None:
    """A full (generation 2) collection of the cyclic garbage collector waits for 100 collections
    of the middle generation, not 10; the youngest two are collected as often as before. Importing
    the SDKs and collecting the ~4,050 tests made 8 full collections of a growing heap (1.4-1.5
    CPU-s of each xdist worker's collection, 0.3 after); after the collection, tests/conftest.py
    freezes what is alive and the inner pytest sessions' garbage is what the full ones walk (issue
    33)."""
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, 100)


def workers_skip_the_interpreter_teardown() -> None:
    """An xdist worker ends at once after its last exit handler (``os._exit``, the standard
    streams flushed first), without the interpreter's teardown: freeing its heap object by
    object kept pytest-xdist's controller waiting 4.7 s for test_plugin.py's two workers to end
    (7.5 -> 2.4 s from the last test to the controller's end, no load; 23 s under load). The
    results went to the controller before; registered first, it runs after every other handler
    (pytest's temporary folders' cleanup among them)."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return
    import atexit

    def end_now() -> None:
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        os._exit(0)

    atexit.register(end_now)


def _test_modules(config: pytest.Config) -> Iterator[Path]:
    """The files under the run's arguments that pytest would collect as test modules (its
    ``python_files`` patterns), not walking into the folders its ``norecursedirs`` skips."""
    patterns, skip = config.getini("python_files"), config.getini("norecursedirs")
    for arg in config.args:
        path = config.invocation_params.dir / arg.split("::")[0]
        if path.is_file():
            yield path
            continue
        for folder, dirs, files in os.walk(path):
            dirs[:] = [d for d in dirs if not any(fnmatch.fnmatch(d, p) for p in skip)]
            yield from (Path(folder, f) for f in files if any(fnmatch.fnmatch(f, p) for p in patterns))


def _rewrite_once(config: pytest.Config, module: Path) -> None:
    """``module`` assert-rewritten and written where pytest's import hook reads it (its own
    cache format: a checked-hash pyc), unless that file holds this source's rewrite already."""
    pyc = rewrite.get_cache_dir(module) / (module.name[:-3] + rewrite.PYC_TAIL)
    source_hash = importlib.util.source_hash(module.read_bytes())
    try:
        with open(pyc, "rb") as cached:
            if cached.read(16) == importlib.util.MAGIC_NUMBER + b"\x03\0\0\0" + source_hash[:8]:
                return
    except OSError:
        pass
    if rewrite.try_makedirs(pyc.parent):
        source_hash, code = rewrite._rewrite_test(module, config)
        rewrite._write_pyc(config.stash[rewrite.assertstate_key], code, source_hash, pyc)


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    """xdist's controller compiles what its workers will import, once, before it starts them: the
    test modules (assert-rewritten) and ssemock's modules. Started together, each worker compiled
    all of them itself on a fresh clone (about 8 CPU-s a worker, 200 test modules' rewrite most
    of it); now each reads what the controller wrote (issue 48 item 4)."""
    config = session.config
    if hasattr(config, "workerinput") or config.getoption("dist", "no") == "no" or sys.dont_write_bytecode:
        return
    import compileall

    private = ("get_cache_dir", "PYC_TAIL", "try_makedirs", "_rewrite_test", "_write_pyc", "assertstate_key")
    if config.getoption("assertmode") == "rewrite" and all(hasattr(rewrite, name) for name in private):
        for module in _test_modules(config):  # (another pytest without them: each worker rewrites)
            _rewrite_once(config, module)
    spec = importlib.util.find_spec("ssemock")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        compileall.compile_dir(folder, quiet=2)


compile_once()
fewer_full_collections()
workers_skip_the_interpreter_teardown()
