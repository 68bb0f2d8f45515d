"""``mcp``: Model Context Protocol JSON-RPC 2.0 messages over HTTP.

Streamable HTTP: each client message is a ``POST`` to one endpoint (by convention ``/mcp``); a
request is answered by a JSON body (``application/json``, one message) or an SSE stream
(``event: message`` blocks whose data is one JSON-RPC message: notifications such as
``notifications/progress``, requests to the client, then the response). A ``GET`` opens a
stream for server-initiated messages. The session is the ``Mcp-Session-Id`` response header of
``initialize``, echoed on every later request. The legacy HTTP+SSE transport opens a ``GET``
stream first, whose ``event: endpoint`` names the URL to POST to; every response then arrives on
that stream, correlated by id alone: replay holds each of its messages until the request it
answers is made (see [`holds`][ssemock.protocols.mcp.holds] and [`ssemock.plan.push_replay`][ssemock.plan.push_replay]).

Two protocol versions are spoken (the mcp 2.3.0 SDK speaks both): **2025-11-25** (and the
handshake versions before it) opens with ``initialize``, names a session (``Mcp-Session-Id``) and
may resume a dropped stream: a server with an event store gives its events ids, and a client
reconnects with a ``GET`` carrying ``Last-Event-ID``. **2026-07-28** is stateless: no
``initialize``, no session, no resumption; every request carries ``MCP-Protocol-Version`` and
``Mcp-Method`` (and ``Mcp-Name``) headers and its version in ``_meta``, change notifications
ride a ``subscriptions/listen`` POST whose answer is a stream (each frame stamped with the listen
request's id, ``_meta["io.modelcontextprotocol/subscriptionId"]``), and a request may take
several round trips (an ``InputRequiredResult``, then the same call again with
``inputResponses`` and the echoed ``requestState``). [`version`][ssemock.protocols.mcp.version]
reads an exchange's version, [`versions`][ssemock.protocols.mcp.versions] a recording's.

The reference fold reads SSE events (or parsed JSON bodies) and gives an [`McpResult`][ssemock.protocols.mcp.McpResult]: the
results and errors by request id, notifications and server requests in order, the text content of
the results; ``complete`` when at least one response arrived. A message that is no JSON-RPC 2.0
(no ``jsonrpc: "2.0"``, a response with both ``result`` and ``error``, one id answered twice) is a
[`ProtocolError`][ssemock.ProtocolError].
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeAlias

import orjson

from ..framing.ends import event_ends
from ..framing.sse import decode, is_event
from ..store.cassette import Cassette, Interaction, Request, Response
from . import Protocol, _path, jsonrpc_ids
from . import synthesis as syn
from .base import JSON, Accumulated, Event, Fold, HTTPErrorBody, StreamError, excerpt, obj, seq, string

__all__ = [
    "PROTOCOL",
    "McpResult",
    "RequestId",
    "MODERN_VERSIONS",
    "deliverable",
    "exchange_version",
    "follows",
    "holds",
    "message",
    "owed",
    "request_ids",
    "session_id",
    "stays_open",
    "synthesize",
    "version",
    "versions",
]

RequestId: TypeAlias = str | int
"""A JSON-RPC request id."""
SESSION_HEADER = "mcp-session-id"
"""The header carrying the MCP session id."""
VERSION_HEADER = "mcp-protocol-version"
"""The header carrying the protocol version on every request after the first (each, at 2026-07-28)."""
VERSION_META = "io.modelcontextprotocol/protocolVersion"
"""The ``_meta`` member carrying a 2026-07-28 request's protocol version."""
LISTEN = "subscriptions/listen"
"""The 2026-07-28 request whose answer is the stream of change notifications."""
MODERN_VERSIONS = frozenset({"2026-07-28"})
"""The stateless versions: no initialize, no session, no stream resumption."""

