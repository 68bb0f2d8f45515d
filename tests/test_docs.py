"""The docs are executed: every ```python block of every page under docs/ runs, offline.

Per page, in a fresh temporary folder (the current directory while the page runs), in order:

* a block whose first line is ``# not run`` is only shown (it needs a real API key or a tool that
  is not installed);
* ``# file: NAME`` writes the block to NAME (an app module, a conftest.py, ...);
* ``# test file: NAME.py [PYTEST ARGS]`` writes the block to NAME.py and runs it with
  ``pytester.runpytest_inprocess(NAME.py, *ARGS)``: it must pass (in-process:
  pytester restores sys.modules after it). Each inner run says what order it needs: shuffled by
  pytest-randomly as in a user's run, with a seed the docs test names (``-p randomly
  --randomly-seed=N``), and run again under each other seed of ``SEEDS``, in a copy of the folder
  as it was before the block (so an inner run that passed only in one order fails), unless ARGS hold
  ``-p no:randomly``: the block's inner run then needs its written order. An inner run under
  pytest-xdist (``-n`` in ARGS) loads only ssemock, xdist, pytest-asyncio and the order's
  pytest-randomly (``conftest.run_xdist_inprocess``), in its workers too;
* any other block is executed, in one namespace shared by the page's blocks.

A page that holds the comment ``<!-- docs-test: bash -->`` also runs its ```bash blocks, in the
same order, as a user following the page would type them: one shell session per page (exported
variables and ``cd`` carry over from block to block), ``set -euo pipefail``, the installed
``ssemock`` and ``pytest`` first on PATH, no provider key in the environment. There:

* ``# not run: REASON`` on the first line: only shown (installing, a real key);
* ``# terminal 2`` on the first line: a long-running command (``ssemock serve``) started in the
  background, as in a second terminal; the page goes on once it has printed its first line;
* ``# after stopping the server`` on the first line: the background commands get SIGINT (Ctrl-C)
  first and are waited for, so what follows runs with the server gone.
``<!-- docs-test: bash port=8765 -->`` replaces that port number in the bash blocks by a free one
(``port=8767,8768``: each of them). ``<!-- docs-test: bash node -->`` (after any ``port=``) gives the
page's folder the ``node_modules`` of tests/node (``npm ci --prefix tests/node``, as .ci/run does),
standing for the page's ``npm install``: the suite installs nothing from the registry.

README.md's python and bash blocks are shown, not run (they need a key), unless the first line is
``# runnable``: those run in order, as a page's (the bash ones in one shell session).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import httpcore  # noqa: F401 - see below
import httpcore2  # noqa: F401
import needs
import pytest
from conftest import run_xdist_inprocess
from needs import NODE_MODULES

# pytester restores sys.modules after each test. httpx and httpx2 import httpcore / httpcore2
# lazily and cache its exception classes in a module global on first use; if that first use
# happened inside a pytester test, the cache would keep the classes of a module that is dropped
# afterwards, and transport errors (a replayed disconnect) would stop being mapped for the rest of
# the session. Imported here, before any snapshot, there is only ever one copy.

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGES = sorted(DOCS.rglob("*.md"))
# pages written by hand, as opposed to the references generated when the site is built (the CLI
# reference from the argparse parser, the API reference from the docstrings by mkdocstrings)
WRITTEN = [p for p in PAGES if p.parent.name != "reference"]
_FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```[ \t]*$", re.S | re.M)
_BASH = re.compile(r"<!-- docs-test: bash(?: port=([\d,]+))?( node)? -->")


@dataclass
class Block:
    page: Path
    line: int  # 1-based line of the block's first code line
    lang: str
    code: str

    @property
    def first(self) -> str:
        return self.code.split("\n", 1)[0].strip()

    @property
    def kind(self) -> str:
        if self.first.startswith("# not run"):
            return "shown"
        if self.lang == "bash":
            if self.first.startswith("# terminal 2"):
                return "background"
            return "stop and shell" if self.first.startswith("# after stopping the server") else "shell"
        if self.first.startswith("# test file:"):
            return "test file"
        if self.first.startswith("# file:"):
            return "file"
        return "exec"

    def target(self) -> tuple[str, list[str]]:
        """(file name, extra pytest args) of a ``# file:`` / ``# test file:`` block."""
        words = shlex.split(self.first.split(":", 1)[1])
        return words[0], words[1:]

    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks(page: Path, lang: str = "python") -> list[Block]:
    """The page's blocks in ``lang``; with ``lang="run"``: what the docs test runs, in order
    (python, and bash when the page opts in)."""
    text = page.read_text(encoding="utf-8")
    langs = {lang}
    if lang == "run":
        langs = {"python", "bash"} if _BASH.search(text) else {"python"}
    out = []
    for m in _FENCE.finditer(text):
        if m.group(1) in langs:
            out.append(Block(page, text.count("\n", 0, m.start(2)) + 1, m.group(1), m.group(2)))
    return out


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Shell:
    """One user's shell session over several bash blocks, with background 'terminals'."""

    def __init__(self, home: Path, ports: list[tuple[str, str]]) -> None:
        self.home = home
        self.state = home / ".docs-shell-state"
        self.ports = ports
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("OPENAI_", "ANTHROPIC_", "PYTEST_", "COV_"))
        }
        env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
        # A user's project has no hypothesis, xdist or pytest-timeout, which this suite's
        # environment (the dev extra) has and no page's pytest command uses: their plugins cost
        # each command ~0.3 CPU-s to load (issue 33).
        env["PYTEST_ADDOPTS"] = (
            "-p no:hypothesispytest -p no:xdist -p no:timeout -o asyncio_default_fixture_loop_scope=function"
        )
        self.env = env
        self.background: list[tuple[Block, subprocess.Popen[str]]] = []
        self.state.write_text(f"cd {shlex.quote(str(home))}\n", encoding="utf-8")

    def _script(self, block: Block) -> str:
        code = block.code
        for port in self.ports:
            code = code.replace(*port)
        return f"set -euo pipefail\n. {shlex.quote(str(self.state))}\n{code}\n"

    def run(self, block: Block) -> None:
        state = shlex.quote(str(self.state))
        script = (
            self._script(block)
            + f'{{ export -p; printf "cd %q\\n" "$PWD"; }} > {state}.new && mv {state}.new {state}\n'
        )
        proc = subprocess.run(
            ["bash", "-c", script],
            capture_output=True,
            text=True,
            encoding="utf-8",
            env=self.env,
            cwd=self.home,
            timeout=300,
        )
        assert proc.returncode == 0, (
            f"{block.where()}: the shell block failed (exit {proc.returncode}):\n{block.code}\n"
            f"--- stdout\n{proc.stdout[-4000:]}\n--- stderr\n{proc.stderr[-4000:]}"
        )

    def start(self, block: Block) -> None:
        proc = subprocess.Popen(
            ["bash", "-c", "exec 2>&1\n" + self._script(block)],
            stdout=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            env=self.env,
            cwd=self.home,
            start_new_session=True,
        )
        assert proc.stdout is not None
        first = proc.stdout.readline()  # waits until the command says it is up (or ends)
        assert first and proc.poll() is None, f"{block.where()}: the background command ended: {first}"
        self.background.append((block, proc))

    def stop(self) -> None:
        while self.background:
            block, proc = self.background.pop()
            os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                raise AssertionError(f"{block.where()}: did not stop on Ctrl-C") from None
            finally:
                if proc.stdout is not None:
                    proc.stdout.close()


