"""``ssemock import-har`` and ``ssemock export-har``: trade recordings with the tools people have.

HAR 1.2 (browsers' DevTools, Playwright's ``recordHar``, mitmproxy's ``savehar``) keeps one body
per response: no chunk boundaries, no per-chunk times. An imported response is one chunk,
arriving at the entry's end (``time``); a WebSocket entry's ``_webSocketMessages`` (``type``
send/receive, ``time`` in epoch seconds, ``opcode`` 1 text / 2 binary, ``data``) become the
session's messages, timed from the entry's ``startedDateTime``; HAR holds no close frame, so the
session's close is unknown (1006). Both notes are returned with the cassette.

An exported cassette keeps what HAR can hold and says what it drops: chunk boundaries and
per-chunk times (kept for ssemock itself in the ``_ssemockChunks`` extension of each entry,
which other tools ignore and `import_har` reads back), a WebSocket session's frame map
(fragments, pings, pongs), its received wire chunks and its close code and reason.

Every imported request and response goes through the recording's redaction rules, and the
cassette through the secret scan when it is saved, as every write is.
"""

from __future__ import annotations

import base64
import datetime
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from ..redaction.keep import masked_copy
from ..redaction.rules import REDACTED, redact_request, redact_response
from ..store.cassette import Cassette, CassetteError, Interaction, Request, Response
from ..store.websocket import Close, Message, WebSocket

__all__ = ["HarError", "export_har", "import_har"]

_BASE = datetime.datetime(2000, 1, 1, tzinfo=datetime.UTC)  # exported entries' start: no wall time is kept
_NOT_KEPT = frozenset({"content-length", "content-encoding", "transfer-encoding", "connection", "keep-alive"})


class HarError(CassetteError):
    """A HAR file ssemock cannot read: the message names the file, the entry and the field."""


def _field(obj: Any, key: str, kind: type | tuple[type, ...], where: str, *, default: Any = ...) -> Any:
    value = obj.get(key, default) if isinstance(obj, dict) else default
    if value is ...:
        raise HarError(f"{where}: {key} is missing")
    if value is not default and not isinstance(value, kind):
        raise HarError(
            f"{where}.{key}: expected {getattr(kind, '__name__', kind)}, got {type(value).__name__}"
        )
    return value


def _headers(obj: Any, where: str, *, response: bool) -> list[tuple[str, str]]:
    out = []
    for k, h in enumerate(_field(obj, "headers", list, where, default=[])):
        name = _field(h, "name", str, f"{where}.headers[{k}]").lower()
        value = _field(h, "value", str, f"{where}.headers[{k}]")
        if name.startswith(":") or (
            response and name in _NOT_KEPT
        ):  # HTTP/2 pseudo-headers; HAR bodies are decoded
            continue
        out.append((name, value))
    return out


def _started(entry: Any, where: str) -> float:
    text = _field(entry, "startedDateTime", str, where, default="")
    if not text:
        return 0.0
    try:
        return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError as exc:
        raise HarError(f"{where}.startedDateTime: {text!r} is not an ISO 8601 date ({exc})") from exc


def _content(response: Any, where: str) -> bytes:
    content = _field(response, "content", dict, where, default={})
    text: str = _field(content, "text", str, f"{where}.content", default="")
    if content.get("encoding") == "base64":
        try:
            decoded: bytes = base64.b64decode(text, validate=True)
        except ValueError as exc:
            raise HarError(f"{where}.content.text: not base64 although encoding says so ({exc})") from exc
        return decoded
    return text.encode("utf-8")


def _websocket(entry: Any, where: str, started: float) -> WebSocket:
    messages = []
    for k, m in enumerate(entry["_webSocketMessages"]):
        at = f"{where}._webSocketMessages[{k}]"
        kind = _field(m, "type", str, at)
        if kind not in ("send", "receive"):
            raise HarError(f"{at}.type: {kind!r} is neither 'send' nor 'receive'")
        opcode = _field(m, "opcode", int, at, default=1)
        data = _field(m, "data", str, at, default="")
        t = _field(m, "time", (int, float), at, default=started)
        if opcode == 1:
            payload: str | bytes = data
        elif opcode == 2:
            try:
                payload = base64.b64decode(data, validate=True)
            except ValueError as exc:
                raise HarError(f"{at}.data: a binary message (opcode 2) is base64 in HAR ({exc})") from exc
        else:
            continue  # control frames: HAR writers keep none, ssemock's frame map is not in HAR
        direction = "send" if kind == "send" else "recv"
        messages.append(
            Message(
                direction,
                round(max(0.0, float(t) - started), 4),
                "text" if opcode == 1 else "binary",
                payload,
            )
        )
    return WebSocket(messages=messages, close=Close())


