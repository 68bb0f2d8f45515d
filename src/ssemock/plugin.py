"""pytest plugin: the ``ssemock`` fixture and marker, namespaced options, the variant matrix.

Options are all ``--ssemock-*`` (and ``ssemock_*`` ini keys) so the plugin coexists with
pytest-recording and cassetter. Where an option is given in several places, the marker wins,
then the command line, then the ``ssemock_config`` fixture, then the ini file; except the record
mode, where the command line wins (as ``--record-mode`` does for pytest-recording). A test
without the marker or the fixture costs nothing: no autouse fixture, nothing imported for it.
"""

from __future__ import annotations

import hashlib
import re
import tempfile
import uuid
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ._names import unknown
from .errors import SsemockWarning
from .modes import RECORD_MODES

if TYPE_CHECKING:  # the rest is imported when a test uses ssemock: an unused plugin costs nothing
    from . import chunking as _chunking
    from . import transforms as _transforms
    from .replay import Player

_PARAM = "_ssemock_chunking"
_CHECKS = ("ignore", "warn", "error")
#: every marker / ssemock_config keyword, with what it takes (shown by ``pytest --markers``)
KEYWORDS: dict[str, str] = {
    "cassette": "name in the test's cassette folder, or a path (also the first positional argument)",
    "record_mode": "|".join(RECORD_MODES),
    "chunking": "NAME, a list of names, or 'all' (one run per chunking)",
    "transform": "NAME[+NAME], a list, or 'all' (one run per choice)",
    "timing": "instant|recorded|scaled:F",
    "faults": "a fault name or a list of them",
    "match_on": "vcrpy matcher names and callables",
    "allow_playback_repeats": "True to serve an interaction more than once",
    "protocol": "the reference accumulator's protocol, e.g. 'openai.chat'",
    "allowed_hosts": "hosts a connection no intercepted stack makes may reach (default: loopback)",
    "before_record_request": "hook(Request) -> Request | None",
    "before_record_response": "hook(Response) -> Response | None",
    "drain_on_close": "while recording, keep reading a stream the client closed before its end: "
                      "True (default, up to 30 s), False, or seconds",
    "check_unplayed": "|".join(_CHECKS),
    "check_unconsumed": "|".join(_CHECKS),
}
#: the options with a command-line flag and an ini key (the rest: ini key only, or marker only)
_CLI = ("record_mode", "chunking", "transform", "timing", "faults", "allowed_hosts", "match_on", "drain_on_close")
_INI = (*_CLI, "check_unplayed", "check_unconsumed", "allow_playback_repeats")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("ssemock", "ssemock: record and replay streaming HTTP")
    group.addoption("--ssemock-record-mode", choices=RECORD_MODES, default=None,
                    help="none (default: replay only, network blocked), once, new_episodes, all, rewrite")
    group.addoption("--ssemock-chunking", default=None, metavar="NAME[,NAME...]|all",
                    help="re-chunk replayed streams; several names or 'all' run each test once per strategy")
    group.addoption("--ssemock-transform", default=None, metavar="NAME[+NAME...][,...]|all",
                    help="crlf, cr, mixed, no_space, keepalive, comments, ids, meta, retry, pad, raw_unicode, blank_lines; '+' chains, ',' or 'all' runs each test once per choice")
    group.addoption("--ssemock-timing", default=None, metavar="instant|recorded|scaled:F",
                    help="when replayed chunks are delivered (default instant; scaled:F multiplies the "
                         "recorded times by F)")
    group.addoption("--ssemock-faults", default=None, metavar="FAULT[;FAULT...]",
                    help="faults to inject, e.g. 'disconnect:after_event=3'")
    group.addoption("--ssemock-allowed-hosts", default=None, metavar="HOST[,HOST...]|none",
                    help="hosts that connections no intercepted stack makes may reach during a replay "
                         "(names, *.wildcards, addresses, networks; default loopback; 'none' for nothing)")
    group.addoption("--ssemock-match-on", default=None, metavar="MATCHER[,MATCHER...]",
                    help="vcrpy matcher names: method, uri, scheme, host, port, path, query, body, raw_body, headers")
    group.addoption("--ssemock-drain-on-close", default=None, metavar="true|false|SECONDS",
                    help="while recording, keep reading a stream the client closed before its end, so the "
                         "cassette holds all of it (default true: up to 30 s; a number of seconds; false: stop there)")
    group.addoption("--ssemock-disable", action="store_true", default=False,
                    help="turn ssemock off for this run: no interception, no matrix, marked tests run once")
    for key in _INI:
        parser.addini(f"ssemock_{key}", f"default {key} for ssemock tests ({KEYWORDS[key]})", default="")


