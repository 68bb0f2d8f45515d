"""Protocols: what a stream's events mean, one module per provider API, composed by a registry.

A protocol module (``ssemock/protocols/<name>.py``) holds everything that knows one provider's
shapes and defines one module-level object, ``PROTOCOL``, a `Protocol`:

``name``
    the public protocol name, ``"<provider>.<api>"`` (``"openai.chat"``, ``"gemini.generate_content"``,
    ``"bedrock.converse"``, ``"mcp"``); what ``accumulate(protocol=...)`` and the ``protocol``
    marker take.
``framing``
    the name of the `ssemock.framing` member that cuts its bodies into events (``"sse"``,
    ``"ndjson"``, ``"json_array"``, ``"eventstream"``); some protocols speak several (Gemini: SSE
    and a JSON array): the framing actually used is chosen from the response (content type and
    body) by `ssemock.framing.detect`; ``framing`` is the usual one, the one synth writes.
``fold``
    the reference accumulator: a subclass of `ssemock.protocols.base.Fold`. ``accumulate``
    makes one per stream, sets ``fold.at`` to the event's position and calls ``fold.feed(event)``
    for each decoded event until ``fold.result.complete``, then ``fold.finish()``. Events are what
    the framing decodes (``ServerSentEvent``, a parsed JSON value, an eventstream message, ...).
    Raise ``self.fail("what is wrong")`` (a [`ProtocolError`][ssemock.accumulate.ProtocolError] naming the protocol and event)
    for input no server of the protocol could send; skip unknown event types.
``url(url) -> bool``
    the request URL (scheme, host, path and query, as recorded) is this protocol's endpoint.
``content_type(media_type) -> bool``
    the response's media type (lower case, parameters stripped) is telling on its own (Ollama's
    ``application/x-ndjson``, Bedrock's ``application/vnd.amazon.eventstream``); most say False.
``event(event) -> bool``
    one decoded event is telling (Anthropic's ``message_start``, a Gemini ``candidates`` object).
    Detection asks every registered protocol, in registry order: URL first, then content type,
    then the events one by one; the first protocol that says True wins, so keep tests specific.
``error_event(error: StreamError) -> bytes``
    the bytes of ONE complete mid-stream error event in this provider's own shape and in
    ``error.framing`` (an SSE ``event: error`` block, an NDJSON ``{"error": ...}`` line, an
    eventstream exception frame, a JSON-RPC error ...), ending with ``error.newline`` (``"\\r\\n"``
    when the served body uses CRLF). [`ssemock.faults.error_event`][ssemock.faults.error_event] cuts the body after
    event N and appends these bytes; for a ``json_array`` body ``error.after_first`` says whether
    an element precedes it (then the bytes start with the separator) and the bytes close the array.
``framings``
    optional: the other framings its bodies come in (Gemini: ``("json_array",)``); its
    ``error_event`` writes those too. `speaks` says whether a protocol writes a framing.
``http_error(status, message) -> HTTPErrorBody``
    the body and content type the provider answers ``status`` with before any stream
    ([`ssemock.faults.http_error`][ssemock.faults.http_error]); ``message=None``: the provider's usual text.
``synthesize``
    optional: a function returning a one-interaction [`Cassette`][ssemock.Cassette] of a realistic
    stream from the result it must accumulate to, with keyword parameters in the style of
    [`ssemock.synth`][ssemock.synth] (``text``, ``tool_calls``, ``usage``, ``finish_reason``, ``model``,
    ``chunk_size``, ``gap``, ``first_token``, ``seed``, ``prompt``, ``url``).
``responses(events) -> list[list[int]]``
    optional, for protocols spoken over a WebSocket: the positions of each response's events in
    a session's received messages (one socket carries several responses); ``accumulate_session``
    folds each. Without it a stream is one response.
``client_messages``
    optional, for protocols spoken over a WebSocket: a `ssemock.protocols.base.MessageMatching`,
    the JSON paths of the client's messages a replay leaves out (random event ids) or compares by
    length only (base64 audio inside JSON) unless the test asks for strict matching; the
    session's protocol is found from its URL.
``lanes``
    optional, for protocols that multiplex responses on one WebSocket: a
    `ssemock.protocols.lanes.Lanes` saying each message's lane (the Responses API's
    ``stream_id``); a replay routes the client's messages and the server's by it, and a
    WebSocket fault takes ``lane=``.
``client_ids``
    optional: a `ssemock.protocols.jsonrpc_ids.ClientIds`, ids its clients make up in their
    requests (``mcp`` and ``a2a`` declare JSON-RPC's, `ssemock.protocols.jsonrpc_ids.RULE`): a
    replay matches a request whatever they are and answers with the ids sent
    (`without_client_ids`, `answer_edits`).
``session_ids(url, received) -> frozenset[str]``
    optional, for sessions that span connections: the ids of the sessions a connection belongs
    to, from its request URL and what it received (an HTTP response's body and a WebSocket's
    messages, each parsed as JSON, or None); a recording keeps the connections that share one in
    one group, their order across connections kept (`ssemock.store.group`).
``follows(body) -> list[int]``
    optional: the offsets of the events of a stream that announce what the client's later
    requests did, not what its own request asked (MCP 2026-07-28's ``subscriptions/listen``
    stream: its change notifications); replay holds each until a request recorded after the
    stream opened is made (`ssemock.plan.push_replay.holds_for`).
``stays_open(interaction) -> bool``
    optional: the recorded stream was still open when its client closed it, and live such a
    stream stays open until the client closes it (MCP 2026-07-28's ``subscriptions/listen``
    stream with no graceful close): replay keeps it open after its last chunk, sending nothing,
    until the client closes it or the player stops (`ssemock.plan.push_replay.Idle`); a stream
    the server ended ends as recorded.
``version(interaction) -> str | None``
    optional: the protocol version a recorded exchange speaks, for protocols that have several
    on the wire (MCP: ``"2025-11-25"``, ``"2026-07-28"``); `versions` collects a recording's,
    which ``ssemock show``, ``ssemock validate`` and the timeline page print.
``resumption(request) -> str | None``
    optional: why a stream answering this recorded request cannot be resumed with
    ``Last-Event-ID`` (a protocol version without resumption: MCP 2026-07-28); ``faults.resume``
    is refused there with this reason.
``sdk_request(base_url, interaction) -> bool``
    optional: make ``interaction``'s request with the provider's own SDK against the loopback
    server at ``base_url`` and read the whole stream (how ``python -m ssemock.synth
    --write-library`` records the shipped cassettes through the real client; import the SDK
    inside, it is no dependency of ssemock; use fake keys). False: not for this request (a plain
    httpx client records it instead).

Adding a provider = one module defining ``PROTOCOL`` + its tests (``tests/protocols/test_<name>.py``)
+ a shipped cassette under ``ssemock/cassettes/<provider>/``, and one line in `_MODULES` below.
Nothing else changes: detection, ``accumulate``, ``error_event`` and ``http_error`` go through
`get` / `detect` / `for_response`.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import orjson

from ..core.edits import Edit
from ..core.packages import fresh
from .base import Event, Fold, HTTPErrorBody, MessageMatching, ProtocolError, StreamError
from .jsonrpc_ids import ClientIds
from .lanes import Lanes

__all__ = [
    "Protocol",
    "StreamError",
    "HTTPErrorBody",
    "MessageMatching",
    "all_protocols",
    "answer_edits",
    "detect",
    "follows",
    "for_response",
    "get",
    "holds",
    "labels",
    "names",
    "request_ids",
    "speaks",
    "stays_open",
    "versions",
    "without_client_ids",
]


def _never(_: Any) -> bool:
    return False


@dataclass(frozen=True)
class Protocol:
    """One provider API: its framing, reference accumulator, detection and error shapes."""

    name: str
    framing: str
    fold: type[Fold]
    error_event: Callable[[StreamError], bytes]
    http_error: Callable[[int, str | None], HTTPErrorBody]
    url: Callable[[str], bool] = _never
    content_type: Callable[[str], bool] = _never
    event: Callable[[Any], bool] = _never
    synthesize: Callable[..., Any] | None = field(default=None, compare=False)
    sdk_request: Callable[[str, Any], bool] | None = field(default=None, compare=False)
    request_ids: Callable[[bytes | None], Sequence[Any]] | None = field(default=None, compare=False)
    holds: Callable[[bytes], Sequence[tuple[int, frozenset[Any]]]] | None = field(default=None, compare=False)
    # the JSON-RPC id of the request a body cut at a byte offset still owes an answer (StreamError.request_id);
    # its third argument: the body is an open prefix of a live stream (None then: no answer after the cut yet)
    owed: Callable[[bytes, int, bool], str | int | None] | None = field(default=None, compare=False)
    # framings other than ``framing`` its bodies come in, which its error_event also writes (Gemini: json_array)
    framings: tuple[str, ...] = ()
    # the positions of each response's events in a WebSocket session's received messages
    responses: Callable[[Sequence[Any]], list[list[int]]] | None = field(default=None, compare=False)
    # the client's messages over a WebSocket: paths a replay ignores or compares by length by default
    client_messages: MessageMatching = MessageMatching()
    # the lanes of a protocol that multiplexes responses on one WebSocket (Responses' stream_id)
    lanes: Lanes | None = field(default=None, compare=False)
    # ids its clients make up in their requests (JSON-RPC's): matched whatever they are, answered with the sent ones
    client_ids: ClientIds | None = field(default=None, compare=False)
    # the sessions a connection belongs to, from its URL and what it received (JSON values)
    session_ids: Callable[[str, Iterable[Any]], frozenset[str]] | None = field(default=None, compare=False)
    # where a stream's events announce what later requests did (MCP's listen stream): held until one is made
    follows: Callable[[bytes], Sequence[int]] | None = field(default=None, compare=False)
    # the recorded stream was open when its client closed it, as such streams stay live: replay keeps it open
    stays_open: Callable[[Any], bool] | None = field(default=None, compare=False)
    # the protocol version a recorded exchange speaks (MCP's "2025-11-25", "2026-07-28"), None: it says none
    version: Callable[[Any], str | None] | None = field(default=None, compare=False)
    # why a stream answering this request cannot be resumed by Last-Event-ID (None: it may be); faults.resume asks
    resumption: Callable[[Any], str | None] | None = field(default=None, compare=False)


#: The registry: module names under ssemock.protocols, in detection order (more specific first).
_MODULES = (
    "openai_completions",
    "openai_chat",
    "openai_responses",
    "anthropic_sessions",
    "anthropic_messages",
    "ollama_chat",
    "cohere_v1",
    "gemini",
    "cohere",
    "bedrock_invoke",
    "bedrock_agent",
    "bedrock",
    "a2a",
    "mcp",
    "openai_live",
    "openai_realtime",
    "gemini_live",
    "deepgram_listen",
    "gemini_interactions",
)

_NAMES = tuple(f"{__name__}.{module}" for module in _MODULES)


def all_protocols() -> list[Protocol]:
    """Every registered protocol, in detection order (modules are imported on first use)."""
    # read from sys.modules each time, never kept here: pytester's in-process runs drop the modules a
    # run imported, and a member kept from an earlier run would decode into that run's classes
    modules = sys.modules
    return [(modules.get(name) or importlib.import_module(name)).PROTOCOL for name in _NAMES]


def names() -> tuple[str, ...]:
    """The registered protocol names."""
    return tuple(p.name for p in all_protocols())


def get(name: str) -> Protocol:
    """The protocol called ``name``; ProtocolError naming the known ones otherwise."""
    for protocol in all_protocols():
        if protocol.name == name:
            return protocol
    raise ProtocolError(f"unknown protocol {name!r}; known: {', '.join(names())}")


def _media(content_type: str | None) -> str:
    return (content_type or "").split(";")[0].strip().lower()


def detect(
    events: Iterable[Event] = (), *, url: str | None = None, content_type: str | None = None
) -> Protocol | None:
    """The protocol of a stream from its URL, else content type, else its first telling event."""
    protocols = all_protocols()
    if url:
        for protocol in protocols:
            if protocol.url(url):
                return protocol
    media = _media(content_type)
    claimed = [p for p in protocols if p.content_type(media)] if media else []
    if len(claimed) == 1:
        return claimed[0]
    # several protocols share a media type (Bedrock's two APIs: eventstream): the events decide
    # among them, else the last of them (the older, more general one)
    candidates = claimed or protocols
    for event in events:
        for protocol in candidates:
            if protocol.event(event):
                return protocol
    return claimed[-1] if claimed else None


def for_response(
    url: str, headers: Iterable[tuple[str, str]] | Mapping[str, str], body: bytes = b""
) -> Protocol | None:
    """The protocol of a served response, from its URL, content type and decoded body (for faults)."""
    from .. import framing

    pairs = headers.items() if isinstance(headers, Mapping) else headers
    content_type = next((v for k, v in pairs if k.lower() == "content-type"), "")

    def events() -> Iterator[Event]:  # decoded only when the URL and content type do not decide
        if body:
            try:
                yield from framing.decode(body, content_type)
            except ValueError:
                return

    return detect(events(), url=url, content_type=content_type)


def speaks(protocol: Protocol, framing: str) -> bool:
    """Whether ``protocol``'s bodies (and so its error events) come in ``framing``."""
    return framing == protocol.framing or framing in protocol.framings


