"""pytest plugin: the ``ssemock`` fixture and marker, namespaced options, the variant matrix.

Options are all ``--ssemock-*`` (and ``ssemock_*`` ini keys) so the plugin coexists with
pytest-recording and cassetter. Where an option is given in several places, the marker wins,
then the command line, then the ``ssemock_config`` fixture, then the ini file; except the record
mode, where the command line wins (as ``--record-mode`` does for pytest-recording). A test
without the marker or the fixture costs nothing: no autouse fixture, nothing imported for it.
"""

# Long on purpose: pytest discovers one plugin module (the pytest11 entry point), and its hooks
# (options, marker, parametrization, the fixture, reports, interruptions) share the session's stash.

from __future__ import annotations

import hashlib
import os
import re
import uuid
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

import pytest

from ..core.modes import RECORD_MODES
from ..core.names import unknown
from ..plan.errors import NetworkBlockedError, RecordingVariantError, SsemockWarning, UnmatchedRequestError
from ..store.naming import file_name, recording_name

if TYPE_CHECKING:  # the rest is imported when a test uses ssemock: an unused plugin costs nothing
    from ..player.replay import Player
    from ..store.cassette import Interaction
    from ..variants import chunking as _chunking
    from ..variants import transforms as _transforms

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
    "allowed_hosts": "hosts a replay may reach: unmatched requests to them are sent for real (default: loopback)",
    "ignore_hosts": "hosts never recorded nor served: their requests always go to the network",
    "ignore_localhost": "True to ignore loopback hosts (as ignore_hosts)",
    "block_subprocesses": "True: children started during a replay get proxy variables pointing at a refusing port",
    "before_record_request": "hook(Request) -> Request | None",
    "before_record_response": "hook(Response) -> Response | None",
    "drain_on_close": "while recording, keep reading a stream the client closed before its end: "
    "True (default, up to 30 s), False, or seconds",
    "check_unplayed": "|".join(_CHECKS),
    "check_unconsumed": "|".join(_CHECKS),
    "explore": "N examples or a duration ('30s'): run the test against N drawn variants in one item",
    "explore_transforms": "what explore draws transforms from: 'network' (default), 'conforming', 'all' or names",
    "explore_faults": "True or fault names: explore also draws faults (the client must reject the stream)",
    "explore_seed": "a number: the seed of explore's search (default: random; derandomized when CI is set)",
}
#: the options with a command-line flag and an ini key (the rest: ini key only, or marker only)
_CLI = (
    "record_mode",
    "chunking",
    "transform",
    "timing",
    "faults",
    "allowed_hosts",
    "match_on",
    "drain_on_close",
    "ignore_hosts",
    "ignore_localhost",
    "block_subprocesses",
    "explore",
    "explore_seed",
)
_FLAGS = ("allow_playback_repeats", "ignore_localhost", "block_subprocesses")
_INI = (
    *_CLI,
    "check_unplayed",
    "check_unconsumed",
    "allow_playback_repeats",
    "explore_transforms",
    "explore_faults",
)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("ssemock", "ssemock: record and replay streaming HTTP")
    group.addoption(
        "--ssemock-record-mode",
        choices=RECORD_MODES,
        default=None,
        help="none (default: replay only, network blocked), once, new_episodes, all, rewrite",
    )
    group.addoption(
        "--ssemock-chunking",
        default=None,
        metavar="NAME[,NAME...]|all",
        help="re-chunk replayed streams; several names or 'all' run each test once per strategy",
    )
    group.addoption(
        "--ssemock-transform",
        default=None,
        metavar="NAME[+NAME...][,...]|all",
        help="crlf, cr, mixed, no_space, keepalive, comments, ids, meta, retry, pad, raw_unicode, blank_lines; '+' chains, ',' or 'all' runs each test once per choice ('network', 'conforming': each of that set)",
    )
    group.addoption(
        "--ssemock-timing",
        default=None,
        metavar="instant|recorded|scaled:F",
        help="when replayed chunks are delivered (default instant; scaled:F multiplies the "
        "recorded times by F)",
    )
    group.addoption(
        "--ssemock-faults",
        default=None,
        metavar="FAULT[;FAULT...]",
        help="faults to inject, e.g. 'disconnect:after_event=3'",
    )
    group.addoption(
        "--ssemock-allowed-hosts",
        default=None,
        metavar="HOST[,HOST...]|none",
        help="hosts that connections no intercepted stack makes may reach during a replay "
        "(names, *.wildcards, addresses, networks; default loopback; 'none' for nothing)",
    )
    group.addoption(
        "--ssemock-ignore-hosts",
        default=None,
        metavar="HOST[,HOST...]",
        help="hosts whose requests are never recorded nor served: always sent to the network",
    )
    group.addoption(
        "--ssemock-ignore-localhost",
        default=None,
        metavar="true|false",
        help="ignore loopback hosts (localhost, 127.0.0.0/8, ::1), as --ssemock-ignore-hosts",
    )
    group.addoption(
        "--ssemock-block-subprocesses",
        default=None,
        metavar="true|false",
        help="child processes started during a replay get proxy variables pointing at a "
        "loopback port that refuses every connection",
    )
    group.addoption(
        "--ssemock-match-on",
        default=None,
        metavar="MATCHER[,MATCHER...]",
        help="vcrpy matcher names: method, uri, scheme, host, port, path, query, body, raw_body, headers",
    )
    group.addoption(
        "--ssemock-drain-on-close",
        default=None,
        metavar="true|false|SECONDS",
        help="while recording, keep reading a stream the client closed before its end, so the "
        "cassette holds all of it (default true: up to 30 s; a number of seconds; false: stop there)",
    )
    group.addoption(
        "--ssemock-explore",
        default=None,
        metavar="N|DURATION",
        help="run every ssemock test against N drawn variants of its streams (or for a duration: "
        "30s, 2m), in one item each; a failure is shrunk to the smallest failing variant",
    )
    group.addoption(
        "--ssemock-explore-seed",
        default=None,
        metavar="N|random",
        help="the seed of explore's search, to reproduce a run ('random': not derandomized when CI is set)",
    )
    group.addoption(
        "--ssemock-disable",
        action="store_true",
        default=False,
        help="turn ssemock off for this run: no interception, no matrix, marked tests run once",
    )
    for key in _INI:
        parser.addini(f"ssemock_{key}", f"default {key} for ssemock tests ({KEYWORDS[key]})", default="")


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
_CUT_SHORT = pytest.StashKey[bool]()  # the test was interrupted, not failed: keep its cassette


