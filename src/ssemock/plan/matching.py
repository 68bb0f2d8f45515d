"""Request matching with vcrpy's matcher names, and the "closest recorded request" diagnosis.

The implementation of [`ssemock.matching`][ssemock.matching], where its public names are documented."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from .. import protocols as _protocols
from ..core.names import unknown
from ..redaction.rules import redact_request, redact_url
from ..scan.shapes import credential_name, value_shape
from ..store.cassette import Request

__all__ = [
    "DEFAULT",
    "MATCHERS",
    "around",
    "differences",
    "first_difference",
    "origin",
    "records_origin",
    "resolve",
]

DEFAULT = ("method", "scheme", "host", "port", "path", "query", "body")
"""The request parts matched when `match_on` is not given."""
_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}


def _port(url: str) -> int | None:
    parts = urlsplit(url)
    return parts.port or _PORTS.get(parts.scheme)


def origin(url: str) -> tuple[str | None, int | None]:
    """The host (lower case) and port (the scheme's default when none is written) of ``url``."""
    return urlsplit(url).hostname, _port(url)


def records_origin(recorded: Iterable[Request], url: str) -> bool:
    """Whether a request of ``recorded`` went to the host and port of ``url``: an unmatched
    request there is a mismatch to report, not one to send for real, even to an allowed host
    (issue 43)."""
    wanted = origin(url)
    return any(origin(r.url) == wanted for r in recorded)


def _query(url: str) -> list[tuple[str, str]]:
    if "?" not in url:  # no query (most requests): nothing to redact or parse
        return []
    return sorted(parse_qsl(urlsplit(redact_url(url)).query, keep_blank_values=True))


KEYS: dict[str, Callable[[Request], Hashable]] = {
    "method": lambda r: r.method,
    "scheme": lambda r: urlsplit(r.url).scheme,
    "host": lambda r: urlsplit(r.url).hostname,
    "port": lambda r: _port(r.url),
    "path": lambda r: urlsplit(r.url).path or "/",
    "query": lambda r: tuple(_query(r.url)),
    "url": lambda r: redact_url(r.url),
    "uri": lambda r: redact_url(r.url),
}
"""The matchers that compare one value of each request (`host`, `path`, `query`, ...): name -> how
the value is read from a request."""
# a request's values for these are a key, so ssemock.plan.selection finds candidates in a dict instead
# of comparing every interaction


def _kind(value: Any) -> type:
    """JSON kinds: 1 and 1.0 are both numbers (as ``==`` has it); booleans are not numbers."""
    return float if type(value) is int else type(value)


def _first_json_difference(a: Any, b: Any, path: str = "$") -> str | None:
    return next(_json_differences(a, b, path), None)


#: the most body differences one unmatched request shows (the rest are counted)
_MAX_BODY_DIFFERENCES = 12


def _json_differences(a: Any, b: Any, path: str = "$") -> Iterator[str]:
    """Every difference between a sent (``a``) and a recorded (``b``) JSON value, depth first in
    key order: a changed model and a changed prompt are two lines, not the first one found."""
    if _kind(a) is not _kind(b):
        yield f"{path}: {b!r} recorded, {a!r} sent"
    elif isinstance(a, dict):
        for key in sorted(set(a) | set(b), key=str):
            if key not in a or key not in b:
                yield f"{path}.{key}: {'only recorded' if key in b else 'only sent'}"
            else:
                yield from _json_differences(a[key], b[key], f"{path}.{key}")
    elif isinstance(a, list):
        for i, (x, y) in enumerate(zip(a, b)):
            yield from _json_differences(x, y, f"{path}[{i}]")
        if len(a) != len(b):
            yield f"{path}: {len(b)} items recorded, {len(a)} sent"
    elif a != b:
        if credential_name(
            path.rsplit(".", 1)[-1].rsplit("[", 1)[0]
        ):  # "$.password": never the values, only their shapes
            yield f"{path}: <a value of {value_shape(str(b))}> recorded, <a value of {value_shape(str(a))}> sent"
        elif isinstance(a, str) and isinstance(b, str) and max(len(repr(a)), len(repr(b))) > _SHORT:
            at, recorded, sent = first_difference(b, a)  # two long texts: where they part
            yield (
                f"{path}: character {at} differs ({len(b)} recorded, {len(a)} sent): "
                f"recorded '{recorded}', sent '{sent}'"
            )
        else:
            yield f"{path}: {_short(b)} recorded, {_short(a)} sent"


_SHORT = 60


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= _SHORT else text[: _SHORT - 3] + "..."


def first_difference(recorded: str | bytes, sent: str | bytes, width: int = 20) -> tuple[int, str, str]:
    """Where two texts (or byte strings) first differ, and each around that offset: ``width``
    characters (bytes, in hex) on both sides, so two values that look alike at their start show
    where they part (one sample of base64 audio in 40 KB)."""
    at = next((i for i, (x, y) in enumerate(zip(recorded, sent)) if x != y), min(len(recorded), len(sent)))
    return at, around(recorded, at, width), around(sent, at, width)


def around(text: str | bytes, at: int, width: int = 24) -> str:
    """``text`` from ``width`` before ``at`` to ``width`` after it, ``...`` where it is cut; a
    text as its repr's inside, bytes in hex with the one at ``at`` bracketed."""
    start, end = max(at - width, 0), at + width
    if isinstance(text, bytes):
        shown = " ".join(
            f"[{b:02x}]" if start + i == at else f"{b:02x}" for i, b in enumerate(text[start:end])
        )
    else:
        shown = repr(text[start:end])[1:-1]
    return ("..." if start else "") + shown + ("..." if end < len(text) else "")


def _body(sent: Request, rec: Request) -> str | None:
    if rec.body is None:  # recorded without a body: matches any
        return None
    a, b = sent.json(), rec.json()
    if a is not None and b is not None:  # every difference, one per line (differences() splits them)
        # not the ids a client makes up (JSON-RPC request ids): a2a-sdk draws a random one per call
        a, b = _protocols.without_client_ids(a), _protocols.without_client_ids(b)
        found = list(itertools.islice(_json_differences(a, b), _MAX_BODY_DIFFERENCES + 1))
        if len(found) > _MAX_BODY_DIFFERENCES:
            more = sum(1 for _ in _json_differences(a, b)) - _MAX_BODY_DIFFERENCES
            found[-1] = f"$: and {more} more difference{'s' if more != 1 else ''}"
        return "\n".join(found) or None
    if (sent.body or b"") == rec.body:
        return None
    return f"{len(rec.body)} bytes recorded, {len(sent.body or b'')} sent"


def _raw_body(sent: Request, rec: Request) -> str | None:
    """The exact bytes (``body`` compares JSON bodies as JSON)."""
    if rec.body is None or (sent.body or b"") == rec.body:
        return None
    return f"{len(rec.body)} bytes recorded, {len(sent.body or b'')} sent, not the same bytes"


def _headers(sent: Request, rec: Request) -> str | None:
    """Every header the recorded request has, with the same value(s), in the sent one."""
    sent, rec = redact_request(sent), redact_request(rec)
    for name in dict.fromkeys(k for k, _ in rec.headers):
        want = [v for k, v in rec.headers if k == name]
        have = [v for k, v in sent.headers if k == name]
        if want != have:
            return f"{name}: {_values(want)!r} recorded, {_values(have)!r} sent"
    return None


def _values(values: list[str]) -> str | list[str] | None:
    return values[0] if len(values) == 1 else (values or None)


def _keyed(get: Callable[[Request], Hashable]) -> Callable[[Request, Request], str | None]:
    def compare(sent: Request, rec: Request) -> str | None:
        a, b = get(sent), get(rec)
        if a == b:
            return None
        shown = [list(v) if isinstance(v, tuple) else v for v in (b, a)]  # a query as the list it is
        return f"{shown[0]!r} recorded, {shown[1]!r} sent"

    return compare


Matcher = Callable[[Request, Request], "str | None"]
"""A built-in matcher: `None` when the two requests match, else a line saying how they differ."""
MATCHERS: dict[str, Matcher] = {
    **{name: _keyed(get) for name, get in KEYS.items()},
    "method": lambda s, r: None if s.method == r.method else f"{r.method} recorded, {s.method} sent",
    "body": _body,
    "raw_body": _raw_body,
    "headers": _headers,
}
"""Every built-in matcher, by the name `match_on` takes."""


CustomMatcher = Callable[[Request, Request], "bool | None"]
"""A matcher of your own for `match_on`: `matcher(sent, recorded)` returns whether the two
requests match (`None` counts as a match); an `AssertionError` it raises is a mismatch, its
message shown as the difference."""
MatchOn = Sequence["str | CustomMatcher"]
"""What `match_on=` takes: built-in matcher names (the keys of [`MATCHERS`][ssemock.matching.MATCHERS]) and custom matchers."""


def resolve(match_on: MatchOn | None) -> tuple[str | CustomMatcher, ...]:
    """Validated matchers (default: method, URL parts and body): names or callables."""
    if isinstance(match_on, str):
        raise ValueError(
            f"match_on takes a list of matchers, e.g. [{match_on!r}]; got the string {match_on!r}"
        )
    names = tuple(match_on) if match_on is not None else DEFAULT
    for name in names:
        if not callable(name) and name not in MATCHERS:
            raise unknown("matcher", name, MATCHERS)
    return names


def name_of(matcher: str | CustomMatcher) -> str:
    """How a matcher is named in messages: its name, or a custom matcher's function name."""
    return matcher if isinstance(matcher, str) else getattr(matcher, "__name__", repr(matcher))


def _custom(matcher: CustomMatcher, sent: Request, recorded: Request) -> str | None:
    try:
        verdict = matcher(sent, recorded)
    except AssertionError as exc:
        return (str(exc).splitlines() or ["does not match"])[0]
    return None if verdict is None or verdict else "does not match"


def differences(sent: Request, recorded: Request, match_on: Sequence[str | CustomMatcher]) -> list[str]:
    """What differs between a sent and a recorded request: one line per failing matcher, and one
    per difference of a JSON body (a changed model and a changed prompt are two lines)."""
    out: list[str] = []
    for matcher in match_on:
        diff = (
            MATCHERS[matcher](sent, recorded)
            if isinstance(matcher, str)
            else _custom(matcher, sent, recorded)
        )
        if diff is not None:  # a body differs in several places: one line each
            out.extend(f"{name_of(matcher)}: {line}" for line in diff.splitlines() or [diff])
    return out
