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
import math
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..redaction.keep import masked_copy
from ..redaction.rules import REDACTED, redact_request, redact_response
from ..store.cassette import Cassette, Interaction, Request, Response
from ..store.header_text import header_text_problem
from ..store.model import MAX_T_MS
from ..store.websocket import Close, Message, WebSocket
from .har_content import ContentError, undo_content_encoding
from .har_reading import HarError, har_entries

__all__ = ["HarError", "export_har", "import_har"]

_BASE = datetime.datetime(2000, 1, 1, tzinfo=datetime.UTC)  # exported entries' start: no wall time is kept
_NOT_KEPT = frozenset({"content-length", "content-encoding", "transfer-encoding", "connection", "keep-alive"})
_MAX_T = MAX_T_MS / 1000  # seconds: a time a cassette holds is at most a day after the request
_CONTROL_OPCODES = (8, 9, 10)  # close, ping, pong: HAR writers keep none; skipped when one does


class _Bad(Exception):
    """A problem in one entry; `import_har` turns it into HarError with the file and the entry."""


def _field(obj: Any, key: str, kind: type | tuple[type, ...], where: str, *, default: Any = ...) -> Any:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    value = obj.get(key, default) if isinstance(obj, dict) else default
    if value is ...:
        raise _Bad(f"{where}: {key} is missing")
    if value is not default and (
        not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds)
    ):
        raise _Bad(
            f"{where}.{key}: expected {' or '.join(k.__name__ for k in kinds)}, got {type(value).__name__}"
        )
    if isinstance(value, str) and not value.isascii():
        try:
            value.encode("utf-8")  # Python's JSON reads a lone surrogate: a cassette holds none
        except UnicodeEncodeError as exc:
            raise _Bad(f"{where}.{key}: a lone surrogate at {exc.start} (U+D800-U+DFFF), not text") from None
    return value


def _nonempty(obj: Any, key: str, where: str) -> str:
    """A string field that may not be empty (a method, a URL)."""
    value: str = _field(obj, key, str, where)
    if not value:
        raise _Bad(f"{where}.{key} is empty")
    return value


def _seconds(value: Any, where: str) -> float:
    """A time field: a finite number >= 0 (HarError for NaN, negative, or past a float)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _Bad(f"{where}: expected a number, got {type(value).__name__}")
    if not (0 <= value < 1e15 and math.isfinite(value)):
        raise _Bad(f"{where}: {value!r} is out of range (a time is a finite number >= 0)")
    return float(value)


def _headers(obj: Any, where: str, *, response: bool) -> list[tuple[str, str]]:
    out = []
    for k, h in enumerate(_field(obj, "headers", list, where, default=[])):
        name = _field(h, "name", str, f"{where}.headers[{k}]").lower()
        value = _field(h, "value", str, f"{where}.headers[{k}]")
        _check_header(name, value, f"{where}.headers[{k}]")
        if name.startswith(":") or (
            response and name in _NOT_KEPT
        ):  # HTTP/2 pseudo-headers; HAR bodies are decoded
            continue
        out.append((name, value))
    return out


def _check_header(name: str, value: str, where: str) -> None:
    """A header that would break the line it is written on (or has no name): refused."""
    if not name:
        raise _Bad(f"{where}.name is empty")
    for part, text in (("name", name), ("value", value)):
        problem = header_text_problem(text)
        if problem is not None:
            raise _Bad(f"{where}.{part} {problem}, which no HTTP message may carry: remove the header")


def _started(entry: Any, where: str) -> float | None:
    text = _field(entry, "startedDateTime", str, where, default="")
    if not text:
        return None
    try:
        return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except (ValueError, OverflowError, OSError) as exc:
        raise _Bad(f"{where}.startedDateTime: {text[:40]!r} is not an ISO 8601 date ({exc})") from None


def _content(response: Any, where: str) -> bytes:
    content = _field(response, "content", dict, where, default={})
    text: str = _field(content, "text", str, f"{where}.content", default="")
    if content.get("encoding") == "base64":
        try:
            decoded: bytes = base64.b64decode(text, validate=True)
        except ValueError as exc:
            raise _Bad(f"{where}.content.text: not base64 although encoding says so ({exc})") from None
        return decoded
    return text.encode("utf-8")


def _decoded(body: bytes, response: Any, where: str) -> bytes:
    """The body as the client read it: a body a HAR writer kept in its ``Content-Encoding``
    inflated (bounded), as a recording stores it (`ssemock.commands.har_content`)."""
    encoding = ", ".join(
        h["value"]
        for h in response.get("headers", [])
        if isinstance(h, dict) and str(h.get("name", "")).lower() == "content-encoding"
    )
    try:
        return undo_content_encoding(body, encoding)
    except ContentError as exc:
        raise _Bad(f"{where}.content: Content-Encoding {encoding[:40]!r}: {exc}") from None


def _message_time(m: Any, at: str, started: float) -> float:
    """A message's time, seconds since the entry started (a message before it: 0)."""
    t = _seconds(_field(m, "time", (int, float), at, default=started), f"{at}.time")
    since = max(0.0, t - started)
    if since > _MAX_T:
        raise _Bad(
            f"{at}.time: {t!r} is {since:,.0f} s after the entry started ({started!r}): more than a day "
            "(the times are epoch seconds; is startedDateTime right?)"
        )
    return round(since, 4)