# The order seeds of a shuffled inner run: its page runs it under the first, then under each other
# one in a copy of the folder as it was before the run (an inner run that passed only in its
# written order would fail one of them). Each more seed costs an inner run of every shuffled page
# (~10 CPU-s a suite run, the xdist page's two workers half of it).
SEEDS = (1, 2)


def run_page(
    page_blocks: list[Block],
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    seeds: tuple[int, ...] = SEEDS,
) -> int:
    """Run the blocks in order; returns how many ran (executed or tested). An inner pytest run is
    shuffled by pytest-randomly, once per seed, unless its block says ``-p no:randomly``."""
    monkeypatch.chdir(pytester.path)
    monkeypatch.syspath_prepend(str(pytester.path))
    namespace: dict[str, object] = {"__name__": "__docs__"}
    shell: Shell | None = None
    if any(b.lang == "bash" for b in page_blocks):
        m = _BASH.search(page_blocks[0].page.read_text(encoding="utf-8"))
        ports = [(p, str(_free_port())) for p in m.group(1).split(",")] if m and m.group(1) else []
        if m and m.group(2):
            _node_modules(pytester.path)
        shell = Shell(pytester.path, ports)
    try:
        return _run_blocks(page_blocks, pytester, namespace, shell, seeds)
    finally:
        if shell is not None:
            shell.stop()


