"""The test-code half of ``ssemock migrate``: a libcst rewriter from pytest-recording / vcrpy to ssemock.

It rewrites ``@pytest.mark.vcr`` (and ``default_cassette``, ``block_network``, ``pytestmark``
lists), the ``vcr_config`` / ``vcr_cassette_dir`` fixtures, ``vcr.use_cassette`` as a context
manager, a call or a decorator, and the imports; the options vcrpy and ssemock share keep their
names, the others are converted where ssemock has them and listed (file and line) where not.
Imported by [`ssemock.commands.migrate`][ssemock.commands.migrate] only, once libcst is known to be installed.
"""

# Long on purpose: one libcst transformer whose visitors share the suite's state (markers in
# scope, fixtures renamed, imports needed); split, that state would be passed around between modules.

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from ...redaction.rules import QUERY_PARAMS, REQUEST_HEADERS
from ...scan.shapes import SECRET_NAME
from .findings import BODY_COMMENT as _BODY_COMMENT
from .findings import MODES as _MODES
from .findings import CassetteJob, Edit, Finding, ssemock_name
from .findings import literal_host as _literal_host

_RENAMES = {"vcr_config": "ssemock_config", "vcr_cassette_dir": "ssemock_cassette_dir"}
#: vcrpy / pytest-recording options ssemock has under the same name
_SAME = {
    "allow_playback_repeats",
    "before_record_request",
    "before_record_response",
    "ignore_hosts",
    "ignore_localhost",
}
#: options dropped because ssemock does it always, with why (said once per file)
_ALWAYS = {
    "decode_compressed_response": "ssemock always stores bodies decoded",
    "serializer": "ssemock cassettes are JSON",
}
_UNSUPPORTED = {
    "persister": "a custom persister: ssemock reads and writes its own JSON cassettes; convert what it stores "
    "by hand (ssemock.Cassette.add, then .save)",
    "custom_patches": "custom patches: ssemock intercepts httpx, httpx2, aiohttp and urllib3 (requests, botocore)",
    "filter_post_data_parameters": "ssemock has no body filter: scrub the body in a before_record_request hook",
    "filter_nested_post_data_parameters": "ssemock has no body filter: scrub it in a before_record_request hook",
    "filter_sensitive_data": "scrub with before_record_request / before_record_response hooks",
    "inject_cassette": "use the `ssemock` fixture, or `with ssemock.use_cassette(...) as player`",
    "path_transformer": "name the cassette file in the call",
    "func_path_generator": "name the cassette file in the call",
    "additional_matchers": "list every matcher in match_on",
    "before_save_interaction": "use before_record_response",
    "after_load_interaction": "edit the converted cassette instead",
}

_REGISTER = {
    "register_persister": "a custom persister; ssemock reads and writes its own JSON cassettes (convert what it "
    "stored with ssemock.Cassette.add, then .save)",
    "register_serializer": "a custom serializer; ssemock cassettes are JSON (convert its files with "
    "ssemock.Cassette.add)",
}


class Unparsable(Exception):
    def __init__(self, line: int | None, message: str) -> None:
        super().__init__(message)
        self.line, self.message = line, message