# JSON-RPC error codes (https://www.jsonrpc.org/specification#error_object)
PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, INTERNAL_ERROR = (
    -32700,
    -32600,
    -32601,
    -32602,
    -32603,
)
_KINDS = {
    "parse_error": PARSE_ERROR,
    "invalid_request": INVALID_REQUEST,
    "invalid_request_error": INVALID_REQUEST,
    "method_not_found": METHOD_NOT_FOUND,
    "invalid_params": INVALID_PARAMS,
    "internal_error": INTERNAL_ERROR,
    "server_error": INTERNAL_ERROR,
    "api_error": INTERNAL_ERROR,
    "overloaded_error": INTERNAL_ERROR,
}
_MESSAGES = {
    PARSE_ERROR: "Parse error",
    INVALID_REQUEST: "Invalid request",
    METHOD_NOT_FOUND: "Method not found",
    INVALID_PARAMS: "Invalid params",
    INTERNAL_ERROR: "Internal error",
}
# HTTP status -> (JSON-RPC code, message) as the mcp SDK's Streamable HTTP server answers
_HTTP = {
    400: (INVALID_REQUEST, "Bad Request: Missing session ID"),
    404: (INVALID_REQUEST, "Not Found: Invalid or expired session ID"),
    405: (INVALID_REQUEST, "Method Not Allowed"),
    406: (INVALID_REQUEST, "Not Acceptable: Client must accept both application/json and text/event-stream"),
    409: (INVALID_REQUEST, "Conflict: Only one SSE stream is allowed per session"),
    415: (INVALID_REQUEST, "Unsupported Media Type: Content-Type must be application/json"),
    500: (INTERNAL_ERROR, "Error handling POST request"),
}


@dataclass
class McpResult(Accumulated):
    """What an MCP stream spells: responses by request id, and the messages in between.

    ``text`` is the text content of the results (a ``tools/call`` result's ``content`` items of
    type ``text``), ``error`` the first JSON-RPC error, ``endpoint`` the legacy transport's
    POST URL."""

    results: dict[RequestId, Any] = field(default_factory=dict)
    """The JSON-RPC results, by request id."""
    errors: dict[RequestId | None, JSON] = field(default_factory=dict)
    """The JSON-RPC errors, by request id (`None` for an error without one)."""
    notifications: list[JSON] = field(default_factory=list)
    """The notifications the server sent, in order."""
    requests: list[JSON] = field(default_factory=list)
    """The requests the server sent to the client, in order."""
    endpoint: str = ""
    """The legacy SSE transport's POST URL, from its `endpoint` event."""

    def to_dict(self) -> JSON:
        """Plain JSON-able form (ids as they were sent: numbers stay numbers)."""
        return {
            **super().to_dict(),
            "results": [[k, v] for k, v in self.results.items()],
            "errors": [[k, v] for k, v in self.errors.items()],
            "notifications": list(self.notifications),
            "requests": list(self.requests),
            "endpoint": self.endpoint,
        }