def _node_modules(home: Path) -> None:
    """The page's ``npm install``: tests/node's packages, linked into its folder (node and
    them are needed: .ci/run installs both, and in CI the page never skips)."""
    needs.node()
    (home / "node_modules").symlink_to(NODE_MODULES, target_is_directory=True)


def _order(args: list[str], seed: int) -> list[str]:
    """What order an inner run needs, said on its command line: the block's written order when its
    arguments turn pytest-randomly off, else shuffled with this seed."""
    if "no:randomly" in args:
        return []
    return ["-p", "randomly", f"--randomly-seed={seed}"]


def _inner_run(block: Block, pytester: pytest.Pytester, seed: int) -> None:
    """The block's test file, run by an in-process pytest in the current folder: it must pass."""
    name, args = block.target()
    run_args = (
        name,
        "-p",
        "no:cacheprovider",
        "-o",
        "asyncio_default_fixture_loop_scope=function",
        *_order(args, seed),
        *args,
    )
    if "-n" in args:  # pytest-randomly comes with the run's order (``_order``)
        result = run_xdist_inprocess(pytester, *run_args)
    else:
        with pytest.MonkeyPatch.context() as env:
            env.delenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", raising=False)
            result = pytester.runpytest_inprocess(*run_args)
    outcomes = result.parseoutcomes()
    assert result.ret == 0 and outcomes.get("passed", 0) > 0, (
        f"{block.where()}: the test file {name} did not pass ({' '.join(_order(args, seed))}):\n"
        + "\n".join(result.outlines[-60:])
    )


def _run_shuffled(block: Block, pytester: pytest.Pytester, seeds: tuple[int, ...]) -> None:
    """The block's inner run under the first seed, here; under each other seed in a copy of this
    folder made before that run (the same files, cassettes and conftest the run found), as its own
    session: one copy per seed, then removed."""
    copies = []
    for seed in seeds[1:]:
        copy = Path(tempfile.mkdtemp(prefix=f"seed{seed}-", dir=pytester.path.parent))
        shutil.copytree(pytester.path, copy, symlinks=True, dirs_exist_ok=True)
        copies.append((seed, copy))
    _inner_run(block, pytester, seeds[0])
    here = Path.cwd()
    for seed, copy in copies:
        os.chdir(copy)
        try:
            _inner_run(block, pytester, seed)
        finally:
            os.chdir(here)
            shutil.rmtree(copy, ignore_errors=True)


def _run_blocks(
    page_blocks: list[Block],
    pytester: pytest.Pytester,
    namespace: dict[str, object],
    shell: Shell | None,
    seeds: tuple[int, ...],
) -> int:
    ran = 0
    for block in page_blocks:
        if block.kind == "shown":
            continue
        if block.lang == "bash":
            assert shell is not None
            if block.kind == "background":
                shell.start(block)
            else:
                if block.kind == "stop and shell":
                    shell.stop()
                shell.run(block)
            ran += 1
            continue
        if block.kind == "exec":
            # padded to the block's line so that tracebacks point into the markdown file
            code = compile("\n" * (block.line - 1) + block.code, str(block.page), "exec")
            exec(code, namespace)
            ran += 1
            continue
        name, args = block.target()
        path = pytester.path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(block.code, encoding="utf-8")
        if block.kind == "test file":
            if _order(args, 0):
                _run_shuffled(block, pytester, seeds)
            else:
                _inner_run(block, pytester, seeds[0])
            ran += 1
    return ran