def request_ids(body: bytes | None) -> list[Any]:
    """The correlation ids of the requests in a request body, by every protocol that correlates
    (the JSON-RPC ids of an MCP POST); [] for any other body."""
    return [i for p in all_protocols() if p.request_ids is not None for i in p.request_ids(body)]


def _json(body: bytes) -> Any:
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError:
        return None


def _client_ids() -> list[ClientIds]:
    return list(dict.fromkeys(p.client_ids for p in all_protocols() if p.client_ids is not None))


def without_client_ids(value: Any) -> Any:
    """A parsed request body without the ids clients make up (JSON-RPC request ids), by every
    protocol's rule: what matching compares."""
    for rule in _client_ids():
        value = rule.without_ids(value)
    return value


def answer_edits(sent: bytes | None, recorded: bytes | None, answer: bytes) -> list[Edit]:
    """The edits giving a recorded ``answer`` the ids the client sent where they differ from the
    recorded request's (``sent``, ``recorded``: the request bodies); [] when none differ."""
    if not sent or not recorded or sent == recorded or b'"jsonrpc"' not in recorded:
        return []  # no JSON-RPC (most bodies a player serves): not parsed
    sent_json, recorded_json = _json(sent), _json(recorded)
    for rule in _client_ids():
        then, now = rule.ids(recorded_json), rule.ids(sent_json)
        replaced = {a: b for a, b in zip(then, now, strict=False) if a != b}
        if replaced and len(then) == len(now):
            return rule.answer_edits(answer, replaced)
    return []


