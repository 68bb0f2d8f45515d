"""The secret scanner: credentials found by their own shape, in every field, on decoded forms.

One scanner serves recording (``Player.save``), ``ssemock validate``, ``ssemock redact`` and the
masking of every message (`ssemock.redaction.rules`'s ``mask_text``). It finds:

* provider credentials by shape: OpenAI (``sk-``, ``sk-proj-``, ``sk-svcacct-``, ``sk-admin-``),
  Anthropic (``sk-ant-``), Google API keys (``AIza``) and OAuth tokens (``ya29.``), GitHub
  (``ghp_`` ``gho_`` ``ghu_`` ``ghs_`` ``ghr_`` ``github_pat_``), AWS access key ids (``AKIA``,
  ``ASIA``) and a 40-character secret beside one, Slack (``xox?-``), Stripe (``sk_live_``,
  ``rk_live_``), Hugging Face (``hf_``), Groq (``gsk_``), xAI (``xai-``), JWTs, PEM private keys,
  and ``Bearer`` / ``Basic`` credentials;
* in headers, query parameters and form bodies: a high-entropy value whose name says token,
  secret, key, auth, password, signature, session or cookie; any ``user:password@`` in a URL.

A shape is matched where it starts, whatever comes before it, so a key right after a JSON escape
(``\\n``) or a percent-encoded byte (``%3D``) is found. Where a field holds an escape that hides a
character keys are made of (JSON ``\\u00XX`` or ``\\/``, ``%XX`` at any depth), the text around it
is scanned once more decoded, so a key whose own characters were escaped is found too; offsets
always point into the original.

Speed: every shape starts with a literal, so one pass of a multi-literal search finds every
place worth a look, and a second one every escape worth decoding (Aho-Corasick automata with a
SIMD prefilter when the ``ahocorasick-rs`` package is installed, else ``re`` literal searches:
the same results, slower); each place is checked with its shape's regex. ``bench/secret_scan.py`` measures it against the save.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import math
import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

__all__ = [
    "CREDENTIAL_NAME",
    "scan_json_members",
    "SECRET_NAME",
    "Secret",
    "base64_text",
    "credential_name",
    "entropy",
    "escape_control",
    "looks_random",
    "mask_text",
    "secret_spans",
    "safe_message",
    "scan",
    "scan_body",
    "scan_form",
    "scan_header",
    "scan_named",
    "scan_url",
    "value_shape",
]

REDACTED = "REDACTED"
"""What a redacted value is replaced with."""
#: A header, query parameter or form field with such a name holds a credential.
#: ``tokens`` (a count: ``x-ratelimit-remaining-tokens``, ``anthropic-ratelimit-tokens-reset``) is not ``token``.
SECRET_NAME = re.compile(r"token(?!s)|secret|key|auth|passw|signature|^sig$|session|cookie|credential", re.I)
"""A header, query parameter or form field whose name matches holds a credential when its value
looks generated (``tokens``, a count, is not ``token``)."""


@dataclass(frozen=True)
class Secret:
    """One credential found: what it is, where (offsets into the scanned text), a masked preview."""

    what: str
    """What was found, e.g. ``an Anthropic key (sk-ant-...)``."""
    start: int
    """Where it starts in the scanned text."""
    end: int
    """Where it ends in the scanned text."""
    preview: str
    """The shape's public prefix and ``***``: never a character of the secret."""


@dataclass(frozen=True)
class _Shape:
    what: str
    anchors: tuple[bytes, ...]  # literals a match starts with
    regex: re.Pattern[bytes]
    prefix: int  # how many leading characters are the shape's public prefix (shown in previews)
    check: Callable[[bytes, re.Match[bytes]], bool] | None = None


_TOKEN = rb"[A-Za-z0-9_\-]"
_ESCAPED_BEFORE = re.compile(rb"(?:\\+(?:[a-zA-Z]|u[0-9a-fA-F]{4})|%(?:25)*[0-9A-Fa-f]{2})$")


