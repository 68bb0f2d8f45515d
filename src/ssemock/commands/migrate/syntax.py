"""Small pieces of libcst syntax the migration reads and writes: dotted names, string literals,
lists, keyword arguments and commas laid out as the code around them, a function's statements."""

from __future__ import annotations

import libcst as cst


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