def _cut_short(exc: BaseException) -> bool:
    """Whether a test's exception interrupted it rather than ended it: anything but an ordinary
    error or pytest's own outcomes (fail, skip, xfail) — SystemExit, a cancelled asyncio task,
    KeyboardInterrupt, pytest.exit — or pytest-timeout firing (see pytest_timeout_set_timer)."""
    outcomes = (
        Exception,
        pytest.fail.Exception,
        pytest.skip.Exception,
        pytest.xfail.Exception,
        UnmatchedRequestError,
        NetworkBlockedError,
        RecordingVariantError,
    )  # ssemock's own failures end a test too
    return not isinstance(exc, outcomes) or getattr(exc, _TIMED_OUT, False)


_TIMED_OUT = "_ssemock_timed_out"  # set on pytest-timeout's exception by the wrapped handler


@pytest.hookimpl(wrapper=True, optionalhook=True)
def pytest_timeout_set_timer(item: pytest.Item, settings: Any) -> Any:
    """pytest-timeout's timer, wrapped so that a recording it cuts never replaces a good cassette:
    the signal method's exception is marked as an interruption (not a test failure); the thread
    method ends the process at once (``os._exit``), so the partials of the recordings running are
    kept (masked) first."""
    result = yield
    import signal
    import threading

    handler = signal.getsignal(signal.SIGALRM) if hasattr(signal, "SIGALRM") else None
    if getattr(settings, "method", None) == "signal" and callable(handler):
        signal.signal(signal.SIGALRM, _marking(handler))
    for timer in threading.enumerate():  # pytest-timeout names its timer "pytest_timeout <node id>"
        if (
            isinstance(timer, threading.Timer)
            and timer.name.endswith(f" {item.nodeid}")
            and not timer.finished.is_set()
        ):
            timer.function = _keeping_partials(timer.function)
    return result


