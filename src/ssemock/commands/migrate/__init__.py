"""``ssemock migrate``: turn a pytest-recording / vcrpy test suite into an ssemock suite in one step.

It finds the vcrpy cassettes under a folder and converts them (one ssemock cassette beside each,
named as the plugin looks for it), rewrites the test code with a syntax-tree rewriter (libcst,
the ``migrate`` extra: comments and formatting stay as they were) and the ``--record-mode`` in
the pytest ini files. Nothing is written until [`Migration.write`][ssemock.commands.migrate.Migration.write]; [`Migration.diff`][ssemock.commands.migrate.Migration.diff]
shows what would change. A file that does not parse is reported and never touched; what cannot
be converted is listed with its file and line.

vcrpy matches requests on method, scheme, host, port, path and query, not the body; ssemock
matches the body too by default. So that the suite passes as it did, the migration carries
vcrpy's matchers into ``ssemock_config`` (and into ``use_cassette`` calls) unless ``match_body``
is asked for.
"""

from __future__ import annotations

import difflib
import os
import re
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ...core.packages import fresh
from .findings import MODES as _MODES
from .findings import CassetteJob, Edit, Finding, ssemock_name
from .findings import literal_host as _literal_host

if TYPE_CHECKING:
    pass

__all__ = ["VCR_MATCH_ON", "CassetteJob", "Finding", "Migration", "import_cassettes", "plan"]

VCR_MATCH_ON = ("method", "scheme", "host", "port", "path", "query")
"""Vcrpy's default ``match_on``: everything but the body."""
INSTALL = (
    'ssemock migrate needs libcst (the "migrate" extra): pip install "ssemock[migrate]" (in a clone of '
    'ssemock: pip install -e ".[migrate]")'
)
"""The message shown when libcst, which `ssemock migrate` needs, is missing."""
_SKIP_DIRS = {"node_modules", "__pycache__", "site-packages", "venv", "env", "build", "dist"}


@dataclass
class Migration:
    """What ``ssemock migrate`` would do to a suite; nothing is written until [`write`][ssemock.commands.migrate.Migration.write]."""

    root: Path
    """The folder migrated."""
    edits: list[Edit] = field(default_factory=list)
    """The source edits planned, per file."""
    cassettes: list[CassetteJob] = field(default_factory=list)
    """The cassettes to convert."""
    todo: list[Finding] = field(default_factory=list)
    """Constructs left for a person: converted partly, or not at all (file and line)"""
    unparsable: list[Finding] = field(default_factory=list)
    """Files that do not parse: reported and left alone."""
    refused: list[Finding] = field(default_factory=list)
    """Cassettes that could not be converted (why, per file)"""

    def diff(self) -> str:
        """A unified diff of every text file the migration changes or creates."""
        out: list[str] = []
        for edit in self.edits:
            name = _rel(edit.path, self.root)
            before = (edit.before or "").splitlines(keepends=True)
            out += difflib.unified_diff(
                before,
                edit.after.splitlines(keepends=True),
                "/dev/null" if edit.before is None else f"a/{name}",
                f"b/{name}",
            )
            if out and not out[-1].endswith("\n"):
                out[-1] += "\n\\ No newline at end of file\n"
        return "".join(out)

    def write(self, *, remove_originals: bool = False) -> list[Path]:
        """Write the converted cassettes and the edited files (each atomically); with
        ``remove_originals`` delete the vcrpy cassettes that were converted. Returns the paths
        written. Cassettes that do not convert are added to [`refused`][ssemock.commands.migrate.Migration.refused] and not written."""
        done, refused = import_cassettes(self.cassettes, write=True, keep_originals=not remove_originals)
        self.refused = _unique([*self.refused, *refused])
        written = [job.target for job in done]
        for edit in self.edits:
            _write_text(edit.path, edit.after)
            written.append(edit.path)
        if remove_originals:
            targets = {job.target.resolve() for job in done}
            bad = {f.path.resolve() for f in self.refused}
            for source in dict.fromkeys(s for job in done for s in job.sources):
                if source.resolve() not in targets and source.resolve() not in bad and source.exists():
                    source.unlink()
        return written


def _unique(findings: list[Finding]) -> list[Finding]:
    return list(dict.fromkeys(findings))


def _rel(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root if root.is_dir() else root.parent).as_posix()
    except ValueError:
        return path.as_posix()


def _read(path: Path) -> str:
    """A text file as it is (CRLF line endings kept: an edit changes only the lines it changes)."""
    return path.read_bytes().decode("utf-8")


