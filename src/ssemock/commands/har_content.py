"""A HAR response body still in its ``Content-Encoding``, undone before ``import-har`` keeps it.

Browsers write the body a page saw (decoded) beside the ``Content-Encoding`` header the server
sent; other writers (a proxy's raw capture, a hand-made HAR) write the compressed bytes. A
cassette stores a body decoded, its header dropped, as a recording does: so a body that is a
whole stream of its encoding is inflated (at most `INFLATED_MAX` bytes: no decompression bomb),
the secret scan reads what is inside and a replay serves what the client read. A body that is
not one (already decoded) is kept as it is; one that starts like its encoding but does not
decode is refused, since a replay would serve bytes no client can read."""

from __future__ import annotations

import zlib
from collections.abc import Callable

from ..scan.body_forms import DECODED_MAX

__all__ = ["INFLATED_MAX", "ContentError", "undo_content_encoding"]

INFLATED_MAX = DECODED_MAX
"""The most bytes a body may inflate to (the secret scan's own cap)."""

_MAGIC = {"gzip": b"\x1f\x8b", "x-gzip": b"\x1f\x8b", "zstd": b"\x28\xb5\x2f\xfd"}


_GZIP = 16 + zlib.MAX_WBITS


class ContentError(ValueError):
    """A body in its Content-Encoding that cannot be undone: what is wrong, for the entry's error."""


def _bomb() -> ContentError:
    return ContentError(f"it inflates past {INFLATED_MAX:,} bytes (a decompression bomb?)")


class _NotThisEncoding(Exception):
    """The body is not a whole stream of the encoding (the HAR writer decoded it already)."""


def _zlib(body: bytes, wbits: int) -> bytes:
    """``body`` inflated with zlib (``wbits``: gzip, zlib or raw deflate; gzip may hold several
    members one after the other)."""
    out, rest = bytearray(), body
    while True:
        z = zlib.decompressobj(wbits)
        try:
            out += z.decompress(rest, INFLATED_MAX + 1 - len(out))
        except zlib.error:
            raise _NotThisEncoding from None
        if len(out) > INFLATED_MAX or z.unconsumed_tail:
            raise _bomb()
        if not z.eof:
            raise _NotThisEncoding
        rest = z.unused_data
        if not rest:
            return bytes(out)
        if wbits != _GZIP:
            raise _NotThisEncoding


def _deflate(body: bytes) -> bytes:
    """A zlib stream, or raw deflate (some servers send it as "deflate"): only for a body that is
    not UTF-8, since raw deflate has no header or checksum and a short text may parse as one."""
    try:
        return _zlib(body, zlib.MAX_WBITS)
    except _NotThisEncoding:
        try:
            body.decode("utf-8")
        except UnicodeDecodeError:
            return _zlib(body, -zlib.MAX_WBITS)
        raise


def _brotli(body: bytes) -> bytes:
    import brotli

    d = brotli.Decompressor()
    try:
        out = d.process(body, output_buffer_limit=INFLATED_MAX + 1)
    except brotli.error:
        raise _NotThisEncoding from None
    if len(out) > INFLATED_MAX or not d.can_accept_more_data():
        raise _bomb()
    if not d.is_finished():
        raise _NotThisEncoding
    return bytes(out)


def _zstd(body: bytes) -> bytes:
    import zstandard

    try:
        with zstandard.ZstdDecompressor().stream_reader(body) as reader:
            out = reader.read(INFLATED_MAX + 1)
            if len(out) > INFLATED_MAX:
                raise _bomb()
            if reader.read(1):
                raise _NotThisEncoding
    except zstandard.ZstdError:
        raise _NotThisEncoding from None
    return bytes(out)


_LAYERS: dict[str, Callable[[bytes], bytes]] = {
    "gzip": lambda body: _zlib(body, _GZIP),
    "x-gzip": lambda body: _zlib(body, _GZIP),
    "deflate": _deflate,
    "br": _brotli,
    "zstd": _zstd,
}


def undo_content_encoding(body: bytes, encoding: str) -> bytes:
    """``body`` with each layer of ``encoding`` (a ``Content-Encoding`` value: ``gzip, br``
    undoes br first) removed when it is a whole stream of them; as it is when it is not (a
    HAR writer decoded it), or when a layer is unknown or its decoder not installed.
    `ContentError` when it inflates past `INFLATED_MAX`, or starts like its encoding (gzip's or
    zstd's magic bytes) and does not decode."""
    layers = [e.strip().lower() for e in encoding.split(",") if e.strip().lower() not in ("", "identity")]
    if not body or not layers or any(layer not in _LAYERS for layer in layers):
        return body
    first, out = layers[-1], body
    try:
        for layer in reversed(layers):
            out = _LAYERS[layer](out)
    except ImportError:
        return body
    except _NotThisEncoding:
        if body.startswith(_MAGIC.get(first, b"\x00\x00\x00\x00\x00")):
            raise ContentError(
                f"the body starts like {first} data but is not a whole {first} stream (cut short?)"
            ) from None
        return body
    return out