def _marking(handler: Any) -> Any:
    def marked(signum: int, frame: Any) -> Any:
        __tracebackhide__ = True
        try:
            return handler(signum, frame)
        except BaseException as exc:
            setattr(exc, _TIMED_OUT, True)
            raise

    return marked


def _keeping_partials(function: Any) -> Any:
    def keeping(*args: Any, **kwargs: Any) -> Any:
        import sys

        from ..player.replay import recording_players

        for player in recording_players():
            try:
                partial = player.keep_partial()
            except Exception as exc:  # the process ends next whatever happens here
                print(
                    f"ssemock: timed out while recording {player.path}: the partial recording could not be "
                    f"kept ({type(exc).__name__})",
                    file=sys.stderr,
                )
                continue
            print(
                f"ssemock: timed out while recording: {player.path} is unchanged"
                + (f"; the partial recording is kept in {partial}" if partial else ""),
                file=sys.stderr,
            )
        return function(*args, **kwargs)

    return keeping


_CALL_FAILED = pytest.StashKey[bool]()
_PROBLEMS = pytest.StashKey[list[str]]()


def _disabled(config: pytest.Config) -> bool:
    return bool(config.getoption("ssemock_disable"))


def _from_text(key: str, text: str) -> Any:
    """An option's value as written on the command line or in the ini file."""
    if key in ("allowed_hosts", "ignore_hosts"):
        return [] if text.strip().lower() == "none" else [h.strip() for h in text.split(",") if h.strip()]
    if key == "match_on":
        return [m.strip() for m in re.split(r"[,\s]+", text) if m.strip()]
    if key in _FLAGS:
        return text.strip().lower() in ("1", "true", "yes", "on")
    if key == "explore_faults":
        word = text.strip().lower()
        return (
            True
            if word in ("1", "true", "yes", "on")
            else False
            if word in ("0", "false", "no", "off")
            else text
        )
    if key == "explore_transforms":
        return [t.strip() for t in text.split(",") if t.strip()] if "," in text else text.strip()
    if key == "explore_seed":
        return int(text) if text.strip().lstrip("-").isdigit() else text.strip()
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
    from ..plan import matching as _matching
    from ..plan.record import drain_seconds
    from ..stacks.lock import Guard
    from ..variants import chunking as _chunking
    from ..variants import faults as _faults
    from ..variants import timing as _timing
    from ..variants import transforms as _transforms

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
        elif key == "ignore_hosts":
            Guard(allowed_hosts=None, ignore_hosts=value, blocks=True, where="")
        elif key in ("ignore_localhost", "block_subprocesses") and not isinstance(value, bool):
            return f"must be True or False, got {value!r}"
        elif key == "drain_on_close":
            drain_seconds(value)
        elif key.startswith("explore"):
            from ..player.explore import check_option

            check_option(key, value)
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
            raise ValueError(
                "the ssemock marker takes one positional argument, the cassette name (or cassette=), not both"
            )
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
_VARIANT = pytest.StashKey["Variant"]()  # a recording run's variant: told a duplicate once recorded


def _session_values(config: pytest.Config) -> dict[str, tuple[Any, Any]]:
    """Each option's command-line and ini value (None where not given), read once per session."""
    values = config.stash.get(_SESSION, None)
    if values is None:
        values = {}
        for key in KEYWORDS:
            cli = config.getoption(f"ssemock_{key}") if key in _CLI else None
            text = config.getini(f"ssemock_{key}") if key in _INI else ""
            values[key] = (
                None if cli is None else _from_text(key, cli),
                _from_text(key, text) if text else None,
            )
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
    from ..variants import chunking as _chunking
    from ..variants import transforms as _transforms

    chunking = _setting("chunking", marker, defaults, config)
    transform = _setting("transform", marker, defaults, config)
    found = [
        Variant(c, tuple(t)) for c in _chunking.resolve(chunking) for t in _transforms.alternatives(transform)
    ]
    return found[:1] if _setting("explore", marker, defaults, config) else found  # explore draws its own


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
        _check_recordable(options, metafunc.config)
    except ValueError as exc:
        metafunc.config.stash.setdefault(_PROBLEMS, []).append(f"{metafunc.definition.nodeid}: {exc}")
        return
    if len(variants) > 1:  # one run: no parameter (the fixture takes the one variant itself)
        if _PARAM not in metafunc.fixturenames:
            metafunc.fixturenames.append(_PARAM)
        metafunc.parametrize(_PARAM, variants, ids=[v.id for v in variants])


