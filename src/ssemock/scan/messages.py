"""Messages fit for a terminal or a log: every secret in a text masked (`mask_text`), control
characters escaped (`escape_control`), both (`safe_message`), and what a value looks like
without showing it (`value_shape`)."""

from __future__ import annotations

import re
from collections.abc import Iterator

from .credential_shapes import _WHOLE, B64_RUN, REDACTED, base64_text, scan
from .fields import credential_name, credential_value, looks_random

__all__ = ["escape_control", "mask_text", "safe_message", "secret_spans", "value_shape"]


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
# (tried only where a name starts, the lookbehind: the same matches, in linear time; tried at every
# position of a long run of name characters without a credential word, it was quadratic)
_CREDENTIAL_WORD = re.compile(  # a whole name with a credential word in it; credential_name decides
    r"(?i)(?<![A-Za-z0-9_.\-])[A-Za-z0-9_.\-]*(?:passw|passphrase|pwd|secret|api[-_]?key|apikey|token|authorization|private[-_]?key)"
    r"[A-Za-z0-9_.\-]*"
)


# the credential subprotocols a browser offers (`ssemock.scan.subprotocols`), in a message that
# shows a handshake or a subprotocol list: the value to the end of the subprotocol
_SUBPROTOCOL = re.compile(
    r"(?i)(?<![\w.-])(?:base64url\.bearer\.authorization\.k8s\.io|[\w-]*api[-_]?key)\.([^\s,'\"\]]+)"
)


# a header or field NAME in a list of names (``["authorization", "x-api-key"]``, vcrpy's
# filter_headers): lower case words joined by dashes (or one of the bare names), never a value
_HEADER_NAME = re.compile(
    r"[a-z][a-z]*(?:-[a-z]+)+|authorization|cookie|api_?key|apikey|token|password|secret"
)
# a literal after a name (``("x-api-key", None)``): no value at all
_NO_VALUE = re.compile(r"(?:None|null|true|false|True|False)(?![\w.])")


def _named_values(text: str) -> Iterator[tuple[int, int, str, bool]]:
    """(start, end, value, named-as-a-credential) of values after a credential-like name:
    ``client_secret=...``, ``"x-auth-token": "..."``, ``('token', '...')``, ``$.password: '...'``.
    Not a name that follows another in a list (``"authorization", "x-api-key"``) nor a literal
    such as ``None``: masking those hides what a message is about and protects nothing."""
    for m in _CREDENTIAL_WORD.finditer(text):
        if not credential_name(m.group()):
            continue
        value = _CREDENTIAL_VALUE.match(text, m.end())
        if value is not None:
            group = "quoted" if value.group("quoted") is not None else "bare"
            found = value.group(group)
            listed = "," in text[m.end() : value.start(group)]
            if group == "quoted" and listed and _HEADER_NAME.fullmatch(found) and credential_name(found):
                continue
            if group == "bare" and (_NO_VALUE.match(found) or (listed and found[0] in "([{")):
                continue  # no value, or the next element of a list in code: ("a", ("b", None))
            if found:
                yield value.start(group), value.end(group), found.rstrip(), True
    for m in _NAME_WORD.finditer(text):
        end = m.end()
        while end < len(text) and text[end] in _NAME_CHARS:
            end += 1
        value = _NAMED_VALUE.match(text, end)
        if value is not None:
            yield value.start(1), value.end(1), value.group(1), False


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
        if (
            named and credential_value(value.strip("'\"")) and not _placeholder_then_more(value, text, a)
        ) or (not named and looks_random(value)):
            add(a, b)
    for m in _SUBPROTOCOL.finditer(text):  # a credential subprotocol, whatever its value looks like
        if m.group(1) != REDACTED:
            add(m.start(1), m.end(1))
    for m in B64_RUN.finditer(text) if len(text) <= _WHOLE else ():
        decoded = base64_text(m.group())
        if decoded is not None and (scan(decoded) or any(named for *_, named in _named_values(decoded))):
            add(m.start(), m.end())
    out: list[tuple[int, int, str]] = []
    for span in sorted(spans):
        if not out or span[0] >= out[-1][1]:
            out.append(span)
    return out


# what may follow a placeholder in a bare value: after ``&``, a query's next parameter
# (``REDACTED&n=1``); after a space, anything, when the placeholder is one redaction leaves
# (``REDACTED -> 404 ...``, ``*** at the end``), not a dot or a dash (``. 0070a07b``), unless
# it is a list's bullet starting a line under the name (``each password:\n- "mellon": ...``);
# anything else is the rest of a password that holds ``&`` or a space (``.&00700007``)
_PARAMETER = re.compile(r"[A-Za-z_][\w.\-\[\]]*=")
_BULLETS = ("-", "*", "+", "\u2022")


def _placeholder_then_more(value: str, text: str, start: int) -> bool:
    """Whether a bare value named as a credential at ``text[start:]`` is a placeholder followed by
    more of the line (not a secret): its first piece is a placeholder and what follows it cannot
    be the value's."""
    pieces = re.split(r"([&\s])", value.strip("'\""), maxsplit=1)
    if len(pieces) == 1:
        return False
    first, sep, rest = pieces
    if not first or credential_value(first):
        return False
    if sep == "&":
        return bool(_PARAMETER.match(rest))
    if first in _BULLETS and text[:start].rstrip(" \t").endswith(("\n", "\r")):
        return True  # a list under a heading that ends with the name
    return len(first) >= 3 and bool(first.strip(".-_"))


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