def _has_digit_and_letter(value: bytes) -> bool:
    return any(48 <= c <= 57 for c in value) and any(65 <= (c | 32) - 32 <= 90 for c in value)


def _generic_sk(data: bytes, m: re.Match[bytes]) -> bool:
    """``sk-`` alone is a weak prefix ("risk-free"): a long random run after it, or a word
    boundary before it in the decoded text (a letter that ends an escape is a boundary)."""
    value = m.group()[3:]
    if any(len(run) >= 20 and _has_digit_and_letter(run) for run in re.split(rb"[-_]", value)):
        return True
    start = m.start()
    if not _has_digit_and_letter(value):
        return False
    if start == 0 or not (chr(data[start - 1]).isalnum() or data[start - 1] == 95):
        return True
    return _ESCAPED_BEFORE.search(data, max(0, start - 12), start) is not None


def _bearer(data: bytes, m: re.Match[bytes]) -> bool:
    token = m.group(1)
    if (
        token.startswith(b"REDACTED") and not token[8:9].isalnum()
    ):  # what redaction left (``REDACTED%3D`` too)
        return False
    return _has_digit_and_letter(token) or len(token) >= 16 or any(65 <= c <= 90 for c in token[1:])


def _basic(data: bytes, m: re.Match[bytes]) -> bool:
    """``Basic`` followed by base64 of ``user:password`` (not the word "Basic authentication")."""
    try:
        return b":" in base64.b64decode(m.group(1), validate=True)
    except (binascii.Error, ValueError):
        return False


def _shape(
    what: str,
    anchors: tuple[bytes, ...],
    pattern: bytes,
    prefix: int,
    check: Callable[[bytes, re.Match[bytes]], bool] | None = None,
) -> _Shape:
    return _Shape(what, anchors, re.compile(pattern), prefix, check)


_SHAPES: tuple[_Shape, ...] = (
    _shape("an Anthropic key (sk-ant-...)", (b"sk-ant-",), rb"sk-ant-" + _TOKEN + rb"{16,}", 7),
    _shape(
        "an OpenAI key (sk-proj-/sk-svcacct-/sk-admin-...)",
        (b"sk-proj-", b"sk-svcacct-", b"sk-admin-"),
        rb"sk-(?:proj|svcacct|admin)-" + _TOKEN + rb"{16,}",
        3,
    ),
    _shape("an OpenAI-style key (sk-...)", (b"sk-",), rb"sk-" + _TOKEN + rb"{12,}", 3, _generic_sk),
    _shape("a Google API key (AIza...)", (b"AIza",), rb"AIza[0-9A-Za-z_\-]{35}(?![0-9A-Za-z_\-])", 4),
    _shape("a Google OAuth token (ya29....)", (b"ya29.",), rb"ya29\.[0-9A-Za-z_\-]{20,}", 5),
    _shape(
        "a GitHub token (gh?_...)",
        (b"ghp_", b"gho_", b"ghu_", b"ghs_", b"ghr_"),
        rb"gh[pousr]_[A-Za-z0-9]{30,}",
        4,
    ),
    _shape("a GitHub token (github_pat_...)", (b"github_pat_",), rb"github_pat_[A-Za-z0-9_]{30,}", 11),
    _shape("an AWS access key id (AKIA/ASIA...)", (b"AKIA", b"ASIA"), rb"A[KS]IA[0-9A-Z]{16}(?![0-9A-Z])", 4),
    _shape(
        "a Slack token (xox?-...)",
        tuple(b"xox%c-" % c for c in b"abposr"),
        rb"xox[abposr]-[0-9A-Za-z]+-[0-9A-Za-z\-]{8,}",
        5,
    ),
    _shape(
        "a Stripe key (sk_live_/rk_live_...)", (b"sk_live_", b"rk_live_"), rb"[sr]k_live_[0-9A-Za-z]{16,}", 8
    ),
    _shape("a Hugging Face token (hf_...)", (b"hf_",), rb"hf_[A-Za-z0-9]{30,}", 3),
    _shape("a Groq key (gsk_...)", (b"gsk_",), rb"gsk_[A-Za-z0-9]{30,}", 4),
    _shape("an xAI key (xai-...)", (b"xai-",), rb"xai-[A-Za-z0-9]{30,}", 4),
    _shape("a JWT (eyJ...)", (b"eyJ",), rb"eyJ[A-Za-z0-9_\-]{5,}\.eyJ[A-Za-z0-9_\-]{5,}\.[A-Za-z0-9_\-]*", 3),
    _shape(
        "a PEM private key",
        (b"-----BEGIN",),
        rb"-----BEGIN[A-Z ]{0,20}PRIVATE KEY-----(?:[\s\S]{0,20000}?-----END[A-Z ]{0,20}PRIVATE KEY-----)?",
        10,
    ),
    _shape(
        "a Bearer token",
        (b"Bearer", b"bearer", b"BEARER"),
        rb"[Bb](?:earer|EARER)(?:\s|\+)+([A-Za-z0-9._~+/\-]{8,}=*)",
        6,
        _bearer,
    ),
    _shape(
        "Basic credentials",
        (b"Basic", b"basic", b"BASIC"),
        rb"[Bb](?:asic|ASIC)(?:\s|\+)+([A-Za-z0-9+/]{4,}={0,2})",
        5,
        _basic,
    ),
)
_ANCHORS: list[bytes] = []
_ANCHOR_SHAPES: list[list[_Shape]] = []
for _s in _SHAPES:
    for _a in _s.anchors:
        if _a in _ANCHORS:
            _ANCHOR_SHAPES[_ANCHORS.index(_a)].append(_s)
        else:
            _ANCHORS.append(_a)
            _ANCHOR_SHAPES.append([_s])
