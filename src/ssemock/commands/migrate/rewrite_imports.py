"""The imports after a rewrite: ``import ssemock`` (and ``from ssemock import vcr_compat``) where
the code now uses them, in the place of the vcrpy imports and ``vcr.VCR(...)`` objects nothing
uses any more."""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst

from .bindings import _Scan
from .syntax import _dotted


class _Imports(cst.CSTTransformer):
    """``import ssemock`` (and ``from ssemock import vcr_compat``) where the code now uses them, in
    the place of the vcrpy imports nothing uses any more (those are removed)."""

    def __init__(
        self, scan: _Scan, *, ssemock: bool, compat: bool, keep: Callable[[str], bool] = lambda name: False
    ) -> None:
        super().__init__()
        self.keep = keep  # a VCR object another module uses: never removed
        self.add: list[cst.BaseSmallStatement] = []
        if ssemock and not scan.ssemock_imported:
            self.add.append(cst.Import([cst.ImportAlias(cst.Name("ssemock"))]))
        if compat and not scan.compat_imported:
            self.add.append(cst.ImportFrom(cst.Name("ssemock"), [cst.ImportAlias(cst.Name("vcr_compat"))]))
        self.scan = scan

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        for stmt in list(updated_node.body):  # my_vcr = vcr.VCR(...) that no use_cassette needs any more
            name = _vcr_instance(stmt, self.scan)
            if name is not None and not self.keep(name):
                rest = _Bound()
                updated_node.with_changes(body=[s for s in updated_node.body if s is not stmt]).visit(rest)
                if name not in rest.names:
                    updated_node = updated_node.with_changes(
                        body=[s for s in updated_node.body if s is not stmt]
                    )
        used = _Bound()
        updated_node.visit(used)
        out: list[cst.BaseStatement] = []
        placed = not self.add
        last_import = -1
        for stmt in updated_node.body:
            if (
                isinstance(stmt, cst.SimpleStatementLine)
                and len(stmt.body) == 1
                and isinstance(stmt.body[0], (cst.Import, cst.ImportFrom))
            ):
                new = _drop_unused(stmt, self.scan, used)
                if new is None:
                    if not placed:
                        out += [stmt.with_changes(body=[a]) for a in self.add]
                        placed = True
                    continue
                out.append(new)
                last_import = len(out) - 1
            else:
                out.append(stmt)
        if not placed:
            out[last_import + 1 : last_import + 1] = [cst.SimpleStatementLine([a]) for a in self.add]
        return updated_node.with_changes(body=out)


def _vcr_instance(stmt: cst.BaseStatement, scan: _Scan) -> str | None:
    """The name a ``NAME = vcr.VCR(...)`` line binds (None for any other statement)."""
    if (
        isinstance(stmt, cst.SimpleStatementLine)
        and len(stmt.body) == 1
        and isinstance(stmt.body[0], cst.Assign)
    ):
        assign = stmt.body[0]
        target = assign.targets[0].target if len(assign.targets) == 1 else None
        if isinstance(target, cst.Name) and target.value in scan.instances:
            return target.value
    return None


class _Bound(cst.CSTVisitor):
    """The names a module references outside its import statements (an attribute's own name is
    not a reference)."""

    def __init__(self) -> None:
        self.names: set[str] = set()

    def visit_Name(self, node: cst.Name) -> None:
        self.names.add(node.value)

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        node.value.visit(self)
        return False

    def visit_Import(self, node: cst.Import) -> bool:
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        return False


def _drop_unused(stmt: cst.SimpleStatementLine, scan: _Scan, used: _Bound) -> cst.SimpleStatementLine | None:
    """The import line without its vcrpy names nothing references (None: nothing left)."""
    node = stmt.body[0]
    if isinstance(node, cst.Import):
        names = [
            a
            for a in node.names
            if not (_dotted(a.name).split(".")[0] == "vcr" and _bound(a) not in used.names)
        ]
    elif (
        isinstance(node, cst.ImportFrom)
        and not isinstance(node.names, cst.ImportStar)
        and node.module is not None
        and _dotted(node.module).split(".")[0] == "vcr"
    ):
        names = [a for a in node.names if _bound(a) in used.names]
    else:
        return stmt
    if len(names) == len(node.names):  # type: ignore[arg-type]
        return stmt
    if not names:
        return None
    names[-1] = names[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    return stmt.with_changes(body=[node.with_changes(names=names)])


def _bound(alias: cst.ImportAlias) -> str:
    if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
        return alias.asname.name.value
    return _dotted(alias.name).split(".")[0]
