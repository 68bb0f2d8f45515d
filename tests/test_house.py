"""The house's shape (issue: the layers you can see in the folders): no source module over 600
lines, no import cycle (type-only imports count), and no private name or private module of one
package imported from another. The layers themselves are import-linter's contract (CI runs it)."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import grimp
import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "ssemock"
MAX_LINES = 600


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(SRC.rglob("*.py")):
        parts = path.relative_to(SRC.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def _package(module: str, path: Path) -> str:
    """The package a module belongs to: itself for a package's __init__, else its parent."""
    return module if path.name == "__init__.py" else module.rpartition(".")[0]


def test_no_source_module_is_over_600_lines() -> None:
    long = {
        name: n for name, path in _modules().items() if (n := len(path.read_text().splitlines())) > MAX_LINES
    }
    assert not long, f"split these by concern (at most {MAX_LINES} lines each): {long}"


def test_no_import_cycle() -> None:
    graph = grimp.build_graph("ssemock", include_external_packages=False)
    cycles = []
    for module in sorted(graph.modules):
        for imported in graph.find_modules_directly_imported_by(module):
            if imported != module and graph.chain_exists(importer=imported, imported=module):
                cycles.append(graph.find_shortest_chain(importer=imported, imported=module))
    assert not cycles, f"import cycles: {cycles[:5]}"


@functools.cache
def _nodes(path: Path) -> tuple[list[ast.ImportFrom], list[ast.Attribute]]:
    """A source module's ``from X import`` statements and ``name.attribute`` reads, anywhere in
    it: one parse and one walk a run (the checks only read them; each walk of every module took
    ~0.5 CPU-s)."""
    imports, attributes = [], []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            imports.append(node)
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            attributes.append(node)
    return imports, attributes


@functools.cache
def _imports(module: str, path: Path) -> tuple[tuple[str, str, int], ...]:
    """(module imported from, name, line) for every ``from X import name`` in a module, X absolute."""
    package = _package(module, path)
    out = []
    for node in _nodes(path)[0]:
        if node.level:
            base = package.split(".")
            base = base[: len(base) - (node.level - 1)]
            source = ".".join(base + ([node.module] if node.module else []))
        else:
            source = node.module or ""
        if source.split(".")[0] == "ssemock":
            out.extend((source, alias.name, node.lineno) for alias in node.names)
    return tuple(out)


def test_no_private_name_crosses_a_package() -> None:
    """A package's ``__init__`` (or a public module) exports what its neighbours use."""
    modules = _modules()
    crossing = []
    for module, path in modules.items():
        here = _package(module, path)
        for source, name, line in _imports(module, path):
            target = f"{source}.{name}" if f"{source}.{name}" in modules else source
            there = _package(target, modules[target]) if target in modules else source
            dunder = name.startswith("__") and name.endswith("__")  # __all__, __version__: public by rule
            private = (name.startswith("_") and not dunder) or any(
                p.startswith("_") for p in target.split(".")[1:]
            )
            if private and there != here:
                crossing.append(f"{module}:{line} imports {name} from {source}")
        crossing += _private_attributes(module, path, modules)
    assert not crossing, "\n".join(crossing)


def _private_attributes(module: str, path: Path, modules: dict[str, Path]) -> list[str]:
    """``alias._name`` where ``alias`` is a module of another package imported by name."""
    here = _package(module, path)
    imports, attributes = _nodes(path)
    foreign = {}
    for source, name, _ in _imports(module, path):
        target = f"{source}.{name}"
        if target in modules and _package(target, modules[target]) != here:
            foreign[name] = target
    for node in imports:
        for alias in node.names:
            if alias.asname and alias.name in foreign:
                foreign[alias.asname] = foreign[alias.name]
    return [
        f"{module}:{node.lineno} reads {node.attr} of {foreign[node.value.id]}"
        for node in attributes
        if isinstance(node.value, ast.Name)
        and node.value.id in foreign
        and node.attr.startswith("_")
        and not node.attr.startswith("__")
    ]


@pytest.mark.parametrize("package", sorted(p.name for p in SRC.iterdir() if (p / "__init__.py").exists()))
def test_every_package_says_what_it_owns(package: str) -> None:
    doc = ast.get_docstring(ast.parse((SRC / package / "__init__.py").read_text()))
    assert doc, f"ssemock.{package} has no docstring saying what it owns"


def test_every_package_but_framing_reads_its_submodules_fresh() -> None:
    """pytester's in-process reruns drop the modules a run imported: a package that stays must
    not hand out its dropped submodules (``ssemock.core.packages``). ``framing`` sits beside
    ``core`` and cannot use it: nothing imports a framing submodule by ``from ..framing import``.
    The top package too: ``from .. import stacks`` must not bind a dropped ``stacks`` (issue 42)."""
    import importlib

    from ssemock.core.packages import FreshPackage

    stale = []
    for module, path in _modules().items():
        if path.name == "__init__.py" and not module.startswith("ssemock.framing"):
            if not isinstance(importlib.import_module(module), FreshPackage):
                stale.append(module)
        elif path.name != "__init__.py":
            for source, name, line in _imports(module, path):
                if source == "ssemock.framing" and f"ssemock.framing.{name}" in _modules():
                    stale.append(f"{module}:{line} imports the module {name} from ssemock.framing")
    assert not stale, stale


def test_no_module_or_package_is_named_after_a_standard_library_module() -> None:
    import sys

    clashes = sorted(
        str(path.relative_to(SRC))
        for path in SRC.rglob("*")
        if (path.suffix == ".py" and path.stem in sys.stdlib_module_names)
        or (path.is_dir() and (path / "__init__.py").exists() and path.name in sys.stdlib_module_names)
    )
    assert not clashes, f"named like a standard-library module (an import of it reads wrong): {clashes}"