# longer anchors first: at one position the most specific shape wins ("sk-ant-" before "sk-")
_ORDER = sorted(range(len(_ANCHORS)), key=lambda i: -len(_ANCHORS[i]))
_ANCHORS = [_ANCHORS[i] for i in _ORDER]
_ANCHOR_SHAPES = [_ANCHOR_SHAPES[i] for i in _ORDER]
_MAX_ANCHOR = max(map(len, _ANCHORS))
# Escapes that hide a character a credential is made of: JSON \u00XX and \/, percent %XX (and
# %25XX, encoded twice). A body full of other escapes (\n, \u003c, "50%") needs no second look.
_CREDENTIAL_CHARS = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.+/= "  # (Bearer x)
_ESCAPES = sorted(
    {b"\\/", b"%25"}
    | {
        form % code
        for c in _CREDENTIAL_CHARS
        for code in {b"%02x" % c, b"%02X" % c}
        for form in (b"\\u00%s", b"%%%s")
    }
)
_HEX_CREDENTIAL = rb"(?:2[0BDEFbdef]|3[0-9Dd]|[46][1-9A-Fa-f]|[57][0-9Aa]|5[Ff])"  # space+-./0-9=A-Z_a-z
_ANY_ESCAPE = re.compile(rb"[%\\](?:(?:25)*" + _HEX_CREDENTIAL + rb"|\\*(?:u00" + _HEX_CREDENTIAL + rb"|/))")
Finder = Callable[[bytes], list[tuple[int, int]]]
"""A search over a field's bytes: (anchor index, start) of every shape anchor found."""


