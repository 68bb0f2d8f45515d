"""The plugin's options: every marker / ``ssemock_config`` keyword, its command-line flag and ini key, how each is read from text, checked, and which one wins (marker, then command line, then ``ssemock_config``, then ini; the command line first for the record mode)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import pytest

from ..core.modes import RECORD_MODES
from ..core.names import unknown

if TYPE_CHECKING:  # the rest is imported when a test uses ssemock: an unused plugin costs nothing
    pass


_CHECKS = ("ignore", "warn", "error")


#: every marker / ssemock_config keyword, with what it takes (shown by ``pytest --markers``)
KEYWORDS: dict[str, str] = {
    "cassette": "name in the test's cassette folder, or a path (also the first positional argument)",
    "record_mode": "|".join(RECORD_MODES),
    "chunking": "NAME, a list of names, or 'all' (one run per chunking)",
    "transform": "NAME[+NAME], a list, 'all' or a set: 'network', 'conforming', 'sse', 'ndjson', 'json_array' (one run per choice)",
    "timing": "instant|recorded|scaled:F",
    "faults": "a fault name or a list of them",
    "match_on": "vcrpy matcher names and callables",
    "allow_playback_repeats": "True to serve an interaction more than once",
    "protocol": "the reference accumulator's protocol, e.g. 'openai.chat'",
    "allowed_hosts": "hosts a replay may reach: unmatched requests to them are sent for real (default: loopback)",
    "ignore_hosts": "hosts never recorded nor served: their requests always go to the network",
    "ignore_localhost": "True to ignore loopback hosts (as ignore_hosts)",
    "block_subprocesses": "True: children started during a replay get proxy variables pointing at a refusing port",
    "ignore_message_paths": "JSON paths of WebSocket client messages that matching skips, e.g. ['$.session.instructions'], "
    "added to the protocol's defaults (event ids; base64 audio compared by length); 'strict' first drops them",
    "stdio": "child processes recorded and replayed through their pipes, e.g. ['server.py', 'mcp-server-git'] "
    "(a program name or script path matched against the child's command line; not started in replay)",
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
    "ignore_message_paths",
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
        help="crlf, cr, mixed, no_space, keepalive, comments, ids, meta, retry, pad, raw_unicode, blank_lines; '+' chains, ',' or 'all' runs each test once per choice ('network', 'conforming', and 'sse', 'ndjson', 'json_array': what can rewrite that framing; each of that set)",
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
        "--ssemock-ignore-message-paths",
        default=None,
        metavar="PATH[,PATH...]|strict[,PATH...]",
        help="JSON paths of WebSocket client messages that matching skips (e.g. '$.session.instructions'), "
        "added to the protocol's defaults (event ids; base64 audio compared by length); 'strict' first "
        "drops the defaults",
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


def _disabled(config: pytest.Config) -> bool:
    return bool(config.getoption("ssemock_disable"))


def _from_text(key: str, text: str) -> Any:
    """An option's value as written on the command line or in the ini file."""
    if key in ("allowed_hosts", "ignore_hosts"):
        return [] if text.strip().lower() == "none" else [h.strip() for h in text.split(",") if h.strip()]
    if key in ("match_on", "ignore_message_paths"):
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
    from ..plan import message_matching as _message_matching
    from ..plan import stdio as _stdio
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
        elif key == "ignore_message_paths":
            _message_matching.resolve(value)
        elif key == "allowed_hosts":
            Guard(allowed_hosts=value, blocks=True, where="")
        elif key == "ignore_hosts":
            Guard(allowed_hosts=None, ignore_hosts=value, blocks=True, where="")
        elif key == "stdio":
            _stdio.check_entries(value)
        elif key in ("ignore_localhost", "block_subprocesses") and not isinstance(value, bool):
            return f"must be True or False, got {value!r}"
        elif key == "drain_on_close":
            drain_seconds(value)
        elif key.startswith("explore"):
            from ..player.explore_item import check_option

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


_SESSION = pytest.StashKey[dict[str, tuple[Any, Any]]]()


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