def _check_recordable(marker: dict[str, Any], config: pytest.Config) -> None:
    """A run that may record (any record mode but ``none``) with a fault it cannot serve as its
    replay will: one ValueError naming the fault, at collection."""
    mode = _setting("record_mode", marker, {}, config) or "none"
    if mode == "none":
        return
    from ..player.replay import recording_refusals
    from ..variants.faults import resolve

    refused = recording_refusals(resolve(_setting("faults", marker, {}, config)))
    if refused:
        raise ValueError(
            f"faults: with record_mode={mode!r} a recording run cannot serve them as their "
            f"replay will: {'; '.join(refused)}; record without them, then replay with them"
        )


def pytest_runtest_setup(item: pytest.Item) -> None:
    """A marked test gets the player without naming the fixture (no autouse fixture: a test
    without the marker pays nothing)."""
    fixturenames = getattr(item, "fixturenames", None)
    if (
        fixturenames is not None
        and "ssemock" not in fixturenames
        and item.get_closest_marker("ssemock") is not None
        and not _disabled(item.config)
    ):
        fixturenames.append("ssemock")


def pytest_collection_modifyitems(config: pytest.Config) -> None:
    """Every bad option of every marked test, as one usage error (before any test runs)."""
    problems = config.stash.get(_PROBLEMS, [])
    if problems:
        raise pytest.UsageError("ssemock: bad options\n  " + "\n  ".join(problems))


_PACKAGE = str(Path(__file__).resolve().parent)


def _ours(tb: TracebackType) -> bool:
    return tb.tb_frame.f_code.co_filename.startswith(_PACKAGE)


def _hide_own_frames(error: BaseException) -> None:
    """An error ssemock raised (an assertion, an unmatched request, a cassette error) shows the
    user's lines and ssemock's message, not ssemock's own frames: they are unlinked from its
    traceback and from those of the errors it chains (``--full-trace`` keeps everything)."""
    if not type(error).__module__.startswith("ssemock"):
        return  # not ours: a bug anywhere keeps its whole traceback
    seen: set[int] = set()
    exc: BaseException | None = error
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        tb = exc.__traceback__
        if exc is not error:  # a chained error's own first frames may be ssemock's (check() caught it)
            while tb is not None and tb.tb_next is not None and _ours(tb):
                tb = tb.tb_next
            exc.__traceback__ = tb
        while tb is not None:
            following = tb.tb_next
            while following is not None and _ours(following) and following.tb_next is not None:
                following = following.tb_next
            if following is not None and _ours(following):  # the last frame, where it was raised
                following = None
            tb.tb_next = following
            tb = following
        exc = exc.__cause__ or exc.__context__


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """Remember whether a test using ssemock failed: its teardown checks then stay quiet (an
    interaction left unplayed by a failing test is no news). A failed test's report gets an
    ``ssemock`` section: what was served before the failure ([`Player.served_summary`][ssemock.Player.served_summary])."""
    if call.excinfo is not None and not item.config.option.fulltrace:
        _hide_own_frames(call.excinfo.value)
    report = yield
    if report.when == "call" and call.excinfo is not None and _cut_short(call.excinfo.value):
        item.stash[_CUT_SHORT] = True
    if report.when == "call" and report.passed:
        used: Any = getattr(item, "funcargs", {}).get("ssemock")
        if hasattr(used, "recorded"):  # the test used the fixture (a Player)
            _skip_duplicate(item, report, used)
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


def _test_name(node: Any) -> tuple[str, list[str]]:
    """The test's name without the ssemock variant id, and the classes it is in (outermost first)."""
    name = re.sub(r"(?<=\[)ssemock-[^-\]]+(-|(?=\]))|-ssemock-[^-\]]+", "", node.name).replace("[]", "")
    return name, [c.name for c in getattr(node, "listchain", list)() if isinstance(c, pytest.Class)]