@pytest.mark.parametrize("page", WRITTEN, ids=[str(p.relative_to(DOCS)) for p in WRITTEN])
def test_page_runs(page: Path, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """The page's blocks run in order, and each inner run it shuffles passes under every seed of
    ``SEEDS`` (the others in a copy of the folder as the run found it: one page run, not one more
    per seed, issue 33)."""
    page_blocks = blocks(page, "run")
    assert run_page(page_blocks, pytester, monkeypatch) > 0, f"{page}: no python block runs"


SHUFFLED = [
    p for p in WRITTEN if any(b.kind == "test file" and _order(b.target()[1], 0) for b in blocks(p, "run"))
]


def test_inner_runs_pass_in_any_order(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """test_page_runs runs every shuffled inner run under each seed of ``SEEDS`` (the pages hold
    such runs: the guarantee is not vacuous). Here, what that catches: a test file that passes only
    in its written order fails under each seed; a second seed's run finds the folder as the first
    run found it (a test that needs a fresh folder passes under both)."""
    assert len(SEEDS) >= 2 and len(SHUFFLED) >= 10, SHUFFLED
    page = DOCS / "order.md"

    def test_file(code: str, args: str = "") -> Block:
        block = Block(page, 1, "python", f"# test file: test_order.py {args}\n{code}")
        assert block.kind == "test file"
        return block

    written = "ORDER = []\n" + "".join(
        f"\n\ndef test_{k}():\n    ORDER.append({k})\n    assert ORDER == list(range({k} + 1))\n"
        for k in range(6)
    )
    for seed in SEEDS:
        with pytest.raises(AssertionError, match=f"did not pass \\(-p randomly --randomly-seed={seed}\\)"):
            run_page([test_file(written)], pytester, monkeypatch, seeds=(seed,))
    assert run_page([test_file(written, "-p no:randomly")], pytester, monkeypatch) == 1  # the order failed
    fresh = (
        "from pathlib import Path\n\n\ndef test_fresh():\n"
        "    assert not Path('ran').exists()\n    Path('ran').write_text('')\n"
    )
    assert run_page([test_file(fresh)], pytester, monkeypatch) == 1
    assert (pytester.path / "ran").exists() and not list(pytester.path.parent.glob("seed*-*"))


def test_readme_runnable_blocks(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    readme = [*blocks(ROOT / "README.md"), *blocks(ROOT / "README.md", "bash")]
    marked = sorted((b for b in readme if b.first.startswith("# runnable")), key=lambda b: b.line)
    assert {b.lang for b in marked} == {"python", "bash"}, (
        "README.md: no python or no bash block marked '# runnable'"
    )
    assert run_page(marked, pytester, monkeypatch) == len(marked)


def test_the_docs_exist_and_every_page_is_linked_from_the_index() -> None:
    assert (DOCS / "index.md").exists()
    index = (DOCS / "index.md").read_text(encoding="utf-8")
    for page in PAGES:
        if page.name != "index.md":
            assert str(page.relative_to(DOCS)) in index, (
                f"docs/index.md does not link {page.relative_to(DOCS)}"
            )


_LINK = re.compile(r"\]\(([^)#\s]+\.md)(?:#[^)]*)?\)")


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(DOCS)) for p in PAGES])
def test_relative_links_resolve(page: Path) -> None:
    for target in _LINK.findall(page.read_text(encoding="utf-8")):
        if "://" not in target:
            assert (page.parent / target).resolve().exists(), (
                f"{page.relative_to(ROOT)}: broken link {target}"
            )


def test_every_python_block_runs_or_says_why_not() -> None:
    """A block that is only shown must say so on its first line (and there are few of them)."""
    shown = [b for p in PAGES for b in blocks(p) if b.kind == "shown"]
    for block in shown:
        assert len(block.first) > len("# not run"), f"{block.where()}: '# not run' without a reason"
    total = sum(len(blocks(p)) for p in PAGES)
    assert len(shown) * 4 <= total, [b.where() for b in shown]
