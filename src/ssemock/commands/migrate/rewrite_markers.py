"""pytest-recording's markers as one ssemock marker: ``@pytest.mark.vcr``, ``default_cassette``
and ``block_network`` on a test, a class or a module's ``pytestmark``, with the options of the
markers they hide and the cassettes they read."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import libcst as cst

from .findings import ssemock_name
from .rewrite_options import _OptionRewriter
from .syntax import _assigns, _commas, _elements, _str, _string


class _MarkerRewriter(_OptionRewriter):
    """Markers on functions, classes and ``pytestmark`` lists, and the class scopes they apply in."""

    # -- markers ---------------------------------------------------------------------------------

    def convert(
        self, exprs: list[cst.BaseExpression], where: cst.CSTNode, test: str | None, level: str
    ) -> list[cst.BaseExpression] | None:
        """A list of marker expressions (decorators, a pytestmark list) with pytest-recording's
        markers turned into one ssemock marker (None: nothing to change)."""
        found = self._find(exprs)
        if not found.any:
            return None
        self.suite.uses_markers = True
        if not self.covered:
            self.suite.uncovered.add(self.path)
        in_scope = (
            bool(found.vcr)
            or any(s.vcr for s in self.scopes[:-1] if level != "module")
            or (level != "module" and bool(self.scopes[0].vcr))
        )
        args: dict[str, cst.Arg] = {}
        if level != "module" and (found.vcr or found.default):
            self.quiet = True
            for scope in self.scopes if level == "function" else self.scopes[:1]:  # markers this one hides
                for e in scope.vcr:
                    call = self.marker(e)[1]  # type: ignore[index]
                    for arg in self.kwargs(call.args if call else [], where):
                        if arg.keyword is not None:
                            args[arg.keyword.value] = arg
            self.quiet = False
        extras: list[str] = []
        for e in found.vcr:
            call = self.marker(e)[1]  # type: ignore[index]
            for arg in self.kwargs(call.args if call else [], e):
                if arg.keyword is not None:
                    args[arg.keyword.value] = arg
                elif _string(arg.value) is not None:
                    extras.append(_string(arg.value))  # type: ignore[arg-type]
                else:
                    self.todo(where, "a vcr marker's cassette name is not a literal: not converted, name it")
        for e in found.block:
            call = self.marker(e)[1]  # type: ignore[index]
            for arg in self.kwargs(call.args if call else [], e):
                if arg.keyword is not None:
                    args.setdefault(arg.keyword.value, arg)
        cassette: str | None = None
        for e in found.default:
            call = self.marker(e)[1]  # type: ignore[index]
            name = _string(call.args[0].value) if call is not None and call.args else None
            if name is None:
                self.todo(where, "default_cassette without a literal name: not converted")
                continue
            stem = Path(name).stem if Path(name).suffix in (".yaml", ".yml", ".json") else name
            cassette = ssemock_name(stem).removesuffix(".json")
        if extras:
            merged = self.suite.extras(
                self.path, cassette or test, extras, self.line(where), self.default_dir
            )
            cassette = merged if cassette is None or merged is None else cassette
        if found.block and not in_scope:
            self.todo(
                where,
                "block_network on a test without a cassette: now an ssemock test with no cassette "
                "(a request fails in a replay; loopback is allowed, as allowed_hosts says)",
            )
        emit = bool(found.vcr or found.default) or not in_scope
        first = next(e for e in exprs if e in found.vcr or e in found.default or e in found.block)
        self.replaced = first
        head = self.marker(first)[2]  # type: ignore[index]
        ssemock_mark = head.with_changes(attr=cst.Name("ssemock"))
        call_args = ([cst.Arg(_str(cassette))] if cassette else []) + list(args.values())
        new_marker: cst.BaseExpression = (
            cst.Call(ssemock_mark, _commas(call_args)) if call_args else ssemock_mark
        )
        out = []
        for e in exprs:
            if e is first and emit:
                out.append(new_marker)
            elif e not in found.vcr and e not in found.default and e not in found.block:
                out.append(e)
        return out

    def visit_Decorator(self, node: cst.Decorator) -> None:
        self.in_decorator += 1

    def leave_Decorator(self, original_node: cst.Decorator, updated_node: cst.Decorator) -> cst.Decorator:
        self.in_decorator -= 1
        return updated_node

    def decorated(self, original: cst.FunctionDef | cst.ClassDef, updated: Any, level: str) -> Any:
        """The decorators with pytest-recording's markers as one ssemock marker, in the place (and
        with the comment) of the first of them."""
        decorators = list(original.decorators)
        test = ".".join([*self.classes, original.name.value]) if level == "function" else None
        new = self.convert([d.decorator for d in decorators], original, test, level)
        if new is None:
            return updated
        kept = []
        olds = {id(o.decorator): u for o, u in zip(decorators, updated.decorators)}
        holder = next(u for o, u in zip(decorators, updated.decorators) if o.decorator is self.replaced)
        for expr in new:
            upd = olds.get(id(expr))
            kept.append(upd if upd is not None else holder.with_changes(decorator=expr))
        return updated.with_changes(decorators=kept)

    # -- scopes ------------------------------------------------------------------------------------

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        inner = [
            e
            for s in node.body.body
            if isinstance(s, cst.SimpleStatementLine)
            for a in s.body
            if isinstance(a, cst.Assign) and _assigns(a, "pytestmark")
            for e in _elements(a.value)
        ]
        self.scopes.append(self._find([d.decorator for d in node.decorators] + inner))
        self.classes.append(node.name.value)
        self.depth += 1

    def leave_ClassDef(self, original_node: cst.ClassDef, updated_node: cst.ClassDef) -> cst.ClassDef:
        self.depth -= 1
        self.classes.pop()
        self.scopes.pop()
        for d in original_node.decorators:
            if self.is_use_cassette(d.decorator):
                self.todo(
                    d,
                    "vcr.use_cassette on a class: not converted; put ssemock.use_cassette in each test, "
                    "or use the ssemock marker",
                )
        return self.decorated(original_node, updated_node, "class")  # type: ignore[no-any-return]

    def leave_Assign(self, original_node: cst.Assign, updated_node: cst.Assign) -> cst.Assign:
        if not _assigns(original_node, "pytestmark") or self.depth > 1:
            return updated_node
        level = "module" if self.depth == 0 else "class"
        new = self.convert(_elements(original_node.value), original_node, None, level)
        if new is None:
            return updated_node
        if isinstance(original_node.value, (cst.List, cst.Tuple)):
            value: cst.BaseExpression = original_node.value.with_changes(
                elements=[cst.Element(e) for e in new]
            )
        else:
            value = new[0] if new else cst.List([])
        return updated_node.with_changes(value=value)
