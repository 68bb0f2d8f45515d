"""Decoded forms of a body as a whole, before the scan reads it (`ssemock.scan.walk`): its
``Content-Encoding`` layers undone, and the UTF-16 or UTF-32 charset it may be written in."""

from __future__ import annotations

import re
import zlib

__all__ = [
    "DECODED_MAX",
    "decode_content",
    "inflated",
    "inflated_message",
    "message_encoding",
    "wide_charset",
]

DECODED_MAX = 256 << 20
"""Bytes a Content-Encoding layer may decode to (no decompression bomb)."""

_CHARSET = re.compile(r"charset=\"?([\w-]+)", re.I)
_UTF16_BOMS = {
    b"\xff\xfe\x00\x00": "utf-32",
    b"\x00\x00\xfe\xff": "utf-32",
    b"\xff\xfe": "utf-16",
    b"\xfe\xff": "utf-16",
}


def wide_charset(content_type: str, body: bytes) -> str | None:
    """The UTF-16 or UTF-32 codec a body is written in (its ``charset=``, else a byte order mark,
    else every other byte NUL), or None (UTF-8, ASCII or another byte charset: read as stored)."""
    m = _CHARSET.search(content_type) if content_type else None
    if m is not None:
        name = m.group(1).lower().replace("_", "-")
        return name if name.startswith(("utf-16", "utf-32", "ucs-2")) and name != "ucs-2" else None
    for bom, codec in _UTF16_BOMS.items():
        if body.startswith(bom):
            return codec
    head = body[:4096]
    if len(head) >= 8 and 0 in head:  # (one memchr: text holds no NUL, the counts need one)
        even, odd = head[0::2].count(0), head[1::2].count(0)
        if odd >= 0.3 * len(head) / 2 and even == 0:
            return "utf-16-le"
        if even >= 0.3 * len(head) / 2 and odd == 0:
            return "utf-16-be"
    return None


def decode_content(body: bytes, encoding: str) -> tuple[bytes, list[str]]:
    """``body`` with each ``Content-Encoding`` layer removed (``gzip, gzip``: two; the last listed
    is undone first), and the layers removed; stops at a layer it cannot decode."""
    layers: list[str] = []
    for name in reversed([e.strip().lower() for e in encoding.split(",") if e.strip()]):
        if name == "identity":
            continue
        try:
            if name in ("gzip", "x-gzip"):
                z = zlib.decompressobj(16 + zlib.MAX_WBITS)
                body = z.decompress(body, DECODED_MAX)
            elif name == "deflate":
                try:
                    body = zlib.decompressobj().decompress(body, DECODED_MAX)
                except zlib.error:
                    body = zlib.decompressobj(-zlib.MAX_WBITS).decompress(body, DECODED_MAX)
            elif name == "br":
                import brotli

                body = brotli.decompress(body)
            elif name == "zstd":
                import zstandard

                body = zstandard.ZstdDecompressor().decompressobj().decompress(body)
            else:
                break
        except (zlib.error, ImportError, ValueError, OSError, Exception):
            break
        layers.append(name)
    return body, layers


def inflated(data: bytes, limit: int = DECODED_MAX, *, raw: bool = False) -> tuple[bytes, str]:
    """``data`` decompressed (at most ``limit`` bytes) when it is gzip (its magic bytes) or zlib
    (its header's checksum), or with ``raw``, a raw deflate stream that decodes to its end with
    nothing after it (a compressed WebSocket binary message names no encoding); and the layer
    (``gzip``, ``zlib``, ``deflate``). Else ``data`` and ``""``."""
    if data[:2] == b"\x1f\x8b":
        wbits, layer = 16 + zlib.MAX_WBITS, "gzip"
    elif len(data) >= 2 and data[0] & 0x0F == 8 and data[0] >> 4 <= 7 and (data[0] << 8 | data[1]) % 31 == 0:
        wbits, layer = zlib.MAX_WBITS, "zlib"
    elif raw and data:
        wbits, layer = -zlib.MAX_WBITS, "deflate"
    else:
        return data, ""
    z = zlib.decompressobj(wbits)
    try:
        out = z.decompress(data, limit)
    except zlib.error:
        return data, ""
    if layer == "deflate" and not (z.eof and not z.unused_data and out):
        return data, ""  # not a deflate stream after all (most bytes fail in their first block)
    return out, layer


def message_encoding(data: str | bytes) -> list[tuple[str, str]]:
    """The headers a WebSocket message is scanned under as a body: the ``Content-Encoding`` of
    its compression (`inflated_message`'s layer; a raw deflate stream is ``deflate`` too)."""
    layer = inflated_message(data)[1] if isinstance(data, bytes) else ""
    return [("content-encoding", {"zlib": "deflate"}.get(layer, layer))]


def inflated_message(data: bytes) -> tuple[bytes, str]:
    """A WebSocket binary message inflated when it is a gzip, zlib or raw deflate stream (no
    header names a message's encoding; bounded as `inflated` is), and the layer; text (UTF-8)
    never is compressed: as is, and ``""``."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return inflated(data, raw=True)
    return data, ""