def _finders(accelerated: bool = True) -> tuple[Finder, Callable[[bytes], list[int]]]:
    """Two searches over a whole field: (anchor index, start) of every shape anchor, leftmost
    first and not overlapping; and the offsets of escapes worth decoding.

    With ahocorasick-rs each is one pass of an Aho-Corasick automaton with a SIMD prefilter;
    without it (or ``accelerated=False``, for the benchmark) one ``re`` literal search per anchor
    (each finds its literal fast, together they are slower) and one ``re`` search for any escape."""
    try:
        if not accelerated:
            raise ImportError
        import ahocorasick_rs
    except ImportError:
        index = {a: i for i, a in enumerate(_ANCHORS)}
        firsts = sorted({a[:1] for a in _ANCHORS})  # one search per first byte: re skips to it fast
        literals = [
            re.compile(
                re.escape(f) + b"(?:" + b"|".join(re.escape(a[1:]) for a in _ANCHORS if a[:1] == f) + b")"
            )
            for f in firsts
        ]

        def anchors(data: bytes) -> list[tuple[int, int]]:
            hits = sorted((m.start(), index[m.group()]) for r in literals for m in r.finditer(data))
            out, end = [], -1
            for start, i in hits:  # i orders longer anchors first at one start
                if start >= end:
                    out.append((i, start))
                    end = start + len(_ANCHORS[i])
            return out

        def escapes(data: bytes) -> list[int]:
            if b"%" not in data and b"\\" not in data:
                return []
            return [m.start() for m in _ANY_ESCAPE.finditer(data)]

        return anchors, escapes
    kind, dfa = ahocorasick_rs.MATCHKIND_LEFTMOST_FIRST, ahocorasick_rs.Implementation.DFA
    shapes = ahocorasick_rs.BytesAhoCorasick(_ANCHORS, matchkind=kind, implementation=dfa)
    escaped = ahocorasick_rs.BytesAhoCorasick(_ESCAPES, matchkind=kind, implementation=dfa)
    return (
        (lambda data: [(i, s) for i, s, _ in shapes.find_matches_as_indexes(data)]),
        (lambda data: [s for _, s, _ in escaped.find_matches_as_indexes(data)]),
    )


_find_anchors, _find_escapes = _finders()


def _preview(data: bytes, start: int, prefix: int) -> str:
    return data[start : start + prefix].decode("ascii", "replace") + "***"


def _verify(data: bytes, anchor: int, start: int) -> Secret | None:
    for shape in _ANCHOR_SHAPES[anchor]:
        m = shape.regex.match(data, start)
        if m is not None and (shape.check is None or shape.check(data, m)):
            if m.lastindex:  # Bearer/Basic: the credential is the value, the word stays readable
                return Secret(shape.what, m.start(1), m.end(1), "***")
            return Secret(shape.what, m.start(), m.end(), _preview(data, start, shape.prefix))
    return None


_AWS_SECRET = re.compile(rb"(?<![A-Za-z0-9/+])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")


def _aws_secret_near(data: bytes, key: Secret) -> Secret | None:
    """The 40-character secret access key written beside an access key id."""
    lo, hi = max(0, key.start - 300), min(len(data), key.end + 300)
    for m in _AWS_SECRET.finditer(data, lo, hi):
        if _has_digit_and_letter(m.group()) and any(97 <= c <= 122 for c in m.group()):
            return Secret("an AWS secret access key", m.start(), m.end(), "***")
    return None


def _scan_raw(data: bytes) -> list[Secret]:
    """Shapes in ``data`` as it is."""
    found: list[Secret] = []
    hits = _find_anchors(data)
    k = 0
    while k < len(hits):
        anchor, start = hits[k]
        k += 1
        if found and start < found[-1].end:
            continue
        secret = _verify(data, anchor, start)
        if secret is None:
            # an anchor that is no secret may hide an overlapping one ("sk-sk-ant-..."): look again
            size = len(_ANCHORS[anchor])
            window = data[start + 1 : start + size + _MAX_ANCHOR]
            hits[k:k] = [(a, start + 1 + s) for a, s in _find_anchors(window) if s + 1 < size]
            continue
        found.append(secret)
        if secret.what.startswith("an AWS access key"):
            extra = _aws_secret_near(data, secret)
            if extra is not None:
                found.append(extra)
    return found


_UNESCAPE = re.compile(rb"\\+u00([2-7][0-9A-Fa-f])|\\+(/)|%(?:25)*([0-9A-Fa-f]{2})")


