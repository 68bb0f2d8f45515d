"""The bodies of a vcrpy cassette as bytes: every way vcrpy and custom serializers store them
(text, ``!!binary``, ``{'string': ...}``, base64, a list, a parsed JSON body), and their
Content-Encoding removed (gzip, deflate, br, zstd) within the import's budget."""

from __future__ import annotations

import base64
import binascii
import json
import zlib
from collections.abc import Callable
from typing import Any

from ...store.cassette import Headers
from .checks import _BODY, _Budget, _Fields, _Invalid


def _bytes(value: Any, where: str, fields: _Fields) -> bytes | None:
    """A vcrpy body: None, str, bytes (YAML !!binary), ``{'string': ...}``, base64, or a list."""
    if isinstance(value, dict):
        fields.unknown(value, _BODY, where)
        if "string" in value:
            value, where = value["string"], f"{where}.string"
            if isinstance(value, dict):
                raise _Invalid(f"{where} must be text or bytes, got a mapping")
        elif "base64_string" in value:
            try:
                return base64.b64decode(str(value["base64_string"]), validate=True)
            except (binascii.Error, ValueError) as exc:
                raise _Invalid(f"{where}.base64_string is not valid base64 ({exc})") from None
        else:
            return None
    if value is None:
        return None
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8", "surrogatepass")
    if isinstance(value, (list, tuple)) and all(isinstance(v, (bytes, str)) for v in value):
        return b"".join(v if isinstance(v, bytes) else v.encode("utf-8", "surrogatepass") for v in value)
    raise _Invalid(f"{where} is neither a string, bytes nor {{'string': ...}}: {type(value).__name__}")


def _body(item: dict[str, Any], body_key: str, where: str, fields: _Fields) -> tuple[bytes | None, bool]:
    """The body of a vcrpy request or response, and whether it came from a parsed JSON body.

    Custom serializers (pydantic-ai's, for one) store a JSON body parsed, under ``parsed_body``,
    and give vcrpy ``json.dumps(parsed_body)`` back: the same bytes are made here."""
    if "parsed_body" not in item:
        return _bytes(item.get(body_key), f"{where}.{body_key}", fields), False
    if item.get(body_key) not in (None, "", {}):
        raise _Invalid(
            f"{where} has both {body_key} and parsed_body: which one the serializer "
            "served is unknown; remove one"
        )
    try:
        return json.dumps(item["parsed_body"]).encode("utf-8", "surrogatepass"), True
    except (TypeError, ValueError) as exc:
        raise _Invalid(f"{where}.parsed_body is not JSON data ({exc})") from None


_SLICE = 1 << 14  # compressed input fed at a time, so a bomb is caught after a bounded output


def _decompressor(encoding: str, limit: int) -> Callable[[bytes], bytes] | None:
    """A decoder for one content coding, lenient like a streaming client (a stream cut short,
    without its gzip trailer, decodes as far as it goes); past ``limit`` bytes of output it
    raises OverflowError."""
    if encoding in ("gzip", "x-gzip"):
        return lambda b: _inflate(b, 16 + zlib.MAX_WBITS, limit)
    if encoding == "deflate":

        def deflate(b: bytes) -> bytes:
            try:
                return _inflate(b, zlib.MAX_WBITS, limit)
            except zlib.error:
                return _inflate(b, -zlib.MAX_WBITS, limit)  # raw deflate, as some servers send

        return deflate
    if encoding == "br":
        try:
            import brotli
        except ImportError:
            return None

        def unbrotli(b: bytes) -> bytes:
            out = brotli.Decompressor().process(b, output_buffer_limit=limit + 1)
            if len(out) > limit:
                raise OverflowError
            return bytes(out)

        return unbrotli
    if encoding == "zstd":
        try:
            import zstandard
        except ImportError:
            return None

        def unzstd(b: bytes) -> bytes:
            d, out = zstandard.ZstdDecompressor().decompressobj(), bytearray()
            for i in range(0, len(b), _SLICE):
                out += d.decompress(b[i : i + _SLICE])
                if len(out) > limit:
                    raise OverflowError
                if d.eof:
                    break
            return bytes(out)

        return unzstd
    return None


def _inflate(data: bytes, wbits: int, limit: int) -> bytes:
    """zlib output 1 MB at a time, so a bomb stops at ``limit`` without a larger buffer."""
    d, pieces, size = zlib.decompressobj(wbits), [], 0
    while data and not d.eof:
        piece = d.decompress(data, _PIECE)
        data = d.unconsumed_tail
        size += len(piece)
        if size > limit:
            raise OverflowError
        pieces.append(piece)
    pieces.append(d.flush())
    return b"".join(pieces)


_PIECE = 1 << 20
_UNLIMITED = 1 << 62


def _decode_body(body: bytes, headers: Headers, budget: _Budget) -> tuple[bytes, Headers]:
    """Remove the Content-Encoding (gzip/deflate, br/zstd when their modules are installed):
    every layer, or as many as the stored body still has."""
    codings = [c.strip().lower() for k, v in headers if k == "content-encoding" for c in v.split(",")]
    codings = [c for c in codings if c and c != "identity"]
    if not codings:
        return body, headers
    for coding in reversed(codings):
        if _is_utf8(body):  # no compressed stream is valid UTF-8: vcrpy's requests and aiohttp stubs
            break  # store what the client decoded (aiohttp: one layer of "gzip, gzip") under the header
        decompress = _decompressor(coding, _UNLIMITED if budget.left is None else max(budget.left, 0))
        if decompress is None:
            module = {"br": "brotli", "zstd": "zstandard"}.get(coding)
            raise _Invalid(
                f"response.body is {coding}-encoded and "
                + (
                    f"this Python cannot decode it (install {module})"
                    if module
                    else "ssemock decodes gzip, deflate, br and zstd only"
                )
            )
        try:
            body = decompress(body)
        except OverflowError:
            raise budget.exceeded(f"response.body ({coding})") from None
        except Exception as exc:  # zlib.error, brotli.error, zstandard.ZstdError: all say "does not decode"
            raise _Invalid(f"the response body does not decode as {coding} ({exc})") from None
    return body, [(k, v) for k, v in headers if k != "content-encoding"]


def _is_utf8(body: bytes) -> bool:
    try:
        body.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True
