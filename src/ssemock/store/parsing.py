"""Cassette JSON to the model: the document's version and its interactions, and each
interaction's request, headers, body and chunk map checked as it is built; every problem is a
CassetteError naming the file and the interaction."""

from __future__ import annotations

import base64
import binascii
import math
import operator
import os
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

import orjson

from .group import parse_group
from .grpc import parse_grpc
from .header_text import header_text_problem
from .model import (
    GRPC_VERSION,
    MAX_DEPTH,
    MAX_T_MS,
    VERSION,
    WEBSOCKET_VERSION,
    CassetteError,
    Headers,
    Interaction,
    Request,
    Response,
)
from .size_guard import check_size
from .stdio import StdioSession, parse_stdio
from .websocket import parse_websocket

__all__ = ["parse_interaction", "read_document", "read_parts", "stdio_of"]


def read_document(raw: bytes | str, *, path: str | os.PathLike[str] | None = None) -> list[Any]:
    """The raw interaction list of cassette JSON, after checking the JSON and its version."""
    return read_parts(raw, path=path)[0]


def read_parts(
    raw: bytes | str, *, path: str | os.PathLike[str] | None = None
) -> tuple[list[Any], list[StdioSession]]:
    """The raw interaction list of cassette JSON and its child processes (`stdio_of`)."""
    check_size(raw, path=path)
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise CassetteError(f"not valid JSON ({exc})", path=path) from exc
    return _interactions(data, path), stdio_of(data, path)


def stdio_of(data: dict[str, Any], path: str | os.PathLike[str] | None) -> list[StdioSession]:
    """The child processes a cassette document recorded (its ``stdio`` list, `ssemock.store.stdio`);
    CassetteError naming the file, the session, its line and field."""
    raw = data.get("stdio", [])
    if not isinstance(raw, list):
        raise CassetteError("'stdio' must be a list of child processes", path=path)
    try:
        return [parse_stdio(item, k) for k, item in enumerate(raw)]
    except ValueError as exc:
        raise CassetteError(str(exc), path=path) from None


def _interactions(data: Any, path: str | os.PathLike[str] | None) -> list[Any]:
    if not isinstance(data, dict):
        raise CassetteError("top level must be an object", path=path)
    version = data.get("version")
    if type(version) is not int or version not in (
        VERSION,
        WEBSOCKET_VERSION,
        GRPC_VERSION,
    ):  # true, 1.0 are not 1
        raise CassetteError(
            f"unknown cassette version {version!r} (this ssemock reads {VERSION}, {WEBSOCKET_VERSION} "
            f"and {GRPC_VERSION})",
            path=path,
        )
    items = data.get("interactions")
    if not isinstance(items, list):
        raise CassetteError("'interactions' must be a list", path=path)
    return items


def parse_interaction(
    item: Any, *, path: str | os.PathLike[str] | None = None, index: int | None = None, consume: bool = False
) -> Interaction:
    """One interaction from its JSON form; CassetteError naming the file and interaction.

    ``consume=True`` empties the body pieces of ``item`` as it goes (less memory for a loader
    that owns the parsed document)."""
    try:
        return _interaction_from_json(item, consume)
    except _Invalid as exc:
        raise CassetteError(str(exc), path=path, interaction=index) from None


class _Invalid(Exception):
    """A problem inside one interaction; turned into CassetteError with file and index."""


def _headers_from_json(value: Any, where: str) -> Headers:
    if value is None:
        return []
    if not isinstance(value, dict):
        raise _Invalid(f"{where} must be an object of name -> value")
    out: Headers = []
    for k, v in value.items():
        for one in v if isinstance(v, list) else [v]:
            if not isinstance(one, str):
                raise _Invalid(f"{where}[{k!r}] must be a string or a list of strings")
            _check_header_text(k, one, where)
            out.append((k.lower(), one))
    return out