def _without_secrets(name: str) -> str:
    """A test id that holds a secret (a key used as a pytest parameter) with the parameters, or
    the whole id, replaced by a SHA-256 stand-in: stable across runs (replay finds the file),
    distinct per id, and no part of the key in the file name that gets committed."""
    from ..scan.shapes import mask_text, scan

    # cut at each "-" too: pytest joins parameters with it, which would extend a fixed-length key
    cuts = [m.start() for m in re.finditer(r"[\]-]", name)]
    if mask_text(name) == name and not any(scan(name[:k]) or scan(name[k + 1 :]) for k in cuts):
        return name
    digest = hashlib.sha256(name.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    base, bracket, _ = name.partition("[")
    return f"{base}[secret-{digest}]" if bracket and mask_text(base) == base else f"secret-{digest}"


_STAND_INS = pytest.StashKey[int]()


def pytest_make_parametrize_id(config: pytest.Config, val: object, argname: str) -> str | None:
    """A parameter that holds a secret (a key used as a pytest parameter, any value of an
    argument named like a credential: ``password``, ``api_key``) gets a hashed stand-in for its
    id, ``secret-<sha256 prefix>``: stable across runs, distinct per value, so pytest's terminal
    and reports, and the cassette file named after the test, never show it. An ``ids=`` you
    write yourself is shown as written."""
    from ..scan.shapes import credential_name, mask_text, scan

    if isinstance(val, bytes):
        text = val.decode("utf-8", "surrogateescape")
    elif isinstance(val, (str, int, float)) and not isinstance(val, bool):
        text = str(val)
    else:
        return None
    named = credential_name(argname) and text.strip() != ""
    if not named and not scan(text) and mask_text(text) == text:
        return None
    config.stash[_STAND_INS] = config.stash.get(_STAND_INS, 0) + 1
    return "secret-" + hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()[:12]


def cassette_name(node: Any) -> str:
    """The test's name without the ssemock variant id, safe as a file name; a test in a class is
    ``Class.test`` (nested: ``Outer.Inner.test``), so same-named tests never share a cassette."""
    name, classes = _test_name(node)
    return file_name(_without_secrets(".".join([*classes, name])))


def _cassette_path(spec: Any, directory: str | os.PathLike[str], node: Any) -> Path:
    """A name or relative path resolves in the test's cassette folder, never the working
    directory, and lexically: ``../other/x.json`` needs no folder of this test's to exist. An
    absolute path is taken as it is. The folder may be a str (as pytest-recording's
    ``vcr_cassette_dir`` returns, and so migrated ``ssemock_cassette_dir`` fixtures do)."""
    directory = Path(directory)
    if spec is None:
        path = directory / cassette_name(node)
        if not path.exists():  # a cassette import-vcr made from pytest-recording's name for this test
            name, classes = _test_name(node)
            imported = directory / file_name(recording_name(name, classes[-1] if classes else None))
            if imported.exists():
                return imported
        return path
    path = Path(os.path.normpath(directory / spec))
    return path if path.suffix else path.with_name(path.name + ".json")


@pytest.fixture
def ssemock(
    request: pytest.FixtureRequest, ssemock_config: dict[str, Any], ssemock_cassette_dir: Path
) -> Iterator[Player]:
    """The active cassette player for this test (replay by default, network blocked)."""
    from ..player.replay import Options, Player, open_cassette
    from ..store.cassette import Cassette
    from ..store.lock import lock_for

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
        pytest.fail(
            f"ssemock: {name}: a matrix of chunkings/transforms from ssemock_config cannot parametrize "
            "the test (fixtures run after collection); put it in the marker, on the command line "
            "(--ssemock-chunking) or in the ini file (ssemock_chunking = all)",
            pytrace=False,
        )
    settings = {
        key: _setting(key, marker, ssemock_config, config)
        for key in KEYWORDS
        if key not in ("chunking", "transform") and not key.startswith("explore")
    }
    variant = chosen or variants[0]
    checks = {k: settings.pop(k) or "warn" for k in ("check_unplayed", "check_unconsumed")}
    path = _cassette_path(settings.pop("cassette"), ssemock_cassette_dir, request.node)
    record_mode: Any = settings.pop("record_mode") or "none"
    kwargs = {k: v for k, v in settings.items() if v is not None}
    if _disabled(config):  # a player that is never started: nothing intercepted, nothing expected
        yield Player(Cassette(path=path), path=path, chunking=variant.chunking)
        return
    if record_mode == "none":
        options = Options(chunking=variant.chunking, transform=list(variant.transforms), **kwargs)
        player = open_cassette(path, options)
        idle = _idle_transforms(player.cassette.interactions, variant)
        if idle:
            pytest.skip(f"{_duplicate(idle, path)}: {_idle_because(player, variant)}")
        yield from _run(player, config, request.node)
    else:
        with lock_for(path):  # one recorder of this cassette at a time, across xdist workers
            done = _recorded_marker(config, path, request.node)
            if done.exists():  # another variant of this test recorded it in this run: replay that
                record_mode = "new_episodes"
            options = Options(
                record_mode=record_mode,
                chunking=variant.chunking,
                transform=list(variant.transforms),
                **kwargs,
            )
            player = open_cassette(path, options)
            request.node.stash[_VARIANT] = variant  # a duplicate run is told after it (it records)
            yield from _run(player, config, request.node)
            cut_short = config.stash.get(_INTERRUPTED, False) or request.node.stash.get(_CUT_SHORT, False)
            if player.recorded and not cut_short:
                done.touch()
    if not request.node.stash.get(_CALL_FAILED, False) and not config.stash.get(_INTERRUPTED, False):
        _teardown_checks(player, checks)


def _idle_because(player: Player, variant: Variant) -> str:
    """Why the variant's transforms change no response: each one's reason for each framing."""
    from ..variants import transforms as _transforms

    reasons = {
        str(
            _transforms.skipped_because(
                t,
                x.response.body,
                _transforms.kind_of(x.response.header("content-type") or "", x.response.body),
            )
        )
        for x in player.cassette.interactions
        for t in variant.transforms
    }
    return "; ".join(sorted(reasons))


def _idle_transforms(interactions: list[Interaction], variant: Variant) -> str | None:
    """The variant's transform chain when it applies to no response of the cassette (a matrix
    run that would serve the same bytes as the run without it), else None."""
    if not variant.transforms or not interactions:
        return None
    from ..variants import transforms as _transforms

    for x in interactions:
        kind = _transforms.kind_of(x.response.header("content-type") or "", x.response.body)
        if any(_transforms.applies(t, x.response.body, kind) for t in variant.transforms):
            return None
    return "+".join(t.name for t in variant.transforms)


def _duplicate(idle: str, path: Path) -> str:
    return (
        f"ssemock: transform {idle} changes no stream of {path.name} (the same bytes as without it: a "
        f"duplicate run)"
    )


def _skip_duplicate(item: pytest.Item, report: pytest.TestReport, player: Player) -> None:
    """On a recording run, a passed matrix run whose transforms turn out to change no stream of
    the cassette (known once it is recorded) is reported skipped, as a replay run skips it before
    it starts: both runs give the same outcomes. It ran all the same, and recorded."""
    variant = item.stash.get(_VARIANT, None)
    if variant is None or not report.passed or player.path is None:
        return
    idle = _idle_transforms([*player.cassette.interactions, *player.recorded], variant)
    if idle:
        line = item.location[1]
        report.outcome = "skipped"
        report.longrepr = (str(item.path), (line or 0) + 1, f"Skipped: {_duplicate(idle, player.path)}")


def _run(player: Player, config: pytest.Config, node: Any) -> Iterator[Player]:
    """The player around the test. pytest tears fixtures down after Ctrl-C without telling
    them, so the interrupt is remembered (pytest_keyboard_interrupt), as is a test cut short by
    SystemExit, a cancelled task or pytest-timeout (_CUT_SHORT), and a partial recording is
    kept beside the cassette (masked) instead of over it."""
    player.start()
    try:
        yield player
    finally:
        if config.stash.get(_INTERRUPTED, False) or node.stash.get(_CUT_SHORT, False):
            partial = player.interrupted()
            if player.recorded:
                kept = player.kept[-1] if player.kept else None
                if partial is not None:
                    where = f"the partial recording is kept in {partial}"
                elif kept is not None and kept.left:
                    where = "the partial recording is not kept: masking left a secret in it"
                else:
                    where = "the partial recording could not be kept (see the warning)"
                details = f"\n{kept.describe()}" if kept is not None and (kept.masked or kept.left) else ""
                _say(
                    config,
                    f"ssemock: interrupted while recording: {player.path} is unchanged; {where}{details}",
                )
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
    if _RUN in config.stash:  # the run's scratch folder goes (the last xdist worker out removes it)
        from ..core import runs

        runs.finish(config.stash[_RUN])


def _say(config: pytest.Config, line: str) -> None:
    from ..scan.shapes import safe_message

    line = safe_message(line)
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(line, yellow=True)
    else:
        print(line)


def _recorded_marker(config: pytest.Config, path: Path, node: Any) -> Path:
    """A file that says: this run has recorded this test's cassette (shared by xdist workers)."""
    from ..core import runs

    folder = runs.folder(config.stash[_RUN])
    key = f"{path.resolve()}\0{cassette_name(node)}"
    return folder / hashlib.sha1(key.encode("utf-8", "surrogateescape")).hexdigest()


def _teardown_checks(player: Player, checks: dict[str, str]) -> None:
    from ..redaction.rules import mask_url

    found = []
    if checks["check_unplayed"] != "ignore" and player.record_mode == "none":
        unplayed = player.unplayed()
        if unplayed:
            found.append(("check_unplayed", f"interactions never played: {unplayed} of {player.path}"))
    if checks["check_unconsumed"] != "ignore":
        for play in player.unconsumed():
            which = f"interaction {play.index}" if play.index >= 0 else "the response recorded"
            found.append(
                (
                    "check_unconsumed",
                    f"the stream of {which} ({play.request.method} "
                    f"{mask_url(str(play.request.url))}) "
                    f"was not read to the end under {play.chunking}",
                )
            )
    from ..scan.shapes import safe_message

    for key, message in found:
        message = safe_message(message)
        if checks[key] == "error":
            pytest.fail(f"ssemock: {message}", pytrace=False)
        warnings.warn(f"ssemock: {message}", SsemockWarning, stacklevel=1)


# -- explore: the test body against drawn variants, in one item (the logic is in ssemock.explore) --

_EXPLORING = pytest.StashKey[bool]()
_COVERAGE = pytest.StashKey[list[tuple[str, str]]]()


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    """With ``explore`` set, run the test body against drawn variants (each run goes through
    the other ``pytest_pyfunc_call`` hooks, so async tests run as their plugin runs them)."""
    __tracebackhide__ = True
    player: Any = pyfuncitem.funcargs.get("ssemock")
    if (
        not hasattr(player, "cassette")
        or pyfuncitem.stash.get(_EXPLORING, False)
        or _disabled(pyfuncitem.config)
    ):
        return None
    config = pyfuncitem.config
    marker = _marker_options(pyfuncitem)
    defaults: dict[str, Any] = dict(pyfuncitem.funcargs.get("ssemock_config") or {})  # type: ignore[call-overload]
    setting = _setting("explore", marker, defaults, config)
    if not setting:
        return None
    from ..player.explore import run_item

    def call() -> object:
        pyfuncitem.stash[_EXPLORING] = True
        try:
            return pyfuncitem.ihook.pytest_pyfunc_call(pyfuncitem=pyfuncitem)
        finally:
            pyfuncitem.stash[_EXPLORING] = False

    seed = _setting("explore_seed", marker, defaults, config)
    coverage = run_item(
        call,
        player,
        nodeid=pyfuncitem.nodeid,
        rootdir=config.rootpath,
        setting=setting,
        transforms=_setting("explore_transforms", marker, defaults, config),
        faults=_setting("explore_faults", marker, defaults, config),
        seed=seed if isinstance(seed, int) else None,
        derandomize=False if seed == "random" else None,
    )
    config.stash.setdefault(_COVERAGE, []).append((pyfuncitem.nodeid, coverage.report()))
    return True


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """With ``-v``: what each explored test exercised. Always: how many parameters holding a
    secret got a hashed stand-in for their test id."""
    stand_ins = config.stash.get(_STAND_INS, 0)
    if stand_ins:
        terminalreporter.write_line(
            f"ssemock: {stand_ins} test parameter(s) held a secret: their test ids show a hashed "
            f"stand-in (secret-...) instead"
        )
    found = config.stash.get(_COVERAGE, [])
    if found and config.get_verbosity() > 0:
        terminalreporter.section("ssemock explore coverage")
        for nodeid, report in found:
            terminalreporter.write_line(f"{nodeid}: " + report.replace("\n", "\n    "))
