"""The rest of the rewriter (`_Rewriter`): test functions (``@vcr.use_cassette`` wrapped around
their body, pytest-recording's fixtures they ask for), ``vcr.use_cassette`` calls and ``VCR``
objects, the ``vcr_config`` fixture's dict, and the names renamed (fixtures, vcrpy's errors)."""

from __future__ import annotations

from pathlib import Path

import libcst as cst

from .bindings import _RENAMES
from .findings import BODY_COMMENT as _BODY_COMMENT
from .rewrite_markers import _MarkerRewriter
from .rewrite_options import _Markers
from .syntax import (
    _append,
    _commas,
    _commas_dict,
    _dotted,
    _is_docstring,
    _kwarg,
    _list,
    _registers_matcher,
    _statements,
    _str,
    _string,
)

_REGISTER = {
    "register_persister": "a custom persister; ssemock reads and writes its own JSON cassettes (convert what it "
    "stored with ssemock.Cassette.add, then .save)",
    "register_serializer": "a custom serializer; ssemock cassettes are JSON (convert its files with "
    "ssemock.Cassette.add)",
}


#: vcrpy Cassette attributes a ``with vcr.use_cassette(...) as cass`` block may read, and what
#: ssemock's player (what ``ssemock.use_cassette`` gives) has instead
_CASSETTE_ATTRS = {
    "play_count": "sum(NAME.play_counts) (plays per interaction), or len(NAME.plays)",
    "all_played": "not NAME.unplayed() (the indexes of interactions never served)",
    "play_counts": "NAME.play_counts (a list, one count per interaction)",
    "requests": "[play.request for play in NAME.plays], or NAME.cassette.interactions",
    "responses": "[i.response for i in NAME.cassette.interactions]",
    "responses_of": "NAME.cassette.interactions",
    "data": "NAME.cassette.interactions",
    "dirty": "NAME.recorded (the interactions recorded in this run)",
    "rewound": "nothing: a player serves each interaction once unless allow_playback_repeats",
    "write_protected": "nothing: the record mode decides (record_mode=)",
}


class _Rewriter(_MarkerRewriter):
    """pytest-recording / vcrpy test code as ssemock's, one module at a time."""

    def visit_With(self, node: cst.With) -> None:
        for item in node.items:  # with vcr.use_cassette(...) as cass: cass is an ssemock Player now
            if (
                item.asname is not None
                and isinstance(item.asname.name, cst.Name)
                and isinstance(item.item, cst.Call)
                and self.is_use_cassette(item.item)
            ):
                self.cassette_names.add(item.asname.name.value)

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
        if "allowed_hosts" not in keys:  # vcrpy lets no unmatched request through, whatever its matchers
            mapped.append(_kwarg("allowed_hosts", _list([])))
        self.needs_ssemock = True
        func = cst.Attribute(cst.Name("ssemock"), cst.Name("use_cassette"))
        return cst.Call(func, _commas([cst.Arg(new_path), *mapped]))

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        if self.is_use_cassette(original_node) and not self.in_decorator:
            return self.use_cassette(updated_node, original_node)
        return updated_node

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
            notes: tuple[str, ...] = ()
            if not has_match and self.suite.match_on is not None:
                element = cst.DictElement(_str("match_on"), _list(list(self.suite.match_on)))
                new = new.with_changes(elements=_append(list(new.elements), element))
                notes = _BODY_COMMENT
            if not any(  # vcrpy lets no unmatched request through, whatever its matchers
                isinstance(e, cst.StarredDictElement)  # extends another config, which says its own
                or (isinstance(e, cst.DictElement) and _string(e.key) == "allowed_hosts")
                for e in new.elements
            ):
                new = new.with_changes(
                    elements=_append(list(new.elements), cst.DictElement(_str("allowed_hosts"), _list([])))
                )
                notes = notes or _BODY_COMMENT[-2:]
            comments = [cst.EmptyLine(comment=cst.Comment(c)) for c in notes]
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
        owner, attr = original_node.value, original_node.attr.value
        if isinstance(owner, cst.Name) and owner.value in self.cassette_names and attr in _CASSETTE_ATTRS:
            self.todo(
                original_node,
                f"{owner.value}.{attr}: vcrpy's Cassette attribute, which the ssemock player that "
                f"use_cassette gives has not: use {_CASSETTE_ATTRS[attr].replace('NAME', owner.value)}",
            )
        if original_node.attr.value in _REGISTER:
            name = original_node.attr.value
            self.todo(original_node, f"{name}: {_REGISTER[name]}: not converted")
        return updated_node
