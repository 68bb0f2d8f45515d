"""Credentials in the fields of a request or a response: a value under a name that says it is a
credential (a header, a query or form parameter, a JSON member), a password in a URL, a
``Bearer`` / ``Basic`` / ``Token`` header; and the names that say so."""

from __future__ import annotations

import functools
import math
import re
from collections import Counter
from collections.abc import Callable, Iterator
from urllib.parse import unquote, urlsplit

from ..framing.accelerator import words as _c_words
from .credential_shapes import REDACTED, Hits, Secret, _has_digit_and_letter, scan

__all__ = [
    "BodyHits",
    "CREDENTIAL_NAME",
    "FORM",
    "SECRET_NAME",
    "URL",
    "credential_member",
    "credential_member_name",
    "credential_name",
    "credential_value",
    "entropy",
    "looks_random",
    "query_spans",
    "scan_body",
    "scan_form",
    "scan_header",
    "scan_json_members",
    "scan_named",
    "scan_url",
    "word_hits",
]

#: A header, query parameter or form field with such a name holds a credential.
#: ``tokens`` (a count: ``x-ratelimit-remaining-tokens``, ``anthropic-ratelimit-tokens-reset``) is not ``token``.
#: ``azureml-model-session`` (a routing id: ``d060-20240328183338``) is not a session. Nor is
#: anything a rate-limit, deployment or model-bucket header names (``x-ratelimit-key:
#: gpt-5.2_2025-12-11``, LiteLLM's Azure bucket): a key shape in one is still found by its shape.
SECRET_NAME = re.compile(
    r"^(?!.*(?:rate-?limit|rate_limit|deployment|model))"
    r".*?(?:token(?!s)|secret|key|auth|passw|signature|^sig$|session|cookie|credential)",
    re.I,
)
"""A header, query parameter or form field whose name matches holds a credential when its value
looks generated (``tokens``, a count, is not ``token``)."""


def entropy(value: str) -> float:
    """Shannon entropy in bits per character."""
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in Counter(value).values()) if n else 0.0


# What real APIs send under names that say token/key/session and is never a credential: dates
# (RFC 3339 / ISO 8601, compact ``20261126T160437Z``), epoch and other numbers, durations (``1m30s``,
# ``59m59.992s``, ``412ms``).
_NOT_CREDENTIAL = re.compile(
    r"\d{4}-?\d{2}-?\d{2}(?:[T ]\d{2}:?\d{2}(?::?\d{2}(?:[.,]\d{1,9})?)?)?(?:Z|[+-]\d{2}(?::?\d{2})?)?"
    r"|[+-]?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?"
    r"|(?:\d+(?:\.\d+)?(?:ns|us|µs|ms|h|m|s|d))+",
    re.I,
)


def looks_random(value: str) -> bool:
    """A value that reads like a generated credential rather than a word, number, date or duration."""
    value = value.strip()
    if len(value) < 10 or value == REDACTED or " " in value or _NOT_CREDENTIAL.fullmatch(value):
        return False
    return entropy(value) >= 3.0 and (
        _has_digit_and_letter(value.encode("utf-8", "replace")) or len(value) >= 20
    )


def scan_named(name: str, value: str) -> Secret | None:
    """A header, query parameter or form field whose name says it holds a credential and whose
    value looks generated (``x-auth-token: 9f8e...``); offsets are into ``value``."""
    if not SECRET_NAME.search(name) or not looks_random(unquote(value)):
        return None
    return Secret(f"a credential-like value named {name!r}", 0, len(value), "***")


def query_spans(query: str) -> Iterator[tuple[str, int, int]]:
    """(decoded name, start, end of the raw value) of each ``name=value`` in a query string."""
    pos = 0
    for part in query.split("&"):
        name, eq, _ = part.partition("=")
        if eq:
            yield unquote(name.replace("+", " ")), pos + len(name) + 1, pos + len(part)
        pos += len(part) + 1


def scan_form(text: str) -> list[Secret]:
    """Credentials named as such in ``a=1&client_secret=...`` (a query string or a form body):
    any value under a credential name (`credential_name`), a generated-looking one under a
    credential-like name (`scan_named`)."""
    out = []
    for name, a, b in query_spans(text):
        value = text[a:b]
        if credential_name(name) and credential_value(unquote(value.replace("+", " "))):
            out.append(Secret(f"a credential-named parameter {name!r}", a, b, "***"))
            continue
        named = scan_named(name, value)
        if named is not None:
            out.append(Secret(named.what, a, b, named.preview))
    return out