def _decode(data: bytes) -> tuple[bytes, list[tuple[int, int]]]:
    """``data`` with JSON ``\\u00XX`` (printable ASCII) and ``\\/`` escapes and percent-encoding
    undone, at any depth; and (decoded offset, original offset) after each escape, in order."""
    pieces: list[bytes] = []
    marks: list[tuple[int, int]] = []
    pos = size = 0
    for m in _UNESCAPE.finditer(data):
        hexa = m.group(1) or m.group(3)
        char = bytes([int(hexa, 16)]) if hexa else b"/"
        pieces += [data[pos : m.start()], char]
        size += m.start() - pos + 1
        pos = m.end()
        marks.append((size, pos))
    pieces.append(data[pos:])
    return b"".join(pieces), marks


def _original(offset: int, marks: list[tuple[int, int]]) -> int:
    """Where a decoded offset lies in the original: between escapes both move in step."""
    k = bisect.bisect_right(marks, (offset, 1 << 62)) - 1
    return offset if k < 0 else offset + marks[k][1] - marks[k][0]


_WINDOW = 1024  # decoded around each escape, on each side: longer than any key but a PEM block
_WHOLE = 1 << 16  # fields up to this size are decoded whole


def _windows(escapes: list[int], size: int) -> list[tuple[int, int]]:
    if size <= _WHOLE:
        return [(0, size)]
    out: list[tuple[int, int]] = []
    for e in escapes:
        a, b = max(0, e - _WINDOW), min(size, e + _WINDOW)
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], b)
        else:
            out.append((a, b))
    return out


def scan(data: str | bytes) -> list[Secret]:
    """Every credential shape in ``data``, found as it is and with escapes undone.

    Offsets are into ``data`` (characters for a str). Sorted by start; none overlap."""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    found = _scan_raw(raw)
    escapes = _find_escapes(raw)
    if escapes:
        seen = [(s.start, s.end) for s in found]
        for lo, hi in _windows(escapes, len(raw)):
            decoded, marks = _decode(raw[lo:hi])
            for s in _scan_raw(decoded) if marks else ():
                a, b = lo + _original(s.start, marks), lo + _original(s.end, marks)
                if not any(a < e and st < b for st, e in seen):
                    found.append(Secret(s.what, a, b, s.preview))
                    seen.append((a, b))
        found.sort(key=lambda s: s.start)
    if isinstance(data, str) and found and not data.isascii():
        found = [Secret(s.what, _chars(raw, s.start), _chars(raw, s.end), s.preview) for s in found]
    return found


def _chars(raw: bytes, offset: int) -> int:
    return len(raw[:offset].decode("utf-8", "ignore"))


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


FORM = re.compile(rb"^[\w.%~-]+=[^&\s]*(?:&[\w.%~-]+=[^&\s]*)*$")
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


def _word_hits(data: bytes) -> list[tuple[int, int]]:
    lower, hits = data.lower(), []
    for word in _CREDENTIAL_WORDS:
        at = lower.find(word)
        while at >= 0:
            hits.append((at, at + len(word)))
            at = lower.find(word, at + 1)
    return sorted(hits)


def scan_json_members(data: bytes) -> list[Secret]:
    """String values of JSON members named like credentials (``"password": "..."``) whatever they
    look like, where they stand in ``data`` (any JSON text: a body, an event); a number under such
    a name is found by `scan_cassette`'s JSON walk."""
    out: list[Secret] = []
    end = 0
    for hit_start, hit_end in _word_hits(data):
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
        if credential_name(name.decode("ascii")) and credential_value(
            member.group(1).decode("utf-8", "replace")
        ):
            out.append(
                Secret(
                    f"a credential-named field {name.decode('ascii')!r}",
                    member.start(1),
                    member.end(1),
                    "***",
                )
            )
    return out