def _websocket(entry: Any, where: str, started: float | None) -> WebSocket:
    messages: list[Message] = []
    raw = entry["_webSocketMessages"]
    if started is None:  # no startedDateTime: timed from the first message
        first = next((m.get("time") for m in raw if isinstance(m, dict)), None)
        started = _seconds(first, f"{where}._webSocketMessages[0].time") if first is not None else 0.0
    last = {"send": 0.0, "recv": 0.0}
    for k, m in enumerate(raw):
        at = f"{where}._webSocketMessages[{k}]"
        kind = _field(m, "type", str, at)
        if kind not in ("send", "receive"):
            raise _Bad(f"{at}.type: {kind[:40]!r} is neither 'send' nor 'receive'")
        opcode = _field(m, "opcode", int, at, default=1)
        data = _field(m, "data", str, at, default="")
        t = _message_time(m, at, started)
        if opcode in _CONTROL_OPCODES:
            continue  # control frames: HAR writers keep none, ssemock's frame map is not in HAR
        if opcode == 1:
            payload: str | bytes = data
        elif opcode == 2:
            try:
                payload = base64.b64decode(data, validate=True)
            except ValueError as exc:
                raise _Bad(f"{at}.data: a binary message (opcode 2) is base64 in HAR ({exc})") from None
        else:
            raise _Bad(
                f"{at}.opcode: {opcode} is not a message's opcode (1 text, 2 binary; 8-10 control "
                "frames are skipped; 0 and 3-7, 11-15 are continuation or reserved)"
            )
        direction = "send" if kind == "send" else "recv"
        if t < last[direction]:
            raise _Bad(f"{at}.time: goes back (the previous {kind} message came {last[direction]:.4f} s in)")
        last[direction] = t
        messages.append(Message(direction, t, "text" if opcode == 1 else "binary", payload))
    return WebSocket(messages=messages, close=Close())


def _chunks(entry: Any, body: bytes, where: str) -> tuple[list[int], list[float], bool]:
    """The chunk map: ssemock's own extension when present, else one chunk at the entry's end."""
    kept = entry.get("_ssemockChunks")
    if kept is not None:
        return _kept_chunks(kept, body, f"{where}._ssemockChunks")
    total = _seconds(_field(entry, "time", (int, float), where, default=0), f"{where}.time") / 1000
    if total > _MAX_T:
        raise _Bad(
            f"{where}.time: {total * 1000!r} ms is more than a day: a cassette's chunk arrives within one"
        )
    return ([len(body)], [round(total, 4)], False) if body else ([], [], False)