class _McpFold(Fold):
    """JSON-RPC messages, one per SSE ``message`` event (a batch array too), or parsed JSON bodies."""

    protocol = "mcp"
    result: McpResult

    def __init__(self) -> None:
        super().__init__()
        self.result = McpResult(self.protocol)

    def feed(self, event: Event) -> None:
        if is_event(event):
            if event.event == "endpoint":
                self.result.endpoint = event.data
                return
            if event.event != "message" or not event.data:
                return  # priming events (an id, no data) and unknown event types
            try:
                value = orjson.loads(event.data)
            except orjson.JSONDecodeError:
                raise self.fail(f"data is not JSON: {excerpt(event.data)}") from None
        else:
            value = event
        for item in value if isinstance(value, list) else [value]:
            self.message(item)

    def message(self, item: Any) -> None:
        if not isinstance(item, Mapping) or item.get("jsonrpc") != "2.0":
            raise self.fail(f"not a JSON-RPC 2.0 message: {excerpt(orjson.dumps(item).decode(), 80)}")
        has_id, ident = "id" in item, item.get("id")
        if has_id and not _valid_id(ident):
            raise self.fail(
                f"id {excerpt(orjson.dumps(ident).decode(), 80)} is a {_json_type(ident)}: a JSON-RPC id "
                "is a string, a number or null"
            )
        if "method" in item:
            entry = {"method": string(item["method"]), "params": item.get("params")}
            if has_id:
                self.result.requests.append({"id": ident, **entry})
            else:
                self.result.notifications.append(entry)
            return
        if "result" in item and "error" in item or not has_id:
            raise self.fail(
                f"a response needs an id and one of result / error: {excerpt(orjson.dumps(item).decode())}"
            )
        if ident in self.result.results or ident in self.result.errors:
            raise self.fail(f"request id {ident!r} is answered twice")
        if "error" in item:
            error = obj(item["error"])
            self.result.errors[ident] = error
            self.result.error = self.result.error or error
        elif "result" in item:
            if ident is None:
                raise self.fail(f"a result for id {ident!r}: a result answers a request by its id")
            self.result.results[ident] = item["result"]
            self.choice(0)
            for k, content in enumerate(seq(obj(item["result"]).get("content"))):
                if obj(content).get("type") == "text":
                    self.add("text", string(content.get("text")), key=(len(self.result.results), k))
        else:
            raise self.fail(
                f"a message with neither method, result nor error: {excerpt(orjson.dumps(item).decode())}"
            )

    def finish(self) -> Accumulated:
        self.result.complete = bool(self.result.results or self.result.errors)
        return super().finish()


def _valid_id(ident: Any) -> bool:
    """A JSON-RPC 2.0 id: a string, a number or null (a boolean is none: ``true`` would be taken
    for id ``1``)."""
    return ident is None or (isinstance(ident, (str, int, float)) and not isinstance(ident, bool))


def _json_type(value: Any) -> str:
    kinds = ((bool, "boolean"), (list, "array"), (Mapping, "object"))
    return next((name for kind, name in kinds if isinstance(value, kind)), type(value).__name__)


def message(payload: Mapping[str, Any], *, newline: str = "\n", event_id: str | None = None) -> bytes:
    """One JSON-RPC message as the SDK's server writes it on an SSE stream (``event: message``)."""
    head = f"id: {event_id}{newline}" if event_id is not None else ""
    data = orjson.dumps({"jsonrpc": "2.0", **payload}).decode()
    return f"event: message{newline}{head}data: {data}{newline}{newline}".encode()


def _error(kind: str, text: str, ident: RequestId | None, newline: str = "\n", *, sse: bool = True) -> bytes:
    code = _KINDS.get(kind, INTERNAL_ERROR)
    payload = {"id": ident, "error": {"code": code, "message": text or _MESSAGES[code]}}
    return message(payload, newline=newline) if sse else orjson.dumps({"jsonrpc": "2.0", **payload})


def error_event(error: StreamError) -> bytes:
    """A JSON-RPC error response as an SSE ``message`` event, with the id of the request the
    stream still owes (``error.request_id``; ``faults.error_event`` fills it from [`owed`][ssemock.protocols.mcp.owed]):
    the client's session fails that very call. Null when there is none. A POST answered by a
    JSON body (``application/json``) gets the error object alone, as its whole body."""
    return _error(error.kind, error.message, error.request_id, error.newline, sse=error.framing == "sse")


def owed(body: bytes, offset: int, more: bool = False) -> RequestId | None:
    """The id of the request a stream cut at byte ``offset`` still owes an answer: the first
    response (result or error) after the cut, else the token of a progress notification whose
    request is not answered before it (the mcp SDK's progress token is the request id); None when
    the stream owes nothing. A JSON body (not a stream) owes the id of the answer it holds.
    ``more``: the body is an open prefix of a live stream, so only an answer after the cut
    decides (None: none has arrived yet; a later one may)."""
    if body.lstrip().startswith((b"{", b"[")):
        return next(iter(_answers(body.decode("utf-8", "replace"))[0]), None)
    starts = [0, *event_ends(body, sse=True)]
    answered: set[RequestId] = set()
    tokens: list[RequestId] = []
    for a, b in zip(starts, starts[1:]):
        for sse_event in decode([body[a:b]]):
            ids, progress = _answers(sse_event.data)
            if b > offset and ids:
                return ids[0]
            if b <= offset:
                answered.update(ids)
            tokens += progress
    return None if more else next((t for t in tokens if t not in answered), None)