def scan_body(body: bytes) -> list[Secret]:
    """`scan`, plus credentials named as such in a JSON text (``"password": ...``) or a form body
    (``a=1&client_secret=...``)."""
    found = scan(body)
    named = scan_json_members(body) if b'"' in body else []
    if len(body) <= _FORM_MAX and FORM.match(body):
        named += scan_form(body.decode("latin-1"))
    return _merged(found + named) if named else found


def scan_url(url: str) -> list[Secret]:
    """`scan` plus a password in the userinfo and credentials named in the query."""
    found = scan(url)
    parts = urlsplit(url)
    if parts.password and parts.password != REDACTED:
        start = url.find("@")
        colon = url.rfind(":", 0, start)
        found.append(Secret("a password in the URL", colon + 1, start, "***"))
    found += _url_parameters(url)  # the query and the fragment (``#access_token=...``)
    return _merged(found)


_URL_IN_TEXT = re.compile(
    r"""[a-z][a-z0-9+.\-]*://[^\s"'<>]*|(?<![^\s<"'=;,])/[^\s"'<>]*[?#][^\s"'<>]*""", re.I
)


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
        found += _url_parameters(url.group(), url.start())
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
    return bool(text) and REDACTED not in text and text.strip("*xX.") != ""


# -- shapes of values, for messages -------------------------------------------------------------


def value_shape(value: str | bytes) -> str:
    """What a value looks like without showing it: its length and character classes, e.g.
    ``20 chars: digits - : T Z`` for an RFC 3339 date, ``51 chars: digits a-z A-Z - _`` for a key.
    Letters are listed one by one only when a value has three or fewer distinct ones of a case."""
    text = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
    classes: list[str] = []
    if any(c.isdigit() and c.isascii() for c in text):
        classes.append("digits")
    punct = [c for c in dict.fromkeys(text) if c.isascii() and not c.isalnum()]
    lower = sorted({c for c in text if c.isascii() and c.islower()})
    upper = sorted({c for c in text if c.isascii() and c.isupper()})
    classes += [
        {" ": "space", "\n": "newline", "\t": "tab"}.get(c, c if c.isprintable() else f"\\x{ord(c):02x}")
        for c in punct
    ]
    classes += ["a-z"] if len(lower) > 3 else lower
    classes += ["A-Z"] if len(upper) > 3 else upper
    if not text.isascii():
        classes.append("non-ASCII")
    return f"{len(text)} chars" + (": " + " ".join(classes) if classes else "")


# -- masking messages ---------------------------------------------------------------------------

_NAME_WORD = re.compile(r"token|secret|key|auth|passw|signature|session|cookie|credential", re.I)
_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
_NAMED_VALUE = re.compile(r"""['"]?\s*(?:[:=]|',)\s*['"]?([^\s'"&,;)}\]]+)""")
# after a credential name (``password``, ``"api_key"``, ``$.client_secret``, ``('token'``): the
# separator, then a quoted value to its closing quote, or an unquoted one to the end of the line
# (spaces, ``&``, ``,`` and ``;`` included: a password may hold them; masking more is safe)
_CREDENTIAL_VALUE = re.compile(
    r"""\\?['"]?\s*(?:[:=]|',|",)\s*(?:(?P<q>\\?['"])(?P<quoted>(?:\\.|(?!(?P=q)).)*)(?P=q)"""
    r"""|(?P<bare>[^\s'"<*][^\n\r]*))"""
)  # <...>, ***: a placeholder or a shape
_CREDENTIAL_WORD = re.compile(  # a whole name with a credential word in it; credential_name decides
    r"(?i)[A-Za-z0-9_.\-]*(?:passw|passphrase|pwd|secret|api[-_]?key|apikey|token|authorization|private[-_]?key)"
    r"[A-Za-z0-9_.\-]*"
)