def _chunks(entry: Any, body: bytes, where: str) -> tuple[list[int], list[float], bool]:
    """The chunk map: ssemock's own extension when present, else one chunk at the entry's end."""
    kept = entry.get("_ssemockChunks")
    if isinstance(kept, dict):
        ends, times = kept.get("ends"), kept.get("times")
        if (
            isinstance(ends, list)
            and isinstance(times, list)
            and len(ends) == len(times)
            and all(isinstance(e, int) for e in ends)
            and ends == sorted(ends)
            and (not ends or ends[-1] == len(body))
        ):
            return ends, [float(t) for t in times], True
        raise HarError(f"{where}._ssemockChunks: its ends do not cut this body (edited by hand?): remove it")
    total = _field(entry, "time", (int, float), where, default=0)
    return ([len(body)], [round(max(0.0, float(total)) / 1000, 4)], False) if body else ([], [], False)


def import_har(path: str | os.PathLike[str]) -> tuple[Cassette, list[str]]:
    """The HAR file at ``path`` as a cassette (redacted, not yet saved), and what HAR could not
    hold, one note per kind of loss."""
    where = str(path)
    try:
        doc = orjson.loads(Path(path).read_bytes())
    except OSError as exc:
        raise HarError(f"{where}: {exc.strerror or exc}") from exc
    except orjson.JSONDecodeError as exc:
        raise HarError(f"{where}: not JSON ({exc})") from exc
    log = _field(doc, "log", dict, where)
    entries = _field(log, "entries", list, f"{where}: log")
    interactions, one_chunk, sockets = [], 0, 0
    for i, entry in enumerate(entries):
        at = f"{where}: log.entries[{i}]"
        req, resp = _field(entry, "request", dict, at), _field(entry, "response", dict, at)
        post = _field(req, "postData", dict, f"{at}.request", default={})
        body = _field(post, "text", str, f"{at}.request.postData", default="").encode("utf-8")
        method = _field(req, "method", str, f"{at}.request").upper()
        request = Request(
            method,
            _field(req, "url", str, f"{at}.request"),
            _headers(req, f"{at}.request", response=False),
            body if body or method not in ("GET", "HEAD") else None,
        )
        status = _field(resp, "status", int, f"{at}.response")
        started = _started(entry, at)
        websocket: WebSocket | None = None
        ends: list[int]
        times: list[float]
        if isinstance(entry.get("_webSocketMessages"), list):
            websocket, content, sockets = _websocket(entry, at, started), b"", sockets + 1
            ends, times, kept = [], [], True
        else:
            content = _content(resp, f"{at}.response")
            ends, times, kept = _chunks(entry, content, at)
            one_chunk += not kept and bool(content)
        response = Response(
            status or 0, _headers(resp, f"{at}.response", response=True), content, ends, times
        )
        response.complete = status != 0  # a browser writes 0 for a request that got no answer
        interactions.append(Interaction(redact_request(request), redact_response(response), websocket))
    notes = []
    if one_chunk:
        notes.append(
            f"{one_chunk} response(s): HAR keeps one body, no chunk boundaries and no per-chunk times: "
            "each is one chunk arriving at the entry's end (replay re-chunks it as you ask)"
        )
    if sockets:
        notes.append(
            f"{sockets} WebSocket session(s): HAR keeps no close frame (code, reason, who closed), no "
            "fragments or pings, no wire chunks: the close is unknown (1006), one frame per message"
        )
    return Cassette(interactions), notes


def _iso(t: float) -> str:
    return (_BASE + datetime.timedelta(seconds=t)).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _har_headers(headers: list[tuple[str, str]]) -> list[dict[str, str]]:
    return [{"name": k, "value": v} for k, v in headers]