def http_error(status: int, message: str | None) -> HTTPErrorBody:
    """A JSON-RPC error body with a null id, as the mcp SDK's Streamable HTTP server answers."""
    code, text = _HTTP.get(status, (INTERNAL_ERROR if status >= 500 else INVALID_REQUEST, f"HTTP {status}"))
    return HTTPErrorBody(
        orjson.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message or text}})
    )


def request_ids(body: bytes | None) -> list[RequestId]:
    """The JSON-RPC ids of the requests in a POST body (one message or a batch; notifications
    and responses have none): what a server-push stream may answer once this POST is made."""
    if not body or b'"jsonrpc"' not in body:
        return []  # no JSON-RPC (most bodies a player matches): not parsed
    try:
        value = orjson.loads(body or b"null")
    except orjson.JSONDecodeError:
        return []
    return [  # orjson makes dicts: a dict check, not the slower Mapping ABC's (batches of thousands)
        item["id"]
        for item in (value if isinstance(value, list) else [value])
        if isinstance(item, dict)
        and item.get("jsonrpc") == "2.0"
        and "method" in item
        and isinstance(item.get("id"), (str, int))
    ]


def session_id(headers: Iterable[tuple[str, str]] | Mapping[str, str]) -> str | None:
    """The ``Mcp-Session-Id`` of a response's (or request's) headers."""
    pairs = headers.items() if isinstance(headers, Mapping) else headers
    return next((v for k, v in pairs if k.lower() == SESSION_HEADER), None)


def _answers(data: str) -> tuple[list[RequestId], list[RequestId]]:
    """(ids answered, progress tokens) of one SSE event's data."""
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError:
        return [], []
    answered, tokens = [], []
    for item in value if isinstance(value, list) else [value]:
        item = obj(item)
        if item.get("jsonrpc") != "2.0":
            continue  # not JSON-RPC (an OpenAI chunk has an "id" too)
        if "method" not in item and isinstance(item.get("id"), (str, int)):
            answered.append(item["id"])
        elif item.get("method") == "notifications/progress":
            token = obj(item.get("params")).get("progressToken")
            if isinstance(token, (str, int)):
                tokens.append(token)
    return answered, tokens


def holds(body: bytes) -> list[tuple[int, frozenset[RequestId]]]:
    """Where a recorded server-push stream (the legacy transport's GET stream, or any GET
    stream) waits for requests: ``(offset, ids)`` in order, meaning the bytes from ``offset`` (an
    event's start) on may be delivered only once the requests with ``ids`` have been made too.
    An event answers a request by its id (a response) or by a progress notification whose token
    is the id of a request the stream answers; only the first event to answer a request waits
    for it (the rest follow in recorded order)."""
    if b'"jsonrpc"' not in body:
        return []
    starts = [0, *event_ends(body, sse=True)]
    parsed = []
    answered_anywhere: set[RequestId] = set()
    for a, b in zip(starts, starts[1:]):
        answered, tokens = [], []
        for sse_event in decode([body[a:b]]):
            got = _answers(sse_event.data)
            answered += got[0]
            tokens += got[1]
        parsed.append((a, answered, tokens))
        answered_anywhere.update(answered)
    found: list[tuple[int, frozenset[RequestId]]] = []
    waited: set[RequestId] = set()
    for start, answered, tokens in parsed:
        needed = frozenset([*answered, *(t for t in tokens if t in answered_anywhere)]) - waited
        if needed:  # an event whose requests an earlier one waited for already follows it freely
            found.append((start, needed))
            waited |= needed
    return found


_SUBSCRIPTION_ID = b'"io.modelcontextprotocol/subscriptionId"'
_CHANGES = frozenset(
    {
        "notifications/tools/list_changed",
        "notifications/prompts/list_changed",
        "notifications/resources/list_changed",
        "notifications/resources/updated",
    }
)