# a form's values hold no ``( ) , "`` (encoders percent-encode them): a header such as
# ``Permissions-Policy: publickey-credentials-create=(self),...`` is no form
FORM = re.compile(rb'^[\w.%~-]+=[^&\s(),"]*(?:&[\w.%~-]+=[^&\s(),"]*)*$')
_FORM_MAX = 1 << 20
# a credential word, then the JSON member it is part of: the words are rare, so they are found
# first (bytes.find on the lower-cased data: C speed) and each is widened to its member
_CREDENTIAL_WORDS = (
    b"passw",
    b"passphrase",
    b"pwd",
    b"secret",
    b"apikey",
    b"api_key",
    b"token",
    b"authorization",
    b"private_key",
    b"privatekey",
)
_MEMBER_AT = re.compile(rb'"\s*:\s*"((?:[^"\\]++|\\.)*+)"')


def _words() -> Callable[[bytes], list[tuple[int, int]]]:
    """(start, end) of every credential word in lower-cased data, overlapping ones too, sorted:
    one pass of ahocorasick-rs when it is installed, else one ``bytes.find`` loop per word."""
    try:
        import ahocorasick_rs
    except ImportError:

        def finds(lower: bytes) -> list[tuple[int, int]]:
            hits = []
            for word in _CREDENTIAL_WORDS:
                at = lower.find(word)
                while at >= 0:
                    hits.append((at, at + len(word)))
                    at = lower.find(word, at + 1)
            return sorted(hits)

        return finds
    words = ahocorasick_rs.BytesAhoCorasick(_CREDENTIAL_WORDS, matchkind=ahocorasick_rs.MATCHKIND_STANDARD)
    return lambda lower: sorted((s, e) for _, s, e in words.find_matches_as_indexes(lower, overlapping=True))


_find_words = _words()


def _py_word_hits(data: bytes) -> list[tuple[int, int]]:
    """Where a credential word stands in ``data`` (any case): the words found in the lower-cased
    copy (the reference of the accelerator's one pass)."""
    return _find_words(data.lower())


def _c_word_hits(data: bytes) -> list[tuple[int, int]]:
    """`_py_word_hits` in one C pass, without the lower-cased copy (about 4x faster)."""
    assert _c_words is not None
    return _c_words(data, _CREDENTIAL_WORDS)


_word_hits = _c_word_hits if _c_words is not None else _py_word_hits


def word_hits(data: bytes, at: int = 0) -> list[tuple[int, int]]:
    """Where a credential word stands in ``data`` (any case), offsets moved by ``at``: pieces cut
    after a newline give, moved and put together, what the whole text gives."""
    hits = _word_hits(data)
    return [(s + at, e + at) for s, e in hits] if at else hits


BodyHits = tuple[Hits, list[tuple[int, int]]]
"""What `scan_body` searches a body for: `find_hits`'s, and `word_hits`'."""


def scan_json_members(data: bytes, words: list[tuple[int, int]] | None = None) -> list[Secret]:
    """String values of JSON members named like credentials (``"password": "..."``) whatever they
    look like, where they stand in ``data`` (any JSON text: a body, an event); a number under such
    a name is found by `scan_cassette`'s JSON walk. ``words``: `word_hits` of ``data``, when known."""
    out: list[Secret] = []
    end = 0
    for hit_start, hit_end in word_hits(data) if words is None else words:
        if hit_start < end:
            continue
        start = data.rfind(b'"', max(0, hit_start - 41), hit_start)
        close = data.find(b'"', hit_end, hit_end + 41)
        if start < 0 or close < 0:
            continue
        name = data[start + 1 : close]
        member = _MEMBER_AT.match(data, close)
        if member is None or not re.fullmatch(rb"[A-Za-z0-9_.\-]+", name):
            continue
        end = member.end()
        if credential_member(name.decode("ascii"), member.group(1).decode("utf-8", "replace")):
            out.append(
                Secret(
                    f"a credential-named field {name.decode('ascii')!r}",
                    member.start(1),
                    member.end(1),
                    "***",
                )
            )
    return out


def scan_body(body: bytes, hits: BodyHits | None = None) -> list[Secret]:
    """`scan`, plus credentials named as such in a JSON text (``"password": ...``) or a form body
    (``a=1&client_secret=...``). ``hits``: what the searches find in ``body``, when known (a
    recording searches each piece as it arrives: `ssemock.scan.incremental`)."""
    found = scan(body, None if hits is None else hits[0])
    named = (scan_json_members(body, None if hits is None else hits[1])) if b'"' in body else []
    if len(body) <= _FORM_MAX and FORM.match(body):
        named += scan_form(body.decode("latin-1"))
    return _merged(found + named) if named else found


