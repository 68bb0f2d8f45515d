"""The model to cassette JSON, deterministic: fixed key order, 2-space indent, a trailing
newline, each response body laid out a window at a time (one string per event or line; base64
when it is not UTF-8) and each chunk map a ``[t_ms, end]`` pair a line. What would not load is
never written."""

from __future__ import annotations

import base64
import codecs
import itertools
import math
import operator
import os
import secrets
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple

import orjson

from ..framing.accelerator import chunk_map as _c_chunk_map
from .group import dump_group, parse_group
from .grpc import dump_grpc
from .layout import laid_out, pieces
from .model import GRPC_VERSION, VERSION, WEBSOCKET_VERSION, CassetteError, Headers, Interaction, Response
from .parsing import _chunk_map_from_json, _chunk_map_loads, _Invalid, _json_in_layout
from .stdio import StdioSession, dump_stdio
from .websocket import dump_websocket, lines_laid_out

__all__ = ["write_document"]


def write_document(
    interactions: Sequence[Interaction],
    path: str | os.PathLike[str] | None,
    write: Callable[[bytes | memoryview], object],
    restart: Callable[[], object],
    stdio: Sequence[StdioSession] = (),
) -> None:
    """The JSON of [`dumps`][ssemock.Cassette.dumps], handed out in parts: orjson lays out everything but the
    response bodies, which are laid out a window at a time (saving a large recording needs
    no second copy of its body), and the chunk maps, a pair a line (orjson's indent would
    give each number a line: four lines a chunk). ``path`` names the file in errors; ``stdio``
    (the child processes recorded, `ssemock.store.stdio`) follows the interactions, a line a line.

    A body is taken for text when its first bytes are UTF-8, and the rest is checked as it is
    laid out (no pass of its own); if it is not, ``restart()`` drops what was written and the
    document is written again with that body in base64, and every body checked first."""
    binary: set[int] = set()
    while True:
        try:
            return _write_once(interactions, path, write, binary, stdio)
        except _NotText as exc:
            binary.add(exc.index)
            restart()


_BATCH = 256  # interactions laid out at a time: the layout of all of them is never in memory at once


def _write_once(
    interactions: Sequence[Interaction],
    path: str | os.PathLike[str] | None,
    write: Callable[[bytes | memoryview], object],
    binary: set[int],
    stdio: Sequence[StdioSession],
) -> None:
    version = (
        GRPC_VERSION
        if any(x.grpc is not None for x in interactions)
        else WEBSOCKET_VERSION
        if stdio or any(x.websocket is not None for x in interactions)
        else VERSION
    )
    document: dict[str, Any] = {"version": version, "interactions": [0] if interactions else []}
    lines: dict[bytes, list[Any]] = {}
    if stdio:
        document["stdio"] = []
        for k, session in enumerate(stdio):
            key = f"{_LINES}stdio:{k}"
            item, lines[orjson.dumps(key)] = dump_stdio(session, key)
            document["stdio"].append(item)
    head = orjson.dumps(document, option=_INDENT | orjson.OPT_APPEND_NEWLINE)
    if lines:
        head = lines_laid_out(head, lines)
    if not interactions:
        write(head)
        return
    before, after = head.split(b"\n    0\n", 1)
    write(before)
    for start in range(0, len(interactions), _BATCH):
        if start:
            write(b",")
        _write_batch(interactions, start, path, write, binary)
    write(b"\n" + after)