@dataclass
class Suite:
    """The state of one migration across files: cassette jobs, findings, the fixture to add."""

    root: Path
    match_on: tuple[str, ...] | None
    cassettes: set[Path]
    jobs: list[CassetteJob] = field(default_factory=list)
    todo: list[Finding] = field(default_factory=list)
    uses_markers: bool = False
    #: test modules using pytest-recording's markers with no vcr_config fixture in scope
    uncovered: set[Path] = field(default_factory=set)

    def rewrite(self, path: Path, text: str) -> str:
        try:
            module = cst.parse_module(text)
        except cst.ParserSyntaxError as exc:
            raise Unparsable(exc.raw_line, str(exc).splitlines()[0]) from None
        except (cst.CSTValidationError, RecursionError) as exc:  # pragma: no cover - libcst's own limits
            raise Unparsable(None, str(exc)) from None
        scan = _Scan()
        module.visit(scan)
        if not (scan.pytest | scan.mark | scan.vcr | scan.use) and not scan.fixtures:
            return text
        rewriter = _Rewriter(self, path, scan)
        new = MetadataWrapper(module).visit(rewriter)
        if new.deep_equals(module):
            return text
        new = new.visit(_Imports(scan, ssemock=rewriter.needs_ssemock, compat=rewriter.needs_compat))
        code = new.code
        for name in scan.instances:
            pattern = re.compile(rf"^{re.escape(name)}\s*=.*\bVCR\(", re.M)
            kept, before = pattern.search(code), pattern.search(text)
            if kept and before:
                self.todo.append(
                    Finding(
                        path,
                        text.count("\n", 0, before.start()) + 1,
                        f"{name} = vcr.VCR(...): used other than by use_cassette; ssemock has no "
                        "configured recorder object: pass its options to ssemock.use_cassette",
                    )
                )
        return code

    def _root_conftest(self) -> Path:
        return (self.root if self.root.is_dir() else self.root.parent) / "conftest.py"

    def finish(self, edits: list[Edit]) -> list[Edit]:
        """An ``ssemock_config`` fixture with vcrpy's matchers in the suite's top conftest.py, when
        a test module used pytest-recording's markers with no ``vcr_config`` in its scope."""
        if not (self.uncovered and self.match_on is not None):
            return []
        target = self._root_conftest() if self.root.is_dir() else self.root
        fixture = "\n".join(
            [
                '@pytest.fixture(scope="session")',
                "def ssemock_config():",
                *(f"    {line}" for line in _BODY_COMMENT),
                f'    return {{"match_on": {list(self.match_on)!r}, "allowed_hosts": []}}'.replace("'", '"'),
                "",
            ]
        )
        edit = next((e for e in edits if e.path == target), None)
        new = []
        if edit is None:
            before = target.read_bytes().decode("utf-8") if target.exists() else None
            edit = Edit(target, before, before or "")
            new = [edit]
        text = edit.after.rstrip("\n")
        if not re.search(r"^(import pytest|from pytest import)", text, re.M):
            text = "import pytest\n" + ("\n\n" + text if text else "")
        edit.after = text + "\n\n\n" + fixture
        return new

    def extras(
        self, path: Path, test: str | None, names: list[str], line: int | None, default_dir: Path | None
    ) -> str | None:
        """pytest-recording's extra cassettes of a marker (read together with the test's own):
        the cassette name for the ssemock marker, or None when they are merged into the test's
        own cassette."""
        stems = [Path(n).stem if Path(n).suffix in (".yaml", ".yml", ".json") else n for n in names]
        own = None
        if default_dir is not None and test is not None:
            own = [p for p in sorted(default_dir.glob(f"{test}.y*ml")) if p in self.cassettes]
        if len(names) == 1 and not own:
            return ssemock_name(stems[0]).removesuffix(".json")
        if default_dir is None or test is None:
            self.todo.append(
                Finding(
                    path,
                    line,
                    f"extra cassettes {names}: ssemock reads one cassette per test; "
                    "merge them into one (ssemock.Cassette.add) by hand",
                )
            )
            return ssemock_name(stems[0]).removesuffix(".json")
        sources = [*(own or []), *(default_dir / n if not Path(n).is_absolute() else Path(n) for n in names)]
        missing = [s for s in sources if not s.exists()]
        if missing:
            self.todo.append(Finding(path, line, f"extra cassette {missing[0]} not found"))
            return None
        target = default_dir / ssemock_name(test)
        self.jobs.append(CassetteJob(tuple(sources), target))
        self.todo.append(
            Finding(
                path,
                line,
                f"the test's cassettes {[s.name for s in sources]} are merged into "
                f"{target.name} (ssemock reads one cassette per test)",
            )
        )
        return None

    def cassette_path(self, path: Path, literal: str, line: int | None) -> str:
        """A vcrpy cassette path in the code, as the converted cassette's path."""
        p = Path(literal)
        new = p.with_name(ssemock_name(p.stem if p.suffix in (".yaml", ".yml", ".json") else p.name))
        places = [p] if p.is_absolute() else [self.root / p, path.parent / p, Path.cwd() / p]
        if not any(c in self.cassettes or c.exists() for c in places):
            self.todo.append(
                Finding(
                    path,
                    line,
                    f"cassette {literal} not found under {self.root}: the code now "
                    f"reads {new.as_posix()}; convert it with ssemock import-vcr",
                )
            )
        return new.as_posix()


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


def _dotted(node: cst.BaseExpression) -> str:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return f"{_dotted(node.value)}.{node.attr.value}"
    return ""