def _write_text(path: Path, text: str) -> None:
    """Atomic: a temporary file beside the target, then os.replace."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
        if path.exists():
            os.chmod(tmp, path.stat().st_mode & 0o7777)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# -- cassettes ---------------------------------------------------------------------------------


def import_cassettes(
    jobs: Sequence[CassetteJob], *, write: bool, keep_originals: bool = True
) -> tuple[list[CassetteJob], list[Finding]]:
    """Convert each job's vcrpy cassette(s) into its target (saved only with ``write``): the jobs
    done, and one finding per cassette that does not convert (it does not load, or a secret is
    left after redaction). A vcrpy cassette at its own target (vcrpy's JSON serializer) is kept as
    ``NAME.json.vcrpy`` unless ``keep_originals`` is false."""
    from ...redaction.rules import find_secrets
    from ...store.cassette import Cassette, CassetteError
    from ..import_vcr import import_vcr

    done, refused = [], []
    for job in jobs:
        interactions = []
        try:
            for source in job.sources:
                interactions += import_vcr(source).interactions
        except CassetteError as exc:
            refused.append(Finding(source, None, f"not converted: {exc}"))
            continue
        cassette = Cassette(interactions)
        leaks = find_secrets(cassette)
        if leaks:
            refused.append(
                Finding(
                    job.sources[0],
                    None,
                    f"not converted: a secret is left after redaction "
                    f"({leaks[0]}); remove it, or convert this file with "
                    "`ssemock import-vcr --scrub-bodies`",
                )
            )
            continue
        if write:
            if job.target in job.sources and keep_originals:  # vcrpy's JSON serializer used ssemock's name
                shutil.copyfile(job.target, _kept(job.target))
            cassette.save(job.target, scan_secrets=False)  # scanned just above
        done.append(job)
    return done, refused


def _kept(path: Path) -> Path:
    return path.with_name(path.name + ".vcrpy")


def _is_vcr_cassette(path: Path) -> bool:
    try:
        head = path.read_bytes()[: 1 << 16]
    except OSError:
        return False
    if path.suffix == ".json":
        return b'"interactions"' in head and b'"uri"' in head
    return re.search(rb"^interactions:", head, re.M) is not None


def _files(root: Path) -> Iterator[Path]:
    """The files under ``root``; for one test file, it and the cassettes pytest-recording gave it."""
    if root.is_file():
        yield root
        root = root.parent / "cassettes" / root.stem
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in _SKIP_DIRS)
        for name in sorted(files):
            yield Path(folder) / name


def _target(source: Path) -> Path:
    return source.with_name(ssemock_name(source.stem))


# -- pytest ini files --------------------------------------------------------------------------

_INI_SECTIONS = {
    "pytest.ini": ("pytest",),
    "tox.ini": ("pytest",),
    "setup.cfg": ("tool:pytest",),
    "pyproject.toml": ("tool.pytest.ini_options", "tool.pytest"),
}
_OPTION = re.compile(
    r"(?<![\w-])(--record-mode|--allowed-hosts)(?:(=)|(\s+))([\w.,*^$\\-]+)"
    r"|(\s*)(?<![\w-])(--block-network|--disable-recording)(?![\w-])"
)


#: --block-network as an item of a TOML list (addopts = ["--block-network", "-v"]): the item goes
_QUOTED_FLAG = re.compile(r"""(?P<q>["'])--block-network(?P=q)[ \t]*,?[ \t]*""")
_QUOTED_LAST = re.compile(r""",[ \t]*(?P<q>["'])--block-network(?P=q)(?=[ \t]*\])""")
#: an option and its value as two TOML list items ("--record-mode", "none"): one item
_QUOTED_PAIR = re.compile(
    r"""(?P<q>["'])(?P<opt>--record-mode|--allowed-hosts)(?P=q)[ \t]*,[ \t]*(?P<r>["'])(?P<val>[^"'\n]*)(?P=r)"""
)
_LEFT = re.compile(
    r"(?<![\w-])--(?:record-mode|allowed-hosts|block-network|disable-recording|vcr-record\w*)\b"
)


def _rewrite_ini(path: Path, text: str, todo: list[Finding]) -> str:
    """pytest-recording's options in the pytest section of an ini/cfg/toml file, as ssemock's;
    every line still holding one afterwards is listed to do."""
    sections = _INI_SECTIONS[path.name]
    out, keep = [], False
    for number, line in enumerate(text.splitlines(keepends=True), 1):
        header = re.match(r"\s*\[([^\]]+)\]\s*$", line)
        if header:
            keep = header.group(1).strip() in sections
        elif keep and not line.lstrip().startswith(("#", ";")):
            new = _QUOTED_PAIR.sub(lambda m: f"{m['q']}{m['opt']}={m['val']}{m['q']}", line)
            new = _QUOTED_FLAG.sub("", _QUOTED_LAST.sub("", new))
            known = len(todo)
            new = _OPTION.sub(lambda m: _ini_option(m, path, number, todo), new)  # noqa: B023  (called here)
            if _LEFT.search(new) and len(todo) == known:
                todo.append(
                    Finding(
                        path,
                        number,
                        f"{_LEFT.search(new)[0]}: a vcrpy plugin's option, not carried over "  # type: ignore[index]
                        "(ssemock's are --ssemock-record-mode, --ssemock-allowed-hosts, --ssemock-disable): "
                        "convert it by hand",
                    )
                )
            if line.strip() and not new.strip() or re.fullmatch(r"\s*,?\s*", new) and line.strip():
                continue  # a line that held only --block-network
            line = new
        out.append(line)
    return "".join(out)


def _ini_option(m: re.Match[str], path: Path, line: int, todo: list[Finding]) -> str:
    if m.group(1) == "--record-mode":
        mode = m.group(4)
        if mode not in _MODES:
            todo.append(Finding(path, line, f"--record-mode {mode}: not a vcrpy record mode, left as it is"))
            return m.group(0)
        return f"--ssemock-record-mode{m.group(2) or m.group(3)}{_MODES[mode]}"
    if m.group(1) == "--allowed-hosts":
        hosts = [_literal_host(h) for h in m.group(4).split(",")]
        if None in hosts:
            todo.append(
                Finding(
                    path,
                    line,
                    f"--allowed-hosts {m.group(4)}: regular expressions; ssemock's "
                    "--ssemock-allowed-hosts takes names, *.wildcards and networks",
                )
            )
            return m.group(0)
        return f"--ssemock-allowed-hosts{m.group(2) or m.group(3)}{','.join(h for h in hosts if h)}"
    if m.group(6) == "--disable-recording":
        return f"{m.group(5)}--ssemock-disable"
    return ""  # --block-network: ssemock blocks the network in every replay


# -- the plan ----------------------------------------------------------------------------------


def plan(root: str | os.PathLike[str], *, match_body: bool = False) -> Migration:
    """What migrating the suite at ``root`` (a folder, or one test file) would change.

    ``match_body``: keep ssemock's default matchers (body included) instead of carrying vcrpy's
    over. Raises ImportError (with how to install it) when libcst is missing."""
    try:
        import libcst  # noqa: F401
    except ImportError as exc:
        raise ImportError(INSTALL) from exc
    from .preflight import measure
    from .rewrite import Unparsable, rewrite_file
    from .suite import Suite

    base = Path(root)
    if not base.exists():
        raise FileNotFoundError(f"{base}: no such file or folder")
    migration = Migration(base)
    sources: list[Path] = []
    python: list[Path] = []
    for path in _files(base):
        if path.suffix in (".yaml", ".yml", ".json") and _is_vcr_cassette(path):
            sources.append(path)
        elif path.suffix == ".py":
            python.append(path)
        elif path.name in _INI_SECTIONS:
            text = _read(path)
            new = _rewrite_ini(path, text, migration.todo)
            if new != text:
                migration.edits.append(Edit(path, text, new))
    jobs = {_target(s): CassetteJob((s,), _target(s)) for s in sources}
    suite = Suite(root=base, match_on=None if match_body else VCR_MATCH_ON, cassettes=set(sources))
    texts: dict[Path, str] = {}
    for path in python:  # measured first: what libcst cannot read is never given to it
        try:
            text = _read(path)
        except (UnicodeDecodeError, OSError) as exc:
            if path.name.startswith(("test_", "conftest")):
                migration.unparsable.append(Finding(path, None, f"not read, left as it is: {exc}"))
            continue
        found = measure(text)
        suite.imports[path], suite.exports[path] = found.imports, found.exports
        if found.refused is not None:
            if re.search(r"vcr|block_network|default_cassette", text) or path.name == "conftest.py":
                migration.unparsable.append(Finding(path, found.line, found.refused))
            continue
        texts[path] = text
    for path, text in texts.items():
        if not re.search(r"vcr|block_network|default_cassette", text) and path.name != "conftest.py":
            continue
        try:
            new = rewrite_file(suite, path, text)
        except Unparsable as exc:
            migration.unparsable.append(
                Finding(path, exc.line, f"does not parse, left as it is: {exc.message}")
            )
            continue
        if new != text:
            migration.edits.append(Edit(path, text, new))
    for edit in suite.finish(migration.edits):
        migration.edits.append(edit)
    for job in suite.jobs:
        jobs[job.target] = job
    migration.cassettes = sorted(jobs.values(), key=lambda j: j.target)
    migration.todo += suite.todo
    migration.todo = sorted(_unique(migration.todo), key=lambda f: (str(f.path), f.line or 0))
    for job in migration.cassettes:
        if job.target.exists() and job.target not in job.sources:
            migration.todo.append(
                Finding(
                    job.target,
                    None,
                    "already exists: converted again from " + ", ".join(s.name for s in job.sources),
                )
            )
        if job.target in job.sources:
            migration.todo.append(
                Finding(
                    job.target,
                    None,
                    "a vcrpy JSON cassette at the path ssemock reads: "
                    f"converted in place, the original kept as {_kept(job.target).name}",
                )
            )
    _, migration.refused = import_cassettes(migration.cassettes, write=False)
    return migration


fresh(__name__)  # submodules read from sys.modules (pytester's in-process reruns drop them)