def _write_batch(
    interactions: Sequence[Interaction],
    start: int,
    path: str | os.PathLike[str] | None,
    write: Callable[[bytes | memoryview], object],
    binary: set[int],
) -> None:
    """Interactions ``start`` to ``start + _BATCH`` laid out as the items of the document's list
    (orjson's layout of the list, its brackets left out, four spaces in), with their bodies,
    chunk maps and WebSocket lines put in as they are written."""
    bodies, items, maps = [], [], []
    lines: dict[bytes, list[Any]] = {}  # a WebSocket session's or gRPC call's messages, wire: one a line
    for i in range(start, min(start + _BATCH, len(interactions))):
        x = interactions[i]
        # after a restart, every body is checked whole first: a second restart is never needed
        text = i not in binary and _utf8_prefix(x.response.body, None if binary else _TEXT_PREFIX)
        try:
            item = _interaction_to_json(x, lazy=True, text=text)
        except _Invalid as exc:  # never write a file that would not load
            raise CassetteError(f"refusing to save: {exc}", path=path, interaction=i) from None
        if text:
            bodies.append((i, x.response))
        maps.append(item["response"]["chunks"])
        item["response"]["chunks"] = _MAP
        if x.websocket is not None:
            item["websocket"], laid_apart = dump_websocket(x.websocket, f"{_LINES}{i}:")
            lines.update(laid_apart)
        if x.grpc is not None:
            try:
                item["grpc"], laid_apart = dump_grpc(x.grpc, f"{_LINES}{i}:")
            except ValueError as exc:
                raise CassetteError(f"refusing to save: {exc}", path=path, interaction=i) from None
            lines.update(laid_apart)
        items.append(item)
    # "[\n  {...},\n  {...}\n]" -> "\n    {...},\n    {...}": no JSON string holds a line break
    laid = orjson.dumps(items, option=_INDENT)[1:-2].replace(b"\n", b"\n  ")
    del items
    if lines:
        laid = lines_laid_out(laid, lines)
    parts = laid.split(_BODY_JSON)
    if len(parts) != len(bodies) + 1 or laid.count(_MAP_JSON) != len(maps):
        raise CassetteError("a header, URL or body holds one of ssemock's internal placeholders", path=path)
    pairs = iter(maps)
    _write_maps(parts[0], pairs, write)
    for before, (i, resp), after in zip(parts, bodies, parts[1:]):
        line = before[before.rfind(b"\n") + 1 :]
        nested = b"\n" + b" " * (len(line) - len(line.lstrip(b" ")))
        try:
            for part in laid_out(resp.body, resp.header("content-type"), nested):
                write(part)
        except UnicodeDecodeError:
            raise _NotText(i) from None
        _write_maps(after, pairs, write)


class _NotText(Exception):
    """The body of interaction ``index``, taken for UTF-8 text, is not: it is saved in base64."""

    def __init__(self, index: int) -> None:
        super().__init__(index)
        self.index = index


def _headers_to_json(headers: Headers) -> dict[str, str | list[str]]:
    out: dict[str, str | list[str]] = {}
    for k, v in sorted(headers, key=lambda kv: kv[0]):
        prev = out.get(k)
        out[k] = v if prev is None else [*([prev] if isinstance(prev, str) else prev), v]
    return out


_INDENT = orjson.OPT_INDENT_2
# stands for a text body while the rest is laid out: random per process, so no header, URL or
# body a cassette holds can be taken for it
_BODY = f"\x00ssemock:body:{secrets.token_hex(16)}\x00"
_BODY_JSON = orjson.dumps(_BODY)
_MAP = f"\x00ssemock:chunks:{secrets.token_hex(16)}\x00"  # stands for a chunk map, the same way
_MAP_JSON = orjson.dumps(_MAP)
_LINES = f"\x00ssemock:lines:{secrets.token_hex(16)}:"  # stands for a WebSocket session's messages


class _Recorded(NamedTuple):
    """A recorder's chunk map the accelerator found valid (`_chunks`): laid out by it in one
    pass where it is written (`_chunk_map_laid_out`)."""

    tenths: list[int]
    times: list[float]
    ends: list[int]
    size: int


_ChunkMap = list[tuple[Any, int]] | _Recorded


def _write_maps(
    text: bytes, maps: Iterator[_ChunkMap], write: Callable[[bytes | memoryview], object]
) -> None:
    """Write ``text`` (orjson's layout) with each chunk map placeholder in it replaced by the next
    map of ``maps``, laid out by `_chunk_map_laid_out` at the placeholder's indent."""
    segments = text.split(_MAP_JSON)
    write(segments[0])
    for before, after in zip(segments, segments[1:]):
        line = before[before.rfind(b"\n") + 1 :]
        write(_chunk_map_laid_out(next(maps), b"\n" + b" " * (len(line) - len(line.lstrip(b" ")))))
        write(after)