def holds(body: bytes) -> list[tuple[int, frozenset[Any]]]:
    """Where a recorded server-push stream waits for the requests it answers: ``(offset, ids)``
    by the first protocol that finds any; [] when its messages answer no request."""
    for p in all_protocols():
        found = list(p.holds(body)) if p.holds is not None else []
        if found:
            return found
    return []


def follows(body: bytes) -> list[int]:
    """Where a stream's events announce what later requests did (see ``follows`` above), by
    the first protocol that finds any; [] for most bodies."""
    for p in all_protocols():
        found = list(p.follows(body)) if p.follows is not None else []
        if found:
            return found
    return []


def stays_open(interaction: Any) -> bool:
    """Whether a replay keeps the stream of ``interaction`` open after its last chunk (see
    ``stays_open`` above), by any protocol that says so; False for most."""
    return any(p.stays_open is not None and p.stays_open(interaction) for p in all_protocols())


def versions(interactions: Iterable[Any]) -> dict[str, list[str]]:
    """The protocol versions a recording speaks, by protocol name (``{"mcp": ["2026-07-28"]}``),
    each in the order first seen; only protocols that tell a version appear."""
    found: dict[str, dict[str, None]] = {}
    interactions = list(interactions)
    for p in all_protocols():
        if p.version is not None:
            for x in interactions:
                v = p.version(x)
                if v:
                    found.setdefault(p.name, {})[v] = None
    return {name: list(seen) for name, seen in found.items()}


def labels(interactions: Iterable[Any]) -> list[str]:
    """`versions` as labels: ``["mcp 2026-07-28"]``."""
    return [f"{name} {v}" for name, seen in versions(interactions).items() for v in seen]


def _path(url: str) -> str:
    """The URL's path without a trailing slash (helpers for ``url`` detectors)."""
    return urlsplit(url).path.rstrip("/")


fresh(__name__)  # submodules read from sys.modules (pytester's in-process reruns drop them)