def _check_header_text(name: str, value: str, where: str) -> None:
    """A header whose name or value would break the line it is written on: refused."""
    for part, text in (("name", name), ("value", value)):
        problem = header_text_problem(text)
        if problem is not None:
            raise _Invalid(
                f"{where}[{name[:40]!r}]: the header's {part} {problem}, which no HTTP message may "
                "carry (it would end the header line): remove it or the header"
            )


def _body_from_json(obj: dict[str, Any], where: str, consume: bool = False) -> bytes:
    if "body_base64" in obj:
        text = obj["body_base64"]
        if not isinstance(text, str):
            raise _Invalid(f"{where}.body_base64 must be a string")
        try:
            return base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise _Invalid(f"{where}.body_base64 is not valid base64 ({exc})") from None
    pieces = obj.get("body", [])
    if isinstance(pieces, bytes):  # already read by _read_bodies_apart
        return pieces
    if isinstance(pieces, str):
        pieces = [pieces]
    if not isinstance(pieces, list) or not set(map(type, pieces)) <= {str}:
        raise _Invalid(f"{where}.body must be a list of strings")
    if not consume:
        return "".join(pieces).encode("utf-8")
    parts = []
    for i in range(0, len(pieces), 256):  # drop parsed pieces once encoded: peak ~2x the body, not 3x
        batch = pieces[i : i + 256]
        parts.append("".join(batch).encode("utf-8"))
        pieces[i : i + 256] = [""] * len(batch)
        del batch
    return b"".join(parts)


def _json_in_layout(value: Any) -> bytes | None:
    """``value`` as compact JSON, or None when it cannot sit where a cassette keeps JSON: four
    levels down (document, interactions, item, request/response), and orjson writes 254 levels
    at most, which leaves `MAX_DEPTH`."""
    try:
        return orjson.dumps([[[[value]]]])[4:-4]
    except TypeError:  # orjson: "Recursion limit reached"
        return None


def _interaction_from_json(item: Any, consume: bool = False) -> Interaction:
    if not isinstance(item, dict):
        raise _Invalid("must be an object with 'request' and 'response'")
    req, resp = item.get("request"), item.get("response")
    if not isinstance(req, dict):
        raise _Invalid("missing or malformed 'request'")
    if not isinstance(resp, dict):
        raise _Invalid("missing or malformed 'response'")
    method, url = req.get("method"), req.get("url")
    if not isinstance(method, str) or not method:
        raise _Invalid("request.method is missing or not a string")
    if not isinstance(url, str) or not url:
        raise _Invalid("request.url is missing or not a string")
    body: bytes | None = None
    if "json" in req:
        body = _json_in_layout(req["json"])
        if body is None:
            raise _Invalid(
                f"request.json is nested deeper than a cassette keeps JSON ({MAX_DEPTH} levels): "
                "store the body as text in request.body instead"
            )
    elif "body" in req or "body_base64" in req:
        body = _body_from_json(req, "request")
    request = Request(method.upper(), url, _headers_from_json(req.get("headers"), "request.headers"), body)

    status = resp.get("status")
    if not isinstance(status, int) or isinstance(status, bool) or not 100 <= status <= 599:
        raise _Invalid(f"response.status must be an HTTP status code, got {status!r}")
    if "body" not in resp and "body_base64" not in resp:
        raise _Invalid("response has no 'body' (or 'body_base64')")
    rbody = _body_from_json(resp, "response", consume)
    ends, times = _chunk_map_from_json(resp.get("chunks"), len(rbody))
    complete = resp.get("complete", True)
    if not isinstance(complete, bool):
        raise _Invalid("response.complete must be true or false")
    error = resp.get("error")
    if error is not None and not (isinstance(error, dict) and isinstance(error.get("type"), str)):
        raise _Invalid("response.error must be an object with a 'type' string")
    if error is not None and _json_in_layout(error) is None:
        raise _Invalid(f"response.error is nested deeper than a cassette keeps JSON ({MAX_DEPTH} levels)")
    headers = _headers_from_json(resp.get("headers"), "response.headers")
    websocket = None
    if "websocket" in item:
        try:
            websocket = parse_websocket(item["websocket"])
        except ValueError as exc:
            raise _Invalid(str(exc)) from None
    group = None
    if "group" in item:
        try:
            group = parse_group(item["group"], None if websocket is None else len(websocket.messages))
        except ValueError as exc:
            raise _Invalid(str(exc)) from None
    grpc = None
    if "grpc" in item:
        if websocket is not None:
            raise _Invalid("an interaction is a WebSocket session or a gRPC call, not both")
        try:
            grpc = parse_grpc(item["grpc"], urlsplit(url).path)
        except ValueError as exc:
            raise _Invalid(str(exc)) from None
    response = Response(status, headers, rbody, ends, times, complete, error)
    return Interaction(request, response, websocket, group, grpc)


