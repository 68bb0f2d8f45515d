"""The docs are executed: every ```python block of every page under docs/ runs, offline.

Per page, in a fresh temporary folder (the current directory while the page runs), in order:

* a block whose first line is ``# not run`` is only shown (it needs a real API key or a tool that
  is not installed);
* ``# file: NAME`` writes the block to NAME (an app module, a conftest.py, ...);
* ``# test file: NAME.py [PYTEST ARGS]`` writes the block to NAME.py and runs it with
  ``pytester.runpytest_subprocess(NAME.py, "-p", "no:cassetter", *ARGS)``: it must pass;
* any other block is executed, in one namespace shared by the page's blocks.

README.md's python blocks are shown, not run (they need a key), unless the first line is
``# runnable``.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import httpcore  # noqa: F401 - see below
import httpcore2  # noqa: F401
import pytest

# pytester restores sys.modules after each test. httpx and httpx2 import httpcore / httpcore2
# lazily and cache its exception classes in a module global on first use; if that first use
# happened inside a pytester test, the cache would keep the classes of a module that is dropped
# afterwards, and transport errors (a replayed disconnect) would stop being mapped for the rest of
# the session. Imported here, before any snapshot, there is only ever one copy.

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGES = sorted(DOCS.rglob("*.md"))
_FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```[ \t]*$", re.S | re.M)


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
    text = page.read_text(encoding="utf-8")
    out = []
    for m in _FENCE.finditer(text):
        if m.group(1) == lang:
            out.append(Block(page, text.count("\n", 0, m.start(2)) + 1, m.group(1), m.group(2)))
    return out


def run_page(page_blocks: list[Block], pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> int:
    """Run the blocks in order; returns how many ran (executed or tested)."""
    monkeypatch.chdir(pytester.path)
    monkeypatch.syspath_prepend(str(pytester.path))
    namespace: dict[str, object] = {"__name__": "__docs__"}
    ran = 0
    for block in page_blocks:
        if block.kind == "shown":
            continue
        if block.kind == "exec":
            # padded to the block's line so that tracebacks point into the markdown file
            code = compile("\n" * (block.line - 1) + block.code, str(block.page), "exec")
            exec(code, namespace)  # noqa: S102 - the docs are the test
            ran += 1
            continue
        name, args = block.target()
        path = pytester.path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(block.code, encoding="utf-8")
        if block.kind == "test file":
            result = pytester.runpytest_subprocess(
                name, "-p", "no:cassetter", "-p", "no:cacheprovider",
                "-o", "asyncio_default_fixture_loop_scope=function", *args)
            outcomes = result.parseoutcomes()
            assert result.ret == 0 and outcomes.get("passed", 0) > 0, (
                f"{block.where()}: the test file {name} did not pass:\n" + "\n".join(result.outlines[-60:]))
            ran += 1
    return ran


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(DOCS)) for p in PAGES])
def test_page_runs(page: Path, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    page_blocks = blocks(page)
    assert run_page(page_blocks, pytester, monkeypatch) > 0, f"{page}: no python block runs"


def test_readme_runnable_blocks(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    marked = [b for b in blocks(ROOT / "README.md") if b.first.startswith("# runnable")]
    assert run_page(marked, pytester, monkeypatch) > 0, "README.md has no python block marked '# runnable'"


def test_the_docs_exist_and_every_page_is_linked_from_the_index() -> None:
    assert (DOCS / "index.md").exists()
    index = (DOCS / "index.md").read_text(encoding="utf-8")
    for page in PAGES:
        if page.name != "index.md":
            assert str(page.relative_to(DOCS)) in index, f"docs/index.md does not link {page.relative_to(DOCS)}"


_LINK = re.compile(r"\]\(([^)#\s]+\.md)(?:#[^)]*)?\)")


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(DOCS)) for p in PAGES])
def test_relative_links_resolve(page: Path) -> None:
    for target in _LINK.findall(page.read_text(encoding="utf-8")):
        if "://" not in target:
            assert (page.parent / target).resolve().exists(), f"{page.relative_to(ROOT)}: broken link {target}"


def test_every_python_block_runs_or_says_why_not() -> None:
    """A block that is only shown must say so on its first line (and there are few of them)."""
    shown = [b for p in PAGES for b in blocks(p) if b.kind == "shown"]
    for block in shown:
        assert len(block.first) > len("# not run"), f"{block.where()}: '# not run' without a reason"
    total = sum(len(blocks(p)) for p in PAGES)
    assert len(shown) * 4 <= total, [b.where() for b in shown]
