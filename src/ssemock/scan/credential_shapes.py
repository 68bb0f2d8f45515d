"""Credentials found by their own shape, in bytes or text, as they are and with escapes undone:
OpenAI (``sk-``, ``sk-proj-``, ``sk-svcacct-``, ``sk-admin-``), Anthropic (``sk-ant-``), Google
API keys (``AIza``) and OAuth tokens (``ya29.``), GitHub (``ghp_`` ``gho_`` ``ghu_`` ``ghs_``
``ghr_`` ``github_pat_``), AWS access key ids (``AKIA``, ``ASIA``) and a 40-character secret
beside one, Slack (``xox?-``), Stripe (``sk_live_``, ``rk_live_``), Hugging Face (``hf_``), Groq
(``gsk_``), xAI (``xai-``), JWTs, PEM private keys, and ``Bearer`` / ``Basic`` credentials; and
base64 runs that decode to text a secret may hide in.

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
import re
from collections.abc import Callable
from dataclasses import dataclass

from ..framing.accelerator import b64_decode as _c_b64_decode
from ..framing.accelerator import b64_findall as _c_b64_findall
from ..framing.accelerator import b64_run as _c_b64_run
from ..framing.accelerator import holds as _c_holds
from .body_forms import inflated

__all__ = [
    "B64_RUN",
    "REDACTED",
    "Finder",
    "Hits",
    "Secret",
    "b64_findall",
    "base64_bytes",
    "base64_joined",
    "base64_layers",
    "base64_text",
    "bytes_text",
    "find_hits",
    "has_b64_run",
    "scan",
    "scan_binary",
]

REDACTED = "REDACTED"
"""What a redacted value is replaced with."""


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


_MAX_SK = 256  # the longest OpenAI key (sk-proj-, sk-svcacct-) is about 170 characters


_OPAQUE = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.")  # (JWT, ``v1.``)


def _inside_token(data: bytes, m: re.Match[bytes]) -> bool:
    """Whether a match starts inside a JSON string that is one opaque token (base64url runs and
    dots), past a run's start (``"v1.A...sk-..."``: MCP's sealed ``requestState``): a stretch of
    random bytes, not a key, which starts the string or follows a separator. Unsure (the token
    reaches the edge of what is read): no."""
    start = m.start()
    left = start
    while left > 0 and data[left - 1] in _OPAQUE and start - left <= _MAX_SK:
        left -= 1
    right = m.end()
    while right < len(data) and data[right] in _OPAQUE and right - start <= _MAX_SK:
        right += 1
    return left < start and data[left - 1 : left] == b'"' and data[right : right + 1] == b'"'


def _in_token_ok(data: bytes, m: re.Match[bytes]) -> bool:
    """A short prefix (``hf_``, ``ghp_``) turns up in random base64url (``hf_`` and 30 letters
    or digits: once in about 700 KB): not a key where it only stretches an opaque token
    (`_inside_token`)."""
    return not _inside_token(data, m)


def _generic_sk(data: bytes, m: re.Match[bytes]) -> bool:
    """``sk-`` alone is a weak prefix ("risk-free"): a long random run after it, or a word
    boundary before it in the decoded text (a letter that ends an escape is a boundary). A run
    far longer than any key that starts inside a longer one is a stretch of a base64url blob
    (a reasoning item's ``encrypted_content``), not a key; so is one inside an opaque token."""
    value = m.group()[3:]
    before = data[m.start() - 1 : m.start()]
    if _inside_token(data, m) or (
        len(m.group()) > _MAX_SK and before and (before.isalnum() or before in b"-_")
    ):
        return False
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
    # an OpenAI Realtime ephemeral client secret (a beta session.created carried one; issue 34)
    _shape("an OpenAI ephemeral key (ek_...)", (b"ek_",), rb"ek_" + _TOKEN + rb"{20,}", 3, _generic_sk),
    _shape("a Google API key (AIza...)", (b"AIza",), rb"AIza[0-9A-Za-z_\-]{35}(?![0-9A-Za-z_\-])", 4),
    _shape("a Google OAuth token (ya29....)", (b"ya29.",), rb"ya29\.[0-9A-Za-z_\-]{20,}", 5),
    _shape(
        "a GitHub token (gh?_...)",
        (b"ghp_", b"gho_", b"ghu_", b"ghs_", b"ghr_"),
        rb"gh[pousr]_[A-Za-z0-9]{30,}",
        4,
        _in_token_ok,
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
    _shape("a Hugging Face token (hf_...)", (b"hf_",), rb"hf_[A-Za-z0-9]{30,}", 3, _in_token_ok),
    _shape("a Groq key (gsk_...)", (b"gsk_",), rb"gsk_[A-Za-z0-9]{30,}", 4, _in_token_ok),
    _shape("an xAI key (xai-...)", (b"xai-",), rb"xai-[A-Za-z0-9]{30,}", 4, _in_token_ok),
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
    {b"\\/", b"%25", b"&#", b"&amp;#"}
    | {
        form % code
        for c in _CREDENTIAL_CHARS
        for code in {b"%02x" % c, b"%02X" % c}
        for form in (b"\\u00%s", b"%%%s")
    }
)
_MAX_ESCAPE = max(map(len, _ESCAPES))
_HEX_CREDENTIAL = rb"(?:2[0BDEFbdef]|3[0-9Dd]|[46][1-9A-Fa-f]|[57][0-9Aa]|5[Ff])"  # space+-./0-9=A-Z_a-z
# HTML character references of printable ASCII (``&#115;``, ``&#x73;``, ``&amp;#115;``)
_CHAR_REF = (
    rb"&(?:amp;)*#(?:[xX]0*([2-7][0-9A-Fa-f])(?![0-9A-Fa-f])|0*(3[2-9]|[4-9]\d|1[01]\d|12[0-6])(?!\d));?"
)
_ANY_ESCAPE = re.compile(
    rb"[%\\](?:(?:25)*" + _HEX_CREDENTIAL + rb"|\\*(?:u00" + _HEX_CREDENTIAL + rb"|/))|" + _CHAR_REF
)
Finder = Callable[[bytes], list[tuple[int, int]]]
"""A search over a field's bytes: (anchor index, start) of every shape anchor found."""
_BOUNDED: set[Callable[[bytes], list[int]]] = set()
"""The escape searches that find `_ESCAPES` as literals (the automaton's): an escape they find
spans a few bytes (the regex's ``(?:25)*`` and ``\\*`` run on)."""


_ESCAPE_STARTS = b"\\%&"  # what every escape starts with


def _py_holds(data: bytes, stop: bytes) -> bool:
    """Whether ``data`` holds a byte of ``stop`` (the reference of the accelerator's one pass)."""
    return any(c in data for c in stop)


_holds = _c_holds or _py_holds


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
            if b"%" not in data and b"\\" not in data and b"&" not in data:
                return []
            return [m.start() for m in _ANY_ESCAPE.finditer(data)]

        return anchors, escapes
    kind, dfa = ahocorasick_rs.MATCHKIND_LEFTMOST_FIRST, ahocorasick_rs.Implementation.DFA
    shapes = ahocorasick_rs.BytesAhoCorasick(_ANCHORS, matchkind=kind, implementation=dfa)
    escaped = ahocorasick_rs.BytesAhoCorasick(_ESCAPES, matchkind=kind, implementation=dfa)

    def escape_hits(data: bytes) -> list[int]:
        # every escape starts with one of three bytes: text without them (most decoded text) needs no pass
        if not _holds(data, _ESCAPE_STARTS):
            return []
        return [s for _, s, _ in escaped.find_matches_as_indexes(data)]

    _BOUNDED.add(escape_hits)
    return (lambda data: [(i, s) for i, s, _ in shapes.find_matches_as_indexes(data)]), escape_hits


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


def _scan_raw(data: bytes, anchors: list[tuple[int, int]] | None = None) -> list[Secret]:
    """Shapes in ``data`` as it is (``anchors``: what `_find_anchors` finds in it, when known)."""
    found: list[Secret] = []
    hits = _find_anchors(data) if anchors is None else list(anchors)
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


_UNESCAPE = re.compile(rb"\\+u00([2-7][0-9A-Fa-f])|\\+(/)|%(?:25)*([0-9A-Fa-f]{2})|" + _CHAR_REF)


def _decode(data: bytes) -> tuple[bytes, list[tuple[int, int]]]:
    """``data`` with JSON ``\\u00XX`` (printable ASCII) and ``\\/`` escapes, percent-encoding and
    HTML character references (``&#115;``, ``&#x73;``) undone, at any depth; and (decoded offset,
    original offset) after each escape, in order."""
    pieces: list[bytes] = []
    marks: list[tuple[int, int]] = []
    pos = size = 0
    for m in _UNESCAPE.finditer(data):
        hexa = m.group(1) or m.group(3) or m.group(4)
        char = bytes([int(hexa, 16)]) if hexa else bytes([int(m.group(5))]) if m.group(5) else b"/"
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


Hits = tuple[list[tuple[int, int]], list[int]]
"""What the two searches find in a text: (anchor index, start) of each shape anchor, the escapes."""


def find_hits(data: bytes, at: int = 0) -> Hits:
    """The two searches over ``data``, offsets moved by ``at``: pieces of a text cut after a newline
    (no anchor or escape holds one) give, moved and put together, what the whole text gives."""
    anchors, escapes = _find_anchors(data), _find_escapes(data)
    if at:
        anchors, escapes = [(i, s + at) for i, s in anchors], [e + at for e in escapes]
    return anchors, escapes


def scan(data: str | bytes, hits: Hits | None = None, raw: bytes | None = None) -> list[Secret]:
    """Every credential shape in ``data``, found as it is and with escapes undone (``hits``: what
    `find_hits` gives for ``data``, when known: the searches are not run again; ``raw``: a str's
    UTF-8 bytes, when the caller has them: it is not encoded again).

    Offsets are into ``data`` (characters for a str). Sorted by start; none overlap."""
    if raw is None:
        raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    found = _scan_raw(raw, None if hits is None else hits[0])
    escapes = _find_escapes(raw) if hits is None else hits[1]
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


def scan_binary(data: bytes) -> list[Secret]:
    """Every credential shape in binary data (audio, an image) as it is: one search for the
    shapes' anchors, no escape undone (binary data holds none, and its many ``%``, ``\\`` and ``&``
    bytes would cost the escape search most of its speed)."""
    return _scan_raw(data)


def _chars(raw: bytes, offset: int) -> int:
    return len(raw[:offset].decode("utf-8", "ignore"))


B64_RUN = re.compile(r"[A-Za-z0-9+/_\-]{16,}={0,2}")
# every byte of a base64 or base64url run an ``a``, every other one a space: a run of 16 or more is
# then a substring search (C speed), where B64_RUN's search costs a try at every position
_B64_CLASS = bytes(
    97 if chr(c).isascii() and (chr(c).isalnum() or chr(c) in "+/_-") else 32 for c in range(256)
)


_LAST_RUN: tuple[str | bytes, bool] = ("", False)  # has_b64_run's last text and answer


def has_b64_run(text: str | bytes) -> bool:
    """Whether `B64_RUN` finds anything in ``text`` (most text holds no run: its search is skipped;
    bytes: ASCII text's bytes). The walk asks it up to three times of one string in a row (is a
    member worth decoding, is the string, does its text hold a run): the last answer is kept for
    that very object."""
    global _LAST_RUN
    last = _LAST_RUN
    if last[0] is text:
        return last[1]
    found = _c_b64_run(text, 16) if _c_b64_run is not None and text.isascii() else _py_b64_run(text)
    _LAST_RUN = (text, found)
    return found


def _py_b64_run(text: str | bytes) -> bool:
    """`has_b64_run` in Python (the accelerator's ``b64_run`` where it is built, for ASCII text)."""
    raw = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    return b"a" * 16 in raw.translate(_B64_CLASS)


def b64_findall(text: str) -> list[str]:
    """What ``B64_RUN.findall(text)`` gives: each run of 16 base64 bytes or more (and up to two
    ``=``), in order; the accelerator's one skipping pass for ASCII text (the regex tries a
    match at every offset: ~30 instructions a byte of a long run)."""
    if _c_b64_findall is not None and text.isascii():
        return _c_b64_findall(text, 16)
    return B64_RUN.findall(text)


_B64_RUN_BYTES = re.compile(rb"[A-Za-z0-9+/_\-]{16,}={0,2}")


_INFLATED_MAX = 16 << 20  # what a compressed base64 value may inflate to (no decompression bomb)


def _inflated(data: bytes) -> tuple[bytes, str]:
    """``data`` decompressed when it is gzip or zlib (at most `_INFLATED_MAX` bytes), and the layer."""
    return inflated(data, _INFLATED_MAX)


def base64_text(run: str | bytes) -> str | None:
    """``run`` decoded from base64 or base64url when that gives text (UTF-8, printable): the
    form Bedrock wraps its event payloads in, and any JSON field a key may hide in; base64 of
    gzip or zlib is inflated first (up to 16 MiB); else None."""
    decoded = base64_layers(run)
    return None if decoded is None else decoded[0]


def base64_joined(pieces: list[str]) -> str | None:
    """The text the bytes of base64 ``pieces`` spell together (a character may span two: Bedrock
    Agents' raw text chunks), or None when one is no base64 or the bytes are no UTF-8."""
    try:
        return b"".join(base64.b64decode(piece, validate=True) for piece in pieces).decode()
    except (binascii.Error, ValueError):
        return None


def base64_bytes(run: str | bytes) -> tuple[bytes, str] | None:
    """``run`` decoded from base64 or base64url (gzip or zlib inflated, up to 16 MiB), and the
    compression layer it held (``gzip``, ``zlib`` or ``""``); None when it is no base64."""
    raw = run.encode("ascii", "replace") if isinstance(run, str) else run
    decoded = _decoded(raw.rstrip(b"="))
    return None if decoded is None else _inflated(decoded)


def _decoded(raw: bytes) -> bytes | None:
    """``raw`` (no "=" at its end) decoded from base64 or base64url, None when it is neither: by
    the accelerator's ``b64_decode`` in one pass when raw is all their bytes, else `_pure_decoded`."""
    if _c_b64_decode is not None:
        got = _c_b64_decode(raw)
        if got is not None:
            return got
    return _pure_decoded(raw)


def _pure_decoded(raw: bytes) -> bytes | None:
    """`_decoded` in Python: padded, then base64url's decoder when a "-" or "_" says so (it drops
    bytes of neither), else base64's, which takes its bytes only."""
    if len(raw) % 4 == 1:
        return None
    padded = raw + b"=" * (-len(raw) % 4)
    try:
        return (
            base64.urlsafe_b64decode(padded)
            if (b"-" in raw or b"_" in raw)
            else base64.b64decode(padded, validate=True)
        )
    except (binascii.Error, ValueError):
        return None


def base64_layers(run: str | bytes) -> tuple[str, str] | None:
    """`base64_text`, and the compression layer the base64 held (``gzip``, ``zlib`` or ``""``)."""
    found = base64_bytes(run)
    return None if found is None else bytes_text(*found)


def bytes_text(decoded: bytes, layer: str = "") -> tuple[str, str] | None:
    """``(text, layer)`` when ``decoded`` is text (UTF-8, printable, 8 characters or more), else
    None: binary data (audio, an image), read for key shapes only (`scan`)."""
    try:
        text = decoded.decode("utf-8")
    except ValueError:
        return None
    printable = sum(c.isprintable() or c in "\n\r\t" for c in text)
    return (text, layer) if len(text) >= 8 and printable >= 0.95 * len(text) else None