def _chunk_map_loads(t_ms: Sequence[Any], offsets: Sequence[Any], size: int) -> bool:
    """Whether a non-empty chunk map is valid as it stands, checked in bulk (no Python loop):
    integer offsets rising to ``size``, numeric times non-decreasing from 0 to MAX_T_MS."""
    return (
        set(map(type, offsets)) == {int}
        and set(map(type, t_ms)) <= {int, float}
        and all(map(operator.lt, [0, *offsets], offsets))
        and all(map(operator.le, [0, *t_ms], t_ms))
        and t_ms[-1] <= MAX_T_MS
        and offsets[-1] == size
    )


_FIRST, _SECOND = operator.itemgetter(0), operator.itemgetter(1)


def _chunk_map_from_json(value: Any, size: int) -> tuple[list[int], list[float]]:
    if value is None:
        return ([size], [0.0]) if size else ([], [])
    if not isinstance(value, list):
        raise _Invalid("response.chunks must be a list of [t_ms, end_offset] pairs")
    if value and set(map(type, value)) == {list} and set(map(len, value)) == {2}:  # the common case, in bulk
        t_ms, offsets = list(map(_FIRST, value)), list(map(_SECOND, value))
        if _chunk_map_loads(t_ms, offsets, size):
            return offsets, [t / 1000 for t in t_ms]
    ends: list[int] = []
    times: list[float] = []
    prev_end, prev_t = 0, 0.0
    for k, pair in enumerate(value):
        if (
            not isinstance(pair, list)
            or len(pair) != 2
            or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in pair)
            or not isinstance(pair[1], int)
        ):
            raise _Invalid(
                f"response.chunks[{k}] must be [t_ms, end_offset] with an integer offset, got {pair!r}"
            )
        t_ms, end = pair
        if end <= prev_end:
            raise _Invalid(
                f"response.chunks[{k}]: end offset {end} does not increase (previous {prev_end})"
                " — run `ssemock fix` to rebuild the boundary map"
            )
        if end > size:
            raise _Invalid(
                f"response.chunks[{k}]: end offset {end} is past the body's {size} bytes"
                " — the body was edited; run `ssemock fix` to rebuild the boundary map"
            )
        if not (math.isfinite(t_ms) and 0 <= t_ms <= MAX_T_MS):
            raise _Invalid(
                f"response.chunks[{k}]: time {t_ms!r} ms is out of range: a chunk arrives 0 to "
                f"{MAX_T_MS:,} ms (a day) after the request"
            )
        if t_ms < prev_t:
            raise _Invalid(f"response.chunks[{k}]: time {t_ms} ms goes back (previous {prev_t} ms)")
        ends.append(end)
        times.append(t_ms / 1000)
        prev_end, prev_t = end, t_ms
    if prev_end != size:
        raise _Invalid(
            f"response.chunks: the last end offset is {prev_end} but the body has {size} bytes"
            " — the body was edited; run `ssemock fix` to rebuild the boundary map"
        )
    return ends, times
