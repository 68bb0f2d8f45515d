"""The base of the test-code rewriter: where it is (the file, the markers in scope, what the
conftest.py files above define) and how one vcrpy / pytest-recording option becomes ssemock's:
the same name, a converted value (record modes, matchers, hooks wrapped by
`ssemock.player.vcr_hooks`), or dropped and listed with its file and line."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import libcst as cst
from libcst.metadata import PositionProvider

from ...redaction.rules import QUERY_PARAMS, REQUEST_HEADERS
from ...scan.shapes import SECRET_NAME
from .bindings import _RENAMES, _Scan
from .findings import MODES as _MODES
from .findings import Finding
from .findings import literal_host as _literal_host
from .suite import Suite
from .syntax import _dotted, _elements, _kwarg, _list, _str, _string

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


@dataclass
class _Markers:
    """pytest-recording's markers on one function, class or module, as found."""

    vcr: list[cst.BaseExpression] = field(default_factory=list)
    default: list[cst.BaseExpression] = field(default_factory=list)
    block: list[cst.BaseExpression] = field(default_factory=list)

    @property
    def any(self) -> bool:
        return bool(self.vcr or self.default or self.block)


class _OptionRewriter(cst.CSTTransformer):
    """The rewriter's state and helpers, and the conversion of options (``_Rewriter`` is the whole)."""

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
        self.cassette_names: set[str] = set()  # bound by ``with vcr.use_cassette(...) as NAME``
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
