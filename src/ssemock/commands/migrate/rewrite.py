"""The test-code half of ``ssemock migrate``: a libcst rewriter from pytest-recording / vcrpy to ssemock.

It rewrites ``@pytest.mark.vcr`` (and ``default_cassette``, ``block_network``, ``pytestmark``
lists), the ``vcr_config`` / ``vcr_cassette_dir`` fixtures, ``vcr.use_cassette`` as a context
manager, a call or a decorator, and the imports; the options vcrpy and ssemock share keep their
names, the others are converted where ssemock has them and listed (file and line) where not.
Imported by [`ssemock.commands.migrate`][ssemock.commands.migrate] only, once libcst is known to be installed.

One file at a time (`rewrite_file`): `bindings` finds what it binds, `_Rewriter` rewrites it
(options in `rewrite_options`, markers in `rewrite_markers`, functions, calls and fixtures in
`rewrite_fixtures`), then `rewrite_imports` fixes its imports; `Suite` holds what spans files."""

from __future__ import annotations

import re
from pathlib import Path

import libcst as cst
from libcst.metadata import MetadataWrapper

from .bindings import _Scan
from .findings import Finding
from .rewrite_fixtures import _Rewriter
from .rewrite_imports import _Imports
from .suite import Suite


class Unparsable(Exception):
    def __init__(self, line: int | None, message: str) -> None:
        super().__init__(message)
        self.line, self.message = line, message


def rewrite_file(suite: Suite, path: Path, text: str) -> str:
    """``text``, the file at ``path``, rewritten (unchanged when there is nothing to do); what is left
    for a person goes to ``suite.todo``. Raises `Unparsable` when it does not parse."""
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
    rewriter = _Rewriter(suite, path, scan)
    new = MetadataWrapper(module).visit(rewriter)
    if new.deep_equals(module):
        return text
    elsewhere = {name: suite.used_elsewhere(path, name) for name in scan.instances}
    new = new.visit(
        _Imports(
            scan,
            ssemock=rewriter.needs_ssemock,
            compat=rewriter.needs_compat,
            keep=lambda name: elsewhere.get(name) is not None,
        )
    )
    code = new.code
    for name in scan.instances:
        pattern = re.compile(rf"^{re.escape(name)}\s*=.*\bVCR\(", re.M)
        kept, before = pattern.search(code), pattern.search(text)
        if kept and before:
            why = elsewhere.get(name)
            suite.todo.append(
                Finding(
                    path,
                    text.count("\n", 0, before.start()) + 1,
                    f"{name} = vcr.VCR(...): kept, as vcrpy, because {why}: migrate the uses there "
                    "to ssemock.use_cassette (with its options), then remove it"
                    if why
                    else f"{name} = vcr.VCR(...): used other than by use_cassette; ssemock has no "
                    "configured recorder object: pass its options to ssemock.use_cassette",
                )
            )
    return code