def follows(body: bytes) -> list[int]:
    """Where a 2026-07-28 ``subscriptions/listen`` stream announces what later requests did: the
    start of each change notification (a list changed, a resource updated) stamped with a
    subscription id. The server acknowledges first and sends these when something changes,
    mostly through the client's own later calls; replay holds them until a request recorded
    after the stream opened is made (`ssemock.plan.push_replay.holds_for`). [] for any other body."""
    if _SUBSCRIPTION_ID not in body:
        return []
    starts = [0, *event_ends(body, sse=True)]
    found = []
    for a, b in zip(starts, starts[1:]):
        for sse_event in decode([body[a:b]]):
            try:
                item = orjson.loads(sse_event.data)
            except orjson.JSONDecodeError:
                continue
            if isinstance(item, dict) and item.get("method") in _CHANGES:
                found.append(a)
                break
    return found


def stays_open(interaction: Interaction) -> bool:
    """Whether a recorded 2026-07-28 ``subscriptions/listen`` stream was still open when its
    client closed it: no answer to the listen request (the server's graceful close) and no
    failure recorded, the recording marked incomplete. Live such a stream stays open (idle) until
    the client closes it, so replay keeps it open after its last frame rather than ending it (the
    SDK's ``SubscriptionLost``); a stream the server ended, or that broke, ends as recorded."""
    request, response = interaction.request, interaction.response
    if response.complete or response.error is not None or interaction.websocket is not None:
        return False
    if "event-stream" not in (response.header("content-type") or ""):
        return False
    return obj(request.json()).get("method") == LISTEN and _answer(response.body, "text/event-stream") is None


def deliverable(body: bytes, requested: Iterable[RequestId]) -> int:
    """How many bytes of a recorded server-push stream may be delivered once the requests with
    ids ``requested`` have been made (see [`holds`][ssemock.protocols.mcp.holds]).

    Events are delivered in recorded order; the first that answers a request not yet made holds
    it and everything after it. The offset is an event boundary (the whole body when nothing is
    held)."""
    made = set(requested)
    return next((offset for offset, ids in holds(body) if not ids <= made), len(body))


def version(request: Request, response: Response | None = None) -> str | None:
    """The protocol version an MCP exchange speaks: the request's ``MCP-Protocol-Version``
    header, else its ``_meta`` version (2026-07-28), else the version ``initialize`` settled (the
    answer's ``protocolVersion``, else the one the client asked for); None when it says none
    (a ``DELETE``, a notification before the header was known)."""
    found = next((v for k, v in request.headers if k == VERSION_HEADER), None)
    if found:
        return found
    body = obj(request.json())
    params = obj(body.get("params"))
    meta = obj(params.get("_meta")).get(VERSION_META)
    if isinstance(meta, str):
        return meta
    if body.get("method") != "initialize":
        return None
    answered = _answer(response.body, response.header("content-type") or "") if response else {}
    settled = obj(obj(answered).get("result")).get("protocolVersion") or params.get("protocolVersion")
    return settled if isinstance(settled, str) else None


def _answer(body: bytes, content_type: str) -> Any:
    """The first JSON-RPC response in a JSON body or an SSE stream (None: none)."""
    if content_type.startswith("application/json"):
        try:
            return orjson.loads(body)
        except orjson.JSONDecodeError:
            return None
    for sse_event in decode([body]):
        try:
            value = orjson.loads(sse_event.data)
        except orjson.JSONDecodeError:
            continue
        if isinstance(value, dict) and "method" not in value and "id" in value:
            return value
    return None


def exchange_version(x: Interaction) -> str | None:
    """[`version`][ssemock.protocols.mcp.version] of a recorded exchange that speaks MCP (its
    header, or a JSON-RPC body); None for any other."""
    if x.websocket is not None or (
        b'"jsonrpc"' not in (x.request.body or b"") and not _has_header(x.request)
    ):
        return None
    return version(x.request, x.response)


def _has_header(request: Request) -> bool:
    return any(k == VERSION_HEADER for k, _ in request.headers)


