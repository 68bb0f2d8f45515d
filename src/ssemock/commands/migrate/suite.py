"""The state of one migration across files (`Suite`): the cassettes to convert, what is left for a
person, and the pieces that outlive one file: extra cassettes merged, cassette paths in the code,
the ``ssemock_config`` fixture a suite without ``vcr_config`` gets in its top conftest.py."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from .findings import BODY_COMMENT as _BODY_COMMENT
from .findings import CassetteJob, Edit, Finding, ssemock_name


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
    #: per Python file: the names it takes from other modules, and the names its __all__ lists
    imports: dict[Path, set[str]] = field(default_factory=dict)
    exports: dict[Path, set[str]] = field(default_factory=dict)

    def used_elsewhere(self, path: Path, name: str) -> str | None:
        """How another module may use ``name``, bound in ``path`` (None: nothing says it does)."""
        if name in self.exports.get(path, ()):
            return "its __all__ lists it"
        others = sorted(p for p, names in self.imports.items() if p != path and name in names)
        if others:
            where = others[0].relative_to(self.root) if others[0].is_relative_to(self.root) else others[0]
            return f"{where.as_posix()}{' and others' if len(others) > 1 else ''} may import it"
        return None

    def _root_conftest(self) -> Path:
        return (self.root if self.root.is_dir() else self.root.parent) / "conftest.py"

    def finish(self, edits: list[Edit]) -> list[Edit]:
        """An ``ssemock_config`` fixture with vcrpy's matchers in the suite's top conftest.py, when
        a test module used pytest-recording's markers with no ``vcr_config`` in its scope."""
        if not self.uncovered:
            return []
        target = self._root_conftest() if self.root.is_dir() else self.root
        # allowed_hosts=[] even with --match-body: vcrpy lets no unmatched request through
        config = (
            {"allowed_hosts": []}
            if self.match_on is None
            else {"match_on": list(self.match_on), "allowed_hosts": []}
        )
        notes = _BODY_COMMENT if self.match_on is not None else _BODY_COMMENT[-2:]
        fixture = "\n".join(
            [
                '@pytest.fixture(scope="session")',
                "def ssemock_config():",
                *(f"    {line}" for line in notes),
                f"    return {config!r}".replace("'", '"'),
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
