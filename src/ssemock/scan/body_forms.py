"""Decoded forms of a body as a whole, before the scan reads it (`ssemock.scan.walk`): its
``Content-Encoding`` layers undone, and the UTF-16 or UTF-32 charset it may be written in."""

from __future__ import annotations

import re
import zlib

__all__ = ["DECODED_MAX", "decode_content", "wide_charset"]

DECODED_MAX = 256 << 20
"""Bytes a Content-Encoding layer may decode to (no decompression bomb)."""

_UTF16_BOMS = {
    b"\xff\xfe\x00\x00": "utf-32",
    b"\x00\x00\xfe\xff": "utf-32",
    b"\xff\xfe": "utf-16",
    b"\xfe\xff": "utf-16",
}


def wide_charset(content_type: str, body: bytes) -> str | None:
    """The UTF-16 or UTF-32 codec a body is written in (its ``charset=``, else a byte order mark,
    else every other byte NUL), or None (UTF-8, ASCII or another byte charset: read as stored)."""
    m = re.search(r"charset=\"?([\w-]+)", content_type, re.I)
    if m is not None:
        name = m.group(1).lower().replace("_", "-")
        return name if name.startswith(("utf-16", "utf-32", "ucs-2")) and name != "ucs-2" else None
    for bom, codec in _UTF16_BOMS.items():
        if body.startswith(bom):
            return codec
    head = body[:4096]
    if len(head) >= 8:
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