def _assigns(node: cst.Assign, name: str) -> bool:
    return any(isinstance(t.target, cst.Name) and t.target.value == name for t in node.targets)


def _elements(value: cst.BaseExpression) -> list[cst.BaseExpression]:
    if isinstance(value, (cst.List, cst.Tuple)):
        return [e.value for e in value.elements]
    return [value]


def _string(node: cst.BaseExpression) -> str | None:
    if isinstance(node, cst.SimpleString):
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    return None


def _str(text: str) -> cst.SimpleString:
    return cst.SimpleString('"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"')


def _list(items: list[str]) -> cst.List:
    return cst.List([cst.Element(_str(s)) for s in items])


@dataclass
class _Markers:
    """pytest-recording's markers on one function, class or module, as found."""

    vcr: list[cst.BaseExpression] = field(default_factory=list)
    default: list[cst.BaseExpression] = field(default_factory=list)
    block: list[cst.BaseExpression] = field(default_factory=list)

    @property
    def any(self) -> bool:
        return bool(self.vcr or self.default or self.block)


class _Rewriter(cst.CSTTransformer):
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, suite: Suite, path: Path, scan: _Scan) -> None:
        super().__init__()
        self.suite, self.path, self.scan = suite, path, scan
        self.needs_ssemock = False
        self.classes: list[str] = []
        self.scopes: list[_Markers] = [self._find(scan.module_markers)]
        self.in_decorator = 0
        self.depth = 0
        self.replaced: cst.BaseExpression | None = None  # the marker the new one takes the place of
        self.quiet = False  # while an outer marker's options are copied (its own conversion reports them)
        self.needs_compat = False  # a vcrpy hook or matcher is wrapped in ssemock.player.vcr_hooks
        above = _conftest_fixtures(path, suite.root)
        own_dir = "vcr_cassette_dir" in scan.fixtures or "vcr_cassette_dir" in above
        self.covered = "vcr_config" in scan.fixtures or "vcr_config" in above
        self.default_dir = None if own_dir else path.parent / "cassettes" / path.stem

    # -- helpers ---------------------------------------------------------------------------------

    def line(self, node: cst.CSTNode) -> int | None:
        try:
            return int(self.get_metadata(PositionProvider, node).start.line)
        except KeyError:
            return None

    def todo(self, node: cst.CSTNode | int | None, message: str) -> None:
        if self.quiet:
            return
        line = node if isinstance(node, int) or node is None else self.line(node)
        self.suite.todo.append(Finding(self.path, line, message))

    def at(self, node: cst.CSTNode, fallback: cst.CSTNode) -> cst.CSTNode:
        """``node`` if it is from the parsed file (it has a line), else ``fallback``."""
        return node if self.line(node) is not None else fallback

    def marker(self, expr: cst.BaseExpression) -> tuple[str, cst.Call | None, cst.Attribute] | None:
        call = expr if isinstance(expr, cst.Call) else None
        target = call.func if call is not None else expr
        if not isinstance(target, cst.Attribute):
            return None
        v = target.value
        if (
            isinstance(v, cst.Attribute)
            and v.attr.value == "mark"
            and isinstance(v.value, cst.Name)
            and v.value.value in self.scan.pytest
        ) or (isinstance(v, cst.Name) and v.value in self.scan.mark):
            return target.attr.value, call, target
        return None

    def is_use_cassette(self, expr: cst.BaseExpression) -> bool:
        func = expr.func if isinstance(expr, cst.Call) else expr
        if isinstance(func, cst.Attribute) and func.attr.value == "use_cassette":
            return isinstance(func.value, cst.Name) and (
                func.value.value in self.scan.vcr or func.value.value in self.scan.instances
            )
        return isinstance(func, cst.Name) and func.value in self.scan.use

    def _find(self, exprs: list[cst.BaseExpression]) -> _Markers:
        found = _Markers()
        for e in exprs:
            m = self.marker(e)
            if m is not None and m[0] == "vcr":
                found.vcr.append(e)
            elif m is not None and m[0] == "default_cassette":
                found.default.append(e)
            elif m is not None and m[0] == "block_network":
                found.block.append(e)
        return found

    # -- options ---------------------------------------------------------------------------------

    def option(
        self, key: str, value: cst.BaseExpression, where: cst.CSTNode
    ) -> list[tuple[str, cst.BaseExpression]]:
        """One vcrpy / pytest-recording option as ssemock's (none when ssemock has no such option)."""
        if key.startswith("before_record"):
            key = "before_record_request" if key == "before_record" else key
            return [(key, self.hook(key, value, where))]
        if key in _SAME:
            return [(key, value)]
        if key == "record_mode":
            return [(key, self.mode(value, where))]
        if key == "match_on":
            return [(key, self.matchers(value, where))]
        if key in ("filter_headers", "filter_query_parameters"):
            self.filters(key, value, where)
            return []
        if key == "allowed_hosts":
            hosts = (
                [_string(e) for e in _elements(value)] if isinstance(value, (cst.List, cst.Tuple)) else [None]
            )
            literal = [_literal_host(h) if h is not None else None for h in hosts]
            if all(literal):
                return [("allowed_hosts", _list([h for h in literal if h]))]
            self.todo(
                where,
                "allowed_hosts: pytest-recording takes regular expressions, ssemock names, "
                "*.wildcards and networks (loopback is allowed by default): dropped, write them again",
            )
            return []
        if key in _ALWAYS:
            return []
        reason = _UNSUPPORTED.get(key, "no ssemock equivalent")
        self.todo(where, f"{key}: not converted ({reason}); removed")
        return []

    def mode(self, value: cst.BaseExpression, where: cst.CSTNode) -> cst.BaseExpression:
        text = _string(value)
        if text is None and isinstance(value, cst.Attribute):
            text = value.attr.value.lower()  # RecordMode.ONCE, vcr.mode.RecordMode.NONE
        if text is None:
            return value
        if text not in _MODES:
            self.todo(where, f"record_mode {text!r}: not a vcrpy record mode, left as it is")
            return value
        if text == "any":
            self.todo(where, "record_mode 'any' is new_episodes in ssemock")
        return _str(_MODES[text])

    def matchers(self, value: cst.BaseExpression, where: cst.CSTNode) -> cst.BaseExpression:
        if not isinstance(value, (cst.List, cst.Tuple)):
            return value
        from ...plan.matching import MATCHERS

        kept = []
        for element in value.elements:
            name = _string(element.value)
            if name is None or name in self.scan.matchers:
                self.needs_compat = True
                function = element.value if name is None else self.scan.matchers[name]
                wrapped = cst.Call(
                    cst.Attribute(cst.Name("vcr_compat"), cst.Name("matcher")), [cst.Arg(function)]
                )
                kept.append(element.with_changes(value=wrapped, comma=cst.MaybeSentinel.DEFAULT))
                continue
            if name not in MATCHERS:
                self.todo(
                    where,
                    f"match_on: {name!r} is not a matcher ssemock knows (a registered vcrpy matcher?): "
                    "removed; pass the function in match_on as ssemock.player.vcr_hooks.matcher(function)",
                )
                continue
            kept.append(element.with_changes(comma=cst.MaybeSentinel.DEFAULT))
        return cst.List(kept)

    def filters(self, key: str, value: cst.BaseExpression, where: cst.CSTNode) -> None:
        names = []
        for e in _elements(value) if isinstance(value, (cst.List, cst.Tuple)) else []:
            if isinstance(e, cst.Tuple) and e.elements:
                e = e.elements[0].value
            names.append(_string(e))
        if not names or None in names:
            self.todo(
                where,
                f"{key}: not a list of literal names; ssemock redacts credentials by default: "
                "check the rest (before_record_request hook)",
            )
            return
        if key == "filter_headers":
            left = [
                n
                for n in names
                if n and n.lower() not in REQUEST_HEADERS and not SECRET_NAME.search(n.lower())
            ]
        else:
            left = [n for n in names if n and not QUERY_PARAMS.match(n)]
        if left:
            what = "headers" if key == "filter_headers" else "query parameters"
            self.todo(
                where,
                f"{key}: ssemock redacts credential {what} by default, but not {left}: removed; scrub "
                "them in a before_record_request hook if they must not reach the cassette",
            )

    def hook(self, key: str, value: cst.BaseExpression, where: cst.CSTNode) -> cst.BaseExpression:
        """A vcrpy hook, wrapped so that it gets vcrpy's types ([`ssemock.player.vcr_hooks`][ssemock.player.vcr_hooks])."""
        if isinstance(value, (cst.List, cst.Tuple)):
            self.todo(where, f"{key}: a list of hooks: ssemock takes one; chain them in one function")
            return value
        name = value.value if isinstance(value, cst.Name) else None
        effects = _side_effects(self.scan.functions[name]) if name in self.scan.functions else None
        if effects:
            when = (
                "for every request, before matching too"
                if key.endswith("request")
                else "once per recorded response"
            )
            self.todo(
                where,
                f"{key}: the hook {name} has side effects ({effects}): ssemock calls it {when}; "
                "check they still hold",
            )
        self.needs_compat = True
        wrapper = "request_hook" if key.endswith("request") else "response_hook"
        return cst.Call(cst.Attribute(cst.Name("vcr_compat"), cst.Name(wrapper)), [cst.Arg(value)])

    def kwargs(self, args: Sequence[cst.Arg], where: cst.CSTNode) -> list[cst.Arg]:
        out = []
        for arg in args:
            if arg.keyword is None:
                out.append(arg)
                continue
            for key, value in self.option(arg.keyword.value, arg.value, self.at(arg, where)):
                out.append(
                    arg.with_changes(keyword=cst.Name(key), value=value)
                    if key == arg.keyword.value
                    else _kwarg(key, value)
                )
        return out

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

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.depth += 1
        self.scopes.append(_Markers())

    def leave_FunctionDef(
        self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef
    ) -> cst.FunctionDef | cst.RemovalSentinel:
        self.depth -= 1
        self.scopes.pop()
        updated = self.decorated(original_node, updated_node, "function")
        wraps = [d for d in original_node.decorators if self.is_use_cassette(d.decorator)]
        if wraps:
            updated = self.wrap(original_node, updated, wraps)
        if original_node.name.value == "vcr_config":
            updated = self.config_fixture(original_node, updated)
        if original_node.name.value == "pytest_recording_configure" and self.depth == 0:
            if all(_registers_matcher(stmt) or _is_docstring(stmt) for stmt in _statements(original_node)):
                return cst.RemovalSentinel.REMOVE  # its matchers are wrapped where this module names them
            self.todo(
                original_node,
                "pytest_recording_configure: the VCR it configures (persisters, "
                "serializers registered there) is not converted; ssemock has no such hook",
            )
        for param in original_node.params.params:
            if (
                param.name.value == "vcr"
                and not self.scan.vcr
                and original_node.name.value.startswith("test")
            ):
                self.todo(
                    param,
                    "the `vcr` fixture (pytest-recording's vcrpy Cassette): use the `ssemock` fixture "
                    "(a Player: .plays, .cassette, .unplayed())",
                )
            elif param.name.value == "record_mode" and original_node.name.value.startswith("test"):
                self.todo(
                    param,
                    "pytest-recording's `record_mode` fixture: ssemock has none "
                    "(the `ssemock` fixture's .record_mode)",
                )
        return updated  # type: ignore[no-any-return]

    def wrap(
        self, original: cst.FunctionDef, updated: cst.FunctionDef, wraps: list[cst.Decorator]
    ) -> cst.FunctionDef:
        """``@vcr.use_cassette(...)`` on a function: the body inside ``with ssemock.use_cassette(...)``
        (a new player on every call, as vcrpy makes a new cassette)."""
        kept = [u for o, u in zip(original.decorators, updated.decorators) if o not in wraps]
        body: cst.BaseSuite = updated.body
        for d in reversed(wraps):
            if not isinstance(d.decorator, cst.Call):
                self.todo(
                    d,
                    "bare @vcr.use_cassette (a path made from the function's name): not converted; "
                    "name the cassette",
                )
                return updated
            item = cst.WithItem(self.use_cassette(d.decorator, d))
            inner: list[cst.BaseStatement] = (
                list(body.body)
                if isinstance(body, cst.IndentedBlock)
                else [cst.SimpleStatementLine(body.body)]
                if isinstance(body, cst.SimpleStatementSuite)
                else []
            )
            doc = inner[:1] if inner and _is_docstring(inner[0]) and len(inner) > 1 else []
            body = cst.IndentedBlock([*doc, cst.With([item], cst.IndentedBlock(inner[len(doc) :]))])
        self.needs_ssemock = True
        return updated.with_changes(decorators=kept, body=body)

    def use_cassette(self, call: cst.Call, where: cst.CSTNode) -> cst.Call:
        args = list(call.args)
        owner = call.func.value if isinstance(call.func, cst.Attribute) else None
        if isinstance(owner, cst.Name) and owner.value in self.scan.instances:  # my_vcr.use_cassette(...)
            given = {a.keyword.value for a in args if a.keyword is not None}
            args += [
                a.with_changes(comma=cst.MaybeSentinel.DEFAULT)
                for a in self.scan.instances[owner.value].args
                if a.keyword is not None and a.keyword.value not in given
            ]
        path_arg = next((a for a in args if a.keyword is None or a.keyword.value == "path"), None)
        library = next(
            (a for a in args if a.keyword is not None and a.keyword.value == "cassette_library_dir"), None
        )
        rest = [a for a in args if a is not path_arg and a is not library]
        literal = _string(path_arg.value) if path_arg is not None else None
        new_path: cst.BaseExpression
        if path_arg is None:
            self.todo(where, "use_cassette without a path: not converted, name the cassette")
            return call
        if literal is None or (library is not None and _string(library.value) is None):
            self.todo(
                where, "use_cassette with a path computed at run time: make it name the converted .json file"
            )
            new_path = path_arg.value
        else:
            folder = _string(library.value) if library is not None else None
            if folder and not literal.startswith(folder):  # as vcrpy joins them
                literal = str(Path(folder) / literal)
            new_path = _str(self.suite.cassette_path(self.path, literal, self.line(where)))
        mapped = self.kwargs(rest, where)
        keys = {a.keyword.value for a in mapped if a.keyword is not None}
        if "record_mode" not in keys:  # vcrpy's default, not ssemock's ("none")
            mapped.append(_kwarg("record_mode", _str("once")))
        if "match_on" not in keys and self.suite.match_on is not None:
            mapped.append(_kwarg("match_on", _list(list(self.suite.match_on))))
            if "allowed_hosts" not in keys:  # vcrpy lets no unmatched request through, loopback included
                mapped.append(_kwarg("allowed_hosts", _list([])))
        self.needs_ssemock = True
        func = cst.Attribute(cst.Name("ssemock"), cst.Name("use_cassette"))
        return cst.Call(func, _commas([cst.Arg(new_path), *mapped]))

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        if self.is_use_cassette(original_node) and not self.in_decorator:
            return self.use_cassette(updated_node, original_node)
        return updated_node

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

    # -- fixtures and names ------------------------------------------------------------------------

    def config_fixture(self, original: cst.FunctionDef, updated: cst.FunctionDef) -> cst.FunctionDef:
        """``vcr_config``'s returned dict with ssemock's options, and vcrpy's matchers unless it names them."""
        body = updated.body
        if not isinstance(body, cst.IndentedBlock):
            return updated
        lines = list(body.body)
        found = False
        for i, stmt in enumerate(lines):
            if not (
                isinstance(stmt, cst.SimpleStatementLine)
                and len(stmt.body) == 1
                and isinstance(stmt.body[0], cst.Return)
                and stmt.body[0].value is not None
            ):
                continue
            found = True
            value = stmt.body[0].value
            original_line = (
                original.body.body[i]
                if isinstance(original.body, cst.IndentedBlock) and i < len(original.body.body)
                else original
            )
            new, has_match = self.config_value(value, original_line)
            if new is None:
                self.todo(
                    original,
                    "vcr_config does not return a dict literal: convert its options by hand "
                    "(ssemock_config takes the ssemock marker's keywords)",
                )
                continue
            comments = []
            if not has_match and self.suite.match_on is not None:
                element = cst.DictElement(_str("match_on"), _list(list(self.suite.match_on)))
                new = new.with_changes(elements=_append(list(new.elements), element))
                if not any(
                    isinstance(e, cst.DictElement) and _string(e.key) == "allowed_hosts" for e in new.elements
                ):  # vcrpy lets no unmatched request through
                    new = new.with_changes(
                        elements=_append(
                            list(new.elements), cst.DictElement(_str("allowed_hosts"), _list([]))
                        )
                    )
                comments = [cst.EmptyLine(comment=cst.Comment(c)) for c in _BODY_COMMENT]
            lines[i] = stmt.with_changes(
                body=[stmt.body[0].with_changes(value=new)], leading_lines=[*stmt.leading_lines, *comments]
            )
        if not found:
            self.todo(original, "vcr_config: no return of a dict found: convert its options by hand")
        return updated.with_changes(body=body.with_changes(body=lines))

    def config_value(self, value: cst.BaseExpression, where: cst.CSTNode) -> tuple[cst.Dict | None, bool]:
        if (
            isinstance(value, cst.Call)
            and isinstance(value.func, cst.Name)
            and value.func.value == "dict"
            and all(a.keyword is not None for a in value.args)
        ):
            value = cst.Dict(
                [
                    cst.DictElement(_str(a.keyword.value), a.value, comma=a.comma)  # type: ignore[union-attr]
                    for a in value.args
                ]
            )
        if not isinstance(value, cst.Dict):
            return None, False
        elements: list[cst.BaseDictElement] = []
        has_match = False
        for e in value.elements:
            key = _string(e.key) if isinstance(e, cst.DictElement) else None
            if isinstance(e, cst.StarredDictElement):
                has_match = True  # extends another config, which has (or says) its matchers
                elements.append(e)
                continue
            if key is None:
                self.todo(where, "vcr_config has a key that is not a literal: left as it is")
                elements.append(e)
                continue
            options = self.option(key, e.value, self.at(e, where))
            if not options and elements:  # dropped: the element before takes its comma (and line break)
                elements[-1] = elements[-1].with_changes(comma=e.comma)
            for k, v in options:
                has_match = has_match or k == "match_on"
                elements.append(e.with_changes(value=v) if k == key else e.with_changes(key=_str(k), value=v))
        return value.with_changes(elements=_commas_dict(elements)), has_match

    def visit_Import(self, node: cst.Import) -> bool:
        return False  # names in import statements are not references

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        return False

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.BaseExpression:
        new = _RENAMES.get(original_node.value)
        if new is not None:
            return updated_node.with_changes(value=new)
        if original_node.value in self.scan.errors:  # vcrpy's "no match in record mode none"
            self.needs_ssemock = True
            return cst.Attribute(cst.Name("ssemock"), cst.Name("UnmatchedRequestError"))
        return updated_node

    def leave_SimpleString(
        self, original_node: cst.SimpleString, updated_node: cst.SimpleString
    ) -> cst.SimpleString:
        text = _string(original_node)
        return _str(_RENAMES[text]) if text in _RENAMES else updated_node

    def leave_Attribute(
        self, original_node: cst.Attribute, updated_node: cst.Attribute
    ) -> cst.BaseExpression:
        if (
            original_node.attr.value == "CannotOverwriteExistingCassetteException"
            and _dotted(original_node).split(".")[0] in self.scan.vcr
        ):
            self.needs_ssemock = True
            return cst.Attribute(cst.Name("ssemock"), cst.Name("UnmatchedRequestError"))
        if original_node.attr.value in _REGISTER:
            name = original_node.attr.value
            self.todo(original_node, f"{name}: {_REGISTER[name]}: not converted")
        return updated_node


