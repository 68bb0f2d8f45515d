"""What ``ssemock migrate`` checks in a Python file before its syntax-tree rewriter (libcst) sees
it, and what it learns of the suite's modules on the way.

libcst recurses once per level of nesting: a valid test file holding a 1,000-term expression
stops it with a RecursionError, and a 10,000-term one crashes the process (a segfault, after
about 90 s). Neither can be caught from inside, so a file is measured first, with the standard
library's `ast` and `tokenize` (no recursion of their own that can crash), against stated
bounds: `MAX_NESTING` levels and `MAX_CHARS` characters. A file beyond them is reported and left
as it is, and the run goes on with the other files.

The same pass notes the names each module imports from another (``from helpers import my_vcr``,
``helpers.my_vcr``) and the names its ``__all__`` lists, so that the rewriter never deletes a
``my_vcr = vcr.VCR(...)`` that another module uses."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from dataclasses import dataclass, field

__all__ = ["MAX_CHARS", "MAX_NESTING", "Module", "measure"]

MAX_NESTING = 100
"""The deepest nesting a file may hold: brackets, operators chained without brackets (``a + b +
...``: each term is a level, as libcst builds it), ``and`` / ``or`` chains, adjacent string
literals, nested blocks. libcst fails at about 150."""
MAX_CHARS = 4_000_000
"""The most characters a Python file may hold (about 4 MB): a test module is far smaller."""

_WORD = re.compile(r"[A-Za-z_]\w*")


@dataclass
class Module:
    """What the check found in one Python file."""

    refused: str | None = None
    """Why the file is left as it is (None: the rewriter may read it)."""
    line: int | None = None
    """Where the nesting goes past the bound, when known."""
    imports: set[str] = field(default_factory=set)
    """Names this module takes from other modules (``from m import NAME``, ``m.NAME``)."""
    exports: set[str] = field(default_factory=set)
    """The names its ``__all__`` lists."""


def measure(text: str) -> Module:
    """Check ``text`` (a Python file) against the bounds; note its imports and ``__all__`` (of a
    file beyond the bounds, or one that does not parse here: every name in it, to be safe)."""
    found = Module(imports=set(_WORD.findall(text)))
    if len(text) > MAX_CHARS:
        found.refused = (
            f"{len(text):,} characters, more than the {MAX_CHARS:,} ssemock migrate reads "
            "(MAX_CHARS): migrate it by hand"
        )
        return found
    depth, line = _token_depth(text)
    if depth > MAX_NESTING:
        found.refused, found.line = _too_deep(depth), line
        return found
    try:
        tree = ast.parse(text)
    except (RecursionError, MemoryError):
        found.refused = _too_deep(None)
        return found
    except (SyntaxError, ValueError):
        return found  # libcst reports it (it may read syntax of a newer Python than this one)
    depth, line = _tree_depth(tree)
    if depth > MAX_NESTING:
        found.refused, found.line = _too_deep(depth), line
        return found
    found.imports = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            found.imports.update(alias.name for alias in node.names)
        elif isinstance(node, ast.Attribute):
            found.imports.add(node.attr)
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets) and node.value is not None:
                found.exports.update(
                    n.value
                    for n in ast.walk(node.value)
                    if isinstance(n, ast.Constant) and isinstance(n.value, str)
                )
    return found


def _too_deep(depth: int | None) -> str:
    held = "nested deeper than Python's own parser goes" if depth is None else f"nested {depth} levels deep"
    return (
        f"{held}, more than the {MAX_NESTING} ssemock migrate reads (MAX_NESTING: its syntax-tree "
        "rewriter, libcst, recurses once per level and would crash): left as it is, migrate it by hand "
        "or split the expression"
    )


def _token_depth(text: str) -> tuple[int, int | None]:
    """The deepest bracket nesting plus the longest run of adjacent string literals, from the
    tokens (a file ``ast`` refuses, such as too many parentheses for its parser, is measured too)."""
    deepest, line, brackets, strings = 0, None, 0, 0
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            kind, value = token.type, token.string
            if kind == tokenize.OP and value in "([{":
                brackets += 1
            elif kind == tokenize.OP and value in ")]}":
                brackets = max(0, brackets - 1)
            if kind == tokenize.STRING:
                strings += 1
            elif kind not in (tokenize.NL, tokenize.COMMENT):
                strings = 0
            if brackets + strings > deepest:
                deepest, line = brackets + strings, token.start[0]
    except (tokenize.TokenError, SyntaxError):
        pass  # an unterminated bracket or string: the parse reports it
    return deepest, line


def _tree_depth(tree: ast.AST) -> tuple[int, int | None]:
    """The deepest nesting of the tree, counted as libcst nests it: every node is a level, and a
    chain ``a and b and c`` is one level per operator (ast keeps it flat, libcst does not)."""
    deepest, line = 0, None
    stack: list[tuple[ast.AST, int]] = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, ast.BoolOp):
            depth += len(node.values) - 1
        if depth > deepest:
            deepest, line = depth, getattr(node, "lineno", line)
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return deepest, line