def pytest_configure(config: pytest.Config) -> None:
    keywords = ", ".join(f"{k}=..." for k in KEYWORDS)
    config.addinivalue_line(
        "markers",
        f"ssemock(cassette=None, *, {keywords}): replay (or record) the test's streaming HTTP through "
        "an ssemock cassette; the first positional argument is the cassette name. Keywords: "
        + "; ".join(f"{k}: {v}" for k, v in KEYWORDS.items()))
    if _disabled(config):
        return
    for key in _CLI:
        value = config.getoption(f"ssemock_{key}")
        if value is not None:
            problem = _problem(key, _from_text(key, value))
            if problem:
                raise pytest.UsageError(f"ssemock: --ssemock-{key.replace('_', '-')}: {problem}")
    for key in _INI:
        text = config.getini(f"ssemock_{key}")
        if text:
            problem = _problem(key, _from_text(key, text))
            if problem:
                raise pytest.UsageError(f"ssemock: ini option ssemock_{key}: {problem}")
    _configs.append(config)
    workerinput = getattr(config, "workerinput", None)
    config.stash[_RUN] = workerinput["testrunuid"] if workerinput else uuid.uuid4().hex


_RUN = pytest.StashKey[str]()
_CALL_FAILED = pytest.StashKey[bool]()
_PROBLEMS = pytest.StashKey[list[str]]()


def _disabled(config: pytest.Config) -> bool:
    return bool(config.getoption("ssemock_disable"))


def _from_text(key: str, text: str) -> Any:
    """An option's value as written on the command line or in the ini file."""
    if key == "allowed_hosts":
        return [] if text.strip().lower() == "none" else [h.strip() for h in text.split(",") if h.strip()]
    if key == "match_on":
        return [m.strip() for m in re.split(r"[,\s]+", text) if m.strip()]
    if key == "allow_playback_repeats":
        return text.strip().lower() in ("1", "true", "yes", "on")
    if key == "drain_on_close":
        word = text.strip().lower()
        if word in ("true", "yes", "on"):
            return True
        if word in ("false", "no", "off", "none"):
            return False
        try:
            return float(word)
        except ValueError:
            return text  # said unusable by _problem
    return text


def _problem(key: str, value: Any) -> str | None:
    """What is wrong with one option's value (None when it is usable)."""
    from . import chunking as _chunking
    from . import faults as _faults
    from . import matching as _matching
    from . import timing as _timing
    from . import transforms as _transforms
    from .lock import Guard
    from .record import drain_seconds
    try:
        if key == "record_mode" and value not in RECORD_MODES:
            return str(unknown("record mode", value, RECORD_MODES))
        if key == "chunking":
            _chunking.resolve(value)
        elif key == "transform":
            _transforms.alternatives(value)
        elif key == "timing":
            _timing.get(value)
        elif key == "faults":
            _faults.resolve(value)
        elif key == "match_on":
            _matching.resolve(value)
        elif key == "allowed_hosts":
            Guard(allowed_hosts=value, blocks=True, where="")
        elif key == "drain_on_close":
            drain_seconds(value)
        elif key in ("check_unplayed", "check_unconsumed") and value not in _CHECKS:
            return str(unknown(key, value, _CHECKS))
    except (ValueError, TypeError) as exc:
        return str(exc)
    return None


def _marker_options(node: Any) -> dict[str, Any]:
    """The marker's keywords, with its positional argument as ``cassette``."""
    marker = node.get_closest_marker("ssemock")
    if marker is None:
        return {}
    options = dict(marker.kwargs)
    if marker.args:
        if len(marker.args) > 1 or "cassette" in options:
            raise ValueError("the ssemock marker takes one positional argument, the cassette name "
                             "(or cassette=), not both")
        options["cassette"] = marker.args[0]
    return options


def _check_options(options: dict[str, Any], where: str, *, prefix: str = "") -> None:
    """Every keyword known and every value usable, else one ValueError naming the first bad one."""
    for key in options:
        if key not in KEYWORDS:
            raise unknown(f"{where} keyword", key, KEYWORDS)
    for key, value in options.items():
        problem = _problem(key, value)
        if problem:
            raise ValueError(f"{prefix}{key}: {problem}")