def _kwarg(key: str, value: cst.BaseExpression) -> cst.Arg:
    tight = cst.AssignEqual(
        whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")
    )
    return cst.Arg(value, keyword=cst.Name(key), equal=tight)


def _commas(args: list[cst.Arg]) -> list[cst.Arg]:
    last = len(args) - 1
    return [
        a.with_changes(comma=cst.MaybeSentinel.DEFAULT)
        if i == last
        else a.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
        if a.comma is cst.MaybeSentinel.DEFAULT
        else a
        for i, a in enumerate(args)
    ]


def _append(elements: list[cst.BaseDictElement], new: cst.DictElement) -> list[cst.BaseDictElement]:
    """``elements`` and ``new``, laid out as the others are (on a line of its own in a dict
    written one element per line)."""
    if not elements:
        return [new]
    last = elements[-1]
    if isinstance(last.comma, cst.Comma):  # a trailing comma: the new element goes after it, with one
        return [*elements, new.with_changes(comma=last.comma)]
    before = elements[-2].comma if len(elements) > 1 else None
    sep = before if isinstance(before, cst.Comma) else cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    return [*elements[:-1], last.with_changes(comma=sep), new]


def _commas_dict(elements: list[cst.BaseDictElement]) -> list[cst.BaseDictElement]:
    last = len(elements) - 1
    return [
        e.with_changes(comma=cst.MaybeSentinel.DEFAULT)
        if i == last and not isinstance(e.comma, cst.Comma)
        else e
        for i, e in enumerate(elements)
    ]