def _text(body: bytes) -> dict[str, Any]:
    try:
        return {"text": body.decode("utf-8")}
    except UnicodeDecodeError:
        return {"text": base64.b64encode(body).decode("ascii"), "encoding": "base64"}


def _entries(cassette: Cassette, notes: dict[str, int]) -> Iterator[dict[str, Any]]:
    start = 0.0
    for x in cassette.interactions:
        req, resp = x.request, x.response
        last = resp.times[-1] if resp.times else 0.0
        entry: dict[str, Any] = {
            "startedDateTime": _iso(start),
            "time": round(last * 1000, 3),
            "request": {
                "method": req.method,
                "url": req.url,
                "httpVersion": "HTTP/1.1",
                "headers": _har_headers(req.headers),
                "queryString": [],
                "cookies": [],
                "headersSize": -1,
                "bodySize": len(req.body or b""),
            },
            "response": {
                "status": resp.status,
                "statusText": "",
                "httpVersion": "HTTP/1.1",
                "headers": _har_headers(resp.headers),
                "cookies": [],
                "content": {
                    "size": len(resp.body),
                    "mimeType": resp.header("content-type") or "",
                    **_text(resp.body),
                },
                "redirectURL": "",
                "headersSize": -1,
                "bodySize": len(resp.body),
            },
            "cache": {},
            "timings": {
                "send": 0,
                "wait": round((resp.times[0] if resp.times else 0.0) * 1000, 3),
                "receive": round((last - (resp.times[0] if resp.times else 0.0)) * 1000, 3),
            },
        }
        if req.body is not None:
            entry["request"]["postData"] = {
                "mimeType": next((v for k, v in req.headers if k == "content-type"), ""),
                **_text(req.body),
            }
        if resp.ends:
            notes["chunks"] += len(resp.ends) > 1
            entry["_ssemockChunks"] = {"ends": list(resp.ends), "times": list(resp.times)}
        ws = x.websocket
        if ws is not None:
            entry["_resourceType"] = "websocket"
            entry["_webSocketMessages"] = [
                {
                    "type": "send" if m.direction == "send" else "receive",
                    "time": round((_BASE.timestamp() + start + m.t), 4),
                    "opcode": 1 if m.type == "text" else 2,
                    "data": m.data if isinstance(m.data, str) else base64.b64encode(m.data).decode("ascii"),
                }
                for m in ws.messages
            ]
            notes["sockets"] += 1
            notes["frame_map"] += bool(ws.frame_map)
            notes["close"] += ws.close.by is not None
        start += max(last, ws.messages[-1].t if ws is not None and ws.messages else 0.0) + 0.001
        yield entry


def export_har(cassette: Cassette) -> tuple[dict[str, Any], list[str]]:
    """``cassette`` as a HAR 1.2 document, and what HAR cannot hold of it, one note per kind."""
    counts = {"chunks": 0, "sockets": 0, "frame_map": 0, "close": 0}
    cassette, masked, left = masked_copy(cassette.interactions, cassette.path)  # a file written unscanned
    if left:
        raise HarError(
            f"{cassette.path or 'the cassette'}: not exported, a secret masking cannot remove: {'; '.join(left)}"
        )
    entries = list(_entries(cassette, counts))
    har = {
        "log": {
            "version": "1.2",
            "creator": {"name": "ssemock", "version": "1"},
            "pages": [],
            "entries": entries,
        }
    }
    notes = (
        [f"secrets: {len(masked)} masked as {REDACTED} (`ssemock redact --check` lists them)"]
        if masked
        else []
    )
    if counts["chunks"]:
        notes.append(
            f"{counts['chunks']} response(s) arrived in several chunks: HAR keeps one body; the chunk "
            "boundaries and times are kept in _ssemockChunks, which only ssemock import-har reads"
        )
    if counts["sockets"]:
        notes.append(
            f"{counts['sockets']} WebSocket session(s): HAR keeps the messages only (no close code or reason, "
            f"no received wire chunks{', no fragments or pings' if counts['frame_map'] else ''})"
            + (f"; {counts['close']} close frame(s) dropped" if counts["close"] else "")
        )
    return har, notes