@dataclass(frozen=True)
class Variant:
    """One run of a test: a chunking and a chain of transforms."""

    chunking: _chunking.Chunking
    transforms: tuple[_transforms.Transform, ...] = ()

    @property
    def id(self) -> str:
        return "+".join(["ssemock-" + self.chunking.name, *(t.name for t in self.transforms)])


_SESSION = pytest.StashKey[dict[str, tuple[Any, Any]]]()


def _session_values(config: pytest.Config) -> dict[str, tuple[Any, Any]]:
    """Each option's command-line and ini value (None where not given), read once per session."""
    values = config.stash.get(_SESSION, None)
    if values is None:
        values = {}
        for key in KEYWORDS:
            cli = config.getoption(f"ssemock_{key}") if key in _CLI else None
            text = config.getini(f"ssemock_{key}") if key in _INI else ""
            values[key] = (None if cli is None else _from_text(key, cli), _from_text(key, text) if text else None)
        config.stash[_SESSION] = values
    return values


def _setting(key: str, marker: dict[str, Any], defaults: dict[str, Any], config: pytest.Config) -> Any:
    """The marker, else the command line, else ``ssemock_config`` (``defaults``), else the ini;
    the command line first for the record mode."""
    cli, ini = _session_values(config)[key]
    if key == "record_mode" and cli is not None:
        return cli
    for value in (marker.get(key), cli, defaults.get(key), ini):
        if value is not None:
            return value
    return None


def _variants(marker: dict[str, Any], defaults: dict[str, Any], config: pytest.Config) -> list[Variant]:
    from . import chunking as _chunking
    from . import transforms as _transforms
    chunking = _setting("chunking", marker, defaults, config)
    transform = _setting("transform", marker, defaults, config)
    return [Variant(c, tuple(t)) for c in _chunking.resolve(chunking) for t in _transforms.alternatives(transform)]