def versions(interactions: Iterable[Interaction]) -> list[str]:
    """The protocol versions a recording's MCP exchanges speak, in the order first seen (one,
    mostly; a client that fell back from 2026-07-28 to ``initialize`` shows both)."""
    return list(dict.fromkeys(v for x in interactions if (v := exchange_version(x))))


def resumption(request: Request) -> str | None:
    """Why a stream answering ``request`` cannot be resumed (None: its version may resume):
    2026-07-28 has no resumption (a dropped stream is lost; the client sends the request again,
    or listens again and refetches)."""
    v = version(request)
    if v in MODERN_VERSIONS:
        return (
            f"MCP {v} has no stream resumption (no Last-Event-ID, no event ids: a dropped stream is "
            "lost, and the client sends its request again or listens again); disconnect: drops it"
        )
    return None


def _is_mcp(url: str) -> bool:
    return _path(url).rsplit("/", 1)[-1] == "mcp"


def _telling(event: Any) -> bool:
    if is_event(event):
        if event.event == "endpoint":
            return True
        try:
            event = orjson.loads(event.data)
        except orjson.JSONDecodeError:
            return False
    first = event[0] if isinstance(event, list) and event else event
    return isinstance(first, Mapping) and first.get("jsonrpc") == "2.0"


def synthesize(
    text: str = "",
    *,
    progress: int = 0,
    error: str | None = None,
    request_id: RequestId = 1,
    tool: str = "tool",
    arguments: Mapping[str, Any] | None = None,
    session: str | None = None,
    gap: float = 0.03,
    first_token: float = 0.05,
    seed: int = 0,
    url: str | None = None,
) -> Cassette:
    """A Streamable HTTP ``tools/call`` POST answered by an SSE stream: ``progress``
    ``notifications/progress`` messages (token = the request id, as the mcp SDK sends), then the
    result (``text`` as one text content item) or, with ``error`` (a kind such as
    ``"invalid_params"``), a JSON-RPC error. ``session``: the ``Mcp-Session-Id`` to send and echo."""

    syn.check_timing(1, gap, first_token)
    rng = syn.Rng(seed)
    events = [
        message(
            {
                "method": "notifications/progress",
                "params": {
                    "progressToken": request_id,
                    "progress": k + 1,
                    "total": progress,
                    "message": f"step {k + 1}",
                },
            }
        )
        for k in range(progress)
    ]
    if error is not None:
        events.append(_error(error, "", request_id))
    else:
        events.append(
            message(
                {"id": request_id, "result": {"content": [{"type": "text", "text": text}], "isError": False}}
            )
        )
    chunks, times = syn.schedule(events, rng.writes, first_token=first_token, gap=gap)
    headers = {
        "content-type": "text/event-stream",
        "cache-control": "no-cache, no-transform",
        syn.SOURCE_HEADER: syn.SYNTH_SOURCE,
    }
    request_headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
    if session is not None:
        headers[SESSION_HEADER] = request_headers[SESSION_HEADER] = session
    cassette = Cassette()
    cassette.add(
        "POST",
        url or "http://127.0.0.1:8000/mcp",
        chunks,
        times=times,
        headers=headers,
        request_headers=request_headers,
        request_json={
            "jsonrpc": "2.0",
            "id": request_id,
            "method": "tools/call",
            "params": {
                "name": tool,
                "arguments": dict(arguments or {}),
                **({"_meta": {"progressToken": request_id}} if progress else {}),
            },
        },
    )
    return cassette


PROTOCOL = Protocol(
    name="mcp",
    framing="sse",
    framings=("json",),
    fold=_McpFold,
    error_event=error_event,
    http_error=http_error,
    url=_is_mcp,
    client_ids=jsonrpc_ids.RULE,
    event=_telling,
    synthesize=synthesize,
    request_ids=request_ids,
    holds=holds,
    follows=follows,
    stays_open=stays_open,
    version=exchange_version,
    owed=owed,
    resumption=resumption,
)
"""The `mcp` protocol, as registered in `ssemock.protocols`."""
