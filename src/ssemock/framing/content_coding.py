"""A body's Content-Encoding undone as it streams in, bounded: what a recording stores (and its
secret scan reads) is the decoded body, and a small compressed body that inflates without end
(a "bomb") must not fill the memory. Each layer is inflated a bounded piece at a time, and past
the limit the decoder raises `InflateLimit`, having made at most the limit and one piece.

gzip and deflate (zlib), zstd (``zstandard``) and br (``brotli``) are undone; ``identity`` is no
layer. Brotli 1.2 and later bound each call's output; an older Brotli (mitmproxy 11's pin)
cannot, so it is fed a byte at a time: one byte ends at most two meta-blocks, 16 MiB of output
each (a compressed byte costs about a microsecond then). This module imports no client library
(the mitmproxy addon uses it)."""

from __future__ import annotations

import importlib
import zlib
from collections.abc import Callable
from typing import Any

__all__ = ["InflateLimit", "decoder"]

_PIECE = 1 << 20  # the most one inflate step makes before the limit is checked again

Decode = Callable[[bytes], bytes]


class InflateLimit(OverflowError):
    """The decoded body passed the decoder's limit: ``kept`` is what the call decoded up to it
    (the decoder makes nothing more)."""

    def __init__(self, message: str, kept: bytes = b"") -> None:
        super().__init__(message)
        self.kept = kept


def decoder(encoding: str, limit: int) -> Decode | None:
    """A streaming decoder for a ``Content-Encoding`` value (``gzip, br``: the last listed is
    undone first): each call takes the next piece of the encoded body and returns what it
    decodes to; past ``limit`` decoded bytes in all it raises `InflateLimit` (holding the
    decoded bytes up to the limit). None when there is no layer, or one it cannot undo (the
    body is then kept as it came)."""
    layers = [e.strip().lower() for e in encoding.split(",") if e.strip().lower() not in ("", "identity")]
    steps = [_layer(name, limit) for name in reversed(layers)]
    if not steps or any(step is None for step in steps):
        return None
    if len(steps) == 1:
        return steps[0]

    def stacked(data: bytes) -> bytes:
        for i, step in enumerate(steps):
            try:
                data = step(data) if data else data  # type: ignore[misc]
            except InflateLimit as exc:  # what the later layers make of the last output
                raise InflateLimit(str(exc), _through(steps[i + 1 :], exc.kept)) from None  # type: ignore[arg-type]
        return data

    return stacked


def _through(steps: list[Decode], data: bytes) -> bytes:
    for step in steps:
        try:
            data = step(data) if data else data
        except InflateLimit as exc:
            return exc.kept
    return data


def _layer(name: str, limit: int) -> Decode | None:
    if name in ("gzip", "x-gzip"):
        return _Zlib(16 + zlib.MAX_WBITS, limit)
    if name == "deflate":
        return _Zlib(zlib.MAX_WBITS, limit)
    if name == "zstd":
        zstandard = _optional("zstandard")
        return None if zstandard is None else _Zstd(zstandard, limit)
    if name == "br":
        brotli = _optional("brotli")
        return None if brotli is None else _Brotli(brotli.Decompressor(), limit)
    return None


def _optional(module: str) -> Any:
    """The module called ``module``, or None when it is not installed (its coding is then kept)."""
    try:
        return importlib.import_module(module)
    except ImportError:
        return None


class _Counted:
    """The decoded size so far, checked against the limit as each piece is made."""

    def __init__(self, limit: int) -> None:
        self.limit, self.size = limit, 0

    def keep(self, piece: bytes, out: list[bytes]) -> None:
        """``piece`` appended to this call's ``out``; past the limit, `InflateLimit` with
        ``out`` and the piece up to the limit."""
        room = max(self.limit - self.size, 0)  # (0 once past it: a call after the limit keeps nothing)
        self.size += len(piece)
        if len(piece) > room:
            raise InflateLimit(f"the decoded body passed {self.limit} bytes", b"".join(out) + piece[:room])
        out.append(piece)


class _Zlib(_Counted):
    def __init__(self, wbits: int, limit: int) -> None:
        super().__init__(limit)
        self._z = zlib.decompressobj(wbits)

    def __call__(self, data: bytes) -> bytes:
        out: list[bytes] = []
        while data and not self._z.eof:
            self.keep(self._z.decompress(data, _PIECE), out)
            data = self._z.unconsumed_tail
        return b"".join(out)


class _Zstd(_Counted):
    def __init__(self, zstandard: Any, limit: int) -> None:
        super().__init__(limit)
        self._out: list[bytes] = []
        # the decompressor writes its output here a write_size piece at a time: counted as it comes
        self._writer = zstandard.ZstdDecompressor().stream_writer(self, write_size=_PIECE)

    def write(self, piece: bytes) -> int:
        self.keep(bytes(piece), self._out)
        return len(piece)

    def __call__(self, data: bytes) -> bytes:
        try:
            self._writer.write(data)
            return b"".join(self._out)
        finally:
            self._out = []


class _Brotli(_Counted):
    def __init__(self, decompressor: Any, limit: int) -> None:
        super().__init__(limit)
        self._d = decompressor
        self._bounded = hasattr(decompressor, "can_accept_more_data")  # Brotli 1.2+

    def __call__(self, data: bytes) -> bytes:
        out: list[bytes] = []
        if not self._bounded:
            for at in range(len(data)):
                self.keep(self._d.process(data[at : at + 1]), out)
            return b"".join(out)
        self.keep(self._d.process(data, output_buffer_limit=_PIECE), out)
        while not self._d.is_finished() and not self._d.can_accept_more_data():
            self.keep(self._d.process(b"", output_buffer_limit=_PIECE), out)
        return b"".join(out)