def _kept_chunks(kept: Any, body: bytes, where: str) -> tuple[list[int], list[float], bool]:
    """``_ssemockChunks`` (export-har's ``{"ends": [...], "times": [...]}``), checked as the
    cassette's chunk map is: ends rising to the body's length, times rising within a day."""
    ends = _field(kept, "ends", list, where)
    times = _field(kept, "times", list, where)
    if len(ends) != len(times):
        raise _Bad(f"{where}: {len(ends)} ends but {len(times)} times: remove it")
    seconds = [_seconds(t, f"{where}.times[{k}]") for k, t in enumerate(times)]
    if any(type(e) is not int for e in ends) or any(not 0 < b - a for a, b in zip([0, *ends], ends)):
        raise _Bad(f"{where}.ends: not integer offsets that increase: remove it")
    if (ends[-1] if ends else 0) != len(body):
        raise _Bad(f"{where}: its ends do not cut this body (edited by hand?): remove it")
    if any(b < a for a, b in zip(seconds, seconds[1:])) or (seconds and seconds[-1] > _MAX_T):
        raise _Bad(f"{where}.times: they go back or pass a day: remove it")
    return list(ends), seconds, True


@dataclass
class _Tally:
    """What HAR could not hold, counted as the entries go by."""

    one_chunk: int = 0
    sockets: int = 0
    unanswered: int = 0

    def notes(self) -> list[str]:
        notes = []
        if self.one_chunk:
            notes.append(
                f"{self.one_chunk} response(s): HAR keeps one body, no chunk boundaries and no per-chunk "
                "times: each is one chunk arriving at the entry's end (replay re-chunks it as you ask)"
            )
        if self.sockets:
            notes.append(
                f"{self.sockets} WebSocket session(s): HAR keeps no close frame (code, reason, who closed), "
                "no fragments or pings, no wire chunks: the close is unknown (1006), one frame per message"
            )
        if self.unanswered:
            notes.append(
                f"{self.unanswered} request(s) got no answer (status 0: blocked, cancelled or failed): "
                "a cassette holds answers, so they are left out"
            )
        return notes


def _interaction(entry: Any, at: str, tally: _Tally) -> Interaction | None:
    """One entry as an interaction (None: it got no answer)."""
    req, resp = _field(entry, "request", dict, at), _field(entry, "response", dict, at)
    post = _field(req, "postData", dict, f"{at}.request", default={})
    body = _field(post, "text", str, f"{at}.request.postData", default="").encode("utf-8")
    method = _nonempty(req, "method", f"{at}.request").upper()
    request = Request(
        method,
        _nonempty(req, "url", f"{at}.request"),
        _headers(req, f"{at}.request", response=False),
        body if body or method not in ("GET", "HEAD") else None,
    )
    status = _field(resp, "status", int, f"{at}.response")
    headers = _headers(resp, f"{at}.response", response=True)
    if status == 0:  # a browser writes 0 for a request that got no answer
        tally.unanswered += 1
        return None
    if not 100 <= status <= 599:
        raise _Bad(f"{at}.response.status: {status} is not an HTTP status (100-599; 0: no answer)")
    started = _started(entry, at)
    websocket: WebSocket | None = None
    ends: list[int]
    times: list[float]
    if isinstance(entry.get("_webSocketMessages"), list):
        websocket, content, tally.sockets = _websocket(entry, at, started), b"", tally.sockets + 1
        ends, times, kept = [], [], True
    else:
        content = _decoded(_content(resp, f"{at}.response"), resp, f"{at}.response")
        ends, times, kept = _chunks(entry, content, at)
        tally.one_chunk += not kept and bool(content)
    response = Response(status, headers, content, ends, times)
    return Interaction(redact_request(request), redact_response(response), websocket)


def import_har(path: str | os.PathLike[str]) -> tuple[Cassette, list[str]]:
    """The HAR file at ``path`` as a cassette (redacted, not yet saved), and what HAR could not
    hold, one note per kind of loss. The entries are read one at a time
    (`ssemock.commands.har_reading`); every problem is a HarError naming the file, the entry and
    the field, and what imports saves to a cassette that loads."""
    interactions, tally = [], _Tally()
    for i, entry in har_entries(path):
        try:
            x = _interaction(entry, f"log.entries[{i}]", tally)
        except _Bad as exc:
            raise HarError(str(exc), path=path, entry=i) from None
        if x is not None:
            interactions.append(x)
    return Cassette(interactions), tally.notes()


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
