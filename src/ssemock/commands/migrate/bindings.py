"""What a test module binds, found before it is rewritten: the names pytest, ``pytest.mark``, vcr
and vcrpy's ``use_cassette`` go by, its module-level functions and pytest-recording fixtures, its
``pytestmark``, the matchers it registers and its ``vcr.VCR(...)`` objects."""

from __future__ import annotations

import libcst as cst

from .syntax import _assigns, _dotted, _elements, _string

_RENAMES = {"vcr_config": "ssemock_config", "vcr_cassette_dir": "ssemock_cassette_dir"}


class _Scan(cst.CSTVisitor):
    """What a module binds: the names of pytest, pytest.mark, vcr and vcrpy's use_cassette; its
    module-level functions (hooks) and fixtures."""

    def __init__(self) -> None:
        self.pytest: set[str] = set()
        self.mark: set[str] = set()
        self.vcr: set[str] = set()
        self.use: set[str] = set()
        self.errors: set[str] = set()  # CannotOverwriteExistingCassetteException, as imported
        self.functions: dict[str, cst.FunctionDef] = {}
        self.fixtures: set[str] = set()
        self.module_markers: list[cst.BaseExpression] = []
        self.ssemock_imported = False
        self.compat_imported = False
        self.matchers: dict[str, cst.BaseExpression] = {}  # vcr.register_matcher(name, function) calls
        self.instances: dict[str, cst.Call] = {}  # my_vcr = vcr.VCR(...) at module level
        self._depth = 0

    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            name = _dotted(alias.name)
            bound = (
                alias.asname.name.value if alias.asname and isinstance(alias.asname.name, cst.Name) else None
            )
            if name == "pytest":
                self.pytest.add(bound or "pytest")
            elif name == "vcr" or name.startswith("vcr."):
                self.vcr.add(bound or "vcr")
            elif name == "ssemock":
                self.ssemock_imported = bound is None

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        module = _dotted(node.module) if node.module else ""
        if isinstance(node.names, cst.ImportStar):
            return
        for alias in node.names:
            name = _dotted(alias.name)
            bound = (
                alias.asname.name.value if alias.asname and isinstance(alias.asname.name, cst.Name) else name
            )
            if module == "pytest" and name == "mark":
                self.mark.add(bound)
            elif module == "vcr" and name == "use_cassette":
                self.use.add(bound)
            elif module.startswith("vcr") and name == "CannotOverwriteExistingCassetteException":
                self.errors.add(bound)
            elif module == "ssemock" and name == "vcr_compat" and bound == name:
                self.compat_imported = True

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if self._depth == 0:
            self.functions[node.name.value] = node
            if node.name.value in _RENAMES:
                self.fixtures.add(node.name.value)
        self._depth += 1

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self._depth -= 1

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._depth += 1

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self._depth -= 1

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "register_matcher" and len(node.args) == 2:
            name = _string(node.args[0].value)
            if name is not None:
                self.matchers[name] = node.args[1].value

    def visit_Assign(self, node: cst.Assign) -> None:
        if self._depth == 0 and _assigns(node, "pytestmark"):
            self.module_markers = _elements(node.value)
        if (
            self._depth == 0
            and len(node.targets) == 1
            and isinstance(node.targets[0].target, cst.Name)
            and isinstance(node.value, cst.Call)
            and isinstance(node.value.func, cst.Attribute)
            and node.value.func.attr.value == "VCR"
            and _dotted(node.value.func.value) in self.vcr
        ):
            self.instances[node.targets[0].target.value] = node.value
