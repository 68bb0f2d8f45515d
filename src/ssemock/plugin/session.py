"""The session's start and end: the marker registered, every option given on the command line
or in the ini file checked (one usage error before any test runs), the run's scratch folder; and,
once collected, every bad marker option as one usage error and a marked test given the fixture
without naming it."""

from __future__ import annotations

import uuid

import pytest

from ..core.names import unknown
from .fixture import _RUN
from .interrupts import _configs
from .matrix import _PROBLEMS
from .settings import _CLI, _INI, KEYWORDS, _disabled, _from_text, _problem


def pytest_configure(config: pytest.Config) -> None:
    keywords = ", ".join(f"{k}=..." for k in KEYWORDS if k != "cassette")  # cassette leads, once
    config.addinivalue_line(
        "markers",
        f"ssemock(cassette=None, *, {keywords}): replay (or record) the test's streaming HTTP through "
        "an ssemock cassette; the first positional argument is the cassette name. Keywords: "
        + "; ".join(f"{k}: {v}" for k, v in KEYWORDS.items()),
    )
    if _disabled(config):
        return
    for key in _CLI:
        value = config.getoption(f"ssemock_{key}")
        if value is not None:
            problem = _problem(key, _from_text(key, value))
            if problem:
                raise pytest.UsageError(f"ssemock: --ssemock-{key.replace('_', '-')}: {problem}")
    known = [f"ssemock_{key}" for key in _INI]
    for name in _ini_keys(config):  # a misspelt key, where pytest itself only warns
        if name.lower().startswith("ssemock") and name not in known:
            raise pytest.UsageError(f"ssemock: {config.inipath}: {unknown('ini option', name, known)}")
    for key in _INI:
        text = config.getini(f"ssemock_{key}")
        if text:
            problem = _problem(key, _from_text(key, text))
            if problem:
                raise pytest.UsageError(f"ssemock: ini option ssemock_{key}: {problem}")
    _configs.append(config)
    workerinput = getattr(config, "workerinput", None)
    config.stash[_RUN] = workerinput["testrunuid"] if workerinput else uuid.uuid4().hex


def _ini_keys(config: pytest.Config) -> list[str]:
    """The keys of the pytest section of the run's configuration file (as written, known or not)."""
    path = config.inipath
    if path is None or not path.is_file():
        return []
    if path.suffix == ".toml":
        import tomllib

        tool = tomllib.loads(path.read_text(encoding="utf-8")).get("tool", {}).get("pytest", {})
        return [*tool.get("ini_options", {}), *(k for k in tool if k != "ini_options")]
    import iniconfig

    ini = iniconfig.IniConfig(path)
    return [key for section in ("pytest", "tool:pytest") if section in ini for key in ini[section]]


@pytest.hookimpl(trylast=True)  # after the other plugins' and conftests' (a marker they add counts)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every bad option of every marked test, as one usage error (before any test runs); and a
    marked test given the fixture without naming it, here once for the session rather than in a
    hook run for every test (a test without the marker pays nothing while it runs)."""
    problems = config.stash.get(_PROBLEMS, [])
    if problems:
        raise pytest.UsageError("ssemock: bad options\n  " + "\n  ".join(problems))
    if _disabled(config):
        return
    for item in items:
        fixturenames = getattr(item, "fixturenames", None)
        if (
            fixturenames is not None
            and "ssemock" not in fixturenames
            and item.get_closest_marker("ssemock") is not None
        ):
            fixturenames.append("ssemock")


def pytest_unconfigure(config: pytest.Config) -> None:
    if config in _configs:
        _configs.remove(config)
    if _RUN in config.stash:  # the run's scratch folder goes (the last xdist worker out removes it)
        from ..core import runs
        from ..store import lock

        runs.finish(config.stash[_RUN])
        lock.sweep()  # and the lock files killed recorders left
