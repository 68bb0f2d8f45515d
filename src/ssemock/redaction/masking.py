"""Secrets masked where only a decoded form of a body shows them.

The byte-level scrub (`ssemock.redaction.scrub`) masks what the scanner finds in a body as
stored. The scan also reads decoded forms (`ssemock.scan.walk.scan_cassette`), and a secret found
only there needs masking there: a value under a credential name (``{"password": 12}``), a key
inside a base64 value (Bedrock's ``{"bytes": ...}`` payloads), in a compressed layer, or split
across the deltas of a stream (the model streams a key back 3 characters at a time).
`mask_body` decodes the body into its units (SSE data lines, JSON lines, JSON array elements,
eventstream frames, multipart parts, the whole document), walks each unit's strings, joins the
strings at one JSON path across units as the scan does, masks every secret span (a span
across pieces: ``REDACTED`` in the first, the rest of it removed, and the ``Bearer``/``Basic``
word before it with it), and writes back only the
units that changed: the stream keeps its events, framing and boundaries.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import re
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson

from .. import framing
from ..framing.eventstream import decode as decode_frames
from ..framing.eventstream import encode as encode_frame
from ..framing.eventstream import frame_ends
from ..framing.json_array import element_spans as _array_spans
from ..scan.credential_shapes import base64_bytes, bytes_text, scan_binary
from ..scan.event_plans import labels
from ..scan.shapes import (
    B64_RUN,
    FORM,
    credential_member,
    credential_name,
    credential_value,
    scan_form,
    secret_spans,
)
from ..scan.walk import plain_key, wide_charset
from ..scan.word_lists import WORD, spellings, words_of
from .rules import REDACTED

__all__ = ["Masked", "compressed", "mask_body", "mask_pieces"]

Edit = tuple[int, int, int]  # old start, old end, new length
_DEPTH = 4  # decoded forms nested in each other, at most (as the scan reads them)
_LINE = re.compile(rb"[^\r\n]*(?:\r\n|\r|\n|$)")
_NUMBER_VALUE = re.compile(r'"([A-Za-z0-9_.\-]{1,64})"\s*:\s*(-?\d[\d.eE+\-]*)')


@dataclass
class Masked:
    """A body with the secrets of its decoded forms masked: the new bytes, the edits (old
    start, old end, new length) that made it from the old, and what was masked (never a value)."""

    body: bytes
    edits: list[Edit] = field(default_factory=list)
    masked: list[str] = field(default_factory=list)


Visit = Callable[[str, str], "str | None"]


def _key(path: str, name: str) -> str:
    return f"{path}.{name}"


def _walk_json(value: Any, path: str, depth: int, visit: Visit, named: list[str]) -> tuple[Any, bool]:
    """``value`` with every string visited and every credential-named value masked; whether it
    changed. List indices are left out of the path and index members put in (the pieces of one
    streamed field share it, as the scan joins them)."""
    if isinstance(value, dict):
        out, changed = {}, False
        # the index members of an object, as the scan labels its piece keys: the pieces of two
        # tool calls or two choices at one path are joined apart
        labelled = path + labels(value, tuple(value))
        for k, v in value.items():
            where = _key(labelled, str(k))
            if credential_member(str(k), v) and not isinstance(v, (dict, list)):
                out[k], changed = REDACTED, True
                named.append(f"a credential-named value {where}")
                continue
            out[k], c = _walk_json(v, where, depth, visit, named)
            changed |= c
        return out, _respelled(value, out) or changed
    if isinstance(value, list):
        items = [_walk_json(v, path + "[]", depth, visit, named) for v in value]
        return [v for v, _ in items], any(c for _, c in items)
    if isinstance(value, str):
        new = _walk_text(value, path, depth, visit, named)
        return (value, False) if new is None else (new, True)
    return value, False


def _respelled(before: dict[Any, Any], after: dict[Any, Any]) -> bool:
    """A member that spelled a word list's words (Deepgram's ``transcript``: the words joined by
    spaces, `ssemock.scan.word_lists`) spells them as masked, set in ``after``: a key cut into
    words reads whole in neither then. Whether one changed."""
    changed = False
    for name, value in before.items():
        words, now = words_of(value), words_of(after[name])
        if words is None or now is None or now == words:
            continue
        spelled = spellings(words)[0]
        for other, text in before.items():
            if type(text) is str and text == spelled:
                after[other] = " ".join(w for w in now if w)
                changed = True
    return changed


def _walk_text(text: str, path: str, depth: int, visit: Visit, named: list[str]) -> str | None:
    """``text`` decoded as far as it goes (JSON, a base64 value) and every string in it visited;
    the new text, or None when nothing changed. Text that is no JSON is visited itself too (it
    may be a piece of a streamed field, base64-looking or not); a change inside its decoded form
    wins over one to it whole (the decoded one is the precise mask)."""
    inner: str | None = None
    if depth < _DEPTH:
        if text.lstrip()[:1] in ("{", "["):
            try:
                parsed = orjson.loads(text)
            except orjson.JSONDecodeError:
                pass
            else:
                new, changed = _walk_json(parsed, f"{path} $".strip(), depth + 1, visit, named)
                return orjson.dumps(new).decode() if changed else None
        if B64_RUN.fullmatch(text):
            raw = base64_bytes(text)
            decoded = None if raw is None else bytes_text(*raw)
            if decoded is not None:
                found = _walk_text(decoded[0], f"{path} base64".strip(), depth + 1, visit, named)
                inner = None if found is None else _rebase64(found.encode(), like=text, layer=decoded[1])
            elif raw is not None and (keys := scan_binary(raw[0])):  # binary data: the keys' own shapes
                inner = _rebase64(
                    _masked_bytes(raw[0], [(k.start, k.end) for k in keys]), like=text, layer=raw[1]
                )
                named.append(f"a key in the binary data of {path} base64".replace("  ", " "))
    outer = visit(path, text)
    return inner if inner is not None else outer


def _masked_bytes(data: bytes, spans: list[tuple[int, int]]) -> bytes:
    """``data`` with each span (overlapping ones as one) replaced by ``REDACTED``."""
    out, pos = [], 0
    for a, b in sorted(spans):
        if b > pos:
            out += [data[pos : max(a, pos)], REDACTED.encode() if a >= pos else b""]
            pos = b
    return b"".join([*out, data[pos:]])


def compressed(data: bytes, layer: str) -> bytes:
    """``data`` compressed as ``layer`` says (``gzip``, ``zlib``, raw ``deflate``; ``""``: as is):
    a masked value written back in the form it was found in."""
    if layer == "gzip":
        return gzip.compress(data, mtime=0)
    if layer == "zlib":
        return zlib.compress(data)
    if layer == "deflate":
        z = zlib.compressobj(wbits=-zlib.MAX_WBITS)
        return z.compress(data) + z.flush()
    return data


def _rebase64(raw: bytes, *, like: str, layer: str = "") -> str:
    """``raw`` in base64 the way ``like`` was written (URL-safe alphabet, padding, compressed
    with gzip or zlib when it was)."""
    raw = compressed(raw, layer)
    encoded = base64.urlsafe_b64encode(raw) if ("-" in like or "_" in like) else base64.b64encode(raw)
    out = encoded.decode()
    return out if like.endswith("=") else out.rstrip("=")


# -- the units of a body ---------------------------------------------------------------------------


@dataclass
class _Unit:
    """A span of the body holding one decodable value: its text, and how to write it back."""

    start: int
    end: int
    text: str
    write: Callable[[str], bytes]
    name: str = ""  # a multipart part's name


def _units(body: bytes, content_type: str, stream: bool) -> Iterator[_Unit]:
    def utf8(text: str) -> bytes:
        return text.encode()

    if "multipart/" in content_type.lower():
        yield from _parts(body, content_type)
        return
    kind = framing.detect(content_type, body).name if stream else ""
    if kind == "eventstream":
        pos = 0
        for end in frame_ends(body):
            [frame] = decode_frames(body[pos:end])
            headers = frame.headers
            yield _Unit(
                pos,
                end,
                frame.payload.decode("utf-8", "replace"),
                lambda text, h=headers: encode_frame(h, text.encode()),  # type: ignore[misc]
            )
            pos = end
        return
    if kind == "json_array":
        for a, b in _array_spans(body):
            yield _Unit(a, b, body[a:b].decode("utf-8", "replace"), utf8)
        return
    if kind in ("sse", "ndjson"):
        for m in _LINE.finditer(body):
            line = m.group().rstrip(b"\r\n")
            a = m.start()
            if kind == "sse":
                if not line.startswith(b"data:"):
                    continue
                a += 5 + (line[5:6] == b" ")
            if a < m.start() + len(line):
                yield _Unit(
                    a, m.start() + len(line), body[a : m.start() + len(line)].decode("utf-8", "replace"), utf8
                )
        return
    stripped = body.strip()
    if stripped:
        a = body.index(stripped[:1])
        yield _Unit(a, a + len(stripped), stripped.decode("utf-8", "replace"), utf8)


def _parts(body: bytes, content_type: str) -> Iterator[_Unit]:
    """The value of each part of a multipart body, with its name."""
    m = re.search(r'boundary="?([^";]+)"?', content_type, re.I)
    if m is None:
        return
    delimiter = b"--" + m.group(1).encode("latin-1")
    pos = 0
    for part in body.split(delimiter):
        start, pos = pos, pos + len(part) + len(delimiter)
        head, sep, value = part.partition(b"\r\n\r\n")
        if not sep:
            head, sep, value = part.partition(b"\n\n")
        if not sep:
            continue
        name = re.search(rb'name="([^"]*)"', head)
        value = value.rstrip(b"\r\n")
        a = start + len(head) + len(sep)
        yield _Unit(
            a,
            a + len(value),
            value.decode("utf-8", "replace"),
            str.encode,
            name.group(1).decode("utf-8", "replace") if name else "",
        )


# -- masking ------------------------------------------------------------------------------------


def _spans(text: str) -> list[tuple[int, int, str]]:
    """Where to mask in ``text`` and with what: a number under a credential name in JSON text
    becomes the string ``"REDACTED"`` (the JSON stays valid), every other secret ``REDACTED``."""
    spans = [
        (m.start(2), m.end(2), f'"{REDACTED}"')
        for m in _NUMBER_VALUE.finditer(text)
        if credential_name(m.group(1))
    ]
    found = [(s.start, s.end) for s in scan_form(text)] if FORM.match(text.encode("utf-8", "replace")) else []
    for a, b in [*found, *((a, b) for a, b, _ in secret_spans(text))]:
        if not any(a < e and s < b for s, e, _ in spans):
            spans.append((a, b, REDACTED))
    return sorted(spans)


PieceEdit = tuple[int, int, str]  # start, end, what replaces it (in one piece)


def _applied(text: str, edits: list[PieceEdit]) -> str:
    """``text`` with ``edits`` applied; edits that overlap become one, replaced by the first
    non-empty replacement among them (a mask wins over the removal of a join's continuation)."""
    merged: list[PieceEdit] = []
    for a, b, new in sorted(edits, key=lambda e: e[0]):
        if merged and a < merged[-1][1]:
            lo, hi, was = merged[-1]
            merged[-1] = (lo, max(hi, b), was or new)
        else:
            merged.append((a, b, new))
    out, pos = [], 0
    for a, b, new in merged:
        out += [text[pos:a], new]
        pos = b
    out.append(text[pos:])
    return "".join(out)


_SCHEME = re.compile(r"(?:Bearer|Basic|Token)(?:\s|\+)+\Z", re.IGNORECASE)


def _with_scheme(joined: str, start: int) -> int:
    """Where a span of a join starts once the ``Bearer``/``Basic``/``Token`` word right before it
    is taken too: left in its own piece, the word would read as a credential again with whatever
    follows it in a wider join (the scan joins a session's audio and text deltas at one path)."""
    m = _SCHEME.search(joined, max(0, start - 16), start)
    return m.start() if m is not None and (m.start() == 0 or not joined[m.start() - 1].isalnum()) else start


def _joined_edits(pieces: list[str], across: bool = False) -> list[list[PieceEdit]]:
    """Per piece of one field, the edits that mask every secret of the pieces' join: a span over
    several pieces becomes the mask in the first and is removed from the others (``across``:
    only those spans)."""
    joined = "".join(pieces)
    edits: list[list[PieceEdit]] = [[] for _ in pieces]
    spans = _spans(joined)
    if not spans:
        return edits
    starts, pos = [], 0
    for piece in pieces:
        starts.append(pos)
        pos += len(piece)
    for a, b, new in spans:
        a = _with_scheme(joined, a) if new == REDACTED else a
        hit = [(k, max(a, s), min(b, s + len(p))) for k, (s, p) in enumerate(zip(starts, pieces))]
        hit = [(k, lo - starts[k], hi - starts[k]) for k, lo, hi in hit if lo < hi]
        if across and len(hit) < 2:
            continue  # (within one piece)
        for n, (k, lo, hi) in enumerate(hit):
            edits[k].append((lo, hi, "" if n else new))
    return edits


def _mask_joined(pieces: list[str], across: bool = False) -> list[str]:
    """The pieces of one field with every secret of their join masked (`_joined_edits`)."""
    return [_applied(p, e) if e else p for p, e in zip(pieces, _joined_edits(pieces, across))]


def _base64_joined_edits(pieces: list[str], across: bool) -> list[list[PieceEdit]] | None:
    """AWS payload parts (``{"bytes": base64}``) of raw text, a few bytes each (Bedrock Agents'
    chunks): every secret their bytes spell together masked across them, each changed part
    rewritten whole in base64; None when one is no base64. Bytes read one character each
    (latin-1), so the parts' joins are offsets into the bytes (a key's shapes are ASCII)."""
    try:
        raws = [base64.b64decode(piece, validate=True).decode("latin-1") for piece in pieces]
    except (binascii.Error, ValueError):
        return None
    masked = _mask_joined(raws, across)
    return [
        [(0, len(p), _rebase64(m.encode("latin-1"), like=p))] if m != r else []
        for m, r, p in zip(masked, raws, pieces)
    ]


def _spelled_edits(words: list[str], across: bool) -> list[list[PieceEdit]]:
    """The edits that mask every secret the words of word lists spell joined by spaces
    (``Bearer`` and the token after it: the scheme word goes with it)."""
    edits = _joined_edits([w + " " for w in words], across)
    return [[(a, min(b, len(w)), new) for a, b, new in e if a < len(w)] for w, e in zip(words, edits)]


def mask_pieces(pieces: list[str]) -> list[str]:
    """The pieces of one stream of text (a session's plain-text messages of one direction) with
    every secret their join holds masked: a span over several pieces is ``REDACTED`` in the
    first and removed from the others."""
    return _mask_joined(pieces)


def _mask_wide(body: bytes, charset: str, stream: bool, across: bool) -> Masked:
    """A UTF-16 or UTF-32 body masked in UTF-8, written back in its charset (one edit: all of it)."""
    text = body.decode(charset, "replace").encode("utf-8")
    inner = mask_body(text, content_type="", stream=stream, across=across)
    if not inner.edits:
        return Masked(body)
    out = inner.body.decode("utf-8", "replace").encode(charset)
    if body.startswith((b"\xff\xfe", b"\xfe\xff")) and not out.startswith((b"\xff\xfe", b"\xfe\xff")):
        out = body[:2] + out
    return Masked(out, [(0, len(body), len(out))], inner.masked)


def mask_body(body: bytes, *, content_type: str, stream: bool, across: bool = False) -> Masked:
    """``body`` with every secret of its decoded forms masked (see the module's docstring); a
    UTF-16 or UTF-32 body is masked in UTF-8 and written back in its own charset. ``across``:
    only the secrets that span strings of several units (a key streamed in deltas), masked
    before anything else is: once its first piece is masked alone, the rest no longer reads as
    a key. Only the units holding them are rewritten."""
    charset = wide_charset(content_type, body)
    if charset is not None:
        return _mask_wide(body, charset, stream, across)
    units = list(_units(body, content_type, stream))
    leaves: list[tuple[str, str]] = []
    named: list[str] = []

    def collect(path: str, text: str) -> None:
        leaves.append((path, text))
        return None

    walked: list[tuple[int, int, bool]] = []  # per unit: its leaves (first, end), whether a name masked
    for unit in units:
        first, names = len(leaves), len(named)
        if not (unit.name and credential_name(unit.name)):
            _walk_text(unit.text, "", 0, collect, named)
        walked.append((first, len(leaves), len(named) > names))
    # every edit found on the strings as they are, then applied together: each string masked
    # alone (a stream repeats its ids: each text once), and the strings of one path joined across
    # the units, by path with index labels (two tool calls apart), then without (an event
    # counter). Masking a key's first piece alone before the join would hide the rest of it.
    alone: dict[str, list[PieceEdit]] = {}
    per_leaf: list[list[PieceEdit]] = [
        [] if across else list(alone[text] if text in alone else alone.setdefault(text, _spans(text)))
        for _, text in leaves
    ]
    for key in (str, plain_key):
        by_path: dict[str, list[int]] = {}
        for k, (path, _) in enumerate(leaves):
            by_path.setdefault(key(path), []).append(k)
        for where, indices in by_path.items():
            if len(indices) > 1:
                texts = [leaves[k][1] for k in indices]
                joined = _joined_edits(texts, across)
                if where.endswith("bytes") and not any(joined):
                    joined = _base64_joined_edits(texts, across) or joined
                if where.endswith(f"[].{WORD}"):  # a word list's words, as a transcript spells them
                    joined = [a + b for a, b in zip(joined, _spelled_edits(texts, across))]
                for k, more in zip(indices, joined):
                    per_leaf[k] += more
    new = [_applied(text, e) if e else text for (_, text), e in zip(leaves, per_leaf)]
    changed = {k for k, (_, text) in enumerate(leaves) if new[k] != text}
    counter: Iterator[int] = iter(())

    def replace(path: str, text: str) -> str | None:
        k = next(counter)
        return new[k] if k in changed else None

    pieces, edits, pos = [], [], 0
    named.clear()
    for unit, (first, end, masks_name) in zip(units, walked):
        if unit.name and credential_name(unit.name) and not across:
            text: str | None = REDACTED if credential_value(unit.text) else None
            if text is not None:
                named.append(f"a credential-named value part {unit.name!r}")
        elif (masks_name and not across) or not changed.isdisjoint(range(first, end)):
            counter = iter(range(first, end))
            text = _walk_text(unit.text, "", 0, replace, named)
        else:  # nothing of it changes: its walk would give None
            continue
        if text is None:
            continue
        raw = unit.write(text)
        pieces += [body[pos : unit.start], raw]
        edits.append((unit.start, unit.end, len(raw)))
        pos = unit.end
    if not edits:
        return Masked(body)
    pieces.append(body[pos:])
    paths = sorted({leaves[k][0] for k in changed})
    masked = [f"a secret in the decoded {p}" for p in paths] + named
    return Masked(b"".join(pieces), edits, masked)