def _chunk_map_laid_out(pairs: _ChunkMap, nested: bytes) -> bytes:
    """``pairs`` as orjson's OPT_INDENT_2 would lay out the list at the depth where a line starts
    with ``nested``, but each pair on one line: ``[262.2, 304],``. Made in bulk: orjson writes the
    numbers (compact, so exactly as its indented layout writes them) and two ``bytes.replace`` calls
    lay them out; a number's JSON holds no comma. A recorder's map (`_Recorded`) is made by the
    accelerator, the same bytes."""
    if type(pairs) is _Recorded:
        assert _c_chunk_map is not None
        laid = _c_chunk_map(*pairs, nested)
        assert laid is not None, "a chunk map changed between its check and its write"
        return laid
    if not pairs:
        return b"[]"
    inner = orjson.dumps(pairs)[1:-1].replace(b",", b", ").replace(b"], [", b"]," + nested + b"  [")
    return b"[" + nested + b"  " + inner + nested + b"]"


_CHECK_BATCH = 1 << 20  # bytes of a body checked for UTF-8 at a time
_TEXT_PREFIX = 4096  # bytes of a body checked for UTF-8 before it is taken for text


def _utf8_prefix(body: bytes, size: int | None) -> bool:
    """Whether the first ``size`` bytes of ``body`` (all of it: None) are UTF-8, checked 1 MB at
    a time (no copy of the body); a multi-byte character cut at ``size`` counts as UTF-8."""
    decode = codecs.getincrementaldecoder("utf-8")().decode
    view = memoryview(body)[:size]
    try:
        for i in range(0, len(view), _CHECK_BATCH):
            decode(view[i : i + _CHECK_BATCH])
        decode(b"", len(view) == len(body))
    except UnicodeDecodeError:
        return False
    return True


def _body_to_json(
    body: bytes, content_type: str | None, lazy: bool = False, text: bool = True
) -> dict[str, Any]:
    """``{"body": [pieces]}``, or ``{"body_base64": ...}`` for a body that is not UTF-8. With
    ``lazy``, ``{"body": _BODY}`` (laid out later) when ``text``, else base64.

    Pieces end at line breaks, so the body decodes exactly when every piece does."""
    if lazy and text:
        return {"body": _BODY}
    if not lazy:
        try:
            return {"body": list(pieces(body, content_type))}
        except UnicodeDecodeError:
            pass
    return {"body_base64": base64.b64encode(body).decode("ascii")}


def _interaction_to_json(x: Interaction, lazy: bool = False, text: bool = True) -> dict[str, Any]:
    req, resp = x.request, x.response
    request: dict[str, Any] = {"method": req.method, "url": req.url, "headers": _headers_to_json(req.headers)}
    parsed = req.json()
    if parsed is not None and _json_in_layout(parsed) is not None:
        request["json"] = parsed
    elif req.body is not None:  # not JSON, or JSON too deep to lay out: kept as text, never lost
        try:
            request["body"] = req.body.decode("utf-8")
        except UnicodeDecodeError:
            request["body_base64"] = base64.b64encode(req.body).decode("ascii")
    response: dict[str, Any] = {"status": resp.status, "headers": _headers_to_json(resp.headers)}
    response.update(_body_to_json(resp.body, resp.header("content-type"), lazy, text))
    response["chunks"] = _chunks(resp, lazy)
    response["complete"] = resp.complete
    if resp.error is not None:
        response["error"] = resp.error
    out: dict[str, Any] = {"request": request, "response": response}
    if x.group is not None:
        out["group"] = group = dump_group(x.group)
        try:  # what loads: checked as loading does
            parse_group(group, None if x.websocket is None else len(x.websocket.messages))
        except ValueError as exc:
            raise _Invalid(str(exc)) from None
    return out