def _named_values(text: str) -> Iterator[tuple[int, int, str, bool]]:
    """(start, end, value, named-as-a-credential) of values after a credential-like name:
    ``client_secret=...``, ``"x-auth-token": "..."``, ``('token', '...')``, ``$.password: '...'``."""
    for m in _CREDENTIAL_WORD.finditer(text):
        if not credential_name(m.group()):
            continue
        value = _CREDENTIAL_VALUE.match(text, m.end())
        if value is not None:
            group = "quoted" if value.group("quoted") is not None else "bare"
            if value.group(group):
                yield value.start(group), value.end(group), value.group(group).rstrip(), True
    for m in _NAME_WORD.finditer(text):
        end = m.end()
        while end < len(text) and text[end] in _NAME_CHARS:
            end += 1
        value = _NAMED_VALUE.match(text, end)
        if value is not None:
            yield value.start(1), value.end(1), value.group(1), False


B64_RUN = re.compile(r"[A-Za-z0-9+/_\-]{16,}={0,2}")
_B64_RUN_BYTES = re.compile(rb"[A-Za-z0-9+/_\-]{16,}={0,2}")


def base64_text(run: str | bytes) -> str | None:
    """``run`` decoded from base64 or base64url when that gives text (UTF-8, printable): the
    form Bedrock wraps its event payloads in, and any JSON field a key may hide in; else None."""
    raw = run.encode("ascii", "replace") if isinstance(run, str) else run
    raw = raw.rstrip(b"=")
    if len(raw) % 4 == 1:
        return None
    padded = raw + b"=" * (-len(raw) % 4)
    try:
        decoded = (
            base64.urlsafe_b64decode(padded)
            if (b"-" in raw or b"_" in raw)
            else base64.b64decode(padded, validate=True)
        )
        text = decoded.decode("utf-8")
    except (binascii.Error, ValueError):
        return None
    printable = sum(c.isprintable() or c in "\n\r\t" for c in text)
    return text if len(text) >= 8 and printable >= 0.95 * len(text) else None


def secret_spans(text: str) -> list[tuple[int, int, str]]:
    """``(start, end, preview)`` of every secret the scanner finds in ``text``, every value named
    as a credential (``password=...``, ``"api_key": "..."``: whatever it looks like), every
    credential-like value under a credential-like name (``x-auth-token: 9f8e...``) and every base64
    run that decodes to a secret: sorted, none overlapping. What `mask_text` masks, and what a
    refused recording has masked (`ssemock.commands.redact`)."""
    found = scan(text)
    spans = [(s.start, s.end, s.preview) for s in found]

    def add(a: int, b: int) -> None:
        if a < b and not any(a < e and s < b for s, e, _ in spans):
            spans.append((a, b, "***"))

    for a, b, value, named in _named_values(text):
        if named and credential_value(value.strip("'\"")) or not named and looks_random(value):
            add(a, b)
    for m in B64_RUN.finditer(text) if len(text) <= _WHOLE else ():
        decoded = base64_text(m.group())
        if decoded is not None and (scan(decoded) or any(named for *_, named in _named_values(decoded))):
            add(m.start(), m.end())
    out: list[tuple[int, int, str]] = []
    for span in sorted(spans):
        if not out or span[0] >= out[-1][1]:
            out.append(span)
    return out


def mask_text(text: str) -> str:
    """``text`` with every span `secret_spans` finds replaced by a masked preview such as
    ``sk-ant-***`` or ``***``."""
    spans = secret_spans(text)
    if not spans:
        return text
    out, pos = [], 0
    for a, b, preview in spans:
        out += [text[pos:a], preview]
        pos = b
    out.append(text[pos:])
    return "".join(out)


_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def escape_control(text: str) -> str:
    """Control characters (ANSI/OSC escapes, C1 controls, bidi overrides) as visible ``\\u001b``
    escapes, so text from a cassette can never drive the terminal; newline and tab are kept."""
    return _CONTROL.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def safe_message(text: str) -> str:
    """A message fit for a terminal or a log: `mask_text`, then `escape_control`."""
    return escape_control(mask_text(text))