def url_parts(url: str) -> tuple[str, str, str | None]:
    """``url``'s query, fragment and userinfo password (None without one), as urlsplit gives them;
    read by hand where it refuses the URL (a bracket in its host: ``http://[oops`` in a model's text
    is no URL to send, and the scan of that text must not fail on it)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        head, _, fragment = url.partition("#")
        netloc = re.split(r"[/?#]", url.partition("://")[2], maxsplit=1)[0]
        userinfo, at, _ = netloc.rpartition("@")
        return (
            head.partition("?")[2],
            fragment,
            userinfo.partition(":")[2] if at and ":" in userinfo else None,
        )
    return parts.query, parts.fragment, parts.password


def scan_url(url: str) -> list[Secret]:
    """`scan` plus a password in the userinfo and credentials named in the query."""
    found = scan(url)
    password = url_parts(url)[2]
    if password and password != REDACTED:
        start = url.find("@")
        colon = url.rfind(":", 0, start)
        found.append(Secret("a password in the URL", colon + 1, start, "***"))
    found += _url_parameters(url)  # the query and the fragment (``#access_token=...``)
    return _merged(found)


# a URL's scheme is tried only where a run of the characters it is made of starts, from the run's
# first letter (`_RUN_START` passes over the digits and signs before it; the URL is the group
# ``url``): tried at each position of a run, each start read the run to its end, quadratic in a
# long run of letters, or of letters and digits; case-blind
_RUN_START = r"(?<![a-z0-9+.\-])[0-9+.\-]*+"
_SCHEME = r"[a-z][a-z0-9+.\-]*+://"
_URL_IN_TEXT = re.compile(  # in a header's value: location, link, content-location, refresh
    rf"""{_RUN_START}(?P<url>{_SCHEME}[^\s"'<>]*|(?<![^\s<"'=;,])/[^\s"'<>]*[?#][^\s"'<>]*)""", re.I
)
URL = re.compile(rf"""{_RUN_START}(?P<url>(?:{_SCHEME}|^[/?#])[^\s"'<>]*)""", re.I)
"""A URL in text, or text that is one (its path, query or fragment first), as the group ``url``
(`ssemock.scan.walk`)."""


def _url_parameters(url: str, at: int = 0) -> list[Secret]:
    """Credentials named in a URL's query and fragment (``#access_token=...``), offsets from ``at``."""
    found = []
    for mark in ("?", "#"):
        start = url.find(mark)
        if start < 0:
            continue
        end = url.find("#", start + 1) if mark == "?" else -1
        part = url[start + 1 : end if end >= 0 else len(url)]
        found += [
            Secret(s.what, at + start + 1 + s.start, at + start + 1 + s.end, s.preview)
            for s in scan_form(part)
        ]
    return found


def scan_header(name: str, value: str) -> list[Secret]:
    """`scan`, plus a credential-named value, plus any ``Bearer``/``Basic``/``Token`` value."""
    found = scan(value)
    named = scan_named(name, value)
    if named is not None:
        found.append(named)
    for url in _URL_IN_TEXT.finditer(value):  # location, link, content-location, refresh: a URL's parameters
        found += _url_parameters(url.group("url"), url.start("url"))
    m = re.match(r"(?i)(bearer|basic|token)\s+(\S+)", value)
    if m and m.group(2) != REDACTED:
        found.append(
            Secret(f"a {m.group(1).capitalize()} credential", m.start(2), len(value), f"{m.group(1)} ***")
        )
    if (
        not found and credential_name(name) and credential_value(value)
    ):  # what other rules say is more telling
        found.append(Secret(f"a credential-named header {name!r}", 0, len(value), "***"))
    return _merged(found)


def _merged(found: list[Secret]) -> list[Secret]:
    """Sorted, overlapping finds joined (the first one's name and preview kept)."""
    out: list[Secret] = []
    for s in sorted(found, key=lambda s: (s.start, -s.end)):
        if out and s.start < out[-1].end:
            last = out[-1]
            out[-1] = Secret(last.what, last.start, max(last.end, s.end), last.preview)
        else:
            out.append(s)
    return out


# -- credential names ---------------------------------------------------------------------------

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
#: Names that say the value IS a credential, whatever it looks like (words of the name, snake-cased):
#: ``password``, ``x-api-key``, ``clientSecret``, ``AWS_SECRET_ACCESS_KEY``, ``access_token``.
#: Counts and settings are not: ``max_tokens``, ``input_tokens``, ``*-tokens-reset``, ``next_page_token``.
CREDENTIAL_NAME = re.compile(
    r"(?:^|_)(?:password|passwd|passphrase|secret|client_secret|api_key|apikey|access_token|refresh_token|id_token"
    r"|auth_token|bearer_token|private_key|secret_key|secret_access_key|session_token|security_token)$"
    r"|^(?:token|pwd|authorization|proxy_authorization)$"
)
"""Names (in words, lower case, ``_`` between them) that hold a credential whatever their value."""


#: the same names run together, as a header name stored in lower case has them (``accesstoken``)
_CREDENTIAL_JOINED = re.compile(
    r"(?:password|passwd|passphrase|clientsecret|apikey|accesstoken|refreshtoken|idtoken|authtoken|bearertoken"
    r"|privatekey|secretkey|secretaccesskey|sessiontoken|securitytoken)$|^(?:proxyauthorization)$"
)


@functools.lru_cache(maxsize=16384)  # a stream repeats its few member names in every event
def credential_name(name: str) -> bool:
    """Whether a field, header, parameter or JSON key named ``name`` holds a credential whatever
    its value (see `CREDENTIAL_NAME`; also with its words run together, as HTTP header names are
    stored in lower case: ``accessToken`` is kept as ``accesstoken``)."""
    words = re.sub(r"[^a-z0-9]+", "_", _CAMEL.sub("_", name).lower()).strip("_")
    return (
        CREDENTIAL_NAME.search(words) is not None
        or _CREDENTIAL_JOINED.search(words.replace("_", "")) is not None
    )


def credential_value(value: object) -> bool:
    """A value worth refusing under a credential name: not empty, not a placeholder (``REDACTED``,
    ``***``), not null or a boolean."""
    if isinstance(value, bool) or value is None:
        return False
    if isinstance(value, (int, float)):
        return True
    if not isinstance(value, str):
        return False
    text = value.strip()
    return bool(text) and PLACEHOLDER.fullmatch(text) is None


#: A value that is wholly a placeholder (never a credential): masks and fillers (``***``,
#: ``XXXX``, ``sk-***``, ``sk-...abcd``), template slots (``<API_KEY>``, ``{{key}}``, ``${KEY}``),
#: what recorders write (``REDACTED``, ``FILTERED``, ``[removed]``, ``SCRUBBED_SESSION_TOKEN``,
#: ``API_KEY_REDACTED``), and words for a fake
#: (``test_api_key``, ``dummy``, ``your-api-key``). Only the WHOLE value counts: a key with
#: ``test`` inside it (``sk-test-`` and a key's length) is still a key.
PLACEHOLDER = re.compile(
    r"""(?:(?i:bearer|basic|token)\s+)?(?:
    [*xX.\-_\#\s]+
    | [A-Za-z0-9_-]{0,12}(?:\*{3,}|\.{3})[A-Za-z0-9_-]{0,4}
    | <[^<>]{1,64}> | \{\{[^{}]{1,64}\}\} | \$\{[^{}]{1,64}\} | \$[A-Z_][A-Z0-9_]*
    | \[?(?i:redacted|filtered|removed|masked|hidden|omitted|scrubbed|sanitized|censored|none|null|nil|undefined)\]?
    | (?i:redacted|filtered|removed|masked|hidden|omitted|scrubbed|sanitized|censored)(?:[-_.][A-Za-z]+)+
    | (?:[A-Za-z]+[-_.])+(?i:redacted|filtered|removed|masked|hidden|omitted|scrubbed|sanitized|censored)
    | (?i:(?:my|your|fake|dummy|test|testing|example|sample|mock|placeholder|changeme|invalid|bogus)[-_.\s]?)+
      (?i:(?:api|access|secret|private|auth|bearer|session|refresh|client|key|token|password|passwd|pass|pwd
            |credentials?|value|id)[-_.\s]?)*
    | [A-Z][A-Z_-]*XXX+
    )""",
    re.X,
)
"""A whole value that is a placeholder, never a credential."""

_VALUE_DECIDES = frozenset({"token"})
"""JSON member names that hold a credential only when the value looks generated: ``token`` is also
the text token of a logprobs entry (``{"token": "The", "logprob": -0.1}``)."""


@functools.lru_cache(maxsize=16384)
def credential_member_name(name: str) -> bool:
    """Whether a JSON member named ``name`` may hold a credential (`credential_member` is False for
    any value when this is False): a stream's events repeat a few names, decided once each."""
    return name.lower() in _VALUE_DECIDES or credential_name(name)


def credential_member(name: str, value: object) -> bool:
    """Whether a JSON member holds a credential: a credential name and a value that is no
    placeholder; for ``token`` alone, a generated-looking string. The name is decided once
    (`credential_member_name`, cached): most members are not named like a credential."""
    if not credential_member_name(name):
        return False
    if name.lower() in _VALUE_DECIDES:
        return isinstance(value, str) and looks_random(value)
    return credential_value(value)