def _chunks(resp: Response, lazy: bool) -> _ChunkMap:
    """A response's chunk map, checked as loading checks it (what would not load raises
    `_Invalid`): with ``lazy`` (laid out as it is written, `_write_maps`), a recorder's, made of
    its tenths (`Response._tenths`), is checked by the accelerator, where it was built, and laid
    out by it when written; else the ``[t_ms, end]`` pairs, for orjson."""
    tenths = resp._tenths
    if (
        lazy
        and _c_chunk_map is not None
        and tenths is not None
        and _c_chunk_map(tenths, resp.times, resp.ends, len(resp.body), None) is not None
    ):
        return _Recorded(tenths, resp.times, resp.ends, len(resp.body))
    t_ms = _times_ms(resp.times, tenths)
    pairs = list(zip(t_ms, resp.ends))  # orjson writes a tuple as a list
    if len(resp.times) != len(resp.ends):
        raise _Invalid(f"response has {len(resp.ends)} chunk ends but {len(resp.times)} times")
    if not (
        t_ms and _chunk_map_loads(t_ms, resp.ends, len(resp.body))
    ):  # what loads: checked as loading does
        _chunk_map_from_json(list(map(list, pairs)), len(resp.body))
    return pairs


_EXACT = 2.0**50  # below this, a float's ulp is far under 0.5, so y.5 is exact and rounding y cannot skip it


def _times_ms(times: Sequence[float], tenths: list[int] | None = None) -> list[Any]:
    """Arrival times (seconds) in milliseconds rounded to 0.1: ``round(t * 1000, 1)`` each, in bulk.

    With the recorder's ``tenths`` (`_from_tenths`) that still give ``times``: those / 10."""
    if tenths is not None:
        out = _from_tenths(times, tenths)
        if out is not None:
            return out
    return _rounded(times)


def _from_tenths(times: Sequence[float], tenths: list[int]) -> list[float] | None:
    """``round(t * 1000, 1)`` for each time, as ``k / 10``, when ``times`` are floats and each is
    ``k / 10_000`` for the integer ``k`` of ``tenths`` at its place (0 <= k < `_EXACT`); else None.
    Four C-level passes, where rounding takes ten: ``t * 1000`` is ``k / 10`` times (1 + e),
    ``|e|`` < 3e-16, so ``10 t * 1000`` is within ``k * 3e-16 < 0.5`` of ``k``, the integer
    ``round`` keeps, and ``k / 10`` is the double nearest ``k / 10``, the one ``round`` returns."""
    if not tenths or list(map(operator.truediv, tenths, itertools.repeat(10_000))) != times:
        return None
    low = min(tenths)
    if not (set(map(type, times)) == {float} and 0 <= low and max(tenths) < _EXACT):
        return None
    out = list(map(operator.truediv, tenths, itertools.repeat(10)))
    return out if low else list(map(math.copysign, out, times))  # a time of -0.0 is written -0.0


def _rounded(times: Sequence[float]) -> list[Any]:
    """`_times_ms` without tenths.

    ``round(x, 1)`` is the double nearest the decimal ``d / 10``, ``d`` the integer nearest
    ``10 x`` exactly (never a tie: a binary fraction times 10 is never an odd multiple of 0.5).
    ``round(y)`` for the float ``y = x * 10`` is that ``d`` unless ``y`` landed exactly on a half,
    and ``d / 10`` (int true division) is correctly rounded; so anything but floats from 0 to
    `_EXACT` with no ``y`` on a half is left to ``round(x, 1)`` itself."""
    repeat = itertools.repeat
    if not times or set(map(type, times)) != {float}:
        return [round(t * 1000, 1) for t in times]
    y = list(map(operator.mul, map(operator.mul, times, repeat(1000)), repeat(10)))
    low = min(y)
    if not (0 <= low and sum(y) < _EXACT):  # NaN and inf make the sum NaN or inf
        return [round(t * 1000, 1) for t in times]
    d = list(map(round, y))
    off = list(map(operator.sub, y, d))
    if 0.5 in off or -0.5 in off:
        return [round(t * 1000, 1) for t in times]
    out = list(map(operator.truediv, d, repeat(10)))
    return out if low else list(map(math.copysign, out, y))  # round(-0.0, 1) is -0.0