def _statements(function: cst.FunctionDef) -> list[cst.BaseStatement]:
    body = function.body
    if isinstance(body, cst.IndentedBlock):
        return list(body.body)
    return [cst.SimpleStatementLine(body.body)] if isinstance(body, cst.SimpleStatementSuite) else []


def _registers_matcher(stmt: cst.BaseStatement) -> bool:
    """``vcr.register_matcher("name", function)`` alone on a line."""
    if not (
        isinstance(stmt, cst.SimpleStatementLine)
        and len(stmt.body) == 1
        and isinstance(stmt.body[0], cst.Expr)
    ):
        return False
    call = stmt.body[0].value
    return (
        isinstance(call, cst.Call)
        and isinstance(call.func, cst.Attribute)
        and call.func.attr.value == "register_matcher"
    )


def _is_docstring(stmt: cst.BaseStatement) -> bool:
    return (
        isinstance(stmt, cst.SimpleStatementLine)
        and len(stmt.body) == 1
        and isinstance(stmt.body[0], cst.Expr)
        and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def _side_effects(function: cst.FunctionDef) -> str | None:
    """What in a hook's body acts outside its argument: global/nonlocal, print/open, or a change
    to a module-level object (a heuristic; None when nothing is found)."""
    params = {p.name.value for p in function.params.params}
    local: set[str] = set(params)
    found: list[str] = []

    class Visit(cst.CSTVisitor):
        def visit_Global(self, node: cst.Global) -> None:
            found.append("global")

        def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
            found.append("nonlocal")

        def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
            if isinstance(node.target, cst.Name):
                local.add(node.target.value)

        def visit_Call(self, node: cst.Call) -> None:
            func = node.func
            if isinstance(func, cst.Name) and func.value in ("print", "open", "exec"):
                found.append(f"{func.value}()")
            elif isinstance(func, cst.Attribute) and func.attr.value in _MUTATORS:
                root = func.value
                while isinstance(root, (cst.Attribute, cst.Subscript)):
                    root = root.value
                if isinstance(root, cst.Name) and root.value not in local:
                    found.append(f"{_dotted(func) or func.attr.value}()")

    function.body.visit(Visit())
    return ", ".join(dict.fromkeys(found)) or None


_MUTATORS = {
    "append",
    "extend",
    "add",
    "update",
    "insert",
    "write",
    "write_text",
    "write_bytes",
    "setdefault",
    "info",
    "debug",
    "warning",
    "error",
    "put",
    "send",
    "unlink",
    "remove",
}


def _conftest_fixtures(path: Path, root: Path) -> set[str]:
    """The pytest-recording fixtures the conftest.py files above ``path`` (up to ``root``) define."""
    found: set[str] = set()
    top = (root if root.is_dir() else root.parent).resolve()
    folder = path.parent.resolve()
    while True:
        conftest = folder / "conftest.py"
        if conftest.exists() and conftest.resolve() != path.resolve():
            text = conftest.read_text(encoding="utf-8", errors="replace")
            found |= {name for name in _RENAMES if re.search(rf"def\s+{name}\s*\(", text)}
        if folder == top or folder.parent == folder:
            return found
        folder = folder.parent


class _Imports(cst.CSTTransformer):
    """``import ssemock`` (and ``from ssemock import vcr_compat``) where the code now uses them, in
    the place of the vcrpy imports nothing uses any more (those are removed)."""

    def __init__(self, scan: _Scan, *, ssemock: bool, compat: bool) -> None:
        super().__init__()
        self.add: list[cst.BaseSmallStatement] = []
        if ssemock and not scan.ssemock_imported:
            self.add.append(cst.Import([cst.ImportAlias(cst.Name("ssemock"))]))
        if compat and not scan.compat_imported:
            self.add.append(cst.ImportFrom(cst.Name("ssemock"), [cst.ImportAlias(cst.Name("vcr_compat"))]))
        self.scan = scan

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        for stmt in list(updated_node.body):  # my_vcr = vcr.VCR(...) that no use_cassette needs any more
            name = _vcr_instance(stmt, self.scan)
            if name is not None:
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