def _uses(metafunc: pytest.Metafunc) -> bool:
    return "ssemock" in metafunc.fixturenames or metafunc.definition.get_closest_marker("ssemock") is not None


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A marked test gets the fixture (no autouse fixture needed), and one run per chunking and
    transform when several are named; a bad option is collected as a problem of this test."""
    if _disabled(metafunc.config) or not _uses(metafunc):
        return
    try:
        options = _marker_options(metafunc.definition)
        _check_options(options, "ssemock marker")
        variants = _variants(options, {}, metafunc.config)
    except ValueError as exc:
        metafunc.config.stash.setdefault(_PROBLEMS, []).append(f"{metafunc.definition.nodeid}: {exc}")
        return
    if len(variants) > 1:  # one run: no parameter (the fixture takes the one variant itself)
        if _PARAM not in metafunc.fixturenames:
            metafunc.fixturenames.append(_PARAM)
        metafunc.parametrize(_PARAM, variants, ids=[v.id for v in variants])


def pytest_runtest_setup(item: pytest.Item) -> None:
    """A marked test gets the player without naming the fixture (no autouse fixture: a test
    without the marker pays nothing)."""
    fixturenames = getattr(item, "fixturenames", None)
    if (fixturenames is not None and "ssemock" not in fixturenames
            and item.get_closest_marker("ssemock") is not None and not _disabled(item.config)):
        fixturenames.append("ssemock")


def pytest_collection_modifyitems(config: pytest.Config) -> None:
    """Every bad option of every marked test, as one usage error (before any test runs)."""
    problems = config.stash.get(_PROBLEMS, [])
    if problems:
        raise pytest.UsageError("ssemock: bad options\n  " + "\n  ".join(problems))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """Remember whether a test using ssemock failed: its teardown checks then stay quiet (an
    interaction left unplayed by a failing test is no news). A failed test's report gets an
    ``ssemock`` section: what was served before the failure (:meth:`Player.served_summary`)."""
    report = yield
    if report.when == "call" and report.failed:
        item.stash[_CALL_FAILED] = True
        player: Any = getattr(item, "funcargs", {}).get("ssemock")
        if hasattr(player, "served_summary"):  # the test used the fixture (a Player)
            try:
                summary = player.served_summary()
            except Exception as exc:  # a report must never fail
                summary = f"ssemock: could not describe what was served: {exc!r}"
            if summary:
                report.sections.append(("ssemock: what was served before the failure", summary))
    return report


@pytest.fixture(scope="session")
def ssemock_config() -> dict[str, Any]:
    """Override to set defaults for every ssemock test in scope (marker options win). The
    defaults are session- and module-scoped (computed once, not per test); an override may
    have any scope."""
    return {}


@pytest.fixture(scope="module")
def ssemock_cassette_dir(request: pytest.FixtureRequest) -> Path:
    """Where cassettes live: ``cassettes/<test module stem>/`` beside the test file."""
    path = Path(request.node.path)
    return path.parent / "cassettes" / path.stem


_UNSAFE = re.compile(r"[^A-Za-z0-9._\[\]-]+")  # brackets kept: test_x[param].json, as vcrpy names them


def _without_secrets(name: str) -> str:
    """A test id that holds a secret (a key used as a pytest parameter) with the parameters, or
    the whole id, replaced by a SHA-256 stand-in: stable across runs (replay finds the file),
    distinct per id, and no part of the key in the file name that gets committed."""
    from .secrets import mask_text, scan
    # cut at each "-" too: pytest joins parameters with it, which would extend a fixed-length key
    cuts = [m.start() for m in re.finditer(r"[\]-]", name)]
    if mask_text(name) == name and not any(scan(name[:k]) or scan(name[k + 1:]) for k in cuts):
        return name
    digest = hashlib.sha256(name.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    base, bracket, _ = name.partition("[")
    return f"{base}[secret-{digest}]" if bracket and mask_text(base) == base else f"secret-{digest}"


def cassette_name(node: Any) -> str:
    """The test's name without the ssemock variant id, safe as a file name; a test in a class is
    ``Class.test`` (nested: ``Outer.Inner.test``), so same-named tests never share a cassette."""
    name = re.sub(r"(?<=\[)ssemock-[^-\]]+(-|(?=\]))|-ssemock-[^-\]]+", "", node.name).replace("[]", "")
    classes = [c.name for c in getattr(node, "listchain", lambda: [])() if isinstance(c, pytest.Class)]
    name = _without_secrets(".".join([*classes, name]))
    safe = _UNSAFE.sub("_", name).strip("._") or "cassette"
    if safe != name or len(safe) > 120:  # distinct ids must not share a file once made safe
        digest = hashlib.sha1(name.encode("utf-8")).hexdigest()[:10]
        safe = f"{safe[:120]}-{digest}"
    return f"{safe}.json"


def _cassette_path(spec: Any, directory: Path, node: Any) -> Path:
    """A name or relative path resolves in the test's cassette folder, never the working
    directory; an absolute path is taken as it is."""
    if spec is None:
        return directory / cassette_name(node)
    path = Path(spec)
    if not path.is_absolute():
        path = directory / path
    return path if path.suffix else path.with_name(path.name + ".json")


@pytest.fixture
def ssemock(request: pytest.FixtureRequest, ssemock_config: dict[str, Any],
            ssemock_cassette_dir: Path) -> Iterator[Player]:
    """The active cassette player for this test (replay by default, network blocked)."""
    from .cassette import Cassette
    from .cassette_lock import lock_for
    from .replay import Player, use_cassette
    config = request.config
    name = request.node.nodeid
    try:
        _check_options(ssemock_config, "ssemock_config", prefix="ssemock_config ")
        marker = _marker_options(request.node)
        variants = _variants(marker, ssemock_config, config)
    except ValueError as exc:
        pytest.fail(f"ssemock: {name}: {exc}", pytrace=False)
    callspec = getattr(request.node, "callspec", None)
    chosen: Variant | None = callspec.params.get(_PARAM) if callspec is not None else None
    if chosen is None and len(variants) > 1 and not _disabled(config):
        pytest.fail(f"ssemock: {name}: a matrix of chunkings/transforms from ssemock_config cannot parametrize "
                    "the test (fixtures run after collection); put it in the marker, on the command line "
                    "(--ssemock-chunking) or in the ini file (ssemock_chunking = all)", pytrace=False)
    settings = {key: _setting(key, marker, ssemock_config, config)
                for key in KEYWORDS if key not in ("chunking", "transform")}
    variant = chosen or variants[0]
    checks = {k: settings.pop(k) or "warn" for k in ("check_unplayed", "check_unconsumed")}
    path = _cassette_path(settings.pop("cassette"), ssemock_cassette_dir, request.node)
    record_mode: Any = settings.pop("record_mode") or "none"
    kwargs = {k: v for k, v in settings.items() if v is not None}
    if _disabled(config):  # a player that is never started: nothing intercepted, nothing expected
        yield Player(Cassette(path=path), path=path, chunking=variant.chunking)
        return
    if record_mode == "none":
        player = use_cassette(path, record_mode="none", chunking=variant.chunking,
                              transform=list(variant.transforms), **kwargs)
        idle = _idle_transforms(player, variant)
        if idle:
            pytest.skip(f"ssemock: transform {idle} changes no stream of {path.name} (the same bytes as "
                        f"without it: a duplicate run)")
        yield from _run(player, config)
    else:
        with lock_for(path):  # one recorder of this cassette at a time, across xdist workers
            done = _recorded_marker(config, path, request.node)
            if done.exists():  # another variant of this test recorded it in this run: replay that
                record_mode = "new_episodes"
            player = use_cassette(path, record_mode=record_mode, chunking=variant.chunking,
                                  transform=list(variant.transforms), **kwargs)
            yield from _run(player, config)
            if player.recorded and not config.stash.get(_INTERRUPTED, False):
                done.touch()
    if not request.node.stash.get(_CALL_FAILED, False) and not config.stash.get(_INTERRUPTED, False):
        _teardown_checks(player, checks)


def _idle_transforms(player: Player, variant: Variant) -> str | None:
    """The variant's transform chain when it applies to no response of the cassette (a matrix
    run that would serve the same bytes as the run without it), else None."""
    if not variant.transforms or not player.cassette.interactions:
        return None
    from . import transforms as _transforms
    for x in player.cassette.interactions:
        kind = _transforms.kind_of(x.response.header("content-type") or "", x.response.body)
        if any(_transforms.applies(t, x.response.body, kind) for t in variant.transforms):
            return None
    return "+".join(t.name for t in variant.transforms)


def _run(player: Player, config: pytest.Config) -> Iterator[Player]:
    """The player around the test. pytest tears fixtures down after Ctrl-C without telling
    them, so the interrupt is remembered (pytest_keyboard_interrupt) and a partial recording is
    kept beside the cassette instead of over it."""
    player.start()
    try:
        yield player
    finally:
        if config.stash.get(_INTERRUPTED, False):
            partial = player.interrupted()
            if partial is not None:
                _say(config, f"ssemock: interrupted while recording: {player.path} is unchanged; the partial "
                             f"recording is kept in {partial}")
        else:
            player.stop()


def pytest_keyboard_interrupt(excinfo: pytest.ExceptionInfo[BaseException]) -> None:
    for config in _configs:
        config.stash[_INTERRUPTED] = True


_configs: list[pytest.Config] = []  # the sessions running here (pytester can nest one)
_INTERRUPTED = pytest.StashKey[bool]()


def pytest_unconfigure(config: pytest.Config) -> None:
    if config in _configs:
        _configs.remove(config)


def _say(config: pytest.Config, line: str) -> None:
    from .secrets import safe_message
    line = safe_message(line)
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(line, yellow=True)
    else:
        print(line)


def _recorded_marker(config: pytest.Config, path: Path, node: Any) -> Path:
    """A file that says: this run has recorded this test's cassette (shared by xdist workers)."""
    folder = Path(tempfile.gettempdir()) / f"ssemock-run-{config.stash[_RUN]}"
    folder.mkdir(exist_ok=True)
    key = f"{path.resolve()}\0{cassette_name(node)}"
    return folder / hashlib.sha1(key.encode("utf-8", "surrogateescape")).hexdigest()


def _teardown_checks(player: Player, checks: dict[str, str]) -> None:
    from .redact import mask_url
    found = []
    if checks["check_unplayed"] != "ignore" and player.record_mode == "none":
        unplayed = player.unplayed()
        if unplayed:
            found.append(("check_unplayed", f"interactions never played: {unplayed} of {player.path}"))
    if checks["check_unconsumed"] != "ignore":
        for play in player.unconsumed():
            found.append(("check_unconsumed",
                          f"the stream of interaction {play.index} ({play.request.method} "
                          f"{mask_url(str(play.request.url))}) "
                          f"was not read to the end under {play.chunking}"))
    from .secrets import safe_message
    for key, message in found:
        message = safe_message(message)
        if checks[key] == "error":
            pytest.fail(f"ssemock: {message}", pytrace=False)
        warnings.warn(f"ssemock: {message}", SsemockWarning, stacklevel=1)
